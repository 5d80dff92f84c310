"""Calibrate the simulator to this machine's pipeline runtime: per-action overhead and the
point-to-point link, written as a system preset (``ppverify calibrate``).

Two measurements, both on real worker processes (:mod:`.workers`, gloo):

* **link**: a ping-pong between two ranks over message sizes; the one-way time of each size is
  half the median round trip; latency and bandwidth come from a least-squares line
  ``time = latency + bytes / bandwidth`` (:func:`fit_link`).
* **overhead**: a few schedules run through :func:`~ppverify.measure.measure_many` with sleep
  costs (:data:`CALIBRATION_COSTS`): the measured makespan minus the prediction is the runtime's
  own time along the critical path (Python per action, and waking a sleeping or waiting process,
  which grows with the machine's load). The model (:mod:`ppverify.overhead`) charges ``a`` per
  compute action and ``t`` per SEND/RECV action a rank runs (PyTorch's runtime runs them as
  actions of their own, each with its Python cost; the number per op differs between schedules:
  none for W and V-shape hand-overs, two for a middle stage of a linear pipe). Their proportion
  ``t / a`` comes from the runs' timelines op by op (:mod:`.breakdown`: trimmed means of the gaps
  between a rank's ops against the SEND/RECV actions between them, hundreds of samples); their
  level from the measured median makespans, to which the async engine's makespan with the
  overheads folded into the durations is fitted by least squares on relative residuals
  (:func:`fit_overhead`; :func:`fit_terms` can also fit the hand-over latency). Two-pipe schedules run
  on ppverify's own runner, which has other costs: they get their own action overhead
  (:func:`fit_runtime`). Near-zero costs would miss the wake-up of a sleeping op, which every
  real op pays.
* **hand-overs**: the same one-pipe runs give the terms of the hand-over model (:mod:`.handover`:
  gloo's rendezvous makes a RECV posted after its SEND cost a round trip), read op by op from
  their events and written as ``runtime.handover``; :func:`predict_on` walks it for one-pipe
  schedules when a preset has it.

:func:`preset_text` writes the result in the schema of ``models/systems/`` with comments naming
how, when and where it was measured.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..comm import CommModel
from ..costs import CostModel
from ..engines.runtime import DRAWS
from ..schedule import Schedule

#: message sizes of the ping-pong, bytes (float32 tensors)
PINGPONG_SIZES: tuple[int, ...] = (4, 1024, 16384, 262144, 1048576, 4194304)
#: the sleeps of the overhead runs, seconds per device share
CALIBRATION_COSTS = {"F": 0.005, "B": 0.01}
#: (family, p, m, params) run to fit the overhead: different ratios of SEND/RECV to compute actions
#: on the critical path (W ops have none, middle stages of linear pipes two, V handovers are local),
#: and two-pipe schedules for ppverify's own runner
OVERHEAD_SCHEDULES: tuple[tuple[str, int, int, dict], ...] = (
    ("1f1b", 2, 4, {}),
    ("1f1b", 4, 8, {}),
    ("interleaved-1f1b", 2, 8, {"v": 2}),
    ("zbv", 4, 8, {}),
    ("1f1b-split", 3, 6, {}),
    ("gpipe", 3, 4, {}),
    ("interleaved-1f1b", 4, 8, {"v": 2}),
    ("zb-h1", 2, 8, {}),
    ("chimera", 2, 4, {}),
    ("chimera", 4, 8, {}),
    ("dualpipe", 4, 8, {}),
)
#: the subset ``calibrate(quick=True)`` runs
QUICK_SCHEDULES: tuple[tuple[str, int, int, dict], ...] = (
    ("1f1b", 2, 4, {}),
    ("interleaved-1f1b", 2, 8, {"v": 2}),
    ("zbv", 4, 8, {}),
    ("gpipe", 3, 4, {}),
    ("chimera", 2, 4, {}),
    ("chimera", 4, 4, {}),
)


@dataclass(frozen=True)
class Calibration:
    """What ``ppverify calibrate`` measured: overheads and link (seconds, bytes/s), the raw samples
    (``pingpong``: ``(bytes, one-way s)``; ``runs``: ``(schedule, measured makespan s)``), the fit's
    rms relative residual, and where.

    Example:
        >>> c = Calibration(1e-3, 2e-4, 5e-5, 1e9)
        >>> round(c.predict_transfer(1e6), 6)
        0.00105
    """

    action_overhead_s: float
    transfer_overhead_s: float
    latency_s: float
    bandwidth_Bps: float
    pingpong: tuple[tuple[int, float], ...] = ()
    runs: tuple[tuple[str, float], ...] = ()
    residual: float = 0.0
    machine: str = ""
    date: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``(action s, transfer s)`` of ppverify's two-pipe runner; None: as the one-pipe figures
    two_pipe_overhead_s: tuple[float, float] | None = None
    #: PyTorch's runtime action by action (:class:`~ppverify.engines.runtime.Handover`), None: not measured
    handover: Any = None
    #: ``(ranks, Handover)``: the same terms measured with each number of worker processes
    handover_by_ranks: tuple[tuple[int, Any], ...] = ()

    def predict_transfer(self, nbytes: float) -> float:
        """One-way time of a message under the fitted line."""
        return self.latency_s + nbytes / self.bandwidth_Bps


def fit_link(samples: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares ``time = latency + bytes / bandwidth`` over ``(bytes, seconds)`` samples:
    ``(latency s, bandwidth bytes/s)``; latency clipped at 0, bandwidth inf for a flat line.

    Example:
        >>> lat, bw = fit_link([(0, 1e-4), (1e6, 1.1e-3), (2e6, 2.1e-3)])
        >>> round(lat, 9), round(bw)
        (0.0001, 1000000000)
    """
    x = np.array([s[0] for s in samples], dtype=float)
    y = np.array([s[1] for s in samples], dtype=float)
    if len(x) < 2 or np.ptp(x) == 0:
        return float(max(0.0, y.mean() if len(y) else 0.0)), float("inf")
    slope, intercept = np.polyfit(x, y, 1)
    return float(max(0.0, intercept)), (float(1.0 / slope) if slope > 0 else float("inf"))


def predict(schedule: Schedule, costs: CostModel, comm: CommModel, action_s: float, transfer_s: float) -> float:
    """The async engine's makespan with the overheads folded into ``costs``.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.comm import FixedDelay
        >>> s = build("gpipe", p=2, m=1)
        >>> predict(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0), 0.5, 0.25)   # 2*(1+.5+.25) + 2*(2+.5+.25)
        9.0
    """
    from ..engines import run
    from ..overhead import with_overhead

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
        >>> from ppverify.comm import FixedDelay
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
    rms relative residual)``. With ``latency=True`` (``comm`` a :class:`~ppverify.comm.FixedDelay`)
    the one-way delay of every cross-rank hand-over is a third term (the makespan pays it once per
    hop of its critical path between ranks: the producer's send, the transfer and the waiting
    consumer's wake-up), which a per-op term cannot follow: dense schedules (ZB-V) hop rarely,
    GPipe and 1F1B at every bubble.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.comm import FixedDelay
        >>> ss = [build("gpipe", p=4, m=4), build("1f1b", p=3, m=6), build("zbv", p=2, m=8), build("1f1b-split", p=2, m=4)]
        >>> cs = [CostModel.abstract(s.placement, F=0.01, B=0.02) for s in ss]
        >>> truth = [predict(s, c, FixedDelay(4e-4), 0.002, 0.001) for s, c in zip(ss, cs)]
        >>> a, t, lat, res = fit_terms(list(zip(ss, cs, truth)), FixedDelay(5e-5), latency=True)
        >>> round(a, 6), round(t, 6), round(lat, 6), res < 1e-9
        (0.002, 0.001, 0.0004, True)
    """
    from ..comm import FixedDelay

    measured = np.array([r[2] for r in runs], dtype=float)
    if not len(runs):
        return 0.0, 0.0, (comm.delay if latency else None), 0.0
    if latency and not isinstance(comm, FixedDelay):
        raise TypeError("fitting the latency needs a FixedDelay link")
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
    x = np.array([0.0, 0.0, comm.delay if latency else 0.0])
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
        >>> from ppverify.comm import FixedDelay
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
    from ..comm import FixedDelay

    a, t, lat, res = fit_terms(one, comm, ratio=ratio, latency=latency)
    link = FixedDelay(lat) if lat is not None else comm
    if not two:
        return RuntimeFit((a, t), None, res, latency=lat)
    a2, _, res2 = fit_overhead(two, link, transfers=False)
    return RuntimeFit((a, t), (a2, 0.0), res, res2, lat)


def predict_on(schedule: Schedule, costs: CostModel | dict[str, float], system: object) -> float:
    """The makespan ``simulate --system SYSTEM --costs ...`` predicts for a measured run, with
    the semantics :func:`prediction_method` picks: ``runtime`` (the preset's hand-over model,
    PyTorch's runtime action by action) or ``async`` (the system's runtime overhead folded into
    ``costs``). Costs are seconds per device share, as ``measure`` sleeps them; transfers take the
    system's links (sleep-mode tensors are a few hundred bytes: the latency). ``system`` is a
    :class:`~ppverify.system.System` or a preset name/path.

    Example:
        >>> from ppverify.schedules import build
        >>> round(predict_on(build("gpipe", p=2, m=1), {"F": 0.01, "B": 0.02}, "dgx-h100"), 6)   # 2 x (F + B) + 2 transfers of 5 us
        0.06001
    """
    from ..engines import run
    from ..overhead import system_overhead
    from ..system import load_system
    from . import seconds_costs

    sysm = load_system(system) if isinstance(system, str) else system
    c = seconds_costs(schedule, costs)
    if prediction_method(schedule, sysm) == "hand-over model":
        # PyTorch's runtime action by action, its rendezvous hand-overs included (engines.runtime)
        return float(run(schedule, c, sysm, semantics="runtime").makespan)
    return float(run(schedule, system_overhead(c, schedule.placement, sysm), sysm, semantics="async").makespan)


def prediction_method(schedule: Schedule, system: object) -> str:
    """How :func:`predict_on` times ``schedule`` on ``system``: ``hand-over model`` (a one-pipe
    schedule and a preset with ``runtime.handover`` terms: the ``runtime`` semantics, PyTorch's
    runtime walked action by action) or ``async`` (the overheads folded into op durations).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.system import load_system
        >>> prediction_method(build("1f1b", p=2, m=2), load_system("dgx-h100"))
        'async'
    """
    if getattr(system, "handover_s", None) is not None and schedule.placement.num_pipes == 1:
        return "hand-over model"
    return "async"


def _pingpong_target(rank: int, world_size: int, payload: Any) -> list[tuple[int, float]]:
    """Worker target: ping-pong between ranks 0 and 1; rank 0 returns ``(bytes, one-way s)``."""
    import time

    import torch
    import torch.distributed as dist

    sizes, repeats = payload
    out = []
    for nbytes in sizes:
        t = torch.zeros(max(1, nbytes // 4), dtype=torch.float32)
        trips = []
        for k in range(repeats + 1):
            dist.barrier()
            t0 = time.perf_counter()
            if rank == 0:
                dist.send(t, 1)
                dist.recv(t, 1)
            elif rank == 1:
                dist.recv(t, 0)
                dist.send(t, 0)
            if k:  # the first round trip of a size sets up buffers: not timed
                trips.append(time.perf_counter() - t0)
        out.append((t.numel() * 4, statistics.median(trips) / 2))
    return out


def pingpong(
    sizes: Sequence[int] = PINGPONG_SIZES, repeats: int = 20, timeout: float = 120.0
) -> list[tuple[int, float]]:
    """Median one-way time per message size between two fresh gloo workers.

    Example:
        >>> samples = pingpong((4, 1 << 20), repeats=5)  # doctest: +SKIP
        >>> [b for b, _ in samples]  # doctest: +SKIP
        [4, 1048576]
    """
    from .workers import run_workers

    return run_workers(2, _pingpong_target, (tuple(sizes), repeats), timeout)[0]


def overhead_runs(
    steps: int = 5,
    timeout: float = 120.0,
    schedules: Sequence[tuple[str, int, int, dict]] = OVERHEAD_SCHEDULES,
    timelines: list | None = None,
    samples: list | None = None,
) -> list[tuple[Schedule, CostModel, float]]:
    """Run the overhead schedules with :data:`CALIBRATION_COSTS` sleeps: ``(schedule, costs,
    median measured makespan s)`` each; every measured step's timeline of the one-pipe runs is
    appended to ``timelines`` when given (for :func:`ppverify.measure.breakdown.breakdown`), and
    every such step's hand-over samples to ``samples`` as ``(ranks, samples)``
    (:func:`ppverify.measure.handover.handover_samples`).

    Example:
        >>> runs = overhead_runs(steps=2, schedules=(("gpipe", 2, 2, {}),))  # doctest: +SKIP
        >>> runs[0][2] > 0  # doctest: +SKIP
        True
    """
    from ..schedules import build
    from . import measure_many, seconds_costs

    items = []
    for fam, p, m, params in schedules:
        s = build(fam, p=p, m=m, **params)
        items.append((s, seconds_costs(s, dict(CALIBRATION_COSTS))))
    results = measure_many(items, steps=steps, warmup=1, timeout=timeout)
    if timelines is not None:
        timelines.extend(tl for (s, _), r in zip(items, results) if s.placement.num_pipes == 1 for tl in r.timelines)
    if samples is not None:
        from .handover import handover_samples

        samples.extend(
            (s.p, handover_samples(s, c, ev, t0))
            for (s, c), r in zip(items, results)
            if s.placement.num_pipes == 1
            for t0, ev in r.events
        )
    return [(s, c, float(statistics.median(r.makespans))) for (s, c), r in zip(items, results)]


def calibrate(quick: bool = False, timeout: float = 120.0) -> Calibration:
    """Measure the link and the runtime overhead of this machine (see the module doc); ``quick``
    uses fewer sizes, repeats, schedules and steps.

    Example:
        >>> cal = calibrate(quick=True)  # doctest: +SKIP
        >>> cal.action_overhead_s > 0  # doctest: +SKIP
        True
    """
    from ..comm import FixedDelay

    sizes = PINGPONG_SIZES[::2] if quick else PINGPONG_SIZES
    samples = pingpong(sizes, repeats=5 if quick else 20, timeout=timeout)
    latency, bandwidth = fit_link(samples)
    from .breakdown import breakdown

    tls: list = []
    ho_samples: list = []
    runs = overhead_runs(
        steps=3 if quick else 7,
        timeout=timeout,
        schedules=QUICK_SCHEDULES if quick else OVERHEAD_SCHEDULES,
        timelines=tls,
        samples=ho_samples,
    )
    ops = breakdown(tls)
    from .handover import fit_by_ranks, for_ranks, predict_runtime

    # the hand-over model: every term op by op, nothing fitted to a makespan, pooled and per number
    # of worker processes; its residual on the one-pipe runs (each with its count's terms) is reported
    ho, ho_by_ranks = fit_by_ranks(ho_samples)
    one = [r for r in runs if r[0].placement.num_pipes == 1]
    ho_res = (
        float(
            np.sqrt(
                np.mean(
                    [
                        ((predict_runtime(s, c, for_ranks(ho, ho_by_ranks, s.p), draws=DRAWS).makespan - ms) / ms) ** 2
                        for s, c, ms in one
                    ]
                )
            )
        )
        if one
        else 0.0
    )
    # tiny (sleep-mode) boundary tensors: the link costs its latency. The proportion of the two
    # one-pipe terms comes from the op-by-op trimmed means (hundreds of samples per term); their
    # level from the makespans. (Fitting the hand-over latency too, fit_terms(latency=True), did
    # no better on this machine and was unstable: scripts/bench_measured.py compares the fits.)
    fit = fit_runtime(runs, FixedDelay(latency), ratio=op_ratio(ops))
    return Calibration(
        fit.one_pipe[0],
        fit.one_pipe[1],
        latency,
        bandwidth,
        tuple(samples),
        tuple((s.describe(), ms) for s, _, ms in runs),
        fit.residual,
        machine_name(),
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        {
            "residual_two_pipe": fit.residual_two_pipe,
            "breakdown": ops,
            "handover_residual": ho_res,
        },
        fit.two_pipe,
        ho,
        tuple(ho_by_ranks.items()),
    )


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


def _costs_text() -> str:
    return ", ".join(f"{k}={v * 1e3:g} ms" for k, v in CALIBRATION_COSTS.items())


def machine_name() -> str:
    """A short description of this machine: host, CPU count, Python and torch versions.

    Example:
        >>> "cores" in machine_name()
        True
    """
    try:
        import torch

        tv = torch.__version__
    except Exception:  # torch is optional for the name only
        tv = "no torch"
    return (
        f"{platform.node() or 'unknown host'}, {os.cpu_count()} cores, {platform.machine()}, "
        f"Python {platform.python_version()}, torch {tv}"
    )


def _breakdown_lines(b: Any) -> list[str]:
    if b is None:
        return []
    return [
        "# Op by op (medians over the one-pipe runs' timelines, ppverify.measure.breakdown): sleep overshoot",
        f"# {b.overshoot * 1e6:.0f} us/op; gap between a rank's ops {b.gap_base * 1e6:.0f} us + {b.gap_per_comm * 1e6:.0f} us "
        f"per SEND/RECV action; wait after another rank's op {b.wait * 1e6:.0f} us; step head {b.head * 1e6:.0f} us.",
        *(
            [
                f"# Trimmed means: overshoot {b.means[0] * 1e6:.0f} us/op; gap {b.means[1] * 1e6:.0f} us + "
                f"{b.means[2] * 1e6:.0f} us per SEND/RECV action."
            ]
            if b.means
            else []
        ),
    ]


def preset_text(cal: Calibration, name: str = "calibrated") -> str:
    """The calibration as a system preset (``models/systems`` schema), comments included.

    Example:
        >>> from ppverify.presets import parse_preset
        >>> text = preset_text(Calibration(1e-3, 2e-4, 5e-5, 1e9, machine="box", date="2026-01-01"))
        >>> d = parse_preset("systems", text)
        >>> d["runtime"]["action_overhead_us"], d["intra_node"]["latency_us"], d["gpus_per_node"]
        (1000.0, 50.0, 64)
    """
    bw = cal.bandwidth_Bps / 1e9 if np.isfinite(cal.bandwidth_Bps) else 1e6
    pp = ", ".join(f"{b} B: {s * 1e6:.1f} us" for b, s in cal.pingpong)
    runs = "; ".join(f"{d}: {ms * 1e3:.2f} ms" for d, ms in cal.runs)
    lines = [
        f"# Written by `ppverify calibrate` on {cal.date or 'an unknown date'}, machine: {cal.machine or 'unknown'}.",
        "# Link: gloo ping-pong between two worker processes over message sizes; one-way time = half",
        "# the median round trip; latency and bandwidth from a least-squares line time = latency + bytes/bandwidth.",
        f"# Samples: {pp or 'none'}.",
        f"# Runtime overhead: schedules run in PyTorch's pipeline runtime, ops sleeping {_costs_text()}; the async",
        "# engine's makespan with the overheads folded into op durations fitted to the measured medians",
        "# (the transfer/action proportion from the op-by-op trimmed means, their level by least squares)",
        f"# (rms relative residual {cal.residual * 100:.2f} %). Runs: {runs or 'none'}.",
        *_breakdown_lines(cal.extra.get("breakdown")),
        "# Devices are this machine's worker processes: every rank on one node, over the loopback.",
        f"description: {json.dumps(name + ' - this machine' + chr(39) + 's pipeline runtime (gloo, CPU processes), measured')}",
        "source: ppverify calibrate (measured)",
        "device:",
        "  name: CPU worker process",
        "  peak_TFLOPs: 0.1",
        "  memory_GiB: 1",
        "gpus_per_node: 64",
        "nics_per_node: 1",
        "intra_node:",
        "  name: gloo loopback",
        f"  latency_us: {cal.latency_s * 1e6:.3f}",
        f"  bandwidth_GBps: {bw:.6f}",
        "  topology: mesh",
        "inter_node:",
        "  name: gloo loopback",
        f"  latency_us: {cal.latency_s * 1e6:.3f}",
        f"  bandwidth_GBps: {bw:.6f}",
        "runtime:",
        "  name: PyTorch _PipelineScheduleRuntime",
        f"  action_overhead_us: {cal.action_overhead_s * 1e6:.3f}",
        f"  transfer_overhead_us: {cal.transfer_overhead_s * 1e6:.3f}",
    ]
    if cal.two_pipe_overhead_s is not None:
        lines += [
            "  two_pipe:    # ppverify's own runner (Chimera, DualPipe)",
            f"    action_overhead_us: {cal.two_pipe_overhead_s[0] * 1e6:.3f}",
            f"    transfer_overhead_us: {cal.two_pipe_overhead_s[1] * 1e6:.3f}",
        ]
    if cal.handover is not None:
        lines += [
            "  # PyTorch's runtime action by action (the runtime semantics, ppverify.engines.runtime): gloo's",
            "  # rendezvous makes a RECV posted after its SEND (late) cost a round trip; one-pipe predictions",
            "  # (simulate --semantics runtime, measure --system) walk each rank's",
            "  # actions with these terms (means of the op-by-op samples, none fitted to a makespan), each",
            f"  # drawn per action from its deciles, median of {DRAWS} walks (rms relative residual on the",
            f"  # one-pipe runs above {cal.extra.get('handover_residual', 0.0) * 100:.2f} %)",
            "  # pooled over every run; ranks_<n>: measured with n worker processes, which a prediction",
            "  # for n ranks uses (the nearest n it has otherwise)",
            "  handover:",
            *(f"    {k}: {v:.3f}" for k, v in cal.handover.as_us().items()),
        ]
        lines += _handover_lines(cal.handover, "    ")
        for n, h in cal.handover_by_ranks:
            lines.append(f"    ranks_{n}:   # the same terms from the runs with {n} worker processes")
            lines += _handover_lines(h, "      ", terms=True)
    return "\n".join(lines) + "\n"


def _handover_lines(h: Any, indent: str, terms: bool = False) -> list[str]:
    # a handover section's lines: its terms (when ``terms``) and its deciles
    lines = [f"{indent}{k}: {v:.3f}" for k, v in h.as_us().items()] if terms else []
    if h.deciles:
        lines.append(f"{indent}deciles:   # the middle of each tenth of each term's samples (gap: its residuals)")
        for t, q in h.deciles:
            cells = ", ".join(f"d{i + 1}_us: {x * 1e6:.1f}" for i, x in enumerate(q))
            lines.append(f"{indent}  {t}: {{{cells}}}")
    return lines


__all__ = [
    "CALIBRATION_COSTS",
    "OVERHEAD_SCHEDULES",
    "PINGPONG_SIZES",
    "QUICK_SCHEDULES",
    "Calibration",
    "RuntimeFit",
    "calibrate",
    "fit_link",
    "fit_overhead",
    "fit_runtime",
    "fit_terms",
    "machine_name",
    "op_ratio",
    "overhead_runs",
    "pingpong",
    "predict",
    "predict_on",
    "prediction_method",
    "preset_text",
]
