"""Proofs for all sizes: closed-form schedules satisfy every constraint, for every p and m.

For a family and integer costs (f, b), :mod:`.closed_forms` gives the start time of every op as
a function of (p, m, device, microbatch). Each theorem below is a universally quantified
statement over the integers p, m, d, j (...) in the family's range; Z3 proves it by showing its
negation unsatisfiable (linear integer arithmetic, ``min`` as ``If``: decidable, no
nonlinearity since f and b are constants). A satisfiable negation is a counterexample.

Theorems per family: every start >= 0; every dependency of the step's DAG (F after the previous
stage's F, B after its own F, B after the next stage's B); exclusivity, as each pair of
consecutive ops of the generator's program order (warm-up, steady, drain phases piecewise)
not overlapping; the peak-memory bound (when F(d, j) starts, the activations held are those of
microbatches i0..j, where i0 is the first microbatch whose backward has not ended: their number
is at most the bound; memory peaks at F starts); the makespan. Then :func:`grid_check`
confirms that the closed form *is* the generator's schedule: every op's start equals the slot
engine's on a grid of sizes.

Chimera (m = p, p even, F = 1 and any fixed integer B = b; proved at b = 1, 2 by default): both
pipes run the same timeline per stage (pipe 1 mirrored onto device p-1-s); exclusivity is proved
as pairwise non-overlap of every two ops of a device, within a pipe and across the two pipes
("merged slot by slot they never collide"); the makespan is ``(1+2b) p - 2b`` (5p - 4 at b = 2).
Chimera ``units=continuous`` beyond one unit (n >= p microbatches per pipe, m = 2n, for the same
costs): the same theorems with n free, makespan ``m (1+b) + (p-2) b``. Interleaved 1F1B with
m = p in Megatron's order (``order=megatron``; v = 2, 3; stage ``c p + d`` is linear for a constant
chunk c, so v is fixed per theorem while p is free): all forwards, then a GPipe-like drain; the
grid builds that order explicitly. The family's default, PyTorch's order (its warm-up differs at
m = p), has its own m = p closed form and theorems for F <= B: :mod:`.prove_interleaved_pytorch`;
each order's grid builds that order, so neither form is claimed for the other. For m = k p
(k >= 2) the two orders are the same schedule. Interleaved 1F1B with v = 2, m = k p
(k = 2..8) at F = B = 1: :mod:`.prove_interleaved`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..engines import run
from ..schedules import build
from .closed_forms import (
    chimera_b,
    chimera_cont_b,
    chimera_cont_f,
    chimera_f,
    f1b1_b,
    f1b1_f,
    gpipe_b,
    gpipe_f,
    interleaved_b,
    interleaved_f,
    interleaved_k_b,
    interleaved_k_f,
)
from .family_theorems import COSTS, INTERLEAVED_V, PROVABLE, D, J, M, P, chimera_theorems, theorems
from .theorem import Result, Theorem, prove


def closed_form_starts(
    family: str, p: int, m: int, f: int, b: int, v: int = 2, order: str = "megatron"
) -> dict[str, float]:
    """Start of every op by the closed form (text -> time). Interleaved 1F1B's m = p form is
    Megatron's order, PyTorch's (``order``) its own (F <= B).

    Example:
        >>> closed_form_starts("gpipe", 2, 1, 1, 2)
        {'0F0': 0, '0B0': 4, '1F0': 1, '1B0': 2}
        >>> closed_form_starts("zb-h1", 2, 1, 1, 2)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter family=zb-h1: no closed form; provable: gpipe, 1f1b, chimera, interleaved-1f1b
    """
    # an unknown family got 1F1B's starts, and a chimera shape the generator refuses got starts
    # outside the proved domain, without a word
    if family not in PROVABLE:
        raise ParameterError("family", family, f"no closed form; provable: {', '.join(PROVABLE)}")
    if p < 1 or m < 1:
        raise ParameterError("p" if p < 1 else "m", p if p < 1 else m, "closed forms need p >= 1 and m >= 1")
    if family == "chimera" and (p % 2 or m % p):
        raise ParameterError(
            "p" if p % 2 else "m", p if p % 2 else m, "chimera's closed forms: p even, m a multiple of p"
        )
    if family == "interleaved-1f1b" and order not in ("megatron", "pytorch"):
        raise ParameterError("order", order, "closed forms: order=megatron or order=pytorch")
    if family == "interleaved-1f1b" and v < 2:  # v = 1 is 1F1B, whose own closed form is "1f1b"'s
        raise ParameterError("v", v, "interleaved 1F1B's closed forms need v >= 2 (v = 1 is 1f1b: use its closed form)")
    out: dict[str, float] = {}
    if family == "interleaved-1f1b" and m > p and m % p == 0 and v == 2 and (f, b) == (1, 1):
        k = m // p
        for c in range(2):
            for d in range(p):
                for j in range(m):
                    out[f"{c * p + d}F{j}"] = interleaved_k_f(p, k, c, j // p, d, j % p) / 2
                    out[f"{c * p + d}B{j}"] = interleaved_k_b(p, k, c, j // p, d, j % p) / 2
        return out
    if family == "interleaved-1f1b":  # m = p; chunk-op ticks -> share units: divide by v
        if m != p:
            raise ParameterError("m", m, "interleaved 1F1B's closed forms: m = p, or m = k p with v = 2 at F=B=1")
        if order == "pytorch":
            from .prove_interleaved_pytorch import pytorch_starts

            if f > b:
                raise ParameterError(
                    "costs",
                    f"F={f},B={b}",
                    "interleaved 1F1B's m = p closed form in PyTorch's order is derived for F <= B",
                )
            return pytorch_starts(p, v, f, b)
        for s in range(v * p):
            for j in range(m):
                out[f"{s}F{j}"] = interleaved_f(p, v, s, j, f, b) / v
                out[f"{s}B{j}"] = interleaved_b(p, v, s, j, f, b) / v
        return out
    if family == "chimera":
        h, n = p // 2, m // 2
        if f != 1:
            raise ParameterError("costs", f"F={f},B={b}", "chimera's closed forms are derived for F=1")
        for mb in range(m):
            # index within its pipe: in each unit of p the first h go down, the rest up
            i = (mb // p) * h + mb % p % h
            for s in range(p):
                out[f"{s}F{mb}"] = chimera_f(p, s, i, b) if m == p else chimera_cont_f(p, n, s, i, b)
                out[f"{s}B{mb}"] = chimera_b(p, s, i, b) if m == p else chimera_cont_b(p, n, s, i, b)
        return out
    Ff, Bf = (gpipe_f, gpipe_b) if family == "gpipe" else (f1b1_f, f1b1_b)
    for d in range(p):
        for j in range(m):
            out[f"{d}F{j}"] = Ff(p, m, d, j, f, b)
            out[f"{d}B{j}"] = Bf(p, m, d, j, f, b)
    return out


def grid_check(
    family: str,
    f: int,
    b: int,
    ps: range = range(2, 9),
    ms: range = range(1, 13),
    v: int = 2,
    units: range = range(1, 2),
    order: str = "megatron",
) -> tuple[int, list[str]]:
    """Compare the closed form with the generator's slot timeline on a grid; returns
    ``(schedules compared, mismatches)``. Chimera and interleaved 1F1B use ``m = k p`` for k in
    ``units`` (default: m = p), the others m in ``ms``.

    Example:
        >>> grid_check("1f1b", 1, 2, range(2, 4), range(1, 4))
        (6, [])
        >>> grid_check("chimera", 1, 1, range(2, 7), units=range(1, 4))
        (9, [])
    """
    n, bad = 0, []
    for p in ps:
        for m in [k * p for k in units] if family in ("chimera", "interleaved-1f1b") else ms:
            try:
                # each order's m = p closed form is checked on that order; m = k p (k >= 2): the same
                s = build(family, p=p, m=m, **({"v": v, "order": order} if family == "interleaved-1f1b" else {}))
            except ParameterError:
                continue
            n += 1
            tl = run(s, CostModel.abstract(s.placement, F=f, B=b), semantics="slot")
            cf = closed_form_starts(family, p, m, f, b, v, order)
            for op, st in zip(tl.ops, tl.start):
                # relative: a closed form divided by v = 3 rounds once, and at 8.7e6 units one
                # rounding step is 1.9e-9 (an absolute 1e-9 called that a counterexample)
                if not math.isclose(cf[str(op)], float(st), rel_tol=1e-12, abs_tol=1e-9):
                    bad.append(f"p={p} m={m} {op}: closed form {cf[str(op)]!r}, generator {float(st)!r}")
                    break
    return n, bad


def _grid_result(scope: str, n: int, bad: list[str], seconds: float) -> Result:
    """The "agrees with generator" result of a grid check over ``scope`` (``n`` schedules)."""
    statement = f"closed form == slot timeline of {scope} ({n} schedules)" + ("; first: " + bad[0] if bad else "")
    return Result(
        "agrees with generator",
        statement,
        "counterexample" if bad else "proved",
        {"mismatches": len(bad)} if bad else {},
        seconds,
    )


def _emit(
    label: str, results: list[Result], out: list[tuple[str, Result]], on_result: Callable[[str, Result], None] | None
) -> None:
    for r in results:
        out.append((label, r))
        if on_result:
            on_result(label, r)


def prove_family(
    family: str,
    costs: tuple[tuple[int, int], ...] | None = None,
    on_result: Callable[[str, Result], None] | None = None,
) -> list[tuple[str, Result]]:
    """Prove every theorem of a family at each cost setting, then the grid agreement.

    Returns ``(label, result)`` pairs; ``on_result`` is called as each one is done.

    Example:
        >>> res = prove_family("gpipe", ((1, 2),))
        >>> all(r.status == "proved" for _, r in res), len(res)
        (True, 11)
    """
    if costs is None:
        costs = COSTS
    out: list[tuple[str, Result]] = []
    orders = ("megatron", "pytorch") if family == "interleaved-1f1b" else ("megatron",)
    for v, order in [(v, o) for v in (INTERLEAVED_V if family == "interleaved-1f1b" else (None,)) for o in orders]:
        for f, b in costs:
            if order == "pytorch" and f > b:
                continue  # PyTorch's m = p form is derived for F <= B
            label = f"{family} F={f},B={b}" + (f" v={v}, m=p, order={order}" if v else "")
            _emit(label, [prove(th) for th in theorems(family, f, b, v or 2, order)], out, on_result)
            t = time.perf_counter()
            wide = family in ("chimera", "interleaved-1f1b")
            n, bad = grid_check(family, f, b, range(2, 17) if wide else range(2, 9), v=v or 2, order=order)
            ps = {
                "chimera": "p in 2..16 even, m = p",
                "interleaved-1f1b": f"p in 2..16, m = p, v = {v}, order={order}",
            }.get(family, "p in 2..8, m in 1..12")
            _emit(label, [_grid_result(f"`{family}` for {ps}", n, bad, time.perf_counter() - t)], out, on_result)
    if family == "chimera":
        for _, b in costs:
            out += _chimera_continuous(b, on_result)
    if family == "interleaved-1f1b" and (1, 1) in costs:
        out += _interleaved_two_groups(on_result)
    return out


def _interleaved_two_groups(on_result: Callable[[str, Result], None] | None) -> list[tuple[str, Result]]:
    """Interleaved 1F1B, v = 2, m = k p for k in :data:`.prove_interleaved.GROUPS`, F = B = 1:
    theorems, then the grid."""
    from .prove_interleaved import GROUPS, interleaved_k_theorems

    out: list[tuple[str, Result]] = []
    for k in GROUPS:
        label = f"interleaved-1f1b F=1,B=1 v=2, m={k}p"
        rs = [prove(th) for th in interleaved_k_theorems(k)]
        t = time.perf_counter()
        n, bad = grid_check("interleaved-1f1b", 1, 1, range(2, 13), units=range(k, k + 1), v=2, order="pytorch")
        rs.append(_grid_result(f"`interleaved-1f1b` for p in 2..12, m = {k}p, v = 2", n, bad, time.perf_counter() - t))
        _emit(label, rs, out, on_result)
    return out


def _chimera_continuous(b: int, on_result: Callable[[str, Result], None] | None) -> list[tuple[str, Result]]:
    """Chimera ``units=continuous`` beyond one unit (m = k p, k >= 2) at F = 1, B = b: the
    theorems, then the grid."""
    label = f"chimera F=1,B={b} units=continuous, m = 2n >= 2p"
    out: list[tuple[str, Result]] = []
    rs = [prove(th) for th in chimera_theorems(b, continuous=True)]
    t = time.perf_counter()
    n, bad = grid_check("chimera", 1, b, range(2, 13), units=range(2, 5))
    rs.append(
        _grid_result(
            "`chimera` (units=continuous) for p in 2..12 even, m = k p, k in 2..4", n, bad, time.perf_counter() - t
        )
    )
    _emit(label, rs, out, on_result)
    return out


__all__ = [
    "COSTS",
    "INTERLEAVED_V",
    "PROVABLE",
    "D",
    "J",
    "M",
    "P",
    "Result",
    "Theorem",
    "chimera_theorems",
    "closed_form_starts",
    "grid_check",
    "prove",
    "prove_family",
    "theorems",
]
