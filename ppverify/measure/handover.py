"""The hand-over model's terms read off measured steps (:mod:`ppverify.engines.runtime` is the
model and its walk, the ``runtime`` semantics).

:func:`handover_samples` reads each term off one step's recorded events (RECV posts included,
:mod:`.runtime`), :func:`fit_handover` pools them into a :class:`Handover` (what ``ppverify
calibrate`` writes as a preset's ``runtime.handover``), :func:`fit_level` scales a model to a set
of measured makespans. One-pipe schedules only (two-pipe ones run on ppverify's own runner,
:mod:`.twopipe`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.costs import CostModel
from ..core.ops import Comm, Op
from ..core.schedule import Schedule
from ..engines.runtime import (
    DECILES,
    DRAWN,
    TERMS,
    Handover,
    RuntimeWalk,
    comm_key,
    flat_actions,
    input_key,
    lowered_programs,
    predict_runtime,
)


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
    progs = [flat_actions(p) for p in lowered_programs(schedule)]
    ev: dict[tuple[str, str, int, int], int] = {}
    ends: dict[Op, tuple[int, int]] = {}
    for rank_events in events:
        for e in rank_events:
            if e.kind in ("F", "B", "I", "W"):
                ends[Op(e.kind, e.stage, e.mb)] = (e.start_ns, e.end_ns)
            else:
                ev[(e.kind[:4],) + comm_key(Comm(e.kind, e.stage, e.mb))] = e.start_ns
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
                    last_recv = comm_key(a)
                continue
            if a not in ends:
                continue
            start, end = ends[a]
            out["overshoot"].append((end - start) * 1e-9 - float(costs.duration[a.kind][a.stage]))
            k = input_key(a)
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
    # a mean can fall below 0 (an op's cost fitted as its median duration: its overshoots are
    # centred on 0), and a preset holds no negative term
    return Handover(
        head=max(0.0, _tmean(pooled["head"])),
        overshoot=max(0.0, _tmean(pooled["overshoot"])),
        gap=g,
        send=s,
        recv=q,
        late=max(0.0, _tmean(pooled["late"])),
        wake=max(0.0, _tmean(pooled["wake"])),
        deciles=deciles,
    )


def fit_by_ranks(samples: Sequence[tuple[int, dict[str, list]]]) -> tuple[Handover, dict[int, Handover]]:
    """:func:`fit_handover` over ``(ranks, samples)`` pairs: the terms pooled over every run, and
    the terms of each rank count apart (what a preset's ``runtime.handover`` and its ``ranks_<n>``
    sections hold). On a machine with fewer cores than worker processes the round trips stretch
    with the number of processes, which the pooled terms average away.

    Example:
        >>> d2 = {"head": [1e-4], "overshoot": [], "late": [2e-4], "wake": [], "gap": []}
        >>> d4 = {"head": [3e-4], "overshoot": [], "late": [6e-4], "wake": [], "gap": []}
        >>> pooled, by = fit_by_ranks([(2, d2), (4, d4)])
        >>> round(pooled.late * 1e6), {n: round(h.late * 1e6) for n, h in by.items()}
        (400, {2: 200, 4: 600})
    """
    groups: dict[int, list[dict[str, list]]] = {}
    for n, d in samples:
        groups.setdefault(int(n), []).append(d)
    return fit_handover([d for _, d in samples]), {n: fit_handover(ds) for n, ds in sorted(groups.items())}


def for_ranks(pooled: Handover, by_ranks: dict[int, Handover], ranks: int) -> Handover:
    """The model for ``ranks`` processes out of :func:`fit_by_ranks`' answer: as
    :func:`ppverify.engines.runtime.handover_of` picks from a preset (that count's terms, else the
    nearest count's, the larger on a tie, else the pooled ones).

    Example:
        >>> for_ranks(Handover(late=1.0), {2: Handover(late=2.0)}, 3).late
        2.0
    """
    if not by_ranks:
        return pooled
    return by_ranks[min(by_ranks, key=lambda n: (abs(n - ranks), -n))]


def async_terms(model: Handover) -> tuple[float, float, float]:
    """``(action s, transfer s, latency s)`` of the async engine's folded overhead
    (:func:`~ppverify.core.overhead.with_overhead`) read off the hand-over terms, which
    :func:`handover_samples` measures event by event: no trade between the three, so no fit of
    makespans can leave one at 0 and another holding every overhead.

    * **action** = ``gap + overshoot``: what a rank spends between two ops and beyond each op's
      cost besides its SEND/RECV posts;
    * **transfer** = ``(send + recv) / 2``: a SEND/RECV post (the fold charges each op its posts,
      a RECV before and a SEND after where its neighbours live on other ranks, at one rate);
    * **latency** = ``max(0, wake - gap - 2 * transfer)``: a waiting consumer starts ``wake`` after
      its producer's SEND post; the fold already puts the producer's SEND and the consumer's gap
      and RECV on the path, inside the two ops' durations, so the link carries the rest.

    Example:
        >>> a, t, lat = async_terms(Handover(overshoot=5e-5, gap=1e-4, send=2e-4, recv=4e-4, wake=1.2e-3))
        >>> round(a * 1e6), round(t * 1e6), round(lat * 1e6)   # 100 + 50; (200 + 400) / 2; 1200 - 100 - 600
        (150, 300, 500)
        >>> async_terms(Handover(gap=1e-4, send=5e-4, recv=5e-4, wake=2e-4))[2]   # a short wake: no link term
        0.0
    """
    transfer = (model.send + model.recv) / 2
    return model.gap + model.overshoot, transfer, max(0.0, model.wake - model.gap - 2 * transfer)


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
    "async_terms",
    "fit_by_ranks",
    "fit_handover",
    "fit_level",
    "for_ranks",
    "handover_samples",
    "lowered_programs",
    "predict_runtime",
]
