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
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError, PPVerifyError
from .hang import MeasureTimeout
from .realtime import check_realtime, enter_realtime
from .status import blank_status, open_status, read_status, set_status

#: seconds allowed for starting the workers, importing torch and joining the group
STARTUP_TIMEOUT = 120.0
#: memory budget of one worker: measured 340 MiB RSS with torch imported (25 MiB of it private
#: when forked from the fork server; all of it under plain spawn), plus margin
WORKER_MEMORY_BYTES = 512 * 2**20
#: hard cap on workers whatever the machine (they sleep most of the time, so cores are not the limit)
MAX_WORKERS_CAP = 64


class WorkerError(PPVerifyError):
    """A worker raised: the schedule or input was rejected at run time (one line: rank and error).

    Example:
        >>> str(WorkerError(1, "AssertionError: Computing 1F0 before receiving input"))
        'rank 1 failed: AssertionError: Computing 1F0 before receiving input'
    """

    def __init__(self, rank: int, message: str) -> None:
        self.rank, self.message = rank, message
        super().__init__(f"rank {rank} failed: {message}")


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
# the worker side


def _die_with_parent(main_pid: int | None = None) -> None:
    # A worker's parent is the fork server, not the measuring process: three guards, so that no
    # worker outlives the process that started it (a SIGKILL of it left workers and the server
    # sleeping for good: every worker held the server's "alive" pipe open, so the server never
    # saw its client go, and the workers never saw their parent die).
    with contextlib.suppress(Exception):  # 1. Linux: SIGKILL this worker when the fork server dies
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    with contextlib.suppress(Exception):  # 2. the server ends once the measuring process is gone
        from multiprocessing import forkserver

        server: Any = forkserver._forkserver  # its alive fd is private to CPython: not in typeshed
        fd = server._forkserver_alive_fd
        if fd is not None:
            os.close(fd)
            server._forkserver_alive_fd = None
    if main_pid is not None:  # 3. any system: a thread that ends this worker when its starter is gone
        threading.Thread(target=_watch_parent, args=(main_pid,), name="ppverify-parent-watch", daemon=True).start()


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not).

    Example:
        >>> process_alive(os.getpid())
        True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: alive as far as we can tell
    return stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] not in ("Z", "X")


#: how often a worker checks that the process that started it still runs, in seconds
PARENT_POLL_S = 0.5


def _watch_parent(main_pid: int) -> None:
    while process_alive(main_pid):
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _worker_main(
    rank: int,
    world_size: int,
    store_path: str,
    status_path: str,
    target: Callable,
    payload: Any,
    results: Any,
    pg_timeout: float,
    main_pid: int | None = None,
    realtime: bool = False,
) -> None:
    _die_with_parent(main_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    if hasattr(signal, "SIGHUP"):  # and a closed terminal's SIGHUP (.hangup)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        open_status(Path(status_path))
    except FileNotFoundError:
        # the parent creates the file before it starts us and removes it as it ends: it is ending
        # (Ctrl-C to the whole group while we started) and waits for no report; leave without the
        # traceback multiprocessing would print
        os._exit(1)
    set_status("importing torch", phase=-1)
    try:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: no network needed
        # one compute thread per worker: p workers share the cores, and idle OpenMP threads that
        # spin-wait would steal them from the ranks that have work
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import datetime

        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        set_status("joining the process group", phase=-1)
        if realtime:  # before the process group: gloo's threads, started by it, inherit the policy
            enter_realtime()
        store = dist.FileStore(store_path, world_size)
        dist.init_process_group(
            "gloo", store=store, rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=pg_timeout)
        )
        out = target(rank, world_size, payload)
        set_status("finished")
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
        results.put((rank, True, out))
    except BaseException as exc:  # report every failure as one line to the parent
        last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        where = f" (at {Path(last[0].filename).name}:{last[0].lineno})" if last else ""
        msg = " ".join(str(exc).split()) or type(exc).__name__
        results.put((rank, False, f"{type(exc).__name__}: {msg[:500]}{where}"))


# ---------------------------------------------------------------------------------------------
# the parent side


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
    # (.hangup); a resource tracker killed by it made the clean-up relaunch one and print tracebacks
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN) if hasattr(signal, "SIGHUP") else None
    os.environ["PPVERIFY_FORK_SERVER"] = str(os.getpid())  # read by .server in the new server only
    try:
        forkserver.ensure_running()  # starts multiprocessing's resource tracker first
    finally:
        del os.environ["PPVERIFY_FORK_SERVER"]
        signal.signal(signal.SIGINT, old)
        if old_hup is not None:
            signal.signal(signal.SIGHUP, old_hup)


def _kill_all(procs: list) -> None:
    for pr in procs:
        with contextlib.suppress(Exception):
            if pr.is_alive():
                pr.kill()
    for pr in procs:
        with contextlib.suppress(Exception):
            pr.join(timeout=5)


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
                return _collect(procs, results, status_paths, world_size, timeout)
        finally:
            _kill_all(procs)
            with contextlib.suppress(Exception):
                results.close()
                results.cancel_join_thread()


def _collect(procs: list, results: Any, status_paths: list[Path], world_size: int, timeout: float) -> list[Any]:
    out: dict[int, Any] = {}
    started = time.monotonic()
    phase_start: dict[int, float] = {}
    seen: dict[int, tuple[int, str]] = {}
    moved = started  # when a rank last changed action or finished: a stuck run stops moving, a slow one does not
    while len(out) < world_size:
        try:
            rank, ok, value = results.get(timeout=0.05)
        except queue.Empty:
            pass
        else:
            if not ok:
                raise _first_cause(rank, value, results, procs, status_paths)
            out[rank] = value
            moved = time.monotonic()
            continue
        now = time.monotonic()
        states = {r: read_status(status_paths[r]) for r in range(world_size) if r not in out}
        if states != seen:
            seen, moved = states, now
        for phase, _ in states.values():
            if phase >= 0:
                phase_start.setdefault(phase, now)
        lagging = min((ph for ph, _ in states.values()), default=-1)
        if lagging < 0:
            late = now - started > STARTUP_TIMEOUT
        else:
            late = now - phase_start.get(lagging, now) > timeout
        dead = [r for r, pr in enumerate(procs) if r not in out and not pr.is_alive() and pr.exitcode not in (0, None)]
        if dead and results.empty():
            time.sleep(0.2)  # a dying worker may still be flushing its error
            if results.empty():
                r = dead[0]
                raise WorkerError(r, death_message(procs[r].exitcode, states.get(r, (-1, ""))[1]))
        if late:
            blocked = {r: text for r, (_, text) in states.items()}
            _kill_all(procs)
            raise MeasureTimeout(timeout if lagging >= 0 else STARTUP_TIMEOUT, blocked, now - moved)
    return [out[r] for r in range(world_size)]


def death_message(exitcode: int, doing: str) -> str:
    """Why a worker process ended without reporting: the signal that killed it (a negative exit
    code, as multiprocessing gives it) or its exit code, and what it was doing then.

    Example:
        >>> death_message(-9, "1B0")
        'worker process killed by signal 9 (SIGKILL) while in 1B0; every worker stopped'
        >>> death_message(3, "")
        'worker process exited with code 3; every worker stopped'
    """
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown signal"
        what = f"killed by signal {-exitcode} ({name})"
    else:
        what = f"exited with code {exitcode}"
    return f"worker process {what}{f' while in {doing}' if doing else ''}; every worker stopped"


_SECONDARY = ("Connection closed by peer", "Connection reset by peer", "gloo/transport")


def _first_cause(
    rank: int, message: str, results: Any, procs: list | None = None, status_paths: list[Path] | None = None
) -> WorkerError:
    # when one rank fails, its peers' sockets close and they fail too ("connection closed"):
    # gather errors for a moment and report the one that is not such a consequence
    status = [read_status(sp)[1] for sp in status_paths] if status_paths else []
    errors = [(rank, message)]
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        try:
            r, ok, value = results.get(timeout=0.05)
        except queue.Empty:
            continue
        if not ok:
            errors.append((r, value))
    for r, msg in errors:
        if not any(word in msg for word in _SECONDARY):
            return WorkerError(r, msg)
    # every error is a closed connection: a worker that died without a word (killed) is the cause
    reported = {r for r, _ in errors}
    for r, pr in enumerate(procs or []):
        if r not in reported and not pr.is_alive() and pr.exitcode not in (0, None):
            return WorkerError(r, death_message(pr.exitcode, status[r] if r < len(status) else ""))
    return WorkerError(*errors[0])


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
