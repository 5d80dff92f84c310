"""Squeezing a repeated building block (:mod:`ppverify.schedules.blocks`): the warm-up's idle
slots filled with later passes, as Qi et al. (NeurIPS 2024, arXiv 2405.15362) reorder ZB-V's and
V-Half's warm-up, without raising any device's peak (:func:`~ppverify.schedules.blocks.block_peaks`).

Example:
    >>> from ppverify.schedules.blocks import one_f_one_b_block, repeat
    >>> squeeze(one_f_one_b_block(2), 3).programs == repeat(one_f_one_b_block(2), 3).programs
    True
"""

from __future__ import annotations

from itertools import takewhile

from ..core.errors import ParameterError
from ..core.ops import B, F, I, Op, W
from ..core.schedule import Schedule
from .blocks import Block, BlockOp, held_peaks
from .registry import check_int


def squeeze(block: Block, m: int, build: int = 0, family: str | None = None, defer_w: bool = False) -> Schedule:
    """The repetition with its warm-up bubbles squeezed out as Qi et al. do: every pass runs as
    early as its inputs and its device allow, at the block's lengths, each stage keeping the
    block's order of its own passes; a free device runs the ready pass that starts first in the
    block. In the steady state nothing is ready early, so the order is :func:`repeat`'s; in the
    warm-up a device runs passes of later microbatches (a first-chunk forward) in the slots the
    repetition leaves idle, but only a forward after which the passes left, run in the block's
    order, keep the device within :func:`block_peaks` (of the microbatches built): squeezing
    never raises a device's peak.
    Built for ``max(m, build)`` microbatches, then the ops of microbatches ``>= m`` are dropped
    (as PyTorch's ZB-V builds for at least ``2p - 1``). ``defer_w`` reorders the cool-down as the
    zero-bubble schedules do: once a device has run all its forwards, a ready ``I`` (which the
    next device waits for) goes before any ``W``, whose stage order it may then pass.

    Example:
        >>> from ppverify.schedules.block_zbv import zbv_block
        >>> from ppverify.schedules.blocks import repeat
        >>> [str(o) for o in squeeze(zbv_block(2), 4).programs[0]][:6]
        ['0F0', '0F1', '0F2', '3F0', '3I0', '3W0']
        >>> [str(o) for o in repeat(zbv_block(2), 4).programs[0]][:6]
        ['0F0', '0F1', '3F0', '3I0', '3W0', '0F2']
    """
    m = check_int("m", m, 1)
    build = check_int("build", build, 0)
    pl, T, n = block.placement, block.interval, max(m, build)
    S = pl.num_stages
    grad = I if block.split else B
    # per stage, its W ops and its other ops, each sorted latest first (pop() takes the earliest);
    # the insertion index breaks ties as one list sorted by time would (the later-inserted first),
    # and splitting keeps every pick a pop: one sorted list cost O(n) a pick (m = 5000 took 10 s)
    Item = tuple[int, int, BlockOp, int]  # (time, insertion index, op, microbatch)
    queues: dict[int, tuple[list[Item], list[Item]]] = {}
    forwards_left: dict[int, int] = {}
    stages_of: dict[int, list[int]] = {}
    for s in range(S):
        stages_of.setdefault(pl.device(0, s), []).append(s)
    index = 0
    for o in block.ops:
        others, ws = queues.setdefault(o.stage, ([], []))
        for k in range(n):
            (ws if o.kind == W else others).append((o.offset + k * T, index, o, k))
            index += 1
        if o.kind == F:
            d = pl.device(0, o.stage)
            forwards_left[d] = forwards_left.get(d, 0) + n
    for pair in queues.values():
        for q in pair:
            q.sort(key=lambda x: (x[0], -x[1]), reverse=True)
    end: dict[tuple[str, int, int], int] = {}

    def input_of(o: BlockOp, k: int) -> tuple[str, int, int] | None:
        if o.kind == F:
            return (F, o.stage - 1, k) if o.stage else None
        if o.kind == W:
            return (I, o.stage, k)
        return (grad, o.stage + 1, k) if o.stage < S - 1 else (F, o.stage, k)

    def earliest(pair: tuple[list[Item], list[Item]]) -> list[Item]:
        tails = [q[-1] for q in pair if q]
        return [min(tails, key=lambda x: (x[0], -x[1]))] if tails else []

    cap, held = held_peaks(block, n), [0] * pl.p
    frees = W if block.split else B

    def fits(d: int, x: Item) -> bool:
        # F x starts now, ahead of the device's remaining passes the block starts before it: in
        # repeat's order from there on (x moved up) the device must stay within repeat's own peak,
        # so that order stays open and a device never fills up with activations it cannot free
        # (a V device running two first-chunk forwards before its second chunk's first one)
        before = sorted(
            y for s in stages_of[d] for q in queues[s] for y in takewhile(lambda y: y[0] < x[0], reversed(q))
        )
        run = held[d] + 1
        if run > cap[d]:
            return False
        for _, _, o, _ in before:
            run += o.kind == F
            if run > cap[d]:
                return False
            run -= o.kind == frees
        return True

    programs: list[list[Op]] = [[] for _ in range(pl.p)]
    free = [0] * pl.p
    t, left = 0, sum(len(q) for pair in queues.values() for q in pair)
    while left:
        started = left
        for d in range(pl.p):
            if free[d] > t:
                continue
            ready = []
            cool = defer_w and not forwards_left.get(d, 0)
            for s in stages_of.get(d, []):
                pair = queues.get(s, ([], []))
                heads = earliest(pair) if not cool else pair[0][-1:] + earliest(pair)
                for x in heads:
                    dep = input_of(x[2], x[3])
                    if (dep is None or end.get(dep, t + 1) <= t) and (x[2].kind != F or fits(d, x)):
                        ready.append(x)
            if ready:
                x = min(ready, key=lambda x: (cool and x[2].kind == W, x[0]))
                _, _, o, k = x
                queues[o.stage][1 if o.kind == W else 0].pop()  # x is the tail of its own list
                if o.kind == F:
                    forwards_left[d] -= 1
                held[d] += (o.kind == F) - (o.kind == frees)  # a free ends before the device's next start
                end[(o.kind, o.stage, k)] = free[d] = t + o.length
                programs[d].append(Op(o.kind, o.stage, k))
                left -= 1
        if left and started == left and all(f <= t for f in free):
            # all devices idle, every pass ended, none ready: nothing would change; cannot happen
            # while repeat's order stays open (see fits), a guard against looping forever
            raise ParameterError("block", block.name, "squeeze stalled: no pass can start (a ppverify bug)")
        t += 1
    kept = tuple(tuple(op for op in prog if op.mb < m) for prog in programs)
    return Schedule(pl, m, kept, (0,) * m, family or block.name, {"p": pl.p, "m": m})
