"""``ppverify sweep CONFIG.yaml``: expand a grid and run it, resumably, locally or on Ray.

Exit status: 0, or 1 when a row has status error (a schedule file that deadlocks, say: the summary
is printed first, and one line on stderr counts those rows); 2 for a bad option or config.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ...core.errors import ParameterError
from .. import Command
from ..common import print_json
from ..signals import rows_kept


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Config file, store, output, executor and worker count.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["grid.yaml", "--dry-run"])
        >>> ns.config, ns.store, ns.executor, ns.batch, ns.dry_run
        ('grid.yaml', None, 'local', 4, True)
    """
    parser.add_argument("config", metavar="CONFIG.yaml", help="sweep config (see examples/sweep.yaml)")
    parser.add_argument(
        "--store",
        help="JSON-lines store of finished rows, keyed by point hash; rerunning resumes "
        "(default: CONFIG.results.jsonl next to the config)",
    )
    parser.add_argument("--out", help="also write the full result table (ranks included) to .csv or .parquet")
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local process pool (default) or a Ray cluster (RAY_ADDRESS, else a local Ray)",
    )
    parser.add_argument("--workers", type=int, default=None, help="local worker processes (default: CPU count)")
    parser.add_argument(
        "--batch",
        type=int,
        default=4,
        help="configurations per shipped batch (default 4; fewer when that would leave a worker idle)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the expanded grid size and exit; writes nothing (an --out given is checked, not written, "
        "and stderr says so)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def run(args: argparse.Namespace) -> int:
    """Load, expand, run (resuming), summarise.

    Example:
        ``--dry-run`` expands the grid and counts what is left to run; it writes nothing (an
        ``--out`` given is checked, not written, and a line on stderr says so):

        >>> import os, tempfile
        >>> config = os.path.join(tempfile.mkdtemp(), "tiny.yaml")
        >>> with open(config, "w") as f:
        ...     print("name: tiny", file=f)
        ...     print("schedules: [gpipe, 1f1b]", file=f)
        ...     print("p: [2]", file=f)
        ...     print("m: [2, 4]", file=f)
        ...     print("systems: [ideal]", file=f)
        ...     print("models: [gpt3-1.3b]", file=f)
        ...     print("levels: [slot]", file=f)
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args([config, "--dry-run"]))  # doctest: +ELLIPSIS
        tiny: 4 rows = 2 schedules x 2 configurations x 1 levels; 0 already in ...tiny.results.jsonl, 4 to run
        0
    """
    from ...compare.optimum import wall_factor
    from ...compare.run import error_exit
    from ...sweep.config import load_sweep
    from ...sweep.executor import grid_rows, rows_to_run, run_sweep

    wall_factor()  # PPVERIFY_WALL_FACTOR checked once, now: a bad one would be stored as error rows
    spec = load_sweep(args.config)
    store = Path(args.store) if args.store else Path(args.config).with_suffix(".results.jsonl")
    if args.out and Path(args.out).suffix.lower() not in (".csv", ".parquet"):
        raise ParameterError("out", args.out, "expected a .csv or .parquet file")
    from ...core.files import check_output_folder, check_output_path

    if args.dry_run:  # reads the store only: a read-only folder is fine, a missing one or a folder-as-store is not
        check_output_folder(store, "--store", probe=False)
    else:
        check_output_path(store, "--store")  # as --out: a typo'd folder is refused, never created
    if args.out:
        check_output_path(args.out, "--out")  # a missing folder, a trailing '/', a FIFO: refused before the run
        if Path(args.out).resolve() == store.resolve():  # the table would replace the store's rows
            raise ParameterError("out", args.out, "names the --store file; give the table another name")
    if args.batch < 1:
        raise ParameterError("batch", args.batch, "must be >= 1")
    if args.workers is not None and (args.workers < 1 or args.executor == "ray"):  # --dry-run too
        ray = "sizes the local pool; Ray places batches on its cluster: leave it out"
        raise ParameterError("workers", args.workers, "must be >= 1" if args.workers < 1 else ray)
    todo = rows_to_run(spec, store)  # read only: a sweep may be appending to it; another sweep's store refused
    summary = {
        "sweep": spec.name,
        "points": spec.num_points,
        "schedules": len(spec.entries),
        "configurations": len(spec.configs),
        "levels": list(spec.levels),
        "already_done": spec.num_points - todo,
        "to_run": todo,
        "store": str(store),
    }
    if args.dry_run:
        if args.out:  # kept, not refused: the command to run is dry-run as written, then run without --dry-run
            print(
                f"ppverify sweep: --dry-run writes nothing: --out {args.out} was checked, not written", file=sys.stderr
            )
        print_json(summary) if args.json else print(
            f"{spec.name}: {spec.num_points} rows = {len(spec.entries)} schedules x {len(spec.configs)} configurations "
            f"x {len(spec.levels)} levels; {summary['already_done']} already in {store}, {todo} to run"
        )
        return 0
    t0 = time.perf_counter()
    try:
        df = run_sweep(spec, store, args.executor, args.workers, args.batch, progress=not args.no_progress)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (signals.Terminated / Hangup)
        return rows_kept(exc, "ppverify sweep", grid_rows(spec, store), store)  # this grid's rows only
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    summary["rows"] = len(df)
    if args.out:
        from ...core.files import atomic_path

        with atomic_path(args.out, "--out") as tmp:  # never a truncated table, even when killed
            (df.to_parquet if args.out.lower().endswith(".parquet") else df.to_csv)(tmp, index=False)
        summary["out"] = args.out
    by_status = {str(k): int(v) for k, v in df["status"].value_counts().items()}
    if args.json:
        print_json({**summary, "status": dict(sorted(by_status.items()))})  # the counts the text line gives
    else:
        print(
            f"{spec.name}: {len(df)} rows ({summary['already_done']} resumed from {store}, {todo} computed "
            f"with {args.executor} in {summary['seconds']} s); status: "
            + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items()))
            + (f"; table written to {args.out}" if args.out else ""),
        )
    return error_exit(df, "ppverify sweep")  # 1 when a point failed (status error), as compare


COMMAND = Command(
    "sweep",
    "run a grid of comparisons (resumable; local process pool or Ray)",
    add_arguments,
    run,
    description=__doc__.replace("``", ""),
)
