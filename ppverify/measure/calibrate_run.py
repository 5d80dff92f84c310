"""``ppverify calibrate``'s two modes: which options each takes (:func:`check_calibrate_mode`)
and the measuring run (:func:`measure_calibration`: wait for a quiet machine, then
:func:`~ppverify.measure.calibrate.calibrate`); the other mode, a fit to a profiler trace, is
:func:`~ppverify.measure.trace_calibrate.from_trace`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

from ..core.errors import ParameterError
from .calibration import Calibration

#: options of a measuring run (``dest``: flag), which a trace fit would ignore
RUN_ONLY = {"quick": "--quick", "timeout": "--timeout", "wait_quiet": "--wait-quiet", "realtime": "--realtime"}
#: options of a trace fit, which a measuring run would ignore (the sizing ones are refused by
#: :func:`~ppverify.measure.trace_sizes.transfer_sizes` with the same advice)
TRACE_ONLY = {"fit_steps": "--fit-steps", "schedule": "--schedule"}
#: hang timeout of each measured run when ``--timeout`` is not given, in seconds
DEFAULT_TIMEOUT_S = 120.0


def check_calibrate_mode(options: Mapping[str, Any], from_trace: bool) -> None:
    """Refuse an option the chosen mode would ignore: a measuring run's with ``--from-trace``
    (which runs nothing), and a trace fit's without it. ``options``: the command's options by
    ``dest`` (None or False: not given).

    Example:
        >>> check_calibrate_mode({"quick": True, "fit_steps": None}, from_trace=False)
        >>> check_calibrate_mode({"fit_steps": "1,2"}, from_trace=False)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter fit-steps=1,2: belongs to a fit to a profiler trace, which this run does not make: give --from-trace DIR, or leave it out
        >>> check_calibrate_mode({"quick": True}, from_trace=True)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter quick=True: shapes a measuring run; --from-trace runs nothing (record the trace with measure --profile, with --realtime there if wanted): leave it out
    """
    for dest in (*RUN_ONLY, *TRACE_ONLY):
        value = options.get(dest)
        if value is None or value is False:
            continue
        if from_trace and dest in RUN_ONLY:
            raise ParameterError(
                RUN_ONLY[dest].lstrip("-"),
                value,
                "shapes a measuring run; --from-trace runs nothing (record the trace with measure --profile, "
                "with --realtime there if wanted): leave it out",
            )
        if not from_trace and dest in TRACE_ONLY:
            raise ParameterError(
                TRACE_ONLY[dest].lstrip("-"),
                value,
                "belongs to a fit to a profiler trace, which this run does not make: give --from-trace DIR, or leave it out",
            )


def measure_calibration(
    quick: bool = False,
    timeout: float | None = None,
    realtime: bool = False,
    wait_quiet_s: float | None = None,
    say: TextIO | None = None,
) -> Calibration:
    """What ``calibrate`` without ``--from-trace`` does: first wait up to ``wait_quiet_s`` seconds
    for a quiet machine (saying on ``say``, standard error by default, what the last window
    saw), then :func:`~ppverify.measure.calibrate.calibrate`. A run that outlasts ``timeout``
    (default :data:`DEFAULT_TIMEOUT_S`) is a limit too short for this machine: a
    :class:`~ppverify.core.errors.ParameterError` naming ``timeout``.

    Example:
        >>> cal = measure_calibration(quick=True, wait_quiet_s=60)  # doctest: +SKIP
        >>> cal.action_overhead_s > 0  # doctest: +SKIP
        True
    """
    # looked up when called, so that a stand-in (tests) is the one that runs
    from .calibrate import calibrate
    from .hang import MeasureTimeout
    from .machine_load import idle_enough, wait_quiet

    limit = DEFAULT_TIMEOUT_S if timeout is None else timeout
    if wait_quiet_s:
        share = wait_quiet(wait_quiet_s)
        late = f"; still busy after {wait_quiet_s:g} s, calibrating anyway" if share and not idle_enough(share) else ""
        waited = share.describe() if share else "no /proc/stat"
        print(f"waited for quiet   {waited}{late}", file=say or sys.stderr)
    try:
        return calibrate(quick=quick, timeout=limit, realtime=realtime)
    except MeasureTimeout as exc:  # the runs are known-good schedules: the limit is too short here
        raise ParameterError(
            "timeout", limit, f"a calibration run needs longer on this machine ({exc}); give more seconds"
        ) from None


__all__ = ["DEFAULT_TIMEOUT_S", "RUN_ONLY", "TRACE_ONLY", "check_calibrate_mode", "measure_calibration"]
