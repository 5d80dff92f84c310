"""``measure --link-delay``: an emulated slow link in real worker processes.

Expected values are derived by hand from the schedules:

* GPipe p=2 m=2, F = 20 ms, B = 40 ms, link delay D = 50 ms. Rank 0 runs F0 [0, 20] and
  F1 [20, 40]; rank 1 gets F0's activation at 70 and F1's at 90, runs F0 [70, 90], F1 [90, 110],
  B1 [110, 150], B0 [150, 190] (GPipe's backwards in reverse order); rank 0 gets B1's gradient at
  200 and B0's at 240: B1 [200, 240], B0 [240, 280]. Makespan 280 ms, against 180 ms without the
  link: two extra delays on the critical path (the chain F -> B crosses the link twice).
* Chimera p=2 m=2 (two pipes, microbatch k down pipe k), same costs: each pipe's F [0, 20], the
  activation arrives at 70, F [70, 90], B [90, 130], the gradient arrives at 180, B [180, 220];
  then each stage's replica gradients are summed by a ring all-reduce of two ranks, 2 x D more:
  the last op ends at 320 ms.

Every consumer of a cross-rank input must also start at least D after its producer's SEND was
posted (the events record both).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from ppverify.measure import measure_many
from ppverify.schedules import build
from ppverify.systems.system import load_system

D = 0.05
COSTS = {"F": 0.02, "B": 0.04}
# sleep compute overshoots each sleep and each hand-over: a fraction of a millisecond when idle,
# milliseconds on a loaded machine, and a step that a busy machine preempts can run tens of
# milliseconds late; load only ever adds time, so every step is checked against the lower end and
# the fastest of three against the upper one
SLACK = 0.04
STEPS = 3


def in_window(makespans: list[float], expected: float) -> bool:
    """Every step no faster than the schedule allows, the fastest within SLACK of it."""
    return min(makespans) >= expected - 0.002 and min(makespans) <= expected + SLACK


@pytest.fixture(scope="module")
def runs():
    items = [(build("gpipe", p=2, m=2), COSTS), (build("chimera", p=2, m=2), COSTS)]
    delayed = measure_many(items, steps=STEPS, warmup=1, timeout=60, link_delay=D)
    plain = measure_many(items[:1], steps=STEPS, warmup=1, timeout=60)
    return delayed, plain


def test_gpipe_makespan_grows_by_two_delays(runs):
    delayed, plain = runs
    g = delayed[0]
    assert g.link_delay == D and g.summary()["link_delay"] == D
    assert in_window(g.makespans, 0.280), g.makespans
    assert g.predicted is not None and g.predicted.makespan == pytest.approx(0.280)
    assert in_window(plain[0].makespans, 0.180), plain[0].makespans
    assert g.grad_check.ok


def test_every_cross_rank_consumer_waits_the_delay(runs):
    g = runs[0][0]
    for _, per_rank in g.events:
        sends = {
            (ev.kind[-1], ev.stage, ev.mb): ev.start_ns
            for rank in per_rank
            for ev in rank
            if ev.kind.startswith("SEND")
        }
        checked = 0
        for rank in per_rank:
            for ev in rank:
                # F of stage 1 takes stage 0's activation; B of stage 0 takes stage 1's gradient
                key = (
                    ("F", 0, ev.mb)
                    if (ev.kind, ev.stage) == ("F", 1)
                    else ("B", 1, ev.mb)
                    if (ev.kind, ev.stage) == ("B", 0)
                    else None
                )
                if key is None:
                    continue
                assert ev.start_ns >= sends[key] + D * 1e9, (ev, sends[key])
                checked += 1
        assert checked == 4  # two activations and two gradients per step


def test_two_pipe_runner_delays_transfers_and_the_replica_all_reduce(runs):
    c = runs[0][1]
    assert c.runner == "two-pipe" and c.grad_check.ok
    assert in_window(c.makespans, 0.320), c.makespans
    assert c.predicted is not None and c.predicted.makespan == pytest.approx(0.320)


def test_calibrated_prediction_adds_the_delay(runs):
    from ppverify.measure.summary import calibrated_prediction

    g = runs[0][0]
    system = load_system("examples/systems/calibrated-2core.yaml")
    plain = calibrated_prediction(g.schedule, runs[1][0], system)
    delayed = calibrated_prediction(g.schedule, g, system)
    assert plain is not None and delayed is not None
    # the hand-over model: each of the two crossings on the critical path waits D after its
    # SEND's post instead of a wake of under a millisecond
    assert delayed - plain == pytest.approx(2 * D, abs=0.004)


def test_bad_link_delay_is_one_line_and_exit_2():
    for bad in ("-1", "nan", "100"):
        r = subprocess.run(
            [sys.executable, "-m", "ppverify", "measure", "1f1b", "-p", "2", "-m", "2", "--link-delay", bad],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2, r.stderr
        assert "link-delay" in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
