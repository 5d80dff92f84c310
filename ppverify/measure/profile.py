"""``measure --profile DIR``: record a ``torch.profiler`` trace in every worker.

Each rank profiles its measured steps (the warm-up steps run under the profiler unrecorded) with PyTorch's own profiler and writes
them with PyTorch's own exporter (``export_chrome_trace``) to ``DIR/rank<r>.pt.trace.json``, the
file a PyTorch job gets from the same settings:

* ``activities=[CPU]`` (plus ``CUDA`` where a GPU is present), ``record_shapes=True``;
* ``schedule(wait=0, warmup=<warm-up steps>, active=<measured steps>, repeat=1)`` and
  ``prof.step()`` after every step, so each measured step is one ``ProfilerStep#N`` range (N counts
  the warm-up steps too) that holds the step's barrier (all ranks leave it together) and every
  action of the step;
* the actions are the ranges ``_PipelineScheduleRuntime`` records itself,
  ``record_function("PP:<action>")`` (``PP:0F1``, ``PP:1SEND_F0``, ``PP:0RECV_B2`` ...); the
  two-pipe runner (:mod:`.twopipe`) records its ops, sends and receives under the same names
  (:func:`annotate`).

:mod:`ppverify.io.profiler_trace` reads such files back.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

#: the file each rank writes into the ``--profile`` directory
TRACE_NAME = "rank{rank}.pt.trace.json"


def trace_path(directory: str, rank: int) -> Path:
    """Where rank ``rank`` writes its trace.

    Example:
        >>> str(trace_path("/tmp/prof", 3))
        '/tmp/prof/rank3.pt.trace.json'
    """
    return Path(directory) / TRACE_NAME.format(rank=rank)


def start_profiler(warmup: int, steps: int, directory: str, rank: int) -> Any:
    """Start ``torch.profiler`` over a run of ``warmup`` + ``steps`` steps with the settings of the
    module docstring and ``schedule(wait=0, warmup=warmup, active=steps, repeat=1)``: call
    ``.step()`` after every step (warm-up ones too); after the last one the trace is exported to
    :func:`trace_path` (a temporary name first, then renamed: a reader never sees half a file).
    Runs inside a worker.

    Example:
        >>> prof = start_profiler(1, 3, "/tmp/prof", 0)  # doctest: +SKIP
    """
    import warnings

    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)

    def export(prof: Any) -> None:
        path = trace_path(directory, rank)
        tmp = path.with_name(path.name + ".part")
        prof.export_chrome_trace(str(tmp))
        tmp.replace(path)

    with warnings.catch_warnings():  # "warmup=0" draws a warning; a run without warm-up is allowed
        warnings.simplefilter("ignore")
        prof = profile(
            activities=activities,
            record_shapes=True,
            schedule=schedule(wait=0, warmup=warmup, active=steps, repeat=1),
            on_trace_ready=export,
        )
        prof.start()
    return prof


def profiler_step(prof: Any, last: bool) -> None:
    """``prof.step()`` after a step; after the ``last`` one the profiler stops, gathers its events
    and exports the trace (hundreds of milliseconds of CPU), which a ``--realtime`` rank does at
    the ordinary policy (:func:`~ppverify.measure.realtime.leave_realtime`): at real-time priority
    it would keep a core from the ranks still in their last step (three ranks on two cores: that
    step 40 % longer). No-op without a profiler.

    Example:
        >>> profiler_step(None, last=True)
    """
    if prof is None:
        return
    if last:
        from .realtime import leave_realtime

        leave_realtime()
    prof.step()


def quiet_profiler_logs() -> None:
    """Silence kineto's ``profiler_start`` / ``profiler_stop`` lines on the workers' stderr: kineto
    reads ``KINETO_LOG_LEVEL`` once, when torch is imported, which for the workers is in the fork
    server, so the parent sets it before starting that server (a value already set is kept).

    Example:
        >>> quiet_profiler_logs()
        >>> import os; os.environ["KINETO_LOG_LEVEL"] != ""
        True
    """
    import os

    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # above every level kineto logs at, USDT (5) included


def annotate(name: str, on: bool) -> Any:
    """``record_function("PP:" + name)`` when ``on`` (a profiled run), else a no-op context.

    Example:
        >>> with annotate("0F1", on=False):
        ...     pass
    """
    if not on:
        return contextlib.nullcontext()
    from torch.profiler import record_function

    return record_function("PP:" + name)
