"""The pages a newcomer reads first (README, getting started, the index, the families page) and the
``--help`` texts say what the code does: numbers in their prose, the commands and pages they list.

The printed examples are run by ``test_docs.py``; these tests cover prose the examples do not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ppverify import CostModel, build, run
from ppverify.cli import build_parser, terminal_text

ROOT = Path(__file__).resolve().parents[2]
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8}


def _text(page: str) -> str:
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


def _command_helps() -> dict[str, str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {name: parser.format_help() for name, parser in sub.choices.items()}


def test_help_texts_carry_no_rest_markup():
    # the descriptions are the command modules' docstrings, written for the manual: ``x`` and
    # :func:`x` must not reach the terminal
    helps = _command_helps()
    for name, text in helps.items():
        assert "``" not in text and ":func:`" not in text, name
    assert "the Z3 verifier (ppverify.verify.verify):" in " ".join(helps["import"].split())
    assert terminal_text(":class:`~a.B` and ``-p``") == "a.B and `-p`"


def test_memory_cap_help_names_only_options_the_command_has():
    helps = {name: " ".join(text.split()) for name, text in _command_helps().items()}
    # show has no presets, so no cap in bytes; compare's presets are --systems/--models
    show_cap = helps["show"].split("--memory-cap N|NMF|none ", 1)[1]
    assert "64GiB" not in show_cap.split(" --width")[0]
    compare_cap = helps["compare"].split("--memory-cap N|NMF|SIZE|none ", 1)[1].split(" --out ")[0]
    assert "--system/--model" not in compare_cap and "optimum level" in compare_cap


def test_getting_started_lists_every_command():
    listed = set(re.findall(r"^\| `ppverify ([a-z-]+)", (ROOT / "docs/getting-started.md").read_text(), re.M))
    listed |= set(
        re.findall(r"^\| `ppverify [a-z-]+[^|]*/ `([a-z-]+)`", (ROOT / "docs/getting-started.md").read_text(), re.M)
    )
    assert set(_command_helps()) <= listed, set(_command_helps()) - listed


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    if isinstance(node, list):
        return [p for v in node for p in _nav_pages(v)]
    return []


def test_the_index_links_every_page_of_the_manual():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = yaml.safe_load(config[config.index("\nnav:") :])["nav"]  # the plugins above need custom tags
    index = (ROOT / "docs/index.md").read_text(encoding="utf-8")
    missing = [p for p in _nav_pages(nav) if p != "index.md" and f"]({p})" not in index]
    assert not missing


def test_units_example_of_getting_started():
    # Hanayo p=4, m=4, W=2 at F=B=1: each device does m*(F+B) = 8 of work; the fill and drain cost
    # (p-1)*max(F, B)/W = 3/2; so 9.5
    s = build("hanayo", p=4, m=4, waves=2)
    assert run(s, CostModel.abstract(s.placement, F=1, B=1), semantics="slot").makespan == 9.5
    assert "takes 9.5 at F=B=1" in _text("docs/getting-started.md")


def test_chimera_asym_paragraph_of_the_families_page():
    text = _text("docs/schedule-families.md")
    m = re.search(
        r"peak is (\d+) activations \(Chimera's is (\d+)\) and the makespan is (\d+) at F=B=1 \(Chimera: (\d+)\), "
        r"(\d+) at the default F=1,B=2 \(Chimera: (\d+)\)",
        text,
    )
    assert m, "the chimera-asym sentence of schedule-families.md changed: keep it checked here"
    peak, chimera_peak, unit, chimera_unit, default, chimera_default = map(int, m.groups())
    # by hand, p=4, m=8: offset 1 puts stage 0 of both pipes on device 0, each pipe's 1F1B holds
    # min(p, m/2) = 4 there: 8; Chimera's device 0 holds min(p, m/2) + min(1, m/2) = 5; Chimera's
    # makespan m*t + (p-2)*max(F, B) is 16 + 2 = 18 at F=B=1 and 24 + 4 = 28 at F=1,B=2
    assert (peak, chimera_peak, chimera_unit, chimera_default) == (8, 5, 18, 28)
    asym = build("chimera-asym", p=4, m=8)
    for (f, b), expected in (((1, 1), unit), ((1, 2), default)):
        tl = run(asym, CostModel.abstract(asym.placement, F=f, B=b), semantics="slot")
        assert tl.makespan == expected
    assert run(asym, CostModel.abstract(asym.placement, F=1, B=1), semantics="slot").peak_memory()[0] == 8


@pytest.mark.parametrize("page", ["README.md"])
def test_readme_chimera_ranks_sentence(page):
    from ppverify.compare import DEFAULT_SCHEDULES, Config, run_comparison

    m = re.search(
        r"Chimera is (\w+) in the slot table, (\w+) once its replicas' all-reduce crosses 100 GbE "
        r"\(`async`\), (\w+) on shared links \(`contention`\)",
        _text(page),
    )
    assert m, "the README's compare sentence changed: keep it checked here"
    df = run_comparison(
        [Config(4, 4, "ethernet-100g", "gpt3-1.3b")], DEFAULT_SCHEDULES, ("slot", "async", "contention"), verify=False
    )
    rank = dict(df[df.schedule == "chimera"][["level", "rank"]].itertuples(index=False))
    words = [ORDINALS.get(w, len(DEFAULT_SCHEDULES) if w == "last" else 0) for w in m.groups()]
    assert words == [rank["slot"], rank["async"], rank["contention"]]


def test_limits_page_lists_every_command_that_bounds_time_limit(capsys):
    from ppverify.cli import main

    row = next(ln for ln in (ROOT / "docs/limits.md").read_text().splitlines() if ln.startswith("| `--time-limit` |"))
    listed = re.findall(r"`([a-z-]+)`", row.rsplit("|", 2)[1])
    # by hand: verify, optimize, gap and design take wall-clock seconds, at most 1e9 (compare's and
    # report's --time-limit is CP-SAT work per point, another option under the same name)
    assert listed == ["verify", "optimize", "gap", "design"]
    args = {"verify": ["1f1b"], "optimize": [], "gap": ["1f1b"], "design": ["-p", "2"]}
    for command in listed:
        assert main([command, *args[command], "--time-limit", "2e9"]) == 2
        assert "at most 1e" in capsys.readouterr().err


def test_plot_range_help_says_how_each_axis_is_spaced():
    from ppverify.compare.crossover_axis import axis_values

    text = " ".join(_command_helps()["plot"].split())
    assert "log-spaced; an abstract per-hop delay, evenly spaced)" in text
    # by hand: the abstract default 0,2,9 is 0, 0.25, ..., 2 (even steps of 2/8); a preset's 1,100,3
    # is 1, 10, 100 µs (a factor of 10 per step)
    assert axis_values("latency", None, preset=False).tolist() == [k / 4 for k in range(9)]
    assert [round(float(x) * 1e6, 9) for x in axis_values("latency", "1,100,3", preset=True)] == [1.0, 10.0, 100.0]
