"""Activation memory under a cap, at every instant, decided by Z3.

Memory model: an ``F`` allocates its activation at its start; a ``B`` frees it at its
end, or ``I`` frees the cost model's ``freed_by_I`` share and ``W`` the rest. An overlapped slot's
actions run in the order written (as PyTorch runs an ``OVERLAP_F_B`` cell): a backward written
before the forward frees before the forward allocates. A device runs one
slot at a time in program order, so its memory is a step function that changes only at slot
boundaries and peaks at the start of a slot: level before slot k = what earlier slots allocated
minus what they freed, plus the allocations of slot k. Z3 gets one integer ``L_k`` per
allocating slot (memory only falls in between) with ``L_k = L_j + alloc_k - freed_(j..k)`` for
the previous allocating slot j, and ``L_k <= cap``.

Amounts are the cost model's (per device share, or bytes for presets), scaled to integers by
their common denominator. When the cap is exceeded, the explanation is a minimal set of
activations held at once whose sum exceeds the cap (an unsat core over "activation of op f is
held here" literals), i.e. ``cap + 1`` forwards for unit activations.

The text counts as ``--memory-cap`` does (docs/memory.md): bytes for presets, else ppverify's
activations (one microbatch on a device's whole share, :func:`~ppverify.core.memory_cap.exact_unit`
of the cost model's unit), so a cap reads back as given; :func:`memory_statement` is the proof's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import z3

from ..core.costs import CostModel, exact_memory_deltas, scaled_memory_deltas
from ..core.dag import StepDAG
from ..core.memory_text import held_and_cap
from ..core.memory_unit import printed_unit
from ..core.ops import Op
from ..core.placement import Placement
from ..core.sizes import format_apart, format_bytes
from .report import Violation
from .smt import decide, exact_fraction, load, minimize_core, num, plain_solver

#: reading a model value costs ~20 us in Python; above this many slots peaks are not read back
MAX_PEAK_READ = 5000


def _frac(x: float | Fraction) -> Fraction:
    # never rounded to another number (1e-7 is not 0); a cap's exact value kept as it is
    return x if isinstance(x, Fraction) else exact_fraction(x)


def _slots(dag: StepDAG, d: int) -> list[list[int]]:
    out: list[list[int]] = []
    for i in range(dag.offsets[d], dag.offsets[d + 1]):
        if i == dag.offsets[d] or not dag.fused[i - 1]:
            out.append([])
        out[-1].append(i)
    return out


def memory_statement(
    cap: float | Fraction, peaks: Sequence[float] | None, costs: CostModel, placement: Placement
) -> str:
    """What a memory proof states: the cap and each device's peak (both in the cost model's unit)
    as ``--memory-cap`` counts them (bytes as GiB, else activations of a device's whole share),
    with the digits that tell them apart and print the cap as one that reads back at least the
    highest peak (:func:`~ppverify.core.sizes.format_apart`): never one the proof then refuses.

    Example:
        >>> import dataclasses
        >>> from ppverify.core.placement import linear
        >>> costs = dataclasses.replace(CostModel.unit(linear(2)), activation=(1.0, 3.0))
        >>> memory_statement(6.0, [2.0, 6.0], costs, linear(2))  # one activation is 3 of its units
        'activation memory <= 2 (activations) on every device at every instant (peaks 0.666667, 2)'
    """
    unit = costs.memory_unit
    one = printed_unit(costs, placement)
    amounts = [_frac(x) / one for x in [cap, *(peaks or [])]]
    texts = format_apart(amounts, unit, cap_first=True)
    # the cap is rounded up where it must be to read back as at least the highest peak (4/3 is
    # 1.33334); a peak equal to it is rounded to nearest at the cap's digits, as show prints it
    texts[1:] = [_nearest(x, texts[0], unit) if x == amounts[0] else t for x, t in zip(amounts[1:], texts[1:])]
    cap_txt = texts[0] if unit == "bytes" else f"{texts[0]} (activations)"
    pk = f" (peaks {', '.join(texts[1:])})" if peaks else ""
    return f"activation memory <= {cap_txt} on every device at every instant{pk}"


def _nearest(x: Fraction, like: str, unit: str) -> str:
    """``x`` rounded to nearest at the significant digits of ``like`` (``1.33334``: 6), in the
    same unit (GiB or MiB for bytes)."""
    mantissa = like.split()[0].lower().split("e")[0].lstrip("-")
    digits = max(len(mantissa.replace(".", "").lstrip("0")), 1)
    return format_bytes(float(x), digits) if unit == "bytes" else f"{float(x):.{digits}g}"


def check_memory(dag: StepDAG, costs: CostModel, cap: float | Fraction) -> tuple[list[Violation], list[float] | None]:
    """Decide ``memory <= cap`` on every device at every instant.

    Returns the violations (at most one per overflow episode per device) and each device's peak
    (in the cost model's unit), read from Z3's model of the level variables (``None`` for
    schedules with more than :data:`MAX_PEAK_READ` slots).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag
        >>> s = build("1f1b", p=4, m=8)
        >>> dag = build_dag(s)
        >>> check_memory(dag, CostModel.unit(s.placement), 4)[1]
        [4.0, 3.0, 2.0, 1.0]
        >>> v, _ = check_memory(dag, CostModel.unit(s.placement), 3)
        >>> v[0].message, v[0].ops
        ('device 0 holds 4 activations when 0F3 starts (cap 3)', ('0F0', '0F1', '0F2', '0F3'))
    """
    p = len(dag.offsets) - 1
    # few distinct amounts, one per (kind, stage): I and W free exactly what F allocated
    used = {(op.kind, op.stage) for op in dag.ops}
    scale, as_int = scaled_memory_deltas(costs, used, [_frac(cap)])
    ints = [as_int[(op.kind, op.stage)] for op in dag.ops]
    cap_i = math.floor(_frac(cap) * scale)
    lines: list[str] = []
    caps: list[tuple[str, int, int]] = []  # (name, device, slot index)
    slots = [_slots(dag, d) for d in range(p)]
    for d in range(p):
        # memory only falls between allocating slots, so only those get a level variable: the
        # frees in between are summed into the next one's difference (exact elimination)
        freed, prev = 0, None
        for k, slot in enumerate(slots[d]):
            alloc = sum(ints[i][0] for i in slot)
            before = _before_alloc(slot, ints)
            freed += sum(ints[i][1] for i in before)
            if alloc:
                name = f"L{d}_{k}"
                lines.append(f"(declare-const {name} Int)")
                if prev is None:
                    lines.append(f"(assert (= {name} {num(alloc - freed)}))")
                else:
                    lines.append(f"(assert (= {name} (+ {prev} {num(alloc - freed)})))")
                caps.append((name, d, k))
                prev, freed = name, 0
            freed += sum(ints[i][1] for i in slot if i not in before)
    # the general solver's equation solving substitutes the level chains away (3x faster here
    # than difference logic)
    s2 = plain_solver()
    load(s2, "\n".join(lines) + "\n" + "\n".join(f"(assert (<= {n} {num(cap_i)}))" for n, _, _ in caps))
    if decide(s2) == z3.sat:
        return [], _peaks(s2.model(), caps, p, scale)
    # which level atoms fail: indicators read off one model
    s3 = plain_solver()
    load(
        s3,
        "\n".join(lines)
        + "\n"
        + "\n".join(f"(declare-const ok{n} Bool)\n(assert (= ok{n} (<= {n} {num(cap_i)})))" for n, _, _ in caps),
    )
    decide(s3)
    m3 = s3.model()
    peaks = _peaks(m3, caps, p, scale)
    out = []
    prev_bad: dict[int, bool] = {}
    for name, d, k in caps:
        bad = z3.is_false(m3.eval(z3.Bool(f"ok{name}")))
        if bad and not prev_bad.get(d):
            out.append(_explain(dag, ints, slots[d], k, d, cap_i, scale, cap, costs))
        prev_bad[d] = bad
    return out, peaks


def frees_before_forward(dag: StepDAG, costs: CostModel) -> list[tuple[int, Op, Op]]:
    """Each device's first op that frees an activation before its own forward allocated it there,
    as ``(device, op, forward)``: a backward written before its forward (a dependencies violation)
    would free what the device does not hold, and the levels counted past it would be too low,
    so no memory statement holds for that device.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag
        >>> s = build("1f1b", p=2, m=2)
        >>> p0 = s.programs[0]
        >>> bad = s.with_programs(((p0[2], p0[0], p0[1], p0[3]), s.programs[1]))  # 0B0 0F0 0F1 0B1
        >>> found = frees_before_forward(build_dag(bad, check=False), CostModel.unit(s.placement))
        >>> [(d, str(op), str(f)) for d, op, f in found]
        [(0, '0B0', '0F0')]
    """
    freed = exact_memory_deltas(costs)
    out: list[tuple[int, Op, Op]] = []
    for d in range(len(dag.offsets) - 1):
        seen: set[tuple[int, int]] = set()
        for i in range(dag.offsets[d], dag.offsets[d + 1]):
            op = dag.ops[i]
            if op.kind == "F":
                seen.add((op.stage, op.mb))
            elif freed[(op.kind, op.stage)][1] > 0 and (op.stage, op.mb) not in seen:
                out.append((d, op, Op("F", op.stage, op.mb)))
                break
    return out


def _before_alloc(slot: list[int], ints) -> list[int]:
    # the ops of an overlapped slot written before its forward: PyTorch runs a cell's actions in
    # the order written, so what they free is gone before the forward allocates
    first = next((n for n, i in enumerate(slot) if ints[i][0]), 0)
    return slot[:first]


def _peaks(model: z3.ModelRef, caps: list[tuple[str, int, int]], p: int, scale: int) -> list[float] | None:
    if len(caps) > MAX_PEAK_READ:
        return None
    peaks = [0.0] * p
    for name, d, _ in caps:
        peaks[d] = max(peaks[d], model.eval(z3.Int(name)).as_long() / scale)
    return peaks


def _explain(
    dag: StepDAG,
    ints,
    slots: list[list[int]],
    k: int,
    d: int,
    cap_i: int,
    scale: int,
    cap: float | Fraction,
    costs: CostModel,
) -> Violation:
    """Minimal set of activations held at the start of slot k whose sum exceeds the cap."""
    held: dict[tuple[int, int], int] = {}  # (stage, mb) -> amount still held
    first_f: dict[tuple[int, int], Op] = {}
    for j, slot in enumerate(slots[: k + 1]):
        for i in slot:
            op = dag.ops[i]
            key = (op.stage, op.mb)
            if ints[i][0]:
                held[key] = held.get(key, 0) + ints[i][0]
                first_f[key] = op
        for i in slot if j < k else _before_alloc(slot, ints):
            op = dag.ops[i]
            key = (op.stage, op.mb)
            if ints[i][1] and key in held:
                held[key] -= ints[i][1]
    live = [(key, amt) for key, amt in held.items() if amt > 0]
    s = plain_solver()
    lits = [z3.Bool(f"held_{s_}_{mb}") for (s_, mb), _ in live]
    s.add(z3.Sum([z3.If(x, amt, 0) for x, (_, amt) in zip(lits, live)] + [z3.IntVal(0)]) <= cap_i)

    def check(assume):
        r = decide(s, *assume)
        return r, (list(s.unsat_core()) if r == z3.unsat else [])

    core = minimize_core(check, lits)
    names = {str(x) for x in core}
    ops = tuple(
        sorted((str(first_f[key]) for key, _ in live if f"held_{key[0]}_{key[1]}" in names), key=lambda t: (len(t), t))
    )
    level = Fraction(sum(a for _, a in live), scale)
    starter = dag.ops[next((i for i in slots[k] if ints[i][0]), slots[k][0])]  # the forward that allocates
    one = printed_unit(costs, dag.schedule.placement)
    held_txt, capped = held_and_cap(level / one, _frac(cap) / one, costs.memory_unit)
    return Violation(
        "memory",
        "activation memory <= cap at every instant",
        f"device {d} holds {held_txt} when {starter} starts (cap {capped})",
        ops,
    )
