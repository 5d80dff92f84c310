"""Proofs for all p: interleaved 1F1B with v = 2 chunks and m = k p microbatches (k = 2..8, :data:`GROUPS`)
at F = B = 1 (for m = k p, k >= 2, PyTorch's and Megatron's warm-up rules give the same order).

Device d holds stages d (chunk 0) and p + d (chunk 1); microbatch ``g p + r`` is in group g.
:func:`.closed_forms.interleaved_k_f` / ``interleaved_k_b`` give every start in chunk-op ticks as
a function of (p, d, r) for each of the 4k blocks (F/B x chunk x group), so every statement is
linear in the integers p, d, r (k and the block are constants: ``g p`` with g free would be
nonlinear), and Z3 proves it for all p >= 2, one k at a time.
Exclusivity: all ops last one tick, so two ops of a device never overlap iff their starts differ;
proved for every pair of blocks. Memory: starts increase with r inside a block (proved), so when a
forward starts the activations a block holds are an interval of r, as in :mod:`.prove`.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import z3

from .closed_forms import interleaved_k_b, interleaved_k_f
from .theorem import Theorem

#: group counts proved (m = k p): k is a constant per theorem
GROUPS: tuple[int, ...] = (2, 3, 4, 5, 6, 7, 8)


def blocks(k: int) -> tuple[tuple[str, int, int], ...]:
    """The (kind, chunk, group) blocks of interleaved 1F1B with v = 2, m = k p.

    Example:
        >>> len(blocks(2)), blocks(2)[:2]
        (8, (('F', 0, 0), ('F', 0, 1)))
    """
    return tuple((kind, c, g) for kind in "FB" for c in (0, 1) for g in range(k))


def interleaved_k_theorems(
    k: int = 2, F: Callable[..., Any] = interleaved_k_f, B: Callable[..., Any] = interleaved_k_b
) -> list[Theorem]:
    """The theorems for interleaved 1F1B, v = 2, m = k p, F = B = 1 (``F(p, k, c, g, d, r)``,
    ``B(...)`` default to the closed forms; pass others to test a claim).

    Example:
        >>> [t.name for t in interleaved_k_theorems(3)][:3]
        ['starts', 'dep F<-F', 'dep B<-F']
    """
    P, D, R, R2, T = z3.Ints("p d r r2 t")

    def st(kind, c, g, d, r):
        return (F if kind == "F" else B)(P, k, c, g, d, r)

    base = z3.And(P >= 2, D >= 0, D < P, R >= 0, R < P, R2 >= 0, R2 < P)
    q = f"for all p >= 2, m = {k}p, v = 2, 0 <= d < p, 0 <= r, r2 < p, each chunk c and group g (microbatch g p + r)"
    G, GS, BLOCKS = (0, 1), range(k), blocks(k)
    deps_f = z3.And(
        [z3.Implies(D >= 1, st("F", c, g, D, R) >= st("F", c, g, D - 1, R) + 1) for c in G for g in GS]
        + [st("F", 1, g, 0, R) >= st("F", 0, g, P - 1, R) + 1 for g in GS]
    )
    deps_b = z3.And(
        [z3.Implies(D <= P - 2, st("B", c, g, D, R) >= st("B", c, g, D + 1, R) + 1) for c in G for g in GS]
        + [st("B", 0, g, P - 1, R) >= st("B", 1, g, 0, R) + 1 for g in GS]
    )
    ths = [
        Theorem("starts", f"{q}: every start >= 0", base, z3.And([st(kd, c, g, D, R) >= 0 for kd, c, g in BLOCKS])),
        Theorem(
            "dep F<-F",
            f"{q}: F(stage s) >= F(stage s-1) + 1 (within a chunk and from chunk 0's last stage to chunk 1's first)",
            base,
            deps_f,
        ),
        Theorem(
            "dep B<-F",
            f"{q}: B >= its own F + 1",
            base,
            z3.And([st("B", c, g, D, R) >= st("F", c, g, D, R) + 1 for c in G for g in GS]),
        ),
        Theorem("dep B<-B", f"{q}: B(stage s) >= B(stage s+1) + 1", base, deps_b),
        Theorem(
            "monotone",
            f"{q}, r < r2: in each block the start at r + 1 <= the start at r2",
            z3.And(base, R < R2),
            z3.And([st(kd, c, g, D, R) + 1 <= st(kd, c, g, D, R2) for kd, c, g in BLOCKS]),
        ),
    ]
    pairs = list(combinations(BLOCKS, 2))  # same block, r != r2: by "monotone"
    ths.append(
        Theorem(
            "excl",
            f"{q}: two ops of device d in different blocks (F/B x chunk x group, {len(pairs)} pairs) never start "
            "in the same tick (each lasts one tick)",
            base,
            z3.And([st(*a, D, R) != st(*b, D, R2) for a, b in pairs]),
        )
    )
    # memory at the start t of a forward on device d: per block (c, g) the held microbatches are
    # an interval [a, e] of r (monotone starts)
    ivs = {(c, g): z3.Ints(f"a{c}{g} e{c}{g}") for c in G for g in GS}

    def interval(c, g):
        a, e = ivs[c, g]
        f = lambda r: st("F", c, g, D, r)  # noqa: E731
        b = lambda r: st("B", c, g, D, r)  # noqa: E731
        return z3.And(
            e >= -1,
            e < P,
            z3.Or(e == -1, f(e) <= T),
            z3.Or(e == P - 1, f(e + 1) > T),
            a >= 0,
            a <= P,
            z3.Or(a == P, b(a) + 1 > T),
            z3.Or(a == 0, b(a - 1) + 1 <= T),
        )

    held = sum(z3.If(e - a + 1 > 0, e - a + 1, 0) for a, e in ivs.values())
    at_f = z3.Or([st("F", c, g, D, R) == T for c in G for g in GS])
    ths.append(
        Theorem(
            "memory",
            f"{q}: when a forward starts on device d, it holds at most 3p - 1 - 2d chunk activations "
            "(Megatron's warm-up (p-d-1)*2 + (v-1)p, plus one)",
            z3.And(base, at_f, *[interval(c, g) for c in G for g in GS]),
            held <= 3 * P - 1 - 2 * D,
        )
    )
    end = (4 * k + 2) * P - 2
    ths.append(
        Theorem(
            "makespan",
            f"{q}: every op ends by {4 * k + 2}p - 2 ticks = (m + (p-1)/v)(tF+tB) = {2 * k + 1}p - 1 shares, "
            f"the last B(stage 0, microbatch {k}p-1) exactly then",
            base,
            z3.And([st(kd, c, g, D, R) + 1 <= end for kd, c, g in BLOCKS] + [st("B", 0, k - 1, 0, P - 1) + 1 == end]),
        )
    )
    return ths
