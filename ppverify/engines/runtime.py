"""The ``runtime`` semantics: PyTorch's pipeline runtime on gloo, action by action (the hand-over model).

gloo's point-to-point protocol is a rendezvous: a sender's data moves only once the receiver has
posted its receive (its ``isend`` completes then, not before). PyTorch's runtime posts a
``RECV`` as an action of its own, in the place its lowering puts it (for one stage per rank:
right before the op that needs the tensor), and waits for it just before that op. So a
cross-rank hand-over costs one of two things:

* **early receiver** (the RECV was posted before the SEND, the consumer waits): the data moves
  as soon as the sender posts; the consumer starts ``wake`` after the SEND's post;
* **late receiver** (the SEND was posted first, its data waits on the sender's side): posting
  the RECV starts a round trip through both processes (notify the sender, whose gloo thread
  writes the data, which the receiver's thread reads, which wakes the rank); the consumer starts
  ``late`` after the RECV's post. Every process of the round trip must be scheduled, so on a
  busy machine ``late`` grows far beyond ``wake`` (and its tail is long).

Data is ready at ``SEND post + wake`` when the RECV was posted first, else at ``RECV post +
late``, plus its bytes' time on the link (``bytes / bandwidth``, :func:`wire_time`): the
rendezvous starts the data moving, and the terms, measured with tensors of a few hundred bytes,
hold the link's latency but not a real tensor's bytes. GPipe's and looped BFS's ranks run their forward (and backward) chains with every RECV
late (the producer is always ahead), 1F1B's steady state waits for its producer; that is why a
uniform per-SEND/RECV charge (:mod:`ppverify.core.overhead`, what ``async`` folds into op durations)
cannot fit both.

:func:`predict_runtime` walks every rank's lowered action list (PyTorch's lowering,
:func:`ppverify.io.torch_lowering.lower_like_pytorch`) with a clock: ``gap`` before each compute
op, ``send``/``recv`` per SEND/RECV action posted, ``overshoot`` added to each op's cost, a
``head`` before the first; a consumer starts at ``max(local clock, data ready)``.
:func:`runtime_timeline` is the engine (``simulate --semantics runtime --system PRESET``): the
terms come from a system preset's ``runtime.handover`` section, which ``ppverify calibrate``
measures (:mod:`ppverify.measure.handover` reads them off recorded events). One-pipe schedules
only: two-pipe ones have no PyTorch runtime.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.comm import CommModel, transfer_time
from ..core.costs import CostModel
from ..core.dag import DagArrays, build_dag_arrays
from ..core.errors import DeadlockError, ParameterError
from ..core.ops import Comm, Op, Overlap
from ..core.schedule import Schedule
from ..core.send_gates import gated_pred, send_key
from ..core.timeline import Timeline, TimelineInfo, Transfers
from ..systems.system import link_delay_of
from .core import _waits, list_schedule_flat

#: the model's terms, in the order of :class:`Handover`'s fields (and of ``System.handover_s``)
TERMS = ("head", "overshoot", "gap", "send", "recv", "late", "wake")
#: the terms drawn per action in a drawn walk (``gap``: its residual around the fitted line)
DRAWN = ("head", "overshoot", "gap", "late", "wake")
#: the probabilities at which :func:`fit_handover` keeps each drawn term's quantiles: the middle
#: of each tenth of its samples
DECILES = tuple((k + 0.5) / 10 for k in range(10))


@dataclass(frozen=True)
class Handover:
    """The hand-over model's terms, seconds (see the module doc); ``deciles``: for the terms of
    :data:`DRAWN`, ``(term, quantiles at DECILES)`` of their samples (``gap``: of the residuals
    around ``gap + send * SENDs + recv * RECVs``), which a drawn walk samples once per action.

    Example:
        >>> Handover(head=2e-4, gap=1e-4).scaled(2).gap
        0.0002
    """

    head: float = 0.0
    overshoot: float = 0.0
    gap: float = 0.0
    send: float = 0.0
    recv: float = 0.0
    late: float = 0.0
    wake: float = 0.0
    deciles: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: an emulated link delay (``System.link_delay_s``): data is never ready before its SEND's post
    #: plus this (not a fitted term: the system states it)
    link_delay: float = 0.0

    def scaled(self, k: float) -> Handover:
        """Every term (and its deciles) times ``k`` (a machine's load stretches them together)."""
        terms = {t: getattr(self, t) * k for t in TERMS}
        scaled = tuple((t, tuple(x * k for x in q)) for t, q in self.deciles)
        return Handover(**terms, deciles=scaled, link_delay=self.link_delay)  # the link is not the load

    def as_us(self) -> dict[str, float]:
        """The terms in microseconds, as a preset writes them (``<term>_us``).

        Example:
            >>> Handover(late=1.5e-3).as_us()["late_us"]
            1500.0
        """
        return {f"{t}_us": round(getattr(self, t) * 1e6, 3) for t in TERMS}


class _Drawn:
    """A :class:`Handover` whose drawn terms are sampled afresh at each read (one per action)."""

    def __init__(self, model: Handover, rng: random.Random) -> None:
        self._m, self._rng = model, rng
        self._q = dict(model.deciles)
        self.send, self.recv, self.link_delay = model.send, model.recv, model.link_delay

    def _draw(self, term: str) -> float:
        q = self._q.get(term)
        return q[self._rng.randrange(len(q))] if q else 0.0

    @property
    def head(self) -> float:
        return self._draw("head") if "head" in self._q else self._m.head

    @property
    def overshoot(self) -> float:
        return self._draw("overshoot") if "overshoot" in self._q else self._m.overshoot

    @property
    def gap(self) -> float:
        return max(0.0, self._m.gap + self._draw("gap"))

    @property
    def late(self) -> float:
        return self._draw("late") if "late" in self._q else self._m.late

    @property
    def wake(self) -> float:
        return self._draw("wake") if "wake" in self._q else self._m.wake


def lowered_programs(schedule: Schedule) -> list[list]:
    """Each rank's action list as PyTorch's runtime runs it: the schedule's own when it already
    holds SEND/RECV actions (a compute_comms file), else PyTorch's lowering.

    Example:
        >>> from ppverify.schedules import build
        >>> [str(a) for a in lowered_programs(build("gpipe", p=2, m=1))[1]]
        ['1UNSHARD', '1RECV_F0', '1F0', '1B0', '1SEND_B0', '1REDUCE_GRAD', '1RESHARD']
    """
    from ..io.torch_lowering import lower_like_pytorch

    progs = schedule.programs
    if not any(isinstance(a, Comm) for prog in progs for a in prog):
        progs = lower_like_pytorch(schedule).programs
    return [[a for a in prog if a is not None] for prog in progs]


def comm_key(c: Comm) -> tuple[str, int, int]:
    """``(direction, consuming stage, microbatch)`` of a SEND or RECV: a SEND and its RECV share it.

    Example:
        >>> comm_key(Comm("SEND_F", 1, 0)) == comm_key(Comm("RECV_F", 2, 0)) == ("F", 2, 0)
        True
    """
    if c.kind in ("SEND_F", "SEND_B"):
        return send_key(c)
    return ("F" if c.kind == "RECV_F" else "B", c.stage, c.mb)


def input_key(op: Op) -> tuple[str, int, int]:
    """The :func:`comm_key` of the tensor ``op`` consumes (a forward its activation, a backward
    its gradient).

    Example:
        >>> input_key(Op("I", 0, 3))
        ('B', 0, 3)
    """
    return ("F" if op.kind == "F" else "B", op.stage, op.mb)


def _send_of(key: tuple[str, int, int]) -> str:
    # the SEND action that feeds the input ``key``: 1SEND_F0 feeds (F, 2, 0)
    d, stage, mb = key
    return str(Comm(f"SEND_{d}", stage - 1 if d == "F" else stage + 1, mb))


def flat_actions(prog: Sequence) -> list:
    """A rank's actions in order, overlapped ops unpacked, only compute ops and SEND/RECV kept.

    Example:
        >>> [str(a) for a in flat_actions([Op("F", 0, 0), None, Comm("SEND_F", 0, 0)])]
        ['0F0', '0SEND_F0']
    """
    out: list = []
    for a in prog:
        out.extend(a.ops if isinstance(a, Overlap) else [a])
    return [a for a in out if isinstance(a, (Op, Comm))]


@dataclass(frozen=True)
class RuntimeWalk:
    """One step as :func:`predict_runtime` walks it (seconds from the step start): the makespan,
    each op's ``(start, end)``, each rank's SEND and RECV posts by ``(rank, Comm)``, and when each
    op's input arrived (ops fed by another rank).

    Example:
        >>> RuntimeWalk(1.0, {}, {}, {}).makespan
        1.0
    """

    makespan: float
    ops: dict[Op, tuple[float, float]]
    sends: dict[tuple[int, Comm], float]
    recvs: dict[tuple[int, Comm], float]
    arrivals: dict[Op, float] = field(default_factory=dict)
    #: for those ops, when the rank itself was ready for them (its clock), before any wait for data
    ready: dict[Op, float] = field(default_factory=dict)
    #: the rank that ran each op
    ranks: dict[Op, int] = field(default_factory=dict)


def predict_runtime(
    schedule: Schedule,
    costs: CostModel,
    model: Handover,
    draws: int = 0,
    seed: int = 0,
    comm: CommModel | None = None,
) -> RuntimeWalk:
    """The step of ``schedule`` in PyTorch's runtime under the hand-over ``model``: makespan
    (seconds from the step start), each op's start and end, each SEND's and RECV's post.
    ``comm`` (a system): each hand-over also takes its tensor's bytes over the link between
    the two ranks (:func:`wire_time`); without it, or with ``costs`` that carry no bytes, none.

    ``draws > 0`` (and a model with ``deciles``): walk ``draws`` times, each action's terms drawn
    from their deciles (seeded by ``seed``: the same answer every time), and return the walk of
    median makespan. A makespan is a maximum over paths, so random per-action times lengthen it
    beyond the walk of their means; a loaded machine's terms have long tails.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> c = CostModel.abstract(s.placement, F=1, B=2)
        >>> predict_runtime(s, c, Handover(wake=0.5)).makespan   # F, hand-over, F B, hand-over, B
        7.0
        >>> predict_runtime(s, c, Handover(gap=0.25, late=3.0, wake=0.5)).makespan   # both RECVs early: no late
        7.25
        >>> s2 = build("gpipe", p=2, m=2)   # 1RECV_F1 and 0RECV_B1 are posted as their SENDs: late
        >>> predict_runtime(s2, CostModel.abstract(s2.placement, F=1, B=2), Handover(late=3.0)).makespan
        15.0
        >>> h = Handover(wake=0.5, deciles=(("wake", (0.0, 1.0)),))   # each hand-over 0 or 1: median of draws
        >>> predict_runtime(s, c, h, draws=9).makespan in (6.0, 7.0, 8.0)
        True
        >>> from ppverify.core.comm import FixedDelay
        >>> predict_runtime(s, c, Handover(wake=0.5), comm=FixedDelay(9.0)).makespan   # abstract: no bytes
        7.0
    """
    progs = [flat_actions(p) for p in lowered_programs(schedule)]  # lowered once for every walk
    if draws > 0 and model.deciles:
        rng = random.Random(seed)
        walks = sorted((_walk(progs, costs, _Drawn(model, rng), comm) for _ in range(draws)), key=lambda w: w.makespan)
        return walks[(draws - 1) // 2]
    return _walk(progs, costs, model, comm)


def wire_time(comm: CommModel | None, costs: CostModel, src: int, dst: int, key: tuple[str, int, int]) -> float:
    """Seconds the bytes of the tensor ``key`` (:func:`comm_key`) take from rank ``src`` to
    ``dst`` beyond the link's latency: ``bytes / bandwidth`` on a system's link (its transfer
    time less that of 0 bytes, so the latency and an emulated delay are not counted: the
    hand-over terms hold the one, the walk adds the other apart). 0 without ``comm`` or bytes.

    Example:
        >>> from ppverify.systems.system import System, LinkTier
        >>> from ppverify.core.placement import linear
        >>> sysm = System("x", "cpu", 1e12, 1e9, 2, 1, LinkTier("l", 1e-3, 1e6), LinkTier("l", 1e-3, 1e6))
        >>> c = replace(CostModel.abstract(linear(2), F=1, B=2), boundary_bytes=(5e5,))
        >>> round(wire_time(sysm, c, 0, 1, ("F", 1, 0)), 9)   # 5e5 B / 1e6 B/s, the 1 ms latency left out
        0.5
    """
    d, stage, _ = key
    boundary = stage - 1 if d == "F" else stage  # an activation comes from stage - 1, a gradient from stage + 1
    sizes = costs.boundary_bytes
    nbytes = float(sizes[boundary]) if 0 <= boundary < len(sizes) else 0.0
    if comm is None or not nbytes or src == dst:
        return 0.0
    # both checked (finite, >= 0), as every engine reads a model's times
    return max(0.0, transfer_time(comm, src, dst, nbytes) - transfer_time(comm, src, dst, 0.0))


def _walk(progs: list[list], costs: CostModel, model: Handover | _Drawn, comm: CommModel | None = None) -> RuntimeWalk:
    p = len(progs)
    clock = [model.head for _ in range(p)]
    first = [True] * p
    ptr = [0] * p
    sent: dict[tuple[str, int, int], float] = {}
    sender: dict[tuple[str, int, int], int] = {}
    posted: dict[tuple[str, int, int], float] = {}
    times: dict[Op, tuple[float, float]] = {}
    sends: dict[tuple[int, Comm], float] = {}
    recvs: dict[tuple[int, Comm], float] = {}
    arrivals: dict[Op, float] = {}
    rank_ready: dict[Op, float] = {}
    ranks: dict[Op, int] = {}
    has_recv: set[tuple[int, tuple[str, int, int]]] = set()
    left = sum(len(x) for x in progs)
    while left:
        moved = False
        for r in range(p):
            prog = progs[r]
            while ptr[r] < len(prog):
                a = prog[ptr[r]]
                if isinstance(a, Comm):
                    k = comm_key(a)
                    if a.kind.startswith("SEND"):
                        sent[k] = sends[(r, a)] = clock[r]
                        sender[k] = r
                        clock[r] += model.send
                    else:
                        posted[k] = recvs[(r, a)] = clock[r]
                        has_recv.add((r, k))
                        clock[r] += model.recv
                else:
                    start = clock[r] + (0.0 if first[r] else model.gap)
                    k = input_key(a)
                    if (r, k) in has_recv:
                        if k not in sent:
                            break  # the producer has not sent yet: another rank moves first
                        # the rendezvous: the data moves at the SEND when the RECV was posted
                        # first, else a round trip after the RECV's post; either way its bytes
                        # then cross the link (the terms were measured with tiny tensors)
                        ready = sent[k] + model.wake if posted[k] < sent[k] else posted[k] + model.late
                        ready += wire_time(comm, costs, sender[k], r, k)
                        # an emulated slow link: the consumer waits for the SEND's stamp + delay
                        ready = max(ready, sent[k] + model.link_delay)
                        arrivals[a], rank_ready[a] = ready, start
                        start = max(start, ready)
                    end = start + float(costs.duration[a.kind][a.stage]) + model.overshoot
                    times[a], ranks[a] = (start, end), r
                    clock[r], first[r] = end, False
                ptr[r] += 1
                left -= 1
                moved = True
        if not moved:
            # every blocked rank waits in an op for the SEND of its input, which no rank reaches
            raise DeadlockError(
                [
                    (r, str(progs[r][ptr[r]]), _send_of(input_key(progs[r][ptr[r]])))
                    for r in range(p)
                    if ptr[r] < len(progs[r])
                ]
            )
    makespan = max((e for _, e in times.values()), default=0.0)
    return RuntimeWalk(makespan, times, sends, recvs, arrivals=arrivals, ready=rank_ready, ranks=ranks)


#: walks drawn per prediction when the model has deciles (:func:`predict_runtime`): the median
#: of 41 settles to within a few tenths of a percent of a makespan
DRAWS = 41


def handover_of(comm: object, ranks: int | None = None) -> Handover | None:
    """The hand-over model a system preset states (``runtime.handover``) for ``ranks`` worker
    processes: its ``ranks_<n>`` terms when it has them for that count, those of the nearest count
    it has otherwise (the larger on a tie: more processes on the same cores stretch the round
    trips), else the terms pooled over every count; ``None`` when it states none (or ``comm`` is
    not a system).

    Example:
        >>> from ppverify.systems.system import load_system
        >>> handover_of(load_system("dgx-h100")) is None
        True
        >>> from dataclasses import replace
        >>> s = replace(load_system("dgx-h100"), handover_s=(0.0,) * 7,
        ...             handover_by_ranks_s=((2, (0.0,) * 6 + (1.0,), ()), (4, (0.0,) * 6 + (3.0,), ())))
        >>> handover_of(s).wake, handover_of(s, 2).wake, handover_of(s, 3).wake, handover_of(s, 8).wake
        (0.0, 1.0, 3.0, 3.0)
    """
    terms = getattr(comm, "handover_s", None)
    if terms is None:
        return None
    deciles = tuple(getattr(comm, "handover_deciles_s", ()))
    by_ranks = getattr(comm, "handover_by_ranks_s", ())
    if ranks is not None and by_ranks:
        _, terms, deciles = min(by_ranks, key=lambda e: (abs(e[0] - ranks), -e[0]))
    return Handover(**dict(zip(TERMS, terms)), deciles=tuple(deciles))


def require_order(dag: DagArrays) -> None:
    """Raise the :class:`DeadlockError` the ``slot`` and ``async`` engines raise (their check and
    wording, :mod:`ppverify.core.program_order`) when the programs' order cannot complete: an op
    before its own input on one device (``0B0,0F0``), or devices waiting on each other. The walk
    would time such an order (it waits only for cross-rank data), which no runtime can run.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> require_order(build_dag_arrays(parse_rows([["0B0", "0F0"]])))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.DeadlockError: deadlock: device 0 waits in 0B0 for 0F0 on device 0
    """
    gated = gated_pred(dag)  # a file's SEND posted after a later op: its consumer waits for that op
    pred = dag.pred.tolist() if gated is None else gated
    p0, p1 = [q[0] for q in pred], [q[1] for q in pred]
    ones = [1.0] * dag.num_ops  # any durations: only whether every op runs matters
    _, _, ptr, done = list_schedule_flat(
        p0, p1, None, None, ones, dag.fused.tolist(), dag.idle_before.tolist(), dag.offsets
    )
    if ptr is not None and done is not None:
        raise DeadlockError(_waits(dag, ptr, done, pred))


def runtime_timeline(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel,
    sync: str = "eager",
    dp_allreduce: int = 0,
    draws: int = DRAWS,
    seed: int = 0,
    model: Handover | None = None,
) -> Timeline:
    """Timeline of the ``runtime`` semantics: ``schedule`` as PyTorch's runtime runs it on gloo,
    the hand-over ``model`` (default: the one ``comm``, a system preset, states for the schedule's
    number of ranks, :func:`handover_of`) walked ``draws``
    times (:func:`predict_runtime`). ``costs`` are the ops' own times, before any per-action
    overhead is folded in (the model has its own). Each transfer runs from its SEND's post to the
    arrival of its data at the consumer.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import NO_COMM
        >>> s = build("gpipe", p=2, m=1)
        >>> tl = runtime_timeline(s, CostModel.abstract(s.placement, F=1, B=2), NO_COMM, model=Handover(wake=0.5))
        >>> tl.makespan, tl.semantics, list(zip(tl.transfers.start, tl.transfers.end))
        (7.0, 'runtime', [(1.0, 1.5), (4.5, 5.0)])
        >>> tl.info.exposed_comm   # each consumer waits one wake (0.5) past its producer's end
        [0.5, 0.5]
    """
    if schedule.placement.num_pipes > 1:
        raise ParameterError(
            "semantics",
            "runtime",
            f"{schedule.describe()} has two pipes, which PyTorch's runtime does not run; "
            "use async (with a calibrated system preset its two-pipe overhead is folded in)",
        )
    if dp_allreduce:
        raise ParameterError("dp-allreduce", dp_allreduce, "the runtime semantics times one pipeline replica")
    # the op set, the overlapped slots and the programs' order first, as the other engines check
    # them: PyTorch's runtime would run a slot's ops in turn, but ppverify's model runs them at once
    # (docs/verification.md), and the walk below would time a backward before its own forward
    require_order(build_dag_arrays(schedule))
    if model is None:
        model = handover_of(comm, schedule.p)
    if model is not None and link_delay_of(comm):
        model = replace(model, link_delay=link_delay_of(comm))
    if model is None:
        raise ParameterError(
            "system",
            getattr(comm, "name", None),
            "the runtime semantics needs a system preset with runtime.handover terms "
            "(ppverify calibrate writes one; e.g. --system examples/systems/calibrated-2core.yaml)",
        )
    walk = predict_runtime(schedule, costs, model, draws=draws, seed=seed, comm=comm)
    rows = sorted(walk.ops.items(), key=lambda kv: (walk.ranks[kv[0]], kv[1][0]))
    ops = [op for op, _ in rows]
    index = {(op.kind, op.stage, op.mb): i for i, op in enumerate(ops)}
    device = np.array([walk.ranks[op] for op in ops], dtype=int)
    start = np.array([se[0] for _, se in rows], dtype=float)
    end = np.array([se[1] for _, se in rows], dtype=float)
    tr = Transfers()
    nbytes = costs.boundary_bytes
    exposed = [0.0] * schedule.p
    for (rank, c), posted in sorted(walk.sends.items(), key=lambda kv: kv[1]):
        direction, stage, mb = comm_key(c)
        # producer: the SEND's own stage's F (activation) or B/I (gradient); consumer: the op
        # whose input it is (F, or B/I where the backward is split)
        kinds = ("F",) if direction == "F" else ("B", "I")
        src = next((index[(k, c.stage, mb)] for k in kinds if (k, c.stage, mb) in index), None)
        dst = next((index[(k, stage, mb)] for k in kinds if (k, stage, mb) in index), None)
        if src is None or dst is None or ops[dst] not in walk.arrivals:
            continue
        boundary = min(c.stage, stage)
        size = float(nbytes[boundary]) if 0 <= boundary < len(nbytes) else 0.0
        kind = "activation" if direction == "F" else "gradient"
        tr.add(kind, rank, int(device[dst]), src, dst, posted, walk.arrivals[ops[dst]], size)
        # exposed communication: the consumer's wait beyond both its rank and its producer's end
        free = max(walk.ready[ops[dst]], float(end[src]))
        exposed[int(device[dst])] += max(0.0, float(start[dst]) - free)
    info = TimelineInfo(system=getattr(comm, "name", None), exposed_comm=exposed)
    return Timeline(schedule, costs, "runtime", ops, device, start, end, tr, info)
