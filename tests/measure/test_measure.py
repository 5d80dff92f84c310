"""The measured level with real worker processes (gloo, PyTorch's runtime and the two-pipe runner).

Workers are shared: one batch of schedules per p (``measure_many``), so the torch start-up is
paid once. Costs are tiny sleeps; timing is never asserted (the machine is noisy), only
gradients, completeness and order of the recorded ops, hang reports and exit codes.
Run time: about 60 s on 2 cores shared with other jobs (load 10), most of it one torch start-up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import psutil
import pytest

from ppverify.cli import main
from ppverify.core.ops import compute_ops
from ppverify.io.torch_csv import parse_rows
from ppverify.io.torch_interop import torch_lower
from ppverify.measure import measure_many
from ppverify.measure.gradcheck import reference_grads
from ppverify.measure.record import causality_violations
from ppverify.measure.stages import ModelSpec
from ppverify.measure.workers import STARTUP_TIMEOUT
from ppverify.schedules import build, families

COSTS = {"F": 0.002, "B": 0.004}
FAST = dict(steps=1, warmup=1, timeout=60.0)


def _no_reduce_grad(p: int, m: int):
    # PyTorch's own lowering of 1F1B, without the REDUCE_GRAD that divides gradients by m:
    # the runtime trains it silently wrong (every gradient m times too large)
    rows = [[c for c in row if not c.endswith("REDUCE_GRAD")] for row in torch_lower(build("1f1b", p=p, m=m))]
    return rows, parse_rows(rows, "no_reduce_grad.csv")


@pytest.fixture(scope="module")
def p2_runs():
    names = [f.name for f in families()]
    scheds = [build(n, 2, 4) for n in names] + [_no_reduce_grad(2, 4)[1]]
    return dict(zip(names + ["corrupt"], measure_many([(s, COSTS) for s in scheds], **FAST)))


@pytest.fixture(scope="module")
def p4_runs():
    # every family at p=4, m=8 (the smallest m every family's rules accept), plus Hanayo with two
    # waves: its default single wave is the V placement, two waves are a true wave
    scheds = {f.name: build(f.name, 4, 8) for f in families()}
    scheds["hanayo-w2"] = build("hanayo", 4, 8, waves=2)
    return dict(zip(scheds, measure_many([(s, COSTS) for s in scheds.values()], **FAST)))


def _check_run(res):
    assert res.grad_check.ok, res.grad_check.message
    assert res.grad_check.checked == 6 * sum(len(res.schedule.placement.stages_on(d)) for d in range(res.schedule.p))
    tl = res.timeline
    assert tl.semantics == "measured" and tl.time_unit == "s"
    # every op of the schedule ran exactly once, on its device, and each device ran its
    # compute ops in program order (a rank executes its actions one after the other)
    sched = res.schedule
    assert sorted(map(str, tl.ops)) == sorted(map(str, sched.ops()))
    for d in range(sched.p):
        ran = [str(o) for o, dev in zip(tl.ops, tl.device) if dev == d]
        order = np.argsort(tl.start[tl.device == d], kind="stable")
        assert [ran[i] for i in order] == [str(o) for o in compute_ops(sched.programs[d])]
    assert all(sched.device_of(o) == dev for o, dev in zip(tl.ops, tl.device))
    assert (tl.end >= tl.start).all() and tl.start.min() >= 0
    assert res.predicted is not None and res.predicted.makespan > 0
    # causality on one clock: no op starts before every op it depends on (step DAG) has ended;
    # each op sleeps at least 2 ms, so a result handed on before its op ends would show by far
    # more than the 10 us allowed for rounding; checked on every step of the batch
    for step in res.timelines:
        assert causality_violations(step, tolerance=1e-5) == []


@pytest.mark.parametrize("family", [f.name for f in families()])
def test_every_family_trains_correctly_at_p2(p2_runs, family):
    res = p2_runs[family]
    _check_run(res)
    assert res.runner == ("two-pipe" if res.schedule.placement.num_pipes == 2 else "torch-runtime")


@pytest.mark.parametrize("name", [f.name for f in families()] + ["hanayo-w2"])
def test_every_family_trains_correctly_at_p4(p4_runs, name):
    _check_run(p4_runs[name])


def test_missing_reduce_grad_is_a_mismatch_naming_stage_and_param(p2_runs):
    res = p2_runs["corrupt"]
    v = res.grad_check
    # without REDUCE_GRAD nothing divides by m = 4: the pipelined gradient is 4x the reference,
    # so the difference is 3 |reference|, first reported on stage 0 at its largest gradient
    ref = reference_grads(ModelSpec.for_compute("sleep"), 2, 4)[0]
    worst = max(ref, key=lambda n: np.abs(ref[n]).max())
    assert (v.ok, v.stage, v.param) == (False, 0, worst)
    assert v.max_abs_diff == pytest.approx(3 * np.abs(ref[worst]).max(), rel=1e-9)


def _workers_of(proc: psutil.Process) -> list[psutil.Process]:
    # worker processes are children of multiprocessing's fork server (or of us under spawn)
    out = []
    for child in proc.children(recursive=True):
        try:
            cmd = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "resource_tracker" in cmd or ("forkserver import main" in cmd and child.ppid() == proc.pid):
            continue
        out.append(child)
    return out


def _alive(procs) -> list:
    alive = []
    for pr in procs:
        try:
            if pr.is_running() and pr.status() != psutil.STATUS_ZOMBIE:
                alive.append(pr)
        except psutil.Error:
            pass
    return alive


def test_deadlock_is_stopped_naming_each_blocked_action(tmp_path, capsys):
    # rank 0 waits for 1's gradient before sending its activation; rank 1 waits for that activation
    path = tmp_path / "dead.csv"
    path.write_text("0F0,0RECV_B0,0B0,0SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0\n")
    t = time.monotonic()
    code = main(["measure", str(path), "--timeout", "2", "--costs", "F=0.002,B=0.004"])
    out = capsys.readouterr().out
    assert code == 1
    assert "rank 0 blocked in 0B0" in out and "rank 1 blocked in 1F0" in out
    # seconds, not gloo's own timeout (an hour): the workers' start-up, with its own allowance
    # (STARTUP_TIMEOUT: a first run's torch import took 65 s on a 2-core machine at load 11, over
    # the 60 s this bound was), then the 2 s timeout and the shut-down
    assert time.monotonic() - t < STARTUP_TIMEOUT + 60
    deadline = time.monotonic() + 10
    while _alive(_workers_of(psutil.Process())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(_workers_of(psutil.Process()))


def test_cli_json_frame_and_trace(tmp_path, capsys):
    frame, trace = tmp_path / "f.csv", tmp_path / "t.json"
    code = main(
        [
            "measure",
            "1f1b",
            "-p",
            "2",
            "-m",
            "2",
            "--costs",
            "F=0.002,B=0.004",
            "--steps",
            "2",
            "--json",
            "--frame",
            str(frame),
            "--trace",
            str(trace),
        ]
    )
    assert code == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["semantics"] == "measured" and rep["runner"] == "torch-runtime"
    assert rep["grad_check"]["ok"] and rep["steps"] == 2 and len(rep["step_times"]) == 2
    assert rep["makespan_measured"] == rep["makespan"] > 0
    # predicted by the async engine: 1F1B p=2 m=2 with F=2 ms, B=4 ms is (m + p - 1)(F + B) = 18 ms
    assert rep["makespan_predicted"] == pytest.approx(0.018)
    assert rep["predicted"]["semantics"] == "async"
    rows = [r for r in frame.read_text().splitlines() if not r.startswith("memory,")]  # the measured memory curve
    assert len(rows) == 1 + 8 + 4  # header, 8 ops, 2 activations + 2 gradients
    assert json.loads(trace.read_text())["otherData"]["semantics"] == "measured"


def test_cli_mismatch_exits_1(tmp_path, capsys):
    rows, _ = _no_reduce_grad(2, 2)
    path = tmp_path / "lowered.csv"
    path.write_text("".join(",".join(r) + "\n" for r in rows))
    code = main(["measure", str(path), "--steps", "1", "--costs", "F=0.002,B=0.004", "--no-table"])
    out = capsys.readouterr().out
    assert code == 1 and "gradient MISMATCH: stage 0 parameter" in out


def test_schedule_rejected_by_the_runtime_exits_2(tmp_path, capsys):
    # rank 1 computes 1F0 before its RECV_F0: PyTorch's runtime would refuse it on that rank
    # ("Computing action=1F0 before receiving input"); measure refuses it before any worker
    # starts, by the send/recv rule (a RECV before the op that consumes it)
    path = tmp_path / "early.csv"
    path.write_text("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1RECV_F0,1B0,1SEND_B0\n")
    code = main(["measure", str(path), "--timeout", "20"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "1RECV_F0 must come before 1F0 on rank 1" in err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--steps", "0"], "parameter --steps=0"),
        (["-p", "1000"], "this machine holds at most"),
        (["--compute", "sleep", "--costs", "F=0"], "costs=F=0"),
    ],
)
def test_cli_bad_input_exits_2(argv, words, capsys):
    code = main(["measure", "1f1b", "-m", "2", *argv])
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_without_torch_one_line(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    code = main(["measure", "1f1b", "-p", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install ppverify[torch]" in err and len(err.strip().splitlines()) == 1


def test_interrupt_kills_every_worker(tmp_path):
    status = tmp_path / "status"
    script = textwrap.dedent(f"""
        from ppverify.measure.workers import run_workers, _demo_hang
        if __name__ == "__main__":
            run_workers(2, _demo_hang, 0, timeout=120, status_dir={str(status)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # wait until both workers are blocked in their receive (phase 0); on a loaded machine the
        # fork server's and the workers' imports of torch take minutes, and an interrupt sent
        # before the workers run tests something else, so not reaching phase 0 is a failure here
        deadline = time.monotonic() + 300
        files = [status / f"status-{r}" for r in range(2)]
        while not all(f.exists() and f.read_bytes()[:8] == (0).to_bytes(8, "little") for f in files):
            assert time.monotonic() < deadline and proc.poll() is None, "the workers never reached phase 0"
            time.sleep(0.1)
        workers = _workers_of(psutil.Process(proc.pid))
        assert len(workers) >= 2
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 10
        while _alive(workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(workers)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_prestart_starts_one_fork_server_that_runs_reuse():
    from multiprocessing import forkserver

    from ppverify.measure.workers import prestart

    assert prestart() is True
    pid = forkserver._forkserver._forkserver_pid
    assert pid is not None and psutil.pid_exists(pid)
    assert prestart() is True and forkserver._forkserver._forkserver_pid == pid  # idempotent
    assert measure_many([(build("gpipe", 2, 1), COSTS)], **FAST)[0].grad_check.ok
    assert forkserver._forkserver._forkserver_pid == pid  # the run forked its workers from it
