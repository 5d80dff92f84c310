"""A point-to-point transfer belongs to the innermost ``PP:`` range containing its start (host
work event) or its kernel's launch, the range's bounds included (``start <= t <= end``): a
transfer that starts at the same microsecond as its ``PP:...SEND`` range is the range's. The
events are written by hand; the expected owners follow from their times."""

from __future__ import annotations

import json

from ppverify.io.profiler_trace import Span, read_rank_trace


def _write(tmp_path, extra):
    # PP:0F0 covers [10, 15], PP:0SEND_F0 covers [20, 25]: nothing else contains t = 20
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "PP:0F0", "ts": 10, "dur": 5, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "user_annotation", "name": "PP:0SEND_F0", "ts": 20, "dur": 5, "pid": 1, "tid": 1},
        *extra,
    ]
    path = tmp_path / "rank0_trace.json"
    path.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": ev}))
    return path


def test_host_send_starting_with_its_range_belongs_to_it(tmp_path):
    # nccl:send at ts 20 (dur 3): 20 is in [20, 25] (PP:0SEND_F0, start == t), not in [10, 15]
    work = {"ph": "X", "cat": "cpu_op", "name": "nccl:send 0->1", "ts": 20, "dur": 3, "pid": 1, "tid": 1}
    t = read_rank_trace(_write(tmp_path, [work]))
    assert [(x.action, x.span) for x in t.transfers] == [("0SEND_F0", Span("nccl:send 0->1", 20.0, 23.0, 0.0))]


def test_kernel_launched_as_its_range_starts_belongs_to_it(tmp_path):
    # the kernel runs on the device at [30, 34]; its launch (correlation 7) is at ts 20, the start
    # of PP:0SEND_F0, so the kernel is that action's transfer
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 20, "dur": 1, "pid": 1, "tid": 1,
              "args": {"correlation": 7}}  # fmt: skip
    kernel = {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", "ts": 30, "dur": 4, "pid": 0, "tid": 7,
              "args": {"correlation": 7}}  # fmt: skip
    t = read_rank_trace(_write(tmp_path, [launch, kernel]))
    assert [(x.action, x.span.name, x.span.start, x.span.end) for x in t.transfers] == [
        ("0SEND_F0", "ncclDevKernel_SendRecv", 30.0, 34.0)
    ]
