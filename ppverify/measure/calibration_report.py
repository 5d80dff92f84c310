"""What ``ppverify calibrate`` prints about a calibration: the ``--json`` object and the summary
lines written with ``--out`` (:func:`calibration_json`, :func:`calibration_lines`), and the same
``--json`` object for ``calibrate --from-trace`` (:func:`trace_fit_json`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
        "pingpong": [list(x) for x in cal.pingpong],
        "runs": [list(x) for x in cal.runs],
        "load": {"busy": load.busy, "niced": load.niced, "seconds": load.seconds} if load is not None else None,
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
        fit residual       0.00 % rms over 0 schedules
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
    lines.append(f"fit residual       {cal.residual * 100:.2f} % rms over {len(cal.runs)} schedules")
    if (load := cal.extra.get("load")) is not None:
        rt = bool(cal.extra.get("realtime"))
        note = (
            ""
            if load.quiet
            else (": workers at real-time priority, ahead of them" if rt else ": not quiet, calibrate again")
        )
        lines.append(f"machine load       {load.describe()}{note}")
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
        "held_out": [{"step": n, "measured": ms, "predicted": pr, "error": (pr - ms) / ms} for n, ms, pr in rows],
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


__all__ = ["calibration_json", "calibration_lines", "trace_fit_json"]
