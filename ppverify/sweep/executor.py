"""Executors of a sweep: a local process pool (default) or a Ray cluster (``--executor ray``).

Both hand tasks out in small batches and write every returned row to the store as soon as its
batch completes, so killing the sweep loses at most the batches in flight (they rerun on resume).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ParameterError, PPVerifyError
from .grid import SweepSpec, Task, iter_chunks, pending_tasks, results_frame, run_task
from .store import Store, check_owner, read_store, store_lock

if TYPE_CHECKING:
    import pandas as pd

EXECUTORS = ("local", "ray")


def run_batch(tasks: list[Task]) -> list[dict]:
    """Evaluate a batch of tasks (the unit shipped to a worker).

    Example:
        >>> from ppverify.sweep import parse_sweep
        >>> spec = parse_sweep({"schedules": ["gpipe"], "p": 2, "m": [1, 2], "costs": {"F": 1, "B": 2}, "levels": ["slot"]})
        >>> [(r["m"], r["makespan"]) for r in run_batch(pending_tasks(spec, set()))]  # (m+p-1)(tF+tB)
        [(1, 6.0), (2, 9.0)]
    """
    return [row for t in tasks for row in run_task(t)]


def run_sweep(
    spec: SweepSpec,
    store_path: str | Path,
    executor: str = "local",
    workers: int | None = None,
    batch: int = 4,
    progress: bool = False,
    ranks: bool = True,
) -> pd.DataFrame:
    """Run the points of ``spec`` not yet in the store, appending rows (each tagged with the
    sweep's name) as they complete; return the full result frame (stored + new rows of this spec,
    in the grid's order, ranks recomputed unless ``ranks`` is False: ranking a large sweep costs
    more than running it when callers do not need them). The store is locked for the run
    (:func:`~ppverify.sweep.store.store_lock`) and must hold no other sweep's rows
    (:func:`~ppverify.sweep.store.check_owner`); rows of an earlier grid of this sweep
    (:func:`superseded`) are dropped, and one line on stderr counts them (:func:`dropped_line`).

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
    from ..core.files import output_target

    output_target(Path(store_path), "--store")  # a folder, a FIFO, a device: refused before the lock
    with store_lock(store_path):  # a second sweep on this store is refused, not run beside it
        return _run_locked(spec, store_path, executor, workers, batch, progress, ranks)


def _run_locked(
    spec: SweepSpec,
    store_path: str | Path,
    executor: str,
    workers: int | None,
    batch: int,
    progress: bool,
    ranks: bool,
) -> pd.DataFrame:
    stored = read_store(store_path)
    check_owner(stored, spec.name, store_path)
    stale = superseded(stored, spec)
    if stale:  # rows the grid left, or whose files (or budget) changed since: those computed again below
        drop_rows(store_path, stale)
        print(dropped_line(spec.name, len(stale), store_path), file=sys.stderr, flush=True)  # never silently
    done = {r["point"] for r in stored} - {r["point"] for r in stale}  # read_store: every row has its point
    tasks = pending_tasks(spec, done)
    if tasks and executor == "ray":  # before the store and the progress bar: a bad address made a store
        slots = max(1, int(connect_ray().cluster_resources().get("CPU", 1)))
    else:
        slots = pool_size(workers, len(tasks))
    batches = list(iter_chunks(tasks, batch_size(len(tasks), batch, slots)))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=spec.num_points,
            initial=spec.num_points - sum(t.num_rows for t in tasks),
            desc=f"sweep {spec.name}",
            unit="row",
            file=sys.stderr,
            dynamic_ncols=True,
        )
    try:
        with Store(store_path) as store:

            def sink(rows: list[dict]) -> None:
                store.write([{**r, "sweep": spec.name} for r in rows])
                if bar is not None:
                    bar.update(len(rows))

            if batches:
                if executor == "ray":
                    _run_ray(batches, sink)
                elif (n := pool_size(workers, len(batches))) == 1:
                    for b in batches:
                        sink(run_batch(b))
                else:
                    _run_pool(batches, sink, n)
    finally:  # also on Ctrl-C or SIGTERM: an open bar redrew itself at exit, after the command's last line
        if bar is not None:
            bar.close()
    return results_frame(read_store(store_path), spec, ranks)


def rows_to_run(spec: SweepSpec, store_path: str | Path) -> int:
    """Rows of ``spec`` a run would compute now: what ``--dry-run`` reports. It reads the store
    without repairing it (a sweep may be appending to it) and refuses what the run would refuse.

    Example:
        >>> import tempfile, os
        >>> from ppverify.sweep import parse_sweep
        >>> spec = parse_sweep({"schedules": ["gpipe"], "p": 2, "m": [1, 2], "costs": {"F": 1}, "levels": ["slot"]})
        >>> store = os.path.join(tempfile.mkdtemp(), "s.jsonl")
        >>> rows_to_run(spec, store), len(run_sweep(spec, store, workers=1)), rows_to_run(spec, store)
        (2, 2, 0)
    """
    stored = read_store(store_path, repair=False)
    check_owner(stored, spec.name, store_path)
    stale = {r["point"] for r in superseded(stored, spec)}  # the run computes them again
    return sum(t.num_rows for t in pending_tasks(spec, {r["point"] for r in stored} - stale))


def superseded(rows: list[dict], spec: SweepSpec) -> list[dict]:
    """Rows of a store that the grid of ``spec`` no longer holds or replaces: a configuration,
    schedule or level the grid has left (its costs, systems, p or m changed, say: ``report
    --from`` would show the old grid beside the new one), the same configuration, schedule and
    level under another hash (a preset or schedule file it read has been edited since, or the
    solver budget changed), or the same hash without a column every row now carries (written by
    an older ppverify, before its ``verified`` column, say, which the table would show blank). A
    resumed sweep drops them, so the store holds one grid and never serves a stale row.

    Example:
        >>> from ppverify.sweep import parse_sweep
        >>> spec = parse_sweep({"schedules": ["gpipe"], "p": 2, "m": 2, "costs": {"F": 1}, "levels": ["slot"]})
        >>> old = {"point": "0" * 16, "config": spec.configs[0].label, "schedule": "gpipe", "level": "slot"}
        >>> [r["level"] for r in superseded([old, {**old, "level": "async"}], spec)]  # a new hash; a level left
        ['slot', 'async']
    """
    from ..compare.table import COLUMNS, DERIVED

    stored = [c for c in COLUMNS if c not in DERIVED]  # what run_task writes in every row
    # by the point's hash, not by its configuration's label: a label names a preset file by the path
    # it was reached by, which another working folder (or a moved store) spells differently
    current = {h for task in pending_tasks(spec, set()) for _, _, hashes in task.items for h in hashes}
    return [r for r in rows if r["point"] not in current or any(c not in r for c in stored)]


def dropped_line(name: str, n: int, store_path: str | Path) -> str:
    """The line a sweep prints on stderr when it drops ``n`` :func:`superseded` rows from its store
    (a grid grown, shrunk or changed under the same name: the findings map's ``--quick`` run on a
    full map's store drops the full map's rows).

    Example:
        >>> dropped_line("tiny", 24, "t.jsonl")
        'ppverify: note: sweep tiny: 24 rows of an earlier grid dropped from t.jsonl (points this grid no longer holds, or whose files, solver budget or ppverify changed since: those it holds are computed again)'
    """
    rows = "row" if n == 1 else "rows"
    return (
        f"ppverify: note: sweep {name}: {n} {rows} of an earlier grid dropped from {store_path} (points this grid "
        "no longer holds, or whose files, solver budget or ppverify changed since: those it holds are computed again)"
    )


def grid_rows(spec: SweepSpec, store_path: str | Path) -> int:
    """Rows of the store that belong to the current grid of ``spec`` (what an interrupted sweep
    keeps for its resume; rows it would drop as :func:`superseded` are not counted). Reads only.

    Example:
        >>> import tempfile, os
        >>> from ppverify.sweep import parse_sweep
        >>> spec = parse_sweep({"schedules": ["gpipe"], "p": 2, "m": [1, 2], "costs": {"F": 1}, "levels": ["slot"]})
        >>> store = os.path.join(tempfile.mkdtemp(), "s.jsonl")
        >>> grid_rows(spec, store), len(run_sweep(spec, store, workers=1)), grid_rows(spec, store)
        (0, 2, 2)
    """
    stored = read_store(store_path, repair=False)
    return len(stored) - len(superseded(stored, spec))


def drop_rows(path: str | Path, rows: list[dict]) -> None:
    """Rewrite a store without ``rows`` (atomically: a kill leaves the old store or the new one).

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "s.jsonl")
        >>> with Store(f) as store:
        ...     store.write([{"point": "a"}, {"point": "b"}, {"point": "c"}])
        >>> drop_rows(f, [{"point": "b"}])
        >>> [r["point"] for r in read_store(f)]
        ['a', 'c']
    """
    from ..core.files import atomic_write

    gone = {r["point"] for r in rows}
    kept = [r for r in read_store(path) if r["point"] not in gone]
    atomic_write(path, "".join(json.dumps(r) + "\n" for r in kept), "--store")


def pool_size(workers: int | None, batches: int, cores: int | None = None) -> int:
    """Worker processes a local sweep starts: ``--workers`` (default: the cores), but never more
    than there are batches to run nor than the cores (``--workers 1000`` started 1,000 processes
    importing pandas for 3 points; the points are CPU-bound, so more processes than cores only
    share them).

    Example:
        >>> pool_size(None, 100, cores=8), pool_size(1000, 3, cores=8), pool_size(4, 100, cores=2)
        (8, 3, 2)
    """
    cores = cores or os.cpu_count() or 1
    return max(1, min(workers or cores, batches, cores))


def batch_size(tasks: int, batch: int, slots: int) -> int:
    """Tasks per shipped batch: ``batch`` (``--batch``), but fewer where that would leave some of
    the ``slots`` (worker processes, Ray CPUs) without a batch: 8 tasks in batches of 4 ran on 2 of
    8 workers. The rows do not depend on how tasks are batched.

    Example:
        >>> batch_size(100, 4, 8), batch_size(8, 4, 8), batch_size(8, 4, 2), batch_size(3, 4, 1)
        (4, 1, 4, 3)
    """
    return max(1, min(batch, -(-tasks // max(1, slots))))


def _run_pool(batches: list[list[Task]], sink: Callable[[list[dict]], None], workers: int, retries: int = 1) -> None:
    """Run batches on a process pool; a worker that dies (killed, out of memory) breaks the pool:
    the batches not yet stored are retried once on a fresh pool, then reported in one line."""
    queue = list(reversed(batches))
    for attempt in range(retries + 1):
        live: dict = {}
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init)
        try:
            # keep a bounded number of batches in flight so rows stream to the store steadily
            while queue or live:
                while queue and len(live) < 2 * workers:
                    b = queue.pop()
                    live[pool.submit(run_batch, b)] = b
                finished, _ = wait(set(live), return_when=FIRST_COMPLETED)
                for fut in sorted(finished, key=lambda f: f.exception() is not None):  # good rows first
                    rows = fut.result()
                    del live[fut]
                    sink(rows)
            pool.shutdown()
            return
        except BaseException as exc:
            stop_pool(pool)  # Ctrl-C, SIGTERM, a dead worker: no waiting for batches in flight
            if not isinstance(exc, BrokenProcessPool):
                raise
            queue.extend(live.values())  # what was in flight runs again; stored rows stay stored
            if attempt == retries:
                raise PPVerifyError(
                    f"a sweep worker process died {retries + 1} times (killed or out of memory); "
                    "the finished rows are in the store: rerun the same command to resume"
                ) from None


def _worker_init() -> None:
    import signal
    import threading

    # Ctrl-C reaches the whole process group: the parent stops the workers, they print nothing;
    # a forked worker inherits the parent's SIGTERM handler (raising in Python): back to the default
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # a parent killed outright (SIGKILL, the OOM killer) cannot stop its workers: they would finish
    # their batch for nobody and then wait forever; each one leaves as soon as its parent is gone
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int, every: float = 0.5) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(every)
    os._exit(1)


def stop_pool(pool: ProcessPoolExecutor, grace: float = 1.0) -> None:
    """Stop ``pool`` now (Ctrl-C, SIGTERM, a dead worker): cancel what is queued, end every worker
    without waiting for its task, and leave nothing that keeps this process from exiting. A
    worker ended while it wrote its result leaves the pool's manager thread waiting for the rest
    of that message, which never comes: this process holds the write end of the result pipe too,
    so no end of file either, and the interpreter's exit waited for that thread forever. Closing
    our write end once the workers are gone gives the read its end of file: the thread takes the
    pool for broken and ends.

    Example:
        >>> import time
        >>> pool = ProcessPoolExecutor(max_workers=1)
        >>> fut = pool.submit(time.sleep, 60)
        >>> workers = list(pool._processes.values())
        >>> stop_pool(pool)  # at once, not after the minute
        >>> [w.is_alive() for w in workers]
        [False]
    """
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    results = getattr(pool, "_result_queue", None)  # shutdown() drops these references: taken first
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=grace)
        if proc.is_alive():  # one still starting, with the command's SIGTERM handler: never left running
            proc.kill()
            proc.join(timeout=grace)
    if results is not None and not any(proc.is_alive() for proc in procs):
        results._writer.close()  # only now: a live worker's result would be cut off
    if manager is not None and manager.is_alive():
        manager.join(timeout=grace)


def connect_ray() -> Any:
    """The ``ray`` module, connected: ``RAY_ADDRESS`` (or ``ray start`` on this node) selects a
    cluster, otherwise a local instance starts; one line when Ray is not installed.

    Example:
        >>> connect_ray().is_initialized()  # doctest: +SKIP
        True
    """
    try:
        import ray
    except ImportError:
        raise PPVerifyError("--executor ray needs Ray: pip install 'ppverify[ray]'") from None
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS") or None
        if address:
            check_ray_address(address)
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    return ray


def check_ray_address(address: str, timeout: float = 10.0) -> None:
    """Refuse, within ``timeout`` seconds, a ``RAY_ADDRESS`` of the form ``HOST:PORT`` (or
    ``ray://HOST:PORT``) where nothing accepts a connection: Ray itself retries such an address
    for about two minutes before it fails. ``auto`` and ``local`` are left to Ray.

    Example:
        >>> check_ray_address("auto")
        >>> check_ray_address("127.0.0.1:1")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.PPVerifyError: RAY_ADDRESS=127.0.0.1:1: no Ray cluster answers there (Connection refused); start one with `ray start --head`, or unset RAY_ADDRESS for a local one
    """
    import socket

    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # auto, local, or a form Ray reads itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise PPVerifyError(
            f"RAY_ADDRESS={address}: no Ray cluster answers there ({why}); start one with `ray start --head`, "
            "or unset RAY_ADDRESS for a local one"
        ) from None


def _run_ray(batches: list[list[Task]], sink: Callable[[list[dict]], None]) -> None:
    ray = connect_ray()
    remote = ray.remote(run_batch)
    refs = [remote.remote(b) for b in batches]
    while refs:
        ready, refs = ray.wait(refs, num_returns=1)
        for ref in ready:
            sink(ray.get(ref))
