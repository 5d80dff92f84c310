"""Shared CLI arguments for system and LLM presets, and the one function turning parsed arguments
into ``(CostModel, CommModel)``, reused by ``simulate``, ``optimize``, ``gap`` and ``verify``.

The options only name the settings; :func:`ppverify.systems.preset_models.resolve_presets` resolves them
(three modes: ``--system NAME --model NAME`` in seconds and bytes, ``--costs``/``--comm-delay`` in
abstract units, ``--system NAME --costs ...`` for measured per-share seconds; other mixes are
refused).

Usage in a command module::

    from ..common import add_cost_arguments
    from ..presets_args import add_preset_arguments, costs_and_comm_from_args

    def add_arguments(parser):
        add_schedule_arguments(parser); add_cost_arguments(parser); add_preset_arguments(parser)

    def run(args):
        schedule = schedule_from_args(args)
        costs, comm = costs_and_comm_from_args(args, schedule)
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.schedule import Schedule
from ..systems.preset_models import DEFAULT_MFU, PresetContext, resolve_presets, settings_from

__all__ = [
    "DEFAULT_MFU",
    "PresetContext",
    "add_preset_arguments",
    "add_preset_option_arguments",
    "check_simulate_options",
    "costs_and_comm_from_args",
    "preset_context_from_args",
    "refuse_sync_without_replicas",
]


def add_preset_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--system``, ``--model``, ``--mfu``, ``--microbatch-size``, ``--seq-len``,
    ``--layers-per-stage``, ``--tp``, ``--recompute``, ``--flash-attention``, ``--ranks-per-node``.

    (``--costs`` and ``--comm-delay`` come from :func:`ppverify.cli.common.add_cost_arguments`.)

    Example:
        >>> p = argparse.ArgumentParser(); add_preset_arguments(p)
        >>> p.parse_args(["--system", "dgx-h100", "--model", "gpt3-13b"]).mfu
        0.4
    """
    from ..systems.presets import available, preset_name

    g = parser.add_argument_group("system and model presets (seconds and bytes instead of abstract units)")
    g.add_argument(
        "--system",
        default=None,
        type=lambda text: preset_name("systems", text),
        metavar="NAME|FILE",
        help="system preset (" + ", ".join(available("systems")) + ") or a .yaml file",
    )
    g.add_argument(
        "--model",
        default=None,
        type=lambda text: preset_name("llms", text),
        metavar="NAME|FILE",
        help="LLM preset (" + ", ".join(available("llms")) + ") or a .yaml file",
    )
    g.add_argument(
        "--mfu", type=float, default=DEFAULT_MFU, help=f"model FLOPs utilization of every op (default {DEFAULT_MFU})"
    )
    g.add_argument("--microbatch-size", type=int, default=1, help="sequences per microbatch (default 1)")
    g.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (default: the model's)")
    g.add_argument(
        "--layers-per-stage",
        default=None,
        metavar="N,N,...",
        help="explicit layer split, one count per stage (default: even, remainder to middle stages)",
    )
    g.add_argument(
        "--tp",
        type=int,
        default=1,
        help="tensor-parallel size per pipeline rank (divides compute, weights, activations "
        "and boundary bytes; sequence parallelism assumed; default 1)",
    )
    g.add_argument(
        "--recompute",
        action="store_true",
        help="full activation recomputation (tB = 3 tF, but on the last stage, whose head is not recomputed)",
    )
    g.add_argument(
        "--flash-attention", action="store_true", help="drop the 5as/h attention term from activation memory"
    )
    g.add_argument(
        "--ranks-per-node",
        type=int,
        default=None,
        help="pipeline ranks per node (default: GPUs per node // --tp, at least 1; 1 = pipeline across nodes)",
    )


def add_preset_option_arguments(parser: argparse.ArgumentParser) -> None:
    """The preset options of a command that runs many systems and models at once (``compare``):
    ``--mfu``, ``--microbatch-size``, ``--seq-len``, ``--tp``, ``--ranks-per-node``, each ``None``
    when not given (the presets' defaults apply).

    Example:
        >>> p = argparse.ArgumentParser(); add_preset_option_arguments(p)
        >>> ns = p.parse_args(["--tp", "2"]); ns.tp, ns.mfu
        (2, None)
    """
    g = parser.add_argument_group("preset options (apply to every system and model)")
    g.add_argument("--mfu", type=float, default=None, help="model FLOPs utilization (default 0.4)")
    g.add_argument("--microbatch-size", type=int, default=None, help="sequences per microbatch (default 1)")
    g.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (default: the model's)")
    g.add_argument("--tp", type=int, default=None, help="tensor-parallel size per pipeline rank (default 1)")
    g.add_argument(
        "--ranks-per-node",
        type=int,
        default=None,
        help="pipeline ranks per node (default: GPUs per node // --tp, at least 1; 1 = every hop on the network)",
    )


def preset_context_from_args(args: argparse.Namespace, schedule: Schedule) -> PresetContext:
    """Resolve the arguments (see :mod:`ppverify.systems.preset_models` for the modes) for ``schedule``.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=4, m=4)
        >>> ctx = preset_context_from_args(argparse.Namespace(system="dgx-h100", model="gpt3-1.3b"), s)
        >>> ctx.costs.time_unit, ctx.system.name, round(ctx.comm.transfer_time(0, 1, 1e9), 6)
        ('s', 'dgx-h100', 0.002227)
    """
    return resolve_presets(settings_from(vars(args)), schedule)


def costs_and_comm_from_args(args: argparse.Namespace, schedule: Schedule) -> tuple[CostModel, CommModel]:
    """``(CostModel, CommModel)`` for ``schedule`` from parsed arguments (stable signature; see
    :func:`preset_context_from_args` for the system/model objects too).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=2)
        >>> c, comm = costs_and_comm_from_args(argparse.Namespace(costs="F=1,B=2", comm_delay=0.5), s)
        >>> c.duration["B"], comm.transfer_time(0, 1, 0)
        ((2.0, 2.0), 0.5)
    """
    ctx = preset_context_from_args(args, schedule)
    return ctx.costs, ctx.comm


def check_simulate_options(args: argparse.Namespace) -> None:
    """``simulate``'s checks before any build: ``--memory-GiB`` a finite size, ``--stages`` only
    with a ``--model`` to derive them from, ``--measured-trace`` only beside a timed semantics (a
    unit-step count is no time: 10 steps read as 10 s, +10245 % against a 97 ms step).

    Example:
        >>> ns = argparse.Namespace(memory_gib=None, stages=False, model=None, measured_trace=["tr"], semantics="torch")
        >>> check_simulate_options(ns)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter measured-trace=tr: the torch semantics counts unit steps, not time, which a measured step cannot be set beside: pick a timed semantics (slot, async, contention, runtime)
    """
    from ..core.errors import ParameterError
    from ..engines import registry

    if args.memory_gib is not None and not 0 < args.memory_gib < 1e9:  # inf would print as JSON's Infinity
        raise ParameterError("memory-GiB", args.memory_gib, "must be a finite number of GiB > 0")
    if getattr(args, "stages", False) and not args.model:  # nothing to print: it would be ignored
        raise ParameterError(
            "stages",
            True,
            "prints the per-stage costs derived from --model: give --system and --model, or leave it out",
        )
    if getattr(args, "measured_trace", None) and registry.engine(args.semantics).unit_steps:
        timed = ", ".join(n for n in registry.names() if not registry.engine(n).unit_steps)
        raise ParameterError(
            "measured-trace",
            " ".join(args.measured_trace),
            f"the {args.semantics} semantics counts unit steps, not time, which a measured step cannot be set "
            f"beside: pick a timed semantics ({timed})",
        )


def refuse_sync_without_replicas(sync: str | None, placement: Any, pipes: Sequence[int]) -> None:
    """Refuse ``--sync after-flush`` or ``none`` for a schedule whose pipes (``pipes``: each
    microbatch's) hold no stage on two devices: there is no replica all-reduce for it to move, so
    it would change nothing (``simulate 1f1b --sync none`` was accepted in silence). ``eager``, the
    default, and a saved file's own setting (``sync=None`` here) pass.

    Example:
        >>> from ppverify.core.placement import linear
        >>> refuse_sync_without_replicas("eager", linear(2), (0, 0))
        >>> refuse_sync_without_replicas("none", linear(2), (0, 0))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter sync=none: times the all-reduce of stage replicas (a stage on two devices, as chimera's), and no stage here has one: leave it out
    """
    from ..core.errors import ParameterError
    from ..systems.replica_sync import stage_replicas

    if sync not in ("after-flush", "none"):
        return
    if not stage_replicas(placement, pipes):
        raise ParameterError(
            "sync",
            sync,
            "times the all-reduce of stage replicas (a stage on two devices, as chimera's), and no stage here "
            "has one: leave it out",
        )
