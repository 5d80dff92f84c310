"""Compiled (numba) form of PyTorch's unit-step simulator (:mod:`ppverify.engines.torch_steps`).

Actions are numbered ``(mb * S + stage) * 8 + code`` (the actions an op waits for share its
cache line) with codes F, B, I, W (as :data:`~ppverify.core.ops.KIND_CODE`) then SEND_F, RECV_F,
SEND_B, RECV_B; "action x ran on rank R" is one small array (``done_on[x] == R``, 16-bit ranks)
instead of a set per rank. The step loop is the reference's
two passes per step, rank by rank, so every action lands on the same step. Lowered schedules
this encoding cannot hold exactly (an action twice, a stage or microbatch out of range, markers
other than the dropped ones) return ``None`` and the callers run the pure-Python reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from ..core.compiled import compiled_kernel
from ..core.costs import CostModel
from ..core.ops import KIND_CODE, Action, Comm, Marker, Op, Overlap
from ..core.schedule import Schedule
from ..core.timeline import Timeline, TimelineInfo, Transfers

SEND_F, RECV_F, SEND_B, RECV_B = "SEND_F", "RECV_F", "SEND_B", "RECV_B"
CODE: dict[str, int] = {**KIND_CODE, SEND_F: 4, RECV_F: 5, SEND_B: 6, RECV_B: 7}
_F, _B, _I, _W, _SF, _RF, _SB, _RB = 0, 1, 2, 3, 4, 5, 6, 7
_fields = attrgetter("kind", "stage", "mb")


@compiled_kernel(nogil=True)
def _steps(act_ptr, part_ptr, code, stage, mb, S, m, rank_of):  # pragma: no cover - compiled
    # the readiness test of torch_steps.simulate_steps, written inline: a call per check (with
    # its array reference counting) cost more than the check itself
    p = act_ptr.shape[0] - 1
    n_act = act_ptr[p]
    step_of = np.full(n_act, -1, np.int64)
    row_len = np.zeros(p, np.int64)
    done_on = np.full(8 * S * m, -1, np.int16)
    ptr = act_ptr[:-1].copy()
    placed = np.zeros(p, np.bool_)
    left = 0
    for r in range(p):
        if ptr[r] < act_ptr[r + 1]:
            left += 1
    step = 0
    while left > 0:
        progress = False
        # pass 0: every rank in order; pass 1: an idle rank may take an action a later rank
        # just unblocked (PyTorch's second pass)
        for pas in range(2):
            for r in range(p):
                if ptr[r] >= act_ptr[r + 1]:
                    if pas == 0:
                        placed[r] = True
                    continue
                if pas == 1 and placed[r]:
                    continue
                if pas == 0:
                    row_len[r] = step + 1
                a = ptr[r]
                ok = True
                for x in range(part_ptr[a], part_ptr[a + 1]):
                    c, s, b = code[x], stage[x], mb[x]
                    R = rank_of[s]
                    base = (b * S + s) * 8
                    if c == _F:
                        ok = s == 0 or done_on[base + _RF] == R or done_on[base - 8 + _F] == R
                    elif c in (_B, _I):
                        ok = (
                            s == S - 1
                            or done_on[base + _RB] == R
                            or done_on[base + 8 + _I] == R
                            or done_on[base + 8 + _B] == R
                        )
                    elif c == _W:
                        ok = True  # PyTorch never checks W against its I
                    elif c == _SF:
                        ok = done_on[base + _F] == R
                    elif c == _RF:
                        ok = s > 0 and done_on[base - 8 + _SF] == rank_of[s - 1]
                    elif c == _SB:
                        ok = done_on[base + _I] == R or done_on[base + _B] == R
                    else:  # RECV_B
                        ok = s < S - 1 and done_on[base + 8 + _SB] == rank_of[s + 1]
                    if not ok:
                        break
                if pas == 0:
                    placed[r] = ok
                if ok:
                    for x in range(part_ptr[a], part_ptr[a + 1]):
                        done_on[(mb[x] * S + stage[x]) * 8 + code[x]] = r
                    step_of[a] = step
                    ptr[r] += 1
                    if pas == 0:
                        progress = True
                    if ptr[r] == act_ptr[r + 1]:
                        left -= 1
        if not progress:
            return step_of, row_len, ptr, False
        step += 1
    return step_of, row_len, ptr, True


@compiled_kernel(nogil=True)
def _lower(act_ptr, part_ptr, code, stage, mb, S, m, rank_of):  # pragma: no cover - compiled
    # PyTorch's _add_send_recv: rounds over the ranks in order, each placing its next action once
    # its input has been received; code -1 is an idle slot (dropped), -2 a marker (kept). Output:
    # (rank, item) in append order, item >= 0 an input action, else -1 - id of a SEND/RECV.
    p = act_ptr.shape[0] - 1
    n_parts = part_ptr[act_ptr[p]]
    out_rank = np.empty(act_ptr[p] + 2 * n_parts, np.int64)
    out_item = np.empty(act_ptr[p] + 2 * n_parts, np.int64)
    n_out = 0
    done_on = np.full(8 * S * m, -1, np.int16)
    ptr = act_ptr[:-1].copy()
    left = 0
    for r in range(p):
        if ptr[r] < act_ptr[r + 1]:
            left += 1
    while left > 0:
        progress = False
        for r in range(p):
            if ptr[r] >= act_ptr[r + 1]:
                continue
            a = ptr[r]
            ok = True
            for x in range(part_ptr[a], part_ptr[a + 1]):
                c, s, b = code[x], stage[x], mb[x]
                base = (b * S + s) * 8
                if c == _F and s != 0:
                    ok = done_on[base + _RF] == r or done_on[base - 8 + _F] == r
                elif (c in (_I, _B)) and s != S - 1:
                    ok = done_on[base + _RB] == r or done_on[base + 8 + _I] == r or done_on[base + 8 + _B] == r
                if not ok:
                    break
            if not ok:
                continue
            if code[part_ptr[a]] != -1:
                out_rank[n_out] = r
                out_item[n_out] = a
                n_out += 1
                for x in range(part_ptr[a], part_ptr[a + 1]):
                    c, s, b = code[x], stage[x], mb[x]
                    if c < 0:
                        continue
                    done_on[(b * S + s) * 8 + c] = r
                    if c == _F and s != S - 1 and rank_of[s + 1] != rank_of[s]:
                        send, recv_stage, recv_code = (b * S + s) * 8 + _SF, s + 1, _RF
                    elif (c in (_I, _B)) and s != 0 and rank_of[s - 1] != rank_of[s]:
                        send, recv_stage, recv_code = (b * S + s) * 8 + _SB, s - 1, _RB
                    else:
                        continue
                    recv = (b * S + recv_stage) * 8 + recv_code
                    peer = rank_of[recv_stage]
                    out_rank[n_out], out_item[n_out] = r, -1 - send
                    out_rank[n_out + 1], out_item[n_out + 1] = peer, -1 - recv
                    n_out += 2
                    done_on[send] = r
                    done_on[recv] = peer
            ptr[r] += 1
            if ptr[r] == act_ptr[r + 1]:
                left -= 1
            progress = True
        if not progress:
            return out_rank[:n_out], out_item[:n_out], False
    return out_rank[:n_out], out_item[:n_out], True


_COMM_NAME = {CODE[k]: k for k in (SEND_F, RECV_F, SEND_B, RECV_B)}


def lowered_compiled(schedule: Schedule) -> Schedule:
    """:func:`ppverify.core.lowering.lowered` with the lowering (PyTorch's
    ``_add_send_recv``) compiled: the same programs, action for action; the reference runs for
    what the arrays cannot hold and for deadlocks (it names them).

    Example:
        >>> from ppverify.schedules import build
        >>> [[str(a) for a in prog] for prog in lowered_compiled(build("gpipe", p=2, m=1)).programs]
        [['0F0', '0SEND_F0', '0RECV_B0', '0B0'], ['1RECV_F0', '1F0', '1B0', '1SEND_B0']]
    """
    from ..core.lowering import _stage_rank, lowered

    rank_of = np.asarray(_stage_rank(schedule), dtype=np.int64)
    S, m = schedule.num_stages, schedule.m
    actions: list[Any] = []
    act_ptr = [0]
    fields: list[tuple] = []
    n_parts: list[int] = []
    idle, marker = ("", -1, 0), ("", -2, 0)
    for prog in schedule.programs:
        for a in prog:
            if type(a) is Op:
                fields.append(a)
                n_parts.append(1)
            elif a is None or type(a) is Marker:
                fields.append(idle if a is None else marker)
                n_parts.append(1)
            elif type(a) is Overlap:
                fields.extend(a.ops)
                n_parts.append(len(a.ops))
            else:
                return lowered(schedule)  # SEND/RECV given: nothing to lower
            actions.append(a)
        act_ptr.append(len(actions))
    if schedule.p >= 2**15 or not fields:
        return lowered(schedule)
    kinds, stages, mbs_ = zip(*fields)
    try:
        code = np.fromiter((KIND_CODE[k] if k else 0 for k in kinds), dtype=np.int64, count=len(fields))
    except KeyError:
        return lowered(schedule)
    st = np.fromiter(stages, dtype=np.int64, count=len(fields))
    mbs = np.fromiter(mbs_, dtype=np.int64, count=len(fields))
    special = np.fromiter((not k for k in kinds), dtype=bool, count=len(fields))  # idle slot -1, marker -2
    code[special] = st[special]
    st[special], mbs[special] = 0, 0
    ids = ((mbs * S + st) * 8 + code)[~special]
    srt = np.sort(ids)
    if st.max() >= S or mbs.min() < 0 or mbs.max() >= m or (st[~special] < 0).any() or (srt[1:] == srt[:-1]).any():
        return lowered(schedule)
    part_ptr = np.concatenate(([0], np.cumsum(np.asarray(n_parts, dtype=np.int64))))
    out_rank, out_item, ok = _lower(np.asarray(act_ptr, dtype=np.int64), part_ptr, code, st, mbs, S, m, rank_of)
    if not ok:
        return lowered(schedule)
    order = np.argsort(out_rank, kind="stable")
    items = out_item[order].tolist()
    bounds = np.searchsorted(out_rank[order], np.arange(schedule.p + 1)).tolist()

    def obj(item: int) -> Any:
        if item >= 0:
            return actions[item]
        x = -1 - item
        return Comm(_COMM_NAME[x % 8], (x // 8) % S, x // 8 // S)

    objs = list(map(obj, items))
    return schedule.with_programs(tuple(tuple(objs[bounds[r] : bounds[r + 1]]) for r in range(schedule.p)))


def _encode(schedule: Schedule) -> tuple[list[Any], np.ndarray, np.ndarray, np.ndarray] | None:
    """``(actions, act_ptr, part_ptr, parts)`` of a lowered schedule (idle slots and markers
    dropped as the reference does; ``parts`` rows are code, stage, mb), or ``None`` when the
    arrays cannot represent it exactly."""
    S, m = schedule.num_stages, schedule.m
    actions: list[Any] = []
    act_ptr = [0]
    fields: list[tuple] = []
    n_parts: list[int] = []
    for prog in schedule.programs:
        types = set(map(type, prog))
        acts: Sequence[Action] = prog
        if type(None) in types and not types & {Marker, Overlap}:
            acts = [a for a in prog if a is not None]  # idle slots: dropped, as the reference does
            types.discard(type(None))
        if types <= {Op, Comm}:
            actions.extend(acts)
            fields.extend(map(_fields, acts))
            n_parts.extend([1] * len(acts))
        else:
            for a in acts:
                if a is None or type(a) is Marker:
                    continue
                a_parts = a.ops if type(a) is Overlap else (a,)
                actions.append(a)
                fields.extend(map(_fields, a_parts))
                n_parts.append(len(a_parts))
        act_ptr.append(len(actions))
    kinds, stages, mbs_ = zip(*fields) if fields else ((), (), ())
    try:
        code = np.fromiter(map(CODE.__getitem__, kinds), dtype=np.int64, count=len(fields))
    except KeyError:
        return None
    parts = np.empty((len(fields), 3), dtype=np.int64)
    parts[:, 0] = code
    parts[:, 1] = np.fromiter(stages, dtype=np.int64, count=len(fields))
    parts[:, 2] = np.fromiter(mbs_, dtype=np.int64, count=len(fields))
    st, mbs = parts[:, 1], parts[:, 2]
    if len(st) and (st.min() < 0 or st.max() >= S or mbs.min() < 0 or mbs.max() >= m):
        return None
    ids = (mbs * S + st) * 8 + code
    srt = np.sort(ids)
    if (srt[1:] == srt[:-1]).any():  # an action twice (np.unique is slower than a sort here)
        return None
    part_ptr = np.concatenate(([0], np.cumsum(np.asarray(n_parts, dtype=np.int64))))
    return actions, np.asarray(act_ptr, dtype=np.int64), part_ptr, parts


def _run(schedule: Schedule) -> tuple[Any, ...] | None:
    from ..schedules.fast_orders import no_gc_pauses

    if schedule.p >= 2**15:
        return None  # ranks are stored in 16 bits
    with no_gc_pauses():  # ~100k small tuples: collections would rescan them all
        enc = _encode(schedule)
    if enc is None:
        return None
    actions, act_ptr, part_ptr, parts = enc
    rank_of = np.asarray(schedule.placement.maps[0], dtype=np.int64)
    step_of, row_len, _ptr, ok = _steps(
        act_ptr,
        part_ptr,
        np.ascontiguousarray(parts[:, 0]),
        np.ascontiguousarray(parts[:, 1]),
        np.ascontiguousarray(parts[:, 2]),
        schedule.num_stages,
        schedule.m,
        rank_of,
    )
    if not ok:
        return None  # the reference raises the deadlock with its own message
    return actions, act_ptr, part_ptr, parts, step_of, row_len


def _grid(actions: list[Any], act_ptr: np.ndarray, step_of: np.ndarray, row_len: np.ndarray) -> list[list[Any]]:
    grid = []
    for r in range(len(row_len)):
        row: list[Any] = [None] * int(row_len[r])
        lo, hi = int(act_ptr[r]), int(act_ptr[r + 1])
        for a, t in zip(actions[lo:hi], step_of[lo:hi].tolist()):
            row[t] = a
        grid.append(row)
    return grid


def simulate_steps_compiled(schedule: Schedule) -> list[list[Any]] | None:
    """:func:`ppverify.engines.torch_steps.simulate_steps` compiled: the same step grid, or
    ``None`` where the reference must run (unrepresentable actions, or a deadlock, which the
    reference reports).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.lowering import add_send_recv
        >>> grid = simulate_steps_compiled(add_send_recv(build("gpipe", p=2, m=1)))
        >>> [[str(a) if a else "" for a in row] for row in grid]
        [['0F0', '0SEND_F0', '', '', '0RECV_B0', '0B0'], ['', '1RECV_F0', '1F0', '1B0', '1SEND_B0']]
    """
    out = _run(schedule)
    if out is None:
        return None
    actions, act_ptr, _, _, step_of, row_len = out
    return _grid(actions, act_ptr, step_of, row_len)


def torch_timeline_compiled(schedule: Schedule, costs: CostModel | None) -> Timeline | None:
    """:func:`ppverify.engines.torch_steps.torch_timeline` from the compiled step loop, the
    timeline assembled on arrays; ``None`` where the reference must run.

    Example:
        >>> from ppverify.schedules import build
        >>> tl = torch_timeline_compiled(build("gpipe", p=2, m=1), None)
        >>> tl.makespan, [str(o) for o in tl.ops], tl.start.tolist()
        (6.0, ['0F0', '1F0', '1B0', '0B0'], [0.0, 2.0, 3.0, 5.0])
    """
    from ..schedules.fast_orders import no_gc_pauses

    with no_gc_pauses():  # lowering makes ~100k small objects: collections would rescan them all
        low = lowered_compiled(schedule)
    out = _run(low)
    if out is None:
        return None
    actions, act_ptr, part_ptr, parts, step_of, row_len = out
    S, m, p = low.num_stages, low.m, low.p
    rank_of = np.asarray(low.placement.maps[0], dtype=np.int64)
    T = int(row_len.max(initial=0))
    rank = np.repeat(np.arange(p), np.diff(act_ptr))
    n_parts = np.diff(part_ptr)
    code = parts[:, 0]
    ids = (parts[:, 2] * S + parts[:, 1]) * 8 + code
    act_code = code[part_ptr[:-1]]  # an Overlap holds compute ops only
    # compute ops in the reference's order: by step, then rank, then part
    comp = np.flatnonzero(act_code < 4)
    comp = comp[np.lexsort((rank[comp], step_of[comp]))]
    cnt = n_parts[comp]
    part_idx = np.repeat(part_ptr[comp], cnt) + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    ops = (
        [actions[a] for a in comp.tolist()]
        if (cnt == 1).all()
        else [op for a in comp.tolist() for op in (actions[a].ops if type(actions[a]) is Overlap else (actions[a],))]
    )
    dev = np.repeat(rank[comp], cnt)
    start = np.repeat(step_of[comp], cnt).astype(float)
    pos = np.full(8 * S * m, -1, dtype=np.int64)
    pos[ids[part_idx]] = np.arange(len(part_idx))
    step_id = np.full(8 * S * m, -1, dtype=np.int64)
    step_id[ids[part_ptr[:-1]]] = step_of
    # transfers: one per RECV, in step then rank order
    rec = np.flatnonzero((act_code == CODE[RECV_F]) | (act_code == CODE[RECV_B]))
    rec = rec[np.lexsort((rank[rec], step_of[rec]))]
    fwd = act_code[rec] == CODE[RECV_F]
    x = part_ptr[rec]
    s_dst, mb = parts[x, 1], parts[x, 2]
    s_src = np.where(fwd, s_dst - 1, s_dst + 1)
    t = step_of[rec]
    t0 = step_id[(mb * S + s_src) * 8 + np.where(fwd, CODE[SEND_F], CODE[SEND_B])]
    t0 = np.where(t0 >= 0, t0, t)

    def position(s: np.ndarray) -> np.ndarray:
        f = pos[(mb * S + s) * 8 + CODE["F"]]
        i = pos[(mb * S + s) * 8 + CODE["I"]]
        b = pos[(mb * S + s) * 8 + CODE["B"]]
        return np.where(fwd, f, np.where(i >= 0, i, b))

    kinds = list(map(["gradient", "activation"].__getitem__, fwd.astype(np.int64).tolist()))
    tr = Transfers(
        kinds,
        rank_of[s_src].tolist(),
        rank[rec].tolist(),
        position(s_src).tolist(),
        position(s_dst).tolist(),
        t0.astype(float).tolist(),
        (t + 1).astype(float).tolist(),
        [0.0] * len(rec),
    )
    return Timeline(
        schedule,
        costs or CostModel.unit(schedule.placement),
        "torch",
        ops,
        dev.astype(np.int64),
        start,
        start + 1.0,
        tr,
        info=TimelineInfo(
            steps=T,
            grid=_grid(actions, act_ptr, step_of, row_len),
            lowered=low is not schedule,
            step_unit="PyTorch simulator steps",
        ),
    )
