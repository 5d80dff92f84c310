"""The options of a measured run (steps, warm-up, hang timeout, seed), checked before any worker
process starts: a value no run can use is refused in one line (exit 2), never handed to workers
that would import torch for seconds and then fail, hang or overflow a timer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..core.errors import ParameterError

if TYPE_CHECKING:
    from ..core.costs import CostModel
    from ..core.schedule import Schedule
    from ..io.json_format import ScheduleDocument

#: most measured (and most warm-up) steps of one run: each step runs the whole schedule
MAX_STEPS = 10_000
#: longest hang timeout, in seconds (a day; timers and gloo's own timeout overflow far beyond)
MAX_TIMEOUT_S = 86_400.0
#: seeds of weights and data: what every random generator involved accepts
MAX_SEED = 2**31 - 1


def _count(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ParameterError(name, value, f"must be an integer in {low}..{high}")


def check_timeout(timeout: object, name: str = "timeout") -> None:
    """Refuse a hang timeout that is not a finite number of seconds in (0, :data:`MAX_TIMEOUT_S`].

    Example:
        >>> check_timeout(60.0)
        >>> check_timeout(float("inf"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter timeout=inf: must be a finite number of seconds in (0, 86400]
    """
    ok = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and math.isfinite(timeout)
    if not (ok and 0 < timeout <= MAX_TIMEOUT_S):  # type: ignore[operator]
        raise ParameterError(name, timeout, f"must be a finite number of seconds in (0, {MAX_TIMEOUT_S:g}]")


def check_run_options(steps: object, warmup: object, timeout: object, seed: object) -> None:
    """Refuse run options no measured run can use (before any worker process starts).

    Example:
        >>> check_run_options(3, 1, 60.0, 0)
        >>> check_run_options(0, 1, 60.0, 0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter steps=0: must be an integer in 1..10000
        >>> check_run_options(3, 1, 60.0, -1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter seed=-1: must be an integer in 0..2147483647
    """
    _count("steps", steps, 1, MAX_STEPS)
    _count("warmup", warmup, 0, MAX_STEPS)
    check_timeout(timeout)
    _count("seed", seed, 0, MAX_SEED)


#: the longest emulated link delay (``measure --link-delay``): beyond a minute per transfer a
#: step would outlast any timeout
MAX_LINK_DELAY_S = 60.0


def check_link_delay(delay: object) -> None:
    """Refuse a link delay that is not a finite number of seconds in 0..60.

    Example:
        >>> check_link_delay(0.005)
        >>> check_link_delay(-1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter link-delay=-1: must be seconds in 0..60 (0: the link as it is)
    """
    ok = isinstance(delay, (int, float)) and not isinstance(delay, bool) and 0 <= float(delay) <= MAX_LINK_DELAY_S
    if not ok:
        raise ParameterError("link-delay", delay, "must be seconds in 0..60 (0: the link as it is)")


def delay_text(seconds: float) -> str:
    """A link delay as ``measure`` prints it, with its significant digits at any size (a
    nanosecond is not ``0.0 us``): from a millisecond up as every time is printed, below it in
    us or, under a microsecond, ns, to four significant digits.

    Example:
        >>> delay_text(0.05), delay_text(4e-5), delay_text(1.5e-6), delay_text(1e-9), delay_text(2.5e-10)
        ('50.000 ms', '40 us', '1.5 us', '1 ns', '0.25 ns')
    """
    from ..core.timeline_text import fmt_time

    if seconds >= 1e-3:
        return fmt_time(seconds, "s")
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.4g} us"
    return f"{seconds * 1e9:.4g} ns"


#: seconds one abstract time unit of a schedule file's costs sleeps: the default costs
#: (F=0.01,B=0.02 per device share) are the abstract F=1,B=2 at this scale
SECONDS_PER_UNIT = 0.01


def file_costs(path: str, schedule: Schedule) -> CostModel | None:
    """The cost model a ppverify JSON schedule file stores (``design``, ``optimize --save``,
    ``show --save``), in seconds, for a run given no ``--costs``: ``simulate`` of the same file times it
    with these costs, so a schedule optimized for unequal stages is measured with them too. Costs
    in seconds are taken as they are; abstract ones at :data:`SECONDS_PER_UNIT` a unit, which
    leaves a file of the default F=1,B=2 costs measured exactly as before. None: no stored costs.

    Example:
        >>> import os, tempfile
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.json_format import save_json
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> f = save_json(s, os.path.join(tempfile.mkdtemp(), "s.json"), CostModel.abstract(s.placement, F=1, B=3))
        >>> c = file_costs(str(f), s)
        >>> c.duration["B"], c.time_unit, c.label
        ((0.03, 0.03), 's', "the file's costs F=1,B=3,I=1.5,W=1.5 at 10 ms a unit")
        >>> file_costs("1f1b", s) is None
        True
    """
    from dataclasses import replace

    doc = _json_document(path)  # by content, whatever its name: as every reader decides it
    costs = doc.costs if doc is not None else None
    if costs is None:
        return None
    if costs.num_stages != schedule.num_stages:  # refused as simulate refuses it, not replaced by the default
        from ..core.errors import ScheduleFileError

        raise ScheduleFileError(
            path, "costs", f"describes {costs.num_stages} stages; the placement has {schedule.num_stages}"
        )
    # the run sleeps an overlapped cell's ops one after the other (as PyTorch's OVERLAP_F_B runs
    # them): a factor below 1 would predict a step the run cannot take
    serial = (
        "" if costs.overlap == 1 else f" (overlap {costs.overlap:g} read as 1: a cell's ops run one after the other)"
    )
    costs = replace(costs, overlap=1.0)
    if costs.time_unit == "s":
        return replace(costs, label=f"the file's costs {costs.label or ''}".rstrip() + serial)
    k = SECONDS_PER_UNIT
    return replace(
        costs,
        duration={kind: tuple(x * k for x in v) for kind, v in costs.duration.items()},
        time_unit="s",
        label=f"the file's costs {costs.label or 'custom'} at {k * 1e3:g} ms a unit{serial}",
    )


def file_comm_note(path: str) -> str | None:
    """The note ``measure FILE.json`` prints when the file stores the communication it was made for
    (``optimize --save``): the run does not emulate it, so its prediction and timings leave it out
    where ``simulate FILE.json`` charges it; a fixed delay comes with the ``--link-delay`` that
    emulates it (a unit of abstract costs at :data:`SECONDS_PER_UNIT`). None: no stored communication.

    Example:
        >>> import os, tempfile
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.json_comm import CommSettings
        >>> from ppverify.io.json_format import save_json
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> f = os.path.join(tempfile.mkdtemp(), "s.json")
        >>> _ = save_json(s, f, CostModel.abstract(s.placement), comm=CommSettings(FixedDelay(1.0)))
        >>> print(file_comm_note(f))  # doctest: +NORMALIZE_WHITESPACE
        s.json: the file's communication (fixed delay 1 per transfer, sync eager) is not emulated: the run's
        transfers take this machine's own time and its prediction charges none; --link-delay 0.01 emulates the
        delay (the file's 1 at 10 ms a unit)
    """
    from pathlib import Path

    from ..core.comm import FixedDelay

    doc = _json_document(path)  # by content, whatever its name: as every reader decides it
    if doc is None or doc.comm is None:
        return None
    how = "--link-delay S emulates a fixed delay"
    if isinstance(doc.comm.comm, FixedDelay):
        delay = doc.comm.comm.delay
        seconds = doc.costs is not None and doc.costs.time_unit == "s"
        s = delay if seconds else delay * SECONDS_PER_UNIT
        how = f"--link-delay {s:g} emulates the delay" + ("" if seconds else f" (the file's {delay:g} at 10 ms a unit)")
    return (
        f"{Path(path).name}: the file's communication ({doc.comm.describe()}) is not emulated: the run's transfers "
        f"take this machine's own time and its prediction charges none; {how}"
    )


def _json_document(path: str) -> ScheduleDocument | None:
    """The ppverify JSON document in the file ``path``, read once; ``None`` for a family name or
    a file of another format."""
    from pathlib import Path

    from ..core.files import read_text
    from ..io import sniff_format
    from ..io.json_format import loads_document

    if not Path(path).is_file():
        return None
    text = read_text(path)
    return loads_document(text, path) if sniff_format(text) == "json" else None
