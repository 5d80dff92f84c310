"""Building blocks: a family defined by the passes of one microbatch, repeated at an interval.

Qi, Wan, Amar, Lin, *Pipeline Parallelism with Controllable Memory* (NeurIPS 2024, arXiv
2405.15362) describe a schedule by its *building block*: every pass of one microbatch, stage by
stage, with its start offset and length in the block's own time unit. Microbatch ``k`` runs the
block shifted by ``k * interval``. The repetition is valid when, on every device, the passes of the
block never overlap modulo the interval (no *collision*); each device then runs its passes in the
order of their start times. Ops of microbatches ``>= m`` are left out, and the idle time the
repetition leaves at both ends is *squeezed* out by the program-order timing every ppverify level
uses (an op starts once its device is free and its inputs are there), which never reorders a
device's passes. :func:`~ppverify.schedules.squeeze.squeeze` also moves later passes into the warm-up's idle slots, as Qi et
al. reorder the warm-up (ZB-V needs it: :func:`~ppverify.schedules.block_zbv.zbv_from_block`).

A device runs its ops one at a time, an ``F`` allocates its stage's activations at its start and
the ``B`` (or ``W``) frees them at its end, so a device's peak memory depends on its order alone:
:func:`block_peaks` replays it, and :func:`~ppverify.schedules.squeeze.squeeze` moves a forward up only where the device stays
within it. Squeezing never lengthens the step: the block's own start times
are a valid timing of the same order at the block's lengths, so the repetition's span
(:func:`block_span`) bounds the squeezed makespan from above.

Example:
    >>> from ppverify.core.placement import linear
    >>> blk = Block.of(linear(2), interval=3, F=(0, 1), B=(4, 2), lengths={"F": 1, "B": 2})
    >>> [str(o) for o in repeat(blk, 3).programs[0]]
    ['0F0', '0F1', '0B0', '0F2', '0B1', '0B2']
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from ..core.errors import ParameterError
from ..core.ops import B, F, I, Op, W
from ..core.placement import Placement, linear, v_shape
from ..core.schedule import Schedule
from .registry import check_int


def _integer(name: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as an int when it is a whole number (an int, float or fraction, numpy's included;
    not a bool); anything else, or a value below ``minimum``, raises :class:`ParameterError`.
    Offsets, lengths and the interval are whole block units (rounding would build another block
    than the one written), read by this one rule in :meth:`Block.of` and :meth:`Block.check`.

    Example:
        >>> from fractions import Fraction
        >>> _integer("interval", Fraction(3), 1), _integer("interval", 3.0, 1)
        (3, 3)
        >>> _integer("interval", 2.5, 1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter interval=2.5: must be a whole number of block units (an int, float or fraction, numpy's included; not a bool)
    """
    # numpy's integers and floats are registered as Real (a bool is Integral, hence Real, too)
    real = isinstance(value, Real) and not isinstance(value, bool)
    if not real or not math.isfinite(value) or value != int(value):  # int(inf) would raise OverflowError
        raise ParameterError(
            name,
            repr(value) if isinstance(value, str) else value,  # '3', quoted as check_int quotes it
            "must be a whole number of block units (an int, float or fraction, numpy's included; not a bool)",
        )
    if minimum is not None and value < minimum:
        raise ParameterError(name, value, f"must be an integer >= {minimum}")
    return int(value)


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

    def __post_init__(self) -> None:
        self.check()  # a Block built directly, not through :meth:`of`, is checked too
        # numpy's integers (accepted as any integral number) held as ints: the schedule's ops,
        # its JSON and its text then hold plain ints
        ops = tuple(BlockOp(o.kind, int(o.stage), int(o.offset), int(o.length)) for o in self.ops)
        object.__setattr__(self, "ops", ops)
        object.__setattr__(self, "interval", int(self.interval))

    @staticmethod
    def of(
        placement: Placement,
        interval: int,
        F: Iterable[int],
        B: Iterable[int] | None = None,
        I: Iterable[int] | None = None,
        W: Iterable[int] | None = None,
        lengths: Mapping[str, int] | None = None,
        name: str = "block",
    ) -> Block:
        """A block from per-stage offsets: ``F[s]`` is stage s's forward offset, and either ``B``
        (a full backward) or ``I`` and ``W`` (a split one). ``lengths`` gives each kind's length
        (1 when not given). Offsets may be negative (only their differences matter); offsets and
        lengths are whole block units. Raises :class:`ParameterError` naming the pass and the rule
        broken: a pass before its input (the previous stage's forward, the next stage's gradient,
        its own ``I`` for a ``W``) has ended, two passes of one device colliding modulo the
        interval (a device whose passes need more than the interval always has one), a missing or
        fractional offset, or a length for a kind the block does not have.

        Example:
            >>> from ppverify.core.placement import linear
            >>> Block.of(linear(2), interval=2, F=(0, 1), B=(4, 3))
            Traceback (most recent call last):
            ...
            ppverify.core.errors.ParameterError: parameter block=block: 0F (offset 0) and 0B (offset 4) collide on device 0 modulo the interval 2
        """
        if not isinstance(placement, Placement):
            raise ParameterError("placement", placement, "must be a Placement (ppverify.core.placement)")
        S = placement.num_stages
        if F is None:
            raise ParameterError("block", name, "give the offsets of F")
        if (B is None) == (I is None) or (I is None) != (W is None):
            raise ParameterError("block", name, "give the offsets of B, or of both I and W")
        given = {"F": F, "B": B, "I": I, "W": W}  # the arguments shadow the kind names here
        kinds = [k for k, offs in given.items() if offs is not None]
        for k in lengths or {}:
            if k not in kinds:
                raise ParameterError("lengths", k, f"is not a pass of this block (its passes: {', '.join(kinds)})")
        length = {k: _integer(f"length of {k}", (lengths or {}).get(k, 1), 1) for k in kinds}
        ops = []
        for kind in kinds:
            offs = given[kind]
            # a mapping's keys, a set's hash order: neither is the per-stage list it looks like
            if isinstance(offs, (str, bytes, Mapping, set, frozenset)) or not isinstance(offs, Iterable):
                raise ParameterError(kind, offs, f"must be a sequence of one offset per stage ({S}), in stage order")
            offs = list(offs)
            if len(offs) != S:
                raise ParameterError(kind, offs, f"needs one offset per stage ({S})")
            ops += [BlockOp(kind, s, _integer(f"{s}{kind} offset", o), length[kind]) for s, o in enumerate(offs)]
        return Block(placement, tuple(ops), _integer("interval", interval, 1), name)

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
        """Raise :class:`ParameterError` unless the block holds each pass of every stage once,
        every pass starts after its inputs end and no two passes of a device collide modulo the
        interval (see :meth:`of`).

        Example:
            >>> from ppverify.core.placement import linear
            >>> Block(linear(2), (BlockOp("F", 0, 0), BlockOp("B", 0, 1)), 2)
            Traceback (most recent call last):
            ...
            ppverify.core.errors.ParameterError: parameter block=block: stage 1 has no F
        """
        if not isinstance(self.placement, Placement):
            raise ParameterError("placement", self.placement, "must be a Placement (ppverify.core.placement)")
        if self.placement.num_pipes != 1:
            raise ParameterError("block", self.name, "a building block needs a one-pipe placement")
        _integer("interval", self.interval, 1)  # the rule Block.of reads it by (3.0 was taken there only)
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError("name", self.name, "must be a non-empty string")
        S = self.placement.num_stages
        kinds = (F, I, W) if self.split else (F, B)
        seen: set[tuple[str, int]] = set()
        for o in self.ops:
            if (
                o.kind not in kinds
                or isinstance(o.stage, bool)
                or not isinstance(o.stage, Integral)
                or not 0 <= o.stage < S
            ):
                raise ParameterError(
                    "block", self.name, f"pass {o.kind} of stage {o.stage}: kinds {'/'.join(kinds)}, stages 0..{S - 1}"
                )
            _integer(f"{o.stage}{o.kind} offset", o.offset)
            _integer(f"{o.stage}{o.kind} length", o.length, 1)
            if (o.kind, o.stage) in seen:
                raise ParameterError("block", self.name, f"{o.stage}{o.kind} appears twice")
            seen.add((o.kind, o.stage))
        for s in range(S):
            for k in kinds:
                if (k, s) not in seen:
                    raise ParameterError("block", self.name, f"stage {s} has no {k}")
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
            if o.length > T:
                raise ParameterError("block", self.name, f"{o.stage}{o.kind} length {o.length} not in 1..{T}")
            by_dev.setdefault(self.placement.device(0, o.stage), []).append(o)
        for d, ops in sorted(by_dev.items()):
            work = sum(o.length for o in ops)
            if work > T:
                raise ParameterError(
                    "interval",
                    T,
                    f"below the work of device {d} in block {self.name} ({work} units): its passes must collide",
                )
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
    m = check_int("m", m, 1)
    pl, T = block.placement, block.interval
    timed: list[list[tuple[int, Op]]] = [[] for _ in range(pl.p)]
    for o in block.ops:
        d = pl.device(0, o.stage)
        timed[d] += [(o.offset + k * T, Op(o.kind, o.stage, k)) for k in range(m)]
    programs = tuple(tuple(op for _, op in sorted(prog)) for prog in timed)
    name = family or block.name
    return Schedule(pl, m, programs, (0,) * m, name, dict(params) if params is not None else {"p": pl.p, "m": m})


def block_span(block: Block, m: int) -> int:
    """Length of the unsqueezed repetition of ``m`` microbatches, from the first pass's start to
    the last pass's end, in block units: an upper bound on the squeezed makespan at the block's
    lengths (only the offsets' differences count, so a block may start anywhere).

    Example:
        >>> block_span(one_f_one_b_block(4), 8)
        33
    """
    m = check_int("m", m, 1)
    first = min(o.offset for o in block.ops)
    return max(o.offset + o.length for o in block.ops) - first + (m - 1) * block.interval


def block_peaks(block: Block, m: int) -> tuple[float, ...]:
    """Each device's peak activations (one microbatch on a whole device share counts 1) when ``m``
    microbatches repeat the block: its passes in start order, an ``F`` holding ``p/S`` from its
    start until the ``B`` or ``W`` of the same stage and microbatch ends.

    Example:
        >>> block_peaks(one_f_one_b_block(4), 8)
        (4.0, 3.0, 2.0, 1.0)
    """
    m = check_int("m", m, 1)
    share = block.placement.share_per_stage
    return tuple(float(n * share) for n in held_peaks(block, m))


def held_peaks(block: Block, m: int) -> tuple[int, ...]:
    """Each device's most activations held at once (counted in stages' forwards) in
    :func:`repeat`'s order: the cap :func:`~ppverify.schedules.squeeze.squeeze` keeps.

    Example:
        >>> held_peaks(one_f_one_b_block(4), 8), held_peaks(v_block(2), 4)  # a V chunk's forward counts 1
        ((4, 3, 2, 1), (4, 4))
    """
    free = W if block.split else B
    pl, T = block.placement, block.interval
    timed: list[list[tuple[int, str]]] = [[] for _ in range(pl.p)]  # repeat's order, without its Schedule
    for o in block.ops:
        timed[pl.device(0, o.stage)] += [(o.offset + k * T, o.kind) for k in range(m)]
    peaks = []
    for prog in timed:
        held = peak = 0
        for _, kind in sorted(prog):  # no two passes of a device start together: the block has no collision
            held += kind == F
            peak = max(peak, held)
            held -= kind == free
        peaks.append(peak)
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
    w_delay, i_delay = check_int("w_delay", w_delay, 0), check_int("i_delay", i_delay, 0)
    S = 2 * p
    c = 2 * p + (2 - 2 * p) % 6 + 6 * i_delay
    i_off = [c + S - 1 - s for s in range(S)]
    return Block.of(v_shape(p), 6, F=range(S), I=i_off, W=[o + 2 + 6 * w_delay for o in i_off], name=name)
