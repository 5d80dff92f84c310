"""Executors of a sweep: a local process pool (default) or a Ray cluster (``--executor ray``).

Both hand tasks out in small batches and write every returned row to the store as soon as its
batch completes, so killing the sweep loses at most the batches in flight (they rerun on resume).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable

from .errors import ParameterError, PPVerifyError
from .sweep import Store, SweepSpec, Task, iter_chunks, pending_tasks, read_store, results_frame, run_task

EXECUTORS = ("local", "ray")


def run_batch(tasks: list[Task]) -> list[dict]:
    """Evaluate a batch of tasks (the unit shipped to a worker)."""
    return [row for t in tasks for row in run_task(t)]


def run_sweep(
    spec: SweepSpec,
    store_path: str | Path,
    executor: str = "local",
    workers: int | None = None,
    batch: int = 4,
    progress: bool = False,
):
    """Run the points of ``spec`` not yet in the store, appending rows as they complete; return
    the full result frame (stored + new rows of this spec, ranks recomputed).

    Example:
        >>> import tempfile, os
        >>> from ppverify.sweep import parse_sweep
        >>> spec = parse_sweep({"schedules": ["gpipe"], "p": 2, "m": [1, 2], "costs": {"F": 1, "B": 2}, "levels": ["slot"]})
        >>> store = os.path.join(tempfile.mkdtemp(), "s.jsonl")
        >>> run_sweep(spec, store, workers=1)["makespan"].tolist()
        [6.0, 9.0]
        >>> len(run_sweep(spec, store, workers=1)), sum(1 for _ in open(store))  # resumed: nothing rerun
        (2, 2)
    """
    if executor not in EXECUTORS:
        raise ParameterError("executor", executor, f"expected one of {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise ParameterError("workers", workers, "must be >= 1")
    done = {r.get("point") for r in read_store(store_path)}
    tasks = pending_tasks(spec, done)
    batches = list(iter_chunks(tasks, max(1, batch)))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=spec.num_points, initial=spec.num_points - sum(t.num_rows for t in tasks),
                   desc=f"sweep {spec.name}", unit="row", file=sys.stderr, dynamic_ncols=True)
    with Store(store_path) as store:
        def sink(rows: list[dict]) -> None:
            store.write(rows)
            if bar is not None:
                bar.update(len(rows))

        if batches:
            if executor == "ray":
                _run_ray(batches, sink)
            elif (workers or os.cpu_count() or 1) == 1:
                for b in batches:
                    sink(run_batch(b))
            else:
                _run_pool(batches, sink, workers or os.cpu_count() or 1)
    if bar is not None:
        bar.close()
    return results_frame(read_store(store_path), spec)


def _run_pool(batches: list[list[Task]], sink: Callable[[list[dict]], None], workers: int) -> None:
    with ProcessPoolExecutor(max_workers=workers) as pool:
        # keep a bounded number of batches in flight so rows stream to the store steadily
        queue = list(reversed(batches))
        live = set()
        while queue or live:
            while queue and len(live) < 2 * workers:
                live.add(pool.submit(run_batch, queue.pop()))
            finished, live = wait(live, return_when=FIRST_COMPLETED)
            for fut in finished:
                sink(fut.result())


def _run_ray(batches: list[list[Task]], sink: Callable[[list[dict]], None]) -> None:
    try:
        import ray
    except ImportError:
        raise PPVerifyError("--executor ray needs Ray: pip install 'ppverify[ray]'") from None
    if not ray.is_initialized():
        # RAY_ADDRESS (or `ray start` on this node) selects a cluster; otherwise a local instance
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(run_batch)
    refs = [remote.remote(b) for b in batches]
    while refs:
        ready, refs = ray.wait(refs, num_returns=1)
        for ref in ready:
            sink(ray.get(ref))
