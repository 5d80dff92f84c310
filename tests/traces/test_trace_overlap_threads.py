"""Two host-side compute ranges of one rank that overlap are refused, whatever their thread ids.

``_PipelineScheduleRuntime._step_microbatches`` issues every ``PP:`` action of a rank from one loop
on one thread, so two of its compute ranges that overlap cannot come from one job, whichever
``tid`` they carry; two merged traces are exactly where the ids differ. The check keyed the ranges
by ``(pid, tid)``, so an overlap across two threads was read, verified VALID and fitted costs from
the overlap. Device-side copies (``gpu_user_annotation``, kernels on several streams) stay out of
the check. The traces are synthetic (``ppverify.io.trace_synth``), as in test_readback_fixes.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.cli import main

# 1F1B p=2 m=2, F = 10 ms, B = 20 ms, one step. trace_synth puts rank 0's device-side 0F0 at
# base = 1,000,000 us and launches it from a 4 us host range 30 us before: 999,970..999,974 us
# (events sorted by time: ProfilerStep#1 is traceEvents[0], the host PP:0F0 traceEvents[2]). The
# host PP:0F1 (traceEvents[8]) is moved to 999,972 us: 2 us after 0F0's host range starts, inside it.
HOST_F0, HOST_F1, MOVED_TO = 2, 8, 999_972.0
# times from the file's first compute range (0F0 at 999,970): 0F1 at 2 us, 0F0 from 0 to 4 us
REFUSAL = (
    "traceEvents[8]: PP:0F1 starts at 2.000 us while PP:0F0 (traceEvents[2], 0.000 to 4.000 us) still runs "
    "on the same rank (times from the file's first compute range); the runtime runs one action at a time, "
    "so this is not one job's trace"
)


def _trace(directory: Path, edit=None) -> Path:
    """The synthetic trace of 1F1B p=2 m=2 in ``directory``; ``edit(events)`` changes rank 0's."""
    from ppverify.core.costs import CostModel
    from ppverify.engines import run
    from ppverify.io.trace_synth import synthetic_traces, write_synthetic
    from ppverify.schedules import build

    s = build("1f1b", p=2, m=2)
    traces = synthetic_traces(run(s, CostModel.abstract(s.placement, F=0.010, B=0.020)), steps=1)
    events = traces[0]["traceEvents"]
    assert events[HOST_F0]["ts"] == 999_970.0 and events[HOST_F0]["dur"] == 4.0  # as worked out above
    if edit is not None:
        edit(events)
    directory.mkdir()
    write_synthetic(traces, directory)
    return directory


def _move_host_f1(tid: int):
    def edit(events):
        ev = events[HOST_F1]
        assert (ev["name"], ev["cat"], ev["tid"]) == ("PP:0F1", "user_annotation", 1)
        ev["ts"], ev["tid"] = MOVED_TO, tid

    return edit


@pytest.mark.parametrize("tid", [1, 2], ids=["same-thread", "other-thread"])
def test_overlapping_host_compute_ranges_are_refused_on_any_thread(tmp_path, capsys, tid):
    d = _trace(tmp_path / "tr", _move_host_f1(tid))
    assert main(["import-trace", str(d), "--no-table"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == f"ppverify import-trace: error: {d / 'rank0.pt.trace.json'}: {REFUSAL}", err


def test_overlapping_device_copies_stay_out_of_the_check(tmp_path, capsys):
    # the device-side PP:0F1 (traceEvents[13], 1,010,000 us on stream 7) moved to 1,005,000 us on
    # stream 8, inside 0F0's device copy (1,000,000 to 1,010,000 us): not the host loop's order,
    # so not this check's business; the trace still reads (its host ranges do not overlap)
    def edit(events):
        ev = events[13]
        assert (ev["name"], ev["cat"], ev["ts"]) == ("PP:0F1", "gpu_user_annotation", 1_010_000.0)
        ev["ts"], ev["tid"] = 1_005_000.0, 8

    d = _trace(tmp_path / "tr", edit)
    assert main(["import-trace", str(d), "--no-table"]) == 0
    assert "not one job's trace" not in capsys.readouterr().err


def test_the_unedited_trace_reads_valid(tmp_path, capsys):
    d = _trace(tmp_path / "tr")
    assert main(["import-trace", str(d), "--no-table"]) == 0
    assert "verify        VALID" in capsys.readouterr().out
