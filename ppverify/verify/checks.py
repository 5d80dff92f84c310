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
from . import certify
from .action_placement import has_other_actions
from .analysis import Run
from .grad_sync import applies, check_reduction, check_sharding
from .memory import MAX_PEAK_READ, check_memory, frees_before_forward
from .report import Violation
from .timing import check_makespan, claim_texts, timing_model, unit_suffix


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
    """Each required op exactly once, nothing extra (the structural analysis).

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> completeness(Run(s, CostModel.unit(s.placement), NO_COMM)).statement
        'each of the 8 required ops exactly once, nothing extra, stages 0..1, microbatches 0..1'
        >>> dropped = s.with_programs((s.programs[0][:-1], s.programs[1]))
        >>> [v.message for v in completeness(Run(dropped, CostModel.unit(s.placement), NO_COMM)).violations]
        ['op 0B1 is missing (should run on device 0)']
    """
    st, s = run.structure(), run.schedule
    # kept only when no completeness violation: every op written is then a required op, once,
    # including one set aside as misplaced (present, on the wrong device: a placement fault)
    return Outcome(
        f"each of the {st.num_ops} required ops exactly once, nothing extra, "
        f"stages 0..{s.num_stages - 1}, microbatches 0..{s.m - 1}",
        run.once("structure", st.violations),
    )


def placement(run: Run) -> Outcome:
    """Every op, SEND/RECV and marker on its stage's device (the structural analysis).

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> placement(Run(s, CostModel.unit(s.placement), NO_COMM)).statement
        "every op on its stage's device (linear placement)"
        >>> moved = s.with_programs((s.programs[0][:-1], s.programs[1] + s.programs[0][-1:]))
        >>> [v.message for v in placement(Run(moved, CostModel.unit(s.placement), NO_COMM)).violations]
        ['op 0B1 is on device 1 but stage 0 of pipe 0 lives on device 0']
    """
    st = run.structure()
    what = "every op, SEND/RECV and marker" if has_other_actions(run.schedule) else "every op"
    return Outcome(
        f"{what} on its stage's device ({run.schedule.placement.name} placement)",
        run.once("structure", st.violations),
    )


def dependencies(run: Run) -> Outcome:
    """Every edge of the step's DAG holds in program order (the order analysis).

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> dependencies(Run(s, CostModel.unit(s.placement), NO_COMM)).statement
        "all 8 edges of the step's DAG hold in program order"
        >>> p1 = s.programs[1]
        >>> swapped = s.with_programs((s.programs[0], (p1[1], p1[0], *p1[2:])))
        >>> [v.message for v in dependencies(Run(swapped, CostModel.unit(s.placement), NO_COMM)).violations]
        ['device 1 runs 1B0 before 1F0, which it needs']
    """
    od, arrays = run.order(), run.arrays
    if arrays is not None:
        nedges, split = certify.num_edges(arrays), certify.has_split(arrays)
    else:
        nedges = sum(1 for row in run.dag().pred for q in row if q >= 0)
        split = run.structure().clean.has_split_backward
    wi = ", incl. W after its own I" if split else ""
    # matched in posting order, a cross-rank edge is ordered up to its SEND and from its RECV:
    # what travels between them is pytorch-message-order's to say
    via = ", each edge across ranks through the SEND and RECV named for it" if run.posting_order() else ""
    return Outcome(
        f"all {nedges} edges of the step's DAG hold in program order{wi}{via}{run.scope()}",
        run.once("order", od.violations),
    )


def exclusivity(run: Run) -> Outcome:
    """One compute op (or overlapped slot) at a time per device: program order is a chain.

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> exclusivity(Run(s, CostModel.unit(s.placement), NO_COMM)).statement
        'one compute op (or overlapped slot) at a time on each of the 2 devices'

        The order analysis is shared: each fault it finds is reported once, by the first check to ask.

        >>> p1 = s.programs[1]
        >>> run = Run(s.with_programs((s.programs[0], (p1[1], p1[0], *p1[2:]))), CostModel.unit(s.placement), NO_COMM)
        >>> len(dependencies(run).violations), exclusivity(run).violations
        (1, ())
    """
    return Outcome(
        f"one compute op (or overlapped slot) at a time on each of the {run.schedule.p} devices",
        run.once("order", run.order().violations),
    )


def deadlock(run: Run) -> Outcome:
    """A complete execution exists under the point-to-point semantics (the order analysis).

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> deadlock(Run(s, CostModel.unit(s.placement), NO_COMM)).violations
        ()
        >>> bad = s.with_programs(tuple(tuple(prog[i] for i in (0, 2, 1, 3)) for prog in s.programs))
        >>> [[str(op) for op in prog] for prog in bad.programs]
        [['0F0', '0B0', '0F1', '0B1'], ['1F0', '1F1', '1B0', '1B1']]
        >>> [v.message for v in deadlock(Run(bad, CostModel.unit(s.placement), NO_COMM)).violations]
        ['rank 1 waits in 1F1 for rank 0, which waits in 0B0 for rank 1']

        An op before its own input on one device is the dependencies' violation; no complete
        execution exists, so deadlock freedom is not stated:

        >>> p1 = s.programs[1]
        >>> inv = s.with_programs((s.programs[0], (p1[1], p1[0], *p1[2:])))
        >>> deadlock(Run(inv, CostModel.unit(s.placement), NO_COMM)).unchecked
        'no complete execution exists: device 1 runs 1B0 before 1F0, which it needs, so it never gets past 1B0 (see dependencies)'
    """
    od = run.order()
    grouped = " (grouped)" if run.comm_semantics == "rendezvous" and run.group else ""
    explicit = (
        "explicit" if od.explicit_comms else "derived (SEND right after the producer, RECV right before the consumer)"
    )
    how = f"{explicit} SEND/RECV"
    if od.lowered:  # a compute_only PyTorch file: what its runtime runs, as `import` verifies it
        how = (
            "SEND/RECV placed by PyTorch's lowering (SEND right after the producer, RECV posted early: "
            "where the receiving rank stands when the SEND is placed)"
        )
    if run.posting_order():  # the names cross: the runtime pairs the messages as posted, not by name
        how = "explicit SEND/RECV matched in posting order, as PyTorch's runtime matches them"
    found = run.once("order", od.violations)
    inverted = [v for v in od.violations if v.prop == "dependencies"]
    if inverted and not any(v.prop == "deadlock" for v in od.violations):
        # an op before its own input on one device is a wait that never ends there: no complete
        # execution exists, though no cycle of waits crosses ranks (that cycle is dependencies')
        more = f"; {len(inverted) - 1} more such violation(s)" if len(inverted) > 1 else ""
        return Outcome(
            violations=found,
            unchecked=f"no complete execution exists: {inverted[0].message}, so it never gets past "
            f"{inverted[0].ops[0]} (see dependencies{more})",
        )
    return Outcome(
        f"a complete execution exists under {run.comm_semantics} point-to-point semantics{grouped}, {how}{run.scope()}",
        found,
    )


def reduction(run: Run) -> Outcome:
    """``compute_comms`` files: one REDUCE_GRAD per stage, on its rank, after its last B/W.

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rank1 = ["1RECV_F0", "1F0", "1B0", "1SEND_B0", "1REDUCE_GRAD"]
        >>> s = parse_rows([["0F0", "0SEND_F0", "0RECV_B0", "0B0", "0REDUCE_GRAD"], rank1])
        >>> reduction(Run(s, CostModel.unit(s.placement), NO_COMM)).statement
        'each of the 2 stages reduces its gradients once, on its rank, after its last B/W'
        >>> s = parse_rows([["0F0", "0SEND_F0", "0RECV_B0", "0B0"], rank1])
        >>> [v.message for v in reduction(Run(s, CostModel.unit(s.placement), NO_COMM)).violations]
        ["stage 0's gradients are never reduced (no 0REDUCE_GRAD on rank 0 after 0B0): PyTorch's runtime never runs the stage's gradient reduction step"]
    """
    if not applies(run.schedule):
        return Outcome()
    s, st = run.schedule, run.structure()
    return Outcome(
        f"each of the {s.num_stages} stages reduces its gradients once, on its rank, after its last B/W",
        tuple(check_reduction(st.clean, st.misplaced.stages)),
    )


def sharding(run: Run) -> Outcome:
    """``compute_comms`` files: every compute op between an UNSHARD and the next RESHARD.

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rank1 = ["1RECV_F0", "1F0", "1B0", "1SEND_B0", "1REDUCE_GRAD"]
        >>> s = parse_rows([["0F0", "0SEND_F0", "0RECV_B0", "0B0", "0REDUCE_GRAD"], rank1])
        >>> sharding(Run(s, CostModel.unit(s.placement), NO_COMM)).statement
        'no UNSHARD/RESHARD: plain (unsharded) stages'
        >>> s = parse_rows([["0UNSHARD", "0F0", "0SEND_F0", "0RECV_B0", "0B0", "0RESHARD", "0REDUCE_GRAD"], rank1])
        >>> [v.message for v in sharding(Run(s, CostModel.unit(s.placement), NO_COMM)).violations]
        ['rank 1 runs 1F0 while stage 1 is sharded (no 1UNSHARD on rank 1)']
    """
    if not applies(run.schedule):
        return Outcome()
    st = run.structure()
    s = st.clean
    shards = any(isinstance(a, Marker) and a.kind != "REDUCE_GRAD" for prog in s.programs for a in prog)
    what = "every compute op runs on an unsharded stage" if shards else "no UNSHARD/RESHARD: plain (unsharded) stages"
    return Outcome(what, tuple(check_sharding(s, st.misplaced.stages)))


def memory(run: Run) -> Outcome:
    """Activation memory under the cap on every device at every instant (when a cap is given).

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> memory(Run(s, CostModel.unit(s.placement), NO_COMM, memory_cap=2)).statement
        'activation memory <= 2 (activations) on every device at every instant (peaks 2, 1)'
        >>> [v.message for v in memory(Run(s, CostModel.unit(s.placement), NO_COMM, memory_cap=1)).violations]
        ['device 0 holds 2 activations when 0F1 starts (cap 1)']
        >>> memory(Run(s, CostModel.unit(s.placement), NO_COMM)).unchecked
        'no memory cap given (--memory-cap)'
    """
    cap, costs = run.memory_cap, run.costs
    if cap is None:
        return Outcome(unchecked="no memory cap given (--memory-cap)")
    run.structure()
    if any(v.prop == "dependencies" for v in run.order().violations):
        # a backward before its own forward frees what its device does not hold: the levels
        # counted past it are too low, so no bound on that device is proved (as deadlock says)
        early = frees_before_forward(run.dag(), costs)
        if early:
            d, op, fwd = early[0]
            more = f"; {len(early) - 1} more device(s) alike" if len(early) > 1 else ""
            return Outcome(
                unchecked=f"device {d} runs {op} before {fwd}, so it would free an activation it does not "
                f"hold yet (see dependencies{more})"
            )
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
    from .memory import memory_statement

    # like the order statements: a peak over the ops left once some were set aside (a missing B
    # frees nothing, a missing F allocates nothing) is no statement about the file as written
    return Outcome(memory_statement(cap, peaks, costs, run.schedule.placement) + run.scope())


def timing(run: Run) -> Outcome:
    """ "Makespan <= T under the cost model", with a witness timeline (when a claim is given).

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> out = timing(Run(s, CostModel.unit(s.placement), NO_COMM, makespan_le=6))
        >>> out.statement, out.witness["0B1"]
        ('makespan <= 6 units under costs unit with no comm delay, async engine (witness finishes at 6 units)', 5.0)
        >>> print(timing(Run(s, CostModel.unit(s.placement), NO_COMM, makespan_le=5)).violations[0].message)
        no execution of these programs finishes by 5 units under costs unit with no comm delay, async engine (Z3: infeasible; the core's ops lie on a chain of dependencies and program order longer than 5 units; for reference the earliest finish is 6 units)
    """
    bound, costs = run.makespan_le, run.costs
    if bound is None:
        return Outcome(unchecked="no makespan claim given (--makespan-le)")
    if run.structure().violations or run.order().violations:
        return Outcome(unchecked="no execution exists (see the violations above)")
    t3 = time.perf_counter()
    dag = run.dag()
    # timed by the async engine, buffered sends, whatever semantics the deadlock check used: the
    # statement says so when they differ (a rendezvous step can take longer)
    tv, witness, _, finish = check_makespan(dag, costs, bound, run.comm, run.sync, run.dp_allreduce, run.comm_semantics)
    run.timings["timing_s"] = time.perf_counter() - t3
    if tv:
        return Outcome(violations=(tv,))
    model = timing_model(costs, run.comm, run.schedule, run.sync, run.dp_allreduce, run.comm_semantics)
    # both numbers in the costs' unit (seconds with presets: a bound copied from simulate's ms
    # would read 1000x too loose), T as typed, the witness's exact finish by the same rule
    shown = claim_texts(bound, finish, unit_suffix(costs))
    return Outcome(f"makespan <= {shown[0]} under {model} (witness finishes at {shown[1]})", witness=witness)
