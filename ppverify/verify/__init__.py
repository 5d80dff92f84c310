"""Z3 verification of pipeline schedules: prove a schedule correct, or explain why not.

:func:`verify` decides, with Z3, every property of one training step's schedule:

1. completeness and placement (:mod:`.structure`): ground rules over the ops as written;
2. dependencies, exclusivity and deadlock freedom (:mod:`.order`, :mod:`.comm_model`): one
   difference-logic problem over logical times, under ``buffered`` or ``rendezvous``
   point-to-point semantics, with explicit or derived SEND/RECV;
3. for a ``compute_comms`` file, gradient reduction and sharding (:mod:`.grad_sync`): one
   REDUCE_GRAD per stage after its last B/W, every op on an unsharded stage;
4. for a PyTorch pipelining CSV, the two rules PyTorch's runtime adds (:mod:`.runtime_rules`):
   the last stage's forwards in microbatch order, and (``compute_comms``) each rank's messages to
   another in the order that rank receives them, which the order problem then matches in posting
   order, as the runtime does; any other one-pipe schedule that breaks the first gets a note;
5. memory under a cap (:mod:`.memory`), when a cap is given;
6. a timing claim "makespan <= T under cost model C" (:mod:`.timing`), when one is given: the
   ``async`` engine's timing, collectives included (``sync``, ``dp_allreduce``).

Each violation carries a minimized unsat core: the ops that explain it. Ops that break a
structural rule are set aside before the order checks, so one fault is reported once.

A property that holds is settled first by a checked certificate (:mod:`.certify`: numpy over the
DAG arrays, a topological witness for the order problem, prefix sums for memory); Z3 runs where a
certificate is missing, i.e. where something fails, and decides it exactly as without them (same
verdicts, same cores); ``certificates=False`` runs Z3 on every property.
:mod:`.prove` proves closed-form schedules for all sizes.

The properties form one ordered registry (:mod:`.properties`): each entry's check
(:mod:`.checks`) reads the analyses it needs from a :class:`~.analysis.Run`, which computes each
shared analysis once. :func:`verify` runs the entries in order and assembles the report.
"""

from __future__ import annotations

import math
import time

from ..core.comm import NO_COMM, SYNC_MODES, CommModel
from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.schedule import Schedule
from ..core.time_limit import check_time
from ..schedules.family_checks import described
from . import properties
from .analysis import Run, clean_schedule
from .comm_model import COMM_SEMANTICS
from .properties import PROPERTIES, Property
from .report import Report, Violation
from .runtime_rules import runtime_note


def _finite(x: object) -> bool:
    """Whether ``x`` is a finite real number (not a bool, NaN or an infinity)."""
    try:
        return not isinstance(x, bool) and math.isfinite(float(x))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


__all__ = ["COMM_SEMANTICS", "PROPERTIES", "Property", "Report", "Violation", "clean_schedule", "verify"]


def verify(
    schedule: Schedule,
    costs: CostModel | None = None,
    comm: CommModel | None = None,
    memory_cap: float | None = None,
    makespan_le: float | None = None,
    comm_semantics: str = "buffered",
    group: bool = True,
    max_violations: int = 20,
    certificates: bool = True,
    sync: str = "eager",
    dp_allreduce: int = 0,
    pytorch: bool = False,
) -> Report:
    """Verify one schedule: run the check of every property of the registry
    (:data:`.properties.REGISTRY`), in order; see the module doc for the properties.

    ``costs`` (default: unit slots) sets the memory amounts and the durations of a timing claim;
    ``comm`` the transfer times of a timing claim (default none); ``sync`` and ``dp_allreduce`` its
    collectives, as the engines and ``simulate --sync/--dp-allreduce`` take them (default: the
    replica all-reduce of a two-pipe placement after each stage's last backward, no data-parallel
    all-reduce), so the least T that holds is the ``async`` engine's makespan. ``certificates`` (default on)
    settles properties that hold with checked witnesses (:mod:`.certify`) and runs Z3 only where
    one fails; off, Z3 decides every property. Verdicts and cores are the same either way.
    ``pytorch``: the schedule was read from a PyTorch pipelining CSV, so the rules of PyTorch's
    runtime are properties of it (``pytorch-loss-order``, ``pytorch-message-order``); for any
    other schedule, one that breaks the loss order gets ``runtime_note`` and its verdict is kept.

    Example:
        >>> from ppverify.schedules import build
        >>> r = verify(build("1f1b", p=4, m=8), memory_cap=4)
        >>> r.valid, [p for p, _ in r.proved]
        (True, ['completeness', 'placement', 'dependencies', 'exclusivity', 'deadlock', 'memory'])
        >>> from ppverify.core.ops import Op
        >>> s = build("1f1b", p=2, m=2)
        >>> F0, B0, F1, B1 = (Op(k, 0, mb) for k, mb in (("F", 0), ("B", 0), ("F", 1), ("B", 1)))
        >>> bad = s.with_programs(((F0, B0, F1, B1), (F0._replace(stage=1), F1._replace(stage=1), B0._replace(stage=1), B1._replace(stage=1))))
        >>> print(verify(bad).violations[0].to_text())
        deadlock: rank 1 waits in 1F1 for rank 0, which waits in 0B0 for rank 1 [backward after the next stage's backward; forward after the previous stage's forward; core: 0B0 0F1 1F1 1B0]
    """
    if sync not in SYNC_MODES:
        raise ParameterError("sync", sync, f"expected one of {', '.join(SYNC_MODES)}")
    if isinstance(dp_allreduce, bool) or not isinstance(dp_allreduce, int) or dp_allreduce < 0:
        raise ParameterError("dp-allreduce", dp_allreduce, "must be an integer >= 0 (data-parallel replicas)")
    if isinstance(max_violations, bool) or not isinstance(max_violations, int) or max_violations < 1:
        # none to find would leave a deadlock without a violation: a false VALID
        raise ParameterError("max-violations", max_violations, "must be >= 1 (order violations to find)")
    if comm_semantics not in COMM_SEMANTICS:
        raise ParameterError("comm semantics", comm_semantics, f"expected one of {', '.join(COMM_SEMANTICS)}")
    # finite (an infinite cap or bound is no claim, and no exact rational: use none, or leave it
    # out); a cap of 0 would let no op start, and is refused as --memory-cap 0 is
    if memory_cap is not None and not (_finite(memory_cap) and memory_cap > 0):
        raise ParameterError("memory cap", memory_cap, "must be a finite number > 0 (None: no cap)")
    if makespan_le is not None and not (_finite(makespan_le) and makespan_le >= 0):
        raise ParameterError("makespan bound", makespan_le, "must be a finite number >= 0 (None: no timing claim)")
    t0 = time.perf_counter()
    costs = costs or CostModel.unit(schedule.placement)
    if costs.num_stages != schedule.num_stages:
        raise ParameterError(
            "costs",
            f"{costs.num_stages} stages",
            f"the cost model must describe the schedule's {schedule.num_stages} stages",
        )
    run = Run(
        schedule,
        costs,
        comm or NO_COMM,
        memory_cap,
        makespan_le,
        comm_semantics,
        group,
        max_violations,
        certificates,
        sync=sync,
        dp_allreduce=dp_allreduce,
        pytorch=pytorch,
        t0=t0,
    )
    proved: list[tuple[str, str]] = []
    violations: list[Violation] = []
    unchecked: list[tuple[str, str]] = []
    witness = None
    rules: dict[str, str] = {}
    for prop in properties.REGISTRY:
        check_time()  # the --time-limit in force, between properties (a cooperative check)
        out = prop.check(run)
        violations += out.violations
        if out.statement is not None:
            proved.append((prop.name, out.statement))
            rules[prop.name] = prop.rule
        if out.unchecked is not None:
            unchecked.append((prop.name, out.unchecked))
        if out.witness is not None:
            witness = out.witness
    failed = {v.prop for v in violations}
    proved = [(p, w) for p, w in proved if rules[p] not in failed]  # e.g. a SEND matching no transfer
    stats = run.stats(proved)
    return Report(
        described(schedule, run.structure().clean),
        tuple(proved),
        tuple(violations),
        tuple(unchecked + run.notes),
        witness,
        stats,
        runtime_note=None if pytorch else runtime_note(schedule),
    )
