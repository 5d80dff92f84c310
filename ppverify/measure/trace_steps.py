"""Which steps of a profiler trace ``calibrate --from-trace`` fits, which it leaves out as
outliers, and which it holds out to check the fit.

A fit step is checked for outliers against the other fit steps' median and robust deviation,
which takes at least :data:`MIN_OUTLIER_STEPS` of them (of two steps, neither is typical). The
default therefore fits every recorded step but a held-out tail (the last quarter, at least one
step) as long as :data:`MIN_OUTLIER_STEPS` remain to fit, and every step of a shorter trace:
then no step is held out, and :func:`step_notes` says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ..core.errors import ParameterError

#: a fit step whose makespan lies more than this many robust deviations (1.4826 x the median
#: absolute deviation) from the fit steps' median is left out of the fit
OUTLIER_MADS = 3.0

#: the fewest fit steps the outlier check runs on: with two, the median lies halfway between them
#: and neither can be told off from the other
MIN_OUTLIER_STEPS = 3

#: the default holds out the last 1/HELD_OUT_SHARE of the recorded steps (at least one)
HELD_OUT_SHARE = 4


def typical_steps(makespans: Sequence[float], k: float = OUTLIER_MADS) -> list[bool]:
    """Which steps to fit: those whose makespan lies within ``k`` robust standard deviations
    (1.4826 x the median absolute deviation, at least 1 % of the median: steps that close are
    one machine's noise) of the median; every step when fewer than :data:`MIN_OUTLIER_STEPS`,
    or when more than half would go.

    Example:
        >>> typical_steps([100.0, 101.0, 99.0, 100.5, 140.0])
        [True, True, True, True, False]
        >>> typical_steps([100.0, 140.0])
        [True, True]
    """
    if len(makespans) < MIN_OUTLIER_STEPS:
        return [True] * len(makespans)
    med = statistics.median(makespans)
    mad = max(1.4826 * statistics.median(abs(x - med) for x in makespans), 0.01 * med)
    keep = [abs(x - med) <= k * mad for x in makespans]
    return keep if 2 * sum(keep) > len(keep) else [True] * len(makespans)


def default_fit_steps(recorded: Sequence[int]) -> tuple[int, ...]:
    """The steps fitted when ``--fit-steps`` is not given: all but a held-out tail of
    1/:data:`HELD_OUT_SHARE` of ``recorded`` (at least one step), shortened so that
    :data:`MIN_OUTLIER_STEPS` remain to fit; every step when there are no more than that.

    Example:
        >>> default_fit_steps([1, 2, 3, 4])  # 3 fitted, the last held out
        (1, 2, 3)
        >>> default_fit_steps(range(1, 9))  # a quarter (2 steps) held out
        (1, 2, 3, 4, 5, 6)
        >>> default_fit_steps([1, 2, 3])  # 3 are needed to fit: nothing is left to hold out
        (1, 2, 3)
    """
    steps = tuple(recorded)
    held = min(max(1, len(steps) // HELD_OUT_SHARE), len(steps) - MIN_OUTLIER_STEPS)
    return steps[: len(steps) - max(held, 0)]


def parse_fit_steps(text: str | None, recorded: Sequence[int]) -> tuple[int, ...]:
    """The steps ``--fit-steps TEXT`` names (``"1,2,3"``), or :func:`default_fit_steps` of
    ``recorded`` when not given.

    Example:
        >>> parse_fit_steps("2,3", [1, 2, 3, 4])
        (2, 3)
        >>> parse_fit_steps(None, [1, 2, 3, 4, 5])
        (1, 2, 3, 4)
        >>> parse_fit_steps("two", [1, 2])
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter fit-steps=two: expected step numbers separated by commas, e.g. 1,2,3
    """
    if not text:
        return default_fit_steps(recorded)
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ParameterError("fit-steps", text, "expected step numbers separated by commas, e.g. 1,2,3") from None


def check_fit_steps(steps: Sequence[int], recorded: Sequence[int], held: str) -> None:
    """Refuse fit steps named twice (the fit would weigh them double) or not recorded
    (``held``: what the traces hold, for the message).

    Example:
        >>> check_fit_steps((1, 2), (1, 2, 3), "ProfilerStep 1, 2, 3")
        >>> check_fit_steps((1, 2, 1), (1, 2, 3), "ProfilerStep 1, 2, 3")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter fit-steps=1,2,1: ProfilerStep 1 is named twice; name each step once
        >>> check_fit_steps((4,), (1, 2, 3), "ProfilerStep 1, 2, 3")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter fit-steps=4: not recorded; the traces hold ProfilerStep 1, 2, 3
    """
    twice = sorted({n for n in steps if list(steps).count(n) > 1})
    if twice:
        raise ParameterError(
            "fit-steps", ",".join(map(str, steps)), f"ProfilerStep {twice[0]} is named twice; name each step once"
        )
    unknown = [n for n in steps if n not in recorded]
    if unknown:
        raise ParameterError("fit-steps", ",".join(map(str, unknown)), f"not recorded; the traces hold {held}")


def _steps(n: int) -> str:
    return f"{n} ProfilerStep{'' if n == 1 else 's'}"


def step_notes(recorded: int, checked: int, held_out: int, given: bool) -> list[str]:
    """What ``calibrate --from-trace`` says about its steps: that the ``checked`` fit steps (those
    fitted and those left out as outliers) were too few for the outlier check, and that no step
    was held out to check the fit (``held_out`` = 0) of a trace of ``recorded`` steps; ``given``:
    whether ``--fit-steps`` chose them (else :func:`default_fit_steps`).

    Example:
        >>> step_notes(recorded=2, checked=2, held_out=0, given=False)[0]
        'the traces hold 2 ProfilerSteps, too few for outlier rejection (it needs 3 fit steps): no fit step was checked for a burst of other work; record more steps (measure --profile DIR --steps N)'
        >>> step_notes(recorded=3, checked=3, held_out=0, given=False)
        ['the traces hold 3 ProfilerSteps, all fitted (outlier rejection needs 3): none is left for a held-out check of the preset; record 4 or more (measure --profile DIR --steps N)']
        >>> step_notes(recorded=8, checked=6, held_out=2, given=False)
        []
    """
    notes = []
    if checked < MIN_OUTLIER_STEPS:
        head = f"--fit-steps names {_steps(checked)}" if given else f"the traces hold {_steps(recorded)}"
        fix = (
            f"name {MIN_OUTLIER_STEPS} or more"
            if recorded > MIN_OUTLIER_STEPS  # of 3, all 3 fitted would leave none held out
            else "record more steps (measure --profile DIR --steps N)"
        )
        notes.append(
            f"{head}, too few for outlier rejection (it needs {MIN_OUTLIER_STEPS} fit steps): no fit step was "
            f"checked for a burst of other work; {fix}"
        )
    if not held_out:
        if given:
            notes.append(
                "--fit-steps: every recorded step is fitted or left out as an outlier: none is left for a "
                "held-out check of the preset; name fewer"
            )
        elif recorded:
            notes.append(
                f"the traces hold {_steps(recorded)}, all fitted (outlier rejection needs {MIN_OUTLIER_STEPS}): "
                f"none is left for a held-out check of the preset; record {MIN_OUTLIER_STEPS + 1} or more "
                "(measure --profile DIR --steps N)"
            )
    return notes


__all__ = [
    "HELD_OUT_SHARE",
    "MIN_OUTLIER_STEPS",
    "OUTLIER_MADS",
    "check_fit_steps",
    "default_fit_steps",
    "parse_fit_steps",
    "step_notes",
    "typical_steps",
]
