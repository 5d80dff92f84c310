"""The options of ``ppverify design`` that are its own (the solver's extra work, the executor, the
outputs), as data the command adds to its parser, and the checks every option passes before any
search: a bad value costs nothing, and is refused in one line naming the option and its rule;
and ``ppverify --max-ops`` as the design reads it (a placement over it refused, a family over it
named as left out).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..core.errors import ParameterError
from .spec import Limits

#: the solver group's own options (``--work-limit`` and ``--time-limit`` are optimize's)
SOLVER_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--gap-limit", dict(type=float, default=0.01, help="stop a point within this relative gap (default 0.01)")),
    (
        "--bound-work",
        dict(
            type=float,
            default=None,
            metavar="S",
            help="then, per frontier point above the gap limit, this much more deterministic work on its "
            "critical device's bound (default: the work limit; 0: none, and no --pair-work either)",
        ),
    ),
    (
        "--pair-work",
        dict(
            type=float,
            default=None,
            metavar="S",
            help="and, after --bound-work, S deterministic seconds on the bound of that device together with "
            f"its busier neighbour (default {Limits.pair_work:g}; 0: none)",
        ),
    ),
    (
        "--search-work",
        dict(
            type=float,
            default=Limits.search_work,
            metavar="S",
            help="then, per frontier point above the gap limit, its search again from the start with S "
            "deterministic seconds, all on schedules, the better schedule and bound kept (default %(default)g; "
            "0: none)",
        ),
    ),
    (
        "--all-points",
        dict(
            action="store_true",
            help="search every point, even one whose bound is no faster than a step already found within its "
            "budget by an earlier placement or a family (default: skip it; the fastest step at each budget is "
            "the same)",
        ),
    ),
    ("--seed", dict(type=int, default=0, help="CP-SAT random seed (default 0)")),
    ("--executor", dict(choices=("local", "ray"), default="local", help="process pool (default) or Ray")),
    ("--workers", dict(type=int, default=1, help="points solved at once (default 1)")),
)

#: the output group
OUTPUT_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--json", dict(action="store_true", help="print one JSON object instead of text")),
    ("--save-dir", dict(metavar="DIR", default=None, help="write every frontier schedule (JSON and CSV)")),
    ("--plot", dict(metavar="FRONTIER.png", default=None, help="draw the frontier and the families")),
    ("--report", dict(metavar="PAGE.html", default=None, help="an HTML page: frontier, hover, timelines")),
    ("--no-progress", dict(action="store_true", help="no progress lines on stderr")),
    ("--measure", dict(action="store_true", help="run the frontier and the families in PyTorch's runtime")),
    ("--measure-scale", dict(type=float, default=None, help="seconds slept per abstract unit (default 0.01)")),
)


def add_options(group: Any, options: tuple[tuple[str, dict[str, Any]], ...]) -> None:
    """Add ``options`` (:data:`SOLVER_OPTIONS`, :data:`OUTPUT_OPTIONS`) to a parser or group.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_options(parser, SOLVER_OPTIONS)
        >>> parser.parse_args(["--workers", "2"]).workers
        2
    """
    for flag, kwargs in options:
        group.add_argument(flag, **kwargs)


def check_options(args: argparse.Namespace) -> float:
    """Refuse, before any search, what would be read by nobody or fail only after it: the extra
    works, the executor with ``--workers``, the gap limit, the output paths (the save folder is
    created now); returns the seconds per abstract unit of ``--measure``.

    Example:
        >>> ns = argparse.Namespace(bound_work=0.0, pair_work=5.0, search_work=30.0)
        >>> check_options(ns)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter pair-work=5.0: runs within the bound work, which --bound-work 0 switches off: leave one out
    """
    from ..core.files import prepare_output_dir
    from .measured import measure_scale

    check_works(args)
    if args.pair_work is not None and args.pair_work > 0 and args.bound_work == 0:  # read by nobody
        raise ParameterError(
            "pair-work", args.pair_work, "runs within the bound work, which --bound-work 0 switches off: leave one out"
        )
    if args.executor == "ray" and args.workers > 1:  # as sweep: Ray would run as many as its cluster has
        raise ParameterError(
            "workers", args.workers, "sizes the local pool; Ray places the points on its cluster: leave it out"
        )
    if args.gap_limit is not None and not 0 <= args.gap_limit < 1:
        raise ParameterError("gap-limit", args.gap_limit, "must be a fraction in [0, 1), e.g. 0.01 for 1 %")
    if args.plot:
        from ..report.plots import check_plot_path

        check_plot_path(args.plot, "--plot")  # before the search: a bad name or folder costs nothing
    if args.report:
        from ..report.build import check_output

        check_output(args.report, "--report")  # the report's own rule: .html or .htm, writable
    scale = measure_scale(args.measure, args.measure_scale, bool(args.system or args.model))
    if args.save_dir:
        prepare_output_dir(args.save_dir, "--save-dir")  # created now: a bad folder costs no search
    return scale


def check_works(args: argparse.Namespace) -> None:
    """Refuse a ``--bound-work``, ``--pair-work`` or ``--search-work`` outside :class:`~.spec.Limits`'
    own rule (>= 0, at most 1e9 deterministic seconds, as ``--work-limit``), checked by it, so the
    first message states the limit that holds (a separate ``<= 1e+15`` check said so before).

    Example:
        >>> ns = argparse.Namespace(bound_work=1e12, pair_work=None, search_work=30.0)
        >>> check_works(ns)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter bound_work=1000000000000.0: must be >= 0 and at most 1e9 deterministic seconds (0: none)
    """
    pair = Limits.pair_work if args.pair_work is None else args.pair_work
    Limits(bound_work=args.bound_work, search_work=args.search_work, pair_work=pair)


def request_of(args: argparse.Namespace, m: int, work: float, wall: float | None) -> Any:
    """The :class:`~.run.DesignRequest` of the command's options (``wall``: the ceiling, None: none).

    Example:
        >>> ns = argparse.ArgumentParser()
        >>> add_options(ns, SOLVER_OPTIONS)
        >>> args = ns.parse_args([])
        >>> args.p, args.placements, args.budgets, args.backward = 2, "linear", "auto", "auto"
        >>> request_of(args, 4, 1.0, None).limits.search_work
        30.0
    """
    from ..systems.preset_models import settings_from
    from .run import DesignRequest

    pair = Limits.pair_work if args.pair_work is None else args.pair_work
    if args.bound_work == 0:  # the pair work runs within the bound work: none runs, none is recorded
        pair = 0.0
    limits = Limits(work, args.gap_limit, args.seed, wall, args.bound_work, args.search_work, pair)
    split = None if args.backward == "auto" else args.backward == "split"
    settings = settings_from(vars(args))
    request = DesignRequest(args.p, m, args.placements, args.budgets, settings, limits, split, skip=not args.all_points)
    check_design_ops(request)
    return request


def check_design_ops(request: Any) -> None:
    """Refuse, before any work, a placement whose schedules imply more compute ops than
    ``ppverify --max-ops`` allows: ``kinds * S * m`` (F and B, or F, I and W when the backward is
    split, of each of its ``S`` stages and ``m`` microbatches), as ``optimize`` and a family build do.

    Example:
        >>> from ppverify.core.limits import op_limit
        >>> from ppverify.design.run import DesignRequest
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> check_design_ops(DesignRequest(4, 100, "linear", "none", PresetSettings(), Limits(1.0)))
        >>> with op_limit(8):
        ...     check_design_ops(DesignRequest(4, 100, "linear", "none", PresetSettings(), Limits(1.0)))
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: design -p 4 -m 100 --placements linear (F, B): implies 800 ops, over the limit of 8 (raise it with ppverify --max-ops N)
    """
    from ..core.limits import check_ops
    from .spec import parse_placement

    kinds = ("F", "I", "W") if request.split_backward else ("F", "B")
    for text in str(request.placements).split(","):
        if text.strip():  # a bad or empty item is named by the placements' own check, after this
            label, placement = parse_placement(text, request.p)
            what = f"design -p {request.p} -m {request.m} --placements {label} ({', '.join(kinds)})"
            check_ops(len(kinds) * placement.num_stages * request.m, what)


def families_over_limit(d: Any) -> list[tuple[str, int]]:
    """The families (with the ``v``/``waves`` a searched placement gives them) that ``d``'s run
    timed none of because their ops are over the op or memory limit in force (``--max-ops``,
    ``--max-memory-gib``: the build's check), each with its ops: a family left out is said so.

    Example:
        >>> from ppverify.core.limits import op_limit
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> with op_limit(16):
        ...     d = design(DesignRequest(2, 4, "linear", "none", PresetSettings(), Limits(1.0)), progress=False)
        ...     families_over_limit(d)[:2]
        [('1f1b', 24), ('1f1b-split', 24)]
    """
    from ..core.errors import PPVerifyError
    from ..core.limits import family_ops, max_memory_gib, max_ops, ops_memory
    from .families import family_name, family_tries

    p, m = d.request.p, d.request.m
    out: list[tuple[str, int]] = []
    for fam, extra in family_tries(d.setups, p):  # as the families are tried: the placements' chunks too
        try:
            n = family_ops(fam.name, p, m, fam.arguments(dict(extra)))
        except (PPVerifyError, ValueError, TypeError):
            continue  # not a family of this size at all: not the limit's doing
        if n > max_ops() or ops_memory(n) > max_memory_gib() * 2**30:
            out.append((family_name(fam.name, extra), n))
    return out
