"""The signals a command stops on: Ctrl-C (SIGINT), SIGTERM and SIGHUP while ``ppverify COMMAND`` runs.

SIGTERM raises :class:`Terminated` and SIGHUP (a closed terminal or ssh session) :class:`Hangup`,
both ``KeyboardInterrupt``, in the main thread, so commands stop as on Ctrl-C; each interrupts a
solver call in progress (:class:`_sigterm_raises`). A command that keeps what it found runs its
search :func:`interruptible` and ends with :func:`stopped`'s line, which names the signal received.
The exit code is 128 + the signal's number: 130, 143, 129. A SIGHUP ignored when the command
started (``nohup``) stays ignored. A command with nothing half-written to lose (``verify``,
``prove``) also ends within a grace period of the signal (:func:`ends_within`), even when a
solver call in progress polls no interrupt.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: exit codes after Ctrl-C (SIGINT), SIGTERM and SIGHUP: 128 + the signal's number, as a shell reports them
EXIT_INTERRUPT, EXIT_TERM, EXIT_HANGUP = 130, 143, 129
#: the numbers of SIGTERM and SIGHUP (0 where there is none)
_TERM, _HUP = int(getattr(signal, "SIGTERM", 0)), int(getattr(signal, "SIGHUP", 0))
#: seconds :func:`ends_within` gives a command after a signal before it ends the process
GRACE_S = 2.0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that commands stop as on Ctrl-C (saving what is done)."""


class Hangup(KeyboardInterrupt):
    """SIGHUP, raised in the main thread so that commands stop as on SIGTERM (saving what is done)."""


def stop_words(exc: BaseException | None) -> str:
    """What a command's last line says of the signal that stopped it: ``terminated (SIGTERM)``
    for :class:`Terminated`, ``terminated (SIGHUP)`` for :class:`Hangup`, else (Ctrl-C, or a
    ``KeyboardInterrupt`` raised by Python code) ``interrupted``.

    Example:
        >>> stop_words(Terminated()), stop_words(Hangup()), stop_words(KeyboardInterrupt())
        ('terminated (SIGTERM)', 'terminated (SIGHUP)', 'interrupted')
    """
    if isinstance(exc, Terminated):
        return "terminated (SIGTERM)"
    return "terminated (SIGHUP)" if isinstance(exc, Hangup) else "interrupted"


def stop_code(exc: BaseException | None) -> int:
    """The exit code after the signal ``exc`` stands for: 143 SIGTERM, 129 SIGHUP, else 130.

    Example:
        >>> stop_code(Terminated()), stop_code(Hangup()), stop_code(KeyboardInterrupt())
        (143, 129, 130)
    """
    if isinstance(exc, Terminated):
        return EXIT_TERM
    return EXIT_HANGUP if isinstance(exc, Hangup) else EXIT_INTERRUPT


def signal_exception(signum: int) -> KeyboardInterrupt:
    """The exception a signal stands for: :class:`Terminated` for SIGTERM, :class:`Hangup` for
    SIGHUP, else (SIGINT) ``KeyboardInterrupt``.

    Example:
        >>> type(signal_exception(signal.SIGTERM)).__name__, type(signal_exception(signal.SIGINT)).__name__
        ('Terminated', 'KeyboardInterrupt')
    """
    if signum == _TERM:
        return Terminated()
    return Hangup() if _HUP and signum == _HUP else KeyboardInterrupt()


def ends_within(
    args: argparse.Namespace, command: str, grace_s: float | None
) -> contextlib.AbstractContextManager[None]:
    """Within the block (the run of a command that writes nothing it could leave half-written:
    ``verify``, ``prove``), a Ctrl-C, SIGTERM or SIGHUP ends the process at most ``grace_s``
    seconds after it arrives, whatever the command is doing then. The signal is handled as
    everywhere (Z3 interrupted, the exception raised); only if the command has not ended when the
    grace is up (Z3's late search of a large difference-logic problem polls no interrupt), a
    watchdog flushes the output, prints the command's usual one line (``ppverify verify:
    interrupted``) and ends the process with the signal's exit code (130, 143, 129) through
    :func:`os._exit`. Only in the ``ppverify`` process itself (the console script, ``python -m
    ppverify``); a call of :func:`ppverify.cli.main` from Python code, or ``grace_s`` None, gets
    the block unchanged. Commands that keep what they found (``design``, ``sweep``, ``optimize``)
    never use it.

    Example:
        >>> with ends_within(argparse.Namespace(), "ppverify verify", GRACE_S):
        ...     pass
    """
    signals = getattr(args, "_signals", None)
    if grace_s is None or not isinstance(signals, _sigterm_raises):
        return contextlib.nullcontext()
    return signals.ending_within(command, grace_s)


def rows_kept(exc: BaseException, command: str, kept: int, store: object) -> int:
    """A resumable run stopped by ``exc`` (``sweep``, the findings map): one stderr line saying how
    many rows its store keeps for the resume, and the exit code after the signal.

    Example:
        >>> import contextlib, io
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     rows_kept(Terminated(), "ppverify sweep", 12, "s.jsonl")
        143
        >>> print(err.getvalue().strip())
        ppverify sweep: terminated (SIGTERM); 12 rows are safe in s.jsonl; rerun the same command to resume
    """
    words = stop_words(exc)  # Ctrl-C keeps its short word; a signal sent is named with the command
    said = "interrupted:" if words == "interrupted" else f"{command}: {words};"
    print(f"\n{said} {kept} rows are safe in {store}; rerun the same command to resume", file=sys.stderr)
    return stop_code(exc)


def interruptible(args: argparse.Namespace) -> contextlib.AbstractContextManager[threading.Event]:
    """Within the block, the first Ctrl-C or SIGTERM sets the yielded event instead of raising, so
    a search ends with what it found (a second one raises as usual); :func:`stopped` then names the
    signal. A command run from Python code (no handlers of :func:`ppverify.cli.main`) gets
    :func:`ppverify.optimize.solver_run.interruptible`: Ctrl-C only.

    Example:
        >>> with interruptible(argparse.Namespace()) as stop:
        ...     stop.is_set()
        False
    """
    signals = getattr(args, "_signals", None)
    if isinstance(signals, _sigterm_raises) and signals.old is not None:
        return signals.stopping()
    from ..optimize.solver_run import interruptible as on_ctrl_c

    return on_ctrl_c()


def stopped(args: argparse.Namespace, command: str, what: str) -> int:
    """After a signal ended a run whose result so far (``what``) was printed: one line on stderr
    naming the signal received, and its exit code (SIGTERM 143, SIGHUP 129, Ctrl-C 130; a
    KeyboardInterrupt without a signal, raised by Python code, reads as Ctrl-C).

    Example:
        >>> import contextlib, io
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     stopped(argparse.Namespace(), "ppverify design", "the frontier of the points done")
        130
        >>> print(err.getvalue(), end="")
        ppverify design: interrupted (Ctrl-C); printed the frontier of the points done
    """
    signals = getattr(args, "_signals", None)
    exc = signals.interrupt() if isinstance(signals, _sigterm_raises) and signals.received else None
    words = stop_words(exc)
    if words == "interrupted":
        words = "interrupted (Ctrl-C)"
    print(f"{command}: {words}; printed {what}", file=sys.stderr)
    return stop_code(exc)


class _sigterm_raises:
    """SIGTERM raises :class:`Terminated` and SIGHUP :class:`Hangup` in the main thread while a
    command runs; SIGINT, SIGTERM and SIGHUP also interrupt a Z3 call or a CP-SAT search in
    progress (Python runs signal handlers only between bytecodes, so a long solver call would
    otherwise delay the exit): the signal's byte reaches a watcher thread through
    :func:`signal.set_wakeup_fd`, which interrupts Z3 and stops CP-SAT
    (:mod:`ppverify.optimize.interrupt`). Within :meth:`stopping` the first signal sets an event
    instead of raising. A SIGHUP ignored on entry (``nohup``) stays ignored; a SIGHUP after the
    first one is ignored (a closed terminal may send two: the shell's and the terminal's), so it
    cuts short neither the printing of what was found nor the clean-up. Each handler is restored
    on exit."""

    def __init__(self, own_process: bool = False) -> None:
        self.own_process = own_process

    def __enter__(self) -> _sigterm_raises:
        self.received = 0  # the signal number once SIGINT, SIGTERM or SIGHUP has arrived
        self.old = self.old_int = self.old_hup = None
        self.redelivered = False  # the next signal is the watcher's delivery again (_again)
        self.old_hook: Callable[[Any], object] | None = None
        self.stop: threading.Event | None = None  # within stopping(): the event the first signal sets
        self.raised: KeyboardInterrupt | None = None  # the last exception a signal raised
        self.active, self.in_hook = True, False
        self.old_fd = -1
        self.pipe: tuple[int, int] | None = None
        # within ending_within(): the command's name and its grace; the lock orders its end
        # (the block left) against the watchdog's exit, so that only one of them prints the line
        self.grace: tuple[str, float] | None = None
        self.grace_lock = threading.Lock()
        self.watchdog: threading.Timer | None = None
        if os.name == "posix" and _in_main_thread():
            self.old = signal.signal(signal.SIGTERM, self._on_signal)
            if _HUP and signal.getsignal(_HUP) is not signal.SIG_IGN:  # nohup's choice is kept
                # (None: a handler set outside Python, which Python can only put back as the default)
                self.old_hup = signal.signal(_HUP, self._on_signal) or signal.SIG_DFL
            try:
                r, w = os.pipe()
                os.set_blocking(w, False)
                self.old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
                self.pipe = (r, w)
                watcher = threading.Thread(
                    target=_interrupt_solvers_on_signal, args=(r, self._again, self._grace_from), daemon=True
                )
                watcher.start()
            except (OSError, ValueError):
                self.pipe = None
            # last: until here a Ctrl-C is the start-up's one line and exit (a KeyboardInterrupt
            # inside Thread.start above would escape the command's handling)
            self.old_int = signal.signal(signal.SIGINT, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: object) -> None:
        again, self.redelivered = self.redelivered, False
        if signum == _HUP and self.received == _HUP and not again:  # the hang-up is being handled
            return
        self.received = signum
        if self.in_hook:  # the signal delivered again came too soon: once more, later
            self._later()
            return
        if self.stop is not None and not self.stop.is_set():  # the search ends with what it has
            self.stop.set()
            return
        # the interrupt can land inside a library's constructor (z3's Context before its `owner`
        # is set): the half-built object's __del__ then fails as it is freed, and Python would
        # print that as "Exception ignored in ...". A consequence of the signal, not news: quiet
        if self.old_hook is None:
            self.old_hook = sys.unraisablehook
            sys.unraisablehook = self._unraisable
        self.raised = self.interrupt()
        raise self.raised

    def _unraisable(self, unraisable: Any) -> None:
        # the interrupt itself raised where Python can only report it (an at-fork callback while a
        # process pool starts its workers: a sweep then ran to its end, the signal lost). The
        # signal again once this hook is done (raised in here it would be lost as well): the
        # watcher thread delivers it a moment later
        if self.active and unraisable.exc_value is self.raised:
            self.in_hook = True
            try:
                self._later()
            finally:
                self.in_hook = False

    def _later(self) -> None:
        if self.pipe is not None:
            with contextlib.suppress(OSError):
                os.write(self.pipe[1], _AGAIN)

    def _again(self) -> None:  # in the watcher thread
        if self.active and self.received:
            import _thread

            self.redelivered = True
            _thread.interrupt_main(signal.Signals(self.received))

    @contextlib.contextmanager
    def ending_within(self, command: str, grace_s: float) -> Iterator[None]:
        """See :func:`ends_within`: armed only in the process the command owns, with the watcher."""
        if not self.own_process or self.pipe is None:
            yield
            return
        self.grace = (command, grace_s)
        try:
            yield
        finally:
            with self.grace_lock:
                self.grace = None

    def _grace_from(self, signum: int) -> None:  # in the watcher thread, as a signal arrives
        # the main thread may be inside a native call that polls nothing: its handler runs (and
        # the command ends) only when the call returns. The first signal starts the watchdog
        grace = self.grace
        if grace is not None and self.watchdog is None:
            self.watchdog = threading.Timer(grace[1], self._end_now, (grace[0], signum))
            self.watchdog.daemon = True
            self.watchdog.start()

    def _end_now(self, command: str, signum: int) -> None:  # in the watchdog, when the grace is up
        with self.grace_lock:
            if self.grace is None or not self.active:  # the command ended in time
                return
            _flush_briefly()
            exc = signal_exception(signum)
            with contextlib.suppress(Exception):
                os.write(2, f"{command}: {stop_words(exc)}\n".encode("utf-8", "replace"))
            os._exit(stop_code(exc))

    @contextlib.contextmanager
    def stopping(self) -> Iterator[threading.Event]:
        """Within the block the first signal sets the yielded event instead of raising; a
        search's status then says which signal cut it (:func:`~ppverify.optimize.solver_setup.cut_reason`)."""
        from ..optimize.solver_setup import stops_named

        stop, before = threading.Event(), self.stop
        self.stop = stop
        try:
            with stops_named(self.stop_words):
                yield stop
        finally:
            self.stop = before

    def stop_words(self) -> str:
        """The words of the signal received (``terminated (SIGTERM)``, ``interrupted (Ctrl-C)``);
        empty before one arrives."""
        words = stop_words(self.interrupt()) if self.received else ""
        return "interrupted (Ctrl-C)" if words == "interrupted" else words

    def interrupt(self) -> KeyboardInterrupt:
        """The exception of the signal received: :class:`Terminated` for SIGTERM, :class:`Hangup`
        for SIGHUP."""
        return signal_exception(self.received)

    def __exit__(self, *exc: object) -> None:
        self.active = False
        if self.old_hook is not None and not self.own_process:
            sys.unraisablehook = self.old_hook  # the console script keeps it for its shut-down
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)
            signal.signal(signal.SIGINT, self.old_int)
        if self.old_hup is not None:
            signal.signal(_HUP, self.old_hup)
        if self.pipe is not None:
            signal.set_wakeup_fd(self.old_fd)
            os.close(self.pipe[1])  # the watcher reads end-of-file and ends


#: the byte :meth:`_sigterm_raises._unraisable` writes to the watcher: deliver the signal again
_AGAIN = b"\0"


def _hangup_default_in_child() -> None:
    # a forked child (a process pool's worker) leaves the command's SIGHUP handler behind: raised
    # in a worker, a Hangup would be taken for a task's result; there a hang-up ends the process,
    # as it did before the command handled it (the parent stops its pool)
    handler = signal.getsignal(_HUP)
    if isinstance(getattr(handler, "__self__", None), _sigterm_raises):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(_HUP, signal.SIG_DFL)


if _HUP and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_hangup_default_in_child)


def _flush_briefly(seconds: float = 0.5) -> None:
    """Flush stdout and stderr, giving up after ``seconds`` (a full pipe nobody reads would
    otherwise hold the caller forever)."""

    def flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()

    flusher = threading.Thread(target=flush, daemon=True)
    flusher.start()
    flusher.join(seconds)


def _interrupt_solvers_on_signal(fd: int, again: Callable[[], None], arrived: Callable[[int], None]) -> None:
    try:
        while True:
            data = os.read(fd, 16)
            if not data:
                break
            if _AGAIN[0] in data:
                time.sleep(0.05)  # the main thread out of the hook that asked for it
                again()
            signums = [b for b in data if b and b in (signal.SIGINT, _TERM, _HUP)]
            if signums:
                with contextlib.suppress(Exception):
                    arrived(signums[0])  # a grace's watchdog (ends_within)
                z3 = sys.modules.get("z3")
                if z3 is not None:
                    with contextlib.suppress(Exception):
                        z3.main_ctx().interrupt()
                cp_sat = sys.modules.get("ppverify.optimize.interrupt")
                if cp_sat is not None:  # a CP-SAT search waits out its time limit otherwise
                    with contextlib.suppress(Exception):
                        cp_sat.stop_all()
    finally:
        os.close(fd)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
