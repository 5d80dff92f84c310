"""``ppverify design`` at its edges: the start column's names, Ctrl-C's exit code, output folders
that take no file, and budgets spelled as sizes or stage activations in its error lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.design import DesignRequest, Limits
from ppverify.design.budget_list import parse_budgets
from ppverify.design.output import design_text
from ppverify.design.points import Point
from ppverify.design.run import Design
from ppverify.design.spec import setups
from ppverify.systems.preset_models import PresetSettings

UNIT = PresetSettings(costs="F=1,I=1,W=1")
ARGV = ["design", "-p", "2", "-m", "2", "--costs", "F=1,I=1,W=1", "--placements", "linear", "--work-limit", "1"]


def test_start_column_names_the_start_whole() -> None:
    # two starts that share their first seven letters: cut to "interle..." they read the same
    rq = DesignRequest(2, 2, "loop:2", "1,2", UNIT, Limits(1.0))
    sets = setups("loop:2", 2, 2, UNIT)
    a = Point("loop:2", 1.0, "OPTIMAL", 9.0, 9.0, 1.0, "interleaved-zb", None)
    b = Point("loop:2", 2.0, "OPTIMAL", 8.0, 8.0, 2.0, "interleaved-1f1b", None)
    d = Design(rq, sets, (a, b), (), (a, b), 2, 2, False, ("valid", "valid"))
    rows = design_text(d).splitlines()[4:6]
    assert [r.split()[7] for r in rows] == ["interleaved-zb", "interleaved-1f1b"]
    assert all(r.endswith(" valid") for r in rows)


def test_ctrl_c_prints_the_points_done_and_exits_130(monkeypatch, capsys) -> None:
    import ppverify.design.run as run_module

    real = run_module.run_points

    def first_then_ctrl_c(tasks, executor="local", workers=1, report=None, *rest):
        def stop(pt: Point) -> None:
            if report is not None:
                report(pt)
            raise KeyboardInterrupt  # as Ctrl-C after the first point

        return real(tasks, executor, workers, stop, *rest)

    monkeypatch.setattr(run_module, "run_points", first_then_ctrl_c)
    # 130 as optimize and gap exit after Ctrl-C: a script must not read a partial frontier as whole
    assert main([*ARGV, "--budgets", "1,2", "--no-progress"]) == 130
    out, err = capsys.readouterr()
    assert "points     1 of 2 done (interrupted" in out
    assert "ppverify design: interrupted (Ctrl-C); printed the frontier of the points done" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, a folder that takes no file")
@pytest.mark.parametrize("option,name", [("--report", "page.html"), ("--plot", "frontier.png")])
def test_an_output_in_a_folder_that_takes_no_file_is_refused_before_the_search(option, name, capsys) -> None:
    # /proc exists and is a folder, so the name passes its own rules; only writing shows it takes
    # no file, which came after the whole search
    assert main([*ARGV, "--budgets", "1", option, f"/proc/{name}"]) == 2
    err = capsys.readouterr().err
    assert f"parameter {option}=/proc/{name}: cannot write in its folder /proc" in err
    assert "design [" not in err  # no point searched


def test_a_spelled_budget_below_the_least_is_named_as_typed(capsys) -> None:
    # v at p = 2 holds two stages per device, each half a device's share: 1MF is 0.5 activations,
    # under the least feasible 1 (both stages of a microbatch live on device 1 at its turn)
    argv = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--placements", "v", "--work-limit", "1"]
    assert main([*argv, "--budgets", "1MF"]) == 2
    err = capsys.readouterr().err
    assert "parameter --budgets=1MF: 0.5 activations, below the least feasible budget 1" in err
    # a plain number keeps its line
    assert main([*argv, "--budgets", "0.5"]) == 2
    assert "parameter --budgets=0.5: below the least feasible budget 1" in capsys.readouterr().err


def test_a_size_below_one_stage_is_below_the_least_feasible_budget(capsys) -> None:
    # 1 byte is far under one stage's activations: the design's rule, the least feasible budget
    # (1: a linear device's one stage), is what the line names, as for any other budget
    argv = ["design", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main([*argv, "--placements", "linear", "--budgets", "1B", "--work-limit", "1"]) == 2
    err = capsys.readouterr().err
    assert "parameter --budgets=1B:" in err and "activations, below the least feasible budget 1 (" in err


def test_two_spellings_of_one_budget_name_both() -> None:
    # v at p = 4: a stage is half a device's share (2 stages per device), so
    # 2MF = 2 x 0.5 = 1 activation, the same budget as 1
    sets = setups("v", 4, 8, UNIT)
    with pytest.raises(ValueError, match=r"budgets=2MF,1: 2MF and 1 are the same budget, 1 activations"):
        parse_budgets("2MF,1", sets)
    with pytest.raises(ValueError, match=r"budgets=2,2\.0: 2 is named twice"):
        parse_budgets("2,2.0", sets)
    # both unconstrained, each named as typed (it said "none is named twice" of inf,none too)
    with pytest.raises(ValueError, match=r"budgets=none,inf: none and inf are the same budget: unconstrained"):
        parse_budgets("none,inf", sets)


def test_workers_with_ray_is_refused(capsys) -> None:
    # --workers sizes the local pool; Ray runs as many points as its cluster holds, so a count
    # given with it would be ignored (sweep refuses it the same way); refused before Ray starts
    assert main([*ARGV, "--executor", "ray", "--workers", "2"]) == 2
    assert (
        "parameter --workers=2: sizes the local pool; Ray places the points on its cluster" in capsys.readouterr().err
    )


@pytest.mark.parametrize("given,first,second", [("linear,loop:1", "linear", "loop:1"), ("wave:1,v", "wave:1", "v")])
def test_one_placement_under_two_names_is_refused(given, first, second) -> None:
    # loop:1 puts stage d on device d, as linear does; wave:1 runs 0..p-1 then back, as v does:
    # the same points would be searched twice
    with pytest.raises(ValueError, match=f"{first} and {second} are one placement"):
        setups(given, 2, 4, UNIT)


def test_an_interrupted_result_keeps_how_many_points_there_were(tmp_path) -> None:
    import json

    from ppverify.design.output import load_design

    # 3 budgets on one placement are 3 points; 1 done before Ctrl-C: the file says 1 of 3
    rq = DesignRequest(2, 2, "linear", "1,2,none", UNIT, Limits(1.0))
    sets = setups("linear", 2, 2, UNIT)
    a = Point("linear", 1.0, "OPTIMAL", 10.0, 10.0, 1.0, "greedy-AW", None)
    d = Design(rq, sets, (a,), (), (a,), 1, 3, True, ("valid",))
    data = d.to_dict()
    assert (data["points_done"], data["points_total"], data["interrupted"]) == (1, 3, True)
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    back = load_design(path)
    assert (back.done, back.total, back.interrupted) == (1, 3, True)


def test_the_default_placements_at_one_device_are_not_refused() -> None:
    # at p = 1, v and loop:2 both put two stages on device 0: the same placement, but the default
    # list names both, and only the names that coincide at every p are refused
    assert [s.label for s in setups("linear,v,loop:2", 1, 2, UNIT)] == ["linear", "v", "loop:2"]


def test_a_family_on_a_searched_placement_under_another_name_is_not_said_unsearched(capsys) -> None:
    # Hanayo's one wave runs stages 0..p-1 down the devices and p..2p-1 back up: the V placement.
    # With v searched at budget 1 only (the least: one microbatch at a time), Hanayo, whose peak
    # is above 1 (it runs several microbatches' forwards ahead), is faster than the frontier there
    # because its peak is above every budget, not because v was not searched
    argv = ["design", "-p", "3", "-m", "6", "--costs", "F=1,I=1,W=1", "--placements", "v", "--budgets", "1"]
    assert main([*argv, "--work-limit", "0.5", "--search-work", "0", "--bound-work", "0", "--no-progress"]) == 0
    row = next(r for r in capsys.readouterr().out.splitlines() if r.strip().startswith("hanayo"))
    assert row.split()[1] == "v"
    assert "its placement was not searched" not in row
    assert "above every budget searched (the largest: 1)" in row


def test_save_dir_drops_the_frontier_files_an_earlier_design_left(tmp_path, capsys) -> None:
    # an earlier run of 4 frontier points; this one (v at budgets 1 and 2: two points, 16.5 then
    # 12.5, as docs/design.md's first example) writes 00 and 01; 02 and 03 would pass for its own
    out = tmp_path / "frontier"
    out.mkdir()
    for stem in ("frontier-02-v-budget3", "frontier-03-linear-budgetnone"):
        for ext in (".json", ".compute_only.csv", ".compute_comms.csv"):
            (out / f"{stem}{ext}").write_text("{}")
    (out / "notes.json").write_text("{}")  # not a name design writes: kept
    argv = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--placements", "v", "--budgets", "1,2"]
    assert main([*argv, "--work-limit", "1", "--no-progress", "--save-dir", str(out)]) == 0
    names = sorted(f.name for f in out.iterdir() if f.suffix == ".json")
    assert names == ["design.json", "frontier-00-v-budget1.json", "frontier-01-v-budget2.json", "notes.json"]
    assert not list(out.glob("frontier-0[23]-*"))


def test_save_dir_with_a_two_pipe_placement_writes_its_json_and_no_csv(tmp_path, capsys) -> None:
    # bidirectional runs two pipes (each stage on two devices): PyTorch's CSV maps a stage to one
    # rank, so its frontier schedules are ppverify JSON only; before, the CSV writer failed after
    # the whole search and nothing was printed
    out = tmp_path / "bi"
    argv = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--placements", "bidirectional"]
    assert main([*argv, "--budgets", "none", "--work-limit", "1", "--no-progress", "--save-dir", str(out)]) == 0
    text = capsys.readouterr().out
    assert "saved      1 frontier schedules (JSON only: a two-pipe schedule has no PyTorch CSV)" in text
    assert sorted(f.name for f in out.iterdir()) == ["design.json", "frontier-00-bidirectional-budgetnone.json"]
    assert main(["verify", str(out / "frontier-00-bidirectional-budgetnone.json")]) == 0


def test_measured_table_keeps_its_columns_under_a_long_name() -> None:
    from ppverify.design.measured import Measured, measured_text

    # "frontier 0 (bidirectional)" is 26 characters, two more than the column's least width (24)
    rows = [
        Measured("frontier 0 (bidirectional)", "frontier", 0.012, 0.0229, 2.0, 2.0, None, True),
        Measured("chimera", "family", 0.012, 0.0226, 2.0, 2.0, None, True),
    ]
    head, long, short = measured_text(rows).splitlines()[1:]
    # right-aligned columns: each row's predicted value ends where the header's "predicted" ends
    end = head.index("predicted") + len("predicted")
    assert long.index("0.0120") + 6 == short.index("0.0120") + 6 == end


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="SIGINT to a process and its children: POSIX")
def test_ctrl_c_with_a_pool_ends_the_workers_and_the_command_at_once(tmp_path) -> None:
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time

    # 30 points (3 placements x 10 budgets), every one searched, two at a time: after Ctrl-C the
    # points still queued must not run. Before, a worker took the stop for a task's error and went
    # on to the next queued point while the command, its frontier printed, waited for it at exit
    argv = ["-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--work-limit", "2"]
    cmd = [sys.executable, "-m", "ppverify", "design", *argv, "--all-points", "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the first point done: the pool is busy with the next ones
    assert first.startswith("design [1/30]"), first
    children = [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
    assert children  # the pool's workers
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()  # once sent: a test process held up before sending adds nothing
    try:
        out, err = proc.communicate(timeout=60)
    finally:  # a hung run must not outlive the test
        if proc.poll() is None:
            for pid in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.kill()
            proc.communicate()
    waited = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert "(interrupted: the frontier of the points done)" in out
    assert waited < 10, f"{waited:.1f} s after Ctrl-C"  # one point takes a few seconds on 2 cores
    for pid in children:  # gone (or a zombie nobody waits for: no longer running)
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z"), pid


def test_pair_work_without_bound_work_is_refused(capsys) -> None:
    # the two-device relaxation runs inside the bound work; --bound-work 0 runs none, so a pair
    # work given with it would be read by nobody (0 with it says the same thing twice: accepted)
    argv = [*ARGV, "--budgets", "2", "--no-progress", "--bound-work", "0"]
    assert main([*argv, "--pair-work", "5"]) == 2
    assert "parameter --pair-work=5.0: runs within the bound work, which --bound-work 0 switches off" in (
        capsys.readouterr().err
    )
    assert main([*argv, "--pair-work", "0"]) == 0
