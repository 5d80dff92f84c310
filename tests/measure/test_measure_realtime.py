"""``measure --realtime``: the workers at real-time priority where the process may set it, one
line (exit 2, no worker started) where it may not; the permission read from the process's
capabilities and its real-time priority limit."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.measure import measure
from ppverify.measure import realtime as rt
from ppverify.measure import workers as w
from ppverify.schedules import build


@pytest.mark.parametrize(
    "rtprio, capeff, allowed",
    [
        (0, "0000000000000000", False),
        (0, "0000000000800000", True),  # bit 23: CAP_SYS_NICE
        (0, "000001ffffffffff", True),  # root's full set
        (1, "0000000000000000", True),  # ulimit -r 1
    ],
)
def test_permission_from_the_capabilities_and_the_limit(tmp_path, monkeypatch, rtprio, capeff, allowed):
    import resource

    status = tmp_path / "status"
    status.write_text(f"Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t{capeff}\n")
    monkeypatch.setattr(resource, "getrlimit", lambda which: (rtprio, rtprio))
    assert rt.realtime_allowed(status) is allowed


def test_not_allowed_is_one_line_and_starts_nothing(monkeypatch, capsys):
    monkeypatch.setattr(rt, "realtime_allowed", lambda *a: False)
    started = []
    monkeypatch.setattr(w, "prestart", lambda: started.append(1))
    argv = ["measure", "1f1b", "-p", "2", "-m", "2", "--realtime"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "realtime" in err and "SCHED_FIFO" in err and "CAP_SYS_NICE" in err
    assert not started
    with pytest.raises(ParameterError, match="SCHED_FIFO"):
        w.run_workers(2, w._demo_allreduce, 1, 30, realtime=True)


def test_more_computing_workers_than_cores_is_one_line(monkeypatch, capsys):
    # at real-time priority a worker that computes keeps its core until it blocks: p = 3 with real
    # compute on two cores is refused; sleeping ops block at once, so there it is allowed
    monkeypatch.setattr(rt, "realtime_allowed", lambda *a: True)
    monkeypatch.setattr(rt.os, "sched_getaffinity", lambda pid: {0, 1})
    assert main(["measure", "1f1b", "-p", "3", "-m", "3", "--realtime", "--compute", "real"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs a core per worker: 3 workers, 2 cores" in err
    rt.check_realtime(True, 2, "real")  # two workers on two cores: allowed
    rt.check_realtime(True, 3, "sleep")  # three sleeping workers on two cores: allowed


def test_leaving_realtime_puts_the_thread_back_at_the_ordinary_policy():
    import os
    import threading

    if not rt.realtime_allowed():
        rt.leave_realtime()  # an ordinary thread: nothing to do, nothing raised
        return
    seen = []

    def worker():
        rt.enter_realtime()
        seen.append(os.sched_getscheduler(0))
        rt.leave_realtime()
        seen.append(os.sched_getscheduler(0))

    t = threading.Thread(target=worker)  # the policy is per thread: the test's own stays as it is
    t.start()
    t.join()
    assert seen == [os.SCHED_FIFO, os.SCHED_OTHER]


def test_a_realtime_run_trains_as_any_other():
    """Where the policy may be set (root here), the run is the same run: gradients checked, every
    op recorded; elsewhere (or on fewer cores than workers) the same call is refused in one line."""
    s = build("1f1b", p=2, m=2)
    import os

    if not rt.realtime_allowed() or len(os.sched_getaffinity(0)) < 2:  # no policy, or one core for two workers
        with pytest.raises(ParameterError, match="SCHED_FIFO|a core per worker"):
            measure(s, {"F": 0.002, "B": 0.004}, steps=2, realtime=True)
        return
    r = measure(s, {"F": 0.002, "B": 0.004}, steps=2, realtime=True)
    assert r.grad_check.ok and len(r.timelines) == 2
    assert sorted(map(str, r.timeline.ops)) == sorted(map(str, s.ops()))


def test_three_sleeping_ranks_on_two_cores_run_and_export_their_traces_at_realtime(tmp_path):
    """Sleeping ops block at once, so three real-time ranks share two cores; a profiled run leaves
    real-time priority before its export and every rank's trace imports to the schedule's ops."""
    from ppverify.io.profiler_trace import read_traces
    from ppverify.io.trace_step import recorded_step
    from ppverify.measure.trace_import import import_step

    s = build("1f1b", p=3, m=3)
    if not rt.realtime_allowed():
        with pytest.raises(ParameterError, match="SCHED_FIFO"):
            measure(s, {"F": 0.002, "B": 0.004}, steps=2, realtime=True)
        return
    r = measure(s, {"F": 0.002, "B": 0.004}, steps=2, realtime=True, profile=str(tmp_path))
    assert r.grad_check.ok
    traces = read_traces([tmp_path])
    assert len(traces) == 3
    imp = import_step(traces, recorded_step(traces, None, "auto"), s)
    assert sorted(map(str, imp.timeline.ops)) == sorted(map(str, s.ops()))
