"""The greedy's variants: priority rules and per-device open-forward limits tried for the
starting schedule (:func:`.starts.best_candidate`) and tuned by the local search
(:mod:`.localsearch`).
"""

from __future__ import annotations

from ..core.ops import B, F, I
from .bounds import _round_trip
from .problem import Instance
from .warmup import warmup_limits

#: a greedy variant: ``(priority, lookahead, open-forward limits, wait_for_grad)``
Rule = tuple[str, bool, "list[int] | None", bool]


def round_trip_limits(inst: Instance, extra: int = 0) -> list[int]:
    """Per device, the forwards needed to cover its round trip without idling:
    ``ceil(R_d / tF) + extra``, where ``R_d`` is the shortest time from a forward's start to its
    backward's start on that device (its first stage); at least 1.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(3)
        >>> round_trip_limits(instance(Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), split=True)))
        [5, 3, 1]
    """
    dag = inst.dag
    out = []
    for d in range(inst.p):
        ops = list(inst.device_ops(d))
        if not ops:
            out.append(1)
            continue
        f0 = min((i for i in ops if dag.ops[i].kind == F), key=lambda i: (dag.ops[i].mb, dag.ops[i].stage))
        op = dag.ops[f0]
        g0 = next(
            i for i in ops if dag.ops[i].stage == op.stage and dag.ops[i].mb == op.mb and dag.ops[i].kind in (I, B)
        )
        lag = _round_trip(inst, f0, g0)
        # a zero-length forward (JSON costs allow 0) counts as one tick: a limit, not a bound
        out.append(max(1, -(-lag // max(1, inst.dur[f0])) + extra))
    return out


def greedy_rules(inst: Instance) -> list[Rule]:
    """The greedy variants ``(priority, lookahead, open-forward limits, wait_for_grad)`` tried,
    most useful first: for the span, the warm-up bound's forwards per device
    (:func:`.warmup.warmup_limits`, one stage per device), ZB-H1-like (at most ``p - d`` open forwards on device d, W deferred with
    lookahead), ZB-H2-like (``2(p - d)`` and ``2(p - d) - 1``, warm-up forwards yielding to the
    first gradient), round-trip-covering limits (:func:`round_trip_limits`), and the
    unrestricted rules.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> greedy_rules(instance(Problem(pl, 2, CostModel.abstract(pl), split=True)))[0]  # ZB-H1's
        ('GFW', True, [2, 1], False)
        >>> greedy_rules(instance(Problem(pl, 2, CostModel.abstract(pl), split=True, objective="span")))[0]
        ('GFW', False, [2, 1], False)
    """
    return [rule for _, rule in named_rules(inst)]


def named_rules(inst: Instance) -> list[tuple[str, Rule]]:
    """:func:`greedy_rules` with a name for the rules whose limits come from an argument
    (``"warmup"``), "" for the others.

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> pr = Problem(pl, 2, CostModel.abstract(pl), split=True, objective="span")
        >>> [name for name, _ in named_rules(instance(pr))][:2]
        ['warmup', '']
    """
    p = inst.p
    h1 = [p - d for d in range(p)]
    h2 = [max(1, 2 * (p - d) - 1) for d in range(p)]
    h2b = [2 * (p - d) for d in range(p)]
    rt0, rt1 = round_trip_limits(inst, 0), round_trip_limits(inst, 1)
    # for the span only: for the makespan the bound leaves the devices off its critical path so
    # much idle that the fewest forwards is one, a poor limit (GPipe's order, one at a time)
    warm = warmup_limits(inst, None, None, "span") if inst.problem.objective == "span" else None
    rules: list[tuple[str, Rule]] = [("warmup", ("GFW", False, warm, False))] if warm else []
    ordinary: list[Rule] = [
        ("GFW", True, h1, False),
        ("GFW", False, h2b, True),
        ("GFW", False, h2, True),
        ("GFW", False, h2, False),
        ("GFW", False, h2b, False),
        ("GFW", False, rt1, True),
        ("GFW", True, h1, True),
        ("AW", False, h2, False),
        ("AW", True, h1, False),
        ("GFW", False, rt0, False),
        ("GFW", True, h2, False),
        ("GFW", False, h1, False),
        ("GFW", True, None, False),
        ("GFW", False, None, False),
        ("GFW", False, None, True),
        ("GWF", False, None, False),
        ("FGW", False, None, False),
        # unrestricted alternation: on loop placements the open-forward limits above deadlock
        ("AW", False, None, False),
    ]
    return rules + [("", r) for r in ordinary]


def forward_first_rules(inst: Instance) -> list[Rule]:
    """Greedy rules where the first k devices put a forward first (``"FMGW:k"``,
    :func:`.heuristic.greedy`), for k in about p/8, p/4, 3p/8, p/2 and p. Under a memory cap
    with communication the gradient-first rules hold the first devices' forwards back behind
    their gradient ops, and the last microbatches then reach the end of the pipeline late
    (linear, p = 8, m = 24, delay 1, cap 16: 90 from every other rule, 86 with k = 2, the bound).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(8)
        >>> [r[0] for r in forward_first_rules(instance(Problem(pl, 8, CostModel.abstract(pl), split=True)))]
        ['FMGW:1', 'FMGW:2', 'FMGW:3', 'FMGW:4', 'FMGW:8']
    """
    p = inst.p
    ks = sorted({max(1, p // 8), max(1, p // 4), max(1, 3 * p // 8), max(1, p // 2), p})
    return [(f"FMGW:{k}", False, None, False) for k in ks]
