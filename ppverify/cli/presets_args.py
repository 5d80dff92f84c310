"""Shared CLI arguments for system and LLM presets, and the one function turning parsed arguments
into ``(CostModel, CommModel)``, reused by ``simulate``, ``optimize``, ``gap`` and ``compare``.

Two modes, chosen by the arguments:

* **preset** (``--system NAME --model NAME``): durations in seconds from FLOPs, peak TFLOP/s and
  MFU; transfers from the system's link tiers; memory in bytes.
* **abstract** (neither given): ``--costs F=1,B=2`` per device share (unit slots by default) and
  ``--comm-delay c`` for every cross-device transfer (0 by default).
* **measured** (``--system NAME --costs ...``, no ``--model``): the costs are seconds per device
  share (what ``ppverify measure --compute sleep`` sleeps), transfers and the runtime overhead come
  from the system (a preset written by ``ppverify calibrate``).

In both system modes the system's runtime overhead (``runtime:`` section, :mod:`ppverify.overhead`)
is folded into the op durations. Other mixes (``--costs`` with ``--model``, ``--comm-delay`` with
``--system``, ``--system`` alone) are rejected, since seconds and abstract units cannot be combined.

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
from dataclasses import dataclass

from ..comm import CommModel, FixedDelay
from ..costs import CostModel
from ..errors import ParameterError
from ..schedule import Schedule

DEFAULT_MFU = 0.4


def add_preset_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--system``, ``--model``, ``--mfu``, ``--microbatch-size``, ``--seq-len``,
    ``--layers-per-stage``, ``--tp``, ``--recompute``, ``--flash-attention``, ``--ranks-per-node``.

    (``--costs`` and ``--comm-delay`` come from :func:`ppverify.cli.common.add_cost_arguments`.)

    Example:
        >>> p = argparse.ArgumentParser(); add_preset_arguments(p)
        >>> p.parse_args(["--system", "dgx-h100", "--model", "gpt3-13b"]).mfu
        0.4
    """
    from ..presets import available

    g = parser.add_argument_group("system and model presets (seconds and bytes instead of abstract units)")
    g.add_argument(
        "--system",
        default=None,
        metavar="NAME|FILE",
        help="system preset (" + ", ".join(available("systems")) + ") or a .yaml file",
    )
    g.add_argument(
        "--model",
        default=None,
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
    g.add_argument("--recompute", action="store_true", help="full activation recomputation (tB = 3 tF)")
    g.add_argument(
        "--flash-attention", action="store_true", help="drop the 5as/h attention term from activation memory"
    )
    g.add_argument(
        "--ranks-per-node",
        type=int,
        default=None,
        help="pipeline ranks per node (default: every GPU of a node; 1 = pipeline across nodes)",
    )


@dataclass(frozen=True)
class PresetContext:
    """What the arguments resolved to: the cost and communication models, and the system and
    model presets when given (``None`` in abstract mode)."""

    costs: CostModel
    comm: CommModel
    system: object | None = None
    model: object | None = None
    stage_costs: object | None = None

    @property
    def preset_mode(self) -> bool:
        """True when durations are seconds from presets."""
        return self.system is not None


def _layers_arg(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ParameterError("layers-per-stage", text, "expected comma-separated integers, e.g. 3,3,2") from None


def preset_context_from_args(args: argparse.Namespace, schedule: Schedule) -> PresetContext:
    """Resolve the arguments (see the module doc for the two modes) for ``schedule``.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=4, m=4)
        >>> ctx = preset_context_from_args(argparse.Namespace(system="dgx-h100", model="gpt3-1.3b"), s)
        >>> ctx.costs.time_unit, ctx.system.name, round(ctx.comm.transfer_time(0, 1, 1e9), 6)
        ('s', 'dgx-h100', 0.002227)
    """
    from ..llm import Training, load_llm, stage_costs
    from ..system import load_system
    from .common import check_nonnegative, costs_from_args, given_or

    system_name, model_name = getattr(args, "system", None), getattr(args, "model", None)
    costs_text, delay = getattr(args, "costs", None), getattr(args, "comm_delay", None)
    check_nonnegative("comm-delay", delay)
    if system_name is None and model_name is None:
        return PresetContext(costs_from_args(args, schedule), FixedDelay(delay or 0.0))
    if system_name is not None and model_name is None and costs_text and delay is None:
        # measured-style costs: --costs in seconds per device share, links and runtime overhead
        # from the system (a calibrated preset, ppverify calibrate)
        from ..overhead import system_overhead

        system = load_system(system_name, getattr(args, "ranks_per_node", None))
        c = costs_from_args(args, schedule)
        c = CostModel(
            c.duration,
            c.activation,
            c.freed_by_I,
            c.boundary_bytes,
            c.weight_bytes,
            c.overlap,
            "s",
            c.memory_unit,
            f"{c.label} s on {system.name}",
            c.extra,
        )
        return PresetContext(system_overhead(c, schedule.placement, system), system, system)
    if system_name is None or model_name is None:
        # a misspelt preset is the likelier mistake: name the available ones first
        if system_name is not None:
            load_system(system_name)
        else:
            load_llm(model_name)
        missing = "--model" if model_name is None else "--system"
        raise ParameterError(
            missing.lstrip("-"),
            None,
            "--system and --model go together (durations in seconds need both the model's "
            "FLOPs and the device's peak); for abstract units use --costs and --comm-delay",
        )
    if costs_text:
        raise ParameterError("costs", costs_text, "abstract --costs cannot be combined with --system/--model")
    if delay is not None:
        raise ParameterError(
            "comm-delay", delay, "--comm-delay is abstract; with --system the links set transfer times"
        )
    system = load_system(system_name, getattr(args, "ranks_per_node", None))
    model = load_llm(model_name)
    training = Training(
        microbatch_size=given_or(getattr(args, "microbatch_size", None), 1),  # 0 is refused, not replaced
        seq_len=getattr(args, "seq_len", None),
        mfu=given_or(getattr(args, "mfu", None), DEFAULT_MFU),
        tp=given_or(getattr(args, "tp", None), 1),
        recompute=bool(getattr(args, "recompute", False)),
        flash_attention=bool(getattr(args, "flash_attention", False)),
        layers_per_stage=_layers_arg(getattr(args, "layers_per_stage", None)),
    )
    sc = stage_costs(model, system.peak_flops, schedule.num_stages, training)
    costs = sc.cost_model()
    costs = CostModel(
        costs.duration,
        costs.activation,
        costs.freed_by_I,
        costs.boundary_bytes,
        costs.weight_bytes,
        costs.overlap,
        costs.time_unit,
        costs.memory_unit,
        f"{costs.label} on {system.name}",
        costs.extra,
    )
    from ..overhead import system_overhead

    costs = system_overhead(costs, schedule.placement, system)  # the runtime's per-action time, if stated
    return PresetContext(costs, system, system, model, sc)


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
