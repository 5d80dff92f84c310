"""Defects of reading profiler traces back (``import-trace``, ``simulate --measured-trace``,
``calibrate --from-trace``) found by a bug hunt, each with its expected value worked out by hand.
Most cases copy and edit the stored CPU trace (``tests/data/traces/measure-1f1b-p2-m4``: 1F1B
p=2 m=4, ProfilerSteps 1 and 2) or write a synthetic GPU-style trace of a known timeline."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ppverify.cli import main

STORED = Path(__file__).parents[1] / "data/traces/measure-1f1b-p2-m4"


def _stored(tmp_path: Path, mutate=None) -> Path:
    """The stored trace as plain JSON in ``tmp_path``; ``mutate(rank, obj, first)`` edits it,
    ``first(name)`` being ProfilerStep#1's event of that name (the earliest)."""
    for r in (0, 1):
        with gzip.open(STORED / f"rank{r}.pt.trace.json.gz") as f:
            obj = json.load(f)
        evs = obj["traceEvents"]

        def first(name, evs=evs):
            return min((e for e in evs if e.get("name") == name and e.get("ph") == "X"), key=lambda e: e["ts"])

        if mutate is not None:
            mutate(r, obj, first)
        (tmp_path / f"rank{r}.pt.trace.json").write_text(json.dumps(obj))
    return tmp_path


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([*argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---- 1. an unrecognised PP: range no longer turns the PyTorch-rule checks off ------------------


def _simulate_beside_1f1b(capsys, trace_dir):
    """simulate 1F1B p=2 m=4 at F=10, B=20 ms beside the trace in ``trace_dir``: exit code, measured object."""
    rc, out, _ = _cli(
        capsys,
        "simulate",
        "1f1b",
        "-p",
        "2",
        "-m",
        "4",
        "--costs",
        "F=0.01,B=0.02",
        "--measured-trace",
        str(trace_dir),
        "--json",
    )
    return rc, json.loads(out)["measured"]


def _reduce_before_last_backward(r, obj, first, extra: str | None):
    # rank 0's REDUCE_GRAD of step 1 moved between 0B2 and 0B3: the gradients are reduced before
    # the last backward has added its share, which PyTorch's rules refuse (INVALID)
    if r != 0:
        return
    b2, rg, rv = first("PP:0B2"), first("PP:0REDUCE_GRAD"), first("PP:0RECV_B3")
    rg["ts"] = b2["ts"] + b2["dur"] + 1
    rg["dur"] = min(rg["dur"], (rv["ts"] - rg["ts"]) / 2)
    if extra is not None:
        obj["traceEvents"].append(dict(rg, name=extra, ts=rg["ts"] + rg["dur"] + 0.1, dur=0.05))


def test_reduction_before_last_backward_is_invalid(tmp_path, capsys):
    d = _stored(tmp_path, lambda r, o, f: _reduce_before_last_backward(r, o, f, None))
    rc, out, _ = _cli(capsys, "import-trace", str(d), "--step", "1", "--no-table")
    assert rc == 1 and "INVALID" in out


@pytest.mark.parametrize("name", ["PP:0X1", "PP:0FOO1", "PP:hello", "PP:()OVERLAP_F_B", "PP:", "PP:0F1&1B0"])
def test_unknown_pp_range_is_refused_not_a_valid_verdict(tmp_path, capsys, name):
    d = _stored(tmp_path, lambda r, o, f: _reduce_before_last_backward(r, o, f, name))
    rc, out, err = _cli(capsys, "import-trace", str(d), "--step", "1", "--no-table")
    # the extra range is appended last: its index is the length of rank 0's list before it
    with gzip.open(STORED / "rank0.pt.trace.json.gz") as fh:
        k = len(json.load(fh)["traceEvents"])
    assert rc == 2 and out == ""
    assert f"rank0.pt.trace.json: traceEvents[{k}]: range PP:{name[3:]!r} is not a pipeline action" in err
    assert len(err.strip().splitlines()) == 1


# ---- 2. overlapped F&B cells: one convention on both sides, costs fitted from plain ops --------


def _synthetic(tmp_path: Path, family: str, steps: int = 3, jitter: float = 0.0, comm=None, **costs) -> Path:
    from ppverify.core.costs import CostModel
    from ppverify.engines import run
    from ppverify.io.trace_synth import synthetic_traces, write_synthetic
    from ppverify.schedules import build

    s = build(family, p=2, m=4)
    tl = run(s, CostModel.abstract(s.placement, **costs) if costs else None, comm)
    write_synthetic(synthetic_traces(tl, steps=steps, jitter=jitter), tmp_path)
    return tmp_path


@pytest.mark.parametrize("family", ["dualpipev", "dualpipe"])
def test_overlapped_cells_fit_plain_costs_and_kind_errors_are_zero(tmp_path, family):
    from ppverify.compare.trace_check import check_trace
    from ppverify.compare.trace_text import trace_report
    from ppverify.schedules import build

    # abstract costs per device share, scaled by p/S: dualpipev p=2 has S=4 stages, so per stage
    # F = 0.010 * 2/4 = 5 ms and B = 0.020 * 2/4 = 10 ms (I = W = 5 ms). dualpipe p=2 has S=2:
    # F = 10 ms, B = 20 ms. The trace is that exact timeline, so the fitted costs are those and
    # the prediction is the timeline again: every error 0 (before: F +37.5 %, B +54.5 %, fitted
    # F = 5/5/6.25/6.25, B = 7.5/7.5/10/10 from cells split in equal shares).
    d = _synthetic(tmp_path, family, F=0.010, B=0.020)
    tc = check_trace([str(d)], build(family, p=2, m=4))
    S = tc.timeline.schedule.num_stages
    f, b = (0.005, 0.010) if S == 4 else (0.010, 0.020)
    assert tc.report.valid
    assert tc.timeline.costs.duration["F"] == pytest.approx((f,) * S, rel=1e-6)
    assert tc.timeline.costs.duration["B"] == pytest.approx((b,) * S, rel=1e-6)
    err = trace_report(tc)["errors"]
    assert err["step"] == pytest.approx(0.0, abs=1e-9)
    assert all(v == pytest.approx(0.0, abs=1e-9) for v in err["kind"].values()), err["kind"]


# ---- 17. zero communication delay: a RECV sorts before its consumer at the same time ----------


@pytest.mark.parametrize("family", ["1f1b", "zbv", "dualpipev", "interleaved-1f1b"])
def test_synthetic_trace_without_delay_reads_back_valid(tmp_path, capsys, family):
    # the engine's timeline with no communication model: a RECV and its consumer start together;
    # PyTorch's runtime posts the RECV first, so the recorded order is the schedule's and VALID
    d = _synthetic(tmp_path, family, steps=1)
    rc, out, _ = _cli(capsys, "import-trace", str(d), "--schedule", family, "--no-table")
    assert rc == 0 and "verify        VALID" in out and "same op order on every rank" in out


# ---- 3. traces without ProfilerStep: a dropped record is refused, not shifted -----------------


def _strip_steps(ranks=(0, 1), drop: str | None = None):
    def mutate(r, obj, first):
        if r in ranks:
            obj["traceEvents"] = [
                e for e in obj["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep")
            ]
        if drop is not None and r == int(drop[3]):
            # the second occurrence (step 2's) of the action
            evs = sorted((e for e in obj["traceEvents"] if e.get("name") == drop), key=lambda e: e["ts"])
            obj["traceEvents"].remove(evs[1])

    return mutate


def test_without_profiler_steps_occurrences_are_steps(tmp_path, capsys):
    # the stored trace with its ProfilerStep ranges removed: occurrence 0 is ProfilerStep#1, whose
    # makespan measure's own clock recorded as 0.163 s (tests/data/traces/*.measure.json)
    d = _stored(tmp_path, _strip_steps())
    rc, out, _ = _cli(capsys, "import-trace", str(d), "--step", "0", "--no-table")
    assert rc == 0 and "step 0 (of 0, 1: no ProfilerStep ranges" in out and "measured 163.062 ms" in out


def test_dropped_record_without_profiler_steps_is_refused(tmp_path, capsys):
    # rank 1 holds every action twice (two steps) but 1B3 once: step 2's 1B3 would have been read
    # as step 1's, 140 ms late (before: "clocks disagree", or 296.611 ms for a 156 ms step)
    d = _stored(tmp_path, _strip_steps(drop="PP:1B3"))
    for extra in ((), ("--step", "0", "--clock", "collective")):
        rc, out, err = _cli(capsys, "import-trace", str(d), "--no-table", *extra)
        assert rc == 2 and out == ""
        assert "rank1.pt.trace.json: PP:1B3: recorded 1 time, PP:" in err and " 2 times: without ProfilerStep" in err


def test_one_rank_without_profiler_steps_is_named(tmp_path, capsys):
    d = _stored(tmp_path, _strip_steps(ranks=(1,)))
    rc, _, err = _cli(capsys, "import-trace", str(d), "--no-table")
    assert rc == 2
    assert "rank1.pt.trace.json: ProfilerStep: rank 1's trace has no ProfilerStep ranges while rank 0's has them" in err


# ---- 4. calibrate --from-trace on a device-side trace: no gloo hand-over terms ----------------


def test_device_side_calibration_predicts_held_out_step_exactly(tmp_path, capsys):
    from ppverify.core.comm import FixedDelay

    # 1F1B p=2 m=4, F=10 ms, B=20 ms per stage, 2 ms per message, no noise. By hand (rank: op
    # start-end, ms): r0 F0 0-10, F1 10-20; r1 F0 12-22, B0 22-42; r0 B0 44-64; r1 F1 42-52,
    # B1 52-72; r0 F2 64-74; r0 B1 74-94; r1 F2 76-86, B2 86-106; r0 F3 94-104; r0 B2 108-128;
    # r1 F3 106-116, B3 116-136; r0 B3 138-158: every step lasts 158 ms, and the preset (latency
    # 2 ms, no overhead) must predict 158 for the held-out step 5 (before: 160, the runtime
    # semantics' late and wake terms adding the latency a second time)
    d = _synthetic(tmp_path / "tr", "1f1b", steps=5, comm=FixedDelay(0.002), F=0.010, B=0.020)
    rc, out, _ = _cli(capsys, "calibrate", "--from-trace", str(d), "--out", str(tmp_path / "syd.yaml"))
    assert rc == 0
    assert "latency 2000 us" in out
    assert "held-out step 5    measured 158.000 ms   predicted 158.000 ms" in out
    assert "handover:" not in (tmp_path / "syd.yaml").read_text()


# ---- 5. simulate --measured-trace: no error against a schedule that did not run --------------


@pytest.mark.parametrize(
    ("family", "why"), [("zbv", "the trace ran 4 stages, the schedule has 2"), ("zb-h1", "other ops")]
)
def test_measured_trace_of_another_schedule_has_no_error(tmp_path, capsys, family, why):
    # a ZBV trace has 4 stages (v=2 per rank), a ZB-H1 trace the ops F, I, W where 1F1B has F, B:
    # neither ran 1F1B, so (docs/traces.md) no prediction is made up against it
    d = _synthetic(tmp_path / "tr", family, steps=1, F=0.010, B=0.020)
    rc, meas = _simulate_beside_1f1b(capsys, d)
    assert rc == 0 and meas["errors"] is None and why in meas["no_prediction"]


def test_measured_trace_of_the_schedule_keeps_its_error(tmp_path, capsys):
    # the trace of 1F1B itself, F=10, B=20 ms per stage, read beside the same prediction: error 0
    d = _synthetic(tmp_path / "tr", "1f1b", steps=1, F=0.010, B=0.020)
    _, meas = _simulate_beside_1f1b(capsys, d)
    assert meas["no_prediction"] is None and meas["errors"]["step"] == pytest.approx(0.0, abs=1e-9)


# ---- 6. a recorded stage the given schedule does not have: exit 2 naming the event -----------


def test_stage_outside_the_schedule_is_named(tmp_path, capsys):
    # ZBV p=2 runs stages 0..3; 1F1B p=2 has stages 0..1 (before: IndexError, exit 3)
    d = _synthetic(tmp_path, "zbv", steps=1)
    rc, out, err = _cli(capsys, "import-trace", str(d), "--schedule", "1f1b", "--no-table")
    assert rc == 2 and out == ""
    assert "rank0.pt.trace.json: PP:3" in err and "rank 0 ran stage 3; the schedule 1f1b p=2 m=4 has stages 0..1" in err


def _stray(r, obj, first):
    # one range PP:9F0 on rank 0, after step 1's last backward
    if r == 0:
        b3 = first("PP:0B3")
        obj["traceEvents"].append(dict(b3, name="PP:9F0", ts=b3["ts"] + b3["dur"] + 1, dur=1))


def test_stray_stage_is_named(tmp_path, capsys):
    d = _stored(tmp_path, _stray)
    rc, _, err = _cli(capsys, "import-trace", str(d), "--step", "1", "--schedule", "1f1b", "--no-table")
    assert (
        rc == 2 and "rank0.pt.trace.json: PP:9F0: rank 0 ran stage 9; the schedule 1f1b p=2 m=4 has stages 0..1" in err
    )
    # without a schedule the stages are counted up to 9: stage 2 never ran, and the range is named
    rc, _, err = _cli(capsys, "import-trace", str(d), "--step", "1", "--no-table")
    assert rc == 2 and "stage 2: never ran, yet rank 0 recorded PP:9F0 (stages 0..9)" in err


# ---- 7, 8, 13: hostile numbers and ids, refused in one line (exit 2, never 3) -----------------


def _append(event: dict):
    def mutate(r, obj, first):
        if r == 0:
            obj["traceEvents"].append(event)

    return mutate


def _edit(name: str, **changes):
    def mutate(r, obj, first):
        if r == 0:
            first(name).update(changes)

    return mutate


def _rank0_len() -> int:
    with gzip.open(STORED / "rank0.pt.trace.json.gz") as fh:
        return len(json.load(fh)["traceEvents"])


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (
            _append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "ts": 1,
                    "dur": 1,
                    "args": {"correlation": [1]},
                }
            ),
            "traceEvents[{k}]: event 'cudaLaunchKernel' has args.correlation [1]: expected an integer id",
        ),
        (
            _append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "ncclDevKernel_SendRecv",
                    "ts": 1,
                    "dur": 1,
                    "args": {"correlation": {"a": 1}},
                }
            ),
            "traceEvents[{k}]: event 'ncclDevKernel_SendRecv' has args.correlation",
        ),
        (
            _append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#" + "9" * 5000, "ts": 1, "dur": 1}),
            "traceEvents[{k}]: 'ProfilerStep#999",
        ),
        (
            _append({"ph": "X", "cat": "user_annotation", "name": "PP:0F" + "9" * 5000, "ts": 1, "dur": 1}),
            "a stage or microbatch number of 5000 digits (at most 12)",
        ),
        (
            _append({"ph": "X", "cat": "user_annotation", "name": "Forward " + "9" * 5000, "ts": 1, "dur": 1}),
            "holds a number of 5000 digits (at most 12)",
        ),
        (_edit("PP:0F1", dur=1e300), "out of range (ts at most 1e+17 us from the epoch, dur at most 1e+12 us)"),
        (_edit("PP:0F1", ts=10**400), "has a ts/dur out of range (past any float)"),
    ],
)
def test_hostile_values_are_one_line_exit_2(tmp_path, capsys, mutate, words):
    d = _stored(tmp_path, mutate)
    rc, out, err = _cli(capsys, "import-trace", str(d), "--no-table")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert words.format(k=_rank0_len()) in err
    assert len(err) < 400  # no 300- or 5000-digit number printed


def test_huge_world_size_refused_at_once(tmp_path, capsys):
    # 10**12 ranks named, 2 files given: before, listing the missing ranks never ended
    def mutate(r, obj, first):
        obj["distributedInfo"]["world_size"] = 10**12

    d = _stored(tmp_path, mutate)
    rc, _, err = _cli(capsys, "import-trace", str(d), "--no-table")
    assert rc == 2 and "distributedInfo.world_size: 1000000000000 ranks, but 2 trace files given" in err


def test_few_missing_ranks_still_listed(tmp_path, capsys):
    def mutate(r, obj, first):
        obj["distributedInfo"]["world_size"] = 4

    d = _stored(tmp_path, mutate)
    rc, _, err = _cli(capsys, "import-trace", str(d), "--no-table")
    assert rc == 2 and "rank 2, 3 missing: world size 4, 2 trace files" in err


# ---- 9, 14: the size a trace implies is capped; the recorded line says which ranges name it --


def _extra_compute(name: str):
    def mutate(r, obj, first):
        if r == 0:
            b3 = first("PP:0B3")  # step 1's last op on rank 0: the range goes after it
            obj["traceEvents"].append(dict(b3, name=name, ts=b3["ts"] + b3["dur"] + 1, dur=1))

    return mutate


def test_implied_microbatches_capped(tmp_path, capsys):
    # PP:0F200000 implies 2 stages x 200,001 microbatches = 800,004 ops (an F and a B of each);
    # step 1 holds 17 compute ops, so at most 4 x 17 + 10,000 = 10,068 are checked (docs/limits.md)
    d = _stored(tmp_path, _extra_compute("PP:0F200000"))
    rc, _, err = _cli(capsys, "import-trace", str(d), "--step", "1", "--no-table")
    assert rc == 2 and "rank 0's PP:0F200000: 2 stages x 200001 microbatches: imply 800004 ops" in err
    assert "at most 4 x 17 + 10000" in err
    # a family is sized by the trace before it is built: the same cap (2 steps: 33 ops held)
    rc, _, err = _cli(capsys, "import-trace", str(d), "--schedule", "1f1b", "--no-table")
    assert rc == 2 and "PP:0F200000: 2 stages x 200001 microbatches" in err and "4 x 33 + 10000" in err


def test_recorded_line_names_compute_ranges_too(tmp_path, capsys):
    # PP:0F100 (a compute range) makes m = 101 (2 x 2 x 101 = 404 ops, under the cap); compute ops
    # ran for microbatches 0..3 and 100: 5 of them (before: "SEND/RECV ranges name ...")
    d = _stored(tmp_path, _extra_compute("PP:0F100"))
    rc, out, _ = _cli(capsys, "import-trace", str(d), "--step", "1", "--no-table")
    assert rc == 1  # INVALID: 0F100 has no B, and microbatches 4..99 no ops
    assert (
        "recorded      17 ops, 2 stages, m=101 (the step's ranges name microbatches up to 100; compute ops ran for 5 of them)"
        in out
    )


# ---- 10: the file limit applies to traces, and a gzip bomb is stopped while it expands -------


def test_gzip_bomb_refused_while_expanding(tmp_path, capsys, monkeypatch):
    import ppverify.io.profiler_trace as pt

    assert pt.MAX_TRACE_BYTES == 256 * 2**20  # the documented limit (docs/traces.md)
    # 20 MB of spaces compress to about 20 KB; at a limit of 1 MiB the text is refused once it
    # passes 1 MiB, before the rest is expanded (as 300 MB from 347 KB were, read whole)
    monkeypatch.setattr(pt, "MAX_TRACE_BYTES", 2**20)
    body = b'{"traceEvents": [' + b" " * (20 * 10**6) + b"]}"
    (tmp_path / "rank0.pt.trace.json.gz").write_bytes(gzip.compress(body, 9))
    assert (tmp_path / "rank0.pt.trace.json.gz").stat().st_size < 2**20
    rc, _, err = _cli(capsys, "import-trace", str(tmp_path), "--no-table")
    assert rc == 2 and f"expands to over {2**20} bytes of JSON" in err


def test_trace_file_over_the_limit_refused_unread(tmp_path, capsys, monkeypatch):
    import ppverify.io.profiler_trace as pt

    monkeypatch.setattr(pt, "MAX_TRACE_BYTES", 1000)
    (tmp_path / "rank0.pt.trace.json").write_text('{"traceEvents": [' + " " * 2000 + "]}")
    rc, _, err = _cli(capsys, "import-trace", str(tmp_path), "--no-table")
    assert rc == 2 and "bytes; files over 1000 bytes are refused" in err


def test_multi_member_gzip_still_read():
    from ppverify.io.trace_input import gunzip

    # gzip.decompress reads concatenated members; the bounded reader must too
    assert gunzip("x.gz", gzip.compress(b'{"a": ') + gzip.compress(b"1}"), 100) == b'{"a": 1}'


# ---- 11: a step number recorded twice ---------------------------------------------------------


def test_duplicate_profiler_step_named(tmp_path, capsys):
    def mutate(r, obj, first):
        if r == 0:
            obj["traceEvents"].append(dict(first("ProfilerStep#2")))

    d = _stored(tmp_path, mutate)
    rc, _, err = _cli(capsys, "import-trace", str(d), "--no-table")
    assert rc == 2 and f"traceEvents[{_rank0_len()}]: ProfilerStep#2 recorded twice (also traceEvents[" in err


# ---- 16: compare --measured-trace where no schedule is the trace's: the note says why --------


def test_compare_note_says_why_no_schedule_matches(capsys):
    rc, out, _ = _cli(
        capsys, "compare", "--schedules", "1f1b", "-p", "2", "-m", "8", "--costs", "F=1,B=2", "--levels", "async",
        "--measured-trace", str(STORED), "--no-verify", "--no-progress",
    )  # fmt: skip
    assert rc == 0
    # the trace ran m=4: 1F1B m=8 misses microbatches 4..7, and the legend names the trace
    assert "level measured produced no numbers: not applicable: profiler trace" in out
    assert "not the schedule it ran (1f1b p=2 m=8, rank 0: missing 0F4" in out
    assert "compare --measured-trace" in out


def test_host_side_cell_starts_at_its_first_ops_input():
    from ppverify.io.profiler_trace import Span, Transfer
    from ppverify.io.trace_step import RecordedStep
    from ppverify.measure.trace_import import step_events

    # host-side ranges (us): 1F3's input completes at 4, 0B0's at 12; the cell's range runs 2-30.
    # The runtime runs the cell's ops in order, so the cell starts once 1F3's input is there (4);
    # 0B0's wait falls inside the cell. Both ops span 4-30 us = 4000-30000 ns.
    acts = (Span("1RECV_F3", 0.0, 1.0), Span("0RECV_B0", 1.0, 1.5), Span("(1F3;0B0)OVERLAP_F_B", 2.0, 30.0))
    trs = (Transfer("1RECV_F3", Span("gloo:recv", 0.5, 4.0)), Transfer("0RECV_B0", Span("gloo:recv", 1.2, 12.0)))
    st = RecordedStep(1, (1,), (30.0,), "shared", (0.0,), "host", (acts,), (trs,), 0.0)
    ops = [(e.kind, e.stage, e.mb, e.start_ns, e.end_ns) for e in step_events(st, [])[0] if e.kind in "FB"]
    assert ops == [("F", 1, 3, 4000, 30000), ("B", 0, 0, 4000, 30000)]
