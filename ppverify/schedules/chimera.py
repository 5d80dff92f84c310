"""Chimera (Li & Hoefler SC'21, arXiv 2107.06925) and an asymmetric Chimera-style variant.

Two pipes in opposite directions (``bidirectional`` placement): pipe 0 ("down") has stage s on
device s, pipe 1 ("up") stage s on device ``p-1-s`` (``chimera-asym``: ``(p-1-s+offset) mod p``).
Every device holds one stage replica of each pipe, each a whole device share (so an op costs tF or
tB and an in-flight microbatch counts 1).

Microbatches come in basic units of ``p``: in unit u the first ``down`` microbatches
(``u*p .. u*p+down-1``) go down pipe 0, the rest up pipe 1 (Chimera: ``down = p/2``).

Construction (Li & Hoefler, "Chimera", SC'21, arXiv 2107.06925: two 1F1B pipes merged slot by slot): each pipe runs 1F1B
over all of its microbatches on its own; every op gets the slot it would start in that pipe's
unit-cost (F = B = 1) 1F1B table; each device runs its ops of both pipes in the order of those
slots (ties: the microbatch injected earlier into its pipe first, then pipe 0). For ``m = p`` and
even p this is Chimera's basic unit (p=4: 10 slots, peaks 3,4,4,3); for ``m > p`` the later units'
forwards fill the previous unit's drain because the pipes simply keep running 1F1B.

Why the merged programs never deadlock, whatever the offset or split: all programs are
subsequences of one global order (slot, tie-break) in which every dependency comes strictly
earlier (a predecessor's slot ends before its successor's starts), so some device can always run
its next op.

Two ways to go past one basic unit (``units`` parameter, both families):

* ``continuous`` (default): the construction above over all m microbatches. Each pipe keeps up to
  ``p - s`` microbatches in flight at stage s, one more than in a unit, so the peak is ``p + 1`` per
  device once m > p; p=4, m=8 takes 18 slots at F=B=1 and 28 at F=1,B=2.
* ``concat``: the paper's concatenation of basic units (Li & Hoefler SC'21 §3.5, "direct
  concatenation": later units' forwards fill the previous unit's drain,
  activations between p/2+1 and p). Every unit is the m=p schedule above, with microbatches
  ``u*p .. u*p+p-1``; a device runs its units' programs one after the other, except that once it
  has issued every forward of its current unit k (its drain), it may run the next forwards of unit
  k+1 (in unit k+1's own order) in the slots where unit k's next op is not ready yet. The order is
  fixed by running this rule at unit cost (F = B = 1) slot by slot: unit k's next op first when its
  inputs are there, else unit k+1's next op if it is a forward whose inputs are there and the device
  holds fewer activations than a lone unit ever does on it (the unit's own peak there, <= p). So the
  peaks are exactly the unit's (p=4: 3, 4, 4, 3); p=4, m=8 takes 18 slots at F=B=1 and 30 at
  F=1,B=2 (the paper's "intermediate bubbles" when tB > tF; the paper's p=4, m=8 figures are 18 and 30).
  Only the drain is filled, as the paper describes: at F=B=1 p=2 and p=4 concatenate seamlessly
  (``2m+p-2``), but from p=6 on this rule leaves ``2*floor((p-2)/4)`` idle slots per unit boundary
  (p=6, m=12: 30 instead of 28; see :func:`chimera_formula`). The gap is this
  rule's, not the memory bound's: an exact CP-SAT search finds 28 for p=6, m=12 (and 38 for p=8,
  m=16) with no device above its unit peak.

Why ``concat`` never deadlocks under any costs: its programs are the order in which a complete
unit-cost run executed the ops, so every dependency comes earlier in one global order.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, UPPER, Formula, exact_costs, make_formula
from ..core.errors import ParameterError
from ..core.ops import Op
from ..core.placement import bidirectional
from ..core.schedule import Schedule
from .chimera_concat import concat_programs
from .registry import Family, Param, check_int, register

UNITS = ("continuous", "concat")
#: the ``units`` value used when none is given (builders, formulas and ``show``/``compare`` all
#: read this one constant, and schedules record ``units`` in their params only when it differs)
DEFAULT_UNITS = "continuous"
CHIMERA_RULES = "p even, p >= 2; m a multiple of p (m = k*p: k basic units); units continuous (default) or concat"
ASYM_RULES = (
    "p even, p >= 2; m a multiple of p; offset any integer (taken mod p); "
    "1 <= down <= p-1 (default p/2); units continuous (default) or concat"
)


def one_f_one_b_slots(p: int, n: int) -> dict[Op, int]:
    """Start slot of every op of 1F1B on ``p`` linear stages with ``n`` microbatches at F = B = 1.

    Computed with the shared program-order timing (:func:`ppverify.core.program_order.list_schedule`),
    so it is exactly the ``slot`` engine's table of :func:`ppverify.schedules.one_f_one_b.one_f_one_b`.

    Example:
        >>> t = one_f_one_b_slots(2, 2)
        >>> t[Op("F", 1, 0)], t[Op("B", 1, 0)], t[Op("B", 0, 1)]
        (1, 2, 5)
    """
    from ..core.dag import build_dag
    from ..core.program_order import list_schedule
    from .one_f_one_b import one_f_one_b

    dag = build_dag(one_f_one_b(p, n))
    start, _ = list_schedule(dag, [1.0] * dag.num_ops)
    return {op: int(t) for op, t in zip(dag.ops, start)}


def _check(name: str, p: int, m: int) -> None:
    if p % 2:
        raise ParameterError(
            "p", p, f"{name} needs an even number of devices (two pipes of p/2 microbatches per basic unit)"
        )
    if m % p:
        raise ParameterError(
            "m", m, f"{name} needs m to be a multiple of p={p} (basic units of p microbatches are concatenated)"
        )


def two_pipe_schedule(p: int, m: int, offset: int, down: int, family: str, params: dict) -> Schedule:
    """Merge two 1F1B pipes slot by slot (see module doc); the engine of both families.

    Example:
        >>> s = two_pipe_schedule(4, 4, 0, 2, "chimera", {})
        >>> [str(o) for o in s.programs[1]]
        ['1F0', '2F2', '1F1', '2F3', '2B2', '1B0', '2B3', '1B1']
    """
    pl = bidirectional(p, offset)
    pipe_of_mb = tuple(0 if mb % p < down else 1 for mb in range(m))
    members = [[mb for mb in range(m) if pipe_of_mb[mb] == pipe] for pipe in (0, 1)]
    keyed: list[list[tuple[int, int, int, Op]]] = [[] for _ in range(p)]
    for pipe in (0, 1):
        if not members[pipe]:
            continue
        for op, slot in one_f_one_b_slots(p, len(members[pipe])).items():
            d = pl.maps[pipe][op.stage]
            keyed[d].append((slot, op.mb, pipe, Op(op.kind, op.stage, members[pipe][op.mb])))
    programs = tuple(tuple(op for *_, op in sorted(ops)) for ops in keyed)
    return Schedule(pl, m, programs, pipe_of_mb, family, params)


def _check_units(name: str, units: str) -> str:
    if isinstance(units, str):
        units = units.strip().lower()
    if units not in UNITS:
        raise ParameterError(
            "units",
            units,
            f"{name} needs units to be one of {', '.join(UNITS)} "
            "(continuous: both pipes run 1F1B over all microbatches; "
            "concat: the paper's concatenated basic units)",
        )
    return units


def units_note(p: int, m: int, units: str) -> str:
    """Why ``units`` changes nothing at ``m == p`` (empty otherwise): one basic unit is the whole
    step, so ``concat`` and ``continuous`` build the same schedule; the two differ from m = 2p on.
    The family's formula puts it in its conditions (``show``, ``compare`` notes).

    Example:
        >>> units_note(4, 4, "concat")
        'units=concat has no effect at m = p = 4: one basic unit is the whole step, the same schedule as units=continuous (they differ from m = 2p on)'
        >>> units_note(4, 8, "concat")
        ''
    """
    if m != p or units == DEFAULT_UNITS:
        return ""
    return (
        f"units={units} has no effect at m = p = {p}: one basic unit is the whole step, the same schedule "
        f"as units={DEFAULT_UNITS} (they differ from m = 2p on)"
    )


def _concatenated(unit: Schedule, m: int, family: str, params: dict) -> Schedule:
    k = m // unit.p
    return Schedule(
        unit.placement, m, concat_programs(unit, k), unit.pipe_of_mb * k, family, {**params, "units": "concat"}
    )


def chimera(p: int, m: int, units: str = DEFAULT_UNITS) -> Schedule:
    """Chimera: two mirrored 1F1B pipes, half of each basic unit down, half up; ``units`` says how
    m > p goes on (module doc): ``continuous`` or ``concat`` (the paper's basic units).

    Example:
        >>> [str(o) for o in chimera(4, 4).programs[0]]
        ['0F0', '0F1', '3F2', '3B2', '3F3', '3B3', '0B0', '0B1']
        >>> chimera(3, 3)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter p=3: chimera needs an even number of devices (two pipes of p/2 microbatches per basic unit)
        >>> chimera(4, 8, units="concat").describe()
        'chimera p=4 m=8 units=concat'
    """
    _check("chimera", p, m)
    units = _check_units("chimera", units)
    if units == "concat" and m > p:
        return _concatenated(two_pipe_schedule(p, p, 0, p // 2, "chimera", {}), m, "chimera", {"p": p, "m": m})
    params = {"p": p, "m": m} if units == DEFAULT_UNITS else {"p": p, "m": m, "units": units}
    return two_pipe_schedule(p, m, 0, p // 2, "chimera", params)


def chimera_asym(p: int, m: int, offset: int = 1, down: int | None = None, units: str = DEFAULT_UNITS) -> Schedule:
    """Asymmetric Chimera-style schedule: pipe 1's stage s on device ``(p-1-s+offset) mod p`` and
    ``down`` of every ``p`` microbatches down pipe 0 (default ``p/2``). ``offset=0, down=p/2`` is
    Chimera. The seed paper (arXiv 2605.24006) names this placement but its construction is not
    recovered; these two knobs are ppverify's choice. ``units`` as for :func:`chimera` (with
    ``concat`` the basic unit is this family's m=p schedule).

    Example:
        >>> chimera_asym(4, 4).placement.maps[1]
        (0, 3, 2, 1)
        >>> chimera_asym(4, 4, down=3).pipe_of_mb
        (0, 0, 0, 1)
        >>> chimera_asym(4, 4, down=4)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter down=4: chimera-asym needs an integer down with 1 <= down <= p-1 = 3 (microbatches of each basic unit sent down pipe 0; the rest go up pipe 1)
    """
    offset, down, units = _asym_arguments(p, m, offset, down, units)
    params: dict[str, int | str] = {"p": p, "m": m, "offset": offset, "down": down}
    if units != DEFAULT_UNITS:
        params["units"] = units
    if units == "concat" and m > p:
        unit = two_pipe_schedule(p, p, offset, down, "chimera-asym", {})
        return _concatenated(unit, m, "chimera-asym", params)
    return two_pipe_schedule(p, m, offset, down, "chimera-asym", params)


def _asym_arguments(p: int, m: int, offset: int, down: int | None, units: str) -> tuple[int, int, str]:
    """chimera-asym's parameter rules, one place for the generator and the formula: ``(offset mod
    p, down, units)`` with ``down``'s default p/2 filled in, or a :class:`ParameterError`.

    Example:
        >>> _asym_arguments(4, 8, 5, None, "concat")
        (1, 2, 'concat')
        >>> _asym_arguments(4, 8, 1, 2.0, "continuous")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter down=2.0: chimera-asym needs an integer down with 1 <= down <= p-1 = 3 (microbatches of each basic unit sent down pipe 0; the rest go up pipe 1)
    """
    _check("chimera-asym", p, m)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise ParameterError("offset", offset, "must be an integer (pipe-1 placement offset, taken mod p)")
    down = p // 2 if down is None else down
    if isinstance(down, bool) or not isinstance(down, int) or not 1 <= down <= p - 1:
        raise ParameterError(
            "down",
            down,
            f"chimera-asym needs an integer down with 1 <= down <= p-1 = {p - 1} (microbatches "
            "of each basic unit sent down pipe 0; the rest go up pipe 1)",
        )
    return offset % p, down, _check_units("chimera-asym", units)


def _chimera_common(
    family: str, p: int, m: int, costs: Mapping[str, float] | None, offset: int, down: int, units: str
) -> Formula:
    c = exact_costs(costs)
    t = c["F"] + c["B"]
    concat = units == "concat" and m > p
    # concat: every unit is the m=p schedule and its own peaks are never exceeded (see the module doc)
    n0 = down if concat else (m // p) * down
    n1 = (p if concat else m) - n0
    # pipe-1 stage held by device d: (p-1-s+offset) mod p == d
    peaks = [min(p - d, n0) + min(p - (p - 1 + offset - d) % p, n1) for d in range(p)]
    if family == "chimera" and concat:
        return _chimera_concat(p, m, c, peaks)
    note = units_note(p, m, units)
    if family == "chimera":
        return make_formula(
            family,
            m * t,
            m * t + (p - 2) * max(c["F"], c["B"]),
            peaks,
            EXACT,
            EXACT,
            "exact for any tF, tB (p even, m a multiple of p); the paper's bubble (p-2)/(2m+p-2) is the tF = tB case"
            + (f"; {note}" if note else ""),
            "Li & Hoefler SC'21, arXiv 2107.06925 (bubble for tF = tB); general tF, tB and peaks derived for "
            "ppverify's merge of two 1F1B pipes",
        )
    # no closed form for the asymmetric merge: bound it (see chimera_asym_formula)
    stages = [(d, (p - 1 + offset - d) % p) for d in range(p)]
    k0, k1 = (m // p) * down, m - (m // p) * down
    makespan = max([(max(k0, k1) + p - 1) * t] + [min(s0, s1) * t + m * t for s0, s1 in stages])
    return make_formula(
        family,
        m * t,
        makespan,
        peaks,
        LOWER,
        UPPER,
        "bounds only: makespan >= the busier pipe's (n+p-1)(tF+tB) and, per device with "
        "stages s0 (pipe 0) and s1 (pipe 1), min(s0, s1)(tF+tB) + m(tF+tB); peak on each "
        "device <= the sum of both pipes' 1F1B in-flight counts"
        + (" within one basic unit (units=concat)" if concat else "")
        + (f"; {note}" if note else ""),
        "derived for ppverify's two-pipe merge (the seed paper's construction is not given in arXiv 2605.24006)",
    )


def _chimera_concat(p: int, m: int, c: dict[str, Fraction], peaks: list[int]) -> Formula:
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
        return make_formula(
            "chimera",
            m * t,
            (m + p // 2 - 1) * t,
            peaks,
            LOWER,
            EXACT,
            "units=concat, tF != tB, p >= 6: makespan only bounded below by "
            "(m + p/2 - 1)(tF+tB); exact at tF = tB or p <= 4; peaks exact (a lone unit's)",
            "bound derived here; construction Li & Hoefler SC'21 §3.5 (direct concatenation), arXiv 2107.06925",
        )
    return make_formula(
        "chimera",
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
    check_int("p", p, 1)
    check_int("m", m, 1)
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
    check_int("p", p, 1)
    check_int("m", m, 1)
    # the generator's own rules: a formula for parameters build refuses describes no schedule
    offset, down, units = _asym_arguments(p, m, offset, down, DEFAULT_UNITS if units is None else units)
    return _chimera_common("chimera-asym", p, m, costs, offset, down, units)


UNITS_PARAM = Param(
    "units",
    str,
    DEFAULT_UNITS,
    "m > p: 'continuous' (each pipe runs 1F1B over all its microbatches, peak p+1) or "
    "'concat' (the paper's concatenated basic units, peak <= p); no effect at m = p (one basic unit)",
)

register(
    Family(
        "chimera",
        chimera,
        "Chimera: two mirrored 1F1B pipes merged slot by slot, 2 stage replicas per device (Li & Hoefler 2021)",
        params=(UNITS_PARAM,),
        rules=CHIMERA_RULES,
        formula=chimera_formula,
        notes=lambda p, m, units=DEFAULT_UNITS, **_: [n for n in [units_note(p, m, units)] if n],
    )
)
register(
    Family(
        "chimera-asym",
        chimera_asym,
        "Asymmetric Chimera-style: pipe 1 shifted by an offset and/or an unequal microbatch split",
        params=(
            Param("offset", int, 1, "pipe-1 placement offset k: stage s on device (p-1-s+k) mod p"),
            Param("down", int, None, "microbatches of each basic unit of p sent down pipe 0 (default p/2)"),
            UNITS_PARAM,
        ),
        rules=ASYM_RULES,
        formula=chimera_asym_formula,
        notes=lambda p, m, units=DEFAULT_UNITS, **_: [n for n in [units_note(p, m, units)] if n],
    )
)
