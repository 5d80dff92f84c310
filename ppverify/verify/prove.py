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

import time
from collections.abc import Callable
from typing import Any

import z3

from ..costs import CostModel
from ..engines import run
from ..errors import ParameterError
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
    warmup_1f1b,
    zmin,
)
from .theorem import Result, Theorem, prove

PROVABLE: tuple[str, ...] = ("gpipe", "1f1b", "chimera", "interleaved-1f1b")
#: chunk counts proved for interleaved 1F1B (stage = c p + d is linear only for a constant c)
INTERLEAVED_V: tuple[int, ...] = (2, 3)
COSTS: tuple[tuple[int, int], ...] = ((1, 1), (1, 2))


P, M, D, J, K, I0 = z3.Ints("p m d j k i0")


def _linear_theorems(fam: str, f: int, b: int) -> list[Theorem]:
    """Theorems shared by GPipe and 1F1B (linear placement, one pipe, full backward)."""
    Ff, Bf = (gpipe_f, gpipe_b) if fam == "gpipe" else (f1b1_f, f1b1_b)
    F = lambda d, j: Ff(P, M, d, j, f, b)  # noqa: E731
    B = lambda d, j: Bf(P, M, d, j, f, b)  # noqa: E731
    base = z3.And(P >= 2, M >= 1, D >= 0, D < P)
    mb = z3.And(J >= 0, J < M)
    q = "for all p >= 2, m >= 1, 0 <= d < p, 0 <= j < m"
    ths = [
        Theorem("starts", f"{q}: F(d,j) >= 0 and B(d,j) >= 0", z3.And(base, mb), z3.And(F(D, J) >= 0, B(D, J) >= 0)),
        Theorem(
            "dep F<-F", f"{q}, d >= 1: F(d,j) >= F(d-1,j) + f", z3.And(base, mb, D >= 1), F(D, J) >= F(D - 1, J) + f
        ),
        Theorem("dep B<-F", f"{q}: B(d,j) >= F(d,j) + f", z3.And(base, mb), B(D, J) >= F(D, J) + f),
        Theorem(
            "dep B<-B",
            f"{q}, d <= p-2: B(d,j) >= B(d+1,j) + b",
            z3.And(base, mb, D <= P - 2),
            B(D, J) >= B(D + 1, J) + b,
        ),
    ]
    if fam == "gpipe":
        ths += [
            Theorem(
                "excl F,F",
                f"{q}, j+1 < m: F(d,j+1) >= F(d,j) + f",
                z3.And(base, mb, J + 1 < M),
                F(D, J + 1) >= F(D, J) + f,
            ),
            Theorem(
                "excl F,B",
                "for all p >= 2, m >= 1, 0 <= d < p: B(d,0) >= F(d,m-1) + f",
                base,
                B(D, 0) >= F(D, M - 1) + f,
            ),
            Theorem(
                "excl B,B",
                f"{q}, j+1 < m: B(d,j+1) >= B(d,j) + b",
                z3.And(base, mb, J + 1 < M),
                B(D, J + 1) >= B(D, J) + b,
            ),
        ]
        bound, bound_text = M, "m"
    else:
        w = warmup_1f1b(P, M, D)
        ths += [
            Theorem(
                "excl warm-up",
                f"{q}, j+1 <= w, j+1 < m (w = min(p-1-d, m)): F(d,j+1) >= F(d,j) + f",
                z3.And(base, mb, w >= J + 1, J + 1 < M),
                F(D, J + 1) >= F(D, J) + f,
            ),
            Theorem(
                "excl steady F,B",
                f"{q.replace('0 <= j < m', '0 <= k < m-w')}: B(d,k) >= F(d,w+k) + f",
                z3.And(base, K >= 0, M - w > K),
                B(D, K) >= F(D, w + K) + f,
            ),
            Theorem(
                "excl steady B,F",
                f"{q.replace('0 <= j < m', '0 <= k < m-w-1')}: F(d,w+k+1) >= B(d,k) + b",
                z3.And(base, K >= 0, M - w - 1 > K),
                F(D, w + K + 1) >= B(D, K) + b,
            ),
            Theorem(
                "excl drain",
                f"{q.replace('0 <= j < m', 'max(m-w-1, 0) <= k < m-1')}: B(d,k+1) >= B(d,k) + b",
                z3.And(base, K >= 0, M - w - 1 <= K, K < M - 1),
                B(D, K + 1) >= B(D, K) + b,
            ),
            Theorem(
                "excl no steady",
                "for all p >= 2, m >= 1, 0 <= d < p with w = m: B(d,0) >= F(d,m-1) + f",
                z3.And(base, w == M),
                B(D, 0) >= F(D, M - 1) + f,
            ),
        ]
        bound, bound_text = zmin(P - D, M), "min(p-d, m)"
    # memory: B and F increase with the microbatch, so when F(d,j) starts the activations held
    # are exactly i0..j, i0 the first microbatch whose backward has not ended
    held = z3.And(base, I0 >= 0, I0 <= J, J < M, B(D, I0) + b > F(D, J), z3.Or(I0 == 0, B(D, I0 - 1) + b <= F(D, J)))
    ths += [
        Theorem(
            "monotone",
            f"{q}, j+1 < m: F(d,j+1) > F(d,j) and B(d,j+1) > B(d,j)",
            z3.And(base, mb, J + 1 < M),
            z3.And(F(D, J + 1) > F(D, J), B(D, J + 1) > B(D, J)),
        ),
        Theorem(
            "memory",
            f"{q}: when F(d,j) starts, the held activations i0..j number at most {bound_text}",
            held,
            bound >= J - I0 + 1,
        ),
        Theorem(
            "makespan",
            f"{q}: every op ends by (m+p-1)(f+b), and B(0,m-1) ends exactly then",
            z3.And(base, mb),
            z3.And(
                F(D, J) + f <= (M + P - 1) * (f + b),
                B(D, J) + b <= (M + P - 1) * (f + b),
                B(0, M - 1) + b == (M + P - 1) * (f + b),
            ),
        ),
    ]
    return ths


def _disjoint(x: Any, dx: int, y: Any, dy: int) -> Any:
    """Intervals ``[x, x+dx)`` and ``[y, y+dy)`` do not overlap."""
    return z3.Or(x + dx <= y, y + dy <= x)


def chimera_theorems(
    b: int = 1, F: Callable[..., Any] | None = None, B: Callable[..., Any] | None = None, continuous: bool = False
) -> list[Theorem]:
    """Chimera at F = 1, B = b: the basic unit (m = p, p = 2h even; :func:`.closed_forms.chimera_f`)
    or, with ``continuous``, ``units=continuous`` beyond one unit: any n >= p microbatches per
    pipe (m = 2n; :func:`.closed_forms.chimera_cont_f`).

    ``F``/``B`` default to the closed forms, called as ``F(p, s, i)`` (unit) or ``F(p, n, s, i)``
    (continuous); pass others to test a claim. One function serves both pipes (pipe 1 mirrors
    pipe 0: its stage s runs at pipe 0's stage-s times, on device p-1-s), so dependencies are
    proved per stage and exclusivity per device d over pipe 0's stage d and pipe 1's stage p-1-d.

    Example:
        >>> [t.name for t in chimera_theorems(2)][:4]
        ['starts', 'dep F<-F', 'dep B<-F', 'dep B<-B']
    """
    H, N, I1, I2, T = z3.Ints("h n i1 i2 t")
    p = 2 * H
    if continuous:
        n = N
        Fc = F or (lambda pp, nn, s, i: chimera_cont_f(pp, nn, s, i, b))
        Bc = B or (lambda pp, nn, s, i: chimera_cont_b(pp, nn, s, i, b))
        Fs = lambda s, i: Fc(p, N, s, i)  # noqa: E731
        Bs = lambda s, i: Bc(p, N, s, i)  # noqa: E731
        base = z3.And(H >= 1, p <= N, D >= 0, p > D)
        q = "for all h >= 1, p = 2h, n >= p (per pipe; m = 2n), 0 <= d < p, 0 <= i1, i2 < n"
    else:
        n = H
        Fc, Bc = F or (lambda pp, s, i: chimera_f(pp, s, i, b)), B or (lambda pp, s, i: chimera_b(pp, s, i, b))
        Fs = lambda s, i: Fc(p, s, i)  # noqa: E731
        Bs = lambda s, i: Bc(p, s, i)  # noqa: E731
        base = z3.And(H >= 1, D >= 0, p > D)
        q = "for all h >= 1, p = 2h, 0 <= d < p, 0 <= i1, i2 < h"
    c = p - 1 - D  # the other pipe's stage on device D
    mbs = z3.And(I1 >= 0, n > I1, I2 >= 0, n > I2)
    ths = [
        Theorem(
            "starts", f"{q}: F(d,i1) >= 0 and B(d,i1) >= 0", z3.And(base, mbs), z3.And(Fs(D, I1) >= 0, Bs(D, I1) >= 0)
        ),
        Theorem(
            "dep F<-F",
            f"{q}, d >= 1: F(d,i1) >= F(d-1,i1) + 1",
            z3.And(base, mbs, D >= 1),
            Fs(D, I1) >= Fs(D - 1, I1) + 1,
        ),
        Theorem("dep B<-F", f"{q}: B(d,i1) >= F(d,i1) + 1", z3.And(base, mbs), Bs(D, I1) >= Fs(D, I1) + 1),
        Theorem(
            "dep B<-B",
            f"{q}, d <= p-2: B(d,i1) >= B(d+1,i1) + {b}",
            z3.And(base, mbs, p - 2 >= D),
            Bs(D, I1) >= Bs(D + 1, I1) + b,
        ),
        Theorem(
            "monotone",
            f"{q}, i1 < i2: F(d,i1) + 1 <= F(d,i2) and B(d,i1) + {b} <= B(d,i2)",
            z3.And(base, mbs, I1 < I2),
            z3.And(Fs(D, I1) + 1 <= Fs(D, I2), Bs(D, I1) + b <= Bs(D, I2)),
        ),
        Theorem(
            "excl own pipe",
            f"{q}: [F(d,i1), +1) and [B(d,i2), +{b}) do not overlap",
            z3.And(base, mbs),
            _disjoint(Fs(D, I1), 1, Bs(D, I2), b),
        ),
    ]
    for k1, f1, d1 in (("F", Fs, 1), ("B", Bs, b)):
        for k2, f2, d2 in (("F", Fs, 1), ("B", Bs, b)):
            ths.append(
                Theorem(
                    f"excl pipes {k1}/{k2}",
                    f"{q}: pipe 0's {k1}(stage d, i1) and pipe 1's {k2}(stage p-1-d, i2), both on device d, "
                    "do not overlap",
                    z3.And(base, mbs),
                    _disjoint(f1(D, I1), d1, f2(c, I2), d2),
                )
            )
    # memory at t = the start of a forward on device D: per pipe the held microbatches form an
    # interval [a, e] (monotone starts): e = last forward started by t, a = first backward not ended
    A0, E0, A1, E1 = z3.Ints("a0 e0 a1 e1")

    def interval(st, a, e):
        return z3.And(
            e >= -1,
            e < n,
            z3.Or(e == -1, Fs(st, e) <= T),
            z3.Or(e == n - 1, Fs(st, e + 1) > T),
            a >= 0,
            a <= n,
            z3.Or(a == n, Bs(st, a) + b > T),
            z3.Or(a == 0, Bs(st, a - 1) + b <= T),
        )

    held = lambda a, e: z3.If(e - a + 1 > 0, e - a + 1, 0)  # noqa: E731
    if continuous:  # 1F1B's min(p - stage, n) per pipe: pipe 1's stage on device d is p-1-d
        bound, cap = zmin(p - D, N) + zmin(D + 1, N), p + 1
        bound_text = "min(p-d, n) + min(d+1, n) = p+1 (each pipe's 1F1B in-flight count)"
        end = 2 * N * (1 + b) + (p - 2) * b
        end_text = (
            f"{2 * (1 + b)}n + "
            + ("p - 2" if b == 1 else f"{b}(p-2)")
            + " (= m(tF+tB) + (p-2)max(tF,tB), Li & Hoefler)"
        )
    else:
        bound, cap = H + 1 + zmin(D, p - 1 - D), p
        bound_text = "h + 1 + min(d, p-1-d) (p/2+1 at the edges, p in the middle)"
        end = p * (1 + b) + (p - 2) * b  # = (1+2b) p - 2b
        end_text = f"{1 + 2 * b}p - {2 * b} (Li & Hoefler's m(tF+tB) + (p-2)max(tF,tB) at m = p)"
    ths.append(
        Theorem(
            "memory",
            f"{q}: when a forward starts on device d, the activations held (both pipes) number at most {bound_text}",
            z3.And(base, mbs, z3.Or(Fs(D, I1) == T, Fs(c, I1) == T), interval(D, A0, E0), interval(c, A1, E1)),
            z3.And(held(A0, E0) + held(A1, E1) <= bound, bound <= cap),
        )
    )
    ths.append(
        Theorem(
            "makespan",
            f"{q}: every op ends by {end_text}, and B(0, {'n' if continuous else 'h'}-1) ends exactly then",
            z3.And(base, mbs),
            z3.And(Fs(D, I1) + 1 <= end, Bs(D, I1) + b <= end, Bs(0, n - 1) + b == end),
        )
    )
    return ths


def _interleaved_theorems(v: int, f: int, b: int) -> list[Theorem]:
    """Interleaved 1F1B with m = p in Megatron's order (every forward first) and v chunks
    (constant), costs in chunk-op ticks."""
    F = lambda s, j: interleaved_f(P, v, s, j, f, b)  # noqa: E731
    B = lambda s, j: interleaved_b(P, v, s, j, f, b)  # noqa: E731
    base = z3.And(P >= 2, D >= 0, D < P, J >= 0, J < P, K >= 0, K < P)
    S = v * P
    q = f"for all p >= 2, m = p, v = {v}, order=megatron, 0 <= d < p, 0 <= j, k < p, every chunk c < {v} (stage s = c p + d)"

    def every(fn):
        return z3.And([fn(c * P + D, c) for c in range(v)])

    return [
        Theorem("starts", f"{q}: F(s,j) >= 0", base, every(lambda s, c: F(s, J) >= 0)),
        Theorem(
            "dep F<-F",
            f"{q}, s >= 1: F(s,j) >= F(s-1,j) + f",
            base,
            every(lambda s, c: z3.Implies(s >= 1, F(s, J) >= F(s - 1, J) + f)),
        ),
        Theorem("dep B<-F", f"{q}: B(s,j) >= F(s,j) + f", base, every(lambda s, c: B(s, J) >= F(s, J) + f)),
        Theorem(
            "dep B<-B",
            f"{q}, s <= S-2: B(s,j) >= B(s+1,j) + b",
            base,
            every(lambda s, c: z3.Implies(s <= S - 2, B(s, J) >= B(s + 1, J) + b)),
        ),
        Theorem(
            "excl forwards",
            f"{q}: F(c p+d, j+1) >= F(c p+d, j) + f (j+1 < p) and F((c+1) p+d, 0) >= F(c p+d, p-1) + f (c+1 < v)",
            base,
            every(
                lambda s, c: z3.And(
                    z3.Implies(J + 1 < P, F(s, J + 1) >= F(s, J) + f),
                    F(s + P, 0) >= F(s, P - 1) + f if c + 1 < v else True,
                )
            ),
        ),
        Theorem(
            "excl turn",
            f"{q}: the first backward B((v-1) p+d, 0) >= the last forward F((v-1) p+d, p-1) + f",
            base,
            B((v - 1) * P + D, 0) >= F((v - 1) * P + D, P - 1) + f,
        ),
        Theorem(
            "excl backwards",
            f"{q}: B(s, j+1) >= B(s, j) + b (j+1 < p) and B((c-1) p+d, 0) >= B(c p+d, p-1) + b (c >= 1)",
            base,
            every(
                lambda s, c: z3.And(
                    z3.Implies(J + 1 < P, B(s, J + 1) >= B(s, J) + b),
                    B(s - P, 0) >= B(s, P - 1) + b if c >= 1 else True,
                )
            ),
        ),
        Theorem(
            "memory",
            f"{q}: every backward on device d starts after every forward ends, so the device "
            f"holds all {v} p chunk activations (p device shares) at its peak and never more",
            base,
            z3.And([B(c1 * P + D, J) >= F(c2 * P + D, K) + f for c1 in range(v) for c2 in range(v)]),
        ),
        Theorem(
            "makespan",
            f"for all p >= 2, m = p, v = {v}, order=megatron: the step ends at B(0, p-1) + b = (v p + p - 1)(f + b) "
            f"chunk ticks, i.e. (p + (p-1)/v)(f + b) in device shares",
            P >= 2,
            B(0, P - 1) + b == (v * P + P - 1) * (f + b),
        ),
    ]


def theorems(family: str, f: int, b: int, v: int = 2, order: str = "megatron") -> list[Theorem]:
    """The theorems of a provable family at integer costs F=f, B=b (interleaved 1F1B: m = p in
    ``order``, Megatron's or PyTorch's).

    Example:
        >>> [t.name for t in theorems("gpipe", 1, 2)][:3]
        ['starts', 'dep F<-F', 'dep B<-F']
    """
    if family in ("gpipe", "1f1b"):
        return _linear_theorems(family, f, b)
    if family == "chimera":
        if f != 1:
            raise ParameterError(
                "costs",
                f"F={f},B={b}",
                "chimera's closed form is derived for F=1 (any integer B >= 1); scale both costs so that F=1",
            )
        return chimera_theorems(b)
    if family == "interleaved-1f1b" and order == "pytorch":
        from .prove_interleaved_pytorch import pytorch_theorems

        return pytorch_theorems(v, f, b)
    if family == "interleaved-1f1b":
        return _interleaved_theorems(v, f, b)
    raise ParameterError("family", family, f"no closed form to prove; provable: {', '.join(PROVABLE)}")


def closed_form_starts(
    family: str, p: int, m: int, f: int, b: int, v: int = 2, order: str = "megatron"
) -> dict[str, float]:
    """Start of every op by the closed form (text -> time). Interleaved 1F1B's m = p form is
    Megatron's order, PyTorch's (``order``) its own (F <= B).

    Example:
        >>> closed_form_starts("gpipe", 2, 1, 1, 2)
        {'0F0': 0, '0B0': 4, '1F0': 1, '1B0': 2}
    """
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
        if order != "megatron":
            raise ParameterError("order", order, "closed forms: order=megatron or order=pytorch")
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
                if abs(cf[str(op)] - float(st)) > 1e-9:
                    bad.append(f"p={p} m={m} {op}: closed form {cf[str(op)]}, generator {float(st):g}")
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
    out = []
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

    out = []
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
    label, out = f"chimera F=1,B={b} units=continuous, m = 2n >= 2p", []
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
