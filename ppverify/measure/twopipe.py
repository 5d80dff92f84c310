"""One rank of a two-pipe schedule (Chimera, Chimera-style, DualPipe) on ppverify's own runner.

PyTorch's runtime has one rank per stage index, so schedules whose microbatches flow through two
pipes (each device holding a replica of two different stages) cannot run there. This runner does
what such a runtime must do, on ``torch.distributed`` point-to-point ops:

* each rank runs its program in order; an overlapped slot (DualPipe's F&B) runs its ops one after
  the other;
* ``F`` of stage s takes its input from stage s-1 of the microbatch's pipe: the batch for s = 0,
  a local hand-over when s-1 is on the same rank, else a blocking ``recv`` (tagged by pipe, stage
  and microbatch, so messages cannot be confused); its output goes out by ``isend`` once the op has lasted its cost;
* ``B`` back-propagates the received output gradient through the saved graph and sends the input
  gradient to stage s-1; a split backward runs ``I`` (input gradient only, sent on) then ``W``
  (weight gradients), with stage 0's I doing nothing, as in PyTorch;
* after the last op, every stage's two replicas sum their weight gradients (an all-reduce of two,
  done as one exchange between the two ranks, or locally when both replicas share a rank), and
  the gradients are divided by m, as PyTorch's REDUCE_GRAD does.

Ops sleep their cost and are recorded exactly as in :mod:`.runtime`.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torch.distributed as dist

from ..core.ops import Comm, Op, Overlap
from .jobs import Job, RankResult
from .link_delay import stamp, wait_for_link
from .memrecord import SavedTensors
from .profile import annotate, profiler_step, start_profiler
from .record import Event
from .stages import build_stage_module, loss_fn, make_batch, sleep_remaining
from .status import set_status

_now = time.monotonic_ns


class _Runner:
    """State of one rank during one step (modules persist across steps)."""

    def __init__(self, rank: int, job: Job, mods: dict[tuple[int, int], Any], x: Any, y: Any) -> None:
        sched = job.schedule
        self.rank, self.job, self.mods = rank, job, mods
        self.maps, self.pipe_of = sched.placement.maps, sched.pipe_of_mb
        self.S, self.m = sched.num_stages, sched.m
        self.xs, self.ys = torch.tensor_split(x, self.m), torch.tensor_split(y, self.m)
        self.local: dict[tuple[str, int, int], Any] = {}  # hand-overs between stages of this rank
        self.saved: dict[tuple[int, int], tuple[Any, Any, Any]] = {}  # (stage, mb) -> input, output, out grad
        self.sends: list[Any] = []
        self.events: list[Event] | None = None
        #: the rank's saved-tensor recorder (activation memory; :mod:`.memrecord`)
        self.memory = SavedTensors()
        self.profiling = False  # record PP:<action> ranges (a profiled measured step)

    def _tag(self, direction: int, stage: int, mb: int) -> int:
        return (direction * self.S + stage) * self.m + mb

    def _stamp_tag(self, tag: int) -> int:
        # a link delay's clock stamps (:mod:`.link_delay`) travel above every data and replica-sum tag
        return tag + 3 * self.S * self.m

    def _get(self, direction: str, stage: int, mb: int, src: int, like: Any, label: str) -> Any:
        key = (direction, stage, mb)
        if src == self.rank:
            return self.local.pop(key)
        set_status(f"{label} (waiting to receive from rank {src})")
        buf = torch.empty_like(like)
        tag = self._tag(0 if direction == "F" else 1, stage, mb)
        with annotate(f"{stage}RECV_{direction}{mb}", self.profiling):
            dist.recv(buf, src=src, tag=tag)
            if self.job.link_delay > 0:  # the sender's stamp
                sent = torch.zeros(1, dtype=torch.float64)
                dist.recv(sent, src=src, tag=self._stamp_tag(tag))
                wait_for_link([sent], self.job.link_delay)
        set_status(label)
        return buf

    def _put(self, direction: str, stage: int, mb: int, dst: int, tensor: Any) -> None:
        if dst == self.rank:
            self.local[(direction, stage, mb)] = tensor
            return
        if self.events is not None:
            t = _now()
            self.events.append(
                Event("SEND_F" if direction == "F" else "SEND_B", stage - (1 if direction == "F" else -1), mb, t, t)
            )
        sender = stage - (1 if direction == "F" else -1)
        tag = self._tag(0 if direction == "F" else 1, stage, mb)
        with annotate(f"{sender}SEND_{direction}{mb}", self.profiling):
            self.sends.append(dist.isend(tensor.contiguous(), dst=dst, tag=tag))
            if self.job.link_delay > 0:
                self.sends.append(dist.isend(stamp(), dst=dst, tag=self._stamp_tag(tag)))

    def run_op(self, op: Op) -> None:
        with self.memory.running(op.kind):
            self._run_op(op)

    def _run_op(self, op: Op) -> None:
        kind, s, mb = op
        pipe = self.pipe_of[mb]
        mp = self.maps[pipe]
        mod = self.mods[(pipe, s)]
        label = str(op)
        outgoing: tuple[str, int, int, int, Any] | None = None
        if kind == "F":
            if s == 0:
                inp = self.xs[mb]
            else:
                inp = self._get("F", s, mb, mp[s - 1], self.xs[mb], label).detach().requires_grad_(True)
            t0 = _now()
            with self.memory.saving(s, mb, mod.parameters()):
                out = mod(inp)
            if s == self.S - 1:
                out = loss_fn(out, self.ys[mb])
            else:
                outgoing = ("F", s + 1, mb, mp[s + 1], out.detach())
            self.saved[(s, mb)] = (inp, out, None)
        else:
            self._check_order(kind, s, mb, label)
            inp, out, grad = self.saved[(s, mb)]
            if grad is None and s < self.S - 1 and kind in ("B", "I"):
                grad = self._get("B", s, mb, mp[s + 1], self.xs[mb], label)
            t0 = _now()
            if kind == "B":
                torch.autograd.backward(out, grad)
                del self.saved[(s, mb)]
            elif kind == "I":
                self.saved[(s, mb)] = (inp, out, grad)
                if s > 0:
                    (dx,) = torch.autograd.grad(out, inp, grad, retain_graph=True)
                    inp.grad = dx
            else:  # W: the weight gradients, accumulated into .grad
                params = list(mod.parameters())
                dws = torch.autograd.grad(out, params, grad)
                for prm, dw in zip(params, dws):
                    prm.grad = dw if prm.grad is None else prm.grad + dw
                del self.saved[(s, mb)]
            if kind in ("B", "I") and s > 0:
                outgoing = ("B", s - 1, mb, mp[s - 1], inp.grad.detach())
        # the result leaves only once the op has lasted its cost: sending it before the sleep
        # would let the consumer start while its producer still "computes" (a non-causal timeline)
        sleep_remaining(t0, self.job.durations[kind][s])
        if self.events is not None:
            self.events.append(Event(kind, s, mb, t0, _now()))
        if outgoing is not None:
            self._put(*outgoing)

    def _check_order(self, kind: str, s: int, mb: int, label: str) -> None:
        # a backward needs what its forward saved on this rank, and a W the output gradient its I
        # received: one line naming the ops, as PyTorch's runtime names an action run too early
        if (s, mb) not in self.saved:
            raise RuntimeError(
                f"rank {self.rank} runs {label} before {s}F{mb}, its forward on this rank (or after a {s}B{mb} or "
                f"{s}W{mb} that already released it): the two-pipe runner, like PyTorch's runtime, needs each "
                "backward after its forward"
            )
        if kind == "W" and s < self.S - 1 and self.saved[(s, mb)][2] is None:
            raise RuntimeError(
                f"rank {self.rank} runs {label} before {s}I{mb}: a weight gradient needs the output gradient "
                "its input-gradient op received"
            )

    def reduce_replicas(self) -> None:
        # sum each stage's two replicas' gradients, then divide by m (as REDUCE_GRAD does)
        done: list[tuple[int, int, int, int]] = []  # (stage, peer, start ns, end ns)
        delay_ns = round(2 * self.job.link_delay * 1e9)
        for s in range(self.S):
            devs = (self.maps[0][s], self.maps[1][s])
            if self.rank not in devs:
                continue
            span = annotate(f"{s}REDUCE_GRAD", self.profiling)  # PP:<s>REDUCE_GRAD, as PyTorch's runtime names it
            span.__enter__()
            t0 = _now()
            set_status(f"all-reduce of stage {s}'s replica gradients")
            end = 0
            if devs[0] == devs[1]:
                flats = [_flat(self.mods[(pipe, s)]) for pipe in (0, 1)]
                total = flats[0] + flats[1]
                peer = self.rank
            else:
                pipe = 0 if devs[0] == self.rank else 1
                peer = devs[1 - pipe]
                mine = _flat(self.mods[(pipe, s)])
                theirs = torch.empty_like(mine)
                tag = self._tag(2, s, 0)
                work = dist.isend(mine, dst=peer, tag=tag)
                dist.recv(theirs, src=peer, tag=tag)
                assert work is not None  # None only for a rank outside the group: all are in the default one
                work.wait()
                if delay_ns:
                    # with a link delay, a ring all-reduce of two replicas crosses the link twice
                    # (2(n-1) steps, what the prediction charges) once both replicas are ready
                    sent, theirs_at = stamp(), torch.zeros(1, dtype=torch.float64)
                    ack = dist.isend(sent, dst=peer, tag=self._stamp_tag(tag))
                    dist.recv(theirs_at, src=peer, tag=self._stamp_tag(tag))
                    assert ack is not None
                    ack.wait()
                    end = max(int(sent[0].item()), int(theirs_at[0].item())) + delay_ns
                total = mine + theirs
            for pipe in (0, 1):
                if self.maps[pipe][s] == self.rank:
                    _unflat(self.mods[(pipe, s)], total / self.m)
            done.append((s, peer, t0, max(end, _now())))
            span.__exit__(None, None, None)
        # the stages' all-reduces run side by side, as the model's do: one wait for the last
        left = max((e for *_, e in done), default=0) - _now()
        if left > 0:
            time.sleep(left / 1e9)
        if self.events is not None:
            self.events += [Event("ALLREDUCE", s, peer, t0, end) for s, peer, t0, end in done]


def _flat(mod: Any) -> Any:
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in mod.parameters()])


def _unflat(mod: Any, flat: Any) -> None:
    k = 0
    for p in mod.parameters():
        n = p.numel()
        p.grad = flat[k : k + n].reshape(p.shape).clone()
        k += n


def run_two_pipe(rank: int, world_size: int, job: Job) -> RankResult:
    """Run ``job`` (a two-pipe schedule) on this rank: warm-up, then measured steps between
    barriers; return events, step bounds and both replicas' gradients. Runs inside a worker;
    :func:`ppverify.measure.dispatch.run_jobs` calls it.

    Example:
        >>> from ppverify.measure import measure, build
        >>> measure(build("chimera", p=2, m=4)).runner  # doctest: +SKIP
        'two-pipe'
    """
    sched = job.schedule
    held = sched.placement.stages_on(rank)
    mods = {(pipe, s): build_stage_module(job.spec, s) for pipe, s in held}
    x, y = make_batch(job.spec, sched.m)
    program = [a for a in sched.programs[rank] if a is not None]
    events: list[list[Event]] = []
    begins: list[int] = []
    ends: list[int] = []
    saved: list[list] = []
    prof = start_profiler(job.warmup, job.steps, job.profile, rank) if job.profile else None
    for step in range(job.warmup + job.steps):
        measured = step >= job.warmup
        for mod in mods.values():
            mod.zero_grad(set_to_none=True)
        runner = _Runner(rank, job, mods, x, y)
        runner.events = [] if (measured and job.record) else None
        runner.memory.events = [] if (measured and job.record) else None
        runner.profiling = prof is not None and measured
        set_status(f"barrier before step {step}")
        dist.barrier()
        t0 = _now()
        for action in program:
            if isinstance(action, Op):
                set_status(str(action))
                with annotate(str(action), runner.profiling):
                    runner.run_op(action)
            elif isinstance(action, Overlap):
                set_status(str(action))
                for op in action.ops:  # one range per op: they run one after the other here
                    with annotate(str(op), runner.profiling):
                        runner.run_op(op)
            elif isinstance(action, Comm):
                continue  # transfers follow the ops; explicit SEND/RECV need no action here
        set_status("end of step (waiting for posted sends)")
        for w in runner.sends:
            w.wait()
        runner.reduce_replicas()
        t1 = _now()
        profiler_step(prof, last=step == job.warmup + job.steps - 1)
        if measured:
            begins.append(t0)
            ends.append(t1)
            events.append(runner.events or [])
            saved.append(runner.memory.take())
    if prof is not None:
        prof.stop()
    grads = {
        key: {n: p.grad.detach().numpy().copy() if p.grad is not None else None for n, p in mod.named_parameters()}
        for key, mod in mods.items()
    }
    set_status("barrier after the last step")
    dist.barrier()
    return RankResult(events, begins, ends, grads, info={"memory": saved})
