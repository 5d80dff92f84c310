"""What the optimizer is asked: the ops of one step (from a placement, ``m`` and whether the
backward is split), their costs, the communication delay of every cross-device edge, the
collectives that end the step (replica all-reduce per ``sync`` mode, data-parallel all-reduce; see
:mod:`.collectives`), a memory cap and the objective; and the same in integer ticks, ready for
CP-SAT.

The ops and their dependencies come from :mod:`ppverify.core.dag`: a *skeleton* schedule holding every
required op (in an arbitrary order) is built and :func:`ppverify.core.dag.build_dag` numbers the ops
and gives their predecessors, so the solver never re-derives the DAG.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

from ..core.comm import NO_COMM, CommModel, transfer_time
from ..core.costs import CostModel
from ..core.dag import StepDAG, build_dag
from ..core.errors import ParameterError
from ..core.exact import exact_fraction
from ..core.ops import B, F, I, Op, W
from ..core.placement import Placement
from ..core.schedule import Schedule

if TYPE_CHECKING:  # imported when used: the collectives module needs the engines
    from .collectives import StepCollective
    from .deadline import Deadline

#: what can be minimized: the global step time, or the zero-bubble paper's longest per-device span
#: (from a device's first op start to its last op end; the paper's ILP objective, per stage)
OBJECTIVES: tuple[str, ...] = ("makespan", "span")

#: tick used for costs in seconds (presets), whose floats share no useful common divisor
SECONDS_TICK = Fraction(1, 10**7)

#: a model wider than this many ticks gets a coarser (rounded) tick; exact below it
MAX_HORIZON_TICKS = 2**40

#: building an instance takes about this many times as long as building its skeleton (measured
#: 7-9 from 30k to 1.5M ops, several families); a deadline nearer than that stops the build early
BUILD_PER_SKELETON = 6.0


def default_pipes(placement: Placement, m: int) -> tuple[int, ...]:
    """Pipe of each microbatch when the caller gives none: all 0 with one pipe; with two pipes
    Chimera's rule (per unit of ``p`` microbatches the first half go down, the rest up).

    Example:
        >>> from ppverify.core.placement import bidirectional
        >>> default_pipes(bidirectional(4), 6)
        (0, 0, 1, 1, 0, 0)
    """
    if placement.num_pipes == 1:
        return (0,) * m
    unit = max(placement.p, 2)
    return tuple(0 if (mb % unit) < unit // 2 else 1 for mb in range(m))


@dataclass(frozen=True, eq=False)
class Problem:
    """One optimization request.

    ``memory_cap`` is per device in the cost model's memory units (``costs.activation``; one
    microbatch on a whole device share is 1), ``None`` for no cap. ``split`` says whether every
    backward is ``I`` + ``W`` (else one ``B``). ``sync`` and ``dp_allreduce`` choose the
    collectives that end the step, as the async engine's options of the same names (default: the
    engine's, an eager replica all-reduce on two-pipe placements).

    Example:
        >>> from ppverify.core.placement import linear
        >>> pl = linear(2)
        >>> pr = Problem(pl, 3, CostModel.abstract(pl, F=1, I=1, W=1), split=True)
        >>> pr.num_ops, pr.pipes
        (18, (0, 0, 0))
    """

    placement: Placement
    m: int
    costs: CostModel
    comm: CommModel = NO_COMM
    split: bool = True
    memory_cap: float | None = None
    objective: str = "makespan"
    pipe_of_mb: tuple[int, ...] | None = None
    sync: str = "eager"
    dp_allreduce: int = 0
    #: the :func:`~.footprint.footprint_key` a command's boundary checked (:func:`~.footprint.checked_footprint`);
    #: ``None``: not checked yet, :func:`instance` checks it
    footprint_checked: tuple[int, bool] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from .collectives import SYNC_MODES

        if self.sync not in SYNC_MODES:
            raise ParameterError("sync", self.sync, f"expected one of {', '.join(SYNC_MODES)}")
        if isinstance(self.dp_allreduce, bool) or not isinstance(self.dp_allreduce, int) or self.dp_allreduce < 0:
            raise ParameterError("dp-allreduce", self.dp_allreduce, "must be an integer >= 0 (data-parallel replicas)")
        if isinstance(self.m, bool) or not isinstance(self.m, int) or self.m < 1:
            raise ParameterError("m", self.m, "must be an integer >= 1")
        if self.objective not in OBJECTIVES:
            raise ParameterError("objective", self.objective, f"expected one of {', '.join(OBJECTIVES)}")
        if self.costs.num_stages != self.placement.num_stages:
            raise ParameterError(
                "costs",
                self.costs.num_stages,
                f"cost model has {self.costs.num_stages} stages, placement {self.placement.num_stages}",
            )
        if self.memory_cap is not None and not (math.isfinite(self.memory_cap) and self.memory_cap > 0):
            # inf is no cap (leave it None); it would also have no exact rational (core.exact)
            raise ParameterError("memory-cap", self.memory_cap, "must be a finite number > 0 (None: no cap)")
        if self.pipe_of_mb is not None and len(self.pipe_of_mb) != self.m:
            raise ParameterError("pipe_of_mb", len(self.pipe_of_mb), f"need one pipe per microbatch (m={self.m})")

    @property
    def p(self) -> int:
        """Number of devices."""
        return self.placement.p

    @property
    def pipes(self) -> tuple[int, ...]:
        """Pipe of each microbatch (given, or :func:`default_pipes`)."""
        return self.pipe_of_mb if self.pipe_of_mb is not None else default_pipes(self.placement, self.m)

    @property
    def num_ops(self) -> int:
        """Ops of one step: per stage and microbatch F plus B, or F, I and W."""
        return self.placement.num_stages * self.m * (3 if self.split else 2)

    def skeleton(self, deadline: Deadline | None = None) -> Schedule:
        """A schedule holding every required op once, on its device, in stage-major order (an
        order, not a plan: it only carries the op set into :func:`ppverify.core.dag.build_dag`, which
        checks that it is complete). ``deadline`` is checked every 16,384 microbatches, with the
        pace so far: :class:`.deadline.WallLimitReached` is raised once it has passed or once the
        instance built from this skeleton could not be finished before it (see
        :data:`BUILD_PER_SKELETON`), so that a hopeless build stops early, with little to free.

        Example:
            >>> from ppverify.core.placement import linear
            >>> pl = linear(2)
            >>> [str(o) for o in Problem(pl, 1, CostModel.abstract(pl), split=False).skeleton().programs[1]]
            ['1F0', '1B0']
        """
        t0 = time.monotonic()
        pl, pipes = self.placement, self.pipes
        kinds = (F, I, W) if self.split else (F, B)
        programs: list[list[Op]] = [[] for _ in range(pl.p)]
        for s in range(pl.num_stages):
            on = [programs[pl.device(q, s)] for q in range(pl.num_pipes)]
            for mb in range(self.m):
                if mb % 16384 == 0:
                    _check_pace(deadline, t0, (s * self.m + mb) / (pl.num_stages * self.m))
                on[pipes[mb]].extend([Op(k, s, mb) for k in kinds])
        _check_pace(deadline, t0, 1.0)
        return Schedule(pl, self.m, tuple(tuple(pr) for pr in programs), pipes, "optimize", {"p": pl.p, "m": self.m})


def _check_pace(deadline: Deadline | None, t0: float, done: float) -> None:
    """Raise :class:`.deadline.WallLimitReached` once ``deadline`` has passed or when, at the pace of
    a skeleton ``done`` (a fraction) built since ``t0``, the instance cannot be built before it."""
    from .deadline import WallLimitReached, check

    check(deadline)
    if deadline is None or done < 0.1:
        return  # too little done to judge the pace
    spent = time.monotonic() - t0
    # a build cut late has millions of objects to free: the deadline would pass by a second or more
    if spent / done * (1.0 + BUILD_PER_SKELETON) - spent > deadline.remaining():
        raise WallLimitReached()


def edge_delays(dag: StepDAG, costs: CostModel, comm: CommModel, deadline: Deadline | None = None) -> list[list[float]]:
    """Delay between the end of ``dag.pred[i][k]`` and the earliest start of op i: the transfer
    time of the boundary between the two stages when the edge crosses devices, else 0
    (``deadline`` checked every 65,536 ops); a communication model's time that is not a finite
    number >= 0 is refused (:func:`ppverify.core.comm.transfer_time`).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> dag = build_dag(build("gpipe", p=2, m=1))
        >>> edge_delays(dag, CostModel.abstract(dag.schedule.placement), FixedDelay(0.5))
        [[0.0, 0.0], [0.0, 0.5], [0.5, 0.0], [0.0, 0.0]]
    """
    from .deadline import check

    bb = costs.boundary_bytes
    out: list[list[float]] = []
    for i, op in enumerate(dag.ops):
        if i % 65536 == 0:
            check(deadline)
        row = [0.0, 0.0]
        for k in (0, 1):
            q = dag.pred[i][k]
            if q >= 0 and dag.cross[i][k]:
                lo = min(op.stage, dag.ops[q].stage)
                row[k] = transfer_time(comm, dag.device[q], dag.device[i], bb[lo] if lo < len(bb) else 0.0)
        out.append(row)
    return out


def _frac(x: float) -> Fraction:
    # the verifier's reading: a denominator-10**6 rounding made 1e-7 a 0 (then one whole tick)
    # and 1.0000004 a 1, so the optimum and its bound were of other costs
    return exact_fraction(x)


def _gcd_frac(values: Sequence[Fraction]) -> Fraction:
    g = Fraction(0)
    for v in values:
        if v:
            g = (
                Fraction(
                    math.gcd(g.numerator * v.denominator, v.numerator * g.denominator), g.denominator * v.denominator
                )
                if g
                else v
            )
    return g or Fraction(1)


@dataclass(frozen=True, eq=False)
class Instance:
    """A :class:`Problem` in integers: op positions of ``dag``; ``dur[i]`` and ``delay[i][k]`` in
    ticks of ``tick`` time units; memory in integer units of ``mem_unit`` activations
    (``alloc[i]`` at an op's start, ``free[i]`` at its end); ``cap`` (``None`` = no cap).

    ``exact`` is False when the tick had to be rounded (durations that share no small common
    divisor); times are then rounded down to whole ticks, so bounds hold for the true times and
    values are exact for the rounded ones only. ``colls`` are the collectives
    ending the step (:mod:`.collectives`), ``coll_dur`` their durations in ticks.
    """

    problem: Problem
    dag: StepDAG
    dur: list[int]
    delay: list[list[int]]
    tick: float
    alloc: list[int]
    free: list[int]
    cap: int | None
    mem_unit: Fraction
    exact: bool
    colls: tuple[StepCollective, ...] = ()
    coll_dur: tuple[int, ...] = ()

    @property
    def p(self) -> int:
        """Number of devices."""
        return self.problem.p

    @cached_property
    def topo(self) -> list[int]:
        """The DAG's topological order, computed once (the bounds walk it many times)."""
        return self.dag.topological_order()

    @cached_property
    def mb_members(self) -> dict[int, list[int]]:
        """Per microbatch, its op positions in topological order (paths stay in a microbatch)."""
        out: dict[int, list[int]] = {}
        ops = self.dag.ops
        for i in self.topo:
            out.setdefault(ops[i].mb, []).append(i)
        return out

    def device_ops(self, d: int) -> range:
        """Positions of device d's ops in ``dag``."""
        return range(self.dag.offsets[d], self.dag.offsets[d + 1])

    def to_time(self, ticks: float) -> float:
        """Ticks to the cost model's time unit (a value: the nearest float; a bound takes
        :meth:`bound_time`)."""
        return float(ticks) * self.tick

    def bound_time(self, ticks: float) -> float:
        """A lower bound of ``ticks`` in the cost model's time unit, never above the exact one
        (:func:`bound_time`).

        Example:
            >>> from ppverify.core.placement import linear
            >>> inst = instance(Problem(linear(2), 3, CostModel.abstract(linear(2), F=0.1, B=0.2), split=False))
            >>> inst.to_time(12), inst.bound_time(12)  # 12 ticks of 1/10: 6/5, whose nearest float is above it
            (1.2000000000000002, 1.2)
        """
        return bound_time(ticks, self.tick)

    def programs_by_start(self, starts: Sequence[int]) -> tuple[tuple[Op, ...], ...]:
        """Each device's ops in order of their start ticks (ties: zero-length ops first, an op
        after its inputs, then in op position order).

        Example:
            >>> from ppverify.core.placement import linear
            >>> from ppverify.core.costs import CostModel
            >>> inst = instance(Problem(linear(1), 2, CostModel.abstract(linear(1), F=1, B=2), split=False))
            >>> [[str(o) for o in prog] for prog in inst.programs_by_start([0, 4, 1, 2])]
            [['0F0', '0F1', '0B1', '0B0']]
        """
        programs: list[list[Op]] = [[] for _ in range(self.p)]
        # an op after its inputs that start at the same tick (zero-length ones, no delay), or a
        # chain of them (an I of 0 ticks per stage) would run in position order: a deadlock
        rank = [0] * self.dag.num_ops
        for i in self.dag.topological_order() if 0 in self.dur else ():
            same = (rank[q] + 1 for q in self.dag.pred[i] if q >= 0 and starts[q] == starts[i])
            rank[i] = max(same, default=0)
        # a zero-length op goes before an op of positive length that starts at the same tick (it
        # ran at that instant; after it, it would wait for the other's end)
        for i in sorted(range(self.dag.num_ops), key=lambda i: (starts[i], self.dur[i] > 0, rank[i], i)):
            programs[self.dag.device[i]].append(self.dag.ops[i])
        return tuple(tuple(prog) for prog in programs)


def instance(problem: Problem, schedule: Schedule | None = None, deadline: Deadline | None = None) -> Instance:
    """Turn a problem (or, in evaluate mode, a schedule's own op order) into integer ticks.

    The tick is the greatest common divisor of all durations and delays, so timing is exact.
    ``deadline`` (:mod:`.deadline`) is checked between the steps.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.comm import FixedDelay
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1, B=2), FixedDelay(0.5), split=False))
        >>> inst.tick, inst.dur, inst.delay[1]
        (0.5, [2, 4, 2, 4], [0, 1])
    """
    from .footprint import check_footprint, footprint_key

    if problem.footprint_checked != footprint_key(problem):  # checked once: here, or at the boundary
        check_footprint(problem)  # --max-memory-gib: refused before anything proportional to the ops
    with _collector_paused():
        return _build_instance(problem, schedule, deadline)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    # an instance is millions of small acyclic lists: the cyclic collector would rescan them all
    # several times while they are built (a third of the build time, in pauses between checks)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build_instance(problem: Problem, schedule: Schedule | None, deadline: Deadline | None) -> Instance:
    from .collectives import step_collectives
    from .deadline import check

    check(deadline)
    skeleton = schedule if schedule is not None else problem.skeleton(deadline)
    check(deadline)
    dag = build_dag(skeleton, between=lambda: check(deadline))
    check(deadline)
    costs = problem.costs
    # few distinct values (per kind and stage, per link): each float is converted once, and the
    # per-op lists keep the floats (hashing Fractions per op dominated on large steps)
    dur_x = [float(costs.op_duration(op)) for op in dag.ops]
    check(deadline)
    delay_x = edge_delays(dag, costs, problem.comm, deadline)  # floats already
    check(deadline)
    colls = tuple(step_collectives(dag, costs, problem.comm, problem.sync, problem.dp_allreduce))
    coll_x = [float(c.duration) for c in colls]
    counts = Counter(dur_x)
    check(deadline)
    counts.update(x for row in delay_x for x in row)
    check(deadline)
    counts.update(coll_x)
    fracs = {x: _frac(x) for x in counts}
    tick = _gcd_frac(list(fracs.values()))
    horizon = sum((fracs[x] * c for x, c in counts.items()), Fraction(0))
    check(deadline)
    exact = True
    if costs.time_unit == "s" and tick < SECONDS_TICK:
        # durations from presets are measured floats: 0.1 us resolution, reported as rounded
        tick, exact = SECONDS_TICK, False
    if horizon / tick > MAX_HORIZON_TICKS:
        # denominators up to 1/target keep the tick above 0 (a tiny horizon of tiny times rounded it
        # to 0, and the old tick, with far more than MAX_HORIZON_TICKS, was kept)
        target = horizon / MAX_HORIZON_TICKS * 4
        tick = target.limit_denominator(max(10**6, math.ceil(1 / target)))
        exact = False
    # exact ticks divide every time; otherwise times are rounded down, so that every schedule of the
    # true times is at least as long as some schedule of the ticks: bounds stay valid for the true times
    to_ticks = round if exact else math.floor
    ticks = {x: to_ticks(f / tick) for x, f in fracs.items()}
    # a zero-length op stays 0 ticks (CP-SAT takes zero-size intervals: on a no-overlap a point that
    # cannot sit strictly inside another op; as a holder of memory it starts at F and ends at B):
    # stretching it to one tick made bounds exceed real makespans
    dur = [ticks[x] for x in dur_x]
    check(deadline)
    delay = [[ticks[x] for x in row] for row in delay_x]
    coll_dur = tuple(ticks[x] for x in coll_x)
    # memory: allocation of F, frees of I (fraction freed_by_I) and W/B (the rest), as exact
    # integers of one common unit, so the cumulative constraint has no rounding
    act = [_frac(a) for a in costs.activation]
    fi = [_frac(x) for x in costs.freed_by_I]
    zero = Fraction(0)
    shapes = {(k, st) for k in (F, B, I, W) for st in range(len(act))}
    amount = {}
    for k, st in shapes:
        a = act[st]
        amount[(k, st)] = (
            (a, zero) if k == F else (zero, a) if k == B else (zero, a * fi[st]) if k == I else (zero, a * (1 - fi[st]))
        )
    check(deadline)
    cap_f = _frac(problem.memory_cap) if problem.memory_cap is not None else None
    used = {(op.kind, op.stage) for op in dag.ops}
    unit = _gcd_frac([x for key in used for x in amount[key]] + ([cap_f] if cap_f else []))
    units = {key: (int(amount[key][0] / unit), int(amount[key][1] / unit)) for key in used}
    check(deadline)
    pairs = [units[(op.kind, op.stage)] for op in dag.ops]
    check(deadline)
    alloc = [x for x, _ in pairs]
    free = [y for _, y in pairs]
    cap = math.floor(cap_f / unit) if cap_f is not None else None
    return Instance(problem, dag, dur, delay, float(tick), alloc, free, cap, unit, exact, colls, coll_dur)


def on_grid(inst: Instance, factor: int, up: bool) -> Instance:
    """``inst`` on a grid of ``factor`` ticks: durations, delays and the collectives' durations
    rounded up (``up``; a duration to at least one coarse tick) or down (it may become 0), memory
    unchanged. Rounded up, a timing of the coarse instance is one of ``inst`` (:mod:`.coarse`);
    rounded down, a bound on it is one on ``inst`` (:mod:`.floored`).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> pl = linear(2)
        >>> inst = instance(Problem(pl, 1, CostModel.abstract(pl, F=1.5, I=1, W=0.5), split=True))
        >>> inst.dur, on_grid(inst, 2, up=True).dur, on_grid(inst, 2, up=False).dur
        ([3, 2, 1, 3, 2, 1], [2, 1, 1, 2, 1, 1], [1, 1, 0, 1, 1, 0])
    """
    if factor == 1:
        return inst

    def rounded(x: int) -> int:
        return -(-x // factor) if up else x // factor

    return dataclasses.replace(
        inst,
        dur=[max(1, rounded(d)) if up else rounded(d) for d in inst.dur],
        delay=[[rounded(x) for x in row] for row in inst.delay],
        tick=inst.tick * factor,
        exact=False,
        coll_dur=tuple(rounded(x) for x in inst.coll_dur),
    )


def bound_time(ticks: float, tick: float) -> float:
    """``ticks`` x ``tick`` as a certified lower bound: the product taken exactly (the tick read as
    :func:`~ppverify.core.exact.exact_fraction` reads every amount, as the instance made it) and
    rounded toward -inf, so a bound never reads above the exact optimum (12 ticks of 0.1 are 6/5,
    whose product in floats, 1.2000000000000002, is above it). Values (makespans) stay nearest.

    Example:
        >>> bound_time(12, 0.1), 12 * 0.1, bound_time(3, 0.5), bound_time(float("inf"), 0.1)
        (1.2, 1.2000000000000002, 1.5, inf)
    """
    if not math.isfinite(ticks):  # an infeasible problem's bound
        return float(ticks) * tick
    exact = Fraction(ticks) * exact_fraction(tick)
    near = float(exact)
    return math.nextafter(near, -math.inf) if near > exact else near
