"""Certificates: vectorised checks that settle a property when it holds, so Z3 runs only when
something fails (and then decides it and minimizes the core, exactly as before).

Each function returns a positive answer only with a checked witness, and ``None``/``False``
("not certified") otherwise; "not certified" never means "violated": the caller then runs the
Z3 path, which gives the verdict and the minimal core. So a verdict never depends on this module.

* structure (:func:`structure_holds`): the rules of :mod:`.structure` are ground facts about the
  op multiset; :func:`ppverify.core.dag.build_dag_arrays`'s vectorised completeness test decides them
  (range, placement, each required op once, never B mixed with I/W) with numpy;
* order (:func:`derived_order_witness`, :func:`order_witness`): the order problem is a set of
  difference constraints ``t_b - t_a >= c`` with ``c`` in {0, 1}. A topological pass over the
  graph of slots (ops fused into one overlapped slot contracted) gives logical times; every
  constraint is then checked on them with numpy. A checked solution proves satisfiability (an
  execution exists); a cycle means "ask Z3";
* memory (:func:`memory_levels`): the level at the start of each allocating slot is a prefix sum
  of the same scaled integers :mod:`.memory` gives Z3 (its equations have this unique solution);
  all levels <= cap proves the property, with the same peaks Z3's model gives.

Cost: numpy over :class:`ppverify.core.dag.DagArrays`, plus one Python loop over slots and edges for
the topological pass (about 1 us per edge).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..core.costs import CostModel, scaled_memory_deltas
from ..core.dag import DagArrays, arrays_complete, build_dag_arrays
from ..core.errors import PPVerifyError
from ..core.ops import KIND_CODE, B, F, I, W
from ..core.schedule import Schedule
from .order_problem import OrderProblem
from .smt import exact_fraction

#: int64 prefix sums stay exact while |amount| * ops stays below this
_EXACT_LIMIT = 2**62


def structure_holds(schedule: Schedule) -> DagArrays | None:
    """The schedule's DAG arrays when every structural rule holds (then the ops are exactly one
    step's, each on its device, and ``3 * ops`` ground rules hold); ``None`` when some rule may
    fail (the Z3 path decides and names it).

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=2)
        >>> structure_holds(s).num_ops
        8
        >>> structure_holds(s.with_programs((s.programs[0][:-1], s.programs[1]))) is None
        True
    """
    try:
        a = build_dag_arrays(schedule, check=False)
    except (PPVerifyError, KeyError, TypeError, ValueError, IndexError):  # unknown kinds etc.: Z3 path
        return None
    if not arrays_complete(a):
        return None
    return a


def _slots(a: DagArrays) -> tuple[np.ndarray, np.ndarray]:
    """``(slot of each op, True where an op starts a new slot)``; slots numbered globally."""
    n = a.num_ops
    new = np.ones(n, dtype=bool)
    if n > 1:
        new[1:] = ~(a.fused[:-1] & (a.device[1:] == a.device[:-1]))
    return np.cumsum(new) - 1, new


def _topological_times(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
    """Position of each node in a topological order of the graph (``src[k] -> dst[k]``), or
    ``None`` when it has a cycle. Every edge then has ``t[dst] - t[src] >= 1``."""
    order = np.argsort(src, kind="stable")
    targets = dst[order].tolist()
    start = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    indeg = np.bincount(dst, minlength=n).tolist()
    t = [0] * n
    stack = [v for v in range(n) if indeg[v] == 0]
    pop, push = stack.pop, stack.append
    k = 0
    while stack:
        u = pop()
        t[u] = k
        k += 1
        for j in range(start[u], start[u + 1]):
            v = targets[j]
            indeg[v] -= 1
            if not indeg[v]:
                push(v)
    return np.asarray(t, dtype=np.int64) if k == n else None


def derived_order_witness(a: DagArrays) -> np.ndarray | None:
    """Logical times of the ops satisfying every constraint of the buffered, derived-SEND/RECV
    order problem (:func:`.comm_model.build_problem`: program order, fused slots at one time,
    ``t_i - t_q >= 1`` per DAG edge), checked; ``None`` when none was found (Z3 decides).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag_arrays
        >>> s = build("gpipe", p=2, m=1)
        >>> derived_order_witness(build_dag_arrays(s)).tolist()
        [0, 3, 1, 2]
        >>> derived_order_witness(build_dag_arrays(s.with_programs((s.programs[0][::-1], s.programs[1])))) is None
        True
    """
    n = a.num_ops
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    slot, new = _slots(a)
    ns = int(slot[-1]) + 1
    chain = np.flatnonzero(new[1:] & (a.device[1:] == a.device[:-1])) + 1  # op starting a slot after another
    src, dst = [slot[chain - 1]], [slot[chain]]
    for j in (0, 1):
        i = np.flatnonzero(a.pred[:, j] >= 0)
        src.append(slot[a.pred[i, j]])
        dst.append(slot[i])
    s_all, d_all = np.concatenate(src), np.concatenate(dst)
    if (s_all == d_all).any():  # an op needs an op of its own slot: no witness
        return None
    ts = _topological_times(ns, s_all, d_all)
    if ts is None:
        return None
    t = ts[slot]
    # the check (independent of how t was found)
    same_dev = a.device[1:] == a.device[:-1]
    step = t[1:] - t[:-1]
    if (same_dev & new[1:] & (step < 1)).any() or (same_dev & ~new[1:] & (step != 0)).any():
        return None
    for j in (0, 1):
        i = np.flatnonzero(a.pred[:, j] >= 0)
        if (t[i] - t[a.pred[i, j]] < 1).any():
            return None
    return t


def order_witness(pb: OrderProblem) -> np.ndarray | None:
    """Logical times satisfying every constraint of an order problem (any semantics), checked;
    ``None`` when none was found (Z3 decides).

    Example:
        >>> pb = OrderProblem()
        >>> a, b = pb.node("0F0", 0), pb.node("0B0", 0)
        >>> pb.edge(a, b, 1, "backward after its forward")
        >>> order_witness(pb).tolist()
        [0, 1]
        >>> pb.edge(b, a, 1, "made up")
        >>> order_witness(pb) is None
        True
    """
    n = len(pb.text)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    dev = np.asarray(pb.device, dtype=np.int64)
    rank = np.asarray(pb.rank, dtype=np.int64)
    # one group per (device, rank) (a fused slot, or a comm group's post/done); free nodes alone
    on = dev >= 0
    key = np.where(on, dev * (int(rank.max()) + 2) + rank, -1 - np.arange(n))
    _, group = np.unique(key, return_inverse=True)
    group = group.ravel()
    ng = int(group.max()) + 1
    by_chain = np.flatnonzero(on)
    by_chain = by_chain[np.lexsort((rank[by_chain], dev[by_chain]))]
    cons = dev[by_chain[1:]] == dev[by_chain[:-1]]
    ca, cb = by_chain[:-1][cons], by_chain[1:][cons]
    cw = rank[cb] - rank[ca]
    if pb.edges:
        e = np.asarray([x[:3] for x in pb.edges], dtype=np.int64)
    else:
        e = np.zeros((0, 3), dtype=np.int64)
    ea, eb, ec = e[:, 0], e[:, 1], e[:, 2]
    if ((group[ea] == group[eb]) & (ec > 0)).any():
        return None
    strict = group[ea] != group[eb]
    gs = np.concatenate([group[ca][cw > 0], group[ea][strict]])
    gd = np.concatenate([group[cb][cw > 0], group[eb][strict]])
    tg = _topological_times(ng, gs, gd)
    if tg is None:
        return None
    t = tg[group]
    if (t[cb] - t[ca] < cw).any() or ((cw == 0) & (t[cb] != t[ca])).any() or (t[eb] - t[ea] < ec).any():
        return None
    return t


def _frac(x: float) -> Fraction:
    return exact_fraction(x)  # never rounded to another number (1e-7 is not 0)


def memory_levels(
    a: DagArrays, costs: CostModel, cap: float, max_peak_read: int
) -> tuple[bool, list[float] | None] | None:
    """``(True, peaks)`` when memory stays <= cap on every device at every instant, with each
    device's peak (``None`` above ``max_peak_read`` allocating slots, as :mod:`.memory` does);
    ``None`` when not certified (exceeded, or amounts too large for exact int64 sums).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag_arrays
        >>> s = build("1f1b", p=4, m=8)
        >>> memory_levels(build_dag_arrays(s), CostModel.unit(s.placement), 4, 5000)
        (True, [4.0, 3.0, 2.0, 1.0])
        >>> memory_levels(build_dag_arrays(s), CostModel.unit(s.placement), 3, 5000) is None
        True
    """
    n, S = a.num_ops, costs.num_stages
    p = len(a.offsets) - 1
    if n == 0:
        return True, ([0.0] * p if max_peak_read >= 0 else None)
    # (allocated, freed) per (kind, stage), exact: I and W free exactly what F allocated
    kinds = {KIND_CODE[k]: k for k in (F, B, I, W)}
    code = a.kind * S + a.stage
    present = np.unique(code).tolist()
    cap_f = _frac(cap)
    scale, by_key = scaled_memory_deltas(costs, [(kinds[c // S], c % S) for c in present], [cap_f])
    as_int = {c: by_key[(kinds[c // S], c % S)] for c in present}
    big = max([abs(x) for pair in as_int.values() for x in pair] + [abs(math.floor(cap_f * scale))])
    if big * (n + 1) >= _EXACT_LIMIT:
        return None
    alloc_t = np.zeros(4 * S, dtype=np.int64)
    freed_t = np.zeros(4 * S, dtype=np.int64)
    for c in present:
        alloc_t[c], freed_t[c] = as_int[c]
    cap_i = math.floor(cap_f * scale)
    _slot, new = _slots(a)
    starts = np.flatnonzero(new)
    alloc = np.add.reduceat(alloc_t[code], starts)
    freed = np.add.reduceat(freed_t[code], starts)
    sdev = a.device[starts]
    # level at the start of slot k: allocations of slots <= k minus frees of slots < k (per device)
    ca, cf = np.cumsum(alloc), np.cumsum(freed)
    first = np.searchsorted(sdev, sdev, side="left")  # first slot of each slot's device
    base_a = np.where(first > 0, ca[first - 1], 0)
    base_f = np.where(first > 0, cf[first - 1], 0)
    level = (ca - base_a) - (cf - freed - base_f)
    check = alloc != 0
    if (level[check] > cap_i).any():
        return None
    if int(check.sum()) > max_peak_read:
        return True, None
    peaks = [0.0] * p
    for d, lv in zip(sdev[check].tolist(), level[check].tolist()):
        peaks[d] = max(peaks[d], lv / scale)
    return True, peaks


def num_edges(a: DagArrays) -> int:
    """Number of dependency edges of the step's DAG.

    Example:
        >>> from ppverify.schedules import build
        >>> num_edges(build_dag_arrays(build("gpipe", p=2, m=1)))
        4
    """
    return int((a.pred >= 0).sum())


def has_split(a: DagArrays) -> bool:
    """True when any backward is split into I and W.

    Example:
        >>> from ppverify.schedules import build
        >>> has_split(build_dag_arrays(build("1f1b-split", p=2, m=1))), has_split(build_dag_arrays(build("gpipe", p=2, m=1)))
        (True, False)
    """
    return bool(((a.kind == KIND_CODE[I]) | (a.kind == KIND_CODE[W])).any())


__all__ = ["derived_order_witness", "has_split", "memory_levels", "num_edges", "order_witness", "structure_holds"]
