"""PyTorch's runtime on gloo, action by action: the hand-over model of a measured step.

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
late``. GPipe's and looped BFS's ranks run their forward (and backward)
chains with every RECV late (the producer is always ahead), 1F1B's steady state waits for its
producer; that is why a uniform per-SEND/RECV charge (:mod:`ppverify.overhead`) cannot fit both.

:func:`predict_runtime` walks every rank's lowered action list (PyTorch's lowering,
:func:`ppverify.io.torch_lowering.lower_like_pytorch`) with a clock: ``gap`` before each compute
op, ``send``/``recv`` per SEND/RECV action posted, ``overshoot`` added to each op's cost, a
``head`` before the first; a consumer starts at ``max(local clock, data ready)``.
:func:`handover_samples` reads the same terms off recorded events (RECV posts included,
:mod:`.runtime`), :func:`fit_handover` pools them. One-pipe schedules only (two-pipe ones run on
ppverify's own runner, :mod:`.twopipe`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..costs import CostModel
from ..errors import DeadlockError
from ..ops import Comm, Op, Overlap
from ..schedule import Schedule

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

    def scaled(self, k: float) -> Handover:
        """Every term (and its deciles) times ``k`` (a machine's load stretches them together)."""
        terms = {t: getattr(self, t) * k for t in TERMS}
        return Handover(**terms, deciles=tuple((t, tuple(x * k for x in q)) for t, q in self.deciles))

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
        self.send, self.recv = model.send, model.recv

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


def _key(c: Comm) -> tuple[str, int, int]:
    # (direction, consuming stage, microbatch): a SEND and its RECV map to the same key
    if c.kind == "SEND_F":
        return ("F", c.stage + 1, c.mb)
    if c.kind == "SEND_B":
        return ("B", c.stage - 1, c.mb)
    return ("F" if c.kind == "RECV_F" else "B", c.stage, c.mb)


def _input_key(op: Op) -> tuple[str, int, int]:
    return ("F" if op.kind == "F" else "B", op.stage, op.mb)


def _send_of(key: tuple[str, int, int]) -> str:
    # the SEND action that feeds the input ``key``: 1SEND_F0 feeds (F, 2, 0)
    d, stage, mb = key
    return str(Comm(f"SEND_{d}", stage - 1 if d == "F" else stage + 1, mb))


def _flat(prog: Sequence) -> list:
    out: list = []
    for a in prog:
        out.extend(a.ops if isinstance(a, Overlap) else [a])
    return [a for a in out if isinstance(a, (Op, Comm))]


@dataclass(frozen=True)
class RuntimeWalk:
    """One step as :func:`predict_runtime` walks it (seconds from the step start): the makespan,
    each op's ``(start, end)``, each rank's SEND and RECV posts by ``(rank, Comm)``.

    Example:
        >>> RuntimeWalk(1.0, {}, {}, {}).makespan
        1.0
    """

    makespan: float
    ops: dict[Op, tuple[float, float]]
    sends: dict[tuple[int, Comm], float]
    recvs: dict[tuple[int, Comm], float]


def predict_runtime(
    schedule: Schedule, costs: CostModel, model: Handover, draws: int = 0, seed: int = 0
) -> RuntimeWalk:
    """The step of ``schedule`` in PyTorch's runtime under the hand-over ``model``: makespan
    (seconds from the step start), each op's start and end, each SEND's and RECV's post.

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
    """
    if draws > 0 and model.deciles:
        rng = random.Random(seed)
        walks = sorted((_walk(schedule, costs, _Drawn(model, rng)) for _ in range(draws)), key=lambda w: w.makespan)
        return walks[(draws - 1) // 2]
    return _walk(schedule, costs, model)


def _walk(schedule: Schedule, costs: CostModel, model: Handover | _Drawn) -> RuntimeWalk:
    progs = [_flat(p) for p in lowered_programs(schedule)]
    p = len(progs)
    clock = [model.head for _ in range(p)]
    first = [True] * p
    ptr = [0] * p
    sent: dict[tuple[str, int, int], float] = {}
    posted: dict[tuple[str, int, int], float] = {}
    times: dict[Op, tuple[float, float]] = {}
    sends: dict[tuple[int, Comm], float] = {}
    recvs: dict[tuple[int, Comm], float] = {}
    has_recv: set[tuple[int, tuple[str, int, int]]] = set()
    left = sum(len(x) for x in progs)
    while left:
        moved = False
        for r in range(p):
            prog = progs[r]
            while ptr[r] < len(prog):
                a = prog[ptr[r]]
                if isinstance(a, Comm):
                    k = _key(a)
                    if a.kind.startswith("SEND"):
                        sent[k] = sends[(r, a)] = clock[r]
                        clock[r] += model.send
                    else:
                        posted[k] = recvs[(r, a)] = clock[r]
                        has_recv.add((r, k))
                        clock[r] += model.recv
                else:
                    start = clock[r] + (0.0 if first[r] else model.gap)
                    k = _input_key(a)
                    if (r, k) in has_recv:
                        if k not in sent:
                            break  # the producer has not sent yet: another rank moves first
                        # the rendezvous: the data moves at the SEND when the RECV was posted
                        # first, else a round trip after the RECV's post
                        ready = sent[k] + model.wake if posted[k] < sent[k] else posted[k] + model.late
                        start = max(start, ready)
                    end = start + float(costs.duration[a.kind][a.stage]) + model.overshoot
                    times[a] = (start, end)
                    clock[r], first[r] = end, False
                ptr[r] += 1
                left -= 1
                moved = True
        if not moved:
            # every blocked rank waits in an op for the SEND of its input, which no rank reaches
            raise DeadlockError(
                [
                    (r, str(progs[r][ptr[r]]), _send_of(_input_key(progs[r][ptr[r]])))
                    for r in range(p)
                    if ptr[r] < len(progs[r])
                ]
            )
    return RuntimeWalk(max((e for _, e in times.values()), default=0.0), times, sends, recvs)


def handover_samples(schedule: Schedule, costs: CostModel, events: Sequence[Sequence], t0: int) -> dict[str, list]:
    """One measured step's samples of each term (seconds), from its per-rank recorded events
    (:class:`~ppverify.measure.record.Event`, with RECV posts) and the step start ``t0`` (ns):
    ``head``, ``overshoot``, ``gap`` (``(SENDs, RECVs posted, s)`` between two ops of a rank when
    the second did not wait for data), ``late`` (RECV post to op start, the SEND posted before
    the RECV and the RECV the rank's last action before the op), ``wake`` (SEND post to op start,
    the RECV posted first and the rank idle since before the SEND).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.measure.record import Event
        >>> s = build("gpipe", p=2, m=1)
        >>> c = CostModel.abstract(s.placement, F=1e-6, B=2e-6)
        >>> ev = [[Event("F", 0, 0, 100, 1200), Event("SEND_F", 0, 0, 1300, 1300), Event("RECV_B", 0, 0, 1400, 1400),
        ...        Event("B", 0, 0, 5700, 7800)],
        ...       [Event("RECV_F", 1, 0, 150, 150), Event("F", 1, 0, 1500, 2600), Event("B", 1, 0, 2700, 4800),
        ...        Event("SEND_B", 1, 0, 4900, 4900)]]
        >>> d = handover_samples(s, c, ev, 0)
        >>> [round(x * 1e9) for x in d["wake"]], [(n, m, round(g * 1e9)) for n, m, g in d["gap"]]
        ([800, 200], [(0, 0, 100)])
        >>> [round(x * 1e9) for x in d["head"]], [round(x * 1e9) for x in d["overshoot"]]
        ([100], [100, 100, 100, 100])
    """
    progs = [_flat(p) for p in lowered_programs(schedule)]
    ev: dict[tuple[str, str, int, int], int] = {}
    ends: dict[Op, tuple[int, int]] = {}
    for rank_events in events:
        for e in rank_events:
            if e.kind in ("F", "B", "I", "W"):
                ends[Op(e.kind, e.stage, e.mb)] = (e.start_ns, e.end_ns)
            else:
                ev[(e.kind[:4],) + _key(Comm(e.kind, e.stage, e.mb))] = e.start_ns
    out: dict[str, list] = {"head": [], "overshoot": [], "gap": [], "late": [], "wake": []}
    for prog in progs:
        prev_end: int | None = None
        n_send = n_recv = 0
        last_recv: tuple[str, int, int] | None = None
        for a in prog:
            if isinstance(a, Comm):
                if a.kind.startswith("SEND"):
                    n_send += 1
                    last_recv = None
                else:
                    n_recv += 1
                    last_recv = _key(a)
                continue
            if a not in ends:
                continue
            start, end = ends[a]
            out["overshoot"].append((end - start) * 1e-9 - float(costs.duration[a.kind][a.stage]))
            k = _input_key(a)
            sent_at, posted_at = ev.get(("SEND",) + k), ev.get(("RECV",) + k)
            waited = False
            if sent_at is not None and posted_at is not None:
                if sent_at > posted_at and (prev_end is None or sent_at >= prev_end):
                    out["wake"].append((start - sent_at) * 1e-9)
                    waited = True
                elif sent_at <= posted_at and (prev_end is None or posted_at >= prev_end):
                    if last_recv == k:  # else other actions follow the RECV: no clean sample
                        out["late"].append((start - posted_at) * 1e-9)
                    waited = True
                elif prev_end is None or sent_at >= prev_end:
                    waited = True  # neither case cleanly: no sample
            if not waited:
                if prev_end is None:
                    out["head"].append((start - t0) * 1e-9)
                else:
                    out["gap"].append((n_send, n_recv, (start - prev_end) * 1e-9))
            prev_end, n_send, n_recv, last_recv = end, 0, 0, None
    return out


#: share of each term's samples kept (the lowest) for its mean: a makespan pays the mean of its
#: ops' terms, tails included (on a loaded machine most of a late RECV's mean is its tail), except
#: the rare stalls at the very top
TRIM = 0.99


def _tmean(values: Sequence[float]) -> float:
    v = np.sort(np.asarray(values, dtype=float))
    return float(v[: max(1, int(np.ceil(TRIM * len(v))))].mean()) if len(v) else 0.0


def fit_handover(samples: Sequence[dict[str, list]]) -> Handover:
    """Pool :func:`handover_samples` of several steps: trimmed means of ``head``, ``overshoot``,
    ``late`` and ``wake``; ``gap + send * SENDs + recv * RECVs`` by least squares over the gaps
    (each term clipped at 0); the deciles of the drawn terms (:data:`DRAWN`).

    Example:
        >>> d = {"head": [1e-4], "overshoot": [5e-5], "late": [1e-3], "wake": [2e-4],
        ...      "gap": [(0, 0, 1e-4), (1, 0, 3e-4), (0, 1, 2e-4), (1, 1, 4e-4)]}
        >>> h = fit_handover([d])
        >>> [round(x * 1e6) for x in (h.gap, h.send, h.recv, h.late, h.wake)]
        [100, 200, 100, 1000, 200]
    """
    pooled: dict[str, list] = {k: [] for k in ("head", "overshoot", "gap", "late", "wake")}
    for d in samples:
        for k, v in d.items():
            pooled[k].extend(v)
    g = s = q = 0.0
    residuals: list[float] = []
    if pooled["gap"]:
        arr = np.asarray(pooled["gap"], dtype=float)
        # trim the slowest gaps of each (SENDs, RECVs) group, then fit the line over all kept
        keep = []
        for key in {(int(a), int(b)) for a, b, _ in arr}:
            grp = arr[(arr[:, 0] == key[0]) & (arr[:, 1] == key[1])]
            grp = grp[np.argsort(grp[:, 2])]
            keep.append(grp[: max(1, int(np.ceil(TRIM * len(grp))))])
        arr = np.concatenate(keep)
        cols = np.stack([np.ones(len(arr)), arr[:, 0], arr[:, 1]], 1)
        used = [j for j in range(3) if j == 0 or np.ptp(cols[:, j]) > 0]
        sol, *_ = np.linalg.lstsq(cols[:, used], arr[:, 2], rcond=None)
        full = np.zeros(3)
        full[used] = sol
        g, s, q = (max(0.0, float(x)) for x in full)
        every = np.asarray(pooled["gap"], dtype=float)
        residuals = list(every[:, 2] - (g + s * every[:, 0] + q * every[:, 1]))
    drawn = {**{t: pooled[t] for t in ("head", "overshoot", "late", "wake")}, "gap": residuals}
    deciles = tuple(
        (t, tuple(float(x) for x in np.quantile(np.asarray(drawn[t], dtype=float), DECILES)))
        for t in DRAWN
        if len(drawn[t])
    )
    return Handover(
        head=_tmean(pooled["head"]),
        overshoot=_tmean(pooled["overshoot"]),
        gap=g,
        send=s,
        recv=q,
        late=_tmean(pooled["late"]),
        wake=_tmean(pooled["wake"]),
        deciles=deciles,
    )


def fit_level(runs: Sequence[tuple[Schedule, CostModel, float]], model: Handover) -> tuple[float, float]:
    """The factor ``k`` by which every term of ``model`` is scaled so that the predicted
    makespans best match the measured ones of ``(schedule, costs, measured s)`` runs (least
    squares on relative residuals; a loaded machine stretches every term alike), and the rms
    relative residual at it.

    Example:
        >>> from ppverify.schedules import build
        >>> ss = [build("gpipe", p=2, m=4), build("1f1b", p=3, m=6)]
        >>> cs = [CostModel.abstract(s.placement, F=0.01, B=0.02) for s in ss]
        >>> h = Handover(gap=2e-4, late=1e-3, wake=3e-4)
        >>> truth = [predict_runtime(s, c, h.scaled(1.5)).makespan for s, c in zip(ss, cs)]
        >>> k, res = fit_level(list(zip(ss, cs, truth)), h)
        >>> round(k, 3), res < 1e-6
        (1.5, True)
    """
    if not runs:
        return 1.0, 0.0
    meas = np.array([r[2] for r in runs], dtype=float)

    def res(k: float) -> float:
        pred = np.array([predict_runtime(s, c, model.scaled(k)).makespan for s, c, _ in runs])
        return float(np.sqrt(np.mean(((pred - meas) / meas) ** 2)))

    lo, hi = 0.0, 4.0
    for _ in range(60):  # golden section: the residual is unimodal in k (makespan monotone in k)
        a, b = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        if res(a) <= res(b):
            hi = b
        else:
            lo = a
    k = (lo + hi) / 2
    return k, res(k)


__all__ = [
    "DECILES",
    "DRAWN",
    "TERMS",
    "TRIM",
    "Handover",
    "RuntimeWalk",
    "fit_handover",
    "fit_level",
    "handover_samples",
    "lowered_programs",
    "predict_runtime",
]
