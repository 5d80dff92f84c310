"""Zero-bubble schedules ZB-H1, ZB-H2 and interleaved ZB1P (Qi et al., ICLR'24, arXiv 2401.10241).

The backward is split into ``I`` (input gradient, on the critical path) and ``W`` (weight
gradient, free to move); one stage per device (``linear`` placement).

* ``zb-h1``: 1F1B's forwards and input-gradient order, with the ``W`` of device d delayed by d
  microbatches (the last device, which idles longest at the end, delays most). This is the op
  order of PyTorch's ``ScheduleInterleavedZeroBubble`` with one stage per rank (ZB1P). Peak
  activations (freed when W ends): ``min(p, m)`` on every device, i.e. 1F1B's global peak.
* ``zb-h2``: up to ``2p - 1`` microbatches in flight per device (the paper's ZB-H2 memory); the
  order is the greedy one at equal op costs: whenever a device is free it runs a ready ``I``,
  else the next ``F`` if fewer than ``2p-1`` microbatches are held, else the oldest pending ``W``.
  The paper draws ZB-H2 by hand; this construction is ppverify's and reaches the one-step lower
  bound ``(p-1)tF + m(tF+tI+tW)`` at equal costs for ``m >= p`` (tests check it).
* ``interleaved-zb``: ZB-H1's rule over ``v`` chunks per device in the ``loop`` placement, the op
  order of PyTorch's ``ScheduleInterleavedZeroBubble`` (``v = 1`` is ``zb-h1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, UPPER, Formula, exact_costs, freed_by_I_of
from ..core.errors import ParameterError
from ..core.ops import F, I, Op, W
from ..core.placement import linear, loop
from ..core.schedule import Schedule
from .registry import Family, Param, check_int, register


def zb_h1(p: int, m: int) -> Schedule:
    """ZB-H1: warm-up ``min(p-1-d, m)`` forwards, then ``F, I`` pairs, each followed by the
    ``W`` of the microbatch d places earlier once ``d`` inputs-gradients are done; the rest of the
    ``W`` at the end.

    Example:
        >>> [str(o) for o in zb_h1(2, 2).programs[0]]
        ['0F0', '0F1', '0I0', '0W0', '0I1', '0W1']
        >>> [str(o) for o in zb_h1(2, 2).programs[1]]
        ['1F0', '1I0', '1F1', '1I1', '1W0', '1W1']
    """
    programs = []
    for d in range(p):
        warm = min(p - 1 - d, m)
        prog = [Op(F, d, k) for k in range(warm)]
        done_w = 0
        for j in range(m):
            if warm + j < m:
                prog.append(Op(F, d, warm + j))
            prog.append(Op(I, d, j))
            if j >= d:  # W trails I by d microbatches on device d
                prog.append(Op(W, d, done_w))
                done_w += 1
        prog += [Op(W, d, k) for k in range(done_w, m)]
        programs.append(tuple(prog))
    return Schedule(linear(p), m, tuple(programs), (0,) * m, "zb-h1", {"p": p, "m": m})


def zb_h2(p: int, m: int) -> Schedule:
    """ZB-H2 (greedy at equal costs, at most ``2p-1`` microbatches held per device).

    Example:
        >>> [str(o) for o in zb_h2(2, 3).programs[0]]
        ['0F0', '0F1', '0F2', '0I0', '0W0', '0I1', '0W1', '0I2', '0W2']
        >>> [str(o) for o in zb_h2(2, 3).programs[1]]
        ['1F0', '1I0', '1F1', '1I1', '1F2', '1I2', '1W0', '1W1', '1W2']
    """
    cap = 2 * p - 1
    f_end: dict[tuple[int, int], int] = {}
    i_end: dict[tuple[int, int], int] = {}
    nf, ni, nw = [0] * p, [0] * p, [0] * p
    free = [0] * p
    programs: list[list[Op]] = [[] for _ in range(p)]
    never = 1 << 60
    t = 0
    limit = 4 * (3 * m + p)  # every device is busy each step until done; far above any real end
    # unit-time event loop: every op lasts 1, an op finished at t may feed one starting at t
    while any(n < m for n in nw):
        for d in range(p):
            if free[d] > t:
                continue
            j = ni[d]
            if j < nf[d] and f_end[(d, j)] <= t and (d == p - 1 or i_end.get((d + 1, j), never) <= t):
                programs[d].append(Op(I, d, j))
                i_end[(d, j)] = t + 1
                ni[d] += 1
            elif nf[d] < m and nf[d] - nw[d] < cap and (d == 0 or f_end.get((d - 1, nf[d]), never) <= t):
                programs[d].append(Op(F, d, nf[d]))
                f_end[(d, nf[d])] = t + 1
                nf[d] += 1
            elif nw[d] < ni[d] and i_end[(d, nw[d])] <= t:
                programs[d].append(Op(W, d, nw[d]))
                nw[d] += 1
            else:
                continue
            free[d] = t + 1
        t += 1
        if t > limit:  # cannot happen for p, m >= 1 (tests sweep them); guard against a silent hang
            raise RuntimeError(f"zb-h2 construction did not finish for p={p}, m={m}")
    return Schedule(linear(p), m, tuple(tuple(pr) for pr in programs), (0,) * m, "zb-h2", {"p": p, "m": m})


def zb_round_size(p: int, m: int, v: int) -> int:
    """Microbatches per round of ``interleaved-zb`` (PyTorch's ``m // max(1, m // p)``); raises
    :class:`ParameterError` where PyTorch's rule refuses the size (for v > 1, m not a multiple of the
    number of rounds). The generator and the formula both ask it, so neither accepts what the
    other refuses.

    Example:
        >>> zb_round_size(5, 6, 2), zb_round_size(3, 7, 1)
        (6, 3)
        >>> zb_round_size(4, 9, 2)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=9: interleaved-zb needs m to be a multiple of the number of rounds max(1, m // p) = 2 (PyTorch's rule)
    """
    check_int("v", v, 1)
    rounds = max(1, m // p)
    if v > 1 and m % rounds:  # with one chunk the rounds do not matter (PyTorch still asks it)
        raise ParameterError(
            "m",
            m,
            f"interleaved-zb needs m to be a multiple of the number of rounds "
            f"max(1, m // p) = {rounds} (PyTorch's rule)",
        )
    return m // rounds


def interleaved_zb(p: int, m: int, v: int = 2) -> Schedule:
    """Interleaved zero bubble (ZB1P over ``v`` chunks per device, ``loop`` placement): PyTorch's
    ``ScheduleInterleavedZeroBubble`` order, idle padding removed.

    Microbatches go in rounds of ``m // max(1, m // p)`` per chunk (PyTorch's rule: ``m`` must be a
    multiple of the number of rounds). Device d warms up with ``min((v-1)*round + p-1-d, m*v)``
    forwards, then runs F and I pairs chunk-round by chunk-round (backwards mirror the chunks),
    each followed, once ``d`` input gradients are done, by the W of the oldest pending I; the
    remaining I's and W's follow. ``v = 1`` is ``zb-h1``.

    Example:
        >>> [str(o) for o in interleaved_zb(2, 2, v=2).programs[1]]
        ['1F0', '1F1', '3F0', '3I0', '3F1', '3I1', '3W0', '1I0', '3W1', '1I1', '1W0', '1W1']
    """
    per_round = zb_round_size(p, m, v)
    total = m * v
    programs = []
    for d in range(p):
        warm = min((v - 1) * per_round + (p - 1 - d), total)

        def fwd_stage(k: int) -> int:
            return ((k // per_round) % v) * p + d

        def bwd_stage(k: int, warm: int = warm) -> int:
            return (v - 1 - ((k - warm) // per_round) % v) * p + d

        nf: dict[int, int] = {}
        nb: dict[int, int] = {}
        nw: dict[int, int] = {}
        prog: list[Op] = []
        backs: list[int] = []

        def emit(kind: str, stage: int, counter: dict[int, int]) -> None:
            prog.append(Op(kind, stage, counter.get(stage, 0)))
            counter[stage] = counter.get(stage, 0) + 1

        def weight() -> None:
            emit(W, bwd_stage(backs[sum(nw.values())]), nw)

        for k in range(warm):
            emit(F, fwd_stage(k), nf)
        for k in range(warm, total + warm):
            if k < total:
                emit(F, fwd_stage(k), nf)
            emit(I, bwd_stage(k), nb)
            backs.append(k)
            if k - warm >= d:  # W trails I by d on device d, as in zb-h1
                weight()
        while sum(nw.values()) < len(backs):
            weight()
        programs.append(tuple(prog))
    return Schedule(loop(p, v), m, tuple(programs), (0,) * m, "interleaved-zb", {"p": p, "m": m, "v": v})


def interleaved_zb_formula(p: int, m: int, costs: Mapping[str, float] | None = None, v: int = 2) -> Formula:
    """Interleaved zero bubble: the one-step lower bound ``m(tF+tI+tW) + (p-1)tF/v`` (the last
    device waits for ``p-1`` chunk forwards of ``tF/v``, then has all its work); peak at most ``m``
    (every activation of the step, whatever ``freed_by_I``: freeing at I only lowers it). Both are
    bounds: no closed form is claimed.

    Example:
        >>> f = interleaved_zb_formula(4, 8, v=2)
        >>> f.makespan, f.makespan_kind, f.peak_kind
        (25.5, 'lower bound', 'upper bound')
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    zb_round_size(p, m, v)  # the sizes the generator refuses have no formula either
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    makespan = busy + Fraction(p - 1, v) * c["F"]
    return Formula(
        "interleaved-zb",
        float(makespan),
        float(1 - busy / makespan),
        (float(m),) * p,
        LOWER,
        UPPER,
        "bounds only: makespan >= the fill + busy time; peak <= m",
        "Qi et al. ICLR'24 (ZB1P); PyTorch's ScheduleInterleavedZeroBubble order; bounds derived here",
    )


def zb_h1_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """ZB-H1: makespan ``m(tF+tI+tW) + (p-1)·max(tF, tI, tF+tI-tW)``; peak ``min(p, m)``.

    Every device does ``m(tF+tI+tW)`` of work, so the makespan is that plus the idle time of any
    one device, and each end of the pipeline forces some (critical paths of this order, m >= p):

    * the last device cannot start before ``p-1`` forwards reach it: ``(p-1)tF`` idle (its end
      is gap-free: it delays p-1 W's to run after its last I). This holds for every schedule.
    * the first device runs its ``p`` forwards, then waits for microbatch 0's gradient to come
      back through ``p-1`` input-gradient ops (no W can fill that wait: W follows its I):
      ``(p-1)tI`` idle; at the end its last ``p-1`` I's arrive one forward plus one I apart
      while it has one W per I to fill the gap: another ``(p-1)·max(0, tF-tW)``.

    The makespan is the larger of the two, ``busy + (p-1)·max(tF, tI + max(0, tF-tW))``. The
    paper's bubble ``(p-1)(tF+tI-tW)`` is the case ``tW <= min(tF, tI)``; with a cheap input
    gradient (``tI < min(tF, tW)``) the fill ``(p-1)tF`` dominates. Exact for m >= p and any
    tF, tI, tW (property-tested against the table); for ``m < p`` a lower bound (both idle
    times above still occur).

    Memory, with ``f = freed_by_I`` (:func:`ppverify.core.closed_form.freed_by_I_of`: each I frees
    ``f`` of its activation, its W the rest): device d holds the most when a forward starts. With
    ``w = p-1-d`` warm-up forwards, the forward of step j (j = 0.., while ``w + j < m``) starts
    after ``w + j + 1`` forwards, j I's and ``max(0, j-d)`` W's: ``w + 1 + j(1-f)`` for ``j <= d``,
    then the constant ``w + 1 + d(1-f)``. So the peak is ``min(p-d, m) + min(d, max(0, m-p+d))(1-f)``
    (``m`` when every forward is a warm-up one): at ``f = 0``, 1F1B's ``min(p-d, m)`` in flight plus
    the ``d`` delayed W's, i.e. ``min(p, m)`` on every device.

    Example:
        >>> f = zb_h1_formula(4, 8)
        >>> f.makespan, f.peak_activations
        (27.0, (4.0, 4.0, 4.0, 4.0))
        >>> zb_h1_formula(4, 8, {"F": 1, "B": 2, "freed_by_I": 0.5}).peak_activations  # 4-d + d/2
        (4.0, 3.5, 3.0, 2.5)
        >>> zb_h1_formula(2, 2, {"F": 2, "I": 1, "W": 2}).makespan   # (p-1)tF: 10 + 2
        12.0
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    makespan = busy + (p - 1) * max(c["F"], c["I"], c["F"] + c["I"] - c["W"])
    held = 1 - freed_by_I_of(costs)  # what a pending W still holds
    peaks = [min(p - d, m) + min(d, max(0, m - p + d)) * held for d in range(p)]
    return Formula(
        "zb-h1",
        float(makespan),
        float(1 - busy / makespan),
        tuple(float(x) for x in peaks),
        EXACT if m >= p else LOWER,
        EXACT,
        "makespan exact for m >= p (any tF, tI, tW), a lower bound for m < p; the "
        "paper's (p-1)(tF+tI-tW) is the case tW <= min(tF, tI); with tI < min(tF, tW) "
        "the fill (p-1)tF dominates; peaks exact for any freed_by_I",
        "Qi et al. ICLR'24 (ZB-H1, arXiv 2401.10241); critical paths derived here",
    )


def zb_h2_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """ZB-H2 (ppverify's greedy order): makespan >= ``(p-1)tF + m(tF+tI+tW)``, reached at equal
    costs for ``m >= p``; peak ``min(2p-1, m)`` on every device.

    The bound holds for every schedule of one step: the last device cannot start before
    ``(p-1)tF`` and then has ``m(tF+tI+tW)`` of work. The paper's bubble ``(p-1)(tF+tI-2tW)``
    (0 at equal costs) leaves out that fill, which its optimizer post-validation overlaps with
    the next step; one step always pays it.

    Memory, with ``f = freed_by_I`` (each I frees ``f`` of its activation, its W the rest): with
    ``M = min(m, 2p-1)`` device d peaks when its M-th forward starts, before any W has run; the
    greedy order has put ``max(0, M - (2p-1-2d))`` I's before it (device d warms up with
    ``2p-1-2d`` forwards, then alternates I and F), so the peak is ``M - f·max(0, M-2p+1+2d)``
    (``M`` at ``f = 0``; checked against the table for p <= 10, m <= 5p+1 and four values of f).

    Example:
        >>> f = zb_h2_formula(4, 8)
        >>> f.makespan, f.makespan_kind, f.peak_activations
        (27.0, 'exact', (7.0, 7.0, 7.0, 7.0))
        >>> zb_h2_formula(4, 8, {"F": 1, "B": 2, "freed_by_I": 0.5}).peak_activations  # 7 - d
        (7.0, 6.0, 5.0, 4.0)
    """
    check_int("p", p, 1)
    check_int("m", m, 1)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    makespan = busy + (p - 1) * c["F"]
    equal = c["F"] == c["I"] == c["W"]
    top, freed = min(2 * p - 1, m), freed_by_I_of(costs)
    peaks = [top - freed * max(0, top - (2 * p - 1 - 2 * d)) for d in range(p)]
    return Formula(
        "zb-h2",
        float(makespan),
        float(1 - busy / makespan),
        tuple(float(x) for x in peaks),
        EXACT if (equal and m >= p) else LOWER,
        EXACT,
        "makespan exact at tF = tI = tW with m >= p, otherwise a lower bound (the order is "
        "built at equal costs); peaks exact for any freed_by_I",
        "Qi et al. ICLR'24 (ZB-H2 memory 2p-1); greedy construction and bound derived here",
    )


register(
    Family(
        "interleaved-zb",
        interleaved_zb,
        "Interleaved zero bubble: v chunks per device (loop), I/W split, W delayed (PyTorch's ScheduleInterleavedZeroBubble)",
        params=(Param("v", int, 2, "model chunks per device"),),
        rules="p >= 1, m >= 1, v >= 1; for v > 1 m a multiple of max(1, m // p) (PyTorch's rounds)",
        formula=interleaved_zb_formula,
    )
)
register(
    Family(
        "zb-h1",
        zb_h1,
        "Zero bubble ZB-H1: 1F1B with I/W split and W delayed by d on device d (Qi et al. 2024)",
        rules="p >= 1, m >= 1",
        formula=zb_h1_formula,
    )
)
register(
    Family(
        "zb-h2",
        zb_h2,
        "Zero bubble ZB-H2: up to 2p-1 microbatches in flight, greedy I > F > W (Qi et al. 2024)",
        rules="p >= 1, m >= 1",
        formula=zb_h2_formula,
    )
)
