"""One check function per verifier property: ``check(run) -> Outcome``.

A check reads the call's inputs and shared analyses from its :class:`~.analysis.Run` and says
what it found: the statement proved, its violations, or why it was not checked. The registry
(:mod:`.properties`) lists them in order; :func:`ppverify.verify.verify` runs them in that order.
A statement is kept only when no violation carries the property's rule (whichever analysis found
it), so a check may state its property whenever it raises nothing itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..core.ops import Marker
from ..systems.replica_sync import replica_groups
from . import certify
from .action_placement import has_other_actions
from .analysis import Run
from .grad_sync import applies, check_reduction, check_sharding
from .memory import MAX_PEAK_READ, check_memory
from .report import Violation
from .timing import check_makespan, witness_finish


@dataclass(frozen=True)
class Outcome:
    """What one check found: ``statement`` (what holds, when nothing violates it), its
    ``violations``, ``unchecked`` (why it was not decided) and an optional timing ``witness``.
    All empty: the property does not apply to this schedule (nothing is listed).

    Example:
        >>> Outcome("4 ops").statement, Outcome(unchecked="no cap").violations
        ('4 ops', ())
    """

    statement: str | None = None
    violations: tuple[Violation, ...] = ()
    unchecked: str | None = None
    witness: dict[str, float] | None = None


def completeness(run: Run) -> Outcome:
    """Each required op exactly once, nothing extra (the structural analysis)."""
    st, s = run.structure(), run.schedule
    return Outcome(
        f"each of the {st.num_ops - len(st.bad)} required ops exactly once, nothing extra, "
        f"stages 0..{s.num_stages - 1}, microbatches 0..{s.m - 1}",
        run.once("structure", st.violations),
    )


def placement(run: Run) -> Outcome:
    """Every op, SEND/RECV and marker on its stage's device (the structural analysis)."""
    st = run.structure()
    what = "every op, SEND/RECV and marker" if has_other_actions(run.schedule) else "every op"
    return Outcome(
        f"{what} on its stage's device ({run.schedule.placement.name} placement)",
        run.once("structure", st.violations),
    )


def dependencies(run: Run) -> Outcome:
    """Every edge of the step's DAG holds in program order (the order analysis)."""
    od, arrays = run.order(), run.arrays
    if arrays is not None:
        nedges, split = certify.num_edges(arrays), certify.has_split(arrays)
    else:
        nedges = sum(1 for row in run.dag().pred for q in row if q >= 0)
        split = run.structure().clean.has_split_backward
    wi = ", incl. W after its own I" if split else ""
    return Outcome(
        f"all {nedges} edges of the step's DAG hold in program order{wi}{run.scope()}", run.once("order", od.violations)
    )


def exclusivity(run: Run) -> Outcome:
    """One compute op (or overlapped slot) at a time per device: program order is a chain."""
    return Outcome(
        f"one compute op (or overlapped slot) at a time on each of the {run.schedule.p} devices",
        run.once("order", run.order().violations),
    )


def deadlock(run: Run) -> Outcome:
    """A complete execution exists under the point-to-point semantics (the order analysis)."""
    od = run.order()
    grouped = " (grouped)" if run.comm_semantics == "rendezvous" and run.group else ""
    explicit = (
        "explicit" if od.explicit_comms else "derived (SEND right after the producer, RECV right before the consumer)"
    )
    return Outcome(
        f"a complete execution exists under {run.comm_semantics} point-to-point semantics{grouped}, "
        f"{explicit} SEND/RECV{run.scope()}",
        run.once("order", od.violations),
    )


def reduction(run: Run) -> Outcome:
    """``compute_comms`` files: one REDUCE_GRAD per stage, on its rank, after its last B/W."""
    if not applies(run.schedule):
        return Outcome()
    s, st = run.schedule, run.structure()
    return Outcome(
        f"each of the {s.num_stages} stages reduces its gradients once, on its rank, after its last B/W",
        tuple(check_reduction(st.clean, st.misplaced.stages)),
    )


def sharding(run: Run) -> Outcome:
    """``compute_comms`` files: every compute op between an UNSHARD and the next RESHARD."""
    if not applies(run.schedule):
        return Outcome()
    st = run.structure()
    s = st.clean
    shards = any(isinstance(a, Marker) and a.kind != "REDUCE_GRAD" for prog in s.programs for a in prog)
    what = "every compute op runs on an unsharded stage" if shards else "no UNSHARD/RESHARD: plain (unsharded) stages"
    return Outcome(what, tuple(check_sharding(s, st.misplaced.stages)))


def memory(run: Run) -> Outcome:
    """Activation memory under the cap on every device at every instant (when a cap is given)."""
    cap, costs = run.memory_cap, run.costs
    if cap is None:
        return Outcome(unchecked="no memory cap given (--memory-cap)")
    run.structure()
    t2 = time.perf_counter()
    arrays = run.arrays
    sure = certify.memory_levels(arrays, costs, cap, MAX_PEAK_READ) if arrays is not None else None
    mem_v: list[Violation]
    if sure is not None:
        mem_v, peaks = [], sure[1]
        run.certified.append("memory")
    else:
        mem_v, peaks = check_memory(run.dag(), costs, cap)
    run.timings["memory_s"] = time.perf_counter() - t2
    if mem_v:
        return Outcome(violations=tuple(mem_v))
    from ..core.sizes import format_bytes

    fmt = format_bytes if costs.memory_unit == "bytes" else (lambda x: f"{x:g}")
    pk = f" (peaks {', '.join(fmt(x) for x in peaks)})" if peaks else ""
    cap_txt = fmt(cap) if costs.memory_unit == "bytes" else f"{cap:g} ({costs.memory_unit})"
    return Outcome(f"activation memory <= {cap_txt} on every device at every instant{pk}")


def timing(run: Run) -> Outcome:
    """ "Makespan <= T under the cost model", with a witness timeline (when a claim is given)."""
    bound, costs = run.makespan_le, run.costs
    if bound is None:
        return Outcome(unchecked="no makespan claim given (--makespan-le)")
    if run.structure().violations or run.order().violations:
        return Outcome(unchecked="no execution exists (see the violations above)")
    t3 = time.perf_counter()
    dag = run.dag()
    tv, witness, _ = check_makespan(dag, costs, bound, run.comm, run.sync, run.dp_allreduce)
    run.timings["timing_s"] = time.perf_counter() - t3
    if tv:
        return Outcome(violations=(tv,))
    ms = witness_finish(dag, costs, witness, run.comm, run.sync, run.dp_allreduce) if witness else 0.0
    colls = replica_groups(run.schedule) and run.sync != "none"
    sync = f", replica all-reduce after {run.sync} sync" if colls else ""
    dp = f", data-parallel all-reduce over {run.dp_allreduce} replicas" if run.dp_allreduce >= 2 else ""
    return Outcome(
        f"makespan <= {bound:g} under costs {costs.label or 'given'}{sync}{dp} (witness finishes at {ms:g})",
        witness=witness,
    )
