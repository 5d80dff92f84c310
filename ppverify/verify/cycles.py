"""Cycles in the order problem's constraint graph: finding the relevant sub-problem of an
infeasible one, and putting a minimal infeasible set into words (a dependency violation on one
device, or a deadlock's cycle of waits across devices).

The graph: a node per action, an edge ``a -> b`` of weight c per constraint ``t_b - t_a >= c``,
and program order between consecutive actions of a device (weight = their rank difference, both
ways for actions of one slot). All weights are >= 0, so the constraints are infeasible iff some
cycle goes through a positive step; any such cycle is a candidate core that Z3 then refutes.
"""

from __future__ import annotations

from collections import deque

from .order_problem import OrderProblem
from .report import Violation


def positive_cycle(pb: OrderProblem, edge_ids: list[int], max_tries: int = 200) -> list[int] | None:
    """A candidate minimal core: the guarded edges of one directed cycle, through at least one
    strictly positive step, in the graph of ``edge_ids`` plus program order between their nodes.
    Such a cycle sums to a positive bound ``t_x - t_x >= c > 0``: infeasible. Z3 still decides
    it (and its minimality); this only saves deletion steps on large cores.

    Example:
        Rank 0 runs 0B0 then 0F1, rank 1 runs 1F1 then 1B0: each waits for the other.

        >>> pb = OrderProblem()
        >>> s0_b0, s0_f1 = pb.node("0B0", 0), pb.node("0F1", 0)
        >>> s1_f1, s1_b0 = pb.node("1F1", 1), pb.node("1B0", 1)
        >>> pb.edge(s0_f1, s1_f1, 1, "forward after the previous stage's forward")
        >>> pb.edge(s1_b0, s0_b0, 1, "backward after the next stage's backward")
        >>> positive_cycle(pb, [0, 1]), positive_cycle(pb, [0])
        ([1, 0], None)
    """
    nodes = sorted({x for e in edge_ids for x in pb.edges[e][:2]})
    succ: dict[int, list[tuple[int, int, int]]] = {n: [] for n in nodes}  # (next, weight, edge id or -1)
    for e in edge_ids:
        a, b, c, _ = pb.edges[e]
        succ[a].append((b, c, e))
    by_dev: dict[int, list[int]] = {}
    for n in nodes:
        if pb.device[n] >= 0:
            by_dev.setdefault(pb.device[n], []).append(n)
    for chain in by_dev.values():
        chain.sort(key=lambda n: pb.rank[n])
        for a, b in zip(chain, chain[1:]):
            w = pb.rank[b] - pb.rank[a]
            succ[a].append((b, w, -1))
            if w == 0:
                succ[b].append((a, 0, -1))
    positive = [(a, b, e) for a in nodes for b, w, e in succ[a] if w > 0]
    for a, b, e in positive[:max_tries]:
        prev: dict[int, tuple[int, int]] = {b: (-1, -1)}
        queue = deque([b])
        while queue and a not in prev:
            u = queue.popleft()
            for v, _, eid in succ[u]:
                if v not in prev:
                    prev[v] = (u, eid)
                    queue.append(v)
        if a in prev:
            used = [e] if e >= 0 else []
            v = a
            while v != b:
                u, eid = prev[v]
                if eid >= 0:
                    used.append(eid)
                v = u
            return used
    return None


def scc_cycle(pb: OrderProblem, active: set[int]) -> list[int] | None:
    """Guarded edges of one cycle through a positive step (Tarjan's strongly connected
    components over active edges + program order, then a breadth-first search inside one).

    Example:
        Rank 0 runs 0B0 then 0F1, rank 1 runs 1F1 then 1B0: each waits for the other.

        >>> pb = OrderProblem()
        >>> s0_b0, s0_f1 = pb.node("0B0", 0), pb.node("0F1", 0)
        >>> s1_f1, s1_b0 = pb.node("1F1", 1), pb.node("1B0", 1)
        >>> pb.edge(s0_f1, s1_f1, 1, "forward after the previous stage's forward")
        >>> pb.edge(s1_b0, s0_b0, 1, "backward after the next stage's backward")
        >>> scc_cycle(pb, {0, 1}), scc_cycle(pb, {1})
        ([1, 0], None)
    """
    n = len(pb.text)
    succ: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    for e in active:
        a, b, c, _ = pb.edges[e]
        succ[a].append((b, c, e))
    for chain in pb.chains().values():
        for a, b in zip(chain, chain[1:]):
            w = pb.rank[b] - pb.rank[a]
            succ[a].append((b, w, -1))
            if w == 0:
                succ[b].append((a, 0, -1))
    index = [-1] * n
    low = [0] * n
    comp = [-1] * n
    on_stack = [False] * n
    stack: list[int] = []
    counter = ncomp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, k = work[-1]
            if k < len(succ[v]):
                work[-1] = (v, k + 1)
                w = succ[v][k][0]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
    # shortest cycles through a few positive steps; keep the one with the fewest guarded edges
    size: dict[int, int] = {}
    for c in comp:
        size[c] = size.get(c, 0) + 1
    best: list[int] | None = None
    tries = 0
    for a in range(n):
        for b, w, e in succ[a]:
            if w <= 0 or comp[a] != comp[b]:
                continue
            tries += 1
            prev: dict[int, tuple[int, int]] = {b: (-1, -1)}
            queue = deque([b])
            while queue and a not in prev:
                u = queue.popleft()
                for v, _, eid in succ[u]:
                    if v not in prev and comp[v] == comp[a]:
                        prev[v] = (u, eid)
                        queue.append(v)
            used = [e] if e >= 0 else []
            v = a
            while v != b:
                u, eid = prev[v]
                if eid >= 0:
                    used.append(eid)
                v = u
            if best is None or len(used) < len(best):
                best = used
            if tries >= max(1, min(50, 2_000_000 // size[comp[a]])) or len(best) <= 2:
                return best
    return best


def describe_cycle(pb: OrderProblem, core: list[int]) -> Violation:
    """Words for a minimal infeasible set of edges: an op before its input on one device, or
    the cycle of waits of a deadlock across devices.

    Example:
        >>> pb = OrderProblem()
        >>> b, f = pb.node("0B0", 0), pb.node("0F0", 0)
        >>> pb.edge(f, b, 1, "backward after its forward")
        >>> print(describe_cycle(pb, [0]).to_text())
        dependencies: device 0 runs 0B0 before 0F0, which it needs [backward after its forward; core: 0B0 0F0]
    """
    nodes = sorted(
        {x for e in core for x in pb.edges[e][:2] if pb.device[x] >= 0}, key=lambda n: (pb.device[n], pb.rank[n], n)
    )
    ops = tuple(dict.fromkeys(pb.text[n] for n in nodes))  # a group's post and completion share a text
    devices = {pb.device[n] for n in nodes}
    rules = sorted({pb.edges[e][3] for e in core})
    loops = [e for e in core if pb.edges[e][0] == pb.edges[e][1]]
    if loops:
        a, _, _, rule = pb.edges[loops[0]]
        if loops[0] in pb.notes:  # a fault its builder put into words (:meth:`OrderProblem.fault`)
            prop, message = pb.notes[loops[0]]
            return Violation(prop, rule, message, ops)
        if rule.startswith("SEND matches no transfer"):
            return Violation("completeness", rule, f"{pb.text[a]} on rank {pb.device[a]}: {rule}", ops)
        return Violation("deadlock", rule, f"rank {pb.device[a]} waits forever in {pb.text[a]}: {rule}", ops)
    if len(devices) == 1:
        d = devices.pop()
        parts = []
        for e in core:
            a, b, _, _ = pb.edges[e]
            if pb.rank[b] <= pb.rank[a]:
                parts.append(f"{pb.text[b]} before {pb.text[a]}, which it needs")
        msg = f"device {d} runs " + "; ".join(parts or [f"{ops[0]} before its input"])
        return Violation("dependencies", "; ".join(rules), msg, ops)
    return Violation("deadlock", "; ".join(rules), wait_cycle(pb, core), ops)


def _find_cycle(pb: OrderProblem, core: list[int]) -> list[int]:
    """A directed cycle through the core's edges and the program order between core nodes."""
    nodes = sorted({x for e in core for x in pb.edges[e][:2]})
    succ: dict[int, list[int]] = {n: [] for n in nodes}
    for e in core:
        a, b, _, _ = pb.edges[e]
        succ[a].append(b)
    for a in nodes:
        for b in nodes:
            if a != b and pb.device[a] == pb.device[b] >= 0 and pb.rank[a] <= pb.rank[b]:
                succ[a].append(b)
    color: dict[int, int] = {}
    stack: list[int] = []

    def dfs(u: int) -> list[int] | None:
        color[u] = 1
        stack.append(u)
        for v in succ[u]:
            if color.get(v) == 1:
                return stack[stack.index(v) :]
            if v not in color:
                found = dfs(v)
                if found:
                    return found
        stack.pop()
        color[u] = 2
        return None

    for n in nodes:
        if n not in color:
            cyc = dfs(n)
            if cyc:
                return cyc
    return nodes


def wait_cycle(pb: OrderProblem, core: list[int]) -> str:
    """ "rank 1 waits in 1RECV_B0 for rank 2, which waits in 2SEND_F1 for rank 1" for a core.

    The cycle is cut into runs of consecutive nodes on one device (transfer events belong to
    none); a device waits at the first node of its run, for the device of the run before.

    Example:
        Rank 0 runs 0B0 then 0F1, rank 1 runs 1F1 then 1B0: each waits for the other.

        >>> pb = OrderProblem()
        >>> s0_b0, s0_f1 = pb.node("0B0", 0), pb.node("0F1", 0)
        >>> s1_f1, s1_b0 = pb.node("1F1", 1), pb.node("1B0", 1)
        >>> pb.edge(s0_f1, s1_f1, 1, "forward after the previous stage's forward")
        >>> pb.edge(s1_b0, s0_b0, 1, "backward after the next stage's backward")
        >>> wait_cycle(pb, [0, 1])
        'rank 1 waits in 1F1 for rank 0, which waits in 0B0 for rank 1'
    """
    cyc = [n for n in _find_cycle(pb, core) if pb.device[n] >= 0]
    runs: list[tuple[int, int]] = []  # (device, entry node)
    for n in cyc:
        if not runs or runs[-1][0] != pb.device[n]:
            runs.append((pb.device[n], n))
    if len(runs) > 1 and runs[0][0] == runs[-1][0]:
        runs[0] = runs.pop()
    if len(runs) < 2:
        return "cycle of waits within one device"
    k = len(runs) - 1
    d, n = runs[k]
    text = f"rank {d} waits in {pb.text[n]} for rank {runs[k - 1][0]}"
    for j in range(k - 1, -1, -1):
        d, n = runs[j]
        text += f", which waits in {pb.text[n]} for rank {runs[j - 1][0]}"
    return text
