"""``import-trace`` defects found by a bug hunt: the recorded order verified with its SEND/RECV and
markers under PyTorch's rules, microbatches named only by transfers, dropped device copies,
clocks that put effects before causes, receives that complete after their consumer, and a
schedule file read at its own size. Most cases copy and mutate the stored CPU trace
(``tests/data/traces/measure-1f1b-p2-m4``: 1F1B p=2 m=4, ProfilerSteps 1 and 2)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.compare.trace_check import check_trace
from ppverify.compare.trace_text import trace_report, trace_text
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ScheduleFileError
from ppverify.engines import run
from ppverify.io.profiler_trace import RankTrace, Span
from ppverify.io.torch_csv import save_csv
from ppverify.io.trace_synth import synthetic_traces, write_synthetic
from ppverify.schedules import build

STORED = Path(__file__).parents[1] / "data/traces/measure-1f1b-p2-m4"


def _stored(tmp_path: Path, mutate=None) -> Path:
    """The stored trace as plain JSON in ``tmp_path``; ``mutate(rank, events, step1)`` edits it,
    ``step1(e)`` saying whether an event lies in ProfilerStep#1."""
    for r in (0, 1):
        with gzip.open(STORED / f"rank{r}.pt.trace.json.gz") as f:
            obj = json.load(f)
        evs = obj["traceEvents"]
        st = next(e for e in evs if e.get("name") == "ProfilerStep#1")

        def step1(e, st=st):
            return st["ts"] <= e["ts"] <= st["ts"] + st["dur"]

        if mutate is not None:
            mutate(r, evs, step1)
        (tmp_path / f"rank{r}.pt.trace.json").write_text(json.dumps(obj))
    return tmp_path


def _first(evs, name, step1):
    return next(e for e in evs if e.get("name") == name and step1(e))


def _violations(tc):
    return {(v.prop, v.ops) for v in tc.report.violations}


# ---- 1. the recorded order with its SEND/RECV and markers, under PyTorch's rules ----------------


def _crossed(with_comms: bool) -> list[RankTrace]:
    # gpipe p=2 m=2 on host-side ranges (us), one host's clock. Rank 1 runs its backwards B1 then
    # B0 and posts SEND_B1 first; rank 0 posts RECV_B0 first. PyTorch matches untagged messages in
    # posting order, so rank 0's RECV_B0 takes B1's gradient: the message-order rule is broken.
    # The times are consistent with that matching: rank 0's 0B0 [56, 66] ends after 1B1 (its
    # message's producer) ends at 43, 0B1 [66, 76] after 1B0 ends at 54; 1F0 [12, 22] after 0F0
    # ends at 10, 1F1 [23, 33] after 0F1 ends at 21.
    r0 = [("0F0", 0, 10), ("0SEND_F0", 10, 11), ("0F1", 11, 21), ("0SEND_F1", 21, 22), ("0RECV_B0", 22, 23)]
    r0 += [("0RECV_B1", 23, 24), ("0B0", 56, 66), ("0B1", 66, 76)]
    r1 = [("1RECV_F0", 0, 1), ("1RECV_F1", 1, 2), ("1F0", 12, 22), ("1F1", 23, 33), ("1B1", 33, 43)]
    r1 += [("1SEND_B1", 43, 44), ("1B0", 44, 54), ("1SEND_B0", 54, 55)]
    out = []
    for r, acts in enumerate((r0, r1)):
        spans = tuple(Span(n, float(a), float(b)) for n, a, b in acts if with_comms or "_" not in n)
        out.append(RankTrace(f"rank{r}.json", r, 2, "h", "host", spans, spans, (), (), ()))
    return out


def test_crossed_messages_are_invalid_where_the_compute_order_alone_is_valid():
    tc = check_trace(_crossed(True))
    # rank 1's first message to rank 0 is 1SEND_B1, which rank 0 receives as 0RECV_B0
    assert not tc.report.valid
    assert ("pytorch-message-order", ("1SEND_B1", "0RECV_B0")) in _violations(tc)
    line = trace_text(tc, trace_report(tc), width=None).splitlines()[2]
    assert line == (
        "verify        INVALID (the recorded order with its SEND/RECV, under PyTorch's rules; no PP: marker "
        "ranges, so gradient reduction not checked)"
    )
    # the same compute order without SEND/RECV ranges: F0 F1 B0 B1 and F0 F1 B1 B0 are both valid
    # compute orders, and the verdict says what it could not check
    bare = check_trace(_crossed(False))
    assert bare.report.valid
    assert "message order and gradient reduction not checked" in trace_text(bare, trace_report(bare), None)


def test_reduce_grad_before_the_last_backward_is_invalid(tmp_path):
    def early(r, evs, step1):
        if r == 1:  # rank 1's REDUCE_GRAD moved to just before its last backward, 1B3
            rg, b3 = _first(evs, "PP:1REDUCE_GRAD", step1), _first(evs, "PP:1B3", step1)
            rg["ts"] = b3["ts"] - rg["dur"] - 1

    tc = check_trace([str(_stored(tmp_path, early))], step=1)
    # 1B3's gradients are accumulated after the reduction: core 1REDUCE_GRAD, 1B3
    assert ("reduction", ("1REDUCE_GRAD", "1B3")) in _violations(tc)


def test_a_deleted_recv_is_invalid(tmp_path):
    def drop(r, evs, step1):
        if r == 1:
            evs.remove(_first(evs, "PP:1RECV_F2", step1))

    tc = check_trace([str(_stored(tmp_path, drop))], step=1)
    # rank 1 never posts a RECV for 1F2's input (0F2's activation): it would wait forever
    assert _violations(tc) == {("deadlock", ("1F2",))}
    assert tc.imported.schedule.num_ops == 16  # every compute op ran; the fault is the message


def test_the_stored_trace_is_valid_under_pytorchs_rules():
    tc = check_trace([str(STORED)], build("1f1b", p=2, m=4))
    assert tc.report.valid and tc.checked == "comms+markers"
    # the properties a compute_comms CSV adds were proved, not skipped
    proved = {name for name, _ in tc.report.proved}
    assert {"pytorch-message-order", "pytorch-loss-order", "reduction", "sharding"} <= proved


def test_a_two_pipe_step_says_pytorchs_rules_were_not_checked(tmp_path):
    s = build("chimera", p=2, m=4)
    tl = run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), FixedDelay(0.001), semantics="async")
    write_synthetic(synthetic_traces(tl, steps=1), tmp_path)
    tc = check_trace([str(tmp_path)], s)
    # two pipes run on ppverify's own runner: its SEND/RECV are not PyTorch's untagged messages
    assert tc.report.valid and tc.checked == "two-pipe" and tc.differences == ()
    assert "two pipes, so PyTorch's message-order and reduction rules not checked" in trace_text(
        tc, trace_report(tc), None
    )


# ---- 2. microbatches named only by SEND/RECV ------------------------------------------------------


def test_a_microbatch_with_transfers_but_no_compute_is_reported_missing(tmp_path):
    def orphan(r, evs, step1):
        evs[:] = [e for e in evs if not re.fullmatch(r"PP:\d[FB]3", e.get("name", ""))]

    tc = check_trace([str(_stored(tmp_path, orphan))], step=1)
    # the SEND/RECV ranges of microbatch 3 remain, so the step has m=4 and its four ops are missing
    assert tc.imported.schedule.m == 4
    missing = {v.ops for v in tc.report.violations if v.prop == "completeness"}
    assert {("0F3",), ("0B3",), ("1F3",), ("1B3",)} <= missing
    assert not tc.report.valid and tc.predicted is None
    assert "SEND/RECV ranges name 0..3" in tc.unpredicted


# ---- 3. device-side copies that are not as many as their host ranges ---------------------------


def test_a_dropped_device_copy_is_refused_with_both_counts(tmp_path):
    s = build("1f1b", p=2, m=4)
    tl = run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), FixedDelay(0.001), semantics="async")
    tr = synthetic_traces(tl, steps=3)
    evs = tr[0]["traceEvents"]
    del evs[next(k for k, e in enumerate(evs) if e["name"] == "PP:0F0" and e["cat"] == "gpu_user_annotation")]
    write_synthetic(tr, tmp_path)
    # three steps: three host ranges of PP:0F0 on rank 0, and 3 - 1 = 2 device copies left
    with pytest.raises(ScheduleFileError, match=r"PP:0F0: 2 device-side copies \(gpu_user_annotation\) but 3 host"):
        check_trace([str(tmp_path)])


# ---- 4. clocks that put a receive before its send ------------------------------------------------


def _offset(r, evs, step1):
    if r == 1:  # rank 1's clock 30 ms behind rank 0's, host names still equal
        for e in evs:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] -= 30_000


def test_offset_clocks_on_one_host_are_refused_and_collective_suggested(tmp_path, capsys):
    d = _stored(tmp_path, _offset)
    assert main(["import-trace", str(d), "--no-table"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--clock collective" in err
    # the first pair named: rank 1's receive of microbatch 0's activation, before its SEND posted
    m = re.search(r"1RECV_F0 completes at ([\d.]+) ms, before rank 0 posted 0SEND_F0 \(its message\) at ([\d.]+)", err)
    assert m, err
    # undoing the 30 ms offset puts the completion after the post, as it ran
    assert float(m.group(1)) + 30.0 >= float(m.group(2))


def test_offset_clocks_aligned_on_the_collective_give_the_step_back(tmp_path):
    d = _stored(tmp_path, _offset)
    tc = check_trace([str(d)], step=1, clock="collective")
    # measure's own clock for step 1: 0.163 s (tests/data/traces/...measure.json); the barrier
    # before the step aligns the ranks to within its exit skew
    own = json.loads((STORED.parent / (STORED.name + ".measure.json")).read_text())["makespans"][0]
    assert tc.timeline.makespan == pytest.approx(own, rel=0.01)


# ---- 5. a receive that completes after its consumer ended ----------------------------------------


def test_a_receive_completing_after_its_consumer_is_refused(tmp_path):
    def late(r, evs, step1):
        if r == 1:  # rank 1's receive of 1F0's input never completes within the step
            rv = _first(evs, "PP:1RECV_F0", step1)
            g = next(e for e in evs if e.get("name") == "gloo:recv" and rv["ts"] <= e["ts"] <= rv["ts"] + rv["dur"])
            g["dur"] = 1e9

    with pytest.raises(
        ScheduleFileError, match=r"PP:1F0: the receive posted by 1RECV_F0 completes at .* after 1F0 ended"
    ):
        check_trace([str(_stored(tmp_path, late))], step=1)


# ---- 6. a schedule file is read at its own size --------------------------------------------------


def test_a_schedule_file_of_more_microbatches_gets_no_prediction(tmp_path, capsys):
    s8 = tmp_path / "s8.csv"
    save_csv(build("1f1b", p=2, m=8), s8)
    assert main(["import-trace", str(STORED), "--schedule", str(s8), "--no-table"]) == 1
    out = capsys.readouterr().out
    # the trace ran microbatches 0..3 of the file's 8: no -m was given, so none is blamed
    assert "no prediction: the step ran microbatches 0..3; the schedule has m=8 (give the schedule that ran)" in out
    assert "-m" not in out.split("no prediction")[1].splitlines()[0]


# ---- 7. traces of different jobs name each rank's steps ------------------------------------------


def test_mixed_jobs_list_the_step_numbers(tmp_path):
    s = build("1f1b", p=2, m=4)
    tl = run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), semantics="async")
    write_synthetic([synthetic_traces(tl, steps=2)[0], synthetic_traces(tl, steps=3)[1]], tmp_path)
    # rank 0 holds ProfilerStep 1 and 2, rank 1 steps 1, 2 and 3
    with pytest.raises(ScheduleFileError, match=r"step numbers rank 0 1, 2; rank 1 1, 2, 3"):
        check_trace([str(tmp_path)])
