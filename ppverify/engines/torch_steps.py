"""The ``torch`` semantics: PyTorch pipelining's unit-step simulator, reproduced step for step.

PyTorch 2.13 (``torch.distributed.pipelining.schedules``) times a schedule in two passes, both
re-implemented here without importing torch:

1. :func:`add_send_recv` (PyTorch's ``_add_send_recv``) lowers a compute-only schedule: ranks are
   visited round-robin, each places at most its next action per round once its input has been
   received; every F/I/B whose neighbour stage lives on another rank is followed by its SEND, and
   the matching RECV is appended to the receiving rank's list at that moment.
2. :func:`simulate_steps` (``_simulate_comms_compute``) runs the lowered lists: each step every
   rank runs its next action if ready (a RECV once the peer has run the SEND, an F/I/B once its
   RECV or the local upstream op ran, anything else at once) or idles; a second pass lets an idle
   rank take an action unblocked by a later rank in the same step. Every action, SEND and RECV
   included, takes one step, with zero latency.

The step count is what PyTorch's tests assert (11, 24 and 113 for its fixtures). Known limits of
this model, kept on purpose so that the counts match: W is never checked against its I, a backward
is never checked against its own forward. The op set is checked as the other engines check it
(:func:`ppverify.core.dag.require_complete`): :func:`torch_timeline` raises
:class:`~ppverify.core.errors.InvalidScheduleError` for a missing, duplicated or misplaced op, an
unknown kind or an out-of-range stage or microbatch, before any step is counted. Extensions where PyTorch raises instead: UNSHARD,
RESHARD and REDUCE_GRAD are dropped (free in time), and an ``OVERLAP_F_B`` cell is one step that
runs once all of its ops are ready. Durations, and so a system's runtime overhead
(:mod:`ppverify.core.overhead`), are ignored: every action is one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..core.compiled import use_compiled
from ..core.costs import CostModel
from ..core.dag import build_dag_arrays
from ..core.errors import DeadlockError
from ..core.lowering import (
    RECV_B,
    RECV_F,
    SEND_B,
    SEND_F,
    _parts,
    _stage_rank,
    add_send_recv,
    comm_problems,
    lowered,
    merge_bw,
)
from ..core.ops import Action, B, Comm, F, I, Marker, Op
from ..core.schedule import Schedule
from ..core.timeline import Timeline, TimelineInfo, Transfers


def simulate_steps(schedule: Schedule) -> list[list[Action]]:
    """Run a lowered schedule (with SEND/RECV) the way ``_simulate_comms_compute`` does and return
    the step grid: ``grid[rank][step]`` is the action run then, ``None`` for an idle step.

    Raises :class:`DeadlockError` when no rank can progress (PyTorch raises ``ValueError:
    Schedule is not progressing``).

    Example:
        >>> from ppverify.schedules import build
        >>> grid = simulate_steps(add_send_recv(build("gpipe", p=2, m=1)))
        >>> [[str(a) if a else "" for a in row] for row in grid]
        [['0F0', '0SEND_F0', '', '', '0RECV_B0', '0B0'], ['', '1RECV_F0', '1F0', '1B0', '1SEND_B0']]
    """
    rank_of = _stage_rank(schedule)
    if use_compiled(sum(map(len, schedule.programs))):  # numba kernel, same grid (tests/engines/test_kernels.py)
        from .torch_steps_kernel import simulate_steps_compiled

        compiled_grid = simulate_steps_compiled(schedule)
        if compiled_grid is not None:  # None: run the reference (it also names deadlocks)
            return compiled_grid
    S = schedule.num_stages
    todo = {
        r: [a for a in prog if a is not None and not isinstance(a, Marker)] for r, prog in enumerate(schedule.programs)
    }
    grid: dict[int, list[Action]] = {r: [] for r in todo}
    prev: dict[int, set] = {r: set() for r in todo}

    def ready_one(a) -> bool:
        k, s, mb = a.kind, a.stage, a.mb
        if not 0 <= s < S:
            return True
        seen = prev[rank_of[s]]
        if type(a) is Op:
            if k == F:
                return s == 0 or Comm(RECV_F, s, mb) in seen or Op(F, s - 1, mb) in seen
            if k in (I, B):
                return s == S - 1 or Comm(RECV_B, s, mb) in seen or Op(I, s + 1, mb) in seen or Op(B, s + 1, mb) in seen
            return True  # W: PyTorch never checks it against its I
        if k == SEND_F:
            return Op(F, s, mb) in seen
        if k == RECV_F:
            return s > 0 and Comm(SEND_F, s - 1, mb) in prev[rank_of[s - 1]]
        if k == SEND_B:
            return Op(I, s, mb) in seen or Op(B, s, mb) in seen
        return s < S - 1 and Comm(SEND_B, s + 1, mb) in prev[rank_of[s + 1]]  # RECV_B

    def ready(a: Action) -> bool:
        return all(ready_one(x) for x in _parts(a))

    def record(r: int, a: Action) -> None:
        for x in _parts(a):
            prev[r].add(x)

    while todo:
        progress = False
        for r in sorted(todo):
            if not todo[r]:
                continue
            a = todo[r][0]
            if ready(a):
                grid[r].append(a)
                record(r, a)
                todo[r].pop(0)
                progress = True
            else:
                grid[r].append(None)
        for r in sorted(todo, reverse=True):
            if not todo[r]:
                del todo[r]
        # PyTorch's second pass: an idle rank may take an action a later rank just unblocked
        for r in sorted(todo):
            if grid[r][-1] is not None:
                continue
            a = todo[r][0]
            if ready(a):
                grid[r][-1] = a
                record(r, a)
                todo[r].pop(0)
        for r in sorted(todo, reverse=True):
            if not todo[r]:
                del todo[r]
        if not progress:
            raise DeadlockError(
                [(r, str(todo[r][0]), "a SEND or an upstream op that never runs") for r in sorted(todo)]
            )
    return [grid[r] for r in range(schedule.p)]


def torch_step_count(schedule_or_actions: Schedule | Sequence[Sequence[Action]] | dict) -> int:
    """Number of steps PyTorch's ``_simulate_comms_compute`` takes for a schedule (lowered first
    when it has no SEND/RECV): the longest rank's row of the step grid.

    Also accepts per-rank action lists (or PyTorch's ``pipeline_order`` dict of ``_Action``),
    whose stage -> rank map is inferred from the rows.

    Example:
        >>> from ppverify.schedules import build
        >>> torch_step_count(build("gpipe", p=2, m=1))
        6
    """
    sched = _as_schedule(schedule_or_actions)
    grid = simulate_steps(lowered(sched))
    return max((len(row) for row in grid), default=0)


def _as_schedule(obj) -> Schedule:
    if isinstance(obj, Schedule):
        return obj
    from ..io.torch_csv import parse_rows

    rows = [obj[k] for k in sorted(obj)] if isinstance(obj, dict) else list(obj)
    cells = [["" if a is None else str(a) for a in row] for row in rows]
    return parse_rows(cells, "<actions>")


def _position(pos: dict, stage: int, mb: int, forward: bool) -> int:
    """Timeline position of the op a transfer connects: F for activations, else I or B."""
    if forward:
        return pos.get(Op(F, stage, mb), -1)
    return pos.get(Op(I, stage, mb), pos.get(Op(B, stage, mb), -1))


#: the time unit of a ``torch`` timeline: simulator steps, whatever the costs' own unit
STEPS = "steps"


def in_steps(costs: CostModel) -> CostModel:
    """``costs`` with their times labelled in :data:`STEPS`: the ``torch`` engine gives every
    action one step and reads the costs only for memory, so its timeline's ``time_unit`` (the
    JSON's, a trace's, a chart's axis) says steps, never the costs' ``units`` or ``s``.

    Example:
        >>> from ppverify.core.placement import linear
        >>> c = in_steps(CostModel.abstract(linear(2), F=1, B=2))
        >>> c.time_unit, c.memory_unit, c.duration["B"]
        ('steps', 'activations', (2.0, 2.0))
    """
    return replace(costs, time_unit=STEPS)


def torch_timeline(schedule: Schedule, costs: CostModel | None = None, **_: object) -> Timeline:
    """Timeline of the ``torch`` semantics: every compute op occupies its simulator step
    ``[step, step+1)``; each SEND/RECV pair is a transfer from the SEND's step to the end of the
    RECV's step, so the makespan is the step count, in :data:`STEPS`. ``costs`` only serve memory
    metrics. A schedule whose op set is not one step's (an op missing, twice, on another device)
    raises :class:`~ppverify.core.errors.InvalidScheduleError`, as in the other engines.

    Example:
        >>> from ppverify.schedules import build
        >>> tl = torch_timeline(build("gpipe", p=2, m=1))
        >>> tl.makespan, tl.info.steps, [str(o) for o in tl.ops], tl.start.tolist(), tl.time_unit
        (6.0, 6, ['0F0', '1F0', '1B0', '0B0'], [0.0, 2.0, 3.0, 5.0], 'steps')
    """
    # the op set first, as the slot and async engines check it (missing, duplicated, misplaced,
    # unknown ops raise InvalidScheduleError): the step simulator would time any program it is given
    build_dag_arrays(schedule)
    costs = in_steps(costs or CostModel.unit(schedule.placement))
    if use_compiled(sum(map(len, schedule.programs))):  # numba kernel, same timeline (tests/engines/test_kernels.py)
        from .torch_steps_kernel import torch_timeline_compiled

        compiled_tl = torch_timeline_compiled(schedule, costs)
        if compiled_tl is not None:
            return compiled_tl
    low = lowered(schedule)
    grid = simulate_steps(low)
    rank_of = low.placement.maps[0]
    ops: list[Op] = []
    dev: list[int] = []
    start: list[float] = []
    pos: dict[Op, int] = {}
    sends: dict[Comm, int] = {}
    recvs: list[tuple[Comm, int, int]] = []
    T = max((len(row) for row in grid), default=0)
    for t in range(T):
        for r, row in enumerate(grid):
            a = row[t] if t < len(row) else None
            if a is None:
                continue
            if isinstance(a, Comm):
                if a.kind in (SEND_F, SEND_B):
                    sends[a] = t
                else:
                    recvs.append((a, r, t))
                continue
            for op in _parts(a):
                pos[op] = len(ops)
                ops.append(op)
                dev.append(r)
                start.append(float(t))
    tr = Transfers()
    for c, r, t in recvs:
        fwd = c.kind == RECV_F
        src_stage = c.stage - 1 if fwd else c.stage + 1
        send = Comm(SEND_F if fwd else SEND_B, src_stage, c.mb)
        t0 = sends.get(send, t)
        src_op = _position(pos, src_stage, c.mb, fwd)
        dst_op = _position(pos, c.stage, c.mb, fwd)
        src_dev = rank_of[src_stage] if 0 <= src_stage < len(rank_of) else r
        # the step model has no bytes: transfers only mark when each SEND/RECV pair ran
        tr.add("activation" if fwd else "gradient", src_dev, r, src_op, dst_op, float(t0), float(t + 1), 0.0)
    st = np.asarray(start)
    return Timeline(
        schedule,
        costs,
        "torch",
        ops,
        np.asarray(dev, dtype=np.int64),
        st,
        st + 1.0,
        tr,
        info=TimelineInfo(steps=T, grid=grid, lowered=low is not schedule, step_unit="PyTorch simulator steps"),
    )


__all__ = [
    "RECV_B",
    "RECV_F",
    "SEND_B",
    "SEND_F",
    "STEPS",
    "add_send_recv",
    "comm_problems",
    "in_steps",
    "lowered",
    "merge_bw",
    "simulate_steps",
    "torch_step_count",
    "torch_timeline",
]
