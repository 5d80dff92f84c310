"""The theorems of each provable family (:mod:`.prove` proves them and checks the closed forms
against the generators): GPipe and 1F1B, Chimera (one basic unit and ``units=continuous``),
interleaved 1F1B at m = p in Megatron's order; PyTorch's order and m = k p live in
:mod:`.prove_interleaved_pytorch` and :mod:`.prove_interleaved`. The module doc of :mod:`.prove`
states what each theorem says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from ..core.errors import ParameterError
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
    warmup_1f1b,
    zmin,
)
from .theorem import Theorem

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
    Fc: Callable[..., Any]  # F(p, n, s, i) when continuous, else F(p, s, i)
    Bc: Callable[..., Any]
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
                "chimera's closed form is derived for F=1 (any integer B >= 1); scale both costs so that F=1 "
                "(possible where B is a multiple of F)",
            )
        return chimera_theorems(b)
    if family == "interleaved-1f1b" and order not in ("megatron", "pytorch"):  # not Megatron's by default
        raise ParameterError("order", order, "interleaved 1F1B's theorems: order=megatron or order=pytorch")
    if family == "interleaved-1f1b" and v < 2:
        raise ParameterError("v", v, "interleaved 1F1B's theorems need v >= 2 (v = 1 is 1f1b: prove 1f1b)")
    if family == "interleaved-1f1b" and order == "pytorch":
        from .prove_interleaved_pytorch import pytorch_theorems

        return pytorch_theorems(v, f, b)
    if family == "interleaved-1f1b":
        return _interleaved_theorems(v, f, b)
    raise ParameterError("family", family, f"no closed form to prove; provable: {', '.join(PROVABLE)}")


__all__ = ["COSTS", "I0", "INTERLEAVED_V", "PROVABLE", "D", "J", "K", "M", "P", "chimera_theorems", "theorems"]
