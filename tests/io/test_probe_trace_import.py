"""Edge cases of reading profiler traces found by probing ``import-trace`` / ``calibrate
--from-trace``: a rank beyond the world size, one rank without a host name, a forced
collective clock, ``--step`` on traces without ``ProfilerStep`` ranges, receives recorded
without shapes, traces with no timed transfer, and DualPipe's overlapped cells in synthetic traces.

Every expected value is worked out by hand from the events written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.engines import run
from ppverify.io.profiler_trace import read_traces
from ppverify.io.trace_step import recorded_step
from ppverify.io.trace_synth import synthetic_traces, write_synthetic
from ppverify.measure.trace_calibrate import calibrate_from_trace, trace_preset_text
from ppverify.measure.trace_import import import_step, schedule_differences
from ppverify.schedules import build


def _x(name, ts, dur, cat="user_annotation", args=None):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 1, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def _write(d: Path, rank: int, world: int, events, host: str | None = "h") -> None:
    d.mkdir(parents=True, exist_ok=True)
    obj = {"distributedInfo": {"rank": rank, "world_size": world}, "traceEvents": events}
    if host is not None:
        obj["host_name"] = host
    (d / f"rank{rank}.json").write_text(json.dumps(obj))


def _two_ranks(base: float, n: int | None):
    """One step of 1F1B p=2 m=1 on host-side ranges. Only rank 0's SEND records shapes (2 x 8
    float = 64 B); the receives record none."""
    step = [_x(f"ProfilerStep#{n}", base, 100)] if n is not None else []
    shapes = {"Input Dims": [[2, 8]], "Input type": ["float"]}
    r0 = [
        *step,
        _x("PP:0F0", base + 10, 10),
        _x("PP:0SEND_F0", base + 20, 1),
        _x("gloo:send", base + 20.5, 0.5, "cpu_op", shapes),
        _x("PP:0RECV_B0", base + 21, 1),
        _x("gloo:recv", base + 21.5, 40.5, "cpu_op"),  # completes at 62
        _x("PP:0B0", base + 22, 58),
    ]
    r1 = [
        *step,
        _x("PP:1RECV_F0", base + 11, 1),
        _x("gloo:recv", base + 11.5, 13.5, "cpu_op"),  # completes at 25
        _x("PP:1F0", base + 12, 28),
        _x("PP:1B0", base + 40, 20),
        _x("PP:1SEND_B0", base + 60, 1),
        _x("gloo:send", base + 60.2, 0.5, "cpu_op"),
    ]
    return r0, r1


def _job(d: Path, steps=(1, 2), world: int = 2) -> Path:
    r0, r1 = [], []
    for k, n in enumerate(steps):
        a, b = _two_ranks(200.0 * k, n)
        r0 += a
        r1 += b
    _write(d, 0, world, r0)
    _write(d, 1, world, r1)
    return d


def test_hand_step_times(tmp_path):
    # 1F0 waits for its receive (done at 25): 25..40; 0B0 for its gradient (62): 62..80; the step
    # runs from 0F0's start (10) to 80: 70 us
    traces = read_traces([_job(tmp_path / "j")])
    imp = import_step(traces, recorded_step(traces, 1))
    assert imp.timeline.makespan == pytest.approx(70e-6)
    starts = {str(o): (float(a), float(b)) for o, a, b in zip(imp.timeline.ops, imp.timeline.start, imp.timeline.end)}
    assert starts["1F0"] == pytest.approx((15e-6, 30e-6))
    assert starts["0B0"] == pytest.approx((52e-6, 70e-6))


def test_rank_beyond_world_size_is_named(tmp_path, capsys):
    # ranks 0 and 1 of world size 2, and a third file claiming rank 2: not a missing rank ("rank ?
    # missing" before) but a file of another job
    d = _job(tmp_path / "j")
    (d / "rank2.json").write_text((d / "rank1.json").read_text().replace('"rank": 1', '"rank": 2'))
    with pytest.raises(ScheduleFileError, match=r"rank2\.json: distributedInfo\.rank: rank 2 is outside world size 2"):
        read_traces([d])
    assert main(["import-trace", str(d), "--no-table"]) == 2
    assert "rank2.json" in capsys.readouterr().err


def test_one_rank_without_host_name_has_one_clock(tmp_path):
    # one rank has one clock: no host name and no barrier are needed (refused before as "clocks
    # cannot be aligned"); F 10..20 and B 20..40: 30 us
    _write(tmp_path / "p1", 0, 1, [_x("ProfilerStep#3", 0, 100), _x("PP:0F0", 10, 10), _x("PP:0B0", 20, 20)], None)
    traces = read_traces([tmp_path / "p1"])
    st = recorded_step(traces)
    assert (st.clock, st.step, st.makespan) == ("shared", 3, 30.0)


def test_forced_collective_clock_names_the_option(tmp_path):
    traces = read_traces([_job(tmp_path / "j")])  # one host, no barrier recorded
    with pytest.raises(ScheduleFileError, match=r"clocks cannot be aligned \(--clock collective\)"):
        recorded_step(traces, clock="collective")


def test_step_without_profiler_steps_says_occurrences(tmp_path):
    traces = read_traces([_job(tmp_path / "j", steps=(None, None))])
    assert recorded_step(traces).steps == (0, 1)  # the k-th occurrence of each action is step k
    with pytest.raises(ParameterError, match="no ProfilerStep ranges; steps are the actions' occurrences 0, 1"):
        recorded_step(traces, step=4)


def test_bool_duration_refused(tmp_path):
    _write(tmp_path / "b", 0, 1, [_x("PP:0F0", 10, True)])
    with pytest.raises(ScheduleFileError, match=r"traceEvents\[0\]: event 'PP:0F0' has a ts/dur"):
        read_traces([tmp_path / "b"])


def test_receive_without_shapes_takes_the_boundary_bytes(tmp_path):
    # both transfers cross boundary 0, whose recorded bytes are the SEND's 2 x 8 x 4 = 64 B (the
    # receives recorded none; the link line said "sizes 0 B" before)
    traces = read_traces([_job(tmp_path / "j")])
    fit = calibrate_from_trace(traces, fit_steps=[1])
    assert sorted({b for b, _ in fit.link_samples}) == [64.0]
    # one-way times: 1F0's input, SEND post 20 to completion 25 (5 us); 0B0's, 60 to 62 (2 us)
    assert sorted(t for _, t in fit.link_samples) == pytest.approx([2e-6, 5e-6])
    assert "sizes 64 B (bytes from recorded shapes)" in trace_preset_text(fit, "x", "j")


def test_no_timed_transfer_says_so(tmp_path):
    # one rank: no transfer at all, so no size and no "one size" claim
    _write(tmp_path / "p1", 0, 1, [_x("ProfilerStep#1", 0, 100), _x("PP:0F0", 10, 10), _x("PP:0B0", 20, 20)])
    text = trace_preset_text(calibrate_from_trace(read_traces([tmp_path / "p1"])), "x", "p1")
    link = next(line for line in text.splitlines() if line.startswith("# Link:"))
    assert link.startswith("# Link: no transfer whose RECV was posted before the SEND")
    assert "one size" not in link and "bytes from none" not in link


@pytest.mark.parametrize("family", ["dualpipev", "dualpipe"])
def test_synthetic_overlapped_cells_read_back_in_order(tmp_path, family):
    # PyTorch records an overlapped F&B cell as one action, (a;b)OVERLAP_F_B; written as two ops
    # with one start, the cell's order was read back by name (rank 0 of dualpipev: 0B0 before 3F2)
    s = build(family, p=2 if family == "dualpipev" else 4, m=4 if family == "dualpipev" else 8)
    tl = run(s)
    objs = synthetic_traces(tl, steps=1)
    names = {e["name"] for e in objs[0]["traceEvents"] if e["cat"] == "gpu_user_annotation"}
    assert any(n.endswith(")OVERLAP_F_B") for n in names)
    traces = read_traces([write_synthetic(objs, tmp_path / family)[0].parent])
    imp = import_step(traces, recorded_step(traces), s)
    assert schedule_differences(s, imp.schedule) == []
    assert imp.timeline.makespan == pytest.approx(tl.makespan)


def test_missing_duration_refused(tmp_path):
    # a PP range without dur was timed 0 (F=0 fitted, predicted 20 us against the measured 30)
    ev = _x("PP:0F0", 10, 10)
    del ev["dur"]
    _write(
        tmp_path / "d",
        0,
        1,
        [_x("ProfilerStep#1", 0, 100), ev, _x("PP:0B0", 20, 20), {"ph": "X", "name": "aten::mm", "ts": 1}],
    )
    with pytest.raises(ScheduleFileError, match=r"traceEvents\[1\]: event 'PP:0F0' has no dur"):
        read_traces([tmp_path / "d"])


def test_device_side_calibration_keeps_the_link_latency(tmp_path):
    # 1F1B p=2 m=4, F=10 ms, B=20 ms, every transfer 1 ms: by hand 154 ms (rank 1's F0 at 11, B0
    # 21-41 reaching rank 0 at 42, ... rank 0's B3 134-154). The synthetic GPU trace's SEND and RECV
    # kernels both span the transfer, so no consumer wakes on a later SEND: the latency read off
    # the hand-overs was 0 (async prediction 150 ms); the link's one-way time is 1 ms
    from ppverify.core.comm import FixedDelay
    from ppverify.core.costs import CostModel

    s = build("1f1b", p=2, m=4)
    tl = run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), FixedDelay(0.001), semantics="async")
    assert tl.makespan == pytest.approx(0.154)
    traces = read_traces([write_synthetic(synthetic_traces(tl, steps=2), tmp_path / "gpu")[0].parent])
    fit = calibrate_from_trace(traces)
    assert fit.calibration.latency_s == pytest.approx(1e-3)
    assert fit.residual < 1e-9  # the async engine on the fitted terms gives the 154 ms back


def test_median_step_by_the_timeline_makespan(tmp_path):
    # three steps of 70, 90 and 110 us (rank 0's B stretched by 0, 20, 40 us); step 1 ends with a
    # 150 us PP:0REDUCE_GRAD, which takes no place in the timeline. The median step is #2 (90 us);
    # counted to the REDUCE_GRAD's end step 1 spanned 221 us and #3 was picked
    r0, r1 = [], []
    for n, (base, extra, red) in enumerate([(0, 0, 150), (300, 20, 1), (600, 40, 1)], 1):
        a, b = _two_ranks(base, n)
        for e in a + b:
            if e["name"] == "PP:0B0":
                e["dur"] += extra
            if e["name"].startswith("ProfilerStep"):
                e["dur"] = 250
        r0 += [*a, _x("PP:0REDUCE_GRAD", base + 81 + extra, red)]
        r1 += b
    _write(tmp_path / "r", 0, 2, r0)
    _write(tmp_path / "r", 1, 2, r1)
    traces = read_traces([tmp_path / "r"])
    st = recorded_step(traces)
    assert st.step == 2 and st.makespans == pytest.approx((70.0, 90.0, 110.0))
    assert import_step(traces, st).timeline.makespan == pytest.approx(90e-6)


def test_unrecorded_sizes_are_said_not_zero(tmp_path):
    # the SEND's shapes stripped: no transfer carries bytes, and the line said "sizes 0 B (bytes
    # from none); one size"
    d = _job(tmp_path / "j")
    for f in d.iterdir():
        f.write_text(f.read_text().replace('"Input Dims": [[2, 8]], "Input type": ["float"]', '"x": 1'))
    fit = calibrate_from_trace(read_traces([d]), fit_steps=[1])
    assert sorted({b for b, _ in fit.link_samples}) == [0.0]
    link = next(line for line in trace_preset_text(fit, "x", "j").splitlines() if line.startswith("# Link:"))
    assert "sizes not recorded (no record_shapes: --model or --boundary-bytes size them)" in link
    assert "0 B" not in link and "one size" not in link


def test_help_says_the_trace_sizes_the_schedule(capsys):
    # -p / -m default to the trace's ranks and microbatches, not "default 4" / "default: p"
    assert main(["import-trace", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "-p P ranks of --schedule (default: the trace's)" in out
    assert "-m M microbatches of --schedule (default: the trace's)" in out
    assert "default 4" not in out


@pytest.mark.parametrize(("p", "m"), [(2, 2), (2, 4), (4, 4)])
def test_synthetic_two_pipe_trace_keeps_the_replica_all_reduce(tmp_path, p, m):
    # chimera's step ends with the all-reduce of stage 0's two replicas (1 ms here); the synthetic
    # trace left it out, so the import ended 2 ms early at p=2, m=4 (123 of 125 ms). Each rank now
    # records one PP:<s>REDUCE_GRAD per stage it holds (a stage per pipe: 2 per rank)
    from ppverify.core.comm import FixedDelay
    from ppverify.core.costs import CostModel

    s = build("chimera", p=p, m=m)
    tl = run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), FixedDelay(0.001), semantics="async")
    objs = synthetic_traces(tl, steps=3, jitter=0.1)  # step k lasts (1 + 0.1 k) x the timeline
    for rank, obj in enumerate(objs):
        reduces = sorted(
            e["name"] for e in obj["traceEvents"] if e["name"].endswith("REDUCE_GRAD") and e["cat"] == "user_annotation"
        )
        held = sorted(f"PP:{mp.index(rank)}REDUCE_GRAD" for mp in s.placement.maps)
        assert reduces == sorted(held * 3)
    traces = read_traces([write_synthetic(objs, tmp_path / "c")[0].parent])
    st = recorded_step(traces)
    # each step's makespan ends at its last all-reduce, as its timeline does: the median is step 2
    assert st.makespans == pytest.approx([tl.makespan * 1e6 * (1 + 0.1 * k) for k in range(3)])
    imp = import_step(traces, st, s)
    assert st.step == 2 and imp.timeline.makespan == pytest.approx(tl.makespan * 1.1)
    assert imp.timeline.transfers.kind.count("allreduce") == 2 * p  # each stage's, from both replicas


def test_rank_twice_says_one_file_per_rank(tmp_path):
    # two profiling cycles (schedule repeat=2) leave two files of each rank in one directory
    d = _job(tmp_path / "j")
    (d / "rank0.cycle2.json").write_text((d / "rank0.json").read_text())
    with pytest.raises(ScheduleFileError, match=r"rank 0 also in .*rank0\.cycle2\.json: give one trace file per rank"):
        read_traces([d])


def test_fit_steps_without_profiler_steps_says_occurrences(tmp_path):
    traces = read_traces([_job(tmp_path / "j", steps=(None, None))])
    with pytest.raises(ParameterError, match="fit-steps=5: not recorded; the traces hold no ProfilerStep ranges"):
        calibrate_from_trace(traces, fit_steps=[5])


def test_world_size_zero_refused(tmp_path):
    d = _job(tmp_path / "j", world=0)
    with pytest.raises(ScheduleFileError, match=r"distributedInfo\.world_size: 0: a job has at least one rank"):
        read_traces([d])


def test_device_copies_without_host_ranges_say_record_the_cpu(tmp_path):
    # profiled with activities=[CUDA] only: the GPU copies have no host range to take their step
    # from (the error was "no step holds pipeline actions")
    objs = synthetic_traces(run(build("1f1b", p=2, m=2)), steps=2)
    for o in objs:
        o["traceEvents"] = [e for e in o["traceEvents"] if e["cat"] in ("gpu_user_annotation", "kernel")]
    d = write_synthetic(objs, tmp_path / "cuda")[0].parent
    with pytest.raises(
        ScheduleFileError, match=r"rank0\.pt\.trace\.json: traceEvents: device-side .* no host-side ranges"
    ):
        read_traces([d])


def test_one_rank_trace_calibrates_to_a_readable_preset(tmp_path):
    # one rank (the CPU job of docs/traces.md): the preset held a runtime.handover.ranks_1 section,
    # which no preset reader takes, so the held-out steps could not be predicted (exit 2)
    from ppverify.measure.trace_calibrate import from_trace

    events = []
    for n in (1, 2, 3):  # F 10 us, B 20 us: each step 30 us
        events += [_x(f"ProfilerStep#{n}", 100 * n, 50), _x("PP:0F0", 100 * n + 5, 10), _x("PP:0B0", 100 * n + 15, 20)]
    _write(tmp_path / "one", 0, 1, events)
    fit, text, rows = from_trace([str(tmp_path / "one")], None, "1", "one")
    assert "ranks_1" not in text
    assert fit.fit_steps == (1,) and [n for n, _, _ in rows] == [2, 3]  # step 1 fits, the rest is held out
    assert [ms for _, ms, _ in rows] == pytest.approx([30e-6, 30e-6])
