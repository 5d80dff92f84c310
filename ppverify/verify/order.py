"""Dependencies, exclusivity and deadlock freedom as one difference-logic problem for Z3.

Every compute op (and every point-to-point action) gets an integer logical time ``t``. The
constraints:

* exclusivity: a device runs its program in order, one action at a time: consecutive actions
  satisfy ``t_next - t_prev >= 1`` (ops fused into one overlapped slot share their time). With
  this chain no two actions of a device can share an instant, so pairwise exclusivity follows.
* dependencies: every edge ``q -> i`` of the step's DAG (:func:`ppverify.core.dag.build_dag`, which
  includes "W after its own I" and the B-vs-I/W rules) gives ``t_i - t_q >= 1``;
* point-to-point semantics (:mod:`.comm_model` builds the SEND/RECV nodes): ``buffered``: the
  op that consumes a RECV's data runs after its SEND was posted (``t_op - t_send >= 1``), a RECV
  is only posted and sends never block, as in PyTorch's runtime;
  ``rendezvous``: a transfer happens once both its SEND and RECV are posted, and both sides
  resume only after it, so each blocks until the partner arrives.

The programs admit a complete execution iff these constraints are satisfiable (an execution is
a linear order consistent with them; a model of them is such an order). Unsatisfiable means a
cycle of waits: within one device it is an op before its own input (a dependency violation),
across devices a deadlock. Z3 (difference logic, Bellman-Ford) decides it; the unsat core of the
guarded version names the cycle, minimized on the sub-problem of the core's actions.
"""

from __future__ import annotations

import time

import z3

from ..core.errors import ParameterError
from ..core.time_limit import seconds_left
from .cycles import describe_cycle, positive_cycle, scc_cycle
from .order_problem import OrderProblem
from .report import Violation
from .smt import IDL_SEARCH_FACTOR, decide, diff_ge, idl_solver, load, minimize_core, num

__all__ = [
    "CORE_BUDGET_S",
    "GUARDED_LIMIT",
    "OrderProblem",
    "check_order",
    "core_budget",
    "is_orderable",
    "unminimized",
]


def _program_order(pb: OrderProblem, nodes: list[int] | None = None) -> list[str]:
    """Chain atoms between consecutive nodes of each device (of ``nodes`` only, when given: the
    implied bound between non-adjacent nodes is their rank difference)."""
    keep = None if nodes is None else set(nodes)
    atoms = []
    for chain in pb.chains().values():
        sel = chain if keep is None else [n for n in chain if n in keep]
        for a, b in zip(sel, sel[1:]):
            w = pb.rank[b] - pb.rank[a]
            atoms.append(diff_ge(f"t{b}", f"t{a}", w))
            if w == 0:
                atoms.append(diff_ge(f"t{a}", f"t{b}", 0))
    return atoms


def _text(pb: OrderProblem, guarded: bool, edge_ids: list[int] | None = None, nodes: list[int] | None = None) -> str:
    ids = range(len(pb.edges)) if edge_ids is None else edge_ids
    ns = range(len(pb.text)) if nodes is None else nodes
    lines = [f"(declare-const t{n} Int)" for n in ns]
    # Z3 works through the asserted atoms last-first; emitting the late ops first keeps its
    # incremental Bellman-Ford from re-propagating long chains (measured 3-4x faster)
    atoms = _program_order(pb, None if nodes is None else list(nodes))
    for e in ids:
        a, b, c, _ = pb.edges[e]
        atom = diff_ge(f"t{b}", f"t{a}", c)
        if guarded:
            lines.append(f"(declare-const g{e} Bool)")
            atoms.append(f"(=> g{e} {atom})")
        else:
            atoms.append(atom)
    lines += [f"(assert {a})" for a in reversed(atoms)]
    return "\n".join(lines)


def _compact_text(pb: OrderProblem, active: set[int] | None = None) -> str:
    """The fast-path encoding, exact but smaller:

    * an edge between two nodes of one device becomes the ground atom ``rank_b - rank_a >= c``:
      the chain forces ``t_b - t_a >= rank_b - rank_a`` when b comes later and ``t_b = t_a``
      when they share a slot, so the edge holds in some solution iff that atom is true;
    * the chain keeps only the nodes that cross-device edges touch, consecutive ones linked by
      their rank difference (eliminating the other variables, which occur only in the chain).
    """
    touched: set[int] = set()
    ground = []
    cross = []
    for e, (a, b, c, _) in enumerate(pb.edges):
        if active is not None and e not in active:
            continue
        if a != b and pb.device[a] == pb.device[b] >= 0:
            ground.append(f"(assert (>= {num(pb.rank[b] - pb.rank[a])} {num(c)}))")
        else:
            touched.update((a, b))
            cross.append(diff_ge(f"t{b}", f"t{a}", c))
    nodes = sorted(touched)
    lines = [f"(declare-const t{n} Int)" for n in nodes]
    atoms = _program_order(pb, nodes) + cross
    # a ground atom many edges share (the same rank difference) is asserted once: same conjunction
    return "\n".join(lines + list(dict.fromkeys(ground)) + [f"(assert {a})" for a in reversed(atoms)])


def is_orderable(pb: OrderProblem, active: set[int] | None = None) -> bool:
    """Fast path: all constraints asserted (compact encoding), no tracking. True iff an
    execution exists.

    Example:
        >>> pb = OrderProblem()
        >>> a, b = pb.node("0B0", 0), pb.node("0F0", 0)
        >>> pb.edge(b, a, 1, "backward after its forward")
        >>> is_orderable(pb)
        False
    """
    s = idl_solver()
    load(s, _compact_text(pb, active), search_factor=IDL_SEARCH_FACTOR)
    return decide(s) == z3.sat


def _core_subproblem(pb: OrderProblem, core_edges: list[int], budget_s: float) -> list[int] | None:
    """Minimize a core on the sub-problem of its own nodes (program order between them kept as
    the rank-difference facts the full chains imply). A positive cycle found in the core is
    tried first: when Z3 confirms it infeasible, the deletion pass runs on it alone. None when
    Z3 finds the edges satisfiable."""

    def solve(edges: list[int]):
        nodes = sorted({x for e in edges for x in pb.edges[e][:2]})
        s = idl_solver()
        load(s, _text(pb, True, edges, nodes), search_factor=IDL_SEARCH_FACTOR)

        def check(assume):
            r = decide(s, *assume)
            return r, (list(s.unsat_core()) if r == z3.unsat else [])

        return check

    cand = positive_cycle(pb, core_edges) if len(core_edges) > 8 else None
    for edges in ([cand] if cand else []) + [core_edges]:
        check = solve(edges)
        res, core = check([z3.Bool(f"g{e}") for e in edges])
        if res != z3.unsat:
            continue  # (a candidate that Z3 does not confirm is dropped)
        kept = minimize_core(check, core, budget_s)
        names = {str(x) for x in kept}
        return [e for e in edges if f"g{e}" in names]
    return None


#: above this many edges the core search starts from a strongly connected component's cycle
GUARDED_LIMIT = 20_000


#: seconds the order check may take to find its violations' cores (more under a ``--time-limit``:
#: :func:`core_budget`); counted from its start, so the first decision spends it too
CORE_BUDGET_S = 30.0


def core_budget(budget_s: float = CORE_BUDGET_S) -> float:
    """Seconds for :func:`check_order`: ``budget_s``, or under a ``--time-limit`` half the seconds
    left of it when that is more (the other half for the step that runs past the budget, which
    is not stopped midway, and for the properties after the order check).

    Example:
        >>> from ppverify.core.time_limit import time_limit
        >>> core_budget()
        30.0
        >>> with time_limit(600, clock=lambda: 0.0):
        ...     core_budget()
        300.0
    """
    left = seconds_left()
    return budget_s if left is None else max(budget_s, left / 2)


def unminimized(semantics: str | None, budget_s: float) -> Violation:
    """The violation of an order problem Z3 found infeasible whose core was not found within the
    budget: no complete execution exists (a deadlock, or an op before its input through another
    rank), but which cycle of waits is not named.

    Example:
        >>> print(unminimized("rendezvous", 30).to_text())  # doctest: +NORMALIZE_WHITESPACE
        deadlock: no complete execution exists under rendezvous point-to-point semantics (Z3: unsat),
        but its cycle of waits is not named: the core was not minimized within the 30 s budget of the
        order check (a --time-limit T gives it half of what is left of T, e.g. --time-limit 600)
        [dependencies, program order and point-to-point semantics together]
    """
    under = f"{semantics} point-to-point semantics" if semantics else "these point-to-point semantics"
    return Violation(
        "deadlock",
        "dependencies, program order and point-to-point semantics together",
        f"no complete execution exists under {under} (Z3: unsat), but its cycle of waits is not named: "
        f"the core was not minimized within the {budget_s:g} s budget of the order check "
        "(a --time-limit T gives it half of what is left of T, e.g. --time-limit 600)",
    )


def check_order(
    pb: OrderProblem, max_violations: int = 20, budget_s: float | None = None, semantics: str | None = None
) -> tuple[list[Violation], bool]:
    """Decide dependencies, exclusivity and deadlock freedom; every violation with its core.

    Z3 decides feasibility (the fast path, again after each violation). When infeasible, the
    relevant sub-problem is one cycle of a strongly connected component; Z3 confirms it unsat and
    minimizes it; its actions' edges are set aside before the next check, until the rest is
    satisfiable (or ``max_violations``/``budget_s`` is reached: default :func:`core_budget`,
    counted from the start). Returns the violations and whether the search was complete (False:
    stopped at a limit with more violations possibly left). An infeasible problem always has a
    violation: one whose core was not found within the budget is :func:`unminimized` (it names
    ``semantics``, the point-to-point semantics of ``pb``).

    Example:
        >>> pb = OrderProblem()
        >>> f, w, i = pb.node("0F0", 0), pb.node("0W0", 0), pb.node("0I0", 0)
        >>> pb.edge(f, i, 1, "backward after its forward"); pb.edge(i, w, 1, "W after its own I")
        >>> [v.message for v in check_order(pb)[0]]
        ['device 0 runs 0W0 before 0I0, which it needs']
    """
    if isinstance(max_violations, bool) or not isinstance(max_violations, int) or max_violations < 1:
        # none to find would leave an infeasible problem without a violation: read as valid
        raise ParameterError("max-violations", max_violations, "must be >= 1 (order violations to find)")
    budget = core_budget() if budget_s is None else budget_s
    deadline = time.monotonic() + budget
    large = len(pb.edges) > GUARDED_LIMIT
    # the fast path decides first at every size (Z3 answers it in about 5x its parse, sat or
    # unsat: 0.5-1.9 s at 128,512 edges, where the component search alone takes 0.5 s);
    # to find the cores, large problems start from the candidate cycle of a strongly connected
    # component, which Z3 refutes alone (a refuted subset refutes the whole), small ones from
    # Z3's own core
    if is_orderable(pb):
        return [], True
    active = set(range(len(pb.edges)))
    out: list[Violation] = []
    # an edge between two actions of one device that program order contradicts is a core of its
    # own (a dependency violation); reported first, as such, at every size: the cycle search of
    # large problems may otherwise start from a deadlock through one of its actions and set the
    # edge aside unreported
    for e in _program_order_violations(pb):
        if len(out) >= max_violations:
            return out, False
        if e not in active:
            continue
        out.append(describe_cycle(pb, [e]))
        named = set(pb.edges[e][:2])
        active = {x for x in active if pb.edges[x][0] not in named and pb.edges[x][1] not in named}
    complete = False
    while len(out) < max_violations and time.monotonic() < deadline:
        left = max(1.0, deadline - time.monotonic())
        core = None
        if large:
            cand = scc_cycle(pb, active)
            if cand is None and is_orderable(pb, active):
                complete = True
                break
            core = _core_subproblem(pb, cand, left) if cand else None
        elif out and is_orderable(pb, active):
            complete = True
            break
        if not core:
            core = _guarded_core(pb, active)
            if core is None:
                complete = True
                break
            core = _core_subproblem(pb, core, left) or core
        out.append(describe_cycle(pb, core))
        # set aside every constraint on the core's actions: one fault is reported once, even
        # when it closes several cycles
        named = {x for e in core for x in pb.edges[e][:2]}
        active = {e for e in active if pb.edges[e][0] not in named and pb.edges[e][1] not in named}
    if not out:  # the budget spent before the first core (the first decision can take it all)
        out.append(unminimized(semantics, budget))
    return out, complete


def _program_order_violations(pb: OrderProblem) -> list[int]:
    """Edges ``a -> b`` (``t_b - t_a >= c``) between two actions of one device that program order
    alone refutes: the chain forces ``t_b - t_a <= rank_b - rank_a`` when b is not later than a
    (equality for a shared slot), so the edge fails iff ``rank_b <= rank_a`` and ``c > rank_b -
    rank_a``. By device, then the position of the action that runs too early.

    Example:
        >>> pb = OrderProblem()
        >>> b, f, f1 = pb.node("0B0", 0), pb.node("0F0", 0), pb.node("0F1", 0)
        >>> pb.edge(f, b, 1, "backward after its forward"); pb.edge(f, f1, 1, "program order")
        >>> _program_order_violations(pb)
        [0]
    """
    found = []
    for e, (a, b, c, _) in enumerate(pb.edges):
        if a != b and pb.device[a] == pb.device[b] >= 0 and pb.rank[b] <= pb.rank[a] and c > pb.rank[b] - pb.rank[a]:
            found.append(e)
    return sorted(found, key=lambda e: (pb.device[pb.edges[e][0]], pb.rank[pb.edges[e][1]], pb.rank[pb.edges[e][0]], e))


def _guarded_core(pb: OrderProblem, active: set[int]) -> list[int] | None:
    """Z3's unsat core of the whole problem with one indicator per active edge (slow on large
    problems: only a fallback)."""
    s = idl_solver()
    load(s, _text(pb, guarded=True), search_factor=IDL_SEARCH_FACTOR)
    r = decide(s, *[z3.Bool(f"g{e}") for e in sorted(active)])
    if r != z3.unsat:
        return None
    return [int(str(x)[1:]) for x in s.unsat_core()]
