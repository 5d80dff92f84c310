"""Interleaved 1F1B (Narayanan et al. SC'21; Megatron-LM's virtual pipeline).

``S = v*p`` stages in the ``loop`` placement (stage ``c*p + d`` on device d for chunk c). The op
order is Megatron's (REFERENCE.md §1): the k-th forward on a device runs chunk
``(k mod p*v) div p`` of microbatch ``(k div p*v)*p + (k mod p)``; backwards walk the same sequence
with the chunk mirrored (``v-1-c``). Warm-up on device d: every forward when ``m == p``, else
``min(2*(p-d-1) + (v-1)*p, m*v)``; then one forward and one backward alternate; then the remaining
backwards. ``v = 1`` is plain 1F1B (Megatron only interleaves for v > 1; its interleaved warm-up
formula at v = 1 would give 2(p-d-1) forwards, which is not 1F1B).
"""

from __future__ import annotations

from ..errors import ParameterError
from ..ops import B, F, Op
from ..placement import loop
from ..schedule import Schedule
from .one_f_one_b import one_f_one_b, one_f_one_b_order
from .registry import Family, Param, check_int, formula_in_formulas, register

RULES = ("p >= 1, m >= 1, v >= 1; for v > 1 Megatron's rule m % p == 0 (microbatches come in "
         "groups of p per chunk)")


def megatron_warmup(p: int, m: int, v: int, d: int) -> int:
    """Forwards device ``d`` runs before its first backward (Megatron's interleaved warm-up).

    Example:
        >>> [megatron_warmup(4, 8, 2, d) for d in range(4)]
        [10, 8, 6, 4]
        >>> megatron_warmup(4, 4, 2, 3)  # m == p: all forwards first
        8
    """
    total = m * v
    if m == p:
        return total
    return min(2 * (p - d - 1) + (v - 1) * p, total)


def _chunk_mb(k: int, p: int, v: int) -> tuple[int, int]:
    """Chunk and microbatch of the k-th forward on a device (Megatron's order)."""
    group = p * v
    return (k % group) // p, (k // group) * p + (k % p)


def interleaved_1f1b(p: int, m: int, v: int = 2) -> Schedule:
    """Interleaved 1F1B with ``v`` chunks per device (``loop`` placement, ``S = v*p``).

    Example:
        >>> s = interleaved_1f1b(2, 2, v=2)
        >>> [str(o) for o in s.programs[1]]
        ['1F0', '1F1', '3F0', '3F1', '3B0', '3B1', '1B0', '1B1']
        >>> interleaved_1f1b(4, 6, v=2)
        Traceback (most recent call last):
        ...
        ppverify.errors.ParameterError: parameter m=6: interleaved-1f1b with v=2 needs m to be a multiple of p=4 (Megatron's rule m % p == 0)
    """
    check_int("v", v, 1)
    if v == 1:
        base = one_f_one_b(p, m)
        return Schedule(loop(p, 1), m, base.programs, base.pipe_of_mb, "interleaved-1f1b",
                        {"p": p, "m": m, "v": 1})
    if m % p:
        raise ParameterError("m", m, f"interleaved-1f1b with v={v} needs m to be a multiple of p={p} "
                                     "(Megatron's rule m % p == 0)")
    total = m * v
    programs = []
    for d in range(p):
        def fwd(k: int) -> Op:
            c, mb = _chunk_mb(k, p, v)
            return Op(F, c * p + d, mb)

        def bwd(k: int) -> Op:
            c, mb = _chunk_mb(k, p, v)
            return Op(B, (v - 1 - c) * p + d, mb)

        programs.append(tuple(one_f_one_b_order(megatron_warmup(p, m, v, d), total, fwd, bwd)))
    return Schedule(loop(p, v), m, tuple(programs), (0,) * m, "interleaved-1f1b", {"p": p, "m": m, "v": v})


register(Family(
    "interleaved-1f1b", interleaved_1f1b,
    "Interleaved 1F1B: v chunks per device in the loop placement, Megatron's order (Narayanan et al. 2021)",
    params=(Param("v", int, 2, "model chunks per device"),),
    rules=RULES, formula=formula_in_formulas("interleaved_formula"),
))
