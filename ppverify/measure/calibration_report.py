"""What ``ppverify calibrate`` prints about a calibration: the ``--json`` object and the summary
lines written with ``--out`` (:func:`calibration_json`, :func:`calibration_lines`), and the same
``--json`` object and summary lines for ``calibrate --from-trace`` (:func:`trace_fit_json`,
:func:`summary_lines`)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from ..views.run_report import error_text, prediction_error
from .calibration import Calibration


def calibration_json(cal: Calibration, preset: str | None) -> dict[str, Any]:
    """``calibrate --json``: every fitted figure (seconds, bytes/s, hand-over terms in us), the raw
    samples and runs, the machine load of the runs and where the preset went.

    Example:
        >>> sorted(calibration_json(Calibration(1e-3, 2e-4, 5e-5, 1e9), None))[:4]
        ['action_overhead_s', 'bandwidth_Bps', 'date', 'handover_by_ranks_us']
    """
    load = cal.extra.get("load")
    return {
        "action_overhead_s": cal.action_overhead_s,
        "transfer_overhead_s": cal.transfer_overhead_s,
        "latency_s": cal.latency_s,
        "bandwidth_Bps": cal.bandwidth_Bps,
        "two_pipe_overhead_s": cal.two_pipe_overhead_s,
        "handover_us": cal.handover.as_us() if cal.handover is not None else None,
        "handover_by_ranks_us": {str(n): h.as_us() for n, h in cal.handover_by_ranks},
        "residual": cal.residual,
        "residual_two_pipe": cal.extra.get("residual_two_pipe"),
        "residual_handover": cal.extra.get("handover_residual"),
        "one_pipe_runs": cal.extra.get("one_pipe_runs", len(cal.runs)),
        "two_pipe_runs": cal.extra.get("two_pipe_runs", 0),
        "pingpong": [list(x) for x in cal.pingpong],
        "runs": [list(x) for x in cal.runs],
        "load": {
            "busy": load.busy,
            "niced": load.niced,
            "seconds": load.seconds,
            "quiet": load.quiet and not load.crowded,  # what the text's "not quiet, calibrate again" says
        }
        if load is not None
        else None,
        "machine": cal.machine,
        "date": cal.date,
        "preset": preset,
    }


def calibration_lines(cal: Calibration) -> list[str]:
    """What ``calibrate --out FILE`` prints: the overheads, hand-over terms, link, fit residual
    and the machine load of the runs (with a warning when the machine was not quiet).

    Example:
        >>> print("\\n".join(calibration_lines(Calibration(1e-3, 2e-4, 5e-5, 1e9))))
        action overhead    1000.0 us per compute action
        transfer overhead  200.0 us per SEND/RECV
        link               50.0 us + bytes / 1 GB/s
        fit residual       0.00 % rms over 0 one-pipe schedules (async engine, overheads folded in)
    """
    lines = [
        f"action overhead    {cal.action_overhead_s * 1e6:.1f} us per compute action",
        f"transfer overhead  {cal.transfer_overhead_s * 1e6:.1f} us per SEND/RECV",
    ]
    if cal.two_pipe_overhead_s is not None:
        lines.append(f"two-pipe runner    {cal.two_pipe_overhead_s[0] * 1e6:.1f} us per compute action")
    if cal.handover is not None:
        h = cal.handover
        lines.append(
            f"hand-overs         RECV posted late {h.late * 1e6:.0f} us, early (wake) {h.wake * 1e6:.0f} us; "
            f"gap {h.gap * 1e6:.0f} us + {h.send * 1e6:.0f} us/SEND + {h.recv * 1e6:.0f} us/RECV"
        )
        lines += [
            f"  with {n} ranks     late {hn.late * 1e6:.0f} us, wake {hn.wake * 1e6:.0f} us, head {hn.head * 1e6:.0f} us"
            for n, hn in cal.handover_by_ranks
        ]
    lines.append(f"link               {cal.latency_s * 1e6:.1f} us + bytes / {cal.bandwidth_Bps / 1e9:.3g} GB/s")
    lines += residual_lines(cal)
    if (load := cal.extra.get("load")) is not None:
        rt = bool(cal.extra.get("realtime"))
        if rt and not (load.quiet and not load.crowded):
            note = ": workers at real-time priority, ahead of them"
        elif load.crowded:  # the niced share misses other jobs at normal priority
            note = ": not quiet (more than half the CPUs busy, beyond the calibration's own sleeping workers), calibrate again"
        else:
            note = "" if load.quiet else ": not quiet, calibrate again"
        lines.append(f"machine load       {load.describe()}{note}")
    return lines


def residual_lines(cal: Calibration) -> list[str]:
    r"""Each fit's rms relative residual over the runs it was fitted to: the one-pipe overheads
    (the async engine with them folded in) over the one-pipe runs, the two-pipe runner's figure
    over the two-pipe runs, and the hand-over model (what ``measure --system`` predicts for
    one-pipe schedules) over the one-pipe runs. A calibration that does not say how its runs
    split counts every run as one-pipe.

    Example:
        >>> cal = Calibration(1e-3, 2e-4, 5e-5, 1e9, runs=(("1f1b p=2 m=4", 0.08), ("chimera p=2 m=4", 0.07)),
        ...     residual=0.02, extra={"one_pipe_runs": 1, "two_pipe_runs": 1, "residual_two_pipe": 0.03})
        >>> print("\n".join(residual_lines(cal)))  # no hand-over model fitted: no third line
        fit residual       2.00 % rms over 1 one-pipe schedule (async engine, overheads folded in)
                           3.00 % rms over 1 two-pipe schedule (ppverify's runner, its own overhead)
    """

    def runs(n: int, kind: str) -> str:
        return f"{n} {kind} schedule{'' if n == 1 else 's'}"

    one = int(cal.extra.get("one_pipe_runs", len(cal.runs)))
    two = int(cal.extra.get("two_pipe_runs", 0))
    pad = " " * 19
    lines = [
        f"fit residual       {cal.residual * 100:.2f} % rms over {runs(one, 'one-pipe')} (async engine, overheads folded in)"
    ]
    if two and cal.extra.get("residual_two_pipe") is not None:
        lines.append(
            f"{pad}{cal.extra['residual_two_pipe'] * 100:.2f} % rms over {runs(two, 'two-pipe')} "
            "(ppverify's runner, its own overhead)"
        )
    if one and cal.handover is not None and cal.extra.get("handover_residual") is not None:
        lines.append(
            f"{pad}{cal.extra['handover_residual'] * 100:.2f} % rms over {runs(one, 'one-pipe')} by the hand-over "
            "model (measure --system's prediction)"
        )
    return lines


def trace_fit_json(fit: Any, rows: Sequence[tuple[int, float, float]], preset: str | None) -> dict[str, Any]:
    """``calibrate --from-trace --json``: the fit steps (and those left out as outliers), the
    fitted costs, link and overheads, where the link's bytes came from, each held-out step's
    measured and predicted makespan, and the SEND/RECV posts' lengths (:mod:`.trace_posts`).

    Example:
        >>> trace_fit_json(fit, [(3, 0.17, 0.168)], "x.yaml")["held_out"][0]["step"]  # doctest: +SKIP
        3
    """
    cal = fit.calibration
    return {
        "fit_steps": list(fit.fit_steps),
        "left_out": list(fit.dropped),
        "costs": {k: list(v) for k, v in fit.costs.duration.items()},
        "latency_s": cal.latency_s,
        "bandwidth_Bps": cal.bandwidth_Bps,
        "bytes_from": fit.bytes_from,
        "action_overhead_s": cal.action_overhead_s,
        "transfer_overhead_s": cal.transfer_overhead_s,
        # a two-pipe trace fits only its runner's figure; the one-pipe pair then stays 0
        "two_pipe_overhead_s": list(cal.two_pipe_overhead_s) if cal.two_pipe_overhead_s is not None else None,
        "residual": fit.residual,
        "held_out": [
            {"step": n, "measured": ms, "predicted": pr, "error": prediction_error(pr, ms)} for n, ms, pr in rows
        ],
        "preset": preset,
        "posts": None
        if getattr(fit, "posts", None) is None
        else {
            "median_s": fit.posts.median,
            "p90_s": fit.posts.p90,
            "steps": [
                {"step": n, "makespan": ms, "blocked_s": b}
                for n, ms, b in zip(fit.posts.steps, fit.posts.makespans, fit.posts.blocked)
            ],
            "slope": fit.posts.slope,
            "r": fit.posts.r,
        },
    }


def summary_lines(fit: Any, text: str, rows: Sequence[tuple[int, float, float]]) -> list[str]:
    """What ``calibrate --from-trace --out FILE`` prints: the fit steps, the preset's costs, link
    and overhead comments, and each held-out step's prediction and error; ``fit`` is
    :func:`~ppverify.measure.trace_calibrate.from_trace`'s ``TraceFit``.

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.measure.trace_calibrate import from_trace
        >>> fit, text, rows = from_trace([traces_dir], None, "1", "mine")
        >>> print("\\n".join(summary_lines(fit, text, rows)))  # doctest: +ELLIPSIS
        fit steps          ProfilerStep 1 of recorded p=2 m=4
        Op costs (median per stage and kind over the fit steps, ms per stage): F=10.24/10.59; ...
        held-out step 2    measured 177.538 ms   predicted 161.304 ms   error (pred-meas)/meas -9.1%
        SEND/RECV posts    median 365 us, 90th percentile 3786 us; blocked 5.2-7.2 ms per step
    """
    lines = [
        f"fit steps          ProfilerStep {', '.join(map(str, fit.fit_steps))} of {fit.schedule.describe()}"
        + (f" (left out as outliers: {', '.join(map(str, fit.dropped))})" if fit.dropped else "")
    ]
    lines += [line[2:] for line in text.splitlines()[2:5]]
    return lines + held_out_lines(fit, rows)


def held_out_lines(fit: Any, rows: Sequence[tuple[int, float, float]]) -> list[str]:
    """Each held-out step's prediction and error (and their median, with more than one) and the
    SEND/RECV posts: the end of :func:`summary_lines`, which ``calibrate --from-trace`` without
    ``--out`` prints as comments after the preset.

    Example:
        >>> class Fit:
        ...     posts = None
        >>> held_out_lines(Fit(), [(3, 0.1, 0.11)])
        ['held-out step 3    measured 100.000 ms   predicted 110.000 ms   error (pred-meas)/meas +10.0%']
    """
    lines = [  # the first error printed states the sign's convention
        f"held-out step {n:<4} measured {ms * 1e3:.3f} ms   predicted {pr * 1e3:.3f} ms   "
        + error_text(prediction_error(pr, ms), labelled=i == 0)
        for i, (n, ms, pr) in enumerate(rows)
    ]
    if len(rows) > 1:
        med = statistics.median(ms for _, ms, _ in rows)
        spans = [ms for _, ms, _ in rows]
        lines.append(
            f"held-out median    measured {med * 1e3:.3f} ms   predicted {rows[0][2] * 1e3:.3f} ms   "
            f"{error_text(prediction_error(rows[0][2], med), labelled=False)}   "
            f"(the steps spread {100 * (max(spans) - min(spans)) / med:.1f}%)"
        )
    if fit.posts is not None:
        lines.append(f"SEND/RECV posts    {fit.posts.describe()}")
    return lines


__all__ = ["calibration_json", "calibration_lines", "held_out_lines", "summary_lines", "trace_fit_json"]
