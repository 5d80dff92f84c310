"""Closed forms: makespan, bubble ratio and per-device peak activations of every family.

Units (ppverify's convention): costs are per device share (``--costs F=1,B=2``); ``costs=None`` means
the idealized table's unit slots (every op of a whole share lasts 1, I and W included). Activations
count one microbatch over a whole device share as 1. The bubble ratio uses ppverify's convention
:data:`ppverify.timeline.BUBBLE_CONVENTION` (idle/total per device, averaged); every family here gives
each device the same busy time ``m * (tF + tB)`` (``m * (tF + tI + tW)`` with a split backward),
so ``bubble = 1 - busy / makespan``.

Each :class:`Formula` says whether its makespan and its peaks are exact for the ``slot`` engine's
table or a bound, and in which direction (a lower bound on the makespan is also a lower bound on
the bubble ratio). Derivations are in each function's docstring; tests compare every exact claim
with the table over p in 2..16, m in 1..64. A system's runtime overhead (:mod:`ppverify.overhead`)
reaches the formulas through the per-share costs they are given, averaged over a share's stages
(exact for the per-action part, the mean for the per-transfer part, which differs by stage).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from .costs import complete_costs
from .errors import ParameterError
from .timeline import BUBBLE_CONVENTION

EXACT, LOWER, UPPER = "exact", "lower bound", "upper bound"


@dataclass(frozen=True)
class Formula:
    """Closed-form prediction for one family at ``(p, m, costs, params)``.

    ``makespan_kind``/``peak_kind`` are ``"exact"``, ``"lower bound"`` or ``"upper bound"`` (the
    table's value is >= a lower bound); the bubble ratio has the makespan's kind. ``exact`` is
    True when both are exact. ``conditions`` says when the closed form is exact; ``source`` where
    it comes from.

    Example:
        >>> f = gpipe_formula(4, 4)
        >>> f.makespan, round(f.bubble_ratio, 4), f.peak_activations, f.exact
        (14.0, 0.4286, (4.0, 4.0, 4.0, 4.0), True)
    """

    family: str
    makespan: float
    bubble_ratio: float
    peak_activations: tuple[float, ...]
    makespan_kind: str
    peak_kind: str
    conditions: str
    source: str
    bubble_convention: str = BUBBLE_CONVENTION

    @property
    def exact(self) -> bool:
        """True when makespan, bubble ratio and peaks are all exact."""
        return self.makespan_kind == EXACT and self.peak_kind == EXACT

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``peak_activations`` as a list, ``exact`` included).

        Example:
            >>> one_f_one_b_formula(2, 2).to_dict()["peak_activations"]
            [2.0, 1.0]
        """
        out = asdict(self)
        out["peak_activations"] = list(self.peak_activations)
        out["exact"] = self.exact
        return out


def costs_of(costs: Mapping[str, float] | None) -> dict[str, float]:
    """Per-share costs with every kind filled: unit slots (all 1) when ``costs`` is None, else
    :func:`ppverify.costs.complete_costs` (``B = I + W``; ``I = W = B/2``; ``B = 2F``).

    Example:
        >>> costs_of(None)
        {'F': 1.0, 'B': 1.0, 'I': 1.0, 'W': 1.0}
        >>> costs_of({"F": 1, "B": 2})["I"]
        1.0
    """
    if costs is None:
        return {"F": 1.0, "B": 1.0, "I": 1.0, "W": 1.0}
    return complete_costs(dict(costs))


def _num(x: Fraction | float | int) -> float:
    return float(x)


def _make(
    family: str,
    p: int,
    m: int,
    busy: Fraction,
    makespan: Fraction,
    peaks: list,
    mk: str,
    pk: str,
    conditions: str,
    source: str,
) -> Formula:
    bubble = 1 - busy / makespan if makespan > 0 else Fraction(0)
    return Formula(family, _num(makespan), _num(bubble), tuple(_num(x) for x in peaks), mk, pk, conditions, source)


def exact_costs(costs: Mapping[str, float] | None) -> dict[str, Fraction]:
    """:func:`costs_of` as exact fractions (each limited to denominator 10**6), so that formulas
    compare costs exactly (``tF == tI``) and round only their final figures.

    Example:
        >>> exact_costs({"F": 0.1, "B": 0.3})["I"]
        Fraction(3, 20)
    """
    return {k: Fraction(v).limit_denominator(10**6) for k, v in costs_of(costs).items()}


def _check_pm(p: int, m: int) -> None:
    from .schedules.registry import check_int

    check_int("p", p, 1)
    check_int("m", m, 1)


def gpipe_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """GPipe: makespan ``(m+p-1)(tF+tB)``, bubble ``(p-1)/(m+p-1)``, peak ``m`` on every device.

    Derivation: the last device starts its first F after ``(p-1)tF`` and then runs m F and m B
    back to back; the last microbatch's gradient then crosses p-1 devices (``(p-1)tB``). Exact for
    any tF, tB (Huang et al. 2019).

    Example:
        >>> gpipe_formula(4, 4, {"F": 1, "B": 2}).makespan
        21.0
    """
    _check_pm(p, m)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    return _make(
        "gpipe",
        p,
        m,
        m * t,
        (m + p - 1) * t,
        [m] * p,
        EXACT,
        EXACT,
        "exact for any tF, tB",
        "Huang et al., GPipe, NeurIPS'19, arXiv 1811.06965",
    )


def one_f_one_b_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """1F1B: GPipe's makespan ``(m+p-1)(tF+tB)``; peak on device d ``min(p-d, m)``.

    Derivation: the same critical path as GPipe (the last device is never idle once started);
    device d holds its warm-up ``min(p-1-d, m)`` forwards plus the one forward of each steady
    F-B pair before that pair's B frees one.

    Example:
        >>> one_f_one_b_formula(4, 4).peak_activations
        (4.0, 3.0, 2.0, 1.0)
    """
    _check_pm(p, m)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    return _make(
        "1f1b",
        p,
        m,
        m * t,
        (m + p - 1) * t,
        [min(p - d, m) for d in range(p)],
        EXACT,
        EXACT,
        "exact for any tF, tB",
        "PipeDream-Flush (Narayanan et al. ICML'21, arXiv 2006.09503) / DAPPLE (Fan et al. PPoPP'21, arXiv 2007.01045)",
    )


def interleaved_formula(
    p: int, m: int, costs: Mapping[str, float] | None = None, v: int = 2, order: str = "pytorch"
) -> Formula:
    """Interleaved 1F1B: makespan ``(v·max(m, p) + min(m, p) - 1)(tF+tB)/v``, i.e. for ``m >= p``
        ``m(tF+tB) + (p-1)(tF+tB)/v``, bubble ``(p-1)/(v*m+p-1)``; peak on device d
        ``min(w_d + 1, m*v)/v`` with the warm-up ``w_d`` of ``order``
    (:func:`ppverify.schedules.interleaved.megatron_warmup`; the orders differ only at m == p, where
    PyTorch's peaks are lower on devices d >= p/2).

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
    from .schedules.interleaved import megatron_warmup, round_size
    from .schedules.registry import check_int

    _check_pm(p, m)
    check_int("v", v, 1)
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
    makespan = Fraction(v * max(m, p) + min(m, p) - 1, v) * t
    return _make(
        "interleaved-1f1b",
        p,
        m,
        m * t,
        makespan,
        peaks,
        EXACT,
        EXACT,
        "exact for any tF, tB, every m with m a multiple of max(1, m // p) and both orders",
        "Narayanan et al. SC'21 (bubble (p-1)/(v*m) idle/busy, m >= p); m < p derived here",
    )


def _chimera_common(family: str, p: int, m: int, costs, offset: int, down: int, units: str = "continuous") -> Formula:
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    concat = units == "concat" and m > p
    # concat: every unit is the m=p schedule and its own peaks are never exceeded (chimera.py)
    n0 = down if concat else (m // p) * down
    n1 = (p if concat else m) - n0
    # pipe-1 stage held by device d: (p-1-s+offset) mod p == d
    peaks = [min(p - d, n0) + min(p - (p - 1 + offset - d) % p, n1) for d in range(p)]
    if family == "chimera" and concat:
        return _chimera_concat(p, m, c, peaks)
    if family == "chimera":
        makespan = m * t + (p - 2) * max(c["F"], c["B"])
        return _make(
            family,
            p,
            m,
            m * t,
            makespan,
            peaks,
            EXACT,
            EXACT,
            "exact for any tF, tB (p even, m a multiple of p); the paper's bubble (p-2)/(2m+p-2) is the tF = tB case",
            "Li & Hoefler SC'21, arXiv 2107.06925 (bubble for tF = tB); general tF, tB and peaks derived for "
            "ppverify's merge of two 1F1B pipes",
        )
    # no closed form for the asymmetric merge: bound it (see chimera_asym_formula)
    stages = [(d, (p - 1 + offset - d) % p) for d in range(p)]
    k0, k1 = (m // p) * down, m - (m // p) * down
    makespan = max([(max(k0, k1) + p - 1) * t] + [min(s0, s1) * t + m * t for s0, s1 in stages])
    return _make(
        family,
        p,
        m,
        m * t,
        makespan,
        peaks,
        LOWER,
        UPPER,
        "bounds only: makespan >= the busier pipe's (n+p-1)(tF+tB) and, per device with "
        "stages s0 (pipe 0) and s1 (pipe 1), min(s0, s1)(tF+tB) + m(tF+tB); peak on each "
        "device <= the sum of both pipes' 1F1B in-flight counts"
        + (" within one basic unit (units=concat)" if concat else ""),
        "derived for ppverify's two-pipe merge (the seed paper's construction is not given in arXiv 2605.24006)",
    )


def _chimera_concat(p: int, m: int, c: dict[str, Fraction], peaks: list) -> Formula:
    """Chimera with concatenated basic units (``units=concat``, m = k·p, k >= 2); see
    :func:`chimera_formula`."""
    tf, tb = c["F"], c["B"]
    t, k = tf + tb, m // p
    unit = p * t + (p - 2) * max(tf, tb)
    if tf == tb:
        period = (2 * p + 2 * ((p - 2) // 4)) * tf
    elif p <= 4:
        period = p * t + (p - 2) * abs(tb - tf)
    else:
        # no closed form: the fill/drain bound every schedule on this placement obeys (device
        # p/2-1 waits (p/2-1)tF for its first input and (p/2-1)tB after its last backward)
        makespan = (m + p // 2 - 1) * t
        return _make(
            "chimera",
            p,
            m,
            m * t,
            makespan,
            peaks,
            LOWER,
            EXACT,
            "units=concat, tF != tB, p >= 6: makespan only bounded below by "
            "(m + p/2 - 1)(tF+tB); exact at tF = tB or p <= 4; peaks exact (a lone unit's)",
            "bound derived here; construction Li & Hoefler SC'21 §3.5 (direct concatenation), arXiv 2107.06925",
        )
    return _make(
        "chimera",
        p,
        m,
        m * t,
        unit + (k - 1) * period,
        peaks,
        EXACT,
        EXACT,
        "units=concat: exact at tF = tB (any even p) and for p <= 4 at any tF, tB; peaks exact (a lone unit's)",
        "construction Li & Hoefler SC'21 §3.5 (direct concatenation), arXiv 2107.06925; "
        "period per unit fitted to and checked against the slot table (p <= 40 at "
        "tF = tB), not derived",
    )


def chimera_formula(p: int, m: int, costs: Mapping[str, float] | None = None, units: str | None = None) -> Formula:
    """Chimera: makespan ``m(tF+tB) + (p-2)·max(tF, tB)``; at tF = tB the bubble is
    ``(p-2)/(2m+p-2)`` (Li & Hoefler); peak on device d ``min(p-d, m/2) + min(d+1, m/2)``.

    Derivation (ppverify's merge of two mirrored 1F1B pipes of m/2 microbatches): every device does
    ``m(tF+tB)`` of work; each device's pipe-0 and pipe-1 warm-up/drain bubbles interleave so that
    only ``p-2`` slots stay idle, each as long as the longer op kind. Memory: pipe 0 keeps
    ``min(p-d, m/2)`` microbatches in flight at stage d and pipe 1 ``min(d+1, m/2)`` at stage
    ``p-1-d``; the two maxima coincide in the merged order. p=4, m=4: 10 slots, peaks 3, 4, 4, 3.

    ``units`` is the family's (``None``: its default, ``continuous``).
    ``units="concat"`` (the paper's concatenated basic units, m = k·p): the first unit takes the
    m=p value ``U = p(tF+tB) + (p-2)·max(tF, tB)`` and each further unit a fixed period ``P``, so
    the makespan is ``U + (k-1)·P``. At tF = tB = t, ``P = (2p + 2·floor((p-2)/4))·t``: seamless
    (2p·t, the paper's ``2m+p-2``) for p = 2 and 4, ``2·floor((p-2)/4)`` idle slots per unit
    boundary from p = 6 on (the order only fills the previous unit's drain). For p <= 4 and any
    costs ``P = p(tF+tB) + (p-2)·|tB-tF|`` (p=4, m=8, tF=1, tB=2: 16 + 14 = 30, the paper's
    intermediate bubbles). The periods are fitted to the slot table and tested over the grid, not
    derived; for p >= 6 with tF != tB only the lower bound ``(m + p/2 - 1)(tF+tB)`` is given. Peaks
    are a lone unit's: ``min(p-d, p/2) + min(d+1, p/2)``, between p/2+1 and p.

    Example:
        >>> f = chimera_formula(4, 4)
        >>> f.makespan, f.bubble_ratio, f.peak_activations
        (10.0, 0.2, (3.0, 4.0, 4.0, 3.0))
        >>> chimera_formula(4, 4, {"F": 1, "B": 2}).makespan
        16.0
        >>> chimera_formula(4, 8, {"F": 1, "B": 2}, units="concat").makespan
        30.0
        >>> chimera_formula(6, 12, units="concat").makespan, chimera_formula(6, 12).makespan
        (30.0, 28.0)
    """
    from .schedules.chimera import DEFAULT_UNITS, _check, _check_units

    _check_pm(p, m)
    _check("chimera", p, m)
    units = _check_units("chimera", DEFAULT_UNITS if units is None else units)
    return _chimera_common("chimera", p, m, costs, 0, p // 2, units)


def chimera_asym_formula(
    p: int,
    m: int,
    costs: Mapping[str, float] | None = None,
    offset: int = 1,
    down: int | None = None,
    units: str | None = None,
) -> Formula:
    """Asymmetric Chimera-style schedule: bounds only (no closed form; the construction is ppverify's
    choice; the seed paper, arXiv 2605.24006, names the placement without a construction).

    Makespan >= each of: ``(n+p-1)(tF+tB)`` for the busier pipe's n microbatches (p-1 forwards
    before its last stage starts, n(tF+tB) there, p-1 backwards after it); and, for each device
    holding stage s0 of pipe 0 and s1 of pipe 1, ``min(s0, s1)(tF+tB) + m(tF+tB)`` (its first op
    waits for at least ``min(s0, s1)`` forwards upstream, it works ``m(tF+tB)``, and its last
    backward is followed by at least ``min(s0, s1)`` backwards downstream). For Chimera's mirror at
    tF = tB the second bound is the exact ``2m+p-2``. Peak on each device <= pipe 0's 1F1B
    in-flight count at its stage plus pipe 1's (each pipe keeps its 1F1B order in the merge); with
    ``units="concat"`` those counts are a single basic unit's (the concatenation never exceeds them).

    Example:
        >>> f = chimera_asym_formula(4, 4, offset=0)
        >>> f.makespan, f.makespan_kind, f.peak_activations, f.peak_kind
        (10.0, 'lower bound', (3.0, 4.0, 4.0, 3.0), 'upper bound')
        >>> chimera_asym_formula(4, 8).makespan   # offset 1: device 2 holds stage 2 of both pipes
        20.0
    """
    from .schedules.chimera import DEFAULT_UNITS, _check, _check_units

    _check_pm(p, m)
    _check("chimera-asym", p, m)
    down = p // 2 if down is None else down
    if not 1 <= down <= p - 1:
        raise ParameterError("down", down, f"chimera-asym needs 1 <= down <= p-1 = {p - 1}")
    units = _check_units("chimera-asym", DEFAULT_UNITS if units is None else units)
    return _chimera_common("chimera-asym", p, m, costs, offset % p, down, units)


def hanayo_formula(p: int, m: int, costs: Mapping[str, float] | None = None, waves: int = 1) -> Formula:
    """Hanayo (elf order): for ``m >= p`` makespan ``m(tF+tB) + (p-1)·max(tF, tB)/W``, at tF = tB
    bubble ``(p-1)/(2W·m+p-1)``; for ``m < p`` that value is a lower bound. Peak (exact for every m),
    in chunks of 1/(2W): ``min(2Wm, max(2Wm - (p-1-d), min(p-d, m) + 2m(W-1) + 1))``.

    Derivation: each chunk op is 1/(2W) of a share op, so the single fill/drain of the folded pipe
    costs ``(p-1)/(2W)`` of a forward plus a backward at tF = tB; with unequal costs the drain
    runs at the pace of the longer kind (checked against the table). With m < p the devices wait
    for each other between waves and the bound is loose. Memory: the turning device (d = p-1)
    holds every chunk of every microbatch (m); device d holds ``p-1-d`` fewer chunks, or its
    warm-up plus the earlier waves' chunks when m < p. Reference figures: p=4, m=4, W=1 peaks
    2.5, 3, 3.5, 4 and 11 slots; W=2 at F=B=1: 9.5.

    Example:
        >>> f = hanayo_formula(4, 4)
        >>> f.makespan, f.peak_activations
        (11.0, (2.5, 3.0, 3.5, 4.0))
        >>> hanayo_formula(4, 4, waves=2).makespan
        9.5
    """
    from .schedules.registry import check_int

    _check_pm(p, m)
    check_int("waves", waves, 1)
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    w2 = 2 * waves
    makespan = m * t + Fraction(p - 1, waves) * max(c["F"], c["B"])
    peaks = [
        Fraction(min(w2 * m, max(w2 * m - (p - 1 - d), min(p - d, m) + 2 * m * (waves - 1) + 1)), w2) for d in range(p)
    ]
    mk = EXACT if m >= p else LOWER
    regime = (
        "restricted regime m = p"
        if m == p
        else ("m > p (outside the restricted regime m = p)" if m > p else "m < p (outside the restricted regime m = p)")
    )
    return _make(
        "hanayo",
        p,
        m,
        m * t,
        makespan,
        peaks,
        mk,
        EXACT,
        f"makespan exact for m >= p and any tF, tB, a lower bound for m < p; peaks exact; here: {regime}",
        "Liu et al. SC'23, arXiv 2308.15762, with the elf library's order; bubble derived by simulation",
    )


def one_f_one_b_split_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """1F1B with B split into I then W: makespan ``m(tF+tI+tW) + (p-1)(tF+tI)``; peaks as 1F1B
    (``min(p-d, m)``; activations are freed when W ends, I frees ``freed_by_I`` = 0 of them).

    Derivation: the last device starts after ``(p-1)tF`` and then never idles (``m(tF+tI+tW)``);
    its last I ends tW before that, and the last gradient then crosses p-1 devices as I ops
    (``(p-1)tI``), after which device 0 runs its last W. Compared with 1F1B's
    ``(m+p-1)(tF+tB)`` the split saves ``(p-1)tW``: W is off the gradient chain.

    Example:
        >>> one_f_one_b_split_formula(4, 4).makespan   # unit slots: F = I = W = 1
        18.0
        >>> one_f_one_b_split_formula(4, 4, {"F": 1, "B": 2}).makespan  # I = W = 1
        18.0
    """
    _check_pm(p, m)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["I"] + c["W"])
    return _make(
        "1f1b-split",
        p,
        m,
        busy,
        busy + (p - 1) * (c["F"] + c["I"]),
        [min(p - d, m) for d in range(p)],
        EXACT,
        EXACT,
        "exact for any tF, tI, tW (activations freed when W ends)",
        "derived here; cf. zero-bubble (Qi et al. ICLR'24, arXiv 2401.10241)",
    )


def formula_for(family: str, p: int, m: int, costs: Mapping[str, float] | None = None, **params: Any) -> Formula | None:
    """The formula of a registered family (``None`` when it has none); ``None`` params take defaults.

    Example:
        >>> formula_for("interleaved-1f1b", 4, 8, {"F": 1, "B": 1}, v=2).makespan
        19.0
    """
    from .schedules import get_family

    fam = get_family(family)
    if fam.formula is None:
        return None
    args = fam.arguments(params)
    return fam.formula(p, m, costs, **args)
