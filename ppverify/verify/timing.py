"""Timing claims: "makespan <= T under cost model C", with a witness timeline or a proof that
none exists.

Timing model (the ``async`` engine's, which ``simulate``, ``show`` and ``optimize`` time with):
each device runs its program in order, one slot at a time (an overlapped slot lasts the cost
model's ``overlap`` times the sum of its ops, :func:`ppverify.core.program_order.op_durations`); an
op starts after its inputs ended plus the transfer time of every cross-device input
(``comm.transfer_time`` of the boundary's bytes); the step ends when its last op and its last
collective have ended: the gradient all-reduce between the replicas of a stage held by two
devices (chimera, chimera-asym, dualpipe; per ``sync`` mode) and the optional data-parallel
all-reduce (:func:`ppverify.systems.replica_sync.step_collectives`). A collective occupies no device, so
it adds to each op it waits for a *tail*, the longest chain of collectives after that op
(:func:`ppverify.systems.replica_sync.collective_tails`). Durations, delays, tails and T are scaled to
integer ticks by their common denominator, so Z3 decides it exactly in integer difference logic:

* ``t_first >= 0`` on every device; ``t_next - t_prev >= dur_prev`` (fused slots share a start);
* ``t_i - t_q >= dur_q + delay(q, i)`` for every DAG edge; ``t_last + dur_last <= T``;
* ``t_i + dur_i + tail_i <= T`` for every op a collective waits for.

With the program order fixed the earliest start of every op is the least, so the least T that
holds is the ``async`` engine's makespan, collectives included.

Sat: Z3's model is a witness timeline (start of every op). Unsat: the core is a chain of
dependencies and program order whose length exceeds T.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import NamedTuple

import z3

from ..core.comm import NO_COMM, CommModel, FixedDelay, transfer_time
from ..core.costs import CostModel, number_text
from ..core.dag import StepDAG
from ..core.program_order import list_schedule, op_durations
from ..core.schedule import Schedule
from ..core.send_gates import gated_pred
from ..systems.replica_sync import collective_tails, replica_groups, step_collectives
from .report import Violation
from .smt import IDL_SEARCH_FACTOR, decide, diff_ge, exact_fraction, idl_solver, load, num


def _frac(x: float) -> Fraction:
    return exact_fraction(x)  # never rounded to another number (1e-7 is not 0)


def times_apart(a: float | Fraction, b: float | Fraction) -> tuple[str, str]:
    """Both times with ``%g``'s six digits, or with just as many more as unequal times need to
    read differently: a bound of 6.0000008 refuted against a finish of 6.0000012 must not print as
    "6" against "6" (as :func:`~ppverify.core.sizes.format_bytes_apart` does for bytes). A
    :class:`~fractions.Fraction` is printed from its exact value, so an exact finish just above a
    bound never prints at or below it.

    Example:
        >>> times_apart(21.0, 20.5), times_apart(6.0000008, 6.0000012), times_apart(1.0, 0.12227252438764184)
        (('21', '20.5'), ('6.0000008', '6.0000012'), ('1', '0.122273'))
        >>> times_apart(11.999999999999998, Fraction(12))
        ('11.999999999999998', '12')
        >>> times_apart(8999999.0, Fraction(9000000)), times_apart(1.0000001e-5, Fraction("1.0000002e-5"))
        (('8999999', '9000000'), ('1.0000001e-05', '1.0000002e-05'))
    """
    from decimal import Decimal, localcontext

    def text(x: float | Fraction | Decimal, digits: int) -> str:
        if not isinstance(x, Decimal):
            return f"{x:.{digits}g}"  # a float as %g writes it (the bound as typed)
        # a Decimal as %g writes a float, so that both numbers read alike: Decimal's own %g keeps
        # trailing zeros, turns to an exponent only below 1e-6, and writes it without padding (e+6)
        exp = int(f"{x:.{digits - 1}e}".partition("e")[2])  # after rounding, as %g decides
        if -4 <= exp < digits:
            fixed = f"{x:.{digits - 1 - exp}f}"
            return fixed.rstrip("0").rstrip(".") if "." in fixed else fixed
        head = f"{x:.{digits - 1}e}".partition("e")[0]
        return (head.rstrip("0").rstrip(".") if "." in head else head) + f"e{exp:+03d}"

    with localcontext() as ctx:
        ctx.prec = 60  # far beyond the 17 digits a float needs
        da, db = (
            Decimal(x.numerator) / Decimal(x.denominator) if isinstance(x, Fraction) else Decimal(x) for x in (a, b)
        )
        xa, xb = (da if isinstance(a, Fraction) else a), (db if isinstance(b, Fraction) else b)
        for digits in range(6, 41):
            ta, tb = text(xa, digits), text(xb, digits)
            if Fraction(ta) != Fraction(tb) or da == db:  # apart by what they say, not how
                return ta, tb
    return str(da), str(db)


def claim_texts(bound: float, finish: Fraction, unit: str = "") -> tuple[str, str]:
    """A proved claim's bound and its witness's finish, as printed: the bound as typed (the
    shortest text that reads back as it, :func:`~ppverify.core.costs.number_text`: ``3.3``, never
    ``3.2999999999999998``), and the witness's exact finish as the same text when it equals the
    bound, else with ``%g``'s six digits or as many more as it needs to read apart from it. The
    finish is at most the bound (the claim holds) and rounding keeps the order, so the witness
    never prints above the bound. ``unit`` follows each number (``" s"``, ``" units"``).

    Example:
        >>> claim_texts(3.3, Fraction(33, 10)), claim_texts(380, Fraction(37986, 100000), " s")
        (('3.3', '3.3'), ('380 s', '0.37986 s'))
        >>> claim_texts(6.0000008, Fraction(6)), claim_texts(6, Fraction(59999999, 10000000))
        (('6.0000008', '6'), ('6', '5.9999999'))
    """
    from decimal import Decimal, localcontext

    t = number_text(bound)
    exact = exact_fraction(bound)
    if finish == exact:
        return t + unit, t + unit
    with localcontext() as ctx:
        ctx.prec = 60
        d = Decimal(finish.numerator) / Decimal(finish.denominator)
        text = str(d)
        for digits in range(6, 41):
            head, e, tail = f"{d:.{digits}g}".partition("e")
            text = (head.rstrip("0").rstrip(".") if "." in head else head) + (e + tail if e else "")
            if Fraction(Decimal(text)) != exact:
                break
    return t + unit, text + unit


def unit_suffix(costs: CostModel) -> str:
    """What follows a time of ``costs`` in a claim: `` s`` for presets' seconds, `` units`` for
    abstract costs (their ``time_unit``).

    Example:
        >>> from ppverify.core.placement import linear
        >>> unit_suffix(CostModel.abstract(linear(2)))
        ' units'
    """
    return f" {costs.time_unit}" if costs.time_unit else ""


#: the point-to-point semantics of the timing model: the ``async`` engine's sends never block
TIMING_SEMANTICS = "buffered"


def timing_model(
    costs: CostModel,
    comm: CommModel,
    schedule: Schedule,
    sync: str = "eager",
    dp_allreduce: int = 0,
    comm_semantics: str = TIMING_SEMANTICS,
) -> str:
    """What a timing claim is decided under, briefly: the costs, the transfer times, the
    collectives that end the step (the replicas' all-reduce only where stages have replicas) and
    the engine whose timing it is; a claim proved under one of them says nothing of another.
    ``comm_semantics``: the semantics the verification was asked for; when it is not the timing
    engine's (:data:`TIMING_SEMANTICS`: buffered sends), the engine's says so, since a rendezvous
    step can take longer than the claim proved (a blocking SEND waits for its RECV).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("chimera", p=2, m=2)
        >>> timing_model(CostModel.abstract(s.placement, F=1, B=2), FixedDelay(1), s)
        'costs F=1,B=2,I=1,W=1 with comm delay 1, replica all-reduce (sync eager), async engine'
        >>> s = build("1f1b", p=2, m=2)
        >>> timing_model(CostModel.unit(s.placement), NO_COMM, s, "none", 4)
        'costs unit with no comm delay, data-parallel all-reduce over 4 replicas, async engine'
        >>> timing_model(CostModel.unit(s.placement), NO_COMM, s, comm_semantics="rendezvous")
        'costs unit with no comm delay, async engine (buffered sends; --comm-semantics rendezvous applies to the deadlock check only)'
    """
    if isinstance(comm, FixedDelay):
        links = f"comm delay {number_text(comm.delay)}" if comm.delay else "no comm delay"
    else:  # a system preset's links (latency + bytes / bandwidth per tier); else a caller's model
        name = getattr(comm, "name", None)
        links = f"{name} links" if isinstance(name, str) else f"transfer times of {type(comm).__name__}"
        rpn = getattr(comm, "ranks_per_node", None)  # which pairs share a node's faster tier
        links += f" ({rpn} rank{'s' if rpn != 1 else ''} per node)" if isinstance(rpn, int) else ""
    parts = [links]
    if replica_groups(schedule):
        parts.append("no replica all-reduce (sync none)" if sync == "none" else f"replica all-reduce (sync {sync})")
    if dp_allreduce >= 2:
        parts.append(f"data-parallel all-reduce over {dp_allreduce} replicas")
    engine = "async engine"
    if comm_semantics != TIMING_SEMANTICS:  # the deadlock check's semantics: not the claim's
        engine += f" ({TIMING_SEMANTICS} sends; --comm-semantics {comm_semantics} applies to the deadlock check only)"
    # "with" sets the rest apart from a preset's label, which holds commas of its own
    return f"costs {costs.label or 'given'} with {', '.join(parts)}, {engine}"


def edge_delays(dag: StepDAG, costs: CostModel, comm: CommModel) -> list[list[float]]:
    """Transfer time of each DAG edge (0 for same-device edges); a communication model's time that
    is not a finite number >= 0 is refused (:func:`ppverify.core.comm.transfer_time`).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("gpipe", p=2, m=1)
        >>> edge_delays(build_dag(s), CostModel.unit(s.placement), FixedDelay(0.5))
        [[0.0, 0.0], [0.0, 0.5], [0.5, 0.0], [0.0, 0.0]]
    """
    bb = costs.boundary_bytes
    out = []
    for i, preds in enumerate(dag.pred):
        row = []
        for e, q in enumerate(preds):
            if q < 0 or not dag.cross[i][e]:
                row.append(0.0)
                continue
            lo = min(dag.ops[i].stage, dag.ops[q].stage)
            row.append(transfer_time(comm, dag.device[q], dag.device[i], bb[lo] if lo < len(bb) else 0.0))
        out.append(row)
    return out


class MakespanCheck(NamedTuple):
    """What :func:`check_makespan` decided: the violation (``None`` when the claim holds), the
    witness's start times by op text (``None`` when it fails), the tick the times were counted in,
    and ``finish``, exact: the witness's end (the claim holds) or the earliest finish (it fails)."""

    violation: Violation | None
    witness: dict[str, float] | None
    tick: float
    finish: Fraction


def check_makespan(
    dag: StepDAG,
    costs: CostModel,
    bound: float,
    comm: CommModel = NO_COMM,
    sync: str = "eager",
    dp_allreduce: int = 0,
    comm_semantics: str = TIMING_SEMANTICS,
) -> MakespanCheck:
    """Decide whether the programs, and the step's collectives (``sync``, ``dp_allreduce``, as
    the engines take them), can finish by ``bound`` (with buffered sends, whatever
    ``comm_semantics`` the deadlock check used: the refutation's text says so,
    :func:`timing_model`).

    Returns a :class:`MakespanCheck` ``(violation or None, witness start times by op text or None,
    tick, exact finish)``.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag
        >>> s = build("gpipe", p=4, m=4)
        >>> c = CostModel.abstract(s.placement, F=1, B=2)
        >>> v, w, _, finish = check_makespan(build_dag(s), c, 21)
        >>> v is None, max(w[k] for k in w) <= 21, finish
        (True, True, Fraction(21, 1))
        >>> check_makespan(build_dag(s), c, 20.5)[0].message.startswith("no execution")
        True
    """
    dur = op_durations(dag, costs)
    delays = edge_delays(dag, costs, comm)
    colls = step_collectives(dag, costs, comm, sync, dp_allreduce)
    # few distinct amounts, many ops: each amount is converted once (Fraction costs ~10 us)
    amounts = {*dur, *(x for row in delays for x in row), *(c.duration for c in colls), bound}
    fracs = {x: _frac(x) for x in amounts}
    scale = math.lcm(*(v.denominator for v in fracs.values()))
    ticks = {x: int(v * scale) for x, v in fracs.items()}
    di = [ticks[x] for x in dur]
    T = math.floor(_frac(bound) * scale)
    n = dag.num_ops
    tails = [int(x) for x in collective_tails(n, [ticks[c.duration] for c in colls], colls)]
    lines = [f"(declare-const t{i} Int)" for i in range(n)]
    atoms: list[str] = []
    guarded: list[tuple[str, tuple[int, ...]]] = []
    for d in range(len(dag.offsets) - 1):
        lo, hi = dag.offsets[d], dag.offsets[d + 1]
        if lo == hi:
            continue
        atoms.append(f"(>= t{lo} 0)")
        for i in range(lo, hi - 1):
            if dag.fused[i]:
                atoms += [diff_ge(f"t{i + 1}", f"t{i}", 0), diff_ge(f"t{i}", f"t{i + 1}", 0)]
            else:
                atoms.append(diff_ge(f"t{i + 1}", f"t{i}", di[i]))
        guarded.append((f"(<= t{hi - 1} {num(T - di[hi - 1])})", (hi - 1,)))
    # a file's SEND posted after a later op than its producer: the transfer waits for that op (the
    # delays stay the producer's edge's: same devices, same bytes)
    timed = dag if (gated := gated_pred(dag)) is None else dataclasses.replace(dag, pred=gated)
    for i, preds in enumerate(timed.pred):
        for e, q in enumerate(preds):
            if q >= 0:
                guarded.append((diff_ge(f"t{i}", f"t{q}", di[q] + ticks[delays[i][e]]), (q, i)))
    guarded += [(f"(<= t{i} {num(T - di[i] - tails[i])})", (i,)) for i in range(n) if tails[i] > 0]
    s = idl_solver()
    load(
        s,
        "\n".join(lines) + "\n" + "\n".join(f"(assert {a})" for a in reversed(atoms + [g for g, _ in guarded])),
        search_factor=IDL_SEARCH_FACTOR,
    )
    # exact binary values can make the scale larger than a float holds: divide as fractions
    tick = float(Fraction(1, scale))
    if decide(s) == z3.sat:
        model = s.model()
        t_of = [model.eval(z3.Int(f"t{i}")).as_long() for i in range(n)]
        witness = {str(dag.ops[i]): float(Fraction(t_of[i], scale)) for i in range(n)}
        # the witness's end in whole ticks, exact (a float sum of its starts and durations can
        # print above the bound it was proved for: 3.3000000000000003 against 3.3)
        end = max((t_of[i] + di[i] + tails[i] for i in range(n)), default=0)
        return MakespanCheck(None, witness, tick, Fraction(end, scale))
    # proof of infeasibility: the guarded version's core is a chain longer than the bound
    s = idl_solver()
    decl = [f"(declare-const k{j} Bool)" for j in range(len(guarded))]
    load(
        s,
        "\n".join(lines + decl)
        + "\n"
        + "\n".join(f"(assert {a})" for a in reversed(atoms + [f"(=> k{j} {g})" for j, (g, _) in enumerate(guarded)])),
        search_factor=IDL_SEARCH_FACTOR,
    )
    lits = [z3.Bool(f"k{j}") for j in range(len(guarded))]
    decide(s, *lits)
    core = sorted(int(str(x)[1:]) for x in s.unsat_core())
    ops = sorted({str(dag.ops[i]) for j in core for i in guarded[j][1]}, key=lambda t: (len(t), t))

    # the earliest finish in whole ticks (integer sums, exact), as the verdict was decided: a float
    # sum could print below the bound it was refuted against
    _, end_ticks = list_schedule(timed, di, [[ticks[x] for x in row] for row in delays])
    finish = Fraction(max((int(e) + tails[i] for i, e in enumerate(end_ticks)), default=0), scale)
    what = " and their collectives" if colls else ""
    chain = " (with the collectives after its last op)" if colls else ""
    # each time in the unit T was read in (seconds with presets), as a proved claim prints it
    b, earliest = (t + unit_suffix(costs) for t in times_apart(bound, finish))
    model = timing_model(costs, comm, dag.schedule, sync, dp_allreduce, comm_semantics)
    msg = (
        f"no execution of these programs{what} finishes by {b} under {model} "
        f"(Z3: infeasible; the core's ops lie on a chain of dependencies and program order{chain} longer than "
        f"{b}; for reference the earliest finish is {earliest})"
    )
    return MakespanCheck(Violation("timing", f"makespan <= {b}", msg, tuple(ops)), None, tick, finish)


def witness_finish(
    dag: StepDAG,
    costs: CostModel,
    starts: dict[str, float],
    comm: CommModel = NO_COMM,
    sync: str = "eager",
    dp_allreduce: int = 0,
) -> float:
    """When a witness timeline (op text -> start) ends: its last op, or the last collective
    after it (each op's end plus its tail, :func:`ppverify.systems.replica_sync.collective_tails`).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("chimera", p=2, m=2)
        >>> dag, c = build_dag(s), CostModel.abstract(s.placement, F=1, B=2)
        >>> _, w, _, _ = check_makespan(dag, c, 10, FixedDelay(1))
        >>> witness_finish(dag, c, w, FixedDelay(1)), witness_finish(dag, c, w, FixedDelay(1), "none") <= 8
        (10.0, True)
    """
    dur = op_durations(dag, costs)
    colls = step_collectives(dag, costs, comm, sync, dp_allreduce)
    tails = collective_tails(dag.num_ops, [c.duration for c in colls], colls)
    return max((starts[str(op)] + d + t for op, d, t in zip(dag.ops, dur, tails)), default=0.0)
