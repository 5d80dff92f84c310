"""``ppverify measure``'s run as the library sees it: every option checked before any worker
starts (:func:`measure_request`), the run itself (:meth:`MeasureRequest.run`), and what is
reported of it (:meth:`MeasureRequest.report`, :func:`hang_json`, :func:`hang_text`), so that the
command module only reads its arguments and prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..core.costs import CostModel
from ..core.memory_cap import MemoryCap
from ..core.schedule import Schedule
from .hang import MeasureTimeout
from .result import MeasureResult

#: the keyword options of :func:`measure_request`, named as ``measure``'s options are
OPTIONS = (
    "compute",
    "steps",
    "warmup",
    "timeout",
    "seed",
    "format",
    "profile",
    "realtime",
    "memory_cap",
    "system",
    "link_delay",
)


@dataclass(frozen=True)
class MeasureRequest:
    """One checked ``measure`` run: the schedule, its costs (None: the default; ``from_file``: a
    schedule file's own), the memory cap, the ``--system`` preset (and the name it was given by),
    the emulated link delay, the run options, and a note for stderr (``note``, or None).

    Example:
        >>> from ppverify.schedules import build
        >>> r = measure_request(build("1f1b", p=2, m=2), "1f1b")
        >>> r.costs, r.link_delay, r.steps, r.note
        (None, 0.0, 3, None)
    """

    schedule: Schedule
    costs: CostModel | dict[str, float] | None = None
    from_file: bool = False
    cap: MemoryCap | None = None
    system: Any = None
    system_name: str | None = None
    link_delay: float = 0.0
    compute: str = "sleep"
    steps: int = 3
    warmup: int = 1
    timeout: float = 60.0
    seed: int = 0
    format: str | None = None
    profile: str | None = None
    realtime: bool = False
    note: str | None = None

    def run(self) -> MeasureResult:
        """Run it (:func:`~ppverify.measure.measure`); a hang raises :class:`MeasureTimeout`.

        Example:
            >>> measure_request(build("1f1b", p=2, m=2), "1f1b").run().grad_check.ok  # doctest: +SKIP
            True
        """
        from . import measure

        res = measure(
            self.schedule,
            self.costs,
            compute=self.compute,
            steps=self.steps,
            warmup=self.warmup,
            timeout=self.timeout,
            seed=self.seed,
            format=self.format,
            profile=self.profile,
            link_delay=self.link_delay,
            realtime=self.realtime,
        )
        return replace(res, costs_from="file") if self.from_file else res

    def report(self, result: MeasureResult) -> dict[str, Any]:
        """``measure --json``'s figures of ``result``: :func:`~ppverify.measure.summary.measure_report`,
        the memory cap's verdict, how the run was taken (real-time priority, profile directory).

        Example:
            >>> sorted(request.report(result))[:3]  # doctest: +SKIP
            ['bubble_ratio_measured', 'bubble_ratio_predicted', 'compute']
        """
        from .summary import measure_report, measured_cap_check

        rep = measure_report(self.schedule, result, self.system, self.system_name)
        rep.update((measured_cap_check(result, self.cap) if self.cap is not None else None) or {})
        rep["realtime"] = self.realtime  # how the run was taken: its timings depend on it
        if self.profile:
            rep["profile"] = self.profile
        return rep


def measure_request(
    schedule: Schedule,
    path: str,
    pairs: dict[str, float] | None = None,
    *,
    memory_cap: str | None = None,
    system: str | None = None,
    link_delay: float | None = None,
    **run: Any,
) -> MeasureRequest:
    """Check every option of a ``measure`` run of ``schedule`` (read from ``path``, a family name
    or a file) before any worker process starts, and return the run. ``pairs``: the ``--costs``
    (None or empty: a JSON schedule file's own costs under sleep, else the default); ``run``: the
    options of :class:`MeasureRequest` (``compute``, ``steps``, ...).

    Example:
        >>> from ppverify.schedules import build
        >>> measure_request(build("1f1b", p=2, m=2), "1f1b", {"F": 0.01}, link_delay=1e-9).link_delay
        1e-09
        >>> measure_request(build("1f1b", p=2, m=2), "1f1b", steps=0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter steps=0: must be an integer in 1..10000
    """
    from ..systems.system import link_delay_of, load_system
    from .options import check_link_delay, check_run_options, file_comm_note, file_costs
    from .summary import measure_cap

    compute = run.get("compute", "sleep")
    # None: a saved schedule's own costs (as simulate times the file), else the default (real compute: the measured ops)
    from_file = file_costs(path, schedule) if not pairs and compute == "sleep" else None
    cap = measure_cap(memory_cap, schedule)
    preset = load_system(system) if system else None  # a bad preset fails before any process starts
    req = MeasureRequest(schedule, dict(pairs) if pairs else from_file, from_file is not None, cap, preset, system)
    req = replace(req, **run)
    check_run_options(req.steps, req.warmup, req.timeout, req.seed)
    delay = link_delay if link_delay is not None else link_delay_of(preset)
    check_link_delay(delay)
    # simulate of the file charges its communication: say why this prediction does not
    return replace(req, link_delay=delay, note=file_comm_note(path) if link_delay is None else None)


def hang_json(schedule: Schedule, exc: MeasureTimeout) -> dict[str, Any]:
    """``measure --json``'s answer when the run timed out.

    Example:
        >>> from ppverify.schedules import build
        >>> hang_json(build("1f1b", p=2, m=2), MeasureTimeout(2.0, {0: "0F1"}, idle=1.5))["still_running"]
        False
    """
    return {
        "schedule": schedule.describe(),
        "hang": str(exc),
        "blocked": exc.blocked,
        "timeout": exc.timeout,
        "still_running": exc.still_running,  # slow, not stuck: the timeout ended a moving run
    }


def hang_text(schedule: Schedule, exc: MeasureTimeout) -> str:
    """``measure``'s text when the run timed out.

    Example:
        >>> from ppverify.schedules import build
        >>> print(hang_text(build("1f1b", p=2, m=2), MeasureTimeout(2.0, {0: "0F1"}, idle=1.5)))
        schedule      1f1b p=2 m=2
        hang: no progress within 2 s; rank 0 blocked in 0F1
        all worker processes stopped
    """
    return f"schedule      {schedule.describe()}\n{exc}\nall worker processes stopped"


__all__ = ["OPTIONS", "MeasureRequest", "hang_json", "hang_text", "measure_request"]
