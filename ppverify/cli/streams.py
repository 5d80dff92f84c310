"""The console's standard streams: text that cannot be encoded is escaped, not a crash, a reader
that goes away (``ppverify verify s.csv | head -1``, or a standard output closed from the start,
``>&-``) costs the rest of the output, never the exit code, and a standard output that cannot be
written (``>/dev/full``) is one line on stderr and exit code 2, never an internal error. A
standard error that cannot be written (``2>/dev/full``, a reader gone) costs the notes, progress
and messages it would have carried, never the command's work, output or exit code."""

from __future__ import annotations

import codecs
import os
import sys
from typing import Any

#: a closed pipe before the result was known (128 + SIGPIPE, as a shell reports it): never 0
EXIT_BROKEN_PIPE = 141


#: the error handler of a stream that had Python's ``surrogateescape`` (:func:`bytes_or_escape`)
BYTES_OR_ESCAPE = "ppverify.bytes_or_escape"


def bytes_or_escape(exc: UnicodeError) -> tuple[str | bytes, int]:
    """An encoding error handler: the bytes of a name Python could not decode (the lone surrogates
    U+DC80..U+DCFF that ``surrogateescape`` made of them) are written back as those bytes, so a
    file name printed is the file's name on the terminal; anything else that cannot be encoded
    (``"\\ud800"``, ``é`` on an ASCII stream) is escaped with a backslash, as ``backslashreplace``.

    Example:
        >>> "é\\udcc3\\udca9".encode("ascii", BYTES_OR_ESCAPE)
        b'\\\\xe9\\xc3\\xa9'
    """
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    chunk = exc.object[exc.start : exc.end]
    raw = len(chunk) - len(chunk.lstrip("".join(map(chr, range(0xDC80, 0xDD00)))))
    if raw:  # a run of escaped bytes first: those bytes
        return bytes(ord(ch) - 0xDC00 for ch in chunk[:raw]), exc.start + raw
    escaped = next((i for i, ch in enumerate(chunk) if 0xDC80 <= ord(ch) < 0xDD00), len(chunk))
    part = UnicodeEncodeError(exc.encoding, exc.object, exc.start, exc.start + escaped, exc.reason)
    return codecs.backslashreplace_errors(part)


codecs.register_error(BYTES_OR_ESCAPE, bytes_or_escape)


def reconfigure_streams() -> None:
    """Escape what stdout and stderr cannot encode (a name like ``"\\ud800"``, a non-UTF-8
    terminal) instead of failing on it: a result must not turn into a crash. Where Python gave
    stdout its ``surrogateescape`` (the C locale, UTF-8 mode: file names it could not decode are
    written back as their bytes), both streams keep doing so (:func:`bytes_or_escape`), so a name
    printed (``wrote é.csv``, on stderr too) is the file's name, never ``\\udcc3\\udca9``.

    Example:
        >>> reconfigure_streams()  # idempotent; a stream without reconfigure() is left as it is
    """
    streams = (sys.stdout, sys.stderr)
    keep = any(getattr(s, "errors", None) in ("surrogateescape", BYTES_OR_ESCAPE) for s in streams)
    for stream in streams:
        reconf = getattr(stream, "reconfigure", None)
        if reconf is not None:
            try:
                reconf(errors=BYTES_OR_ESCAPE if keep else "backslashreplace")
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
        self._silence()

    def _silence(self) -> None:
        silence_stdout()  # the interpreter's last flush at exit then writes to /dev/null

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class StderrGuard(PipeGuard):
    """Standard error that never fails a command: a note, a progress line or an error message
    that cannot be written (``2>/dev/full``, a reader gone, ``2>&-``) is dropped with the rest of
    what stderr would carry, and the command goes on to its own output and exit code (exit code 1
    is a verdict, never an I/O failure). The failure is kept in ``error``; the descriptor is then
    pointed at ``/dev/null``, so the interpreter's last flush at exit cannot fail either.

    Example:
        >>> import io
        >>> class Full(io.StringIO):
        ...     def write(self, text):
        ...         raise OSError(28, "No space left on device")
        >>> guard = StderrGuard(Full())
        >>> guard.write("a note\\n"), guard.broken, guard.error.errno
        (7, True, 28)
    """

    def _silence(self) -> None:
        _to_devnull(self.stream)


def _to_devnull(stream: Any) -> None:
    # the descriptor of ``stream`` now writes to /dev/null; one without a descriptor is left as it is
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


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
    _to_devnull(sys.stdout)


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
