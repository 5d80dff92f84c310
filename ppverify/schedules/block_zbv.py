"""ZB-V written as a building block: its block, the cool-down that reorders its last input
gradients, and the two together, equal to the registered ``zbv`` op for op (:mod:`.blocks` holds
the blocks themselves; this module is one worked family on top of them).

Example:
    >>> from ppverify.schedules import build
    >>> zbv_from_block(2, 6).programs == build("zbv", p=2, m=6).programs
    True
"""

from __future__ import annotations

from dataclasses import replace

from ..core.dag import build_dag, require_complete
from ..core.errors import DeadlockError, ParameterError
from ..core.ops import B, F, I, Op, W
from ..core.placement import v_shape
from ..core.program_order import list_schedule
from ..core.schedule import Schedule
from .blocks import Block
from .squeeze import squeeze


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
    Any other schedule is refused with :class:`ParameterError` (a non-V placement, a full
    backward, or one whose reordered passes would wait on each other), never silently broken.

    Example:
        >>> sq = squeeze(zbv_block(2), 3)
        >>> [str(o) for o in sq.programs[1][-6:]], [str(o) for o in zbv_cooldown(sq).programs[1][-6:]]
        (['1I1', '1W1', '2I2', '2W2', '1I2', '1W2'], ['1I1', '2I2', '1I2', '1W1', '2W2', '1W2'])
    """
    pl = schedule.placement
    p = pl.p
    if pl.num_pipes != 1 or pl.maps[0] != v_shape(p).maps[0]:
        raise ParameterError("schedule", schedule.describe(), "ZB-V's cool-down needs the V placement")
    if any(op.kind == B for op in schedule.ops()):
        raise ParameterError("schedule", schedule.describe(), "ZB-V's cool-down needs a split backward (I and W)")
    require_complete(schedule)
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
        if len(head) != len(prog):
            raise ParameterError(
                "schedule",
                schedule.describe(),
                f"device {d} does not end with ZB-V's passes: its cool-down would lose ops",
            )
        programs.append(tuple(head))
    out = replace(schedule, programs=tuple(programs))
    try:
        dag = build_dag(out)  # the reordered passes must still run: none waits on a later pass of its device
        list_schedule(dag, [1.0] * len(dag.ops))
    except DeadlockError as exc:
        raise ParameterError(
            "schedule", schedule.describe(), f"not ZB-V-shaped: its cool-down reordered would deadlock ({exc})"
        ) from None
    return out


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
