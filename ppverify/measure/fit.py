"""Fitting the runtime's overheads and the link to measured runs (:mod:`.calibrate` measures them):
the ping-pong line, the per-action and per-SEND/RECV overheads folded into the async engine's op
times, and the proportion of the two from the op-by-op timelines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.errors import PPVerifyError
from ..core.schedule import Schedule


class LinkFitError(PPVerifyError):
    """Ping-pong samples whose one-way time does not grow with the message size: no bandwidth fits them.

    Example:
        >>> str(LinkFitError([(4, 2e-4), (1024, 1e-4)]))
        'the ping-pong samples do not grow with the message size (4 B: 200.0 us, 1024 B: 100.0 us): no link bandwidth fits them; calibrate again, on a quieter machine or with --realtime'
    """

    def __init__(self, samples: Sequence[tuple[float, float]]) -> None:
        shown = ", ".join(f"{b:.0f} B: {t * 1e6:.1f} us" for b, t in samples)
        super().__init__(
            f"the ping-pong samples do not grow with the message size ({shown}): no link bandwidth fits them; "
            "calibrate again, on a quieter machine or with --realtime"
        )


def fit_link(samples: Sequence[tuple[float, float]], strict: bool = False) -> tuple[float, float]:
    """``time = latency + bytes / bandwidth`` through the lower envelope of ``(bytes, seconds)``
    samples: ``(latency s, bandwidth bytes/s)``.

    A loaded machine only ever adds time to a transfer, so each size keeps its least time and the
    line is the one below every sample that comes closest to them: the least sum of relative
    residuals (all >= 0, each over its sample's time, as times span orders of magnitude), a
    linear programme whose optimum is the edge of the samples' lower convex hull over their mean
    size weighted by 1 / time (or, where that edge would cross zero bytes below zero, the line
    from the origin under every sample). One slow size (a 4 B message stalled 5 ms) then cannot
    tilt the line, as it tilts a least-squares one, and the latency is never above the smallest
    message's time. A single size, or sizes whose times do not grow, give the flat line at the
    least time and an infinite bandwidth; ``strict`` refuses those sizes instead
    (:class:`LinkFitError`, naming them) rather than return an infinite bandwidth.

    Example:
        >>> lat, bw = fit_link([(0, 1e-4), (1e6, 1.1e-3), (2e6, 2.1e-3)])
        >>> round(lat, 9), round(bw)
        (0.0001, 1000000000)

        A stalled smallest size is left above the line (from the two others by hand:
        294.4 us / 1032192 B = 3.506 GB/s, latency 61.8 - 16384 B / 3.506 GB/s = 57.1 us):

        >>> lat, bw = fit_link([(4, 5196.4e-6), (16384, 61.8e-6), (1048576, 356.2e-6)])
        >>> round(lat * 1e6, 1), round(bw / 1e9, 3)
        (57.1, 3.506)
    """
    least: dict[float, float] = {}
    for b, t in samples:
        least[float(b)] = min(float(t), least.get(float(b), float("inf")))
    pts = sorted(least.items())
    if len(pts) < 2:
        return (max(0.0, pts[0][1]) if pts else 0.0), float("inf")
    hull: list[tuple[float, float]] = []  # the lower convex hull, left to right (monotone chain)
    for x, y in pts:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) > 0:  # a left turn: hull[-1] stays below
                break
            hull.pop()
        hull.append((x, y))
    # sum((a + b x) / y) = a sum(1/y) + b sum(x/y): the best line below the samples is the highest
    # at their mean size weighted by 1/time, the hull's edge over it (the first reaching beyond)
    mean = sum(x / y for x, y in pts) / sum(1 / y for _, y in pts) if all(y > 0 for _, y in pts) else pts[0][0]
    (x1, y1), (x2, y2) = next((a, b) for a, b in zip(hull, hull[1:]) if b[0] > mean)
    slope = (y2 - y1) / (x2 - x1)
    if slope <= 0:
        if strict:
            raise LinkFitError(pts)
        return max(0.0, min(y for _, y in pts)), float("inf")
    if y1 - slope * x1 >= 0:
        return y1 - slope * x1, 1.0 / slope
    # a latency >= 0 too: the steepest line from the origin that stays under every sample
    slope = min(y / x for x, y in pts if x > 0)
    return 0.0, (1.0 / slope if slope > 0 else float("inf"))


def predict(schedule: Schedule, costs: CostModel, comm: CommModel, action_s: float, transfer_s: float) -> float:
    """The async engine's makespan with the overheads folded into ``costs``.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("gpipe", p=2, m=1)
        >>> predict(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0), 0.5, 0.25)   # 2*(1+.5+.25) + 2*(2+.5+.25)
        9.0
    """
    from ..core.overhead import with_overhead
    from ..engines import run

    return float(
        run(schedule, with_overhead(costs, schedule.placement, action_s, transfer_s), comm, semantics="async").makespan
    )


def fit_overhead(
    runs: Sequence[tuple[Schedule, CostModel, float]],
    comm: CommModel,
    iterations: int = 8,
    transfers: bool = True,
    ratio: float | None = None,
) -> tuple[float, float, float]:
    """Fit ``(action overhead a, transfer overhead t, rms relative residual)`` so that the async
    engine's makespans with the overheads folded in match the measured ones of ``(schedule,
    costs, measured makespan)`` runs.

    The makespan is piecewise linear in (a, t): on one critical path it is ``base + a * n_a + t *
    n_t``, n_a the compute actions and n_t the SEND/RECV actions on that path. Gauss-Newton: find
    the counts by finite differences at the current (a, t), solve the least-squares problem for
    (a, t) >= 0 on them (each residual relative to its measured makespan, since the prediction's
    goal is a relative error), repeat until the pair stops moving. ``transfers=False`` fits ``a``
    alone (``t = 0``); ``ratio`` fits ``a`` with ``t = ratio * a`` (the two terms' proportion
    known from elsewhere, e.g. the op-by-op medians of :mod:`ppverify.measure.breakdown`).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> ss = [build("gpipe", p=2, m=4), build("1f1b", p=3, m=6), build("zbv", p=2, m=4)]
        >>> cs = [CostModel.abstract(s.placement, F=0.01, B=0.02) for s in ss]
        >>> truth = [predict(s, c, FixedDelay(5e-5), 0.002, 0.001) for s, c in zip(ss, cs)]
        >>> a, t, res = fit_overhead(list(zip(ss, cs, truth)), FixedDelay(5e-5))
        >>> round(a, 6), round(t, 6), res < 1e-9
        (0.002, 0.001, True)
    """
    a, t, _, res = fit_terms(runs, comm, iterations, transfers, ratio)
    return a, t, res


def fit_terms(
    runs: Sequence[tuple[Schedule, CostModel, float]],
    comm: CommModel,
    iterations: int = 8,
    transfers: bool = True,
    ratio: float | None = None,
    latency: bool = False,
) -> tuple[float, float, float | None, float]:
    """:func:`fit_overhead`, optionally also fitting the link latency: ``(a, t, latency or None,
    rms relative residual)``. With ``latency=True`` (``comm`` a :class:`~ppverify.core.comm.FixedDelay`)
    the one-way delay of every cross-rank hand-over is a third term (the makespan pays it once per
    hop of its critical path between ranks: the producer's send, the transfer and the waiting
    consumer's wake-up), which a per-op term cannot follow: dense schedules (ZB-V) hop rarely,
    GPipe and 1F1B at every bubble.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> ss = [build("gpipe", p=4, m=4), build("1f1b", p=3, m=6), build("zbv", p=2, m=8), build("1f1b-split", p=2, m=4)]
        >>> cs = [CostModel.abstract(s.placement, F=0.01, B=0.02) for s in ss]
        >>> truth = [predict(s, c, FixedDelay(4e-4), 0.002, 0.001) for s, c in zip(ss, cs)]
        >>> a, t, lat, res = fit_terms(list(zip(ss, cs, truth)), FixedDelay(5e-5), latency=True)
        >>> round(a, 6), round(t, 6), round(lat, 6), res < 1e-9
        (0.002, 0.001, 0.0004, True)
    """
    from ..core.comm import FixedDelay

    # checked before the empty case too, which reads the link's delay
    delay: float | None = None
    if latency:
        if not isinstance(comm, FixedDelay):
            raise TypeError("fitting the latency needs a FixedDelay link")
        delay = comm.delay
    measured = np.array([r[2] for r in runs], dtype=float)
    if not len(runs):
        return 0.0, 0.0, delay, 0.0
    w = 1.0 / measured  # relative residuals: the prediction's goal is a relative error

    def pred(x: np.ndarray) -> np.ndarray:
        a, t, lat = x
        link = FixedDelay(float(lat)) if latency else comm
        return np.array([predict(s, c, link, float(a), float(t)) for s, c, _ in runs])

    # the directions searched: (a, t) free, (a, ratio * a), or a alone; then the latency
    dirs = (
        [np.array([1.0, ratio, 0.0])]
        if ratio is not None
        else ([np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])] if transfers else [np.array([1.0, 0.0, 0.0])])
    )
    if latency:
        dirs.append(np.array([0.0, 0.0, 1.0]))
    x = np.array([0.0, 0.0, 0.0 if delay is None else delay])
    coef = np.zeros(len(dirs))  # x = x0 + sum(coef * dirs) with every coef >= 0
    x0 = x - (dirs[-1] * x[2] if latency else 0.0)
    coef[-1] = x[2] if latency else coef[-1]
    base = pred(x)
    for _ in range(iterations):
        h = max(1e-5, 0.05 * float(coef.sum()))  # small: the counts of the current critical path
        cols = np.stack([(pred(x + h * d) - base) / h for d in dirs], axis=1)
        target = measured - base + cols @ coef  # locally: makespan = base + cols @ (coef' - coef)
        new = _nnls(cols * w[:, None], target * w)
        if np.allclose(new, coef, rtol=0, atol=1e-10):
            break
        coef = new
        x = x0 + sum(c * d for c, d in zip(coef, dirs))
        base = pred(x)
    res = float(np.sqrt(np.mean(((base - measured) * w) ** 2)))
    return float(x[0]), float(x[1]), (float(x[2]) if latency else None), res


def _nnls(cols: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least squares ``target ~ cols @ c`` with ``c >= 0`` (a few columns: every subset of them
    solved unconstrained, the best feasible one kept)."""
    from itertools import combinations

    k = cols.shape[1]
    best, best_r = np.zeros(k), float(target @ target)
    for n in range(1, k + 1):
        for sub in combinations(range(k), n):
            sol, *_ = np.linalg.lstsq(cols[:, sub], target, rcond=None)
            if (sol < 0).any():
                continue
            c = np.zeros(k)
            c[list(sub)] = sol
            r = float(np.sum((cols @ c - target) ** 2))
            if r < best_r - 1e-18:
                best, best_r = c, r
    return best


@dataclass(frozen=True)
class RuntimeFit:
    """The fitted overheads (seconds): ``(action, transfer)`` of PyTorch's runtime (one-pipe
    schedules) and of ppverify's two-pipe runner (``two_pipe``, None without two-pipe runs), with
    each fit's rms relative residual.

    Example:
        >>> RuntimeFit((1e-3, 2e-4), None, 0.01).two_pipe_or_one
        (0.001, 0.0002)
    """

    one_pipe: tuple[float, float]
    two_pipe: tuple[float, float] | None
    residual: float = 0.0
    residual_two_pipe: float = 0.0
    #: the fitted hand-over latency (s), None when the link's was kept
    latency: float | None = None

    @property
    def two_pipe_or_one(self) -> tuple[float, float]:
        """The two-pipe figures, or the one-pipe ones when there were no two-pipe runs."""
        return self.two_pipe if self.two_pipe is not None else self.one_pipe


def fit_runtime(
    runs: Sequence[tuple[Schedule, CostModel, float]],
    comm: CommModel,
    ratio: float | None = None,
    latency: bool = False,
) -> RuntimeFit:
    """Fit the overheads of both runners: one-pipe runs (PyTorch's runtime) give ``(a, t)``
    (:func:`fit_overhead`), two-pipe runs (ppverify's runner: Chimera, DualPipe) their own action
    overhead (their transfer overhead is not separable from it: every op of a two-pipe schedule
    sends and receives, so ``t = 0`` and ``a`` carries both). ``ratio``: the one-pipe fit keeps
    ``t = ratio * a``; ``latency``: the one-pipe runs also fit the hand-over latency, which the
    two-pipe fit then uses (:func:`fit_terms`).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> ss = [build("gpipe", p=3, m=4), build("1f1b", p=2, m=4), build("zbv", p=2, m=4), build("chimera", p=2, m=4)]
        >>> cs = [CostModel.abstract(s.placement, F=0.01, B=0.02) for s in ss]
        >>> truth = [predict(s, c, FixedDelay(5e-5), *((0.001, 0.0) if s.placement.num_pipes > 1 else (0.002, 0.0005)))
        ...          for s, c in zip(ss, cs)]
        >>> f = fit_runtime(list(zip(ss, cs, truth)), FixedDelay(5e-5))
        >>> [round(x, 6) for x in f.one_pipe], [round(x, 6) for x in f.two_pipe]
        ([0.002, 0.0005], [0.001, 0.0])
    """
    one = [r for r in runs if r[0].placement.num_pipes == 1]
    two = [r for r in runs if r[0].placement.num_pipes > 1]
    from ..core.comm import FixedDelay

    a, t, lat, res = fit_terms(one, comm, ratio=ratio, latency=latency)
    link = FixedDelay(lat) if lat is not None else comm
    if not two:
        return RuntimeFit((a, t), None, res, latency=lat)
    a2, _, res2 = fit_overhead(two, link, transfers=False)
    return RuntimeFit((a, t), (a2, 0.0), res, res2, lat)


def op_ratio(b: Any) -> float | None:
    """``transfer / action`` overhead as the op-by-op (trimmed) means of a
    :class:`~ppverify.measure.breakdown.Breakdown` give it: a makespan sums its ops' costs, so it
    pays their means, a RECV's occasional wait for a core included (None when they give no
    action cost).

    Example:
        >>> from ppverify.measure.breakdown import Breakdown
        >>> round(op_ratio(Breakdown(1e-4, 1e-4, 1e-4, 4e-4, 3e-4, 100, means=(1e-4, 1e-4, 3e-4))), 12)
        1.5
    """
    if b is None or b.means is None or b.means[0] + b.means[1] <= 0:
        return None
    return max(0.0, b.means[2]) / (b.means[0] + b.means[1])


__all__ = ["LinkFitError", "RuntimeFit", "fit_link", "fit_overhead", "fit_runtime", "fit_terms", "op_ratio", "predict"]
