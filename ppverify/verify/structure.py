"""Completeness, range and placement of the ops a schedule's programs hold, decided by Z3.

The rules (one Z3 constraint each):

* range: an op's stage is in ``0..S-1`` and its microbatch in ``0..m-1``;
* placement: an op runs on ``place(pipe(mb), stage)``; ``place`` and ``pipe`` are Z3 functions
  axiomatized by the placement table and the microbatch -> pipe map;
* once: every required op occurs exactly once (the required set comes from
  :func:`ppverify.dag.required_ops`: F, and B or I+W per stage and microbatch);
* mixing: a (stage, microbatch) has a full backward B or a split I+W, never both (the only
  way an in-range op can be outside the required set).

Fast path: every rule asserted, one check; sat proves all of them. On unsat every rule gets an
indicator ``ok_r = rule_r`` and one model tells which rules fail (ground rules have one value);
each failing rule names the occurrences it is about: its unsat core with the occurrence facts.

The occurrences that break no rule form the *clean* schedule the order checks run on, so one
fault is reported once (a misplaced op is a placement violation, not also a deadlock).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from ..dag import required_ops, split_pairs
from ..ops import B, I, Op, Overlap, W
from ..schedule import Schedule
from .report import Violation
from .smt import load, plain_solver


@dataclass(frozen=True)
class Occurrence:
    """One compute op as written: device, index of its action in the program, the op."""

    device: int
    index: int
    op: Op


def occurrences(schedule: Schedule) -> list[Occurrence]:
    """Every compute op of every program, in device then program order (overlaps expanded).

    Example:
        >>> from ppverify.schedules import build
        >>> occurrences(build("gpipe", p=2, m=1))[1]
        Occurrence(device=0, index=1, op=Op(kind='B', stage=0, mb=0))
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


def _rules(schedule: Schedule, occs: list[Occurrence]) -> tuple[list[str], list[Rule]]:
    """SMT-LIB axioms and rules ``(name, property, formula, occurrence indices, subject op)``."""
    S, m, pl = schedule.num_stages, schedule.m, schedule.placement
    axioms = ["(declare-fun place (Int Int) Int)", "(declare-fun pipe (Int) Int)"]
    axioms += [f"(assert (= (place {pipe} {s}) {d}))" for pipe, mp in enumerate(pl.maps) for s, d in enumerate(mp)]
    axioms += [f"(assert (= (pipe {mb}) {pp}))" for mb, pp in enumerate(schedule.pipe_of_mb)]
    rules: list[Rule] = []
    by_id: dict[Op, list[int]] = {}
    for k, oc in enumerate(occs):
        _, s, mb = oc.op
        rng = f"(and (<= 0 {s}) (< {s} {S}) (<= 0 {mb}) (< {mb} {m}))"
        rules.append((f"rng{k}", "completeness", rng, (k,), oc.op))
        rules.append((f"plc{k}", "placement", f"(=> {rng} (= {oc.device} (place (pipe {mb}) {s})))", (k,), oc.op))
        if 0 <= s < S and 0 <= mb < m:
            by_id.setdefault(oc.op, []).append(k)
    required_list = required_ops(schedule)
    required = set(required_list)
    split = split_pairs(schedule)
    # ops outside the required set can only be B's of split pairs: the mixing rule covers them
    counts = {0: "(+ 0)", 1: "(+ 0 1)"}
    for n, op in enumerate(required_list):
        ks = by_id.get(op, [])
        c = len(ks)
        if c not in counts:
            counts[c] = "(+ 0 " + " ".join("1" for _ in ks) + ")"
        rules.append((f"once{n}", "completeness", f"(= {counts[c]} {1 if op in required else 0})", tuple(ks), op))
    for n, (s, mb) in enumerate(sorted(split)):
        nb = len(by_id.get(Op(B, s, mb), []))
        niw = len(by_id.get(Op(I, s, mb), [])) + len(by_id.get(Op(W, s, mb), []))
        if nb:  # a pair without any B cannot break the rule; only mixed pairs get an instance
            ks = tuple(by_id.get(Op(B, s, mb), []) + by_id.get(Op(I, s, mb), []) + by_id.get(Op(W, s, mb), []))
            rules.append((f"mix{n}", "completeness", f"(not (and (> {nb} 0) (> {niw} 0)))", ks, Op(B, s, mb)))
    return axioms, rules


def _describe(
    rule: str, schedule: Schedule, occs: list[Occurrence], ks: tuple[int, ...], formula: str
) -> tuple[str, str]:
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
    # once: required ops must occur exactly once, others never
    want = formula.rsplit(" ", 1)[1].rstrip(")")
    if not ks:
        return ("each required op exactly once", "an op required by the step is missing")
    op = occs[ks[0]].op
    if want == "0":
        return ("nothing extra", f"op {op} is not part of this step (its stage and microbatch use I+W)")
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
    axioms, rules = _rules(schedule, occs)
    text = "\n".join(axioms) + "\n" + "\n".join(f"(assert {r[2]})" for r in rules)
    s = plain_solver()
    load(s, text)
    if s.check() == z3.sat:
        return [], set(), len(rules)
    # slow path: one indicator per rule; the model gives every rule's value at once
    s = plain_solver()
    load(
        s,
        "\n".join(axioms) + "\n" + "\n".join(f"(declare-const {r[0]} Bool)\n(assert (= {r[0]} {r[2]}))" for r in rules),
    )
    assert s.check() == z3.sat  # indicators make the problem satisfiable by construction
    model = s.model()
    failing = {d.name() for d in model.decls() if z3.is_false(model[d])}
    violations: list[Violation] = []
    bad: set[int] = set()
    for name, prop, formula, ks, op in rules:
        if name not in failing:
            continue
        rule, msg = _describe(name, schedule, occs, ks, formula)
        if name.startswith("once") and not ks:
            msg = f"op {op} is missing (should run on device {schedule.device_of(op)})"
            core: tuple[str, ...] = (str(op),)
        else:
            core = tuple(sorted({str(occs[k].op) for k in ks}))
        if name.startswith(("rng", "plc")):
            bad.update(ks)
        elif name.startswith("once"):
            bad.update(ks[1:])  # keep the first copy of a duplicated op
            if formula.endswith(" 0)"):
                bad.update(ks)
        elif name.startswith("mix"):
            bad.update(k for k in ks if occs[k].op.kind == B)
        violations.append(Violation(prop, rule, msg, core))
    return violations, bad, len(rules)
