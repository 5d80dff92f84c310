"""Edges a new user meets in ``show``, ``simulate``, ``plot``, ``export``, ``prove`` and ``sweep``:
options the chosen mode used to ignore without a word, a cost kind given twice, and files that lost
what they were timed with on their way from one command to the next. Every expected number is
worked out by hand in the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppverify.cli import main


def _one_line_error(capsys, argv: list[str], says: str) -> None:
    capsys.readouterr()
    assert main(argv) == 2, argv
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
    assert "Traceback" not in captured.err


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0, argv
    return json.loads(capsys.readouterr().out)


def test_plot_slot_charges_the_communication_it_is_given(capsys, tmp_path):
    # slot: every op with a cross-device input or output is lengthened by c, so 1F1B takes
    # (m + p - 1)(tF + tB + 2c) = 7 * (1 + 2 + 2) = 35 at p = m = 4, F=1, B=2, c=1; the chart
    # used to draw the table without communication (21 = 7 * 3)
    argv = ["plot", "1f1b", "-p", "4", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "1", "--semantics", "slot"]
    out = _json(capsys, [*argv, "-o", str(tmp_path / "g.svg"), "--json"])
    assert out["semantics"] == "slot" and out["makespan"] == 35


def test_a_saved_delay_survives_show_save_and_export(capsys, tmp_path):
    # gpipe p=2 m=1, F=1, B=2, one unit per hop, async: F0 0..1, hop, F1 2..3, B1 3..5, hop,
    # B0 6..8: makespan 8 (without the delay: 1 + 1 + 2 + 2 = 6)
    saved, copy = tmp_path / "s.json", tmp_path / "copy.json"
    base = ["gpipe", "-p", "2", "-m", "1", "--costs", "F=1,B=2"]
    assert main(["show", *base, "--comm-delay", "1", "--save", str(saved), "--no-table"]) == 0
    assert json.loads(saved.read_text())["comm"]["delay"] == 1
    assert _json(capsys, ["simulate", str(saved), "--json"])["makespan"] == 8
    assert main(["export", str(saved), "-o", str(copy)]) == 0  # JSON to JSON keeps costs and comm
    assert _json(capsys, ["simulate", str(copy), "--json"])["makespan"] == 8
    capsys.readouterr()
    assert main(["show", str(copy), "--no-table"]) == 0  # the table charges the file's delay and says so
    assert "file's comm   fixed delay 1 per transfer, sync eager: charged per column" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["show", "simulate", "export", "verify"])
def test_a_family_option_the_family_does_not_take_is_refused(capsys, command):
    _one_line_error(capsys, [command, "1f1b", "-p", "2", "--v", "2"], "1f1b has no parameter --v (it takes none")
    _one_line_error(
        capsys, [command, "interleaved-1f1b", "-p", "2", "--waves", "2"], "it takes --v, --order; see ppverify list"
    )


def test_a_family_option_the_family_takes_still_shapes_it(capsys):
    # interleaved 1F1B, p=2, v=3: 2 * 3 = 6 stages
    out = _json(capsys, ["show", "interleaved-1f1b", "-p", "2", "-m", "2", "--v", "3", "--json"])
    assert len(out["placement"]["maps"][0]) == 6


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "1f1b", "--costs", "F=1,F=2"],
        ["simulate", "1f1b", "--costs", "F=1,B=2,b=3"],
        ["compare", "--costs", "F=1,F=2", "--levels", "slot", "--no-progress"],
        ["prove", "1f1b", "--costs", "F=1,B=2,B=3"],
    ],
)
def test_a_cost_kind_given_twice_is_refused(capsys, argv):
    _one_line_error(capsys, argv, "is given twice; give each kind once")


def test_plot_crossover_refuses_a_cost_kind_given_twice(capsys, tmp_path):
    argv = ["plot", "--crossover", "latency", "--costs", "B=1,B=2", "-o", str(tmp_path / "c.png")]
    _one_line_error(capsys, argv, "B is given twice")


def test_prove_all_refuses_costs_chimera_cannot_take_before_proving_anything(capsys):
    capsys.readouterr()
    assert main(["prove", "all", "--costs", "F=2,B=2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # gpipe and 1f1b used to be proved and printed first
    assert "chimera's closed form is derived for F=1" in captured.err


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--save", "s.txt"], "a .txt name tells every reader a text table"),
        (["--json", "--style", "torch"], "--json prints no table: drop --style"),
        (["--no-table", "--style", "torch"], "--no-table prints no table: drop --style"),
    ],
)
def test_show_refuses_outputs_it_would_ignore_or_could_not_read_back(capsys, tmp_path, monkeypatch, extra, says):
    monkeypatch.chdir(tmp_path)
    _one_line_error(capsys, ["show", "1f1b", "-p", "2", *extra], says)
    assert not (tmp_path / "s.txt").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc, a folder no file can be created in")
def test_show_save_names_its_own_option_when_the_write_fails(capsys):
    # /proc exists (so the early check passes) but takes no new file: the write itself fails
    _one_line_error(capsys, ["show", "1f1b", "-p", "2", "--save", "/proc/ppverify-s.json"], "parameter --save=")


def test_simulate_stages_without_a_model_is_refused(capsys):
    _one_line_error(capsys, ["simulate", "1f1b", "--stages"], "per-stage costs derived from --model")


def test_sweep_worker_count_checked_even_in_a_dry_run(capsys, tmp_path):
    cfg = tmp_path / "sw.yaml"
    cfg.write_text("schedules: [gpipe]\np: [2]\nm: [2]\ncosts: {F: 1, B: 2}\nlevels: [slot]\n")
    _one_line_error(capsys, ["sweep", str(cfg), "--workers", "-1", "--dry-run"], "workers=-1: must be >= 1")
    _one_line_error(capsys, ["sweep", str(cfg), "--executor", "ray", "--workers", "3", "--dry-run"], "local pool")


@pytest.mark.parametrize(
    "extra, flag",
    [
        (["--system", "dgx-h100", "--model", "gpt3-1.3b"], "--system"),
        (["--costs", "F=2"], "--costs"),
        (["--comm-delay", "1"], "--comm-delay"),
    ],
)
def test_torch_unit_steps_refuse_timing_options(capsys, extra, flag):
    # 1F1B p=4 m=4 under PyTorch's step count printed "makespan 33.0000 s" with a preset: steps as seconds
    _one_line_error(capsys, ["simulate", "1f1b", "--semantics", "torch", *extra], f"parameter {flag}=")


def test_torch_unit_steps_still_run_without_them(capsys):
    out = _json(capsys, ["simulate", "1f1b", "-p", "2", "-m", "1", "--semantics", "torch", "--json"])
    assert out["semantics"] == "torch" and out["makespan"] > 0


def test_simulate_refuses_one_file_for_trace_and_frame(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line_error(
        capsys, ["simulate", "1f1b", "--trace", "t.json", "--frame", "./t.json"], "is also the --trace file"
    )
    assert not (tmp_path / "t.json").exists()


def test_a_json_file_refuses_placement_it_would_ignore(capsys, tmp_path):
    saved = tmp_path / "s.json"
    assert main(["show", "1f1b", "-p", "2", "--save", str(saved), "--no-table"]) == 0
    _one_line_error(capsys, ["show", str(saved), "--placement", "v"], "only a text table (.txt) takes --placement")
