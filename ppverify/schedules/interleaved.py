"""Interleaved 1F1B (Narayanan et al. SC'21; Megatron-LM's virtual pipeline; PyTorch's
``ScheduleInterleaved1F1B``).

``S = v*p`` stages in the ``loop`` placement (stage ``c*p + d`` on device d for chunk c).
Microbatches go in rounds of ``n = m // max(1, m // p)`` per chunk (PyTorch's rule: m must be a
multiple of the number of rounds ``max(1, m // p)``; Megatron's ``m % p == 0`` is the case
``n = p``). The k-th forward on a device runs chunk ``(k div n) mod v`` on that chunk's next
microbatch; backwards walk the same sequence with the chunk mirrored (``v-1-c``). Warm-up on
device d: ``min((v-1)*n + 2*(p-d-1), m*v)`` (PyTorch's rule, for every m; the default
``order="pytorch"``); then one forward and one backward alternate; then the remaining backwards.
``v = 1`` is plain 1F1B (Megatron only interleaves for v > 1; the interleaved warm-up at v = 1
would give 2(p-d-1) forwards, which is not 1F1B).

``order="megatron"`` is Megatron-LM's ``forward_backward_pipelining_with_interleaving``
(megatron/core/pipeline_parallel/schedules.py, NVIDIA/Megatron-LM) up to Megatron Core 0.9: it
refuses m not a multiple of p (so m < p too), takes the chunks in groups of p microbatches (the
chunk of the k-th forward is ``(k mod v*p) div p``, PyTorch's rounds when m = k*p) with the same
warm-up, except that at ``m == p`` every forward runs first (same makespan, higher activation peak
on devices d >= p/2; tested). ppverify refuses ``order="megatron"`` with v > 1 where Megatron does
(:func:`check_megatron_m`) rather than print PyTorch's order under Megatron's name. From Megatron
Core 0.10 (its "tunable schedule", ``microbatch_group_size_per_vp_stage``, default p) the m == p
exception is gone and, at the default group size, the order is PyTorch's for every m it accepts
(m = k*p): use the default order for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, Formula, exact_costs, make_formula
from ..core.compiled import use_compiled
from ..core.errors import ParameterError
from ..core.ops import B, F, Op
from ..core.placement import loop
from ..core.schedule import Schedule
from .one_f_one_b import one_f_one_b, one_f_one_b_formula, one_f_one_b_order
from .registry import Family, Param, check_int, register

RULES = (
    "p >= 1, m >= 1, v >= 1; for v > 1 m a multiple of the number of rounds max(1, m // p) "
    "(PyTorch's rule); with order megatron and v > 1, m a multiple of p (Megatron-LM's rule)"
)


def round_size(p: int, m: int, v: int = 2) -> int:
    """Microbatches per round and chunk, ``m // max(1, m // p)``; raises
    :class:`ParameterError` unless m is a multiple of the number of rounds (PyTorch's rule for
    interleaved schedules).

    Example:
        >>> round_size(4, 8), round_size(5, 6), round_size(5, 14), round_size(7, 5)
        (4, 6, 7, 5)
        >>> round_size(3, 14)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=14: interleaved schedules with v=2 need m to be a multiple of the number of rounds max(1, m // p) = 4 (PyTorch's rule)
    """
    rounds = max(1, m // p)
    if m % rounds:
        raise ParameterError(
            "m",
            m,
            f"interleaved schedules with v={v} need m to be a multiple of the "
            f"number of rounds max(1, m // p) = {rounds} (PyTorch's rule)",
        )
    return m // rounds


ORDERS: tuple[str, ...] = ("pytorch", "megatron")


def check_order(order: str) -> str:
    """``order`` if it is a known warm-up rule (:data:`ORDERS`), else :class:`ParameterError`.

    Example:
        >>> check_order("megatron")
        'megatron'
        >>> check_order("nvidia")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter order=nvidia: warm-up rule must be one of pytorch, megatron
    """
    if order not in ORDERS:
        raise ParameterError("order", order, f"warm-up rule must be one of {', '.join(ORDERS)}")
    return order


def megatron_note(p: int, m: int, v: int, order: str) -> str:
    """Why ``order="megatron"`` changes nothing here (empty where it does): Megatron-LM's order
    differs from PyTorch's rounds only in running every forward first at ``m == p`` with ``v > 1``
    chunks (and ``p > 1``); at every other size it accepts, the two are the same schedule.

    Example:
        >>> megatron_note(4, 8, 2, "megatron")
        'order=megatron gives the same schedule as order=pytorch at p=4, m=8, v=2: the two differ only at m = p >= 2 with v > 1 (every forward first)'
        >>> megatron_note(4, 4, 2, "megatron")
        ''
    """
    if order != "megatron" or (m == p and v > 1 and p > 1):
        return ""
    return (
        f"order=megatron gives the same schedule as order=pytorch at p={p}, m={m}, v={v}: the two differ only "
        "at m = p >= 2 with v > 1 (every forward first)"
    )


def check_megatron_m(p: int, m: int, v: int, order: str) -> None:
    """Refuse ``order="megatron"`` with ``v > 1`` unless m is a multiple of p: Megatron-LM's
    interleaved schedule (up to Megatron Core 0.9, and later at its default microbatch group of p)
    refuses such m, so ppverify has no Megatron order to show for it.

    Example:
        >>> check_megatron_m(4, 8, 2, "megatron"), check_megatron_m(4, 6, 2, "pytorch")
        (None, None)
        >>> check_megatron_m(4, 6, 2, "megatron")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=6: order=megatron with v=2 needs m to be a multiple of p=4, as Megatron-LM's interleaved schedule does (it refuses other m); leave --order out for PyTorch's rounds
    """
    if check_order(order) == "megatron" and v > 1 and m % p:
        raise ParameterError(
            "m",
            m,
            f"order=megatron with v={v} needs m to be a multiple of p={p}, as Megatron-LM's interleaved "
            "schedule does (it refuses other m); leave --order out for PyTorch's rounds",
        )


def megatron_warmup(p: int, m: int, v: int, d: int, order: str = "megatron") -> int:
    """Forwards device ``d`` runs before its first backward: ``min((v-1)*n + 2*(p-d-1), m*v)``
    with ``n`` the round size (:func:`round_size`); with ``order="megatron"`` (this function's
    default, as its name says) every forward when ``m == p`` (and m a multiple of p:
    :func:`check_megatron_m`), with ``order="pytorch"`` the same rule for every m (PyTorch's
    ``ScheduleInterleaved1F1B``).

    Example:
        >>> [megatron_warmup(4, 8, 2, d) for d in range(4)]
        [10, 8, 6, 4]
        >>> megatron_warmup(4, 4, 2, 3)  # m == p: all forwards first
        8
        >>> [megatron_warmup(4, 4, 2, d, order="pytorch") for d in range(4)]  # (v-1)p + 2(p-1-d)
        [8, 8, 6, 4]
        >>> [megatron_warmup(5, 6, 2, d, order="pytorch") for d in range(5)]  # one round of 6
        [12, 12, 10, 8, 6]
    """
    total = m * v
    check_megatron_m(p, m, v, order)
    if m == p and order == "megatron":
        return total
    return min(2 * (p - d - 1) + (v - 1) * round_size(p, m, v), total)


def interleaved_1f1b(p: int, m: int, v: int = 2, order: str = "pytorch") -> Schedule:
    """Interleaved 1F1B with ``v`` chunks per device (``loop`` placement, ``S = v*p``); ``order``
    is the warm-up rule (:func:`megatron_warmup`): ``"pytorch"`` or ``"megatron"`` (they differ
    only at m == p; ``"megatron"`` refuses m not a multiple of p, as Megatron-LM does).

    Example:
        >>> [str(o) for o in interleaved_1f1b(2, 2, v=2).programs[1]]  # PyTorch: warm-up 2
        ['1F0', '1F1', '3F0', '3B0', '3F1', '3B1', '1B0', '1B1']
        >>> [str(o) for o in interleaved_1f1b(2, 2, v=2, order="megatron").programs[1]]
        ['1F0', '1F1', '3F0', '3F1', '3B0', '3B1', '1B0', '1B1']
        >>> [str(o) for o in interleaved_1f1b(2, 3, v=2).programs[1]][:5]
        ['1F0', '1F1', '1F2', '3F0', '3B0']
        >>> interleaved_1f1b(4, 9, v=2)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=9: interleaved schedules with v=2 need m to be a multiple of the number of rounds max(1, m // p) = 2 (PyTorch's rule)
        >>> interleaved_1f1b(4, 6, v=2, order="megatron")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=6: order=megatron with v=2 needs m to be a multiple of p=4, as Megatron-LM's interleaved schedule does (it refuses other m); leave --order out for PyTorch's rounds
    """
    check_int("v", v, 1)
    check_megatron_m(p, m, v, order)
    # the rules differ only at m == p; name the order only where it was asked for
    params = {"p": p, "m": m, "v": v, **({"order": order} if order != "pytorch" else {})}
    if v == 1:
        base = one_f_one_b(p, m)
        return Schedule(loop(p, 1), m, base.programs, base.pipe_of_mb, "interleaved-1f1b", params)
    n = round_size(p, m, v)
    total = m * v
    if use_compiled(2 * total * p):  # vectorised, the same programs (tests/engines/test_kernels.py)
        from .fast_orders import interleaved_programs

        compiled = interleaved_programs(p, m, v, n, [megatron_warmup(p, m, v, d, order) for d in range(p)])
        return Schedule(loop(p, v), m, compiled, (0,) * m, "interleaved-1f1b", params)
    programs = []
    for d in range(p):
        # the k-th forward runs chunk (k // n) % v; each chunk takes its microbatches in order
        fwd_chunks = [(k // n) % v for k in range(total)]
        fwd = _numbered(F, fwd_chunks, p, d)
        bwd = _numbered(B, [v - 1 - c for c in fwd_chunks], p, d)
        programs.append(
            tuple(one_f_one_b_order(megatron_warmup(p, m, v, d, order), total, fwd.__getitem__, bwd.__getitem__))
        )
    return Schedule(loop(p, v), m, tuple(programs), (0,) * m, "interleaved-1f1b", params)


def _numbered(kind: str, chunks: list[int], p: int, d: int) -> list[Op]:
    """Ops of ``kind`` on device d for a sequence of chunks, each chunk's microbatches counted up."""
    seen: dict[int, int] = {}
    out = []
    for c in chunks:
        out.append(Op(kind, c * p + d, seen.get(c, 0)))
        seen[c] = seen.get(c, 0) + 1
    return out


def interleaved_formula(
    p: int, m: int, costs: Mapping[str, float] | None = None, v: int = 2, order: str = "pytorch"
) -> Formula:
    """Interleaved 1F1B: makespan ``(v·max(m, p) + min(m, p) - 1)(tF+tB)/v``, i.e. for ``m >= p``
    ``m(tF+tB) + (p-1)(tF+tB)/v``, bubble ``(p-1)/(v*m+p-1)``; peak on device d
    ``min(w_d + 1, m*v)/v`` with the warm-up ``w_d`` of ``order`` (:func:`megatron_warmup`; the
    orders differ only at m == p, where PyTorch's peaks are lower on devices d >= p/2).

    Derivation: each chunk op lasts 1/v of a share op. For ``m >= p`` the last device waits for
    ``p-1`` chunk forwards, then never idles, and its last backward still has ``p-1`` chunk
    backwards below it: ``(p-1)(tF+tB)/v`` (Narayanan et al. 2021; a lower bound for every
    schedule on this placement, which the order reaches). For ``m < p`` every chunk waits for its
    first microbatch: the chain of microbatch 0's ``v*p`` chunk forwards, the last stage's ``m-1``
    further forward/backward pairs and microbatch m-1's ``v*p`` chunk backwards is critical,
    ``(v*p + m - 1)(tF+tB)/v``. Memory: the warm-up forwards plus one steady forward are in flight,
    each 1/v. Exact for any tF, tB and every m PyTorch accepts (m a multiple of the number of
    rounds max(1, m // p); v = 1 is 1F1B, any m); checked against the table.

    Example:
        >>> f = interleaved_formula(4, 8, v=2)
        >>> f.makespan, f.peak_activations[0]
        (19.0, 5.5)
        >>> interleaved_formula(5, 6, v=2).makespan, interleaved_formula(5, 3, v=2).makespan
        (16.0, 12.0)
        >>> interleaved_formula(4, 4).peak_activations, interleaved_formula(4, 4, order="megatron").peak_activations
        ((4.0, 4.0, 3.5, 2.5), (4.0, 4.0, 4.0, 4.0))
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    check_int("v", v, 1)
    check_megatron_m(p, m, v, order)
    if v == 1:
        f = one_f_one_b_formula(p, m, costs)
        return Formula(
            "interleaved-1f1b",
            f.makespan,
            f.bubble_ratio,
            f.peak_activations,
            EXACT,
            EXACT,
            "v = 1 is 1F1B: exact for any tF, tB",
            f.source,
        )
    round_size(p, m, v)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    peaks = [Fraction(min(megatron_warmup(p, m, v, d, order) + 1, m * v), v) for d in range(p)]
    return make_formula(
        "interleaved-1f1b",
        m * t,
        Fraction(v * max(m, p) + min(m, p) - 1, v) * t,
        peaks,
        EXACT,
        EXACT,
        "exact for any tF, tB, every m with m a multiple of max(1, m // p) and both orders",
        "Narayanan et al. SC'21 (bubble (p-1)/(v*m) idle/busy, m >= p); m < p derived here",
    )


register(
    Family(
        "interleaved-1f1b",
        interleaved_1f1b,
        "Interleaved 1F1B: v chunks per device in the loop placement, PyTorch's order and rounds (Narayanan et al. 2021)",
        params=(
            Param("v", int, 2, "model chunks per device"),
            Param(
                "order",
                str,
                "pytorch",
                "warm-up rule: pytorch, or megatron (Megatron-LM up to Core 0.9: every forward first when m == p; "
                "m a multiple of p)",
            ),
        ),
        rules=RULES,
        formula=interleaved_formula,
        notes=lambda p, m, v=2, order="pytorch", **_: [n for n in [megatron_note(p, m, v, order)] if n],
    )
)
