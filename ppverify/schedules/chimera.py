"""Chimera (Li & Hoefler SC'21, arXiv 2107.06925) and an asymmetric Chimera-style variant.

Two pipes in opposite directions (``bidirectional`` placement): pipe 0 ("down") has stage s on
device s, pipe 1 ("up") stage s on device ``p-1-s`` (``chimera-asym``: ``(p-1-s+offset) mod p``).
Every device holds one stage replica of each pipe, each a whole device share (so an op costs tF or
tB and an in-flight microbatch counts 1).

Microbatches come in basic units of ``p``: in unit u the first ``down`` microbatches
(``u*p .. u*p+down-1``) go down pipe 0, the rest up pipe 1 (Chimera: ``down = p/2``).

Construction (REFERENCE.md §1, "each pipe runs 1F1B; merged slot by slot"): each pipe runs 1F1B
over all of its microbatches on its own; every op gets the slot it would start in that pipe's
unit-cost (F = B = 1) 1F1B table; each device runs its ops of both pipes in the order of those
slots (ties: the microbatch injected earlier into its pipe first, then pipe 0). For ``m = p`` and
even p this is Chimera's basic unit (p=4: 10 slots, peaks 3,4,4,3); for ``m > p`` the later units'
forwards fill the previous unit's drain because the pipes simply keep running 1F1B.

Why the merged programs never deadlock, whatever the offset or split: all programs are
subsequences of one global order (slot, tie-break) in which every dependency comes strictly
earlier (a predecessor's slot ends before its successor's starts), so some device can always run
its next op.

Difference from strict unit-by-unit concatenation (one unit's 1F1B, then the next): pipelining the
units lets each pipe keep up to ``p - s`` microbatches in flight at stage s, one more than in a unit
when m > p (peak ``p + 1`` per device instead of <= p), and it is never slower: p=4, m=8 at F=1,B=2
takes 28 units instead of the 30 of unit-by-unit concatenation (REFERENCE.md §1); 18 at F=B either way.
"""

from __future__ import annotations

from ..errors import ParameterError
from ..ops import B, F, Op
from ..placement import bidirectional
from ..schedule import Schedule
from .registry import Family, Param, check_int, register

CHIMERA_RULES = "p even, p >= 2; m a multiple of p (m = k*p concatenates k basic units)"
ASYM_RULES = ("p even, p >= 2; m a multiple of p; offset any integer (taken mod p); "
              "1 <= down <= p-1 (default p/2)")


def one_f_one_b_slots(p: int, n: int) -> dict[Op, int]:
    """Start slot of every op of 1F1B on ``p`` linear stages with ``n`` microbatches at F = B = 1.

    Computed with the shared program-order timing (:func:`ppverify.engines.core.list_schedule`),
    so it is exactly the ``slot`` engine's table of :func:`ppverify.schedules.one_f_one_b.one_f_one_b`.

    Example:
        >>> t = one_f_one_b_slots(2, 2)
        >>> t[Op("F", 1, 0)], t[Op("B", 1, 0)], t[Op("B", 0, 1)]
        (1, 2, 5)
    """
    from ..dag import build_dag
    from ..engines.core import list_schedule
    from .one_f_one_b import one_f_one_b

    dag = build_dag(one_f_one_b(p, n))
    start, _ = list_schedule(dag, [1.0] * dag.num_ops)
    return {op: int(t) for op, t in zip(dag.ops, start)}


def _check(name: str, p: int, m: int) -> None:
    if p % 2:
        raise ParameterError("p", p, f"{name} needs an even number of devices (two pipes of p/2 "
                                     "microbatches per basic unit)")
    if m % p:
        raise ParameterError("m", m, f"{name} needs m to be a multiple of p={p} (basic units of p "
                                     "microbatches are concatenated)")


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


def chimera(p: int, m: int) -> Schedule:
    """Chimera: two mirrored 1F1B pipes, half of each basic unit down, half up.

    Example:
        >>> [str(o) for o in chimera(4, 4).programs[0]]
        ['0F0', '0F1', '3F2', '3B2', '3F3', '3B3', '0B0', '0B1']
        >>> chimera(3, 3)
        Traceback (most recent call last):
        ...
        ppverify.errors.ParameterError: parameter p=3: chimera needs an even number of devices (two pipes of p/2 microbatches per basic unit)
    """
    _check("chimera", p, m)
    return two_pipe_schedule(p, m, 0, p // 2, "chimera", {"p": p, "m": m})


def chimera_asym(p: int, m: int, offset: int = 1, down: int | None = None) -> Schedule:
    """Asymmetric Chimera-style schedule: pipe 1's stage s on device ``(p-1-s+offset) mod p`` and
    ``down`` of every ``p`` microbatches down pipe 0 (default ``p/2``). ``offset=0, down=p/2`` is
    Chimera. REFERENCE.md §1: the seed paper names this placement but its construction is not
    recovered; these two knobs are ppverify's choice.

    Example:
        >>> chimera_asym(4, 4).placement.maps[1]
        (0, 3, 2, 1)
        >>> chimera_asym(4, 4, down=3).pipe_of_mb
        (0, 0, 0, 1)
        >>> chimera_asym(4, 4, down=4)
        Traceback (most recent call last):
        ...
        ppverify.errors.ParameterError: parameter down=4: chimera-asym needs 1 <= down <= p-1 = 3 (microbatches of each basic unit sent down pipe 0; the rest go up pipe 1)
    """
    _check("chimera-asym", p, m)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise ParameterError("offset", offset, "must be an integer (pipe-1 placement offset, taken mod p)")
    if down is None:
        down = p // 2
    check_int("down", down, 0)
    if not 1 <= down <= p - 1:
        raise ParameterError("down", down, f"chimera-asym needs 1 <= down <= p-1 = {p - 1} (microbatches "
                                           "of each basic unit sent down pipe 0; the rest go up pipe 1)")
    return two_pipe_schedule(p, m, offset % p, down, "chimera-asym",
                             {"p": p, "m": m, "offset": offset % p, "down": down})


def _chimera_formula(p, m, costs=None):
    from ..formulas import chimera_formula

    return chimera_formula(p, m, costs)


def _asym_formula(p, m, costs=None, offset=1, down=None):
    from ..formulas import chimera_asym_formula

    return chimera_asym_formula(p, m, costs, offset=offset, down=down)


register(Family(
    "chimera", chimera,
    "Chimera: two mirrored 1F1B pipes merged slot by slot, 2 stage replicas per device (Li & Hoefler 2021)",
    rules=CHIMERA_RULES, formula=_chimera_formula,
))
register(Family(
    "chimera-asym", chimera_asym,
    "Asymmetric Chimera-style: pipe 1 shifted by an offset and/or an unequal microbatch split",
    params=(Param("offset", int, 1, "pipe-1 placement offset k: stage s on device (p-1-s+k) mod p"),
            Param("down", int, None, "microbatches of each basic unit of p sent down pipe 0 (default p/2)")),
    rules=ASYM_RULES, formula=_asym_formula,
))
