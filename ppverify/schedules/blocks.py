"""Building blocks: a family defined by the passes of one microbatch, repeated at an interval.

Qi, Wan, Amar, Lin, *Pipeline Parallelism with Controllable Memory* (NeurIPS 2024, arXiv
2405.15362) describe a schedule by its *building block*: every pass of one microbatch, stage by
stage, with its start offset and length in the block's own time unit. Microbatch ``k`` runs the
block shifted by ``k * interval``. The repetition is valid when, on every device, the passes of the
block never overlap modulo the interval (no *collision*); each device then runs its passes in the
order of their start times. Ops of microbatches ``>= m`` are left out, and the idle time the
repetition leaves at both ends is *squeezed* out by the program-order timing every ppverify level
uses (an op starts once its device is free and its inputs are there), which never reorders a
device's passes.

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
from dataclasses import dataclass
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


def v_block(p: int, w_delay: int = 0, name: str = "v-block") -> Block:
    """A V-placement block at ``F = I = W = 1`` per chunk pass (half a device share), interval 6.

    Forwards run down the V one after another (``F[s] = s``); the input-gradient chain starts at
    ``c``, the least value ``>= 2p`` that is ``2`` modulo 6, and climbs back one pass at a time
    (``I[s] = c + 2p - 1 - s``); ``W[s] = I[s] + 2 + 6 * w_delay``. Modulo 6, device d's chunk-0
    passes sit at ``d, d+2, d+4`` (F, I of the other chunk, W) and its chunk-1 passes at
    ``2p-1-d`` plus ``0, 2, 4``: odd and even residues, so no collision for any p.

    Example:
        >>> blk = v_block(2)
        >>> [(o.kind, o.stage, o.offset) for o in blk.ops if o.stage == 0]
        [('F', 0, 0), ('I', 0, 11), ('W', 0, 13)]
    """
    if isinstance(w_delay, bool) or not isinstance(w_delay, int) or w_delay < 0:
        raise ParameterError("w_delay", w_delay, "must be an integer >= 0")
    S = 2 * p
    c = 2 * p + (2 - 2 * p) % 6
    i_off = [c + S - 1 - s for s in range(S)]
    return Block.of(v_shape(p), 6, F=range(S), I=i_off, W=[o + 2 + 6 * w_delay for o in i_off], name=name)
