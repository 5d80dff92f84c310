"""Closed-form start times of schedule families, as functions of (p, m, device, microbatch) for
fixed integer costs ``f`` (forward) and ``b`` (backward).

Each function works on plain integers (to compare with the generators' tables on a grid) and on
Z3 integer terms (to prove properties for all sizes in :mod:`.prove`): the same definition
serves both, through :func:`ite` and :func:`zmin`.

Derivations (device d holds stage d; ``w = min(p-1-d, m)`` is 1F1B's warm-up):

* GPipe: ``F(d, j) = (d + j) f`` (the pipeline fills one stage per forward);
  ``B(d, j) = (p + m - 1) f + (p - 1 - d) b + j b``: the last device starts its backwards when
  its last forward ends, each device one backward after the next one.
* 1F1B: warm-up and first steady forward ``F(d, j) = (d + j) f`` for ``j <= w``; the backward
  of microbatch j on device d ``B(d, j) = p f + (p - 1 - d) b + j (f + b)`` (the last device
  alternates F and B from ``(p-1) f`` on; every device is one b behind the next one); later
  forwards ``F(d, j) = B(d, j - w - 1) + b`` (right after the previous backward).
"""

from __future__ import annotations

from typing import Any

import z3


def _is_z3(*xs: Any) -> bool:
    return any(isinstance(x, z3.ExprRef) for x in xs)


def ite(c: Any, a: Any, b: Any) -> Any:
    """``a if c else b`` for Python values, ``If(c, a, b)`` for Z3 terms.

    Example:
        >>> ite(True, 1, 2), str(ite(z3.Int("x") > 0, 1, 2))
        (1, 'If(x > 0, 1, 2)')
    """
    if _is_z3(c, a, b):
        return z3.If(c, a, b)
    return a if c else b


def zmin(a: Any, b: Any) -> Any:
    """Minimum of two values or Z3 terms.

    Example:
        >>> zmin(3, 5)
        3
    """
    return ite(a <= b, a, b)


def warmup_1f1b(p: Any, m: Any, d: Any) -> Any:
    """1F1B warm-up forwards on device d: ``min(p-1-d, m)`` (PipeDream-Flush, Megatron's 1F1B).

    Example:
        >>> warmup_1f1b(4, 8, 0), warmup_1f1b(4, 2, 0)
        (3, 2)
    """
    return zmin(p - 1 - d, m)


def gpipe_f(p: Any, m: Any, d: Any, j: Any, f: int, b: int) -> Any:
    """Start of ``F`` of microbatch j on device d in GPipe.

    Example:
        >>> gpipe_f(4, 4, 3, 0, 1, 2)
        3
    """
    return (d + j) * f


def gpipe_b(p: Any, m: Any, d: Any, j: Any, f: int, b: int) -> Any:
    """Start of ``B`` of microbatch j on device d in GPipe.

    Example:
        >>> gpipe_b(4, 4, 0, 3, 1, 2)
        19
    """
    return (p + m - 1) * f + (p - 1 - d) * b + j * b


def f1b1_b(p: Any, m: Any, d: Any, j: Any, f: int, b: int) -> Any:
    """Start of ``B`` of microbatch j on device d in 1F1B.

    Example:
        >>> f1b1_b(4, 4, 0, 3, 1, 2)
        19
    """
    return p * f + (p - 1 - d) * b + j * (f + b)


def f1b1_f(p: Any, m: Any, d: Any, j: Any, f: int, b: int) -> Any:
    """Start of ``F`` of microbatch j on device d in 1F1B.

    Example:
        >>> [f1b1_f(4, 4, 0, j, 1, 2) for j in range(4)]
        [0, 1, 2, 3]
        >>> [f1b1_f(4, 8, 3, j, 1, 2) for j in range(3)]
        [3, 6, 9]
    """
    w = warmup_1f1b(p, m, d)
    return ite(j <= w, (d + j) * f, f1b1_b(p, m, d, j - w - 1, f, b) + b)


def chimera_b(p: Any, s: Any, i: Any, b: int = 1) -> Any:
    """Chimera basic unit (m = p, p = 2h even, F = 1, B = b): start of B of stage s for the i-th
    microbatch of a pipe (both pipes alike; pipe 1's stage s sits on device p-1-s).

    ``p + (p-1-s) b`` for the first backward (the last stage's first B right after its first F at
    p-1, then one b per stage back), then one every ``2b`` (stage s shares its device with the other
    pipe's stage ``p-1-s``, whose backwards alternate with it) -- except on the second half's
    stages ``s >= h``, whose first ``s-h+1`` backwards come every ``1+b`` (1F1B's steady F,B pairs,
    while the other pipe's stage is still in its forwards): ``(1+b) i`` for ``i <= s-h``, else
    ``2b i``. At b = 1 both steps are 2: ``2p - 1 - s + 2i``.

    Example:
        >>> [chimera_b(4, 0, i) for i in range(2)], [chimera_b(4, 3, i, 2) for i in range(2)]
        ([7, 9], [4, 7])
    """
    return p + (p - 1 - s) * b + ite(2 * i <= 2 * s - p, (1 + b) * i, 2 * b * i)


def chimera_f(p: Any, s: Any, i: Any, b: int = 1) -> Any:
    """Chimera basic unit (m = p, p = 2h even, F = 1, B = b): start of F of stage s for the i-th
    microbatch of a pipe (both pipes alike; pipe 1's stage s sits on device p-1-s).

    Stage s shares its device with the other pipe's stage ``c = p-1-s``, whose forwards come
    every other slot. First half (``s <= h-1``, all forwards before any backward): forwards run
    back to back (``s + i``) until they would meet those, ``i >= p-1-2s``; then they take the free
    slots in between, ``2i + 3s - p + 2``. Second half (``s >= h``, 1F1B warm-up ``w = p-1-s``):
    ``s + 2i`` for ``i <= w`` (interleaved with the other pipe's forwards), then right after the
    backward of microbatch ``i-w-1``: ``B(s, i-w-1) + b``.

    Example:
        >>> [chimera_f(8, 2, i) for i in range(4)], [chimera_f(8, 5, i) for i in range(4)]
        ([2, 3, 4, 6], [5, 7, 9, 11])
        >>> [chimera_f(8, 5, i, 2) for i in range(4)]
        [5, 7, 9, 14]
    """
    first_half = 2 * s <= p - 2
    return ite(
        first_half,
        ite(i < p - 1 - 2 * s, s + i, 2 * i + 3 * s - p + 2),
        ite(i <= p - 1 - s, s + 2 * i, chimera_b(p, s, i - (p - s), b) + b),
    )


def interleaved_f(p: Any, v: int, s: Any, j: Any, f: int, b: int) -> Any:
    """Interleaved 1F1B with m = p (Megatron: the warm-up is all m*v forwards): start of F of
    stage s (global, on device s mod p), microbatch j, in chunk-op ticks (a chunk op lasts f/v
    of a share). The pipeline fills one stage per tick: ``(s + j) f``.

    Example:
        >>> interleaved_f(3, 2, 5, 0, 1, 2)
        5
    """
    return (s + j) * f


def interleaved_b(p: Any, v: int, s: Any, j: Any, f: int, b: int) -> Any:
    """Interleaved 1F1B with m = p: start of B of stage s, microbatch j (chunk-op ticks). The last
    device finishes its ``v p`` forwards at ``(v p + p - 1) f``; then the backwards drain like
    GPipe's over the ``S = v p`` stages: ``(v p + p - 1) f + (S - 1 - s) b + j b``.

    Example:
        >>> interleaved_b(3, 2, 5, 0, 1, 2), interleaved_b(3, 2, 0, 2, 1, 2)
        (8, 22)
    """
    return (v * p + p - 1) * f + (v * p - 1 - s) * b + j * b


FORMS = {
    "gpipe": (gpipe_f, gpipe_b),
    "1f1b": (f1b1_f, f1b1_b),
}


def zmax(a: Any, b: Any) -> Any:
    """Maximum of two values or Z3 terms.

    Example:
        >>> zmax(3, 5)
        5
    """
    return ite(a >= b, a, b)


def chimera_cont_b(p: Any, n: Any, s: Any, i: Any, b: int = 1) -> Any:
    """Chimera ``units=continuous`` beyond one unit (p = 2h even, n >= p microbatches per pipe,
    m = 2n; m = k p with k >= 2 for the generator) at F = 1, B = b: start of B of stage s, i-th
    microbatch of a pipe (both pipes alike, pipe 1's stage s on device p-1-s).

    With ``A = p + 1 + (p-1-s) b`` (one slot later than the basic unit's first backward: the
    second unit's forwards are already queued), three regimes, each linear in i:

    * second-half stages' first backwards, ``i <= s-h``: ``A + (1+b) i`` (1F1B's F,B pairs while
      the other pipe's stage on the device still forwards);
    * the steady state: ``min(A, 2 + (2+b)(p-1-s)) + 2(1+b) i`` (every device runs F and B of
      both pipes per microbatch);
    * the drain: ``2n + (p-1-s) b + 2b i`` (only backwards left, of both pipes);

    the start is the steady value capped by the drain's.

    Example:
        >>> [chimera_cont_b(8, 8, 7, i) for i in range(8)]
        [9, 11, 13, 15, 18, 22, 26, 30]
        >>> [chimera_cont_b(8, 12, 7, i, 2) for i in range(6)]
        [9, 12, 15, 18, 26, 32]
    """
    a = p + 1 + (p - 1 - s) * b
    steady = zmin(zmin(a, 2 + (2 + b) * (p - 1 - s)) + 2 * (1 + b) * i, 2 * n + (p - 1 - s) * b + 2 * b * i)
    return ite(2 * i <= 2 * s - p, a + (1 + b) * i, steady)


def chimera_cont_f(p: Any, n: Any, s: Any, i: Any, b: int = 1) -> Any:
    """Chimera ``units=continuous`` beyond one unit at F = 1, B = b (see :func:`chimera_cont_b`):
    start of F of stage s, i-th microbatch of a pipe; 1F1B warm-up ``w = p-1-s`` per pipe.

    First half (``s <= h-1``): the basic unit's ``s + i`` then ``2i + 3s - p + 2`` up to
    ``i = w``, then the steady ``2(1+b) i + (2+b) s - p + 2 - (p-1) b`` (``1 + 2b`` after
    B(s, i-w-1) starts: that B, one B of the other pipe, one F of it). Second half: ``s + 2i`` up
    to ``i = w``; then right after the previous backward, ``B(s, i-w-1) + b``, while that one is
    among the first ``s-h`` backwards; then the steady ``2(1+b) i + 1 - (p-1-s) b``.

    Example:
        >>> [chimera_cont_f(8, 8, 7, i) for i in range(8)]
        [7, 10, 12, 14, 17, 21, 25, 29]
        >>> [chimera_cont_f(8, 8, 0, i) for i in range(8)]
        [0, 1, 2, 3, 4, 5, 6, 8]
    """
    w = p - 1 - s
    first = ite(
        i < p - 1 - 2 * s,
        s + i,
        ite(i <= w, 2 * i + 3 * s - p + 2, 2 * (1 + b) * i + (2 + b) * s - p + 2 - (p - 1) * b),
    )
    second = ite(
        i <= w,
        s + 2 * i,
        ite(
            2 * (i - w - 1) <= 2 * s - p - 2,
            chimera_cont_b(p, n, s, i - w - 1, b) + b,
            2 * (1 + b) * i + 1 - (p - 1 - s) * b,
        ),
    )
    return ite(2 * s <= p - 2, first, second)


def interleaved_k_f(p: Any, k: int, c: int, g: int, d: Any, r: Any) -> Any:
    """Interleaved 1F1B with v = 2 chunks and m = k p (k >= 2), F = B = 1, in chunk-op ticks: start
    of F of chunk c (stage ``c p + d``, on device d) for microbatch ``g p + r`` (group g < k).

    With ``q = 2g + c`` (the order in which the chunk-groups are issued): the max of a fill line
    (``q p + d + r`` for q <= 2, Megatron's warm-up; ``2(q-1) p + d + 2r`` after it) and the
    steady line ``2r + (2q-3) p + 2 + 3d`` (one F per 2 ticks, alternating with backwards). Read
    off the slot table block by block; proved in :mod:`.prove_interleaved` for k = 2..8.

    Example:
        >>> [interleaved_k_f(4, 2, 1, 0, 3, r) for r in range(4)], [interleaved_k_f(4, 2, 1, 1, 0, r) for r in range(4)]
        ([7, 9, 11, 13], [16, 18, 20, 22])
    """
    q = 2 * g + c
    fill = q * p + d + r if q <= 2 else 2 * (q - 1) * p + d + 2 * r
    return zmax(fill, 2 * r + (2 * q - 3) * p + 2 + 3 * d)


def interleaved_k_b(p: Any, k: int, c: int, g: int, d: Any, r: Any) -> Any:
    """Interleaved 1F1B, v = 2, m = k p (k >= 2), F = B = 1 (chunk ticks): start of B of chunk c
    on device d for microbatch ``g p + r`` (see :func:`interleaved_k_f`).

    Steady blocks: ``2r + max((5 - 2c + 4g) p - 1 - d, (6 - 2c + 4g) p - 3 - 3d)``. Exceptions:
    group 0's chunk 1 jumps once, at ``r = 2d + 2``; the last group drains, chunk 1 one B per 2
    ticks (``(4k-1) p - 1 - d + 2r``) and chunk 0 one per tick (``(4k+1) p - 2 - d + r``); the
    group before it, chunk 0, is capped by a one-per-tick line ``(4k-2) p - 2 - d + r``.

    Example:
        >>> [interleaved_k_b(4, 2, 0, 1, 0, r) for r in range(4)], [interleaved_k_b(4, 2, 1, 0, 0, r) for r in range(4)]
        ([34, 35, 36, 37], [11, 13, 17, 19])
    """
    if g == k - 1:
        return (4 * k + 1) * p - 2 - d + r if c == 0 else (4 * k - 1) * p - 1 - d + 2 * r
    if (c, g) == (1, 0):
        return 2 * r + ite(r <= 2 * d + 1, 3 * p - 1 - d, 4 * p - 3 - 3 * d)
    steady = 2 * r + zmax((5 - 2 * c + 4 * g) * p - 1 - d, (6 - 2 * c + 4 * g) * p - 3 - 3 * d)
    return zmin(steady, (4 * k - 2) * p - 2 - d + r) if (c, g) == (0, k - 2) else steady
