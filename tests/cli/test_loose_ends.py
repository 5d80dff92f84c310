"""Loose ends a user hit: one size parser for every --memory-cap, violations in GiB, optimize
--save keeping the communication so simulate/plot reproduce the value, Gantt labels and lanes,
titles, and the show table in a 100-column terminal. Expected values derived by hand."""

from __future__ import annotations

import json
from fractions import Fraction

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.core.sizes import BYTE_UNITS, format_bytes, format_bytes_apart, parse_size

# GPT-3 13B on p=4 (10 layers per stage): one microbatch on stage 0 holds
# A = 10 * s*b*h*(34 + 5*a*s/h) = 10 * 2048*5120*114 bytes (Korthikanti et al. 2022), and 1F1B's
# device 0 holds 4 of them: 4A = 47,815,065,600 B = 44.53125 GiB exactly
A = 10 * 2048 * 5120 * (34 + 5 * 40 * 2048 // 5120)
PRESET = ["-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-13b"]


# ---------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    "text,value,is_bytes",
    [
        ("40GiB", 40 * 2**30, True),
        ("40 gib", 40 * 2**30, True),
        ("80GB", 80 * 10**9, True),
        ("512MiB", 2**29, True),
        ("1e9B", 10**9, True),
        ("2.5", Fraction(5, 2), False),
        ("8x", 8, False),
        ("3MF", 3, False),
    ],
)
def test_parse_size_by_hand(text, value, is_bytes):
    s = parse_size(text)
    assert (s.value, s.is_bytes) == (value, is_bytes)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 10**6), unit=st.sampled_from(sorted(BYTE_UNITS)), lower=st.booleans())
def test_parse_size_multiplies_by_the_unit(n, unit, lower):
    text = f"{n}{unit.lower() if lower else unit}"
    assert parse_size(text).value == n * BYTE_UNITS[unit]


@pytest.mark.parametrize("text", ["lots", "40 parsecs", "-3", "GiB"])
def test_parse_size_rejects(text):
    with pytest.raises(ParameterError, match="memory-cap"):
        parse_size(text)


def test_format_bytes_in_gib():
    assert format_bytes(4 * A) == "44.5 GiB"
    assert format_bytes_apart(4 * A, 4 * A - 1) == ("44.53125 GiB", "44.531249999 GiB")


def test_optimize_and_verify_read_the_same_size(tmp_path):
    from ppverify.cli.commands.optimize import build_namespace, problem_from_args
    from ppverify.core.memory_cap import parse_memory_cap

    pr = problem_from_args(build_namespace(["1f1b"] + PRESET + ["--memory-cap", "40GiB"]))[0]
    cap = parse_memory_cap("40GiB", pr.costs, pr.placement)
    assert pr.memory_cap == 40 * 2**30 == cap.value


def test_verify_memory_cap_as_a_size(capsys):
    assert main(["verify", "1f1b"] + PRESET + ["--memory-cap", "44.53125GiB"]) == 0  # exactly 4A: fits
    # the proved cap prints as one that reads back at least the peak (44.5 GiB would be refused)
    assert "activation memory <= 44.53125 GiB" in capsys.readouterr().out
    assert main(["verify", "1f1b"] + PRESET + ["--memory-cap", "40GiB", "--json"]) == 1
    msgs = [v["message"] for v in json.loads(capsys.readouterr().out)["violations"]]
    assert msgs[0] == "device 0 holds 44.5 GiB when 0F3 starts (cap 40 GiB)"


def test_verify_size_needs_bytes(capsys):
    assert main(["verify", "1f1b", "-p", "4", "--costs", "F=1,B=2", "--memory-cap", "40GiB"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "memory-cap=40GiB" in err[0] and "a size needs presets" in err[0]


# ---------------------------------------------------------------- optimize --save keeps the comm


def _makespan(argv, capsys) -> float:
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)["makespan"]


def test_saved_optimum_reproduces_with_its_comm_delay(tmp_path, capsys):
    # p=2, m=1, F=1, B=2, delay 1 per hop: F0 0-1, hop 1-2, F1 2-3, B1 3-5, hop 5-6, B0 6-8 -> 8
    # (without the delay the same order takes 6)
    f = tmp_path / "o.json"
    assert (
        main(
            [
                "optimize",
                "-p",
                "2",
                "-m",
                "1",
                "--costs",
                "F=1,B=2",
                "--comm-delay",
                "1",
                "--save",
                str(f),
                "--no-chart",
                "--time-limit",
                "5",
            ]
        )
        == 0
    )
    capsys.readouterr()
    doc = json.loads(f.read_text())
    assert doc["comm"] == {"model": "fixed-delay", "delay": 1.0, "sync": "eager", "dp_allreduce": 0}
    assert _makespan(["simulate", str(f)], capsys) == 8
    assert _makespan(["simulate", str(f), "--comm-delay", "0"], capsys) == 6  # the command line wins
    assert _makespan(["plot", str(f), "-o", str(tmp_path / "g.png")], capsys) == 8


def test_saved_optimum_keeps_sync_and_system(tmp_path, capsys):
    f = tmp_path / "c.json"
    assert (
        main(
            [
                "optimize",
                "chimera",
                "-p",
                "2",
                "-m",
                "2",
                "--system",
                "ethernet-100g",
                "--model",
                "gpt3-1.3b",
                "--sync",
                "after-flush",
                "--save",
                str(f),
                "--json",
                "--time-limit",
                "10",
            ]
        )
        == 0
    )
    best = json.loads(capsys.readouterr().out)["value"]
    doc = json.loads(f.read_text())
    assert doc["comm"]["sync"] == "after-flush"
    assert doc["comm"]["system"]["inter_node"] == {"name": "100 GbE", "latency_us": 30.0, "bandwidth_GBps": 12.5}
    got = _makespan(["simulate", str(f)], capsys)
    assert got == pytest.approx(best, rel=1e-3)  # CP-SAT rounds durations to its tick
    assert _makespan(["simulate", str(f), "--sync", "after-flush"], capsys) == got
    assert _makespan(["simulate", str(f), "--sync", "none"], capsys) < got  # the all-reduce was counted


def test_bad_comm_in_a_file_is_one_line(tmp_path, capsys):
    from ppverify.io.json_format import save_json
    from ppverify.schedules import build

    f = save_json(build("gpipe", p=2, m=1), tmp_path / "s.json")
    doc = json.loads(f.read_text())
    doc["comm"] = {
        "model": "system",
        "system": {
            "peak_TFLOPs": 1,
            "memory_GiB": 1,
            "gpus_per_node": 1,
            "inter_node": {"latency_us": 1, "bandwidth_GBps": -2},
        },
    }
    f.write_text(json.dumps(doc))
    assert main(["simulate", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "s.json: comm.system.inter_node.bandwidth_GBps" in err[0]


def test_comm_round_trips_a_preset_system():
    from ppverify.io.json_checks import JsonReader
    from ppverify.io.json_comm import CommSettings, comm_from_dict, comm_to_dict
    from ppverify.systems.system import LinkTier, System, load_system

    # an infinite bandwidth (a zero-cost network) is stored as null, JSON having no infinity
    free = System("free", "gpu", 1e15, 80 * 2**30, 1, 1, None, LinkTier("free", 0.0, float("inf")))
    for s in (load_system("dgx-h100", 1), load_system("ethernet-100g"), free):
        back = comm_from_dict(JsonReader("x"), json.loads(json.dumps(comm_to_dict(CommSettings(s, "none", 2)))))
        assert back == CommSettings(s, "none", 2)


# ---------------------------------------------------------------- pictures


def _svg_texts(path) -> list[str]:
    import re

    return re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())


def test_gantt_labels_name_stage_and_microbatch(tmp_path):
    from ppverify.engines import run
    from ppverify.report.plots import gantt
    from ppverify.schedules import build

    s = build("interleaved-1f1b", p=2, m=2, v=2)
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        out = gantt(run(s, semantics="slot"), tmp_path / "g.svg")
    texts = _svg_texts(out)
    # 4 stages (device 0 holds 0 and 2) x 2 microbatches x F and B: 16 distinct labels, once each
    want = {f"{st_}{k}{mb}" for st_ in range(4) for mb in range(2) for k in "FB"}
    assert {t for t in texts if t in want} == want
    assert all(texts.count(t) == 1 for t in want)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 20), st.integers(1, 6)), min_size=1, max_size=25))
def test_overlapping_ops_get_distinct_lanes(ops):
    from ppverify.report.plots import op_lanes

    dev = np.array([d for d, _, _ in ops])
    s = np.array([float(a) for _, a, _ in ops])
    e = s + np.array([float(b) for _, _, b in ops])
    lane, lanes = op_lanes(dev, s, e)
    for i in range(len(ops)):
        assert 0 <= lane[i] < lanes[i]
        for j in range(i + 1, len(ops)):
            if dev[i] == dev[j] and s[i] < e[j] and s[j] < e[i]:  # they overlap in time on one device
                assert lane[i] != lane[j] and lanes[i] == lanes[j]


def test_overlapped_fb_cells_are_drawn_in_two_lanes(tmp_path):
    from ppverify.engines import run
    from ppverify.report.plots import op_lanes
    from ppverify.schedules import build

    tl = run(build("dualpipev", p=2, m=4), semantics="slot")
    lane, lanes = op_lanes(tl.device, tl.start, tl.end)
    pairs = [a.ops for prog in tl.schedule.programs for a in prog if a is not None and hasattr(a, "ops")]
    assert pairs  # DualPipeV overlaps an F with a B
    idx = {op: i for i, op in enumerate(tl.ops)}
    for f, b in pairs:
        assert {lane[idx[f]], lane[idx[b]]} == {0, 1} and lanes[idx[f]] == 2


def test_titles_wrap_to_the_figure():
    from ppverify.report.plots import wrap_title

    title = "chimera-asym p=8 m=64 offset=3 down=2 units=concat · contention · makespan 1234.5 ms · bubble 0.123 (idle/total)"
    lines = wrap_title(title, 8.0).splitlines()
    # 80% of 8 in at 72 pt/in over 5.5 pt per character: 83 characters a line
    assert len(lines) == 2 and all(len(x) <= 83 for x in lines) and " ".join(lines) == title


def test_abstract_crossover_title_does_not_claim_one_delay(tmp_path, capsys):
    out = tmp_path / "c.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        assert (
            main(["plot", "--crossover", "latency", "-p", "4", "-m", "4", "--schedules", "gpipe,1f1b", "-o", str(out)])
            == 0
        )
    title = next(t for t in _svg_texts(out) if "makespan vs" in t)
    assert "c=" not in title and title.startswith("p=4 m=4 F=1,B=2: makespan vs per-hop delay")


# ---------------------------------------------------------------- show in 100 columns


def test_show_table_fits_100_columns_and_reads_back(capsys):
    from ppverify.io.table_text import parse_paper_table
    from ppverify.schedules import build

    assert main(["show", "dualpipev", "-p", "4", "-m", "8", "--width", "100"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n", 1)[1].split("\nmakespan")[0].strip("\n")
    assert table.count("tick") > 1 and max(len(x) for x in table.splitlines()) <= 100
    # the wrapped blocks are still one table: the ops of every device, in program order
    want = [[str(a) for a in prog if a is not None] for prog in build("dualpipev", p=4, m=8).programs]
    assert [[str(a) for a in prog if a is not None] for prog in parse_paper_table(table)] == want


# ---------------------------------------------------------------- --costs over a saved memory model


def test_costs_over_a_saved_memory_model_say_so(tmp_path, capsys):
    from ppverify.core.costs import CostModel
    from ppverify.core.ops import parse_action
    from ppverify.core.placement import linear
    from ppverify.core.schedule import Schedule
    from ppverify.io.json_format import save_json

    # one device, F0 I0 F1 I1 W0 W1, one activation per microbatch. I frees half of it (as
    # optimize --save stores its memory model): 1 at F0, 0.5 after I0, 1.5 at F1, then falling,
    # so the peak is 1.5. With --costs W frees all of it: 2 at F1
    pl = linear(1)
    programs = (tuple(parse_action(a) for a in ["0F0", "0I0", "0F1", "0I1", "0W0", "0W1"]),)
    path = save_json(
        Schedule(pl, 2, programs, (0, 0)),
        tmp_path / "s.json",
        CostModel.abstract(pl, F=1, I=1, W=1, freed_by_I=0.5),
    )
    assert main(["simulate", str(path), "--memory-cap", "1.5"]) == 0
    out, err = capsys.readouterr()
    assert "highest peak 1.5" in out and "note" not in err
    assert main(["simulate", str(path), "--memory-cap", "1.5", "--costs", "F=1,I=1,W=1"]) == 1
    out, err = capsys.readouterr()
    assert "device 0 over it (peak 2)" in out
    assert f"ppverify: note: {path}: --costs replaces the file's cost model, whose I frees 50 %" in err
    assert "with the given costs I frees 0 %" in err and err.count("note:") == 1
    # verify reads the file the same way: VALID under the file's model, over the cap with --costs
    assert main(["verify", str(path), "--memory-cap", "1.5"]) == 0
    assert main(["verify", str(path), "--memory-cap", "1.5", "--costs", "F=1,I=1,W=1"]) == 1
    assert capsys.readouterr().err.count("note:") == 1
    # and show, which times the table with the same costs
    assert main(["show", str(path), "--memory-cap", "1.5", "--no-table"]) == 0
    assert "note" not in capsys.readouterr().err
    assert main(["show", str(path), "--memory-cap", "1.5", "--no-table", "--costs", "F=1,I=1,W=1"]) == 1
    assert capsys.readouterr().err.count("I frees 50 %") == 1
