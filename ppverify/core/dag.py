"""The dependency DAG of one training step, defined once for every engine, checker and solver.

Rules, for stage s of microbatch mb's pipe, ``S`` stages:

* ``F(s, mb)`` after ``F(s-1, mb)``                  (activation transfer when devices differ)
* the first backward (``B`` or ``I``) of ``(s, mb)`` after ``F(s, mb)``     (always local)
* the first backward of ``(s, mb)`` after the first backward of ``(s+1, mb)`` (gradient transfer)
* ``W(s, mb)`` after ``I(s, mb)``

Per ``(stage, mb)`` the backward is either one ``B`` or the pair ``I`` + ``W`` (never both); which
one is read from the schedule, so schedules may mix them (DualPipeV does).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import cast

import numpy as np

from .errors import InvalidScheduleError
from .ops import GRAD_KINDS, KIND_CODE, KINDS, B, F, I, Op, Overlap, W, compute_ops
from .schedule import Schedule

#: edge kinds: what a dependency carries when it crosses devices
ACT, GRAD, LOCAL = "activation", "gradient", "local"


def split_pairs(schedule: Schedule) -> set[tuple[int, int]]:
    """``(stage, mb)`` pairs whose backward is split into I and W in this schedule.

    Example:
        >>> from ppverify.schedules import build
        >>> sorted(split_pairs(build("1f1b-split", p=2, m=1)))
        [(0, 0), (1, 0)]
    """
    return {(op.stage, op.mb) for op in schedule.ops() if op.kind in (I, W)}


def required_ops(schedule: Schedule) -> list[Op]:
    """Every op one step needs: F and (B, or I and W) for each stage and microbatch.

    Example:
        >>> from ppverify.schedules import build
        >>> [str(o) for o in required_ops(build("gpipe", p=2, m=1))]
        ['0F0', '0B0', '1F0', '1B0']
    """
    split = split_pairs(schedule)
    out: list[Op] = []
    add = out.append
    for mb in range(schedule.m):
        for s in range(schedule.num_stages):
            add(Op(F, s, mb))
            if (s, mb) in split:
                add(Op(I, s, mb))
                add(Op(W, s, mb))
            else:
                add(Op(B, s, mb))
    return out


def predecessors(op: Op, num_stages: int, split: bool | set[tuple[int, int]]) -> list[tuple[Op, str]]:
    """Direct dependencies of ``op`` with the edge kind (ACT/GRAD before device check).

    ``split`` is either a bool (the whole step split or not) or the set from :func:`split_pairs`.

    Example:
        >>> predecessors(Op("B", 1, 0), 3, False)
        [(Op(kind='F', stage=1, mb=0), 'local'), (Op(kind='B', stage=2, mb=0), 'gradient')]
        >>> predecessors(Op("W", 1, 0), 3, True)
        [(Op(kind='I', stage=1, mb=0), 'local')]
    """

    def grad_kind(s: int) -> str:
        is_split = split if isinstance(split, bool) else (s, op.mb) in split
        return I if is_split else B

    k, s, mb = op
    if k == F:
        return [(Op(F, s - 1, mb), ACT)] if s > 0 else []
    if k in GRAD_KINDS:
        deps = [(Op(F, s, mb), LOCAL)]
        if s < num_stages - 1:
            deps.append((Op(grad_kind(s + 1), s + 1, mb), GRAD))
        return deps
    if k == W:
        return [(Op(I, s, mb), LOCAL)]
    raise ValueError(f"unknown op kind {k!r}")


def structural_problems(schedule: Schedule, limit: int | None = None) -> list[str]:
    """Problems with which ops the programs hold: out of range, wrong device, duplicated, missing,
    B mixed with I/W. Empty list when the op set is exactly what one step needs; with ``limit``,
    at most the first ``limit`` problems.

    Order and timing are not checked here (that is the engines' and the verifier's job).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> structural_problems(s)
        []
        >>> structural_problems(s.with_programs((s.programs[0], s.programs[1][:-1])))
        ['op 1B0 is missing (should run on device 1)']
    """
    S, m = schedule.num_stages, schedule.m
    problems: list[str] = []
    seen: dict[Op, int] = {}
    kinds_at: dict[tuple[int, int], set[str]] = {}
    for d, prog in enumerate(schedule.programs):
        for op in compute_ops(prog):
            if op.kind not in KIND_CODE:
                problems.append(f"op {op} on device {d}: unknown kind {op.kind!r}")
                continue
            if not (0 <= op.stage < S and 0 <= op.mb < m):
                problems.append(f"op {op} on device {d}: stage must be in 0..{S - 1} and microbatch in 0..{m - 1}")
                continue
            if op in seen:
                problems.append(f"op {op} appears twice (devices {seen[op]} and {d})")
                continue
            seen[op] = d
            kinds_at.setdefault((op.stage, op.mb), set()).add(op.kind)
            want = schedule.device_of(op)
            if want != d:
                problems.append(
                    f"op {op} is on device {d} but its stage lives on device {want} for pipe {schedule.pipe_of_mb[op.mb]}"
                )
        if limit and len(problems) >= limit:
            return problems[:limit]
    for mb in range(m):
        for s in range(S):
            ks = kinds_at.get((s, mb), set())
            if B in ks and ks & {I, W}:
                problems.append(f"stage {s} mb {mb} has both a full backward B and a split I/W")
            need = [F] + ([I, W] if ks & {I, W} else [B])
            for k in need:
                if k not in ks:
                    op = Op(k, s, mb)
                    problems.append(f"op {op} is missing (should run on device {schedule.device_of(op)})")
            if limit and len(problems) >= limit:
                return problems[:limit]
    return problems


def require_complete(schedule: Schedule) -> None:
    """Raise :class:`InvalidScheduleError` listing (up to 10) structural problems, if any.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> require_complete(s) is None
        True
        >>> require_complete(s.with_programs((s.programs[0], s.programs[1][:-1])))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.InvalidScheduleError: gpipe p=2 m=1: op 1B0 is missing (should run on device 1)
    """
    problems = structural_problems(schedule, limit=11)
    if problems:
        more = " (and more)" if len(problems) > 10 else ""
        raise InvalidScheduleError(f"{schedule.describe()}: " + "; ".join(problems[:10]) + more)


@dataclass(frozen=True, eq=False)
class StepDAG:
    """Array form of the step's DAG over the ops of a (structurally complete) schedule.

    Ops are numbered by position: device 0's program first, in program order, then device 1 ...
    ``offsets[d]:offsets[d+1]`` are device d's ops. ``pred[i]`` holds up to two predecessor
    positions (-1 for none); ``edge[i][j]`` is ACT, GRAD or LOCAL, and ``cross[i][j]`` says if it
    crosses devices. Arrays are Python lists because engines walk them element by element.

    Example:
        >>> from ppverify.schedules import build
        >>> dag = build_dag(build("gpipe", p=2, m=1))
        >>> [str(o) for o in dag.ops], dag.pred
        (['0F0', '0B0', '1F0', '1B0'], [[-1, -1], [0, 3], [0, -1], [2, -1]])
    """

    schedule: Schedule
    ops: list[Op]
    device: list[int]
    offsets: list[int]
    pred: list[list[int]]
    edge: list[list[str]]
    cross: list[list[bool]]
    #: fused[i]: op i+1 runs in the same overlapped slot as op i (DualPipe's F&B)
    fused: list[bool]
    #: idle slots (``None`` actions) in the program right before op i
    idle_before: list[int]

    @property
    def num_ops(self) -> int:
        """Number of compute ops."""
        return len(self.ops)

    def successors(self) -> list[list[int]]:
        """Successor positions of each op (inverse of ``pred``)."""
        succ: list[list[int]] = [[] for _ in self.ops]
        for i, ps in enumerate(self.pred):
            for j in ps:
                if j >= 0:
                    succ[j].append(i)
        return succ

    def topological_order(self) -> list[int]:
        """Positions in an order compatible with the dependencies (not the programs).

        Example:
            >>> from ppverify.schedules import build
            >>> build_dag(build("gpipe", p=2, m=1)).topological_order()
            [0, 2, 3, 1]
        """
        indeg = [sum(1 for j in ps if j >= 0) for ps in self.pred]
        succ = self.successors()
        ready = deque(i for i, n in enumerate(indeg) if n == 0)
        out = []
        while ready:
            i = ready.popleft()
            out.append(i)
            for k in succ[i]:
                indeg[k] -= 1
                if indeg[k] == 0:
                    ready.append(k)
        return out


@dataclass(frozen=True, eq=False)
class DagArrays:
    """The step's DAG as flat numpy arrays (what fast engines walk); :func:`build_dag` turns it into
    the list-based :class:`StepDAG`. Same numbering and rules.

    ``kind`` holds :data:`~ppverify.core.ops.KIND_CODE` codes; ``pred``/``cross`` have shape ``(n, 2)``;
    the edge kind of ``pred[:, 0]`` is ACT for forwards and LOCAL otherwise, of ``pred[:, 1]`` GRAD.

    Example:
        >>> from ppverify.schedules import build
        >>> a = build_dag_arrays(build("gpipe", p=2, m=1))
        >>> a.pred.tolist(), a.cross.tolist()
        ([[-1, -1], [0, 3], [0, -1], [2, -1]], [[False, False], [False, True], [True, False], [False, False]])
    """

    schedule: Schedule
    ops: list[Op]
    kind: np.ndarray
    stage: np.ndarray
    mb: np.ndarray
    device: np.ndarray
    offsets: list[int]
    pred: np.ndarray
    cross: np.ndarray
    fused: np.ndarray
    idle_before: np.ndarray

    @property
    def num_ops(self) -> int:
        """Number of compute ops."""
        return len(self.ops)


def _flatten_programs(schedule: Schedule) -> tuple[list[Op], np.ndarray, list[int], np.ndarray, np.ndarray]:
    """Ops in position order, with device, offsets, fused flags and idle slots before each op."""
    ops: list[Op] = []
    offsets = [0]
    fused: list[np.ndarray] = []
    idle_before: list[np.ndarray] = []
    for prog in schedule.programs:
        if not prog or set(map(type, prog)) == {Op}:
            # the common case (plain ops, no idle slots or overlaps): extend in bulk
            ops.extend(cast("tuple[Op, ...]", prog))  # checked just above: plain ops only
            fused.append(np.zeros(len(prog), dtype=bool))
            idle_before.append(np.zeros(len(prog), dtype=np.int64))
            offsets.append(len(ops))
            continue
        fu: list[bool] = []
        ib: list[int] = []
        idle = 0
        for action in prog:
            if action is None:
                idle += 1
            elif type(action) is Op:
                ops.append(action)
                fu.append(False)
                ib.append(idle)
                idle = 0
            elif type(action) is Overlap:
                for n, op in enumerate(action.ops):
                    ops.append(op)
                    fu.append(n < len(action.ops) - 1)
                    ib.append(idle if n == 0 else 0)
                idle = 0
        fused.append(np.asarray(fu, dtype=bool))
        idle_before.append(np.asarray(ib, dtype=np.int64))
        offsets.append(len(ops))
    device = np.repeat(np.arange(len(schedule.programs), dtype=np.int64), np.diff(offsets))
    return (
        ops,
        device,
        offsets,
        np.concatenate(fused) if fused else np.zeros(0, dtype=bool),
        np.concatenate(idle_before) if idle_before else np.zeros(0, dtype=np.int64),
    )


def _op_columns(ops: list[Op]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(kind code, stage, mb)`` arrays, or ``None`` when a kind is unknown."""
    n = len(ops)
    try:
        kc = np.fromiter(map(KIND_CODE.__getitem__, map(itemgetter(0), ops)), dtype=np.int64, count=n)
    except KeyError:
        return None
    st = np.fromiter(map(itemgetter(1), ops), dtype=np.int64, count=n)
    mbs = np.fromiter(map(itemgetter(2), ops), dtype=np.int64, count=n)
    return kc, st, mbs


def _complete_fast(schedule: Schedule, kc: np.ndarray, st: np.ndarray, mbs: np.ndarray, dev: np.ndarray) -> bool:
    """Vectorized form of ``structural_problems(schedule) == []`` (True: nothing to report)."""
    S, m = schedule.num_stages, schedule.m
    if len(st) and (st.min() < 0 or st.max() >= S or mbs.min() < 0 or mbs.max() >= m):
        return False
    maps = np.asarray(schedule.placement.maps, dtype=np.int64)
    pipe = np.asarray(schedule.pipe_of_mb, dtype=np.int64)
    if len(st) and (maps[pipe[mbs], st] != dev).any():
        return False
    count = np.bincount((kc * S + st) * m + mbs, minlength=len(KINDS) * S * m).reshape(len(KINDS), S, m)
    if count.max(initial=0) > 1:
        return False
    f, b, i, w = (count[KIND_CODE[k]] for k in KINDS)
    split = (i + w) > 0
    ok = (f == 1) & np.where(split, (i == 1) & (w == 1) & (b == 0), b == 1)
    return bool(ok.all())


def arrays_complete(arrays: DagArrays) -> bool:
    """True when the ops of ``arrays`` (built with ``check=False``) are exactly one step's, each
    once and on its stage's device: the vectorised ``structural_problems(schedule) == []``.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> arrays_complete(build_dag_arrays(s)), arrays_complete(build_dag_arrays(s.with_programs((s.programs[0][:1], s.programs[1])), check=False))
        (True, False)
    """
    return _complete_fast(arrays.schedule, arrays.kind, arrays.stage, arrays.mb, arrays.device)


def slot_dependency_problems(arrays: DagArrays, limit: int | None = None) -> list[str]:
    """Overlapped slots holding an op and its own input (first ``limit``), one text each. The
    ops of an overlapped slot run at the same time (docs/verification.md), so such an op would
    read an output not yet made; the verifier reports it as a violated dependency, and every
    engine refuses it (:func:`build_dag_arrays`) rather than time the slot's ops in turn.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> a = build_dag_arrays(parse_rows([["(0F0;0B0)OVERLAP_F_B"]]), check=False)
        >>> slot_dependency_problems(a)
        ["device 0's slot (0F0;0B0)OVERLAP_F_B runs 0B0 with 0F0, which it needs"]
        >>> slot_dependency_problems(build_dag_arrays(parse_rows([["0F0", "0F1", "(0F2;0B0)OVERLAP_F_B", "0B1", "0B2"]])))
        []
    """
    fused = arrays.fused
    if not fused.any():  # the common case: no overlapped slot
        return []
    # slot number of each position: a new slot starts wherever the previous op is not fused to it
    starts = np.ones(len(fused), dtype=bool)
    starts[1:] = ~fused[:-1]
    slot = np.cumsum(starts)
    pred = arrays.pred
    inside = (pred >= 0) & (slot[np.maximum(pred, 0)] == slot[:, None])
    problems: list[str] = []
    for i, e in zip(*np.nonzero(inside)):
        first, last = int(i), int(i)
        while first > 0 and fused[first - 1]:
            first -= 1
        while fused[last]:
            last += 1
        text = Overlap(tuple(arrays.ops[first : last + 1]))
        need = arrays.ops[int(pred[i, e])]
        problems.append(
            f"device {int(arrays.device[i])}'s slot {text} runs {arrays.ops[i]} with {need}, which it needs"
        )
        if limit and len(problems) >= limit:
            break
    return problems


def require_independent_slots(arrays: DagArrays) -> None:
    """Raise :class:`InvalidScheduleError` naming (up to 10) overlapped slots that hold an op and
    its own input (:func:`slot_dependency_problems`), if any.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> require_independent_slots(build_dag_arrays(parse_rows([["(0B0;0F0)OVERLAP_F_B"]], "x.csv"), check=False))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.InvalidScheduleError: x.csv p=1 m=1 format=compute_only placement=linear: device 0's slot (0B0;0F0)OVERLAP_F_B runs 0B0 with 0F0, which it needs: the ops of an overlapped slot run at the same time
    """
    problems = slot_dependency_problems(arrays, limit=11)
    if problems:
        more = " (and more)" if len(problems) > 10 else ""
        rule = "the ops of an overlapped slot run at the same time"
        raise InvalidScheduleError(f"{arrays.schedule.describe()}: " + "; ".join(problems[:10]) + f"{more}: {rule}")


#: computes ``(pred, cross)`` from ``(kind code, stage, mb, device, S, m)`` columns, or returns
#: ``None`` to leave it to :func:`build_dag_arrays`' numpy rules (the engines pass a compiled one)
LinksFunction = Callable[
    [np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int], "tuple[np.ndarray, np.ndarray] | None"
]


def build_dag_arrays(schedule: Schedule, check: bool = True, links: LinksFunction | None = None) -> DagArrays:
    """Build the :class:`DagArrays` of a schedule (raises if ops are missing/extra/misplaced, or
    if an overlapped slot holds an op and its own input, :func:`require_independent_slots`;
    ``check=False`` skips those checks, for callers that made them already or report them
    themselves, as the verifier does). ``links``, given a
    complete schedule's op columns, may compute the predecessors instead of the numpy rules
    below (it must return the same arrays; ``None`` falls back to them).

    Example:
        >>> from ppverify.schedules import build
        >>> build_dag_arrays(build("1f1b", p=4, m=8)).num_ops
        64
    """
    S, m = schedule.num_stages, schedule.m
    ops, dev, offsets, fused, idle_before = _flatten_programs(schedule)
    cols = _op_columns(ops)
    if check and (cols is None or not _complete_fast(schedule, *cols, dev)):
        require_complete(schedule)  # names the problems
    if cols is None:  # named as the engines name it: the op, its device, its kind
        d, bad = next((int(d), o) for o, d in zip(ops, dev) if o[0] not in KIND_CODE)
        raise InvalidScheduleError(f"{schedule.describe()}: op {bad} on device {d}: unknown kind {bad[0]!r}")
    kc, st, mbs = cols
    linked = links(kc, st, mbs, dev, S, m) if links is not None and check else None
    if linked is not None:
        out = DagArrays(schedule, ops, kc, st, mbs, dev, offsets, linked[0], linked[1], fused, idle_before)
        require_independent_slots(out)
        return out
    # dense id -> position; id = (kind * S + stage) * m + mb
    pos = np.full(len(KINDS) * S * m, -1, dtype=np.int64)
    pos[(kc * S + st) * m + mbs] = np.arange(len(ops))
    fid = lambda s: (KIND_CODE[F] * S + s) * m + mbs  # noqa: E731

    # the gradient-producing op of (s, mb): B if present, else I
    def grad_pos(s: np.ndarray) -> np.ndarray:
        b = pos[(KIND_CODE[B] * S + s) * m + mbs]
        i = pos[(KIND_CODE[I] * S + s) * m + mbs]
        out: np.ndarray = np.where(b >= 0, b, i)
        return out

    is_f = kc == KIND_CODE[F]
    is_g = (kc == KIND_CODE[B]) | (kc == KIND_CODE[I])
    is_w = kc == KIND_CODE[W]
    p0 = np.full(len(ops), -1, dtype=np.int64)
    p1 = np.full(len(ops), -1, dtype=np.int64)
    f_prev = is_f & (st > 0)
    p0[f_prev] = pos[fid(np.maximum(st - 1, 0))][f_prev]
    p0[is_g] = pos[fid(st)][is_g]
    g_next = is_g & (st < S - 1)
    p1[g_next] = grad_pos(np.minimum(st + 1, S - 1))[g_next]
    p0[is_w] = pos[(KIND_CODE[I] * S + st) * m + mbs][is_w]
    c0 = (p0 >= 0) & (dev[np.maximum(p0, 0)] != dev)
    c1 = (p1 >= 0) & (dev[np.maximum(p1, 0)] != dev)
    out = DagArrays(
        schedule,
        ops,
        kc,
        st,
        mbs,
        dev,
        offsets,
        np.stack([p0, p1], axis=1),
        np.stack([c0, c1], axis=1),
        fused,
        idle_before,
    )
    if check:  # every engine times a slot as one: an op inside it cannot wait for its neighbour
        require_independent_slots(out)
    return out


def build_dag(schedule: Schedule, check: bool = True, between: Callable[[], None] | None = None) -> StepDAG:
    """Build the :class:`StepDAG` of a schedule (raises if ops are missing/extra/misplaced or an
    overlapped slot holds an op and its own input; ``check=False`` skips those checks, as in
    :func:`build_dag_arrays`).

    ``between`` is called between the build's phases (each linear in the ops): a deadline check
    that raises stops a build of millions of ops in time.

    Example:
        >>> from ppverify.schedules import build
        >>> build_dag(build("1f1b", p=4, m=8)).num_ops
        64
    """
    tick = between or (lambda: None)
    a = build_dag_arrays(schedule, check)
    tick()
    # the edge kinds by indexing an array of the three names: one shared string object each
    names = np.array([ACT, LOCAL, GRAD], dtype=object)
    codes = np.stack([np.where(a.kind == KIND_CODE[F], 0, 1), np.where(a.pred[:, 1] >= 0, 2, 1)], axis=1)
    edge = names[codes].tolist()
    tick()
    pred = a.pred.tolist()
    tick()
    cross = a.cross.tolist()
    tick()
    return StepDAG(
        schedule,
        a.ops,
        a.device.tolist(),
        list(a.offsets),
        pred,
        edge,
        cross,
        a.fused.tolist(),
        a.idle_before.tolist(),
    )
