"""One rank of a one-pipe schedule in PyTorch's own runtime (``_PipelineScheduleRuntime``).

Each rank writes the schedule's CSV cells to a file and loads it with the runtime's own
``_load_csv`` (``compute_only``: PyTorch adds UNSHARD/RESHARD, REDUCE_GRAD and SEND/RECV itself;
``compute_comms``: taken as written), exactly as a PyTorch job loads a schedule file. PyTorch maps
stages to ranks from the file's rows, so linear, loop, V and wave placements all run; adjacent
stages on one rank (V, wave) hand tensors over locally, as the runtime does.

Where timing and sleeps go: :class:`TimedStage` is a ``PipelineStage`` whose
``forward_one_chunk`` (F), ``backward_one_chunk`` (B when ``full_backward``, else I) and
``backward_weight_one_chunk`` (W) record their start and end and sleep the op's cost. These are
the calls in which the runtime really executes each action, after it has waited for the action's
input; an autograd-level sleep would be wrong for split backwards, where the I and W passes re-enter
the same autograd nodes and the first stage's I does nothing while its W runs the full backward.
The per-action status (for hang reports) comes from iterating the runtime's action list.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, cast

import torch
import torch.distributed as dist
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

from .hang import LOADING
from .jobs import Job, RankResult
from .link_delay import stamped_recvs, stamped_sends, wait_for_link
from .memrecord import SavedTensors
from .profile import profiler_step, start_profiler
from .record import Event
from .stages import build_stage_module, loss_fn, make_batch, sleep_remaining
from .status import set_status
from .worker_side import run_folder

_now = time.monotonic_ns  # CLOCK_MONOTONIC on Linux: one clock for all processes


class TimedStage(PipelineStage):
    """A ``PipelineStage`` that sleeps each op's cost and records F/B/I/W, sends and receives as
    :class:`~ppverify.measure.record.Event` (``events`` is a list, or None to record nothing)."""

    def __init__(self, *args: Any, durations: dict[str, tuple[float, ...]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.durations = durations
        self.events: list[Event] | None = None
        #: the rank's saved-tensor recorder (activation memory; :mod:`.memrecord`), or None
        self.memory: SavedTensors | None = None
        #: ``measure --link-delay``: an input received from another rank is used no earlier than
        #: this long after its SEND was posted (:mod:`.link_delay`); 0: the link as it is
        self.link_delay_s = 0.0
        self._stamps: dict[tuple[str, int], list[Any]] = {}

    def _timed(self, kind: str, mb: int, call: Any) -> Any:
        if self.link_delay_s > 0 and kind != "W":  # W takes no input from another rank
            wait_for_link(self._stamps.pop(("F" if kind == "F" else "B", mb), []), self.link_delay_s)
        t0 = _now()
        if self.memory is None:
            out = call()
        elif kind == "F":
            with self.memory.running(kind), self.memory.saving(self.stage_index, mb, self.submod.parameters()):
                out = call()
        else:
            with self.memory.running(kind):
                out = call()
        sleep_remaining(t0, self.durations[kind][self.stage_index])
        if self.events is not None:
            self.events.append(Event(kind, self.stage_index, mb, t0, _now()))
        return out

    # with a link delay every message carries its sender's clock (:mod:`.link_delay`)
    def _stamped_sends(self, ops: Any) -> Any:
        return stamped_sends(ops) if self.link_delay_s > 0 else ops

    def _stamped_recvs(self, kind: str, mb: int, ops: Any) -> Any:
        if self.link_delay_s <= 0:
            return ops
        ops, self._stamps[(kind, mb)] = stamped_recvs(ops)
        return ops

    def forward_one_chunk(self, fwd_chunk_id: int, *args: Any, **kwargs: Any) -> Any:
        """PyTorch's forward of one microbatch, timed and recorded as ``F``."""
        return self._timed(
            "F", fwd_chunk_id, lambda: super(TimedStage, self).forward_one_chunk(fwd_chunk_id, *args, **kwargs)
        )

    def backward_one_chunk(
        self, bwd_chunk_id: int, loss: Any = None, full_backward: bool = True, last_backward: bool = False
    ) -> Any:
        """PyTorch's backward of one microbatch, timed and recorded as ``B`` (full) or ``I`` (input gradient)."""
        return self._timed(
            "B" if full_backward else "I",
            bwd_chunk_id,
            lambda: super(TimedStage, self).backward_one_chunk(
                bwd_chunk_id, loss=loss, full_backward=full_backward, last_backward=last_backward
            ),
        )

    def backward_weight_one_chunk(self, bwd_chunk_id: int, last_backward: bool = False) -> Any:
        """PyTorch's weight gradient of one microbatch, timed and recorded as ``W``."""
        return self._timed(
            "W",
            bwd_chunk_id,
            lambda: super(TimedStage, self).backward_weight_one_chunk(bwd_chunk_id, last_backward=last_backward),
        )

    def get_fwd_send_ops(self, fwd_chunk_id: int) -> Any:
        """PyTorch's send of a forward output, recorded as ``SEND_F`` when it is posted."""
        if self.events is not None:
            t = _now()
            self.events.append(Event("SEND_F", self.stage_index, fwd_chunk_id, t, t))
        return self._stamped_sends(super().get_fwd_send_ops(fwd_chunk_id))

    def get_bwd_send_ops(self, bwd_chunk_id: int) -> Any:
        """PyTorch's send of an input gradient, recorded as ``SEND_B`` when it is posted."""
        if self.events is not None:
            t = _now()
            self.events.append(Event("SEND_B", self.stage_index, bwd_chunk_id, t, t))
        return self._stamped_sends(super().get_bwd_send_ops(bwd_chunk_id))

    # when a RECV is posted tells whether its hand-over was a late receiver's (see docs/measure.md)
    def get_fwd_recv_ops(self, fwd_chunk_id: int) -> Any:
        """PyTorch's receive of a forward input, recorded as ``RECV_F`` when it is posted."""
        if self.events is not None:
            t = _now()
            self.events.append(Event("RECV_F", self.stage_index, fwd_chunk_id, t, t))
        return self._stamped_recvs("F", fwd_chunk_id, super().get_fwd_recv_ops(fwd_chunk_id))

    def get_bwd_recv_ops(self, bwd_chunk_id: int) -> Any:
        """PyTorch's receive of an output gradient, recorded as ``RECV_B`` when it is posted."""
        if self.events is not None:
            t = _now()
            self.events.append(Event("RECV_B", self.stage_index, bwd_chunk_id, t, t))
        return self._stamped_recvs("B", bwd_chunk_id, super().get_bwd_recv_ops(bwd_chunk_id))


class _StatusList(list):
    """The rank's action list; iterating it publishes each action as the worker's status."""

    def __iter__(self) -> Iterator[Any]:
        for action in list.__iter__(self):
            set_status(str(action))
            yield action
        set_status("end of step (waiting for posted sends)")


def run_torch_runtime(rank: int, world_size: int, job: Job) -> RankResult:
    """Run ``job`` on this rank in ``_PipelineScheduleRuntime``: warm-up steps, then measured
    steps (each between barriers), recording events when ``job.record``; return this rank's
    events, step bounds and gradients (of the last step). Runs inside a worker (a process group
    must exist); :func:`ppverify.measure.dispatch.run_jobs` calls it.

    Example:
        >>> from ppverify.measure import measure, build
        >>> measure(build("zbv", p=2, m=4)).runner  # doctest: +SKIP
        'torch-runtime'
    """
    # a rejected schedule reaches the parent as one line; PyTorch's own error log would repeat it
    logging.getLogger("torch.distributed.pipelining").setLevel(logging.CRITICAL)
    sched = job.schedule
    S, m = sched.num_stages, sched.m
    mine = [s for s in range(S) if sched.placement.maps[0][s] == rank]
    stages = [
        TimedStage(build_stage_module(job.spec, s), s, S, torch.device("cpu"), durations=job.durations) for s in mine
    ]
    set_status(LOADING)  # not a hang however long it lasts (.hang)
    rt = _PipelineScheduleRuntime(stages, m, loss_fn=loss_fn, scale_grads=True)
    # in the run's folder, which the parent removes: a worker killed while loading (a timeout,
    # Ctrl-C) never reaches the finally below, and a file in $TMPDIR outlived the run
    fd, path = tempfile.mkstemp(prefix=f"ppverify-rank{rank}-", suffix=".csv", dir=run_folder())
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            fh.write("".join(",".join(row) + "\n" for row in job.rows))
        # PyTorch types the flavour as a Literal; job.format is one of them (io.torch_csv.FLAVOURS)
        rt._load_csv(path, format=cast(Literal["compute_only", "compute_comms"], job.format))
    finally:
        Path(path).unlink(missing_ok=True)
    rt.pipeline_order_with_comms[rank] = _StatusList(rt.pipeline_order_with_comms[rank])
    memory = SavedTensors()
    for st in stages:
        st.memory = memory
        st.link_delay_s = job.link_delay
    saved: list[list] = []
    x, y = make_batch(job.spec, m)
    first, last = 0 in mine, (S - 1) in mine
    events: list[list[Event]] = []
    begins: list[int] = []
    ends: list[int] = []
    prof = start_profiler(job.warmup, job.steps, job.profile, rank) if job.profile else None
    for step in range(job.warmup + job.steps):
        measured = step >= job.warmup
        for st in stages:
            st.submod.zero_grad(set_to_none=True)
            st.events = [] if (measured and job.record) else None
        memory.events = [] if (measured and job.record) else None
        set_status(f"barrier before step {step}")
        dist.barrier()
        t0 = _now()
        args = (x,) if first else ()
        rt.step(*args, target=y if last else None, losses=[] if last else None)
        t1 = _now()
        profiler_step(prof, last=step == job.warmup + job.steps - 1)
        if measured:
            begins.append(t0)
            ends.append(t1)
            events.append([ev for st in stages for ev in (st.events or [])])
            saved.append(memory.take())
    if prof is not None:
        prof.stop()
    grads = {
        (0, st.stage_index): {
            n: p.grad.detach().numpy().copy() if p.grad is not None else None for n, p in st.submod.named_parameters()
        }
        for st in stages
    }
    set_status("barrier after the last step")
    dist.barrier()
    return RankResult(events, begins, ends, grads, info={"memory": saved})
