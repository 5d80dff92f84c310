"""Profiler traces in (``ppverify import-trace``), without processes: synthetic GPU-style traces of
engine timelines, hand-written host-side traces, and every kind of bad input.

Expected values come from another abstraction: the engine's timeline the synthetic trace was
written from (its op times, scaled by the step's known stretch), or times worked out by hand
from the events written in the test.
"""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.compare.trace_check import check_trace
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ScheduleFileError
from ppverify.engines import run
from ppverify.io.profiler_trace import read_traces
from ppverify.io.trace_step import recorded_step
from ppverify.io.trace_synth import synthetic_traces, write_synthetic
from ppverify.measure.trace_import import import_step, recorded_size, schedule_differences
from ppverify.schedules import build

FAMILIES = [("gpipe", {}), ("1f1b", {}), ("interleaved-1f1b", {"v": 2}), ("zbv", {}), ("zb-h1", {})]


def _timeline(family, p, m, params=None, delay=0.001):
    s = build(family, p=p, m=m, **(params or {}))
    return s, run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), FixedDelay(delay), semantics="async")


def _op_times(tl):
    return {str(o): (float(a), float(b)) for o, a, b in zip(tl.ops, tl.start, tl.end)}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fam=st.sampled_from(FAMILIES),
    p=st.sampled_from([2, 4]),
    m=st.sampled_from([4, 8]),
    offsets=st.lists(st.floats(-1e6, 1e6), min_size=4, max_size=4),
    gz=st.booleans(),
)
def test_synthetic_gpu_trace_imports_to_the_engine_timeline(tmp_path_factory, fam, p, m, offsets, gz):
    # three steps stretched by 1.0, 1.2, 1.4: the median step is the second (ProfilerStep#2), whose
    # device-side op times are the engine's times x 1.2 once the hosts' clock offsets are undone
    family, params = fam
    s, tl = _timeline(family, p, m, params)
    d = tmp_path_factory.mktemp("syn")
    tr = synthetic_traces(tl, steps=3, jitter=0.2, hosts=[f"node{r}" for r in range(p)], offsets_us=offsets[:p])
    write_synthetic(tr, d, gz=gz)
    traces = read_traces([d])
    rec = recorded_step(traces)
    assert (rec.step, rec.steps, rec.clock, rec.side) == (2, (1, 2, 3), "collective", "device")
    assert rec.offsets == pytest.approx([offsets[0] - o for o in offsets[:p]], abs=1e-3)
    imp = import_step(traces, rec)
    want, got = _op_times(tl), _op_times(imp.timeline)
    assert want.keys() == got.keys()
    for k, (a, b) in want.items():
        assert got[k] == pytest.approx((1.2 * a, 1.2 * b), abs=1e-9)
    for r in range(p):
        assert [str(o) for o in imp.schedule.ops(r)] == [str(o) for o in s.ops(r)]
    assert recorded_size(traces) == (p, m)


def test_one_host_shares_its_clock_and_step_is_selectable(tmp_path):
    _, tl = _timeline("1f1b", 2, 4)
    write_synthetic(synthetic_traces(tl, steps=3, jitter=0.5), tmp_path)
    traces = read_traces([tmp_path])
    rec = recorded_step(traces, step=3)
    assert rec.clock == "shared" and rec.offsets == (0.0, 0.0)
    assert import_step(traces, rec).timeline.makespan == pytest.approx(2.0 * tl.makespan)
    with pytest.raises(Exception, match="not recorded; the traces hold ProfilerStep 1, 2, 3"):
        recorded_step(traces, step=7)


def _host_trace(rank, world, events, host="h"):
    evs = [{"ph": "X", "cat": c, "name": n, "ts": t, "dur": d, "pid": 1, "tid": 1} for n, c, t, d in events]
    return {"distributedInfo": {"rank": rank, "world_size": world}, "host_name": host, "traceEvents": evs}


def _write(tmp_path, objs):
    for r, obj in enumerate(objs):
        (tmp_path / f"rank{r}.json").write_text(json.dumps(obj))


def _gpipe_host(tmp_path):
    # gpipe p=2 m=1 on host-side ranges (µs). Rank 0: F [0, 10], posts SEND_F at 10 (a gloo:send),
    # posts RECV_B at 11; its gloo:recv completes at 50; the PP:0B0 range starts at 12 and lasts to
    # 70, so the op starts at the arrival, 50. Rank 1: RECV_F posted at 1, its recv completes at 14;
    # PP:1F0 [2, 24] starts computing at 14; B [24, 44]; SEND_B at 44.
    r0 = [
        ("ProfilerStep#5", "user_annotation", -1, 100),
        ("PP:0F0", "user_annotation", 0, 10),
        ("PP:0SEND_F0", "user_annotation", 10, 1),
        ("gloo:send", "user_annotation", 10.5, 5),
        ("PP:0RECV_B0", "user_annotation", 11, 1),
        ("gloo:recv", "user_annotation", 11.5, 38.5),
        ("PP:0B0", "user_annotation", 12, 58),
    ]
    r1 = [
        ("ProfilerStep#5", "user_annotation", -1, 100),
        ("PP:1RECV_F0", "user_annotation", 1, 1),
        ("gloo:recv", "user_annotation", 1.5, 12.5),
        ("PP:1F0", "user_annotation", 2, 22),
        ("PP:1B0", "user_annotation", 24, 20),
        ("PP:1SEND_B0", "user_annotation", 44, 1),
        ("gloo:send", "user_annotation", 44.2, 6),
    ]
    _write(tmp_path, [_host_trace(0, 2, r0), _host_trace(1, 2, r1)])


def test_host_side_ops_start_when_their_input_arrives(tmp_path):
    _gpipe_host(tmp_path)
    tc = check_trace([str(tmp_path)], build("gpipe", p=2, m=1))
    tl = tc.timeline
    got = {str(o): (round(a * 1e6, 6), round(b * 1e6, 6)) for o, a, b in zip(tl.ops, tl.start, tl.end)}
    assert got == {"0F0": (0, 10), "0B0": (50, 70), "1F0": (14, 24), "1B0": (24, 44)}
    assert tc.report.valid and tc.differences == ()
    # the fitted costs are the recorded durations: F 10 µs on both stages, B 20 µs: the async
    # prediction without links is F0 F1 B1 B0 back to back, 60 µs, and the measured step 70 µs
    assert tc.predicted.makespan == pytest.approx(60e-6)
    assert tl.makespan == pytest.approx(70e-6)


def test_differences_name_order_missing_and_extra_ops(tmp_path):
    _gpipe_host(tmp_path)
    assert main(["import-trace", str(tmp_path), "--schedule", "1f1b", "-m", "2", "--json"]) == 1


@settings(max_examples=25, deadline=None)
@given(fam=st.sampled_from(FAMILIES), data=st.data())
def test_every_corruption_of_a_program_is_listed(fam, data):
    family, params = fam
    s = build(family, p=2, m=4, **params)
    progs = [list(pr) for pr in s.programs]
    rank = data.draw(st.integers(0, 1))
    how = data.draw(st.sampled_from(["drop", "swap"]))
    i = data.draw(st.integers(0, len(progs[rank]) - 2))
    if how == "drop":
        gone = progs[rank].pop(i)
        want = f"rank {rank}: missing {gone}"
    else:
        progs[rank][i], progs[rank][i + 1] = progs[rank][i + 1], progs[rank][i]
        want = f"rank {rank}: op order differs at position {i}: ran {progs[rank][i]}"
    diffs = schedule_differences(s, s.with_programs(tuple(tuple(p) for p in progs)))
    assert any(d.startswith(want) for d in diffs), diffs
    assert schedule_differences(s, s) == []


def _cli_error(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_bad_traces_are_one_line_each(tmp_path, capsys):
    _, tl = _timeline("1f1b", 2, 4)
    good = synthetic_traces(tl, steps=2)
    # truncated JSON
    d = tmp_path / "trunc"
    write_synthetic(good, d)
    f = d / "rank1.pt.trace.json"
    f.write_text(f.read_text()[:-500])
    assert "rank1.pt.trace.json" in _cli_error(["import-trace", str(d)], capsys)
    # corrupt gzip
    d = tmp_path / "gz"
    write_synthetic(good, d, gz=True)
    f = d / "rank0.pt.trace.json.gz"
    f.write_bytes(f.read_bytes()[:200])
    assert "corrupt or truncated gzip data" in _cli_error(["import-trace", str(d)], capsys)
    # mixed jobs: world sizes that disagree
    d = tmp_path / "mixed"
    _, tl4 = _timeline("1f1b", 4, 4)
    write_synthetic([good[0], synthetic_traces(tl4, steps=2)[1]], d)
    assert "traces of different jobs mixed" in _cli_error(["import-trace", str(d)], capsys)
    # mixed jobs: step counts that disagree
    d = tmp_path / "steps"
    write_synthetic([good[0], synthetic_traces(tl, steps=3)[1]], d)
    assert "traces of different jobs mixed (steps per rank rank 0: 2, rank 1: 3)" in _cli_error(
        ["import-trace", str(d)], capsys
    )
    # a rank missing
    d = tmp_path / "missing"
    write_synthetic(good, d)
    (d / "rank1.pt.trace.json").unlink()
    assert "rank 1 missing: world size 2, 1 trace files" in _cli_error(["import-trace", str(d)], capsys)
    # no PP: annotations: what was expected and how to record them
    d = tmp_path / "none"
    d.mkdir()
    _write(d, [_host_trace(0, 1, [("aten::mm", "cpu_op", 0, 1)])])
    err = _cli_error(["import-trace", str(d)], capsys)
    assert "no pipeline actions (PP:<action>" in err and "torch.profiler.profile(" in err and "prof.step()" in err
    # clocks that cannot be aligned: two hosts and no collective before the step
    d = tmp_path / "clock"
    tr = synthetic_traces(tl, steps=1, hosts=["a", "b"])
    for obj in tr:
        obj["traceEvents"] = [e for e in obj["traceEvents"] if "AllReduce" not in e["name"]]
    write_synthetic(tr, d)
    assert "clocks cannot be aligned (hosts differ)" in _cli_error(["import-trace", str(d)], capsys)
    # not a trace at all
    d = tmp_path / "notrace"
    d.mkdir()
    (d / "rank0.json").write_text("[1, 2]")
    assert "not a Chrome trace" in _cli_error(["import-trace", str(d)], capsys)


def test_gzip_and_plain_read_the_same(tmp_path):
    _, tl = _timeline("zbv", 2, 4)
    tr = synthetic_traces(tl, steps=1)
    write_synthetic(tr, tmp_path / "a")
    (tmp_path / "b").mkdir()
    for r, obj in enumerate(tr):
        (tmp_path / "b" / f"rank{r}.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps(obj).encode()))
    a = read_traces([tmp_path / "a"])
    b = read_traces([tmp_path / "b"])
    assert [t.actions for t in a] == [t.actions for t in b]
    with pytest.raises(ScheduleFileError, match="no such trace file or directory"):
        read_traces([tmp_path / "c"])


def test_cli_writes_outputs_and_json(tmp_path, capsys):
    _, tl = _timeline("1f1b", 2, 4)
    write_synthetic(synthetic_traces(tl, steps=3), tmp_path / "t")
    out = tmp_path / "o.json"
    assert main(["import-trace", str(tmp_path / "t"), "--schedule", "1f1b", "--json", "--trace", str(out)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["valid"] and rep["differences"] == [] and rep["step"] == 2 and rep["clock"] == "shared"
    assert rep["makespan_measured"] == pytest.approx(tl.makespan)
    assert out.exists()


def test_calibrate_from_a_synthetic_trace_fits_the_engine_costs(tmp_path):
    # the synthetic trace's op durations are the engine's costs (F = 10 ms, B = 20 ms per stage at
    # p = 2, one stage per device): the fitted costs are exactly those
    from ppverify.measure.trace_calibrate import calibrate_from_trace

    _, tl = _timeline("1f1b", 2, 4)
    write_synthetic(synthetic_traces(tl, steps=4), tmp_path)
    fit = calibrate_from_trace(read_traces([tmp_path]), fit_steps=[1, 2])
    assert fit.costs.duration["F"] == pytest.approx((0.01, 0.01)) and fit.costs.duration["B"] == pytest.approx(
        (0.02, 0.02)
    )
    assert fit.fit_steps == (1, 2) and [ms for _, ms in fit.runs] == pytest.approx([tl.makespan] * 2)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0.0, 0.999), gz=st.booleans(), field=st.sampled_from(["ts", "dur", None]), data=st.data())
def test_any_truncation_or_bad_field_is_one_line(tmp_path_factory, capsys, cut, gz, field, data):
    _, tl = _timeline("gpipe", 2, 2)
    tr = synthetic_traces(tl, steps=1)
    if field is not None:  # one event's time is not a number
        evs = [e for e in tr[1]["traceEvents"] if e["ph"] == "X"]
        data.draw(st.sampled_from(evs))[field] = "soon"
    d = tmp_path_factory.mktemp("bad")
    write_synthetic(tr, d, gz=gz)
    f = d / f"rank1.pt.trace.json{'.gz' if gz else ''}"
    raw = f.read_bytes()
    if field is None:
        f.write_bytes(raw[: int(cut * len(raw))])
    err = _cli_error(["import-trace", str(d)], capsys)
    assert err.startswith("ppverify import-trace: error: ") and "rank1.pt.trace.json" in err
    if field is not None:
        assert "has no numeric ts/dur" in err
    elif int(cut * len(raw)) < 2:  # no gzip header left
        assert "empty file: no trace" in err or "truncated JSON" in err
    elif gz:
        assert "corrupt or truncated gzip data" in err
    else:
        assert "truncated JSON: the file ends early" in err or "not a JSON trace" in err


def test_actions_without_device_copies_keep_their_host_ranges_and_nccl_bytes_count(tmp_path):
    # SEND/RECV actions whose device copies are missing (no kernel launched) fall back to their host
    # ranges: the compute ops keep the engine's times, every transfer is still found, and the
    # boundary's bytes come from the NCCL kernels' "In msg nelems" x 4 (Float): 4096 B as written
    from dataclasses import replace

    s = build("1f1b", p=2, m=4)
    costs = replace(CostModel.abstract(s.placement, F=0.01, B=0.02), boundary_bytes=(4096.0,))
    tl = run(s, costs, FixedDelay(0.001), semantics="async")
    tr = synthetic_traces(tl, steps=1)
    for obj in tr:
        obj["traceEvents"] = [
            e
            for e in obj["traceEvents"]
            if not (e["cat"] == "gpu_user_annotation" and ("SEND" in e["name"] or "RECV" in e["name"]))
        ]
    write_synthetic(tr, tmp_path)
    traces = read_traces([tmp_path])
    imp = import_step(traces, recorded_step(traces), s)
    want, got = _op_times(tl), _op_times(imp.timeline)
    assert all(got[k] == pytest.approx(v, abs=1e-9) for k, v in want.items())
    assert len(imp.timeline.transfers) == len(tl.transfers) == 8  # 4 activations + 4 gradients
    assert imp.timeline.costs.boundary_bytes == (4096.0,)


def test_stored_measure_trace_imports_to_measures_own_timeline():
    # tests/data/traces/PROVENANCE.md: PyTorch's exporter's files of a measure --profile run, and
    # the makespans measure recorded itself (CLOCK_MONOTONIC) for the same steps
    from pathlib import Path

    d = Path(__file__).resolve().parents[1] / "data" / "traces" / "measure-1f1b-p2-m4"
    own = json.loads((d.parent / "measure-1f1b-p2-m4.measure.json").read_text())["makespans"]
    s = build("1f1b", p=2, m=4)
    traces = read_traces([d])
    assert [t.world_size for t in traces] == [2, 2] and [t.side for t in traces] == ["host", "host"]
    for k, n in enumerate((1, 2)):
        imp = import_step(traces, recorded_step(traces, step=n), s)
        assert [[str(o) for o in imp.schedule.ops(r)] for r in range(2)] == [
            [str(o) for o in s.ops(r)] for r in range(2)
        ]
        assert imp.timeline.makespan == pytest.approx(own[k], rel=0.01)
    tc = check_trace([str(d)], s)
    assert tc.report.valid and tc.differences == ()


@pytest.mark.parametrize("extra", [["-p", "4"], ["-m", "8"], ["--v", "2"], ["--units", "concat"]])
def test_family_options_without_a_schedule_are_refused(capsys, extra):
    # they shape --schedule's family; without it the trace decides, and they were ignored
    from pathlib import Path

    d = Path(__file__).resolve().parents[1] / "data" / "traces" / "measure-1f1b-p2-m4"
    err = _cli_error(["import-trace", str(d), *extra], capsys)
    assert f"{extra[0]} shapes the family of --schedule" in err and "give --schedule FAMILY" in err


def test_the_costs_line_names_the_kinds_that_ran(capsys):
    # a 1F1B trace runs F and B: the fit's derived I and W (B / 2) are not printed as if they ran
    from pathlib import Path

    d = Path(__file__).resolve().parents[1] / "data" / "traces" / "measure-1f1b-p2-m4"
    assert main(["import-trace", str(d)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("costs"))
    assert "F=" in line and "B=" in line and "I=" not in line and "W=" not in line


def test_older_schedules_forward_backward_ranges_need_the_schedule(tmp_path, capsys):
    # ScheduleGPipe / Schedule1F1B record "Forward i" / "Backward i" on each rank's one stage: with
    # --schedule gpipe p=2 m=2 rank 1's ranges are stage 1's ops, in the order recorded
    ev = [("Forward 0", "user_annotation", 0, 10), ("Forward 1", "user_annotation", 10, 10)]
    ev += [("Backward 0", "user_annotation", 52, 20), ("Backward 1", "user_annotation", 72, 20)]
    ev1 = [("Forward 0", "user_annotation", 11, 10), ("Forward 1", "user_annotation", 21, 10)]
    ev1 += [("Backward 0", "user_annotation", 31, 20), ("Backward 1", "user_annotation", 51, 20)]
    _write(tmp_path, [_host_trace(0, 2, ev), _host_trace(1, 2, ev1)])
    assert main(["import-trace", str(tmp_path), "--schedule", "gpipe", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["recorded_schedule"] == [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1F1", "1B0", "1B1"]]
    # ppverify's GPipe at p=2, m=2 is F0 F1 B0 B1 on both ranks: no difference, and valid
    assert rep["differences"] == [] and rep["valid"] is True
    assert rep["makespan_measured"] == pytest.approx(92e-6)  # 0B1 ends at 72 + 20 us
    err = _cli_error(["import-trace", str(tmp_path)], capsys)
    assert "'Forward i'/'Backward i' ranges need --schedule" in err


def _stored_without_shapes(tmp_path):
    """The stored measure --profile trace (tests/data/traces) with every recorded shape removed,
    as a job recorded without ``record_shapes=True`` writes it."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "data" / "traces" / "measure-1f1b-p2-m4"
    out = tmp_path / "noshapes"
    out.mkdir()
    for f in sorted(src.iterdir()):
        obj = json.loads(gzip.decompress(f.read_bytes()))
        for e in obj["traceEvents"]:
            if isinstance(e.get("args"), dict):
                for key in ("Input Dims", "Input type", "In msg nelems"):
                    e["args"].pop(key, None)
        (out / f.name.removesuffix(".gz")).write_text(json.dumps(obj))
    return src, out


def test_link_bytes_come_from_the_model_when_the_trace_has_no_shapes(tmp_path, capsys):
    # the stored trace's transfers carry 2 x 8 float64 = 128 B (measure's sleep-mode boundary);
    # without shapes, --model gpt3-1.3b --seq-len 16 sizes them 16 tokens x 2048 hidden x 2 B =
    # 65,536 B (the LLM preset's hidden size), --boundary-bytes 4KiB 4,096 B; recorded shapes win
    from ppverify.measure.trace_calibrate import calibrate_from_trace, from_trace
    from ppverify.measure.trace_sizes import transfer_sizes

    src, bare = _stored_without_shapes(tmp_path)
    recorded = calibrate_from_trace(read_traces([src]))
    assert recorded.bytes_from == "recorded shapes" and {b for b, _ in recorded.link_samples} == {128.0}
    none = calibrate_from_trace(read_traces([bare]))
    assert none.bytes_from == "none" and {b for b, _ in none.link_samples} == {0.0}
    fit, text, _ = from_trace([str(bare)], "1f1b", "1", "x", transfer_sizes("gpt3-1.3b", seq_len=16))
    assert {b for b, _ in fit.link_samples} == {65536.0} and fit.costs.boundary_bytes == (65536.0,)
    # the same transfers and times as the recorded fit: only their bytes differ
    assert [t for _, t in fit.link_samples] == [
        t for _, t in calibrate_from_trace(read_traces([src]), fit_steps=[1]).link_samples
    ]
    assert "sizes 65536 B (bytes from the model gpt3-1.3b (microbatch 1, 16 tokens))" in text
    fit, _, _ = from_trace([str(src)], "1f1b", "1", "x", transfer_sizes("gpt3-1.3b", seq_len=16))
    assert fit.bytes_from == "recorded shapes" and {b for b, _ in fit.link_samples} == {128.0}
    out = tmp_path / "p.yaml"
    argv = ["calibrate", "--from-trace", str(bare), "--fit-steps", "1", "--boundary-bytes", "4KiB", "--out", str(out)]
    assert main(argv) == 0
    assert "sizes 4096 B (bytes from --boundary-bytes 4096 B)" in capsys.readouterr().out
    assert "sizes 4096 B" in out.read_text()


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--seq-len", "16"], "seq-len=16: sizes a model's transfers: give --model too"),
        (["--boundary-bytes", "0"], "boundary-bytes=0: expected a size in bytes > 0"),
        (["--boundary-bytes", "8x"], "boundary-bytes=8x: expected a size in bytes > 0"),
        (["--model", "no-such-model"], "no-such-model"),
    ],
)
def test_bad_transfer_sizes_are_one_line_and_write_nothing(tmp_path, capsys, extra, says):
    _, bare = _stored_without_shapes(tmp_path)
    out = tmp_path / "p.yaml"
    err = _cli_error(["calibrate", "--from-trace", str(bare), "--out", str(out), *extra], capsys)
    assert says in err and not out.exists()


def test_transfer_sizes_need_a_trace(capsys):
    err = _cli_error(["calibrate", "--model", "gpt3-1.3b"], capsys)
    assert "model=gpt3-1.3b: sizes the transfers of a profiler trace: give --from-trace DIR" in err


@given(
    base=st.lists(st.floats(99.0, 101.0), min_size=4, max_size=12),
    outlier=st.floats(130.0, 400.0),
    at=st.integers(0, 12),
)
def test_a_step_far_off_the_others_is_left_out_of_the_fit(base, outlier, at):
    # steps within 1 % of 100 and one at +30 % or more: the robust deviation is at most
    # 1.4826 x 1 (the typical ones lie within 1 of 100) and at least 1 (1 % of the median), so
    # the band is 3 to 4.5 around the median and only the outlier lies outside it
    from ppverify.measure.trace_calibrate import typical_steps

    spans = list(base)
    spans.insert(at % (len(spans) + 1), outlier)
    keep = typical_steps(spans)
    assert [x for x, k in zip(spans, keep) if not k] == [outlier]
    assert typical_steps(base) == [True] * len(base)


def test_the_fit_names_the_steps_it_left_out(tmp_path):
    # four steps of the engine's 1F1B, the third stretched x 1.5 (an outlier): fitted on 1, 2, 4
    from ppverify.measure.calibration_report import summary_lines
    from ppverify.measure.trace_calibrate import calibrate_from_trace, from_trace

    _, tl = _timeline("1f1b", 2, 4)
    steps = [synthetic_traces(tl, steps=1, first_step=n, jitter=0.0) for n in (1, 2, 4)]
    slow = replace_makespan(tl, 1.5)
    merged = [dict(t) for t in steps[0]]
    for r in range(2):
        merged[r]["traceEvents"] = [
            *steps[0][r]["traceEvents"],
            *_shifted(steps[1][r]["traceEvents"], 1e6),
            *_shifted(synthetic_traces(slow, steps=1, first_step=3)[r]["traceEvents"], 2e6),
            *_shifted(steps[2][r]["traceEvents"], 3e6),
        ]
    write_synthetic(merged, tmp_path)
    fit = calibrate_from_trace(read_traces([tmp_path]))
    assert fit.fit_steps == (1, 2, 4) and fit.dropped == (3,)
    assert [ms for _, ms in fit.runs] == pytest.approx([tl.makespan] * 3)
    assert summary_lines(fit, "\n" * 5, [])[0].endswith("(left out as outliers: 3)")
    # fitted on 1-3, step 3 left out: the held-out steps are the others (4), never the outlier
    fit, _, rows = from_trace([str(tmp_path)], None, "1,2,3", "x")
    assert fit.fit_steps == (1, 2) and fit.dropped == (3,) and [n for n, _, _ in rows] == [4]
    assert rows[0][1] == pytest.approx(tl.makespan)


def replace_makespan(tl, factor):
    """The timeline with every time stretched by ``factor``."""
    from dataclasses import replace

    return replace(tl, start=tl.start * factor, end=tl.end * factor)


def _shifted(events, us):
    out = []
    for e in events:
        e = dict(e)
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = e["ts"] + us
        out.append(e)
    return out
