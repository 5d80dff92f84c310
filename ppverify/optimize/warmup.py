"""The warm-up bound: the first gradient's way back through the pipeline, hop by hop, on devices
that hold one stage each.

Before the first gradient op (I or B) of its stage starts, at ``T_d``, a device can only run
forwards: nothing else has its input yet. With ``O_d`` its first start, ``n_d`` the forwards it
runs before ``T_d`` and ``phi_d`` its idle time in that window, ``T_d - O_d = n_d*tF_d + phi_d``,
where

* ``1 <= n_d <= k_d``: the forwards' activations are all held at ``T_d`` (nothing is freed before
  a gradient op), so at most ``k_d = floor(cap / M_F)`` of them, and the gradient op needs its own
  forward;
* ``O_(d+1) >= O_d + tF_d + cF_d``: the next stage's first forward waits for one of this stage
  and its transfer;
* ``T_d >= T_(d+1) + tG_(d+1) + cG_d``: the first gradient of stage d waits for one of stage d+1.

Together: ``n_d*tF_d + phi_d >= A_d + (T_(d+1) - O_(d+1))`` with ``A_d = tF_d + cF_d + tG_(d+1) +
cG_d``. Unless the forwards a device runs fill the round trip exactly, each hop adds the
remainder to the idle of the device it reaches (``tG + 2c - tF`` per hop when every device runs
two forwards more than the next one), and a device can only absorb it with more forwards, which
its cap limits. Device d's span is at least its work plus ``phi_d``; the makespan at least its
earliest release, that, and its least tail.

Every schedule gives some ``n`` and ``phi`` that satisfy these relations, so the least objective
over all choices is a lower bound. For a target ``Z``, device d may idle ``Z - work_d`` (minus
release and tail for the makespan); from the last stage back, the fewest forwards that keep the
idle within that also give the earliest ``T_d - O_d`` (it is ``max(n_d*tF_d, A_d + T_(d+1) -
O_(d+1))``, increasing in ``n_d``), which only helps the devices before. So ``Z`` is feasible
iff every device finds such an ``n_d <= k_d``, and a binary search finds the least ``Z``.

On the zero-bubble paper's profiled settings at cap 2p·M_F (p=8, m=32: tF=18,513, tI=18,086,
c=626 microseconds) each hop leaves ``tI + 2c - tF = 825``; with 16 forwards at most, device 0
can absorb a hop's remainder only once in seven hops, and the least longest span is the work
plus ``3 * 825 = 2,475``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.ops import B, F, I
from .problem import Instance


@dataclass(frozen=True)
class Warmup:
    """The per-stage terms of the bound (ticks; index = stage, one device per stage)."""

    devices: tuple[int, ...]
    work: tuple[int, ...]
    forward: tuple[int, ...]
    #: ``A_d``: forward, its transfer, the next stage's gradient op and its transfer back
    hop: tuple[int, ...]
    most_forwards: tuple[int, ...]
    #: release and tail added for the makespan (0 for the span)
    extra: tuple[int, ...]


def warmup_terms(inst: Instance, head: list[int] | None, tail: list[int] | None, objective: str) -> Warmup | None:
    """The bound's terms, or None when it does not apply: a device holding several stages (or
    none), two pipes, or a stage whose ops differ in duration between microbatches. ``head`` and
    ``tail`` (:func:`.bounds.heads_tails`) are read for the makespan only.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import heads_tails
        >>> pl = linear(3)
        >>> inst = instance(Problem(pl, 4, CostModel.abstract(pl, F=2, I=3, W=1), FixedDelay(1), split=True))
        >>> warmup_terms(inst, *heads_tails(inst), "span").hop  # tF + c + tI + c; none for the last
        (7, 7, 0)
    """
    dag, pr = inst.dag, inst.problem
    if pr.placement.num_pipes != 1 or len(set(pr.pipes)) != 1:
        return None
    stage_dev: dict[int, int] = {}
    dur: dict[tuple[str, int], set[int]] = {}
    first: dict[tuple[str, int], int] = {}  # (kind, stage) -> an op position
    for d in range(inst.p):
        stages = {dag.ops[i].stage for i in inst.device_ops(d)}
        if len(stages) != 1:
            return None
        stage_dev[stages.pop()] = d
    S = len(stage_dev)
    if sorted(stage_dev) != list(range(S)):
        return None
    for i, op in enumerate(dag.ops):
        dur.setdefault((op.kind, op.stage), set()).add(inst.dur[i])
        first.setdefault((op.kind, op.stage), i)
    if any(len(v) != 1 for v in dur.values()):
        return None
    grad = I if (I, 0) in first else B
    if any((grad, s) not in first or (F, s) not in first for s in range(S)):
        return None

    # the least delay on each kind of edge, over all microbatches (one pass over the edges)
    least: dict[tuple[str, int, str, int], int] = {}
    for j, op in enumerate(dag.ops):
        for k, q in enumerate(dag.pred[j]):
            if q >= 0:
                key = (op.kind, op.stage, dag.ops[q].kind, dag.ops[q].stage)
                least[key] = min(least.get(key, inst.delay[j][k]), inst.delay[j][k])

    def delay(kind: str, stage: int, pred_kind: str, pred_stage: int) -> int:
        return least.get((kind, stage, pred_kind, pred_stage), 0)

    forward = tuple(inst.dur[first[(F, s)]] for s in range(S))
    gradient = tuple(inst.dur[first[(grad, s)]] for s in range(S))
    hop = tuple(
        forward[s] + delay(F, s + 1, F, s) + gradient[s + 1] + delay(grad, s, grad, s + 1) if s + 1 < S else 0
        for s in range(S)
    )
    devices = tuple(stage_dev[s] for s in range(S))
    work = tuple(sum(inst.dur[i] for i in inst.device_ops(d)) for d in devices)
    act = [inst.alloc[first[(F, s)]] for s in range(S)]
    most = tuple(pr.m if inst.cap is None or act[s] == 0 else min(pr.m, inst.cap // act[s]) for s in range(S))
    if objective == "makespan":
        if head is None or tail is None:
            raise ValueError("the makespan's warm-up bound needs the ops' heads and tails")
        extra = tuple(
            min(head[i] for i in inst.device_ops(d)) + min(tail[i] for i in inst.device_ops(d)) for d in devices
        )
    else:
        extra = (0,) * S
    return Warmup(devices, work, forward, hop, most, extra)


def forwards_before_gradient(w: Warmup, target: int) -> list[int] | None:
    """Per stage, the fewest forwards before its first gradient op that keep every device's
    objective within ``target`` (None when some device cannot: the target is below the bound).

    Example:
        >>> w = Warmup((0, 1, 2), (12, 12, 12), (2, 2, 2), (7, 7, 0), (8, 8, 8), (0, 0, 0))
        >>> forwards_before_gradient(w, 13), forwards_before_gradient(w, 12)  # idle 1 / 0 allowed
        ([8, 4, 1], None)
    """
    S = len(w.devices)
    out = [0] * S
    later = 0  # T - O of the next stage's device
    for s in range(S - 1, -1, -1):
        slack = target - w.work[s] - w.extra[s]
        if slack < 0:
            return None
        need = w.hop[s] + later if s + 1 < S else w.forward[s]  # T - O the way back asks for
        # fewest forwards n >= 1 with idle need - n*tF <= slack
        n = max(1, -(-(need - slack) // w.forward[s])) if w.forward[s] > 0 else 1
        if n > w.most_forwards[s]:
            return None
        out[s] = n
        later = max(n * w.forward[s], need)
    return out


def warmup_bound(inst: Instance, head: list[int] | None, tail: list[int] | None, objective: str) -> int:
    """The least objective (ticks) that lets every device meet the warm-up relations (module
    doc); 0 when the bound does not apply.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import heads_tails
        >>> pl = linear(3)  # each hop takes tF + c + tI + c = 7, one forward more than 2*tF
        >>> pr = Problem(pl, 6, CostModel.abstract(pl, F=3, I=2, W=1), FixedDelay(1), split=True, memory_cap=5)
        >>> inst = instance(pr)
        >>> warmup_bound(inst, *heads_tails(inst), "span")  # work 36; device 0: 17 - 5*3 = 2 idle
        38
    """
    w = warmup_terms(inst, head, tail, objective)
    return 0 if w is None else _least_target(w)


def _least_target(w: Warmup) -> int:
    """The least target every device meets (binary search over :func:`forwards_before_gradient`),
    0 when even the largest fails."""
    lo = max(a + b for a, b in zip(w.work, w.extra))
    hi = lo + sum(w.hop) + max(w.forward)  # every device idles less than the whole way back
    if forwards_before_gradient(w, hi) is None:
        return 0  # (a cap below the warm-up's needs: infeasible, reported elsewhere)
    while lo < hi:
        mid = (lo + hi) // 2
        if forwards_before_gradient(w, mid) is None:
            lo = mid + 1
        else:
            hi = mid
    return lo


def warmup_limits(inst: Instance, head: list[int] | None, tail: list[int] | None, objective: str) -> list[int] | None:
    """Per device, the forwards it runs before its first gradient op when every device keeps to
    the warm-up bound (the fewest that do, :func:`forwards_before_gradient`); as open-forward
    limits they give the greedy a warm-up that meets the bound. None when the bound does not apply.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.optimize.problem import Problem, instance
        >>> from ppverify.optimize.bounds import heads_tails
        >>> pl = linear(3)
        >>> inst = instance(Problem(pl, 6, CostModel.abstract(pl, F=3, I=2, W=1), FixedDelay(1), split=True, memory_cap=5))
        >>> warmup_limits(inst, *heads_tails(inst), "span")  # hop 7 = 2*tF + 1: device 1 idles 1 or runs 4
        [5, 3, 1]
    """
    w = warmup_terms(inst, head, tail, objective)
    bound = 0 if w is None else _least_target(w)
    if w is None or not bound:
        return None
    per_stage = forwards_before_gradient(w, bound)
    if per_stage is None:
        return None
    out = [1] * inst.p
    for s, d in enumerate(w.devices):
        out[d] = per_stage[s]
    return out
