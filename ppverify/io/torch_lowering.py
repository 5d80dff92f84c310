"""PyTorch 2.13's full ``compute_only -> compute_comms`` lowering, reproduced without torch.

When PyTorch's runtime (``_PipelineScheduleRuntime``) loads a compute-only schedule it lowers
every rank's list in three passes before running it:

1. ``_add_unshard_reshard``: idle cells dropped; before each compute action, the (up to 3) next
   distinct stages the rank will compute are unsharded (``UNSHARD``, in the order they come) and
   the active stages outside that window resharded (``RESHARD``); every still-active stage is
   resharded at the end;
2. ``_add_reduce_grad``: a ``REDUCE_GRAD`` of a stage right after the action holding that stage's
   m-th ``B``/``W`` (the gradient-accumulating ops). The runtime scales the accumulated gradients
   by ``1/m`` there: a file without it trains with gradients m times too large;
3. ``_add_send_recv``: the SEND/RECV pass (:func:`ppverify.core.lowering.add_send_recv`).

A ``compute_comms`` file is run as written, so writing one means writing all three passes:
:func:`lower_like_pytorch` is what ``--format torch-csv-comms`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.lowering import add_send_recv
from ..core.ops import Action, B, Comm, Marker, Op, Overlap, W
from ..core.schedule import Schedule

UNSHARD, RESHARD, REDUCE_GRAD = "UNSHARD", "RESHARD", "REDUCE_GRAD"
#: PyTorch's default prefetch window of ``_add_unshard_reshard``
MAX_ACTIVE_STAGES = 3


def _next_stages(count: int, rest: Sequence[Action]) -> list[int]:
    # PyTorch's next_stage_indices, including its quirk: an overlapped cell adds all of its
    # stages before the count is checked, so the window may exceed ``count``
    seen: set[int] = set()
    out: list[int] = []
    for a in rest:
        if isinstance(a, Overlap):
            for o in a.ops:
                if o.stage not in seen:
                    seen.add(o.stage)
                    out.append(o.stage)
            if len(out) >= count:
                break
        elif a is not None and a.stage not in seen:
            seen.add(a.stage)
            out.append(a.stage)
            if len(out) == count:
                break
    return out


def next_stage_windows(count: int, compute: Sequence[Op | Comm | Overlap | Marker]) -> list[list[int]]:
    """``_next_stages(count, compute[i:])`` for every ``i`` of a rank's cells without its idle ones,
    in one backward pass: linear in the cells times the rank's distinct stages. Calling it for each
    ``i`` was quadratic where a rank holds fewer than ``count`` stages (a V placement's two): every
    window scanned to the end (``export zbv -p 8 -m 2048 --format torch-csv-comms`` took 64 s).

    Going backwards, the stages in order of first appearance from ``i`` on are cell ``i``'s own,
    then those from ``i + 1`` on that cell ``i`` does not hold; each keeps the kind of the cell
    that brought it (an overlapped cell may overshoot ``count``, as in PyTorch).

    Example:
        >>> from ppverify.core.ops import parse_action as pa
        >>> cells = [pa(x) for x in ("0F0", "7F0", "7B0", "0B0")]
        >>> next_stage_windows(3, cells)
        [[0, 7], [7, 0], [7, 0], [0]]
    """
    groups: list[tuple[bool, list[int]]] = []  # (brought by an overlapped cell, its new stages)
    windows: list[list[int]] = []
    for a in reversed(compute):
        if isinstance(a, Overlap):
            own = list(dict.fromkeys(o.stage for o in a.ops))
        else:
            own = [a.stage]
        mine = set(own)
        rest = [(ov, [x for x in st if x not in mine]) for ov, st in groups]
        groups = [(isinstance(a, Overlap), own)] + [(ov, st) for ov, st in rest if st]
        window: list[int] = []
        for overlapped, stages in groups:
            window += stages
            if len(window) >= count if overlapped else len(window) == count:
                break
        windows.append(window)
    windows.reverse()
    return windows


def add_unshard_reshard(program: Sequence[Action], max_active_stages: int = MAX_ACTIVE_STAGES) -> list[Action]:
    """One rank's list with PyTorch's UNSHARD/RESHARD actions (idle cells dropped).

    Example:
        >>> from ppverify.core.ops import parse_action as pa
        >>> [str(a) for a in add_unshard_reshard([pa("0F0"), None, pa("2F0"), pa("2B0"), pa("0B0")])]
        ['0UNSHARD', '2UNSHARD', '0F0', '2F0', '2B0', '2RESHARD', '0B0', '0RESHARD']
    """
    compute = [a for a in program if a is not None]
    windows = next_stage_windows(max_active_stages, compute)
    # a set, as in PyTorch: the iteration order of the evictions is the set's, so the same
    # sequence of additions and removals on a CPython set gives the same cells
    active: set[int] = set()
    out: list[Action] = []
    for a, nxt in zip(compute, windows):
        fetch = [s for s in nxt if s not in active]
        evict = [s for s in active if s not in nxt]
        for s in evict:
            active.remove(s)
            out.append(Marker(RESHARD, s))
        for s in fetch:
            active.add(s)
            out.append(Marker(UNSHARD, s))
        out.append(a)
    for s in list(active):
        active.remove(s)
        out.append(Marker(RESHARD, s))
    return out


def add_reduce_grad(program: Sequence[Action], m: int) -> list[Action]:
    """One rank's list with a ``REDUCE_GRAD`` of each stage right after the action holding the
    stage's m-th gradient-accumulating op (``B`` or ``W``; an ``I`` does not count), as PyTorch's
    ``_add_reduce_grad`` does (idle cells dropped).

    Example:
        >>> from ppverify.core.ops import parse_action as pa
        >>> [str(a) for a in add_reduce_grad([pa("0I0"), pa("0I1"), pa("0W0"), None, pa("0W1")], 2)]
        ['0I0', '0I1', '0W0', '0W1', '0REDUCE_GRAD']
    """
    count: dict[int, int] = {}
    out: list[Action] = []
    for a in program:
        if a is None:
            continue
        out.append(a)
        parts = a.ops if isinstance(a, Overlap) else (a,)
        for o in parts:
            if type(o) is Op and o.kind in (B, W):
                count[o.stage] = count.get(o.stage, 0) + 1
                if count[o.stage] == m:
                    out.append(Marker(REDUCE_GRAD, o.stage))
    return out


def lower_like_pytorch(schedule: Schedule) -> Schedule:
    """The ``compute_comms`` schedule PyTorch's runtime builds from a compute-only one:
    UNSHARD/RESHARD, REDUCE_GRAD, then SEND/RECV (see the module doc). Markers already in the
    programs are dropped first (PyTorch's compute-only loader refuses them).

    Example:
        >>> from ppverify.schedules import build
        >>> [[str(a) for a in prog] for prog in lower_like_pytorch(build("gpipe", p=2, m=1)).programs]
        [['0UNSHARD', '0F0', '0SEND_F0', '0RECV_B0', '0B0', '0REDUCE_GRAD', '0RESHARD'], ['1UNSHARD', '1RECV_F0', '1F0', '1B0', '1SEND_B0', '1REDUCE_GRAD', '1RESHARD']]
    """
    programs = []
    for prog in schedule.programs:
        compute = [a for a in prog if a is not None and not isinstance(a, Marker)]
        programs.append(tuple(add_reduce_grad(add_unshard_reshard(compute), schedule.m)))
    return add_send_recv(schedule.with_programs(tuple(programs)))


__all__ = [
    "MAX_ACTIVE_STAGES",
    "REDUCE_GRAD",
    "RESHARD",
    "UNSHARD",
    "add_reduce_grad",
    "add_unshard_reshard",
    "lower_like_pytorch",
    "next_stage_windows",
]
