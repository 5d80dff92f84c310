"""Building blocks: a family defined by the passes of one microbatch, repeated at an interval.

Qi, Wan, Amar, Lin, *Pipeline Parallelism with Controllable Memory* (NeurIPS 2024, arXiv
2405.15362) describe a schedule by its *building block*: every pass of one microbatch, stage by
stage, with its start offset and length in the block's own time unit. Microbatch ``k`` runs the
block shifted by ``k * interval``. The repetition is valid when, on every device, the passes of the
block never overlap modulo the interval (no *collision*); each device then runs its passes in the
order of their start times. Ops of microbatches ``>= m`` are left out, and the idle time the
repetition leaves at both ends is *squeezed* out by the program-order timing every ppverify level
uses (an op starts once its device is free and its inputs are there), which never reorders a
device's passes. :func:`squeeze` also moves later passes into the warm-up's idle slots, as Qi et
al. reorder the warm-up (ZB-V needs it: :func:`zbv_from_block`).

A device runs its ops one at a time, an ``F`` allocates its stage's activations at its start and
the ``B`` (or ``W``) frees them at its end, so a device's peak memory depends on its order alone:
:func:`block_peaks` replays it. Squeezing never lengthens the step: the block's own start times
are a valid timing of the same order at the block's lengths, so the repetition's span
(:func:`block_span`) bounds the squeezed makespan from above.

Example:
    >>> from ppverify.core.placement import linear
    >>> blk = Block.of(linear(2), interval=3, F=(0, 1), B=(4, 2), lengths={"F": 1, "B": 2})
    >>> [str(o) for o in repeat(blk, 3).programs[0]]
    ['0F0', '0F1', '0B0', '0F2', '0B1', '0B2']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import ParameterError
from ..core.ops import B, F, I, Op, W
from ..core.placement import Placement, linear, v_shape
from ..core.schedule import Schedule


@dataclass(frozen=True)
class BlockOp:
    """One pass of the block: ``kind`` at ``stage``, starting at ``offset``, lasting ``length``.

    Example:
        >>> BlockOp("F", 0, 0, 1)
        BlockOp(kind='F', stage=0, offset=0, length=1)
    """

    kind: str
    stage: int
    offset: int
    length: int = 1


@dataclass(frozen=True)
class Block:
    """A building block: the passes of one microbatch on a one-pipe placement, and the interval
    between consecutive microbatches. Built through :meth:`of`, which checks it.

    Example:
        >>> from ppverify.core.placement import linear
        >>> Block.of(linear(1), interval=2, F=(0,), B=(1,)).interval
        2
    """

    placement: Placement
    ops: tuple[BlockOp, ...]
    interval: int
    name: str = "block"

    @staticmethod
    def of(
        placement: Placement,
        interval: int,
        F: Sequence[int],
        B: Sequence[int] | None = None,
        I: Sequence[int] | None = None,
        W: Sequence[int] | None = None,
        lengths: Mapping[str, int] | None = None,
        name: str = "block",
    ) -> Block:
        """A block from per-stage offsets: ``F[s]`` is stage s's forward offset, and either ``B``
        (a full backward) or ``I`` and ``W`` (a split one). ``lengths`` gives each kind's length
        (1 when not given). Raises :class:`ParameterError` naming the pass and the rule broken:
        a pass before its input (the previous stage's forward, the next stage's gradient, its own
        ``I`` for a ``W``) has ended, or two passes of one device colliding modulo the interval.

        Example:
            >>> from ppverify.core.placement import linear
            >>> Block.of(linear(2), interval=2, F=(0, 1), B=(4, 3))
            Traceback (most recent call last):
            ...
            ppverify.core.errors.ParameterError: parameter block=block: 0F (offset 0) and 0B (offset 4) collide on device 0 modulo the interval 2
        """
        S = placement.num_stages
        if placement.num_pipes != 1:
            raise ParameterError("block", name, "a building block needs a one-pipe placement")
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ParameterError("interval", interval, "must be an integer >= 1")
        if (B is None) == (I is None) or (I is None) != (W is None):
            raise ParameterError("block", name, "give the offsets of B, or of both I and W")
        length = {"F": 1, "B": 1, "I": 1, "W": 1, **(lengths or {})}
        ops = []
        for kind, offs in (("F", F), ("B", B), ("I", I), ("W", W)):
            if offs is None:
                continue
            if len(offs) != S:
                raise ParameterError(kind, list(offs), f"needs one offset per stage ({S})")
            ops += [BlockOp(kind, s, int(o), int(length[kind])) for s, o in enumerate(offs)]
        blk = Block(placement, tuple(ops), interval, name)
        blk.check()
        return blk

    def offset(self, kind: str, stage: int) -> int:
        """Start offset of ``kind`` at ``stage``."""
        return self._by_key()[(kind, stage)].offset

    def end(self, kind: str, stage: int) -> int:
        """End offset of ``kind`` at ``stage``."""
        o = self._by_key()[(kind, stage)]
        return o.offset + o.length

    def _by_key(self) -> dict[tuple[str, int], BlockOp]:
        return {(o.kind, o.stage): o for o in self.ops}

    @property
    def split(self) -> bool:
        """True when the backward is split into ``I`` and ``W``."""
        return any(o.kind == I for o in self.ops)

    def check(self) -> None:
        """Raise :class:`ParameterError` unless every pass starts after its inputs end and no two
        passes of a device collide modulo the interval (see :meth:`of`)."""
        S = self.placement.num_stages
        grad = I if self.split else B
        need: list[tuple[tuple[str, int], tuple[str, int]]] = []
        for s in range(S):
            if s:
                need.append(((F, s), (F, s - 1)))
            need.append(((grad, s), (grad, s + 1) if s < S - 1 else (F, s)))
            if self.split:
                need.append(((W, s), (I, s)))
        for (k, s), (k2, s2) in need:
            if self.offset(k, s) < self.end(k2, s2):
                raise ParameterError(
                    "block",
                    self.name,
                    f"{s}{k} starts at {self.offset(k, s)}, before its input {s2}{k2} ends ({self.end(k2, s2)})",
                )
        T = self.interval
        by_dev: dict[int, list[BlockOp]] = {}
        for o in self.ops:
            if o.length < 1 or o.length > T:
                raise ParameterError("block", self.name, f"{o.stage}{o.kind} length {o.length} not in 1..{T}")
            by_dev.setdefault(self.placement.device(0, o.stage), []).append(o)
        for d, ops in sorted(by_dev.items()):
            for i, a in enumerate(ops):
                for b in ops[i + 1 :]:
                    if (b.offset - a.offset) % T < a.length or (a.offset - b.offset) % T < b.length:
                        raise ParameterError(
                            "block",
                            self.name,
                            f"{a.stage}{a.kind} (offset {a.offset}) and {b.stage}{b.kind} (offset {b.offset}) "
                            f"collide on device {d} modulo the interval {T}",
                        )


def repeat(block: Block, m: int, family: str | None = None, params: Mapping[str, Any] | None = None) -> Schedule:
    """The schedule of ``m`` microbatches: microbatch k runs the block shifted by ``k * interval``;
    each device runs its passes in start order (no two start together: the block has no
    collision).

    Example:
        >>> [str(o) for o in repeat(one_f_one_b_block(3), 3).programs[2]]
        ['2F0', '2B0', '2F1', '2B1', '2F2', '2B2']
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ParameterError("m", m, "must be an integer >= 1")
    pl, T = block.placement, block.interval
    timed: list[list[tuple[int, Op]]] = [[] for _ in range(pl.p)]
    for o in block.ops:
        d = pl.device(0, o.stage)
        timed[d] += [(o.offset + k * T, Op(o.kind, o.stage, k)) for k in range(m)]
    programs = tuple(tuple(op for _, op in sorted(prog)) for prog in timed)
    name = family or block.name
    return Schedule(pl, m, programs, (0,) * m, name, dict(params) if params is not None else {"p": pl.p, "m": m})


def block_span(block: Block, m: int) -> int:
    """End of the last pass of the unsqueezed repetition of ``m`` microbatches, in block units:
    an upper bound on the squeezed makespan at the block's lengths.

    Example:
        >>> block_span(one_f_one_b_block(4), 8)
        33
    """
    return max(o.offset + o.length for o in block.ops) + (m - 1) * block.interval


def block_peaks(block: Block, m: int) -> tuple[float, ...]:
    """Each device's peak activations (one microbatch on a whole device share counts 1) when ``m``
    microbatches repeat the block: its passes in start order, an ``F`` holding ``p/S`` from its
    start until the ``B`` or ``W`` of the same stage and microbatch ends.

    Example:
        >>> block_peaks(one_f_one_b_block(4), 8)
        (4.0, 3.0, 2.0, 1.0)
    """
    sched = repeat(block, m)
    share = block.placement.share_per_stage
    free = W if block.split else B
    peaks = []
    for prog in sched.programs:
        held = peak = 0
        for op in prog:
            if type(op) is Op:
                held += op.kind == F
                peak = max(peak, held)
                held -= op.kind == free
        peaks.append(float(peak * share))
    return tuple(peaks)


def one_f_one_b_block(p: int) -> Block:
    """1F1B's block (``F`` = 1, ``B`` = 2, interval 3): forwards down the stages one after
    another, the backward chain starting as the last forward ends. Repeated, it is ``1f1b`` op for
    op (tests).

    Example:
        >>> one_f_one_b_block(2).ops[2:]
        (BlockOp(kind='B', stage=0, offset=4, length=2), BlockOp(kind='B', stage=1, offset=2, length=2))
    """
    return Block.of(
        linear(p),
        3,
        F=range(p),
        B=[p + 2 * (p - 1 - s) for s in range(p)],
        lengths={F: 1, B: 2},
        name="1f1b",
    )


def zb_h1_block(p: int) -> Block:
    """ZB-H1's block (``F = I = W = 1``, interval 3): 1F1B's block with the backward split, ``I``
    in the first slot of the backward and ``W`` of stage s postponed to ``3p - 1 + s`` (every ``W``
    lands in the slot its device has free modulo 3). Repeated, it is ``zb-h1`` op for op (tests).

    Example:
        >>> [o.offset for o in zb_h1_block(2).ops if o.kind == "W"]
        [5, 6]
    """
    return Block.of(
        linear(p),
        3,
        F=range(p),
        I=[3 * p - 2 - 2 * s for s in range(p)],
        W=[3 * p - 1 + s for s in range(p)],
        name="zb-h1",
    )


def v_block(p: int, w_delay: int = 0, name: str = "v-block", i_delay: int = 0) -> Block:
    """A V-placement block at ``F = I = W = 1`` per chunk pass (half a device share), interval 6.

    Forwards run down the V one after another (``F[s] = s``); the input-gradient chain starts at
    ``c``, the least value ``>= 2p`` that is ``2`` modulo 6, plus ``6 * i_delay``, and climbs back
    one pass at a time (``I[s] = c + 2p - 1 - s``); ``W[s] = I[s] + 2 + 6 * w_delay``. Modulo 6,
    device d's chunk-0 passes sit at ``d, d+2, d+4`` (F, I of the other chunk, W) and its chunk-1
    passes at ``2p-1-d`` plus ``0, 2, 4``: odd and even residues, so no collision for any p.

    Example:
        >>> blk = v_block(2)
        >>> [(o.kind, o.stage, o.offset) for o in blk.ops if o.stage == 0]
        [('F', 0, 0), ('I', 0, 11), ('W', 0, 13)]
        >>> [o.offset for o in v_block(2, i_delay=1).ops if o.stage == 0]
        [0, 17, 19]
    """
    if isinstance(w_delay, bool) or not isinstance(w_delay, int) or w_delay < 0:
        raise ParameterError("w_delay", w_delay, "must be an integer >= 0")
    if isinstance(i_delay, bool) or not isinstance(i_delay, int) or i_delay < 0:
        raise ParameterError("i_delay", i_delay, "must be an integer >= 0")
    S = 2 * p
    c = 2 * p + (2 - 2 * p) % 6 + 6 * i_delay
    i_off = [c + S - 1 - s for s in range(S)]
    return Block.of(v_shape(p), 6, F=range(S), I=i_off, W=[o + 2 + 6 * w_delay for o in i_off], name=name)


def squeeze(block: Block, m: int, build: int = 0, family: str | None = None, defer_w: bool = False) -> Schedule:
    """The repetition with its warm-up bubbles squeezed out as Qi et al. do: every pass runs as
    early as its inputs and its device allow, at the block's lengths, each stage keeping the
    block's order of its own passes; a free device runs the ready pass that starts first in the
    block. In the steady state nothing is ready early, so the order is :func:`repeat`'s; in the
    warm-up a device runs passes of later microbatches (a first-chunk forward) in the slots the
    repetition leaves idle, never more of them than the block holds in flight on that stage.
    Built for ``max(m, build)`` microbatches, then the ops of microbatches ``>= m`` are dropped
    (as PyTorch's ZB-V builds for at least ``2p - 1``). ``defer_w`` reorders the cool-down as the
    zero-bubble schedules do: once a device has run all its forwards, a ready ``I`` (which the
    next device waits for) goes before any ``W``, whose stage order it may then pass.

    Example:
        >>> [str(o) for o in squeeze(zbv_block(2), 4).programs[0]][:6]
        ['0F0', '0F1', '0F2', '3F0', '3I0', '3W0']
        >>> [str(o) for o in repeat(zbv_block(2), 4).programs[0]][:6]
        ['0F0', '0F1', '3F0', '3I0', '3W0', '0F2']
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ParameterError("m", m, "must be an integer >= 1")
    pl, T, n = block.placement, block.interval, max(m, build)
    S = pl.num_stages
    grad = I if block.split else B
    queues: dict[int, list[tuple[int, BlockOp, int]]] = {}
    for o in block.ops:
        queues.setdefault(o.stage, []).extend((o.offset + k * T, o, k) for k in range(n))
    for q in queues.values():
        q.sort(key=lambda x: x[0], reverse=True)  # pop() takes the earliest
    stages_of: dict[int, list[int]] = {}
    for s in range(S):
        stages_of.setdefault(pl.device(0, s), []).append(s)
    end: dict[tuple[str, int, int], int] = {}

    def input_of(o: BlockOp, k: int) -> tuple[str, int, int] | None:
        if o.kind == F:
            return (F, o.stage - 1, k) if o.stage else None
        if o.kind == W:
            return (I, o.stage, k)
        return (grad, o.stage + 1, k) if o.stage < S - 1 else (F, o.stage, k)

    programs: list[list[Op]] = [[] for _ in range(pl.p)]
    free = [0] * pl.p
    t, left = 0, sum(len(q) for q in queues.values())
    while left:
        for d in range(pl.p):
            if free[d] > t:
                continue
            ready = []
            cool = defer_w and not any(x[1].kind == F for s in stages_of.get(d, []) for x in queues.get(s, []))
            for s in stages_of.get(d, []):
                q = queues.get(s, [])
                heads = q[-1:] if not cool else [x for x in q if x[1].kind != W][-1:] + q[-1:]
                for x in heads:
                    dep = input_of(x[1], x[2])
                    if dep is None or end.get(dep, t + 1) <= t:
                        ready.append(x)
            if ready:
                x = min(ready, key=lambda x: (cool and x[1].kind == W, x[0]))
                _, o, k = x
                queues[o.stage].remove(x)
                end[(o.kind, o.stage, k)] = free[d] = t + o.length
                programs[d].append(Op(o.kind, o.stage, k))
                left -= 1
        t += 1
    kept = tuple(tuple(op for op in prog if op.mb < m) for prog in programs)
    return Schedule(pl, m, kept, (0,) * m, family or block.name, {"p": pl.p, "m": m})


def zbv_block(p: int) -> Block:
    """ZB-V's block (V placement, ``F = I = W = 1`` per chunk pass, interval 6): device d runs
    ``F, I, W`` of its first chunk then of its second in every interval. The forwards run down the
    first leg without a gap (``F[s] = s``) and the input gradients up the second
    (``I[s] = 8p - 3 - s`` for ``s >= p``); the second leg's forwards and the first leg's input
    gradients step 5 per stage (``F[s] = 5s - 4p + 2``, ``I[s] = 12p - 5 - 5s``), each ``W`` one
    after its ``I``. Squeezed and with ZB-V's cool-down (:func:`zbv_cooldown`), it is ``zbv`` op
    for op (tests).

    Example:
        >>> [(o.kind, o.stage, o.offset) for o in zbv_block(2).ops if o.stage in (0, 3)]
        [('F', 0, 0), ('F', 3, 9), ('I', 0, 19), ('I', 3, 10), ('W', 0, 20), ('W', 3, 11)]
    """
    S = 2 * p
    f_off = [s if s < p else 5 * s - 4 * p + 2 for s in range(S)]
    i_off = [12 * p - 5 - 5 * s if s < p else 8 * p - 3 - s for s in range(S)]
    return Block.of(v_shape(p), 6, F=f_off, I=i_off, W=[o + 1 for o in i_off], name="zbv")


def zbv_cooldown(schedule: Schedule) -> Schedule:
    """ZB-V's cool-down (Qi et al.; PyTorch's ``ScheduleZBVZeroBubble``): on a V schedule whose
    devices end each interval with the second chunk's ``F, I, W``, the passes after a device's
    last such triple are reordered so that input gradients, which the next device waits for, go
    first: device d runs ``d`` pairs (first-chunk ``I``, second-chunk ``I``), then ``p - d`` pairs
    (first-chunk ``I``, its oldest ``W``), then the remaining second-chunk and first-chunk ``W``'s.

    Example:
        >>> sq = squeeze(zbv_block(2), 3)
        >>> [str(o) for o in sq.programs[1][-6:]], [str(o) for o in zbv_cooldown(sq).programs[1][-6:]]
        (['1I1', '1W1', '2I2', '2W2', '1I2', '1W2'], ['1I1', '2I2', '1I2', '1W1', '2W2', '1W2'])
    """
    pl = schedule.placement
    p = pl.p
    programs = []
    for d, actions in enumerate(schedule.programs):
        prog = [op for op in actions if isinstance(op, Op)]  # a block's schedule holds compute ops only
        c0, c1 = d, 2 * p - 1 - d
        last = max((i for i, op in enumerate(prog) if op.kind == F), default=-1)
        head: list[Op] = prog[: last + 3]
        rest = prog[last + 3 :]
        pick = {(k, s): [op for op in rest if op.kind == k and op.stage == s] for k in (I, W) for s in (c0, c1)}
        for _ in range(d):
            head += pick[(I, c0)][:1] + pick[(I, c1)][:1]
            pick[(I, c0)], pick[(I, c1)] = pick[(I, c0)][1:], pick[(I, c1)][1:]
        for _ in range(p - d):
            head += pick[(I, c0)][:1] + pick[(W, c0)][:1]
            pick[(I, c0)], pick[(W, c0)] = pick[(I, c0)][1:], pick[(W, c0)][1:]
        head += pick[(I, c0)] + pick[(I, c1)] + pick[(W, c1)] + pick[(W, c0)]
        programs.append(tuple(head))
    return replace(schedule, programs=tuple(programs))


def zbv_from_block(p: int, m: int) -> Schedule:
    """ZB-V from its building block: :func:`zbv_block` squeezed (built for at least ``2p - 1``
    microbatches, as PyTorch does) and given ZB-V's cool-down; equal to ``zbv`` op for op.

    Example:
        >>> from ppverify.schedules import build
        >>> zbv_from_block(3, 7).programs == build("zbv", p=3, m=7).programs
        True
    """
    n = max(m, 2 * p - 1)
    full = zbv_cooldown(squeeze(zbv_block(p), n, family="zbv"))
    programs = tuple(tuple(op for op in prog if isinstance(op, Op) and op.mb < m) for prog in full.programs)
    return Schedule(full.placement, m, programs, (0,) * m, "zbv", {"p": p, "m": m})
