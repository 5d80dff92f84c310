"""``ppverify compare --measured``: the measured level next to the predictions, ranked and marked
like the other levels, blank with a note beyond p = 4."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.compare.config import Config, ScheduleEntry
from ppverify.compare.evaluate import LevelResult, PointResult, evaluate_point
from ppverify.compare.table import format_config_table, to_frame


def test_measured_rank_change_is_marked_against_the_previous_level():
    # synthetic results (no processes): async ranks gpipe first, the measurement ranks it second
    cfg = Config(2, 4, costs=(("F", 1.0), ("B", 2.0)))
    pts = [
        PointResult(ScheduleEntry(n, n), cfg, (LevelResult("async", "ok", a), LevelResult("measured", "ok", b)))
        for n, a, b in (("gpipe", 10.0, 13.0), ("1f1b", 11.0, 12.0))
    ]
    df = to_frame(pts)
    got = {(r.schedule, r.level): (r.rank, r.rank_change) for r in df.itertuples()}
    assert got[("gpipe", "measured")] == (2, "1->2") and got[("1f1b", "measured")] == (1, "2->1")
    assert "13 (2)*" in format_config_table(df, cfg.label)


def test_measured_is_not_applicable_beyond_p4():
    pt = evaluate_point(
        ScheduleEntry("gpipe", "gpipe"), Config(8, 8, costs=(("F", 1.0), ("B", 2.0))), ("async", "measured")
    )
    r = pt.level("measured")
    assert r.status == "not applicable" and "p <= 4" in r.note and r.makespan is None


def test_compare_measured_cli_one_tiny_configuration(capsys):
    # p=2 m=2, F=1, B=2 units of 10 ms: every op sleeps at least its duration and waits for its
    # inputs, so the measured makespan is at least the zero-delay async makespan, 3F + 3B = 9 units
    # for both (gpipe and 1f1b coincide at m = p = 2)
    assert (
        main(
            [
                "compare",
                "--schedules",
                "gpipe,1f1b",
                "-p",
                "2",
                "-m",
                "2",
                "--costs",
                "F=1,B=2",
                "--levels",
                "async",
                "--measured",
                "--no-progress",
                "--no-verify",
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    meas = {r["schedule"]: r for r in rows if r["level"] == "measured"}
    asyn = {r["schedule"]: r for r in rows if r["level"] == "async"}
    assert asyn["gpipe"]["makespan"] == 9.0
    for name in ("gpipe", "1f1b"):
        assert meas[name]["status"] == "ok" and meas[name]["makespan"] >= 9.0 and meas[name]["rank"] in (1, 2)
        assert "median of 3 steps" in meas[name]["note"]


def test_measured_peaks_are_the_runs_saved_activations_in_the_tables_unit(capsys):
    # p=2 m=4, abstract costs (1 unit = 10 ms; F=0.2 keeps the run short): the measured level's
    # peaks come from the tensors autograd saved in the real run, each stage's bytes counted as its
    # activation (one microbatch over a device share = 1; interleaved stages are half of it); they
    # equal the async engine's model peaks per device: GPipe holds all 4 microbatches, 1F1B's
    # device d holds p - d (by hand), interleaved 1F1B whatever its order gives (the model's)
    args = ["compare", "--schedules", "gpipe,1f1b,interleaved-v2", "-p", "2", "-m", "4", "--costs", "F=0.2,B=0.4"]
    assert main([*args, "--levels", "async", "--measured", "--no-progress", "--no-verify", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    meas = {r["schedule"]: r["peak_activations"] for r in rows if r["level"] == "measured"}
    asyn = {r["schedule"]: r["peak_activations"] for r in rows if r["level"] == "async"}
    assert meas["gpipe"] == [4.0, 4.0] and meas["1f1b"] == [2.0, 1.0]
    assert meas == asyn
    df = to_frame(
        [
            PointResult(
                ScheduleEntry(n, n),
                Config(2, 4, costs=(("F", 1.0), ("B", 2.0))),
                (LevelResult("async", "ok", 10.0, 0.1, (4.0, 4.0)), LevelResult("measured", "ok", 12.0, None, peaks)),
            )
            for n, peaks in (("gpipe", (4.0, 4.0)), ("1f1b", (2.0, 1.0)))
        ]
    )
    text = format_config_table(df, "p=2 m=4 F=1,B=2 c=0")
    assert "peak act. (measured)" in text.splitlines()[1]
    assert text.splitlines()[4].split()[-1] == "2"  # 1f1b's measured peak, its highest device


def test_measured_timeline_is_kept_with_abstract_costs(monkeypatch):
    # abstract costs sleep UNIT_S seconds per unit: the measured step (here the async engine timed
    # in seconds, standing in for the runtime) comes back in units, its Gantt kept for the report
    from types import SimpleNamespace

    from ppverify.compare.measured import UNIT_S, fill_measured, placeholder
    from ppverify.engines import run

    cfg = Config(2, 2, costs=(("F", 1.0), ("B", 2.0)))
    seen = []

    def fake_measure_many(jobs, **_):
        out = []
        for schedule, slept in jobs:
            seen.append(slept.time_unit)
            tl = run(schedule, slept, semantics="async")
            out.append(
                SimpleNamespace(makespans=[tl.makespan], grad_check=SimpleNamespace(ok=True), timeline=tl, memory=None)
            )
        return out

    monkeypatch.setattr("ppverify.measure.measure_many", fake_measure_many)
    pt = PointResult(ScheduleEntry("gpipe", "gpipe"), cfg, (placeholder(cfg),))
    (done,) = fill_measured([pt], unit_s=UNIT_S)
    r = done.level("measured")
    assert seen == ["s"] and r.status == "ok" and r.timeline is not None
    # gpipe p=2 m=2, F=1, B=2, no delay: (m + p - 1)(F + B) = 9 units, the bars in units too
    assert r.timeline.time_unit == "units"
    assert round(r.makespan, 9) == 9.0 and round(float(r.timeline.makespan), 9) == 9.0
    assert sorted(round(float(x), 9) for x in r.timeline.start[:2]) == [0.0, 1.0]


def test_measured_level_emulates_a_fixed_delay_and_sleeps_the_ops_own_costs(loopback_preset):
    from ppverify.compare.measured import fill_measured

    # GPipe p=2 m=2, F = 1, B = 2 units of 10 ms and a delay of 5 units per transfer: the first F,
    # a crossing, F F B B on rank 1, a crossing, the last B: 1 + 5 + 6 + 5 + 2 = 19 units (9
    # without the delay), which the async prediction also gives
    cfg = Config(2, 2, costs=(("F", 1.0), ("B", 2.0)), comm_delay=5.0)
    pt = evaluate_point(ScheduleEntry("gpipe", "gpipe"), cfg, ("async", "measured"))
    assert pt.level("async").makespan == 19.0
    # a system preset whose runtime overhead (20 ms per action) is far above the real one, with a
    # model sized so that each op lasts milliseconds, and links so fast that the model's bytes
    # cost nothing (the run sends tiny tensors): the ops must sleep their own durations, so
    # the measurement is near the prediction without the overhead and far below the folded one
    preset = loopback_preset({"action_overhead_us": 20000}, peak_TFLOPs=20000, bandwidth_GBps=10000, memory_GiB=80)
    pcfg = Config(2, 2, system=str(preset), model="gpt3-1.3b")
    ppt = evaluate_point(ScheduleEntry("gpipe", "gpipe"), pcfg, ("async", "measured"))
    from ppverify.compare.resolve import resolve
    from ppverify.engines import run
    from ppverify.schedules import build

    gp = build("gpipe", p=2, m=2)
    own = run(gp, resolve(pcfg, gp).own_costs, resolve(pcfg, gp).comm, semantics="async").makespan
    got = fill_measured([pt, ppt], steps=2, warmup=1)
    measured = got[0].level("measured")
    assert measured.status == "ok", measured.note
    assert 19.0 - 0.2 <= measured.makespan <= 19.0 + 4.0  # the runtime's own hand-overs, loaded: under 40 ms
    folded = got[1].level("async").makespan  # 6 ops on the critical path, each 20 ms longer
    assert folded == pytest.approx(own + 6 * 0.02)
    assert own <= got[1].level("measured").makespan <= own + 0.06 < folded - 0.05  # the runtime: a few ms
