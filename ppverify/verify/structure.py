"""Completeness, range and placement of the ops a schedule's programs hold, decided by Z3.

The rules (one Z3 constraint each):

* range: an op's stage is in ``0..S-1`` and its microbatch in ``0..m-1``;
* placement: an op runs on ``place(pipe(mb), stage)``; ``place`` and ``pipe`` are Z3 functions
  axiomatized by the placement table and the microbatch -> pipe map;
* once: every required op occurs exactly once (the required set comes from
  :func:`ppverify.core.dag.required_ops`: F, and B or I+W per stage and microbatch);
* mixing: a (stage, microbatch) has a full backward B or a split I+W, never both (the only
  way an in-range op can be outside the required set).

Fast path: every rule asserted, one check; sat proves all of them. On unsat every rule gets an
indicator ``ok_r = rule_r`` and one model tells which rules fail (ground rules have one value);
each failing rule names the occurrences it is about: its unsat core with the occurrence facts.

The occurrences that break no rule form the *clean* schedule the order checks run on, so one
fault is reported once (a misplaced op is a placement violation, not also a deadlock).
"""

from __future__ import annotations

from typing import NamedTuple

import z3

from ..core.dag import required_ops, split_pairs
from ..core.ops import B, I, Op, Overlap, W
from ..core.schedule import Schedule
from .report import Violation
from .smt import decide, load, plain_solver


class Occurrence(NamedTuple):
    """One compute op as written: device, position of its action in the program, the op (a named
    tuple, like :class:`~ppverify.core.ops.Op`: a schedule has one per op, made 10x faster than a
    dataclass)."""

    device: int
    position: int  # not `index`: that name is tuple.index, which a field would shadow
    op: Op


def occurrences(schedule: Schedule) -> list[Occurrence]:
    """Every compute op of every program, in device then program order (overlaps expanded).

    Example:
        >>> from ppverify.schedules import build
        >>> occurrences(build("gpipe", p=2, m=1))[1]
        Occurrence(device=0, position=1, op=Op(kind='B', stage=0, mb=0))
    """
    out = []
    for d, prog in enumerate(schedule.programs):
        for n, a in enumerate(prog):
            if type(a) is Op:
                out.append(Occurrence(d, n, a))
            elif type(a) is Overlap:
                out.extend(Occurrence(d, n, o) for o in a.ops)
    return out


Rule = tuple[str, str, str, tuple[int, ...], Op]


def _rules(schedule: Schedule, occs: list[Occurrence], distinct: bool = False) -> tuple[list[str], list[Rule], int]:
    """SMT-LIB axioms, rules ``(name, property, formula, occurrence indices, subject op)`` and
    the number of rules stated.

    ``distinct``: one rule per distinct formula (the fast path asserts the same conjunction
    with a third of the range and placement rules, and one "once" rule for a clean schedule);
    the number stated counts them all.
    """
    S, m, pl = schedule.num_stages, schedule.m, schedule.placement
    axioms = ["(declare-fun place (Int Int) Int)", "(declare-fun pipe (Int) Int)"]
    axioms += [f"(assert (= (place {pipe} {s}) {d}))" for pipe, mp in enumerate(pl.maps) for s, d in enumerate(mp)]
    axioms += [f"(assert (= (pipe {mb}) {pp}))" for mb, pp in enumerate(schedule.pipe_of_mb)]
    rules: list[Rule] = []
    skipped = 0
    by_id: dict[Op, list[int]] = {}
    # the F, I and W of one (stage, microbatch) share their formulas: one string each
    rng_of: dict[tuple[int, int], str] = {}
    plc_of: dict[tuple[int, int, int], str] = {}
    for k, oc in enumerate(occs):
        _, s, mb = oc.op
        rng = rng_of.get((s, mb))
        if rng is None:
            rng = rng_of[(s, mb)] = f"(and (<= 0 {s}) (< {s} {S}) (<= 0 {mb}) (< {mb} {m}))"
        plc = plc_of.get((oc.device, s, mb))
        if plc is None:
            plc = plc_of[(oc.device, s, mb)] = f"(=> {rng} (= {oc.device} (place (pipe {mb}) {s})))"
            rules.append((f"rng{k}", "completeness", rng, (k,), oc.op))
            rules.append((f"plc{k}", "placement", plc, (k,), oc.op))
        elif not distinct:
            rules.append((f"rng{k}", "completeness", rng, (k,), oc.op))
            rules.append((f"plc{k}", "placement", plc, (k,), oc.op))
        else:
            skipped += 2
        if 0 <= s < S and 0 <= mb < m:
            by_id.setdefault(oc.op, []).append(k)
    required_list = required_ops(schedule)
    split = split_pairs(schedule)
    # each required op occurs exactly once; ops outside the required set can only be B's of
    # split pairs, which the mixing rule covers
    once_of: dict[int, str] = {}
    for n, op in enumerate(required_list):
        ks = by_id.get(op, [])
        formula = once_of.get(len(ks))
        if formula is None:
            formula = once_of[len(ks)] = "(= (+ 0" + " 1" * len(ks) + ") 1)"
        elif distinct:
            skipped += 1
            continue
        rules.append((f"once{n}", "completeness", formula, tuple(ks), op))
    for n, (s, mb) in enumerate(sorted(split)):
        nb = len(by_id.get(Op(B, s, mb), []))
        niw = len(by_id.get(Op(I, s, mb), [])) + len(by_id.get(Op(W, s, mb), []))
        if nb:  # a pair without any B cannot break the rule; only mixed pairs get an instance
            mixed = tuple(by_id.get(Op(B, s, mb), []) + by_id.get(Op(I, s, mb), []) + by_id.get(Op(W, s, mb), []))
            rules.append((f"mix{n}", "completeness", f"(not (and (> {nb} 0) (> {niw} 0)))", mixed, Op(B, s, mb)))
    return axioms, rules, len(rules) + skipped


def _describe(rule: str, schedule: Schedule, occs: list[Occurrence], ks: tuple[int, ...]) -> tuple[str, str]:
    S, m = schedule.num_stages, schedule.m
    if rule.startswith("rng"):
        oc = occs[ks[0]]
        return (
            "stage and microbatch exist",
            f"op {oc.op} on device {oc.device} refers to a stage or microbatch that does not exist "
            f"(stages 0..{S - 1}, microbatches 0..{m - 1})",
        )
    if rule.startswith("plc"):
        oc = occs[ks[0]]
        want = schedule.device_of(oc.op)
        return (
            "op on its stage's device",
            f"op {oc.op} is on device {oc.device} but stage {oc.op.stage} of pipe "
            f"{schedule.pipe_of_mb[oc.op.mb]} lives on device {want}",
        )
    if rule.startswith("mix"):
        op = occs[ks[0]].op
        return ("B or I+W, not both", f"stage {op.stage} microbatch {op.mb} has both a full backward B and a split I/W")
    # once: a required op occurs exactly once
    if not ks:
        return ("each required op exactly once", "an op required by the step is missing")
    op = occs[ks[0]].op
    devs = ", ".join(str(occs[k].device) for k in ks)
    return ("each required op exactly once", f"op {op} appears {len(ks)} times (devices {devs})")


def check_structure(schedule: Schedule, occs: list[Occurrence] | None = None) -> tuple[list[Violation], set[int], int]:
    """Decide the structural rules with Z3.

    Returns ``(violations, bad occurrence indices, number of rules)``; the bad occurrences are
    left out of the order checks (the first of duplicated ops is kept).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> check_structure(s)[0]
        []
        >>> v, bad, _ = check_structure(s.with_programs((s.programs[0], s.programs[1][:-1])))
        >>> v[0].message, bad
        ('op 1B0 is missing (should run on device 1)', set())
    """
    occs = occurrences(schedule) if occs is None else occs
    # fast path: a formula several rules share is asserted once (the same conjunction)
    axioms, rules, n_rules = _rules(schedule, occs, distinct=True)
    text = "\n".join(axioms) + "\n" + "\n".join(f"(assert {r[2]})" for r in rules)
    s = plain_solver()
    load(s, text)
    if decide(s) == z3.sat:
        return [], set(), n_rules
    axioms, rules, n_rules = _rules(schedule, occs)
    # slow path: one indicator per rule; the model gives every rule's value at once
    s = plain_solver()
    load(
        s,
        "\n".join(axioms) + "\n" + "\n".join(f"(declare-const {r[0]} Bool)\n(assert (= {r[0]} {r[2]}))" for r in rules),
    )
    assert decide(s) == z3.sat  # indicators make the problem satisfiable by construction
    model = s.model()
    failing = {d.name() for d in model.decls() if z3.is_false(model[d])}
    violations: list[Violation] = []
    bad: set[int] = set()
    for name, prop, _, ks, op in rules:
        if name not in failing:
            continue
        rule, msg = _describe(name, schedule, occs, ks)
        if name.startswith("once") and not ks:
            msg = f"op {op} is missing (should run on device {schedule.device_of(op)})"
            core: tuple[str, ...] = (str(op),)
        else:
            core = tuple(sorted({str(occs[k].op) for k in ks}))
        if name.startswith(("rng", "plc")):
            bad.update(ks)
        elif name.startswith("once"):
            bad.update(ks[1:])  # keep the first copy of a duplicated op
        elif name.startswith("mix"):
            bad.update(k for k in ks if occs[k].op.kind == B)
        violations.append(Violation(prop, rule, msg, core))
    return violations, bad, n_rules
