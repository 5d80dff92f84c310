"""The preset ``calibrate --from-trace`` writes: :func:`~ppverify.measure.preset_file.preset_text`'s
schema, with comments saying what it was fitted to (which trace and steps, the op costs, the
link's samples, how the overheads were read), and the system such a preset's text describes.
"""

from __future__ import annotations

from typing import Any

from .trace_fit import TraceFit
from .trace_steps import MIN_OUTLIER_STEPS


def trace_preset_text(fit: TraceFit, name: str, source: str) -> str:
    """The preset of a :class:`TraceFit`: :func:`~ppverify.measure.preset_file.preset_text`'s
    schema, with comments saying it was fitted to a trace (which, which steps, the op costs).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> traces = read_traces([traces_dir])
        >>> from ppverify.measure.trace_fit import calibrate_from_trace
        >>> fit = calibrate_from_trace(traces)
        >>> print(trace_preset_text(fit, "mine", "prof/"))  # doctest: +ELLIPSIS
        # Written by `ppverify calibrate --from-trace prof/` on ...
        # Trace: recorded p=2 m=4, fit steps ProfilerStep 1, 2 (makespans 163.06 ms, 177.54 ms); not checked for outliers (fewer than 3 fit steps).
        ...
        source: ppverify calibrate --from-trace (measured)
        ...
    """
    from .preset_file import preset_text

    body = preset_text(fit.calibration, name)
    body = body[body.index("description:") :]
    c = fit.costs
    cal = fit.calibration
    costs = "; ".join(f"{k}=" + "/".join(f"{x * 1e3:.4g}" for x in c.duration[k]) for k in ("F", "B", "I", "W"))
    lines = [
        f"# Written by `ppverify calibrate --from-trace {source}` on {cal.date}, machine: {cal.machine}.",
        f"# Trace: {fit.schedule.describe()}, fit steps ProfilerStep {', '.join(map(str, fit.fit_steps))} "
        f"(makespans {', '.join(f'{ms * 1e3:.2f} ms' for _, ms in fit.runs)}){_outliers(fit)}.",
        f"# Op costs (median per stage and kind over the fit steps, ms per stage): {costs}.",
        _link_line(fit),
        (
            f"# Runtime overhead and latency read off the events: {cal.action_overhead_s * 1e6:.0f} us per action,"
            f" {cal.transfer_overhead_s * 1e6:.0f} us per SEND/RECV, latency {cal.latency_s * 1e6:.0f} us"
            f" (the async makespans' rms relative residual {fit.residual * 100:.2f} %)"
            + (
                "."
                if cal.handover is not None
                else "; device-side ranges: no hand-over terms (gloo's), async predicts."
            )
            if _from_events(cal)
            else f"# Runtime overhead fitted as `ppverify calibrate` fits it (rms relative residual {fit.residual * 100:.2f} %)."
        ),
    ]
    return (
        "\n".join(lines)
        + "\n"
        + body.replace("source: ppverify calibrate (measured)", "source: ppverify calibrate --from-trace (measured)")
    )


def _from_events(cal: Any) -> bool:
    """Whether the latency and runtime overhead were read off the hand-overs' events (one pipe;
    a device-side trace writes no hand-over terms, yet its terms come from them too).

    Example:
        >>> from ppverify.measure.calibration import Calibration
        >>> _from_events(Calibration(0, 0, 1e-5, 1e15)), _from_events(Calibration(0, 0, 1e-5, 1e15, extra={"terms_from_events": True}))
        (False, True)
    """
    return cal.handover is not None or bool(cal.extra.get("terms_from_events"))


def _outliers(fit: TraceFit) -> str:
    """The preset's words on the outlier check of the fit steps: the steps it left out, or that
    too few were fitted to check them (:data:`~ppverify.measure.trace_steps.MIN_OUTLIER_STEPS`).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> _outliers(NS(fit_steps=(1, 2), dropped=(5,)))
        '; left out as outliers: ProfilerStep 5'
        >>> _outliers(NS(fit_steps=(1, 2), dropped=()))
        '; not checked for outliers (fewer than 3 fit steps)'
    """
    if fit.dropped:
        return f"; left out as outliers: ProfilerStep {', '.join(map(str, fit.dropped))}"
    if len(fit.fit_steps) < MIN_OUTLIER_STEPS:
        return f"; not checked for outliers (fewer than {MIN_OUTLIER_STEPS} fit steps)"
    return ""


def _link_line(fit: TraceFit) -> str:
    """The preset's comment on the link: how many transfers were timed, their sizes and where the
    bytes came from, and what they measure.

    Example:
        >>> from ppverify.measure.calibration import Calibration
        >>> from ppverify.schedules import build
        >>> fit = TraceFit(Calibration(0, 0, 1e-5, 1e15), None, build("1f1b", p=2, m=2), (1,), (), ((0.0, 1e-5),), "none")
        >>> _link_line(fit)
        '# Link: 1 transfers whose RECV was posted before the SEND (SEND post to receive completion), sizes not recorded (no record_shapes: --model or --boundary-bytes size them): latency only (bandwidth not measurable).'
    """
    sizes = sorted({b for b, _ in fit.link_samples})
    timed = "whose RECV was posted before the SEND (SEND post to receive completion)"
    handover = _from_events(fit.calibration)
    if not sizes:
        what = (
            "bandwidth not measurable; latency from the hand-overs' events (below)"
            if handover
            else "latency and bandwidth not measurable"
        )
        return f"# Link: no transfer {timed}: {what}."
    if sizes == [0.0]:
        head = "sizes not recorded (no record_shapes: --model or --boundary-bytes size them): "
    else:
        head = f"sizes {', '.join(f'{b:g} B' for b in sizes)} (bytes from {fit.bytes_from}); "
        head += "" if len(sizes) > 1 else "one size: "
    if len(sizes) > 1:
        what = (
            "bandwidth by least squares; latency from the hand-overs' events (below)"
            if handover
            else "latency and bandwidth by least squares"
        )
    elif handover:
        what = "bandwidth not measurable; latency from the hand-overs' events (below)"
    else:
        what = "latency only (bandwidth not measurable)"
    return f"# Link: {len(fit.link_samples)} transfers {timed}, {head}{what}."


def preset_system(text: str, name: str = "from-trace") -> Any:
    """The :class:`~ppverify.systems.system.System` of a preset's text (read through a temporary file,
    as ``--system FILE`` reads it).

    Example:
        >>> from ppverify.measure.calibration import Calibration
        >>> from ppverify.measure.preset_file import preset_text
        >>> preset_system(preset_text(Calibration(1e-3, 2e-4, 5e-5, 1e9))).action_overhead_s
        0.001
    """
    import tempfile
    from pathlib import Path

    from ..core.files import atomic_write
    from ..systems.system import load_system

    with tempfile.TemporaryDirectory(prefix="ppverify-preset-") as d:
        path = Path(d) / f"{name}.yaml"
        # UTF-8, which load_system reads, whatever the locale: the text names the trace's path
        atomic_write(path, text)
        return load_system(str(path))


__all__ = ["preset_system", "trace_preset_text"]
