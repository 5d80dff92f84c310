"""SIGHUP to a measured run: stopped like SIGTERM, in one line, with every worker stopped.

A closed terminal or ssh session sends SIGHUP. Left at its default action it ended ``ppverify
measure`` at once: no line said so, and the run's multiprocessing queue (three semaphores) was
never released, so multiprocessing's resource tracker warned of leaked semaphores. While
:func:`exit_on_hangup` runs a command, SIGHUP raises :class:`Hangup` instead, a
``KeyboardInterrupt`` like the CLI's SIGTERM, so the workers' clean-up runs
(:func:`~ppverify.measure.workers.run_workers` kills them on any interrupt); the command then ends
with ``<command>: terminated (SIGHUP)`` and exit code 129 (128 + 1, the shells' convention).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable

#: exit code after a SIGHUP: 128 + the signal's number
EXIT_HANGUP = 128 + 1


class Hangup(KeyboardInterrupt):
    """SIGHUP, raised in the main thread so that a run stops as on SIGTERM (workers killed)."""


def exit_on_hangup(command: str, run: Callable[[], int], own_process: bool = False) -> int:
    """``run()`` with SIGHUP raising :class:`Hangup`; on it, print ``<command>: terminated
    (SIGHUP)`` to stderr and return :data:`EXIT_HANGUP`. ``own_process`` (the console script):
    a later SIGHUP, while the interpreter shuts down, is then ignored, as the exit is decided.
    Outside the main thread, or where SIGHUP already has a handler, ``run()`` runs as it is.

    Example:
        >>> exit_on_hangup("ppverify measure", lambda: 0)
        0
        >>> exit_on_hangup("ppverify measure", lambda: signal.raise_signal(signal.SIGHUP) or 0)
        129
    """
    hup = getattr(signal, "SIGHUP", None)
    if hup is None or threading.current_thread() is not threading.main_thread():
        return run()
    if signal.getsignal(hup) not in (signal.SIG_DFL, None):  # the caller handles it (or ignores it)
        return run()
    received: list[int] = []

    def on_hangup(signum: int, frame: object) -> None:
        if received:  # the run is already stopping: a second SIGHUP must not cut its clean-up short
            return
        received.append(signum)
        raise Hangup()

    old = signal.signal(hup, on_hangup)
    try:
        return run()
    except Hangup:
        pass
    except Exception:
        # an interrupt inside an import or a library often comes out as another exception
        if not received:
            raise
    finally:
        # the exit is decided once it came: the interpreter's shut-down is not cut short either
        signal.signal(hup, signal.SIG_IGN if received and own_process else old)
    print(f"{command}: terminated (SIGHUP)", file=sys.stderr)
    return EXIT_HANGUP


__all__ = ["EXIT_HANGUP", "Hangup", "exit_on_hangup"]
