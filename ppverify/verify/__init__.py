"""Z3 verification of pipeline schedules: prove a schedule correct, or explain why not.

:func:`verify` decides, with Z3, every property of one training step's schedule:

1. completeness and placement (:mod:`.structure`): ground rules over the ops as written;
2. dependencies, exclusivity and deadlock freedom (:mod:`.order`, :mod:`.comm_model`): one
   difference-logic problem over logical times, under ``buffered`` or ``rendezvous``
   point-to-point semantics, with explicit or derived SEND/RECV;
3. for a ``compute_comms`` file, gradient reduction and sharding (:mod:`.grad_sync`): one
   REDUCE_GRAD per stage after its last B/W, every op on an unsharded stage;
4. memory under a cap (:mod:`.memory`), when a cap is given;
5. a timing claim "makespan <= T under cost model C" (:mod:`.timing`), when one is given.

Each violation carries a minimized unsat core: the ops that explain it. Ops that break a
structural rule are set aside before the order checks, so one fault is reported once.

A property that holds is settled first by a checked certificate (:mod:`.certify`: numpy over the
DAG arrays, a topological witness for the order problem, prefix sums for memory); Z3 runs where a
certificate is missing, i.e. where something fails, and decides it exactly as without them (same
verdicts, same cores); ``certificates=False`` runs Z3 on every property.
:mod:`.prove` proves closed-form schedules for all sizes.
"""

from __future__ import annotations

import time

from ..comm import NO_COMM, CommModel
from ..costs import CostModel
from ..dag import build_dag, build_dag_arrays
from ..errors import ParameterError
from ..ops import Op, Overlap
from ..schedule import Schedule
from . import certify
from .comm_model import COMM_SEMANTICS, build_problem, has_explicit_comms
from .grad_sync import check_grad_sync
from .memory import MAX_PEAK_READ, check_memory
from .order import check_order
from .report import PROPERTIES, Report, Violation
from .structure import check_structure, occurrences
from .timing import check_makespan

__all__ = ["COMM_SEMANTICS", "PROPERTIES", "Report", "Violation", "clean_schedule", "verify"]


def clean_schedule(schedule: Schedule, bad: set[int]) -> Schedule:
    """The schedule without the occurrences numbered in ``bad`` (numbering of
    :func:`.structure.occurrences`); an overlapped slot left with one op becomes that op.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> [str(a) for a in clean_schedule(s, {0}).programs[0]]
        ['0B0']
    """
    k = 0
    programs = []
    for prog in schedule.programs:
        out = []
        for a in prog:
            if type(a) is Op:
                if k not in bad:
                    out.append(a)
                k += 1
            elif type(a) is Overlap:
                keep = tuple(o for j, o in enumerate(a.ops) if k + j not in bad)
                k += len(a.ops)
                if len(keep) > 1:
                    out.append(Overlap(keep))
                elif keep:
                    out.append(keep[0])
            else:
                out.append(a)
        programs.append(tuple(out))
    return schedule.with_programs(tuple(programs))


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
) -> Report:
    """Verify one schedule; see the module doc for the properties.

    ``costs`` (default: unit slots) sets the memory amounts and the durations of a timing claim;
    ``comm`` the transfer times of a timing claim (default none). ``certificates`` (default on)
    settles properties that hold with checked witnesses (:mod:`.certify`) and runs Z3 only where
    one fails; off, Z3 decides every property. Verdicts and cores are the same either way.

    Example:
        >>> from ppverify.schedules import build
        >>> r = verify(build("1f1b", p=4, m=8), memory_cap=4)
        >>> r.valid, [p for p, _ in r.proved]
        (True, ['completeness', 'placement', 'dependencies', 'exclusivity', 'deadlock', 'memory'])
        >>> s = build("1f1b", p=2, m=2)
        >>> F0, B0, F1, B1 = (Op(k, 0, mb) for k, mb in (("F", 0), ("B", 0), ("F", 1), ("B", 1)))
        >>> bad = s.with_programs(((F0, B0, F1, B1), (F0._replace(stage=1), F1._replace(stage=1), B0._replace(stage=1), B1._replace(stage=1))))
        >>> print(verify(bad).violations[0].to_text())
        deadlock: rank 1 waits in 1F1 for rank 0, which waits in 0B0 for rank 1 [backward after the next stage's backward; forward after the previous stage's forward; core: 0B0 0F1 1F1 1B0]
    """
    if comm_semantics not in COMM_SEMANTICS:
        raise ParameterError("comm semantics", comm_semantics, f"expected one of {', '.join(COMM_SEMANTICS)}")
    if memory_cap is not None and not memory_cap >= 0:
        raise ParameterError("memory cap", memory_cap, "must be >= 0")
    if makespan_le is not None and not makespan_le >= 0:
        raise ParameterError("makespan bound", makespan_le, "must be >= 0")
    t0 = time.perf_counter()
    costs = costs or CostModel.unit(schedule.placement)
    if costs.num_stages != schedule.num_stages:
        raise ParameterError(
            "costs",
            f"{costs.num_stages} stages",
            f"the cost model must describe the schedule's {schedule.num_stages} stages",
        )
    comm = comm or NO_COMM
    timings: dict[str, float] = {}
    certified: list[str] = []  # properties settled by a checked certificate, not by Z3
    arrays = certify.structure_holds(schedule) if certificates else None
    if arrays is not None:  # every ground rule holds (3 per op), checked with numpy
        n_occ, struct_v, bad, nrules = arrays.num_ops, [], set(), 3 * arrays.num_ops
        certified += ["completeness", "placement"]
    else:
        occs = occurrences(schedule)
        n_occ = len(occs)
        struct_v, bad, nrules = check_structure(schedule, occs)
    timings["structure_s"] = time.perf_counter() - t0
    proved: list[tuple[str, str]] = []
    unchecked: list[tuple[str, str]] = []
    n_ok = n_occ - len(bad)
    if not any(v.prop == "completeness" for v in struct_v):
        proved.append(
            (
                "completeness",
                f"each of the {n_ok} required ops exactly once, nothing extra, "
                f"stages 0..{schedule.num_stages - 1}, microbatches 0..{schedule.m - 1}",
            )
        )
    if not any(v.prop == "placement" for v in struct_v):
        proved.append(("placement", f"every op on its stage's device ({schedule.placement.name} placement)"))
    clean = clean_schedule(schedule, bad) if bad else schedule
    dag = None  # the list-based DAG, built only for the Z3 paths
    if certificates and arrays is None:
        arrays = build_dag_arrays(clean, check=False)
    elif not certificates:
        dag = build_dag(clean, check=False)
    t1 = time.perf_counter()
    explicit_comms = has_explicit_comms(schedule)
    if (
        arrays is not None
        and comm_semantics == "buffered"
        and not explicit_comms
        and certify.derived_order_witness(arrays) is not None
    ):
        order_v, complete, n_actions, n_constraints = [], True, arrays.num_ops, certify.num_edges(arrays)
        certified += ["dependencies", "exclusivity", "deadlock"]
    else:
        dag = build_dag(clean, check=False) if dag is None else dag
        pb, _ = build_problem(dag, comm_semantics, group)
        if certificates and certify.order_witness(pb) is not None:
            order_v, complete = [], True
            certified += ["dependencies", "exclusivity", "deadlock"]
        else:
            order_v, complete = check_order(pb, max_violations=max_violations)
        n_actions, n_constraints = len(pb.text), len(pb.edges)
    timings["order_s"] = time.perf_counter() - t1
    nedges = certify.num_edges(arrays) if arrays is not None else sum(1 for row in dag.pred for q in row if q >= 0)
    scope = f" (for the {n_ok} ops that pass the structural rules)" if struct_v else ""
    explicit = (
        "explicit" if explicit_comms else "derived (SEND right after the producer, RECV right before the consumer)"
    )
    if not any(v.prop == "dependencies" for v in order_v):
        split = certify.has_split(arrays) if arrays is not None else clean.has_split_backward
        wi = ", incl. W after its own I" if split else ""
        proved.append(("dependencies", f"all {nedges} edges of the step's DAG hold in program order{wi}{scope}"))
    proved.append(("exclusivity", f"one compute op (or overlapped slot) at a time on each of the {schedule.p} devices"))
    if not any(v.prop == "deadlock" for v in order_v):
        proved.append(
            (
                "deadlock",
                f"a complete execution exists under {comm_semantics} point-to-point semantics"
                f"{' (grouped)' if comm_semantics == 'rendezvous' and group else ''}, "
                f"{explicit} SEND/RECV{scope}",
            )
        )
    sync_v, sync_proved = check_grad_sync(schedule)  # compute_comms files only: REDUCE_GRAD, UNSHARD/RESHARD
    proved.extend(sync_proved)
    mem_v: list[Violation] = []
    if memory_cap is None:
        unchecked.append(("memory", "no memory cap given (--memory-cap)"))
    else:
        t2 = time.perf_counter()
        sure = certify.memory_levels(arrays, costs, memory_cap, MAX_PEAK_READ) if arrays is not None else None
        if sure is not None:
            mem_v, peaks = [], sure[1]
            certified.append("memory")
        else:
            dag = build_dag(clean, check=False) if dag is None else dag
            mem_v, peaks = check_memory(dag, costs, memory_cap)
        timings["memory_s"] = time.perf_counter() - t2
        if not mem_v:
            from ..sizes import format_bytes

            fmt = format_bytes if costs.memory_unit == "bytes" else (lambda x: f"{x:g}")
            pk = f" (peaks {', '.join(fmt(x) for x in peaks)})" if peaks else ""
            cap_txt = fmt(memory_cap) if costs.memory_unit == "bytes" else f"{memory_cap:g} ({costs.memory_unit})"
            proved.append(("memory", f"activation memory <= {cap_txt} on every device at every instant{pk}"))
    time_v: list[Violation] = []
    witness = None
    if makespan_le is None:
        unchecked.append(("timing", "no makespan claim given (--makespan-le)"))
    elif struct_v or order_v:
        unchecked.append(("timing", "no execution exists (see the violations above)"))
    else:
        t3 = time.perf_counter()
        dag = build_dag(clean, check=False) if dag is None else dag
        tv, witness, _ = check_makespan(dag, costs, makespan_le, comm)
        timings["timing_s"] = time.perf_counter() - t3
        if tv:
            time_v.append(tv)
        else:
            ms = max(witness[str(op)] + d for op, d in zip(dag.ops, _durations(dag, costs))) if witness else 0.0
            proved.append(
                (
                    "timing",
                    f"makespan <= {makespan_le:g} under costs {costs.label or 'given'} (witness finishes at {ms:g})",
                )
            )
    violations = tuple(struct_v + order_v + sync_v + mem_v + time_v)
    failed = {v.prop for v in violations}
    proved = [(p, w) for p, w in proved if p not in failed]  # e.g. a SEND matching no transfer
    stats = {
        "seconds": time.perf_counter() - t0,
        "ops": n_occ,
        "actions": n_actions,
        "structural_rules": nrules,
        "order_constraints": n_constraints,
        **timings,
        "certified": [p for p, _ in proved if p in certified],
    }
    if not complete:
        unchecked.append(
            (
                "dependencies/deadlock",
                f"stopped after {len(order_v)} order violations "
                "(--max-violations or the time budget); there may be more",
            )
        )
    return Report(clean.describe(), tuple(proved), violations, tuple(unchecked), witness, stats)


def _durations(dag, costs):
    from ..engines.table import op_durations

    return op_durations(dag, costs)
