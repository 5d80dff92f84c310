"""``design --measure``: the frontier schedules and the families of the searched placements run in
PyTorch's pipelining runtime (the measured level, :mod:`ppverify.measure`), with their gradients
checked, their measured step time and peak printed beside the predicted ones.

Abstract costs become seconds: each unit sleeps ``scale`` seconds (``compute="sleep"``), so the
measured step is comparable with the prediction times ``scale``. With a system preset the ops
sleep their own costs (the runtime adds its overhead by itself), the predicted column is the
design's (the preset's links and overheads), and a preset's emulated link delay
(``runtime.link_delay_us``) is emulated in the runs (``measure --link-delay``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..core.costs import CostModel, in_seconds
from ..core.schedule import Schedule
from .run import Design


@dataclass(frozen=True)
class Measured:
    """One measured schedule: predicted (async engine, seconds) and measured step times, predicted
    and measured peaks (budget units), the budget (frontier points) and the gradient check.

    Example:
        >>> Measured("v-min", "family", 0.4, 0.45, 2.0, 2.0, None, True).to_dict()["name"]
        'v-min'
    """

    name: str
    kind: str
    predicted_s: float | None
    measured_s: float
    predicted_peak: float
    measured_peak: float
    budget: float | None
    grad_ok: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "kind": self.kind,
            "predicted_s": self.predicted_s,
            "measured_s": self.measured_s,
            "predicted_peak": self.predicted_peak,
            "measured_peak": self.measured_peak,
            "budget": self.budget,
            "grad_ok": self.grad_ok,
        }


#: seconds each abstract cost unit sleeps under ``design --measure`` unless ``--measure-scale`` says
DEFAULT_SCALE = 0.01


def measure_scale(measure: bool, scale: float | None, preset: bool) -> float:
    """The seconds per abstract unit ``design --measure`` sleeps, checked before the search:
    ``--measure-scale`` without ``--measure``, or with presets (their ops sleep their own
    seconds), would be read by nobody, and one that is not a finite number > 0 would fail only
    after every point was searched.

    Example:
        >>> measure_scale(True, None, False), measure_scale(True, 0.05, False)
        (0.01, 0.05)
        >>> measure_scale(False, 0.05, False)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter measure-scale=0.05: scales the measured runs of --measure, which this run does not make: give --measure, or leave it out
    """
    import math

    from ..core.errors import ParameterError

    if scale is None:
        return DEFAULT_SCALE
    if not measure:
        raise ParameterError(
            "measure-scale",
            scale,
            "scales the measured runs of --measure, which this run does not make: give --measure, or leave it out",
        )
    if preset:
        raise ParameterError(
            "measure-scale", scale, "with --system/--model the ops sleep their own costs in seconds: leave it out"
        )
    if not (math.isfinite(scale) and 0 < scale <= 60):
        raise ParameterError("measure-scale", scale, "must be seconds per abstract unit in (0, 60]")
    return float(scale)


def measure_design(
    d: Design, scale: float = 0.01, steps: int = 3, timeout: float = 300.0, compute: str = "sleep"
) -> list[Measured]:
    """Measure every frontier schedule and every family of a searched placement (abstract costs
    only: presets already count seconds and are used as they are).

    Example:
        >>> from ppverify.design import DesignRequest, design
        >>> rows = measure_design(design(DesignRequest(2, 4, "linear", "2"), progress=False))  # doctest: +SKIP
        >>> all(r.grad_ok for r in rows)  # doctest: +SKIP
        True
    """
    from ..measure import measure_many
    from ..systems.preset_models import resolve_presets
    from ..systems.system import link_delay_of

    by_label = {s.label: s for s in d.setups}
    items: list[tuple[str, str, Schedule, CostModel, float, float, float | None, float | None]] = []
    preset = d.request.settings.model is not None or d.request.settings.system is not None
    # every placement runs on the settings' one system: its emulated link delay, if any
    link_delay = max((link_delay_of(st.comm) for st in d.setups), default=0.0)

    def sleeps(schedule: Schedule) -> CostModel:
        # the ops sleep their own costs: the runtime's overhead, which a system preset folds into
        # the predicted durations, is what the real runtime adds by itself
        ctx = resolve_presets(d.request.settings, schedule)
        return ctx.costs_for(True) if preset else in_seconds(ctx.costs, scale)

    for i, q in enumerate(d.front):
        if q.schedule is None or q.peak is None:
            continue
        st = by_label[q.placement]
        budget = None if math.isinf(q.budget) else q.budget
        pred = q.time if preset else None
        label = f"frontier {i} ({q.placement})"
        items.append((label, "frontier", q.schedule, sleeps(q.schedule), st.unit, q.peak, budget, pred))
    for f in d.families:
        if f.placement not in by_label or f.schedule is None:
            continue
        unit = by_label[f.placement].unit
        pred = f.time if preset else None
        items.append((f.family, "family", f.schedule, sleeps(f.schedule), unit, f.peak, None, pred))
    results = measure_many(
        [(it[2], it[3]) for it in items], compute=compute, steps=steps, timeout=timeout, link_delay=link_delay
    )
    out = []
    for (name, kind, _, _, unit, peak, budget, design_pred), r in zip(items, results):
        # with presets: design's own prediction (the system's links and overheads); else measure's
        pred = design_pred if design_pred is not None else None if r.predicted is None else float(r.predicted.makespan)
        measured_peak = float(max(r.timeline.peak_memory())) / unit
        out.append(Measured(name, kind, pred, float(r.makespan), peak, measured_peak, budget, bool(r.grad_check.ok)))
    return out


def measured_text(rows: list[Measured]) -> str:
    """The measured table.

    Example:
        >>> print(measured_text([Measured("1f1b", "family", 0.15, 0.16, 2.0, 2.0, None, True)]))
        measured   (PyTorch's runtime, sleep compute; seconds)
          schedule                  predicted   measured   peak  measured peak  budget  gradients
          1f1b                         0.1500     0.1600      2              2       -  ok
    """
    w = max([24] + [len(r.name) for r in rows])  # "frontier 0 (bidirectional)" is 26
    lines = [
        "measured   (PyTorch's runtime, sleep compute; seconds)",
        f"  {'schedule':<{w}} {'predicted':>10} {'measured':>10} {'peak':>6} {'measured peak':>14} {'budget':>7}  gradients",
    ]
    for r in rows:
        pred = "-" if r.predicted_s is None else f"{r.predicted_s:.4f}"
        budget = "-" if r.budget is None else f"{r.budget:g}"
        lines.append(
            f"  {r.name:<{w}} {pred:>10} {r.measured_s:>10.4f} {r.predicted_peak:>6g} {r.measured_peak:>14g} "
            f"{budget:>7}  {'ok' if r.grad_ok else 'WRONG'}"
        )
    return "\n".join(lines)
