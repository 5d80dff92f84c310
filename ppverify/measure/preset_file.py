"""A calibration written as a system preset (the schema of ``models/systems/``), with comments
naming how, when and where it was measured (:func:`preset_text`)."""

from __future__ import annotations

import json
import os
import platform
from typing import Any

import numpy as np

from ..engines.runtime import DRAWS
from ..systems.presets import HANDOVER_RANKS
from .calibration import CALIBRATION_COSTS, Calibration


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

        tv: str = torch.__version__  # a TorchVersion, a str subclass
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


def _load_lines(load: Any, realtime: bool = False) -> list[str]:
    if load is None:
        return []
    if realtime or (load.quiet and not load.crowded):  # at real-time priority other jobs wait for the workers
        return [f"# Machine load during the runs (/proc/stat): {load.describe()}."]
    if load.quiet:  # crowded: other jobs at normal priority, which the niced share does not count
        return [
            f"# Machine load during the runs (/proc/stat): {load.describe()}"
            "; NOT a quiet machine: more than half the CPUs busy, beyond what the calibration's sleeping workers use"
            " (other jobs at normal priority): the runtime's terms come out larger than on a quiet one."
        ]
    return [
        f"# Machine load during the runs (/proc/stat): {load.describe()}"
        "; NOT a quiet machine: the runtime's terms come out larger than on a quiet one."
    ]


def _residual_text(cal: Calibration) -> str:
    # each fit's residual over its own runs: the one-pipe figures never saw the two-pipe runs
    two = cal.extra.get("residual_two_pipe")
    text = f"rms relative residual {cal.residual * 100:.2f} % over the one-pipe runs"
    return text + (f", the two-pipe runner's {two * 100:.2f} % over the two-pipe runs" if two is not None else "")


def _handover_residual_text(cal: Calibration) -> str:
    # only a calibration that walked the model over its runs has a residual: a trace fit has no
    # such runs (its held-out steps' errors are its check), and 0.00 % would claim a perfect fit
    res = cal.extra.get("handover_residual")
    if res is None:
        return "(no residual here: no calibration runs were walked)"
    return f"(rms relative residual on the\n  # one-pipe runs above {res * 100:.2f} %)"


def preset_text(cal: Calibration, name: str = "calibrated") -> str:
    """The calibration as a system preset (``models/systems`` schema), comments included.

    Example:
        >>> from ppverify.systems.presets import parse_preset
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
        "# the least round trip; latency and bandwidth from the line time = latency + bytes/bandwidth along the",
        "# samples' lower envelope (no sample under it).",
        f"# Samples: {pp or 'none'}.",
        f"# Runtime overhead: schedules run in PyTorch's pipeline runtime, ops sleeping {_costs_text()}; the async",
        "# engine's makespan with the overheads folded into op durations fitted to the measured medians",
        "# (the transfer/action proportion from the op-by-op trimmed means, their level by least squares)",
        f"# ({_residual_text(cal)}). Runs: {runs or 'none'}.",
        *_breakdown_lines(cal.extra.get("breakdown")),
        *_load_lines(cal.extra.get("load"), bool(cal.extra.get("realtime"))),
        *(
            ["# Workers at real-time priority (calibrate --realtime): predicts measure --realtime runs."]
            if cal.extra.get("realtime")
            else []
        ),
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
            f"  # drawn per action from its deciles, median of {DRAWS} walks {_handover_residual_text(cal)}",
            "  # pooled over every run; ranks_<n>: measured with n worker processes, which a prediction",
            "  # for n ranks uses (the nearest n it has otherwise)",
            "  handover:",
            *(f"    {k}: {v:.3f}" for k, v in cal.handover.as_us().items()),
        ]
        lines += _handover_lines(cal.handover, "    ")
        for n, h in cal.handover_by_ranks:
            if n not in HANDOVER_RANKS:  # one rank hands nothing over: the pooled terms serve it
                continue
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


__all__ = ["machine_name", "preset_text"]
