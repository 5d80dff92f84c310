"""A measured run's preparation, before any worker process starts: the :class:`~ppverify.measure.jobs.Job`
each schedule becomes (its CSV rows for PyTorch's runtime, its sleeps, its model), and the checks
that refuse, in one line, a run that could not succeed: a step whose ops are not complete
(:func:`check_complete`), a CSV flavour that would not be used
(:func:`check_format`), a schedule PyTorch cannot run or load in time
(:mod:`~ppverify.io.torch_rules`, :mod:`.load_size`), sleeps that outlast the timeout
(:func:`check_run_fits`), a profile directory that cannot hold the traces (:func:`check_profile_dir`).
"""

from __future__ import annotations

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from .jobs import Job
from .load_size import check_load_size
from .stages import ModelSpec


def job_for(
    schedule: Schedule,
    costs: CostModel,
    compute: str,
    steps: int,
    warmup: int,
    record: bool,
    seed: int,
    format: str | None,
    profile: str | None = None,
    link_delay: float = 0.0,
) -> Job:
    """The :class:`~ppverify.measure.jobs.Job` of one schedule, every input checked first (the
    flavour, steps and warm-up, the rules of PyTorch's runtime, the loader's size limit).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.measure.result import seconds_costs
        >>> s = build("1f1b", p=2, m=2)
        >>> j = job_for(s, seconds_costs(s, None), "sleep", 3, 1, True, 0, None)
        >>> j.format, j.rows[0], j.durations["F"]
        ('compute_only', ['0F0', '0F1', '0B0', '0B1'], (0.01, 0.01))
    """
    from ..core.ops import format_action
    from ..io.torch_csv import COMPUTE_COMMS, COMPUTE_ONLY, FLAVOURS, to_rows
    from ..io.torch_rules import check_runnable

    if format is not None and format not in FLAVOURS:
        raise ParameterError("format", format, f"expected one of {', '.join(FLAVOURS)}")
    if steps < 1:
        raise ParameterError("steps", steps, "must be >= 1")
    if warmup < 0:
        raise ParameterError("warmup", warmup, "must be >= 0")
    check_complete(schedule)  # first: a missing op would read as a loss-order or PyTorch assertion error
    from ..core.lowering import runs_as_written

    lowered = runs_as_written(schedule)  # a compute_comms file runs as written, SEND/RECV or not
    if lowered and schedule.placement.num_pipes == 1:
        check_transfers_written(schedule)
    check_format(schedule, format, lowered)
    check_runnable(schedule)  # before any worker: PyTorch's own failure would be an autograd error
    rows: list[list[str]] = []
    if schedule.placement.num_pipes > 1:
        format = COMPUTE_ONLY  # no CSV: the two-pipe runner runs the programs themselves
    elif lowered:
        # an already lowered schedule (a compute_comms file) runs exactly as written
        format = COMPUTE_COMMS
        rows = [[format_action(a) for a in prog if a is not None] for prog in schedule.programs]
    else:
        format = format or COMPUTE_ONLY
        rows = to_rows(schedule, format)
        check_load_size(schedule, rows, format)  # PyTorch's lowering of a long row takes minutes
    # real compute takes the time it takes: the costs then only serve the prediction
    durations = {k: tuple(float(x) if compute == "sleep" else 0.0 for x in v) for k, v in costs.duration.items()}
    spec = ModelSpec.for_compute(compute, seed)
    return Job(schedule, rows, format, durations, spec, steps, warmup, record, profile, link_delay)


def check_transfers_written(schedule: Schedule) -> None:
    """Refuse, before any worker starts, a schedule PyTorch's runtime runs as written (SEND/RECV in
    its rows, or a ``compute_comms`` file's markers) whose transfers are not all written: the
    runtime would stop on ``Computing action=1F0 before receiving input`` (or hang) after the
    workers' start-up.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> check_transfers_written(parse_rows([["0F0", "0B0", "0REDUCE_GRAD"], ["1F0", "1B0", "1REDUCE_GRAD"]], "mk.csv"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedule=mk.csv p=2 m=1 format=compute_comms placement=linear: 0SEND_F0 is missing (rank 0, after 0F0); 1RECV_F0 is missing (rank 1, before 1F0); 1SEND_B0 is missing (rank 1, after 1B0); 0RECV_B0 is missing (rank 0, before 0B0): PyTorch's runtime runs a compute_comms file as written; `ppverify verify FILE` names each with its rule
    """
    from ..core.lowering import comm_problems

    _refuse(schedule, comm_problems(schedule), "PyTorch's runtime runs a compute_comms file as written", "")


def check_complete(schedule: Schedule) -> None:
    """Refuse a schedule whose ops are not exactly one step's (an op missing, twice, on the wrong
    rank, a B beside I/W of the same stage and microbatch: what ``verify`` reports as completeness
    and placement), naming the ops, before any worker starts: PyTorch's runtime would fail on it
    with its own assertion (``Got 2 ... FORWARD microbatches for stage 1, expected 3``) or a bare
    ``KeyError``, after the workers' start-up.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> check_complete(parse_rows([["0F0", "0F1", "0B0", "0I1", "0W1"]], "ok.csv"))
        >>> check_complete(parse_rows([["0F0", "0F1", "0B0"]], "m2.csv"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedule=m2.csv p=1 m=2 format=compute_only placement=linear: op 0B1 is missing (should run on device 0): PyTorch's runtime cannot run a step whose ops are missing, doubled or misplaced; `ppverify verify FILE -m 2` names each with its rule
    """
    from ..core.dag import structural_problems

    why = "PyTorch's runtime cannot run a step whose ops are missing, doubled or misplaced"
    _refuse(schedule, structural_problems(schedule, limit=11), why, f" -m {schedule.m}")


def _refuse(schedule: Schedule, problems: list[str], why: str, verify_options: str) -> None:
    """Refuse ``schedule`` for the first ten of ``problems`` (none: nothing to refuse), saying
    ``why`` the runtime cannot run it and which ``verify`` names each with its rule."""
    if problems:
        more = " (and more)" if len(problems) > 10 else ""
        raise ParameterError(
            "schedule",
            schedule.describe(),
            "; ".join(problems[:10])
            + f"{more}: {why}; `ppverify verify FILE{verify_options}` names each with its rule",
        )


def check_run_fits(
    name: str,
    step_s: float | None,
    steps: int,
    warmup: int,
    timeout: float,
    advice: str = "raise --timeout or lower the costs",
) -> None:
    """Refuse a sleeping run whose predicted steps (``warmup + steps`` of ``step_s`` seconds each)
    outlast ``timeout``: the watchdog, which allows each schedule's whole run ``timeout`` seconds,
    would stop it and report a hang, a negative verdict on a schedule that only sleeps long.
    ``advice`` ends the message (``calibrate``'s runs sleep fixed costs: only the timeout can move).

    Example:
        >>> check_run_fits("1f1b p=2 m=2", 4.5, 1, 1, 60.0)
        >>> check_run_fits("1f1b p=2 m=2", 4.5, 1, 1, 5.0)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter timeout=5: 1f1b p=2 m=2's 2 steps (1 warm-up) sleep about 9 s by the prediction (4.5 s a step), longer than the timeout, after which a run counts as hung: raise --timeout or lower the costs
    """
    if step_s is None or not step_s * (steps + warmup) > timeout:
        return
    raise ParameterError(
        "timeout",
        f"{timeout:g}",
        f"{name}'s {steps + warmup} steps ({warmup} warm-up) sleep about {step_s * (steps + warmup):.3g} s by the "
        f"prediction ({step_s:.3g} s a step), longer than the timeout, after which a run counts as hung: " + advice,
    )


def check_format(schedule: Schedule, format: str | None, lowered: bool) -> None:
    """Refuse a CSV flavour the run would not use: two-pipe schedules run on ppverify's own
    runner, which reads no CSV, and a lowered schedule (its programs hold SEND/RECV: a
    ``compute_comms`` file) runs as written, never re-lowered by PyTorch. None: no flavour given.

    Example:
        >>> from ppverify.schedules import build
        >>> check_format(build("1f1b", p=2, m=2), "compute_comms", False)
        >>> check_format(build("chimera", p=2, m=2), "compute_comms", False)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter format=compute_comms: chimera p=2 m=2 runs on ppverify's two-pipe runner, which reads no CSV (PyTorch's runtime cannot run two pipes): leave --format out
    """
    if format is None:
        return
    if schedule.placement.num_pipes > 1:
        raise ParameterError(
            "format",
            format,
            f"{schedule.describe()} runs on ppverify's two-pipe runner, which reads no CSV (PyTorch's runtime "
            "cannot run two pipes): leave --format out",
        )
    if lowered and format != "compute_comms":
        raise ParameterError(
            "format",
            format,
            f"{schedule.describe()} already holds its SEND/RECV actions (a compute_comms file), which PyTorch's "
            "runtime runs as written: leave --format out, or give compute_comms",
        )


def check_profile_dir(directory: str, schedules: int, p: int) -> None:
    """Refuse a ``--profile`` directory before any worker starts: one schedule per trace directory,
    a directory to write into, and no trace of an earlier, wider run that would mix with this one's;
    create it.

    Example:
        >>> check_profile_dir("/tmp/x", 2, 2)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter profile=/tmp/x: records one schedule per directory; 2 were given
    """
    import re
    from pathlib import Path

    if schedules != 1:
        raise ParameterError("profile", directory, f"records one schedule per directory; {schedules} were given")
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise ParameterError("profile", directory, "is a file; expected a directory for the per-rank traces")
    # this run overwrites rank0..rank<p-1>; a higher rank's trace of an earlier, wider run would stay
    # and mix two jobs in one directory, which import-trace and calibrate --from-trace then refuse
    stale = sorted(
        (int(mt.group(1)), f.name)
        for f in (path.iterdir() if path.is_dir() else ())
        if (mt := re.fullmatch(r"rank(\d+)\.pt\.trace\.json", f.name)) and int(mt.group(1)) >= p
    )
    if stale:
        raise ParameterError(
            "profile",
            directory,
            f"holds {stale[0][1]}, a trace of an earlier run with more ranks than this one's {p}: its traces would "
            "mix with this run's; give an empty directory or remove it",
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError("profile", directory, f"cannot create the directory ({exc.strerror})") from None


__all__ = ["check_complete", "check_format", "check_profile_dir", "check_run_fits", "job_for"]
