"""Proofs for all p: interleaved 1F1B with m = p in PyTorch's order (``order=pytorch``, the
family's default), v chunks (a constant per theorem), integer costs F = f <= B = b.

PyTorch warms device d up with ``w_d = min((v-1) p + 2 (p-1-d), v p)`` forwards, so with
``e = 2 (p-1-d) < p`` the last chunk's forwards ``e, e+1, ...`` alternate with its backwards
``0, 1, ...`` (the k-th forward of a device is chunk ``k div p``, microbatch ``k mod p``; the
backwards walk the chunks mirrored). Starts in chunk-op ticks (derived here; every op of the
other chunks starts as in Megatron's order, :func:`.closed_forms.interleaved_f` / ``_b``):

* last chunk, forward j > e: ``max((s + j) f, (v p + j - e - 1) f + (j - (p-1-d)) b)``, the end
  of the backward ``j - e - 1`` that precedes it on the device;
* last chunk, backward j: ``(v p + j) f + (p-1-d + j) b`` (the last stage's backwards run every
  f + b, one forward between two).

With f > b the backwards wait for the forwards instead and these forms do not hold (refused).
Exclusivity is proved as the device's program order: forwards in sequence, backwards in
sequence, and in the steady phase each backward between its two forwards. Stage ``c p + d`` is
linear because c is a constant, as in :mod:`.prove`.
"""

from __future__ import annotations

from typing import Any

import z3

from ..core.errors import ParameterError
from .closed_forms import interleaved_b, ite, zmax
from .theorem import Theorem


def pytorch_f(p: Any, v: int, c: int, d: Any, j: Any, f: int, b: int) -> Any:
    """Start of F of stage ``c p + d``, microbatch j (m = p, PyTorch's order, f <= b), in
    chunk-op ticks.

    Example:
        >>> [pytorch_f(4, 2, 1, 3, j, 1, 2) for j in range(4)]  # last stage: every f + b
        [7, 10, 13, 16]
    """
    base = (c * p + d + j) * f
    if c < v - 1:
        return base
    e = 2 * (p - 1 - d)
    return ite(j > e, zmax(base, (v * p + j - e - 1) * f + (j - (p - 1 - d)) * b), base)


def pytorch_b(p: Any, v: int, c: int, d: Any, j: Any, f: int, b: int) -> Any:
    """Start of B of stage ``c p + d``, microbatch j (m = p, PyTorch's order, f <= b), in
    chunk-op ticks.

    Example:
        >>> [pytorch_b(4, 2, 1, 3, j, 1, 2) for j in range(4)], pytorch_b(4, 2, 0, 0, 3, 1, 2)
        ([8, 11, 14, 17], 31)
    """
    if c == v - 1:
        return (v * p + j) * f + (p - 1 - d + j) * b
    return interleaved_b(p, v, c * p + d, j, f, b)


def pytorch_theorems(v: int, f: int, b: int) -> list[Theorem]:
    """The theorems for interleaved 1F1B, m = p, PyTorch's order, v chunks, F=f <= B=b.

    Example:
        >>> [t.name for t in pytorch_theorems(2, 1, 2)][:3]
        ['starts', 'dep F<-F', 'dep B<-F']
    """
    if f > b or v < 2:
        raise ParameterError(
            "costs",
            f"F={f},B={b}",
            "the closed form of interleaved 1F1B's PyTorch order at m = p is derived for F <= B and v >= 2",
        )
    P, D, J, E, I = z3.Ints("p d j e i")

    def F(c, d, j):
        return pytorch_f(P, v, c, d, j, f, b)

    def B(c, d, j):
        return pytorch_b(P, v, c, d, j, f, b)

    base = z3.And(P >= 2, D >= 0, D < P, J >= 0, J < P)
    C = range(v)
    q = f"for all p >= 2, m = p, v = {v}, order=pytorch, 0 <= d < p, 0 <= j < p, every chunk c < {v}"
    last = v - 1
    steady = z3.And(base, E == 2 * (P - 1 - D), E < P, I >= 0, E + I < P)
    end = (v * P + P - 1) * (f + b)
    return [
        Theorem(
            "starts", f"{q}: every start >= 0", base, z3.And([z3.And(F(c, D, J) >= 0, B(c, D, J) >= 0) for c in C])
        ),
        Theorem(
            "dep F<-F",
            f"{q}: F(c p+d, j) >= F(c p+d-1, j) + f (d >= 1) and F((c+1) p, j) >= F(c p+p-1, j) + f",
            base,
            z3.And(
                [
                    z3.And(
                        z3.Implies(D >= 1, F(c, D, J) >= F(c, D - 1, J) + f),
                        F(c + 1, 0, J) >= F(c, P - 1, J) + f if c < last else True,
                    )
                    for c in C
                ]
            ),
        ),
        Theorem("dep B<-F", f"{q}: B >= its own F + f", base, z3.And([B(c, D, J) >= F(c, D, J) + f for c in C])),
        Theorem(
            "dep B<-B",
            f"{q}: B(c p+d, j) >= B(c p+d+1, j) + b (d <= p-2) and B(c p+p-1, j) >= B((c+1) p, j) + b",
            base,
            z3.And(
                [
                    z3.And(
                        z3.Implies(D <= P - 2, B(c, D, J) >= B(c, D + 1, J) + b),
                        B(c, P - 1, J) >= B(c + 1, 0, J) + b if c < last else True,
                    )
                    for c in C
                ]
            ),
        ),
        Theorem(
            "excl forwards",
            f"{q}: each forward of device d ends before its next one starts (j+1 < p, and "
            "chunk c's last before chunk c+1's first)",
            base,
            z3.And(
                [
                    z3.And(
                        z3.Implies(J + 1 < P, F(c, D, J + 1) >= F(c, D, J) + f),
                        F(c + 1, D, 0) >= F(c, D, P - 1) + f if c < last else True,
                    )
                    for c in C
                ]
            ),
        ),
        Theorem(
            "excl backwards",
            f"{q}: each backward of device d ends before its next one starts (j+1 < p, and "
            "chunk c's last before chunk c-1's first)",
            base,
            z3.And(
                [
                    z3.And(
                        z3.Implies(J + 1 < P, B(c, D, J + 1) >= B(c, D, J) + b),
                        B(c - 1, D, 0) >= B(c, D, P - 1) + b if c >= 1 else True,
                    )
                    for c in C
                ]
            ),
        ),
        Theorem(
            "excl steady",
            f"{q}, e = 2(p-1-d) < p, 0 <= i < p-e: the last chunk's forward e+i ends before its "
            "backward i starts, which ends before forward e+i+1 (if any) starts",
            steady,
            z3.And(
                B(last, D, I) >= F(last, D, E + I) + f,
                z3.Implies(E + I + 1 < P, F(last, D, E + I + 1) >= B(last, D, I) + b),
            ),
        ),
        Theorem(
            "excl turn",
            f"{q}, 2(p-1-d) >= p (every forward first): the first backward starts after the last forward ends",
            z3.And(base, 2 * (P - 1 - D) >= P),
            B(last, D, 0) >= F(last, D, P - 1) + f,
        ),
        Theorem(
            "memory",
            f"{q}, e = 2(p-1-d) < p, 1 <= i < p-e: forward e+i of the last chunk starts after backward "
            "i-1 ends and before backward i ends, so device d then holds exactly "
            "w_d + 1 = (v-1)p + e + 1 chunk activations (its peak; every forward first elsewhere: v p)",
            z3.And(steady, I >= 1),
            z3.And(F(last, D, E + I) >= B(last, D, I - 1) + b, F(last, D, E + I) < B(last, D, I) + b),
        ),
        Theorem(
            "makespan",
            f"{q}: every op ends by (v p + p - 1)(f + b) chunk ticks = (p + (p-1)/v)(f + b) device "
            "shares, the last B(stage 0, microbatch p-1) exactly then (Megatron's order's makespan)",
            base,
            z3.And([z3.And(F(c, D, J) + f <= end, B(c, D, J) + b <= end) for c in C] + [B(0, 0, P - 1) + b == end]),
        ),
    ]


def pytorch_starts(p: int, v: int, f: int, b: int) -> dict[str, float]:
    """Start of every op (text -> time, in device shares) by the closed form.

    Example:
        >>> s = pytorch_starts(2, 2, 1, 1)
        >>> s["3F0"], s["3B0"], s["3F1"], s["3B1"]
        (1.5, 2.0, 2.5, 3.0)
    """
    out: dict[str, float] = {}
    for c in range(v):
        for d in range(p):
            for j in range(p):
                out[f"{c * p + d}F{j}"] = pytorch_f(p, v, c, d, j, f, b) / v
                out[f"{c * p + d}B{j}"] = pytorch_b(p, v, c, d, j, f, b) / v
    return out
