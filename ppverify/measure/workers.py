"""Real worker processes joined by ``torch.distributed`` (gloo), with hang detection.

:func:`run_workers` starts ``world_size`` fresh processes, each joins one gloo process group through a :class:`torch.distributed.FileStore` in a private temporary
directory (no port is ever chosen, so a busy port cannot be an error), calls
``target(rank, world_size, payload)`` and sends its result back to the parent. Workers come from
multiprocessing's fork server (a clean process started like ``spawn``, never a copy of the
caller) that imports torch once, so a second set of workers starts in well under a second;
plain ``spawn`` where there is no fork server.

Every worker publishes what it is doing in a small memory-mapped status file (one per rank,
written with :func:`set_status`, about a microsecond per write, so it can be updated before
every action of a schedule). When the workers do not finish in time the parent reads those files,
kills every worker and raises :class:`MeasureTimeout` naming each rank's blocked action. Workers
also ask Linux to kill them if the parent dies (``PR_SET_PDEATHSIG``), and the parent kills them
on Ctrl-C or SIGTERM, so no worker outlives a run.

The timeout is counted per *phase*: a worker calls ``set_status(text, phase=k)`` when it enters
phase k (one schedule of a batch, say), and each phase gets ``timeout`` seconds from the moment
the first rank enters it. Process start-up and the torch import (seconds) have their own, larger
allowance (:data:`STARTUP_TIMEOUT`).

This module starts and stops the workers; what runs inside one is in :mod:`.worker_side`, and
the collection of their results (hang detection, the first cause of a failure) in
:mod:`.worker_results`. Their names stay importable from here.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError
from .hang import MeasureTimeout as MeasureTimeout
from .realtime import check_realtime
from .status import blank_status, set_status

# the two sides of a run live beside this module; their names stay importable from here (tests and
# callers import them as ppverify.measure.workers.<name>)
from .worker_results import WorkerError as WorkerError
from .worker_results import _collect, _kill_all
from .worker_results import death_message as death_message
from .worker_side import PARENT_POLL_S as PARENT_POLL_S
from .worker_side import _watch_parent as _watch_parent
from .worker_side import _worker_main, refuse_main_reimport
from .worker_side import process_alive as process_alive

#: seconds allowed for starting the workers, importing torch and joining the group
STARTUP_TIMEOUT = 120.0
#: memory budget of one worker: measured 340 MiB RSS with torch imported (25 MiB of it private
#: when forked from the fork server; all of it under plain spawn), plus margin
WORKER_MEMORY_BYTES = 512 * 2**20
#: hard cap on workers whatever the machine (they sleep most of the time, so cores are not the limit)
MAX_WORKERS_CAP = 64


def max_workers() -> int:
    """Most workers this machine can hold: available memory / :data:`WORKER_MEMORY_BYTES`,
    at most :data:`MAX_WORKERS_CAP` and at least 2 (cores do not limit sleeping workers).

    Example:
        >>> 2 <= max_workers() <= MAX_WORKERS_CAP
        True
    """
    avail = None
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    if avail is None:
        with contextlib.suppress(ValueError, OSError, AttributeError):
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if avail is None:
        return 8
    return max(2, min(MAX_WORKERS_CAP, int(avail // WORKER_MEMORY_BYTES)))


def check_world_size(world_size: int) -> None:
    """Raise :class:`ParameterError` (one line, with the limit) when ``world_size`` processes
    cannot run here.

    Example:
        >>> check_world_size(2)
        >>> check_world_size(10_000)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter p=10000: needs 10000 worker processes; this machine holds at most ...
    """
    limit = max_workers()
    if not isinstance(world_size, int) or world_size < 1:
        raise ParameterError("p", world_size, "needs at least one worker process")
    if world_size > limit:
        raise ParameterError(
            "p",
            world_size,
            f"needs {world_size} worker processes; this machine holds at most "
            f"{limit} (one per {WORKER_MEMORY_BYTES // 2**20} MiB of available memory, "
            f"cap {MAX_WORKERS_CAP})",
        )


def require_torch() -> None:
    """Raise :class:`~ppverify.io.torch_interop.TorchUnavailableError` when torch.distributed
    cannot be imported.

    Example:
        >>> require_torch()
    """
    import importlib.util

    from ..io.torch_interop import TorchUnavailableError

    # find_spec, not an import: importing torch here would cost the parent seconds for nothing
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise TorchUnavailableError()


# ---------------------------------------------------------------------------------------------
# the parent side: start the workers, stop them (collecting their results: .worker_results)


#: modules the fork server imports once, so that every worker starts in a fraction of a second
#: (:mod:`.server` first: it keeps the workers' start-up failures quiet once the measuring process is gone)
PRELOAD: tuple[str, ...] = (
    "ppverify.measure.server",
    "ppverify.measure.runtime",
    "ppverify.measure.twopipe",
    "ppverify.measure.dispatch",
)


def _context() -> Any:
    # A fork server is a clean process started like ``spawn`` (never a fork of the caller, whose
    # threads would be copied); it imports torch once, and workers fork from it in milliseconds
    # instead of each importing torch for seconds. Plain spawn where there is no fork server.
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(list(PRELOAD))
        return ctx
    return mp.get_context("spawn")


def prestart() -> bool:
    """Start the fork server now, so that its torch import (seconds: most of a short run's wall
    time) overlaps the caller's own work (building the CLI, the schedule, the prediction) instead
    of following it. Idempotent; :func:`run_workers` then reuses the server. Returns False (and
    starts nothing) where there is no fork server or no torch.

    Example:
        >>> prestart()  # doctest: +SKIP
        True
    """
    import importlib.util

    if "forkserver" not in mp.get_all_start_methods() or importlib.util.find_spec("torch") is None:
        return False

    _context()  # sets the preload list, which the server reads when it starts
    _start_server()  # spawns the server and returns; the server imports in the background
    return True


def _start_server() -> None:
    # The fork server imports torch (seconds) before it ignores Ctrl-C, and its workers are forked
    # before they do: started with SIGINT ignored (an ignored signal stays ignored across fork and
    # exec, and Python then installs no KeyboardInterrupt handler), neither prints a traceback when
    # Ctrl-C reaches the whole process group; the caller's handler is back a moment later. Idempotent.
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGHUP too (a closed terminal's, to the whole group): the measuring process stops the run
    # (ppverify.cli.signals); a resource tracker killed by it made the clean-up relaunch one and print tracebacks
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN) if hasattr(signal, "SIGHUP") else None
    os.environ["PPVERIFY_FORK_SERVER"] = str(os.getpid())  # read by .server in the new server only
    try:
        forkserver.ensure_running()  # starts multiprocessing's resource tracker first
    except OSError as exc:
        if "AF_UNIX path too long" not in str(exc):
            raise
        # the server listens on a Unix socket in the temporary folder, whose path has at most
        # 107 bytes: a long TMPDIR is the user's to shorten, not a bug
        raise ParameterError(
            "TMPDIR",
            tempfile.gettempdir(),
            "is too long a path for the Unix socket of the workers' fork server (at most 107 bytes "
            "with the name multiprocessing adds): set TMPDIR to a shorter folder, e.g. TMPDIR=/tmp",
        ) from None
    finally:
        del os.environ["PPVERIFY_FORK_SERVER"]
        signal.signal(signal.SIGINT, old)
        if old_hup is not None:
            signal.signal(signal.SIGHUP, old_hup)


@contextlib.contextmanager
def _sigterm_as_interrupt():
    # SIGTERM in the parent -> KeyboardInterrupt, so the cleanup below runs (main thread only)
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    if callable(signal.getsignal(signal.SIGTERM)):  # the caller's own (the CLI's: exit 143, "terminated")
        yield
        return
    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_workers(
    world_size: int,
    target: Callable[[int, int, Any], Any],
    payload: Any,
    timeout: float,
    *,
    status_dir: str | Path | None = None,
    realtime: bool = False,
) -> list[Any]:
    """Run ``target(rank, world_size, payload)`` in ``world_size`` fresh processes joined by a
    gloo process group; return each rank's result, in rank order.

    ``target`` must be a picklable top-level function; ``payload`` and the results must pickle.
    Inside, a worker may call :func:`set_status` (per action) so that a hang is reported usefully.
    ``timeout`` bounds each phase (see the module docstring); start-up has
    :data:`STARTUP_TIMEOUT`. ``status_dir`` keeps the status files there (default: a temporary
    directory, removed afterwards). ``realtime``: the workers (and gloo's threads) run at the
    lowest ``SCHED_FIFO`` priority, above every ordinary process, so that other jobs on the
    machine, even at ``nice 19``, do not delay their wake-ups (:func:`check_realtime`).

    Raises :class:`MeasureTimeout` on a hang (every worker killed first), :class:`WorkerError`
    when a worker raises (the others killed), :class:`ParameterError` when the machine cannot hold
    ``world_size`` workers, and :class:`~ppverify.io.torch_interop.TorchUnavailableError`
    without torch. Ctrl-C or SIGTERM kills every worker before the interrupt propagates.

    Example:
        >>> from ppverify.measure.workers import run_workers, _demo_allreduce
        >>> run_workers(2, _demo_allreduce, 10, timeout=30)  # doctest: +SKIP
        [21.0, 21.0]
    """
    refuse_main_reimport()  # a script's unguarded top-level call, re-run in a starting worker
    require_torch()
    check_world_size(world_size)
    if not timeout > 0:
        raise ParameterError("timeout", timeout, "must be > 0 seconds")
    check_realtime(realtime, world_size)
    ctx = _context()
    if ctx.get_start_method() == "forkserver":
        _start_server()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ppverify-measure-")))
        sdir = Path(status_dir) if status_dir is not None else tmp
        sdir.mkdir(parents=True, exist_ok=True)
        status_paths = []
        for r in range(world_size):
            sp = sdir / f"status-{r}"
            sp.write_bytes(blank_status())
            status_paths.append(sp)
        results = ctx.Queue()
        pg_timeout = max(3600.0, 4 * timeout)  # the parent detects hangs; gloo must not do it first
        procs = [
            ctx.Process(
                target=_worker_main,
                name=f"ppverify-worker-{r}",
                daemon=True,
                args=(
                    r,
                    world_size,
                    str(tmp / "store"),
                    str(status_paths[r]),
                    target,
                    payload,
                    results,
                    pg_timeout,
                    os.getpid(),
                    realtime,
                ),
            )
            for r in range(world_size)
        ]
        try:
            with _sigterm_as_interrupt():
                for pr in procs:
                    pr.start()
                return _collect(procs, results, status_paths, world_size, timeout, STARTUP_TIMEOUT)
        finally:
            _kill_all(procs)
            with contextlib.suppress(Exception):
                results.close()
                results.cancel_join_thread()


# ---------------------------------------------------------------------------------------------
# worker targets for examples and tests


def _demo_allreduce(rank: int, world_size: int, payload: Any) -> float:
    """A tiny worker target (for examples and tests): all-reduce ``payload + rank``."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(payload + rank)])
    dist.all_reduce(t)
    return float(t.item())


def _demo_hang(rank: int, world_size: int, payload: Any) -> None:
    """A worker target that deadlocks: every rank receives first (for tests)."""
    import torch
    import torch.distributed as dist

    set_status(f"{rank}RECV_F0 from rank {(rank + 1) % world_size}", phase=0)
    t = torch.zeros(1)
    dist.recv(t, src=(rank + 1) % world_size)


def _demo_die(rank: int, world_size: int, payload: Any) -> None:
    """A worker target whose last rank is killed (SIGKILL, as the OOM killer does) while the
    others wait to receive from it (for tests)."""
    import torch
    import torch.distributed as dist

    if rank == world_size - 1:
        set_status(f"{rank}F0", phase=0)
        time.sleep(0.2)  # the others post their receives first
        os.kill(os.getpid(), signal.SIGKILL)
    set_status(f"{rank}RECV_B0 from rank {world_size - 1}", phase=0)
    dist.recv(torch.zeros(1), src=world_size - 1)
