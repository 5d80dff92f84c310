"""The console's standard streams: text that cannot be encoded is escaped, not a crash, and a reader
that goes away (``ppverify verify s.csv | head -1``) costs the rest of the output, never the exit
code."""

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
    pipe never turns an INVALID (exit 1) into a success.

    Example:
        >>> import io
        >>> class Closed(io.StringIO):
        ...     def write(self, text):
        ...         raise BrokenPipeError
        >>> guard = PipeGuard(Closed())
        >>> guard.write("VALID\\n"), guard.broken
        (6, True)
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return int(self.stream.write(text))
            except BrokenPipeError:
                self._lost()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._lost()

    def _lost(self) -> None:
        self.broken = True
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
