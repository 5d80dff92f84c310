"""``ppverify plot`` draws one of two things, a FAMILY|FILE's Gantt chart or ``--crossover``'s
makespan curves; each ignores the other's options, so an option of the other drawing is refused
rather than dropped without a word."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.errors import ParameterError

if TYPE_CHECKING:
    from ..compare import Config

#: the family options of a Gantt chart's FAMILY (``dest``, as spelled on the command line)
_FAMILY_OPTIONS = {
    "fam_units": "--units",
    "fam_offset": "--offset",
    "fam_down": "--down",
    "fam_waves": "--waves",
    "fam_v": "--v",
    "fam_order": "--order",
}


def check_plot_mode(args: argparse.Namespace) -> None:
    """Refuse an option the chosen drawing would ignore: a FAMILY|FILE, its family options,
    ``--placement`` or ``--comm-delay`` with ``--crossover`` (which draws ``--schedules`` over a swept delay), and
    ``--schedules`` or ``--range`` on a Gantt chart.

    Example:
        >>> from ppverify.cli.commands.plot import add_arguments
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> check_plot_mode(parser.parse_args(["1f1b", "--crossover", "latency", "-o", "c.png"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedule=1f1b: --crossover draws the schedules of --schedules (default: the comparison's), not a FAMILY|FILE: give --schedules 1f1b, or leave out --crossover for its Gantt chart
    """
    if args.crossover:
        if args.schedule:
            raise ParameterError(
                "schedule",
                args.schedule,
                "--crossover draws the schedules of --schedules (default: the comparison's), not a FAMILY|FILE: "
                f"give --schedules {args.schedule}, or leave out --crossover for its Gantt chart",
            )
        for dest, flag in _FAMILY_OPTIONS.items():
            if getattr(args, dest, None) is not None:
                raise ParameterError(
                    flag.lstrip("-"),
                    getattr(args, dest),
                    f"{flag} shapes a FAMILY's Gantt chart; --crossover draws the labels of --schedules "
                    "(e.g. interleaved-v2, hanayo-w2)",
                )
        if getattr(args, "placement", None) is not None:
            raise ParameterError(
                "placement",
                args.placement,
                "reads the text table of a Gantt chart's FILE; --crossover draws --schedules: leave it out",
            )
        if args.comm_delay is not None:
            raise ParameterError(
                "comm-delay",
                args.comm_delay,
                "--crossover sweeps the per-hop delay itself (--range): leave --comm-delay out",
            )
    else:
        if not args.schedule:
            raise ParameterError(
                "schedule", None, "give a FAMILY|FILE for a Gantt chart, or --crossover latency|bandwidth"
            )
        for dest, flag in (("schedules", "--schedules"), ("xrange", "--range")):
            if getattr(args, dest, None) is not None:
                raise ParameterError(
                    dest if dest != "xrange" else "range",
                    getattr(args, dest),
                    f"{flag} applies with --crossover latency|bandwidth; a Gantt chart draws one FAMILY|FILE",
                )


def crossover_config(args: argparse.Namespace) -> Config:
    """The configuration a ``--crossover`` plot sweeps: ``--system``/``--model`` with every preset
    option given (``--recompute``, ``--flash-attention`` and ``--layers-per-stage`` included), or
    abstract ``--costs``. Refused rather than dropped: ``--costs`` beside the presets (they give the
    durations), and a model or system option without them (abstract costs have nothing it shapes).

    Example:
        >>> from ppverify.cli.commands.plot import add_arguments
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> argv = ["--crossover", "latency", "-p", "2", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
        >>> crossover_config(parser.parse_args([*argv, "--recompute", "-o", "c.png"])).label
        'p=2 m=2 dgx-h100 gpt3-1.3b mfu=0.4 microbatch-size=1 tp=1 recompute=True'
        >>> crossover_config(parser.parse_args([*argv, "--costs", "F=1,B=3", "-o", "c.png"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter costs=F=1,B=3: abstract --costs cannot be combined with --system/--model (the presets give the durations): leave --costs out, or the presets
    """
    from ..compare import Config
    from ..compare.request import PRESET_OPTIONS
    from ..core.costs import parse_costs
    from ..systems.preset_models import check_model_options, settings_from

    m = args.m if args.m is not None else args.p
    if not (args.system or args.model):
        check_model_options(settings_from(vars(args)), system_too=True)  # --mfu etc. would change nothing
        costs = parse_costs(args.costs or "F=1,B=2")
        return Config(args.p, m, costs=tuple((k, float(v)) for k, v in costs.items()))
    if not (args.system and args.model):
        raise ParameterError("system", args.system, "--system and --model go together")
    if args.costs is not None:
        raise ParameterError(
            "costs",
            args.costs,
            "abstract --costs cannot be combined with --system/--model (the presets give the durations): "
            "leave --costs out, or the presets",
        )
    given = [(k, getattr(args, k)) for k in PRESET_OPTIONS if getattr(args, k, None) is not None]
    given += [(k, True) for k in ("recompute", "flash_attention") if getattr(args, k, False)]
    if getattr(args, "layers_per_stage", None) is not None:
        given.append(("layers_per_stage", args.layers_per_stage))
    return Config(args.p, m, args.system, args.model, options=tuple(given))
