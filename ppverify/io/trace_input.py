"""Checks of what a ``torch.profiler`` trace holds, before :mod:`.profiler_trace` reads it: the
gzip data expanded within a limit, ``PP:`` range names that are actions, numbers of at most 12
digits, correlation ids, and host-side compute ranges of one rank that do not overlap. Each
refusal is one :class:`~ppverify.core.errors.ScheduleFileError` (or
:class:`~ppverify.core.limits.LimitError`) naming the file and the event.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from ..core.errors import ScheduleFileError


def gunzip(path: str, raw: bytes, limit: int) -> bytes:
    """The JSON text of gzip data, decompressed in chunks and refused past ``limit`` bytes
    (:data:`~ppverify.io.profiler_trace.MAX_TRACE_BYTES`) before more is allocated: a few hundred KB can expand to gigabytes.

    Example:
        >>> import gzip
        >>> gunzip("r0.json.gz", gzip.compress(b"{}" * 10), 4096)
        b'{}{}{}{}{}{}{}{}{}{}'
        >>> gunzip("r0.json.gz", gzip.compress(b" " * 5000), 4096)
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: r0.json.gz: expands to over 4096 bytes of JSON; traces over 4096 bytes are refused
    """
    from ..core.limits import LimitError

    out = bytearray()
    data = raw
    try:
        while data:  # one member after another, as gzip.decompress reads them
            d = zlib.decompressobj(wbits=31)
            while data:
                out += d.decompress(data, limit + 1 - len(out))
                if len(out) > limit:
                    raise LimitError(
                        path, f"expands to over {limit} bytes of JSON; traces over {limit} bytes are refused"
                    )
                data = d.unconsumed_tail
            if not d.eof:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            data = d.unused_data.lstrip(b"\x00")
            if data and data[:2] != b"\x1f\x8b":
                raise OSError("not a gzipped file (trailing garbage)")
    except (OSError, EOFError, zlib.error) as exc:
        raise ScheduleFileError(path, "", f"corrupt or truncated gzip data ({exc})") from None
    return bytes(out)


def correlation(path: str, k: int, ev: dict[str, Any]) -> int | str | None:
    """An event's ``args.correlation`` (which matches a kernel to its launch): an integer or a
    string; anything else is refused (a list is no key to match on).

    Example:
        >>> correlation("r0.json", 3, {"name": "cudaLaunchKernel", "args": {"correlation": 7}})
        7
        >>> correlation("r0.json", 3, {"name": "cudaLaunchKernel", "args": {"correlation": [7]}})
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: r0.json: traceEvents[3]: event 'cudaLaunchKernel' has args.correlation [7]: expected an integer id
    """
    args = ev.get("args")
    corr = args.get("correlation") if isinstance(args, dict) else None
    if corr is None or (isinstance(corr, (int, str)) and not isinstance(corr, bool)):
        return corr
    raise ScheduleFileError(
        path,
        f"traceEvents[{k}]",
        f"event {shorten(str(ev.get('name')))} has args.correlation {shorten(json.dumps(corr))[1:-1]}: expected an "
        "integer id",
    )


def check_digits(path: str, k: int, name: str) -> None:
    """Refuse a step or action number of more than 12 digits (``ProfilerStep#<5000 digits>``):
    no profiler counts that far, and ``int()`` refuses more than 4,300 digits.

    Example:
        >>> check_digits("r0.json", 2, "ProfilerStep#" + "9" * 20)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: r0.json: traceEvents[2]: 'ProfilerStep#99999999999999999999' holds a number of 20 digits (at most 12)
    """
    from ..core.ops import MAX_ACTION_DIGITS

    long = re.search(r"[0-9]{%d,}" % (MAX_ACTION_DIGITS + 1), name)
    if long:
        raise ScheduleFileError(
            path,
            f"traceEvents[{k}]",
            f"{shorten(name)} holds a number of {len(long.group())} digits (at most {MAX_ACTION_DIGITS})",
        )


def shorten(text: str) -> str:
    """``repr(text)``, cut to 60 characters (a name of 5,000 digits would fill the screen)."""
    from ..core.ops import _shorten

    return _shorten(text)


def check_action(path: str, k: int, action: str) -> None:
    """Refuse a ``PP:`` range whose name is not an action: PyTorch's runtime names every range
    ``PP:<action>``, so such a name is an edited or foreign record, and reading past it would
    verify the step without the SEND/RECV and marker ranges (a wrong VALID).

    Example:
        >>> check_action("r0.json", 7, "0F1")
        >>> check_action("r0.json", 7, "0X1")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: r0.json: traceEvents[7]: range PP:'0X1' is not a pipeline action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, (0F7;7B3)OVERLAP_F_B): PyTorch's runtime names each range PP:<action>
    """
    from ..core.ops import ActionSyntaxError, parse_action

    try:  # compact=False: the runtime writes an overlapped cell in its long form only
        ok = action == action.strip() and parse_action(action, compact=False) is not None
        why = "" if ok else f"range PP:{shorten(action)} is not a pipeline action (an empty or padded name)"
    except ActionSyntaxError as exc:
        why = f"range PP:{exc}".replace(" is not an action", " is not a pipeline action", 1)
        why = why.replace(", or empty for idle)", ")")
    if why:
        raise ScheduleFileError(path, f"traceEvents[{k}]", f"{why}: PyTorch's runtime names each range PP:<action>")


def no_overlapping_compute(path: str, spans: list[tuple[Any, int]]) -> None:  # Any: a Span
    """Refuse two host-side compute ranges of one rank's file that overlap, whatever threads they
    were recorded on: ``_PipelineScheduleRuntime`` issues every action of a rank from one loop, one
    at a time, so such a file is not one job's trace (two merged, which is where the thread ids
    differ, or edited), and reading it would verify an order that did not run and fit costs from
    the overlap. ``spans``: each range with its event's index; device-side copies
    (``gpu_user_annotation``, kernels of several streams) are no part of it.

    Example:
        >>> from ppverify.io.profiler_trace import Span
        >>> no_overlapping_compute("r0.json", [(Span("0F0", 0.0, 10.0), 3), (Span("0F1", 5.0, 15.0), 4)])
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: r0.json: traceEvents[4]: PP:0F1 starts at 5.000 us while PP:0F0 (traceEvents[3], 0.000 to 10.000 us) still runs on the same rank (times from the file's first compute range); the runtime runs one action at a time, so this is not one job's trace
    """
    # a profiler's stamps are microseconds since an epoch (about 5e12): from the first range, so
    # that the overlap reads (not "5.31863e+12 to 5.31863e+12 us")
    t0 = min((sp.start for sp, _ in spans), default=0.0)
    spans = sorted(spans, key=lambda x: (x[0].start, -x[0].end))
    for (a, ka), (b, kb) in zip(spans, spans[1:]):
        if b.start < a.end:
            raise ScheduleFileError(
                path,
                f"traceEvents[{kb}]",
                f"PP:{b.name} starts at {b.start - t0:.3f} us while PP:{a.name} (traceEvents[{ka}], "
                f"{a.start - t0:.3f} to {a.end - t0:.3f} us) still runs on the same rank (times from the "
                "file's first compute range); the runtime runs one action at a time, so this is not one job's trace",
            )
