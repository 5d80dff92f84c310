"""Calibrate the simulator to this machine's pipeline runtime: per-action overhead and the
point-to-point link, written as a system preset (``ppverify calibrate``).

Two measurements, both on real worker processes (:mod:`.workers`, gloo):

* **link**: a ping-pong between two ranks over message sizes; the one-way time of each size is
  half its least round trip (a loaded machine only adds time); latency and bandwidth come from
  the line ``time = latency + bytes / bandwidth`` along the samples' lower envelope
  (:func:`fit_link`: a stalled size cannot tilt it; times that do not grow with the size are
  refused rather than read as an infinite bandwidth).
* **overhead**: a few schedules run through :func:`~ppverify.measure.measure_many` with sleep
  costs (:data:`CALIBRATION_COSTS`): the measured makespan minus the prediction is the runtime's
  own time along the critical path (Python per action, and waking a sleeping or waiting process,
  which grows with the machine's load). The model (:mod:`ppverify.core.overhead`) charges ``a`` per
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
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.costs import CostModel
from ..core.schedule import Schedule
from ..engines.runtime import DRAWS
from ..systems.system import System
from .calibration import CALIBRATION_COSTS, OVERHEAD_SCHEDULES, PINGPONG_SIZES, QUICK_SCHEDULES, Calibration
from .fit import LinkFitError, RuntimeFit, fit_link, fit_overhead, fit_runtime, fit_terms, op_ratio, predict
from .preset_file import machine_name, preset_text


def predict_on(
    schedule: Schedule, costs: CostModel | dict[str, float], system: System | str, semantics: str | None = None
) -> float:
    """The makespan ``simulate --system SYSTEM --costs ... --semantics S`` predicts for a measured
    run; ``semantics`` defaults to the one :func:`prediction_method` picks: ``runtime`` (the
    preset's hand-over model, PyTorch's runtime action by action) or ``async`` (the system's
    runtime overhead folded into ``costs``). As in ``simulate``, an engine that models the
    runtime's overhead itself gets the costs before the fold. Costs are seconds per device share,
    as ``measure`` sleeps them; transfers take the system's links (sleep-mode tensors are a few
    hundred bytes: the latency). ``system`` is a :class:`~ppverify.systems.system.System` or a preset
    name/path.

    Example:
        >>> from ppverify.schedules import build
        >>> round(predict_on(build("gpipe", p=2, m=1), {"F": 0.01, "B": 0.02}, "dgx-h100"), 6)   # 2 x (F + B) + 2 transfers of 5 us
        0.06001
    """
    from ..core.overhead import system_overhead
    from ..engines import registry, run
    from ..systems.system import load_system
    from . import seconds_costs

    sysm = load_system(system) if isinstance(system, str) else system
    if semantics is None:
        semantics = "runtime" if prediction_method(schedule, sysm) == "hand-over model" else "async"
    c = seconds_costs(schedule, costs)
    if not registry.engine(semantics).own_overhead:
        c = system_overhead(c, schedule.placement, sysm)
    return float(run(schedule, c, sysm, semantics=semantics).makespan)


def prediction_method(schedule: Schedule, system: object) -> str:
    """How :func:`predict_on` times ``schedule`` on ``system``: ``hand-over model`` (a one-pipe
    schedule and a preset with ``runtime.handover`` terms: the ``runtime`` semantics, PyTorch's
    runtime walked action by action) or ``async`` (the overheads folded into op durations).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.systems.system import load_system
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
        # the least trip: the others are this one plus the machine's other work (a stall of one
        # size's median would make the small sizes look slower than the large ones)
        out.append((t.numel() * 4, min(trips) / 2))
    return out


def pingpong(
    sizes: Sequence[int] = PINGPONG_SIZES, repeats: int = 20, timeout: float = 120.0, realtime: bool = False
) -> list[tuple[int, float]]:
    """Least one-way time per message size between two fresh gloo workers (``realtime``: at
    real-time priority, as ``measure --realtime`` runs them).

    Example:
        >>> samples = pingpong((4, 1 << 20), repeats=5)  # doctest: +SKIP
        >>> [b for b, _ in samples]  # doctest: +SKIP
        [4, 1048576]
    """
    from .workers import run_workers

    return run_workers(2, _pingpong_target, (tuple(sizes), repeats), timeout, realtime=realtime)[0]


def overhead_runs(
    steps: int = 5,
    timeout: float = 120.0,
    schedules: Sequence[tuple[str, int, int, dict]] = OVERHEAD_SCHEDULES,
    timelines: list | None = None,
    samples: list | None = None,
    realtime: bool = False,
) -> list[tuple[Schedule, CostModel, float]]:
    """Run the overhead schedules with :data:`CALIBRATION_COSTS` sleeps: ``(schedule, costs,
    median measured makespan s)`` each; every measured step's timeline of the one-pipe runs is
    appended to ``timelines`` when given (for :func:`ppverify.measure.breakdown.breakdown`), and
    every such step's hand-over samples to ``samples`` as ``(ranks, samples)``
    (:func:`ppverify.measure.handover.handover_samples`). ``realtime``: the workers at real-time
    priority (``measure --realtime``).

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
    results = measure_many(items, steps=steps, warmup=1, timeout=timeout, realtime=realtime)
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


def check_calibration_fits(schedules: Sequence[tuple[str, int, int, dict]], steps: int, timeout: float) -> None:
    """Refuse a ``--timeout`` shorter than a calibration run's predicted sleep (its warm-up and
    ``steps`` at :data:`CALIBRATION_COSTS`) before any worker starts: the costs are fixed, so the
    advice is the timeout alone.

    Example:
        >>> check_calibration_fits((("1f1b", 2, 4, {}),), 3, 0.2)   # 4 steps of (4 + 1) x 15 ms = 0.3 s
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter timeout=0.2: 1f1b p=2 m=4's 4 steps (1 warm-up) sleep about 0.3 s by the prediction (0.075 s a step), longer than the timeout, after which a run counts as hung: raise --timeout (calibrate's runs sleep fixed costs)
    """
    from ..core.comm import NO_COMM
    from ..engines import run
    from ..schedules import build
    from . import check_run_fits, seconds_costs

    for fam, p, m, params in schedules:
        s = build(fam, p=p, m=m, **params)
        step = run(s, seconds_costs(s, dict(CALIBRATION_COSTS)), NO_COMM, semantics="async").makespan
        check_run_fits(s.describe(), step, steps, 1, timeout, "raise --timeout (calibrate's runs sleep fixed costs)")


def calibrate(quick: bool = False, timeout: float = 120.0, realtime: bool = False) -> Calibration:
    """Measure the link and the runtime overhead of this machine (see the module doc); ``quick``
    uses fewer sizes, repeats, schedules and steps; ``realtime`` runs every worker at real-time
    priority (:mod:`.realtime`), for predicting ``measure --realtime`` runs.

    Example:
        >>> cal = calibrate(quick=True)  # doctest: +SKIP
        >>> cal.action_overhead_s > 0  # doctest: +SKIP
        True
    """
    from ..core.comm import FixedDelay
    from ..core.limits import check_family

    schedules = QUICK_SCHEDULES if quick else OVERHEAD_SCHEDULES
    for fam, p, m, params in schedules:  # --max-ops refuses them now, before any worker starts
        check_family(fam, p, m, params)
    check_calibration_fits(schedules, 3 if quick else 7, timeout)
    sizes = PINGPONG_SIZES[::2] if quick else PINGPONG_SIZES
    # (run_workers refuses a realtime the machine does not allow before any worker starts)
    samples = pingpong(sizes, repeats=5 if quick else 20, timeout=timeout, realtime=realtime)
    latency, bandwidth = fit_link(samples, strict=True)  # refused before the overhead runs
    from .breakdown import breakdown
    from .machine_load import cpu_share, cpu_ticks

    tls: list = []
    ho_samples: list = []
    ticks = cpu_ticks()
    runs = overhead_runs(
        steps=3 if quick else 7,
        timeout=timeout,
        schedules=schedules,
        timelines=tls,
        samples=ho_samples,
        realtime=realtime,
    )
    load = cpu_share(ticks, cpu_ticks())
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
            # each residual is over its own runs: the one-pipe fit (and the hand-over model) and the two-pipe fit
            "one_pipe_runs": len(one),
            "two_pipe_runs": len(runs) - len(one),
            "breakdown": ops,
            "handover_residual": ho_res,
            "load": load,
            "realtime": realtime,
        },
        fit.two_pipe,
        ho,
        tuple(ho_by_ranks.items()),
    )


__all__ = [
    "CALIBRATION_COSTS",
    "OVERHEAD_SCHEDULES",
    "PINGPONG_SIZES",
    "QUICK_SCHEDULES",
    "Calibration",
    "LinkFitError",
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
