"""The console's standard streams: text that cannot be encoded is escaped, not a crash, a reader
that goes away (``ppverify verify s.csv | head -1``, or a standard output closed from the start,
``>&-``) costs the rest of the output, never the exit code, and a standard output that cannot be
written (``>/dev/full``) is one line on stderr and exit code 2, never an internal error."""

from __future__ import annotations

import os
import sys
from typing import Any

#: a closed pipe before the result was known (128 + SIGPIPE, as a shell reports it): never 0
EXIT_BROKEN_PIPE = 141


def reconfigure_streams() -> None:
    """Escape what stdout and stderr cannot encode (a name like ``"\\ud800"``, a non-UTF-8
    terminal) instead of failing on it: a result must not turn into a crash.

    Example:
        >>> reconfigure_streams()  # idempotent; a stream without reconfigure() is left as it is
    """
    for stream in (sys.stdout, sys.stderr):
        reconf = getattr(stream, "reconfigure", None)
        if reconf is not None:
            try:
                reconf(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream
                pass


class PipeGuard:
    """Standard output that survives its reader going away (``ppverify verify s.csv | head -1``):
    the rest of the output is dropped and the command runs on to its own exit code, so a closed
    pipe never turns an INVALID (exit 1) into a success. A missing stream (``None``: the process
    started with its standard output closed, ``>&-``) is a reader gone from the start: the output
    goes to ``/dev/null``. Any other failure to write (``>/dev/full``: no space left on the device)
    drops the rest of the output too and is kept in ``error``, for the caller's one line and exit
    code 2 (the output asked for was not delivered: no verdict to report).

    Example:
        >>> import io
        >>> class Closed(io.StringIO):
        ...     def write(self, text):
        ...         raise BrokenPipeError
        >>> guard = PipeGuard(Closed())
        >>> guard.write("VALID\\n"), guard.broken, guard.error
        (6, True, None)
        >>> class Full(io.StringIO):
        ...     def write(self, text):
        ...         raise OSError(28, "No space left on device")
        >>> guard = PipeGuard(Full())
        >>> guard.write("VALID\\n"), guard.broken, write_failure(guard.error)
        (6, True, 'cannot write standard output: No space left on device')
        >>> PipeGuard(None).broken
        True
    """

    def __init__(self, stream: Any) -> None:
        self.broken = stream is None
        self.stream = open(os.devnull, "w", encoding="utf-8") if stream is None else stream  # noqa: SIM115
        #: the first failure to write that is not a closed reader (``OSError``), else None
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return int(self.stream.write(text))
            except BrokenPipeError:
                self._lost()
            except OSError as exc:
                self._lost(exc)
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._lost()
            except OSError as exc:
                self._lost(exc)

    def _lost(self, error: OSError | None = None) -> None:
        self.broken = True
        if error is not None and self.error is None:
            self.error = error
        silence_stdout()  # the interpreter's last flush at exit then writes to /dev/null

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def silence_stdout() -> None:
    """Point the process's stdout at ``/dev/null``: the reader went away (``| head``), and the
    interpreter's last flush at exit must not complain of it; a stream without a descriptor is
    left as it is.

    Example:
        >>> import io, sys
        >>> saved, sys.stdout = sys.stdout, io.StringIO()
        >>> silence_stdout()  # a StringIO has no descriptor: nothing to do
        >>> sys.stdout = saved
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def write_failure(error: OSError) -> str:
    """The one line for a standard output that cannot be written: the system's words for it.

    Example:
        >>> write_failure(OSError(5, "Input/output error"))
        'cannot write standard output: Input/output error'
    """
    return f"cannot write standard output: {error.strerror or type(error).__name__}"


def open_missing_descriptors() -> None:
    """Open ``/dev/null`` on each of descriptors 0, 1 and 2 that the process started without
    (``ppverify verify s.csv >&-``): otherwise the next file ppverify opens would get number 1,
    and whatever is written to standard output (by a worker process too) would land in it.

    Example:
        >>> open_missing_descriptors()  # the usual case: all three open, nothing to do
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                new = os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd, as the lower ones are open
                if new != fd:
                    os.dup2(new, fd)
                    os.close(new)
            except OSError:
                pass
