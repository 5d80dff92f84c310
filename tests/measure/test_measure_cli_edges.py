"""Edges of ``measure`` and ``calibrate``: options that would be ignored are refused, a killed
worker is named with its signal, the run line counts in the singular, and each residual
``calibrate`` prints is over the runs it was fitted to."""

from __future__ import annotations

import time
from dataclasses import replace

import psutil
import pytest

from ppverify.cli import main
from ppverify.measure.calibration import Calibration
from ppverify.measure.calibration_report import calibration_json, calibration_lines, residual_lines
from ppverify.measure.preset_file import preset_text
from ppverify.measure.workers import WorkerError, _demo_die, run_workers


def test_format_refused_for_a_two_pipe_schedule(capsys):
    # chimera runs on ppverify's own runner, which takes no CSV: the flavour would be ignored
    code = main(["measure", "chimera", "-p", "2", "-m", "2", "--format", "compute_comms"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "format=compute_comms" in err and "two-pipe runner, which reads no CSV" in err


def test_compute_only_refused_for_a_lowered_file(tmp_path, capsys):
    # a file with SEND/RECV runs as written; asking PyTorch to lower it again would be ignored
    path = tmp_path / "c.csv"
    path.write_text("0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n")
    code = main(["measure", str(path), "--format", "compute_only"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "format=compute_only" in err and "already holds its SEND/RECV actions" in err


def test_run_line_counts_one_process_and_one_step(capsys):
    # p = 1, one measured step: "1 process", "1 step" (not "1 processes", "1 steps")
    code = main(["measure", "1f1b", "-p", "1", "-m", "1", "--costs", "F=0.002,B=0.004", "--steps", "1", "--no-table"])
    out = capsys.readouterr().out
    assert code == 0
    assert "; 1 process, gloo; compute sleep; 1 step after 1 warm-up" in out


def test_killed_worker_is_named_with_its_signal():
    # rank 1 is SIGKILLed while rank 0 waits on it: rank 0 then fails with gloo's "connection
    # closed", a consequence; the cause is rank 1's death, signal 9, in the action it was in (1F0)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(WorkerError) as info:
        run_workers(2, _demo_die, None, timeout=60)
    msg = str(info.value)
    assert msg.startswith("rank 1 failed: worker process killed by signal 9 (SIGKILL) while in 1F0"), msg
    # no worker left behind: every new descendant but our own children (the fork server and
    # multiprocessing's resource tracker, which outlive a run by design) is gone
    me = psutil.Process()
    deadline = time.monotonic() + 10
    while True:
        workers = [
            p
            for p in me.children(recursive=True)
            if p.pid not in before and p.ppid() != me.pid and p.status() != psutil.STATUS_ZOMBIE
        ]
        if not workers or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not workers


def _cal() -> Calibration:
    # a calibration of 4 one-pipe and 2 two-pipe runs, as `calibrate --quick` runs them
    runs = (
        ("1f1b p=2 m=4", 0.08228),
        ("interleaved-1f1b p=2 m=8 v=2", 0.15541),
        ("zbv p=4 m=8", 0.15449),
        ("gpipe p=3 m=4", 0.10167),
        ("chimera p=2 m=4", 0.07094),
        ("chimera p=4 m=4", 0.08810),
    )
    extra = {"one_pipe_runs": 4, "two_pipe_runs": 2, "residual_two_pipe": 0.0334, "handover_residual": 0.0249}
    return Calibration(2.7e-4, 2.7e-4, 1.15e-4, 6e9, runs=runs, residual=0.0269, extra=extra)


def test_residuals_are_counted_over_their_own_runs():
    # the one-pipe fit never saw the two chimera runs: 2.69 % is over 4 schedules, not 6; the
    # two-pipe fit's 3.34 % over the other 2; the hand-over model's 2.49 % over the same 4
    lines = calibration_lines(_cal())
    text = "\n".join(lines)
    assert "fit residual       2.69 % rms over 4 one-pipe schedules" in text
    assert "3.34 % rms over 2 two-pipe schedules" in text
    assert "hand-over model" not in text  # this calibration has no hand-over terms
    assert "over 6 schedules" not in text
    js = calibration_json(_cal(), None)
    assert (js["residual"], js["residual_two_pipe"], js["residual_handover"]) == (0.0269, 0.0334, 0.0249)
    assert (js["one_pipe_runs"], js["two_pipe_runs"]) == (4, 2)
    comment = preset_text(_cal())
    assert (
        "rms relative residual 2.69 % over the one-pipe runs, the two-pipe runner's 3.34 % over the two-pipe runs"
        in comment
    )


def test_handover_residual_is_printed_next_to_the_fits():
    # with hand-over terms, measure --system predicts one-pipe schedules by that model: its own
    # residual (2.49 % over the 4 one-pipe runs) is printed, not only the async fold's
    cal = replace(_cal(), handover=object())
    assert residual_lines(cal)[2].strip() == (
        "2.49 % rms over 4 one-pipe schedules by the hand-over model (measure --system's prediction)"
    )


def test_trace_fit_json_gives_the_two_pipe_runners_figure_and_residual():
    # a chimera trace fits only the two-pipe runner's overhead (800 us here) and its residual
    # (1.28 %); the one-pipe pair stays 0 and its residual is over no runs: the JSON must carry
    # the two-pipe figure and residual, not only the zeros
    from ppverify.core.costs import CostModel
    from ppverify.measure.calibration_report import trace_fit_json
    from ppverify.measure.trace_calibrate import TraceFit, trace_preset_text
    from ppverify.schedules import build

    s = build("chimera", p=2, m=2)
    cal = Calibration(0.0, 0.0, 3.9e-4, 1e15, extra={"residual_two_pipe": 0.0128}, two_pipe_overhead_s=(8e-4, 0.0))
    costs = CostModel.abstract(s.placement, F=0.005, B=0.01)
    fit = TraceFit(cal, costs, s, (1, 2), ((1, 0.034), (2, 0.035)), (), dropped=(5, 6))
    js = trace_fit_json(fit, [(3, 0.0341, 0.0357)], None)
    assert js["two_pipe_overhead_s"] == [8e-4, 0.0] and js["residual"] == 0.0128
    # the preset's comments give the same figure (they said 0.00 %, the one-pipe fit over no runs)
    # and name the steps left out as outliers, as the --out summary does
    text = trace_preset_text(fit, "mine", "prof/")
    assert "(rms relative residual 1.28 %)" in text and "0.00 %" not in text
    assert "(makespans 34.00 ms, 35.00 ms); left out as outliers: ProfilerStep 5, 6." in text
    one_pipe = build("1f1b", p=2, m=2)
    one_cal = Calibration(1e-4, 7e-4, 0.0, 1e15, residual=0.0186)
    one = TraceFit(one_cal, CostModel.abstract(one_pipe.placement, F=0.005, B=0.01), one_pipe, (1,), ((1, 0.03),), ())
    js = trace_fit_json(one, [], None)
    assert js["two_pipe_overhead_s"] is None and js["residual"] == 0.0186
    # one fit step: too few for the outlier check (it takes 3), which the preset says
    text = trace_preset_text(one, "mine", "prof/")
    assert "(makespans 30.00 ms); not checked for outliers (fewer than 3 fit steps)." in text


def test_a_crowded_machine_is_not_called_quiet():
    # 87 % of the CPUs busy, none of it niced: other jobs at normal priority, which the niced
    # share misses; a quiet calibration's sleeping workers keep 2 cores about 15-17 % busy
    from ppverify.measure.machine_load import CpuShare

    crowded, calm = CpuShare(0.87, 0.0, 10.0), CpuShare(0.42, 0.0, 10.0)
    assert crowded.quiet and crowded.crowded and not calm.crowded
    lines = calibration_lines(replace(_cal(), extra={**_cal().extra, "load": crowded}))
    assert lines[-1].endswith("calibrate again") and "more than half the CPUs busy" in lines[-1]
    assert "NOT a quiet machine: more than half the CPUs busy" in preset_text(
        replace(_cal(), extra={**_cal().extra, "load": crowded})
    )
    calm_lines = calibration_lines(replace(_cal(), extra={**_cal().extra, "load": calm}))
    assert calm_lines[-1] == "machine load       42 % of the CPUs busy, 0 % by niced processes (other jobs)"
    # at real-time priority the workers run ahead of the other jobs: said so, not "calibrate again"
    rt = calibration_lines(replace(_cal(), extra={**_cal().extra, "load": crowded, "realtime": True}))
    assert rt[-1].endswith(": workers at real-time priority, ahead of them")


def test_calibrate_timeout_too_short_is_refused_before_any_run(monkeypatch, capsys):
    # --quick runs interleaved-1f1b p=2 m=8 v=2 for 1 + 3 steps; by hand each step sleeps
    # (8 x 2 + 2 - 1) x 7.5 ms = 127.5 ms at F = 5 ms, B = 10 ms per device share (v = 2: 2.5 and
    # 5 ms per stage), 0.51 s in all: over 0.5 s. calibrate has no costs to lower: only the timeout
    import ppverify.measure.calibrate as cal_mod

    monkeypatch.setattr(cal_mod, "pingpong", lambda *a, **k: pytest.fail("a worker started"))
    code = main(["calibrate", "--quick", "--timeout", "0.5"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "timeout=0.5" in err and "interleaved-1f1b p=2 m=8 v=2's 4 steps" in err and "about 0.51 s" in err
    assert err.endswith("raise --timeout (calibrate's runs sleep fixed costs)") and "lower the costs" not in err


def test_a_trace_fits_preset_claims_no_handover_residual_it_never_computed(tmp_path):
    # calibrate --from-trace walks no calibration runs, so its preset has no hand-over residual:
    # it once wrote "0.00 %", a perfect fit nobody measured; a live calibration's 3.90 % stays
    from ppverify.engines.runtime import Handover
    from ppverify.systems.system import load_system

    ho = Handover(head=4e-4, overshoot=5e-5, gap=7e-5, send=3.7e-4, recv=7.8e-4, late=8.6e-4, wake=1.4e-3)
    trace = preset_text(Calibration(1.2e-4, 5.8e-4, 1.6e-4, 1e15, handover=ho))
    assert "above 0.00 %" not in trace and "(no residual here: no calibration runs were walked)" in trace
    (tmp_path / "t.yaml").write_text(trace)
    assert load_system(str(tmp_path / "t.yaml")).handover_s is not None  # still a preset that loads
    live = preset_text(Calibration(1.2e-4, 5.8e-4, 1.6e-4, 1e15, handover=ho, extra={"handover_residual": 0.039}))
    assert "# one-pipe runs above 3.90 %)" in live


def test_profile_dir_with_a_wider_runs_trace_is_refused(tmp_path, capsys):
    # a p=3 run left rank2.pt.trace.json; a p=2 run writes rank0 and rank1 only, so rank2 would
    # stay beside them and import-trace would read a directory of two jobs
    stale = tmp_path / "rank2.pt.trace.json"
    stale.write_text("{}")
    code = main(["measure", "gpipe", "-p", "2", "-m", "2", "--profile", str(tmp_path), "--steps", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "holds rank2.pt.trace.json" in err and "this one's 2" in err
    assert stale.read_text() == "{}"  # nothing of the user's removed


def test_realtime_run_says_so(capsys):
    # --realtime changes the timings (docs/measure.md: 3.6 % spread instead of 21.5 %): the run
    # line and the JSON say the workers ran at that priority, rather than accepting it silently
    import json

    from ppverify.core.errors import PPVerifyError
    from ppverify.measure.realtime import check_realtime

    try:
        check_realtime(True, 1)
    except PPVerifyError:
        pytest.skip("real-time priority is not allowed here")
    argv = ["measure", "1f1b", "-p", "1", "-m", "1", "--costs", "F=0.002,B=0.004", "--steps", "1", "--realtime"]
    assert main([*argv, "--no-table"]) == 0
    assert "; workers at real-time priority (SCHED_FIFO)" in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["realtime"] is True


def test_a_saved_schedule_is_measured_with_its_own_costs(tmp_path, capsys):
    # a JSON schedule saved with F=1,B=3 (design, optimize --save) is timed by simulate with those
    # costs; measure once slept the default F=0.01,B=0.02 instead. At 10 ms a unit, 1F1B p=2 m=2
    # sleeps F=10 ms, B=30 ms per stage: by hand (m + p - 1) x (F + B) = 3 x 40 = 120 ms predicted
    import json

    from ppverify.core.costs import CostModel
    from ppverify.io.json_format import save_json
    from ppverify.schedules import build

    s = build("1f1b", p=2, m=2)
    path = save_json(s, tmp_path / "s.json", CostModel.abstract(s.placement, F=1, B=3))
    assert main(["measure", str(path), "--steps", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["costs_from"] == "file" and rep["makespan_predicted"] == pytest.approx(0.120)
    # --costs still wins over the file's
    assert main(["measure", str(path), "--steps", "1", "--json", "--costs", "F=0.002,B=0.004"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["costs_from"] == "given" and rep["makespan_predicted"] == pytest.approx(3 * 0.006)


def test_calibrate_json_without_out_carries_the_preset(tmp_path, capsys):
    # --json alone once printed the figures and dropped the preset (neither printed nor written):
    # the fit's whole product lost; now the JSON carries it, and with --out points to the file
    import json
    from pathlib import Path

    import ppverify

    traces = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
    assert main(["calibrate", "--from-trace", traces, "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["preset"] is None and js["preset_text"].startswith("# Written by `ppverify calibrate --from-trace")
    (tmp_path / "p.yaml").write_text(js["preset_text"])
    from ppverify.systems.system import load_system

    assert load_system(str(tmp_path / "p.yaml")).handover_s is not None
    out = str(tmp_path / "q.yaml")
    assert main(["calibrate", "--from-trace", traces, "--json", "--out", out]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["preset"] == out and "preset_text" not in js


def test_calibrate_json_says_whether_the_machine_was_quiet():
    # the text says "not quiet, calibrate again" at 87 % busy (none niced); the JSON says the same
    from ppverify.measure.machine_load import CpuShare

    crowded = calibration_json(replace(_cal(), extra={**_cal().extra, "load": CpuShare(0.87, 0.0, 10.0)}), None)
    calm = calibration_json(replace(_cal(), extra={**_cal().extra, "load": CpuShare(0.17, 0.0, 10.0)}), None)
    assert crowded["load"]["quiet"] is False and calm["load"]["quiet"] is True


def test_wait_quiet_waits_for_jobs_at_normal_priority_too(monkeypatch):
    # /proc/stat ticks (user, nice, system, idle, iowait, irq, softirq, steal): a first window 99 %
    # busy with nothing niced (other engineers' jobs at normal priority), then one 5 % busy. The
    # niced share alone called the first quiet; nothing of ours runs while waiting, so it is not
    import ppverify.measure.machine_load as ml

    readings = iter([(0,) * 8, (99, 0, 0, 1, 0, 0, 0, 0), (99, 0, 0, 1, 0, 0, 0, 0), (104, 0, 0, 96, 0, 0, 0, 0)])
    monkeypatch.setattr(ml, "cpu_ticks", lambda stat=None: next(readings))
    share = ml.wait_quiet(60.0, window_s=0.0)
    assert share == ml.CpuShare(busy=0.05, niced=0.0, seconds=1.0)
    # with no time to wait, the busy window is returned, and it is not idle enough
    readings = iter([(0,) * 8, (99, 0, 0, 1, 0, 0, 0, 0)])
    share = ml.wait_quiet(0.0, window_s=0.0)
    assert share is not None and share.busy == 0.99 and not ml.idle_enough(share)


def test_file_costs_in_seconds_are_slept_as_they_are(tmp_path):
    # a file saved with costs in seconds (a preset's model: real per-stage times) is not rescaled:
    # 30 ms and 45 ms per stage stay 30 and 45 ms; abstract units take 10 ms each
    from ppverify.core.costs import CostModel
    from ppverify.io.json_format import save_json
    from ppverify.measure.options import file_costs
    from ppverify.schedules import build

    s = build("gpipe", p=2, m=2)
    secs = replace(CostModel.abstract(s.placement, F=0.01, B=0.02), time_unit="s")
    secs = replace(secs, duration={**secs.duration, "F": (0.03, 0.045)})
    c = file_costs(str(save_json(s, tmp_path / "s.json", secs)), s)
    assert c is not None and c.duration["F"] == (0.03, 0.045) and c.time_unit == "s"
    units = file_costs(str(save_json(s, tmp_path / "u.json", CostModel.abstract(s.placement, F=2, B=4))), s)
    assert units is not None and units.duration["F"] == pytest.approx((0.02, 0.02))
    assert file_costs(str(save_json(s, tmp_path / "n.json")), s) is None  # no stored costs: the default


@pytest.mark.parametrize(
    "family, rank, swap, words",
    [
        # chimera p=2 m=2, rank 0 runs 0F0 1F1 1B1 0B0: moving 0B0 first runs a backward before its
        # forward (it was a bare "KeyError: (0, 0)" from the runner's internals)
        ("chimera", 0, (3, 0), "rank 0 runs 0B0 before 0F0, its forward on this rank"),
        # dualpipe p=2 m=4, rank 0 ends 0I1 0W1: swapped, the W has no output gradient yet
        ("dualpipe", 0, (6, 7), "rank 0 runs 0W1 before 0I1"),
    ],
)
def test_two_pipe_runner_names_an_op_run_too_early(tmp_path, capsys, family, rank, swap, words):
    import json

    path = tmp_path / f"{family}.json"
    assert main(["export", family, "-p", "2", "-m", "2" if family == "chimera" else "4", "-o", str(path)]) == 0
    doc = json.loads(path.read_text())
    prog = doc["programs"][rank]
    i, j = swap
    if i > j:  # move op i to position j
        prog.insert(j, prog.pop(i))
    else:
        prog[i], prog[j] = prog[j], prog[i]
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    code = main(["measure", str(path), "--steps", "1", "--costs", "F=0.002,B=0.004", "--timeout", "20"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"rank {rank} failed: RuntimeError: {words}" in err
