"""The worker side of :func:`~ppverify.measure.workers.run_workers`: the entry point of one worker
process (:func:`_worker_main`: join the gloo group, run the target, report one result or one
line of error) and its guards against outliving the process that started it.

A worker's parent is multiprocessing's fork server, not the measuring process, so a worker asks
Linux to kill it when the server dies (``PR_SET_PDEATHSIG``), lets the server end once the
measuring process is gone, and watches the measuring process itself (:func:`process_alive`,
every :data:`PARENT_POLL_S` seconds).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .realtime import enter_realtime
from .status import open_status, set_status

#: exit code of a worker that, still starting, re-ran measure: multiprocessing re-imports the
#: caller's main module in every worker, and a script calling measure at its top level calls it again
MAIN_REIMPORT_EXIT = 86
MAIN_GUARD_ADVICE = (
    "a worker re-imports the main module of the measuring script, which called measure again: put the "
    'script\'s calls under `if __name__ == "__main__":`'
)


def refuse_main_reimport() -> None:
    """End this process at once (exit code :data:`MAIN_REIMPORT_EXIT`, a line on stderr) when it
    is a worker still starting, re-importing the caller's main module (multiprocessing's
    ``_inheriting``, the flag behind its own "bootstrapping phase" error): the script called
    measure at its top level, without the ``if __name__ == "__main__":`` guard. ``os._exit``,
    because the fork server turns any other exit into code 1, which the parent could not tell
    from another failure. Does nothing in any other process.

    Example:
        >>> refuse_main_reimport()  # this process is no starting worker
    """
    import multiprocessing as mp
    import sys

    if getattr(mp.current_process(), "_inheriting", False):
        with contextlib.suppress(Exception):
            print(f"ppverify: error: {MAIN_GUARD_ADVICE}", file=sys.stderr, flush=True)
        os._exit(MAIN_REIMPORT_EXIT)


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

#: this worker's run folder (set by :func:`_worker_main`), None in any other process
_RUN_FOLDER: Path | None = None


def run_folder() -> Path | None:
    """The private temporary folder of the run this worker belongs to, for the files a rank
    writes for itself: the parent removes it as the run ends, also after it kills the worker
    (a timeout, Ctrl-C), where the worker's own clean-up never runs. None outside a worker (the
    system's temporary folder then).

    Example:
        >>> run_folder() is None  # this process is no worker
        True
    """
    return _RUN_FOLDER


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
    global _RUN_FOLDER
    _die_with_parent(main_pid)
    _RUN_FOLDER = Path(store_path).parent  # the gloo store lives in the run's temporary folder
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    if hasattr(signal, "SIGHUP"):  # and a closed terminal's SIGHUP (ppverify.cli.signals)
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
