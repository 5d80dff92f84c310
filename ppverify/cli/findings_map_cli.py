"""``ppverify compare --findings --map``: the options and the run of the findings map (kept out
of the ``compare`` command module so that stays thin; the work is in
:mod:`ppverify.findings_map`)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..core.errors import ParameterError
from ..core.files import atomic_path, atomic_write, check_output_path, output_target, prepare_output_dir
from ..engines.registry import names as engine_names
from .common import print_json


def add_map_arguments(parser: argparse.ArgumentParser) -> None:
    """``--map``, ``--quick``, ``--store``, ``--plots``, ``--markdown``, ``--executor``, ``--workers``,
    ``--batch`` (``--out``, ``--json``, ``--levels`` and ``--no-progress`` are compare's own).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_map_arguments(parser)
        >>> ns = parser.parse_args(["--map", "--quick", "--workers", "2"])
        >>> ns.map, ns.quick, ns.workers, ns.executor, ns.batch, ns.store
        (True, True, 2, None, None, None)

    ``--executor`` and ``--batch`` default to ``None`` (``local`` and 8 when the map runs), so
    that :func:`check_map_options` sees every one of these options a user gave without ``--map``.
    """
    g = parser.add_argument_group("findings map (with --findings --map)")
    g.add_argument(
        "--map",
        action="store_true",
        help="map where each finding holds over bandwidth, latency, microbatches, model size and p "
        "(a resumable sweep; about 2 minutes on 2 cores)",
    )
    g.add_argument("--quick", action="store_true", help="the small map (48 configurations, seconds)")
    g.add_argument(
        "--store",
        help="JSON-lines store of the map's rows; rerunning resumes (default findings-map[-quick].results.jsonl)",
    )
    g.add_argument("--plots", metavar="DIR", help="write one phase diagram per finding (findings-map-KEY.png) into DIR")
    g.add_argument("--markdown", metavar="FILE.md", help="write the map as a Markdown section")
    g.add_argument(
        "--executor",
        choices=("local", "ray"),
        default=None,
        help="local process pool (default) or a Ray cluster (the store's folder must be shared)",
    )
    g.add_argument("--workers", type=int, default=None, help="local worker processes (default: CPU count)")
    g.add_argument("--batch", type=int, default=None, help="configurations per shipped batch (default 8)")


#: the options only the findings map reads (``dest`` names, as the user spells them)
MAP_ONLY = {
    "quick": "--quick",
    "store": "--store",
    "plots": "--plots",
    "markdown": "--markdown",
    "executor": "--executor",
    "workers": "--workers",
    "batch": "--batch",
}


#: compare's options the map would ignore (``dest`` names): its grid fixes the systems, models,
#: p, m and the presets' options, and it runs one simulated level (no measured runs or traces)
MAP_REFUSED = (
    "systems",
    "models",
    "ps",
    "ms",
    "costs",
    "comm_delay",
    "schedules",
    "mfu",
    "microbatch_size",
    "seq_len",
    "tp",
    "ranks_per_node",
    "measured",
    "measured_trace",
)


def check_map_options(args: argparse.Namespace) -> None:
    """Refuse the map's own options on a run without ``--map`` (they would be ignored), and a
    report page with ``--map`` (the map writes plots and Markdown, not a page).

    Example:
        >>> from ppverify.cli.commands.compare import add_arguments
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> check_map_options(parser.parse_args(["--findings", "--map", "--plots", "maps"]))
        >>> check_map_options(parser.parse_args(["--plots", "maps"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter plots=maps: --plots belongs to the findings map, which this run does not make: give --findings --map, or leave it out
    """
    if getattr(args, "map", False):
        if getattr(args, "report", None):
            raise ParameterError(
                "report",
                args.report,
                "the findings map writes plots and Markdown, not a report page: run the map with "
                "--plots DIR, then `ppverify report --findings-map DIR`",
            )
        return
    for dest, flag in MAP_ONLY.items():
        value = getattr(args, dest, None)
        if value is not None and value is not False:  # `is`: --workers 0 or --batch 0 is given (0 == False)
            raise ParameterError(
                dest,
                value,
                f"{flag} belongs to the findings map, which this run does not make: give --findings --map, or leave it out",
            )


def _link(image: str, markdown: str) -> str:
    """The path of ``image`` as a link from the Markdown file ``markdown``: relative to its folder
    (``../plots/x.png`` when the plots sit beside that folder), absolute only where no relative path
    exists (another drive).

    Example:
        >>> _link("plots/a.png", "docs/map.md"), _link("docs/img/a.png", "docs/map.md")
        ('../plots/a.png', 'img/a.png')
    """
    try:
        return Path(os.path.relpath(Path(image).resolve(), Path(markdown).resolve().parent)).as_posix()
    except ValueError:
        return str(Path(image).resolve())


def run_map_command(args: argparse.Namespace) -> int:
    """Run (or resume) the map, print it, write the requested files.

    Example:
        The options are checked before the map runs:

        >>> from ppverify.cli.commands.compare import add_arguments
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run_map_command(parser.parse_args(["--map", "--quick"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter map=True: --map maps the findings: give --findings --map
    """
    from ..findings_map import DEFAULT_GRID, QUICK_GRID, format_map, map_json, map_markdown, run_map

    t0 = time.perf_counter()
    if not args.findings:
        raise ParameterError("map", True, "--map maps the findings: give --findings --map")
    for opt in MAP_REFUSED:
        value = getattr(args, opt, None)
        if value is not None and value is not False:  # `is`: --mfu 0 or --tp 0 is given, and refused
            name = {"ps": "p", "ms": "m"}.get(opt, opt.replace("_", "-"))
            raise ParameterError(
                name,
                " ".join(value) if isinstance(value, list) else value,
                "the findings map sweeps its own grid (see --quick); leave this option out",
            )
    levels = [x.strip() for x in (args.levels or "async").split(",") if x.strip() and x.strip() != "formula"]
    engines = engine_names(levels_only=True)
    if len(levels) != 1 or levels[0] not in engines:
        raise ParameterError("levels", args.levels, f"the map takes one of {', '.join(engines)}")
    if args.workers is not None and args.workers < 1:
        raise ParameterError("workers", args.workers, "must be >= 1")
    if args.workers is not None and args.executor == "ray":  # as `sweep`: it would be ignored
        raise ParameterError(
            "workers", args.workers, "sizes the local pool; Ray places batches on its cluster: leave it out"
        )
    batch = 8 if args.batch is None else args.batch
    if batch < 1:
        raise ParameterError("batch", batch, "must be >= 1")
    if args.markdown and Path(args.markdown).suffix.lower() != ".md":
        raise ParameterError("markdown", args.markdown, "expected a .md file")
    store = args.store or ("findings-map-quick.results.jsonl" if args.quick else "findings-map.results.jsonl")
    output_target(store, "--store")  # a folder: refused before --plots makes its folder
    if args.plots:  # made first: the Markdown may go into the same folder
        prepare_output_dir(args.plots, "--plots")
    if args.markdown:
        check_output_path(args.markdown, "--markdown")  # before the map: a bad name costs no run
    grid = QUICK_GRID if args.quick else DEFAULT_GRID
    try:
        res = run_map(grid, store, levels[0], args.executor or "local", args.workers, batch, not args.no_progress)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: the line `sweep` prints, the same exit code
        from ..findings_map.grid import kept_rows
        from .signals import rows_kept

        return rows_kept(exc, "ppverify compare", kept_rows(grid, store, levels[0]), store)
    seconds = time.perf_counter() - t0
    images: dict[str, str] = {}
    if args.plots:
        from ..findings_map.plot import plot_map

        for path in plot_map(res, args.plots):
            images[path.stem.removeprefix("findings-map-")] = str(path)
    if args.out:
        out = Path(args.out)
        with atomic_path(args.out, "--out") as tmp:  # as given: Path() would drop a trailing '/'
            (res.results.to_parquet if out.suffix.lower() == ".parquet" else res.results.to_csv)(tmp, index=False)
    if args.markdown:
        rel = {k: _link(v, args.markdown) for k, v in images.items()}
        atomic_write(args.markdown, map_markdown(res, rel, seconds) + "\n", "--markdown")
    if args.json:
        print_json(dict(map_json(res), seconds=round(seconds, 1), store=str(store)))
    else:
        print(format_map(res))
        written = [x for x in (args.out, args.markdown) if x]
        written += [f"{len(images)} plots in {args.plots}"] if images else []
        print(
            f"\n({seconds:.1f} s; rows in {store}" + (f"; wrote {', '.join(written)}" if written else "") + ")",
            file=sys.stdout,
        )
    from ..compare.run import error_exit

    return error_exit(res.results, "ppverify compare")  # as compare and sweep: 1 when a point failed
