#!/usr/bin/env python
"""Compute the findings map and write its phase diagrams and its Markdown section.

Runs (or resumes) the default map of ``ppverify compare --findings --map`` on a local process pool,
writes one PNG per finding to ``docs/images/findings-map-<finding>.png`` and replaces the section
between the ``findings-map:begin`` / ``findings-map:end`` markers of ``docs/findings-map.md``. It
prints the wall time, the CPU time of this process and its workers, and the load average, so the
run time can be judged on a shared machine.

    python scripts/findings_map.py                 # default grid, 2 workers
    python scripts/findings_map.py --quick         # the 48-configuration grid (seconds)
    python scripts/findings_map.py --store /tmp/m.jsonl --workers 4
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- findings-map:begin -->", "<!-- findings-map:end -->"


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the pool's workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    from ppverify.findings_map import DEFAULT_GRID, QUICK_GRID, format_map, map_markdown, run_map
    from ppverify.findings_map.plot import plot_map

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the small grid")
    ap.add_argument(
        "--store", default=None, help="result store (default: a fresh one under /tmp, so the time is a full run)"
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--docs", default=str(ROOT / "docs" / "findings-map.md"))
    ap.add_argument("--images", default=str(ROOT / "docs" / "images"))
    args = ap.parse_args(argv)
    store = args.store or f"/tmp/ppverify-findings-map-{os.getpid()}/map.results.jsonl"
    if not args.store:  # a store's folder must exist (a typo'd one is refused): make the fresh one
        Path(store).parent.mkdir(parents=True, exist_ok=True)
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), cpu_seconds()
    res = run_map(QUICK_GRID if args.quick else DEFAULT_GRID, store, workers=args.workers, progress=True)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    load1 = os.getloadavg()
    print(format_map(res, local=False))
    print(
        f"\nmap: {res.grid.num_configs} configurations, {len(res.results)} rows, {args.workers} workers: "
        f"wall {wall:.1f} s, CPU {cpu:.1f} s (this process and its workers), load average "
        f"{load0[0]:.1f} before, {load1[0]:.1f} after, on {os.cpu_count()} CPUs"
    )
    paths = plot_map(res, args.images)
    docs = Path(args.docs)
    rel = {p.stem.removeprefix("findings-map-"): os.path.relpath(p, docs.parent) for p in paths}
    cmd = "ppverify compare --findings --map" + (" --quick" if args.quick else "")
    section = (
        f"{BEGIN}\n{map_markdown(res, rel, None, cmd)}\n"
        f"Measured: {wall:.0f} s wall, {cpu:.0f} s CPU with {args.workers} workers "
        f"(load average {max(load0[0], load1[0]):.1f} on {os.cpu_count()} CPUs).\n{END}"
    )
    text = docs.read_text(encoding="utf-8") if docs.exists() else f"# Findings map\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        print(f"{docs} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    docs.write_text(head + section + rest.split(END, 1)[1], encoding="utf-8")
    print(f"wrote {len(paths)} images to {args.images} and the map section of {docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
