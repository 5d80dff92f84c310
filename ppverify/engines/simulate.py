"""The ``async`` engine: event-driven execution with communication, no contention.

Each device runs its program in order; an op starts once its device is free and its inputs have
arrived; a transfer between devices starts when its producer ends (sends run on a communication
stream, overlapping compute) and takes the communication model's ``transfer_time`` (latency +
bytes / bandwidth for a :class:`~ppverify.systems.system.System`). Timing is the shared program-order
rule of :mod:`ppverify.engines.core` with these transfer times as edge delays, so with zero
communication it reproduces the ``slot`` table exactly.

Beyond point-to-point transfers:

* stage replicas (Chimera: a stage held by two devices, one per pipe) all-reduce their weight
  gradients (ring all-reduce, ``ppverify.systems.system.allreduce_time``). ``sync="eager"`` starts a stage's
  all-reduce as soon as the last backward of that stage has ended on every replica (overlapping
  the drain bubbles); ``"after-flush"`` once the replica devices have finished all their compute;
  ``"none"`` leaves it out.
* ``dp_allreduce=N`` (N >= 2) ends the step with a data-parallel all-reduce of each device's
  gradients among N replicas of the whole pipeline, after its compute and replica syncs.

Gradient bytes are ``weight_bytes * costs.extra["grad_fraction"]`` (set by LLM presets; 0 bytes
for abstract costs, so an abstract all-reduce costs latency only). Every transfer and collective is
recorded in ``Timeline.transfers``; ``Timeline.info.exposed_comm`` holds the exposed communication per device
and the device memory capacity (:func:`memory_report` checks it).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.comm import NO_COMM, CommModel, transfer_time
from ..core.compiled import use_compiled
from ..core.costs import CostModel
from ..core.dag import DagArrays, build_dag_arrays
from ..core.errors import DeadlockError, ParameterError
from ..core.ops import KINDS
from ..core.schedule import Schedule
from ..core.send_gates import gated_pred
from ..core.timeline import Timeline, TimelineInfo, Transfers
from ..systems.replica_sync import DP_ALLREDUCE, Collective, collectives, device_ends
from .core import _waits, list_schedule_flat

ACTIVATION, GRADIENT = "activation", "gradient"


@dataclass(frozen=True, eq=False)
class Prepared:
    """What both communication engines need: the DAG arrays, op durations, and per cross-device
    edge its producer, consumer, bytes and (uncontended) transfer time.

    Edges are listed as ``(consumer position i, slot k)`` with ``dag.pred[i, k]`` the producer.
    """

    dag: DagArrays
    duration: np.ndarray
    edge_i: np.ndarray
    edge_k: np.ndarray
    edge_q: np.ndarray
    edge_bytes: np.ndarray
    edge_time: np.ndarray
    #: the predecessors timing uses: ``dag.pred``, but where a file's SEND is posted after a later
    #: op than its producer, that op (:mod:`ppverify.core.send_gates`); None: ``dag.pred``
    timing_pred: np.ndarray | None = None

    @property
    def pred(self) -> np.ndarray:
        """The predecessors timing uses (see ``timing_pred``)."""
        return self.dag.pred if self.timing_pred is None else self.timing_pred

    @property
    def edge_start_op(self) -> np.ndarray:
        """Per cross-device edge, the op whose end starts the transfer: its producer, or the op
        its SEND is posted after."""
        return self.edge_q if self.timing_pred is None else self.timing_pred[self.edge_i, self.edge_k]


def op_durations(dag: DagArrays, costs: CostModel) -> np.ndarray:
    """Duration of every op position; the ops of an overlapped slot all carry the slot's length
    ``overlap * (sum of its ops)``, as in the ``slot`` engine.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> op_durations(build_dag_arrays(s), CostModel.abstract(s.placement, F=1, B=2)).tolist()
        [1.0, 2.0, 1.0, 2.0]
        >>> d = build("dualpipe", p=2, m=4)   # (1F3;0B0) on device 0: 0.5 x (1 + 2); the rest as costed
        >>> sorted(set(op_durations(build_dag_arrays(d), CostModel.abstract(d.placement, F=1, B=2, overlap=0.5)).tolist()))
        [1.0, 1.5, 2.0]
    """
    S = dag.schedule.num_stages
    if costs.num_stages != S:
        raise ParameterError(
            "costs", costs.label or "cost model", f"describes {costs.num_stages} stages but the schedule has {S}"
        )
    table = np.array([costs.duration[k] for k in KINDS], dtype=float).reshape(len(KINDS), S)
    dur = table[dag.kind, dag.stage]
    if dag.fused.any():
        # chains of fused ops: op i+1 shares op i's slot while fused[i]
        starts = np.flatnonzero(~np.concatenate(([False], dag.fused[:-1])))
        lengths = np.diff(np.append(starts, len(dur)))
        sums = np.add.reduceat(dur, starts) if len(dur) else dur
        # only an overlapped slot (a chain of two or more ops) is scaled: an op alone lasts its cost
        sums = np.where(lengths > 1, sums * costs.overlap, sums)
        dur = np.repeat(sums, lengths)
    return dur


def _edge_times(
    comm: CommModel, src: np.ndarray, dst: np.ndarray, boundary: np.ndarray, bb: np.ndarray, p: int
) -> tuple[np.ndarray, np.ndarray]:
    """Bytes and ``comm.transfer_time`` of every edge (``boundary`` indexes ``bb``), the time
    computed once per distinct (src, dst, bytes) and looked up for the rest."""
    nbytes = bb[boundary] if len(bb) else np.zeros(len(src))
    if not len(src):
        return nbytes, np.zeros(0)
    # boundaries of the same size take the same time: one call per distinct size, not per boundary
    sizes, size_of = np.unique(bb, return_inverse=True) if len(bb) else (np.zeros(1), np.zeros(1, np.int64))
    nb = len(sizes)
    key = (src * p + dst) * nb + size_of.reshape(-1)[boundary]
    inv: np.ndarray | None = None
    if p * p * nb <= 4 * len(key) + 4096:
        # keys from a small range: mark them in a dense table (np.unique sorts all of them)
        seen = np.zeros(p * p * nb, dtype=bool)
        seen[key] = True
        uniq = np.flatnonzero(seen)
    else:
        uniq, inv = np.unique(key, return_inverse=True)
    # each time checked (finite, >= 0) by the one rule every engine, verify and optimize share
    times = np.array(
        [transfer_time(comm, int(k // nb // p), int(k // nb % p), float(sizes[k % nb])) for k in uniq.tolist()],
        dtype=float,
    )
    if inv is None:
        table = np.zeros(p * p * nb)
        table[uniq] = times
        return nbytes, table[key]
    return nbytes, times[inv.reshape(-1)]


def compiled_links(
    kc: np.ndarray, st: np.ndarray, mbs: np.ndarray, dev: np.ndarray, S: int, m: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The DAG's predecessors by the compiled kernel for steps above the compiled threshold
    (``None`` below it: :func:`~ppverify.core.dag.build_dag_arrays` applies its numpy rules).

    Example:
        >>> compiled_links(np.zeros(2, np.int64), np.arange(2), np.zeros(2, np.int64), np.arange(2), 2, 1) is None
        True
    """
    if not use_compiled(len(kc)):
        return None
    from .kernels import dag_links

    return dag_links(kc, st, mbs, dev, S, m)


def prepare(schedule: Schedule, costs: CostModel, comm: CommModel) -> Prepared:
    """Build the DAG, durations and cross-device edges of a schedule under a cost and comm model.

    A boundary's bytes are ``costs.boundary_bytes[min(stage of producer, stage of consumer)]``
    (forward activation of stage s -> s+1 and the gradient back have the same size).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("gpipe", p=2, m=1)
        >>> pr = prepare(s, CostModel.abstract(s.placement), FixedDelay(0.5))
        >>> pr.edge_i.tolist(), pr.edge_q.tolist(), pr.edge_time.tolist()
        ([1, 2], [3, 0], [0.5, 0.5])
    """
    dag = build_dag_arrays(schedule, links=compiled_links)
    dur = op_durations(dag, costs)
    ii, kk = np.nonzero(dag.cross)
    qq = dag.pred[ii, kk]
    bb = np.asarray(costs.boundary_bytes, dtype=float)
    lo = np.minimum(dag.stage[ii], dag.stage[qq])
    nbytes, times = _edge_times(
        comm, dag.device[qq], dag.device[ii], np.minimum(lo, max(len(bb) - 1, 0)), bb, schedule.p
    )
    gated = gated_pred(dag)
    return Prepared(dag, dur, ii, kk, qq, nbytes, times, None if gated is None else np.asarray(gated, dtype=np.int64))


def exposed_comm(dag: DagArrays, start: np.ndarray, end: np.ndarray, p: int) -> np.ndarray:
    """Per device, the time it waits for transfers still in flight: for each op, how much later
    it starts than it could if every input arrived the moment its producer ended.

    Example:
        >>> from ppverify.schedules import build
        >>> a = build_dag_arrays(build("gpipe", p=2, m=1))
        >>> exposed_comm(a, np.array([0, 5, 1.5, 2.5]), np.array([1, 6, 2.5, 4.5]), 2).tolist()
        [0.5, 0.5]
    """
    n = dag.num_ops
    out = np.zeros(p)
    if not n:
        return out
    if use_compiled(n):  # one compiled pass, the same sums (tests/engines/test_kernels.py)
        from .kernels import exposed_waits

        out += exposed_waits(dag.pred, start, end, dag.offsets)
        return out
    prev_end = np.concatenate(([0.0], end[:-1]))
    first = np.zeros(n, dtype=bool)
    first[np.asarray(dag.offsets[:-1])[np.diff(dag.offsets) > 0]] = True
    prev_end[first] = 0.0
    ready = prev_end.copy()
    for k in (0, 1):
        q = dag.pred[:, k]
        has = q >= 0
        ready[has] = np.maximum(ready[has], end[q[has]])
    wait = np.clip(start - ready, 0.0, None)
    # bincount adds in position order, as np.add.at does (same sums), and is much faster
    out += np.bincount(dag.device, weights=wait, minlength=p)[:p]
    return out


def finish(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel,
    prep: Prepared,
    semantics: str,
    start: np.ndarray,
    end: np.ndarray,
    transfers: Transfers,
    tails: np.ndarray,
    info: TimelineInfo,
) -> Timeline:
    """Assemble the :class:`Timeline`: ops, transfers, exposed communication (op waits plus each
    device's collective tail after its last op) and the memory capacity of a system.

    Example:
        Ops 0F0, 0B0, 1F0, 1B0 (F=1, B=2), each transfer 0.5: device 1 waits 0.5 for 0F0's output,
        device 0 waits 0.5 for 1B0's; device 1 also has a collective tail of 0.25.

        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("gpipe", p=2, m=1)
        >>> costs, comm = CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5)
        >>> start, end = np.array([0, 5, 1.5, 2.5]), np.array([1, 7, 2.5, 4.5])
        >>> tl = finish(s, costs, comm, prepare(s, costs, comm), "async", start, end, Transfers(), np.array([0, 0.25]), TimelineInfo())
        >>> tl.makespan, tl.info.exposed_comm
        (7.0, [0.5, 0.75])
    """
    dag = prep.dag
    exposed = exposed_comm(dag, start, end, schedule.p) + tails
    capacity = getattr(comm, "memory_bytes", None)
    info = replace(
        info,
        exposed_comm=exposed.tolist(),
        memory_capacity=capacity,
        system=getattr(comm, "name", None) if capacity is not None else None,
    )
    return Timeline(schedule, costs, semantics, dag.ops, dag.device, start, end, transfers, info)


def _record_p2p(prep: Prepared, start_t: np.ndarray, end_t: np.ndarray) -> Transfers:
    dag = prep.dag
    # kept as arrays: a list of a million transfers is made only if someone reads it as one
    return Transfers.from_arrays(
        (ACTIVATION, GRADIENT),
        prep.edge_k,
        dag.device[prep.edge_q],
        dag.device[prep.edge_i],
        prep.edge_q,
        prep.edge_i,
        start_t,
        end_t,
        prep.edge_bytes,
    )


def simulate_async(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel = NO_COMM,
    sync: str = "eager",
    dp_allreduce: int = 0,
    **options: Any,
) -> Timeline:
    """Simulate one step with communication and no contention (see module doc).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("gpipe", p=4, m=4)
        >>> tl = simulate_async(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5))
        >>> tl.makespan, len(tl.transfers), tl.info.exposed_comm
        (24.0, 24, [0.5, 1.0, 1.0, 0.5])
    """
    if options:
        raise ParameterError(
            "option", ", ".join(options), "unknown option of the async engine (known: sync, dp_allreduce)"
        )
    prep = prepare(schedule, costs, comm)
    dag = prep.dag
    n = dag.num_ops
    d = np.zeros((n, 2))
    d[prep.edge_i, prep.edge_k] = prep.edge_time
    start_l: np.ndarray | list[float]
    end_l: np.ndarray | list[float]
    if use_compiled(n):  # numba kernel, same results (tests/engines/test_kernels.py)
        from .kernels import list_schedule_arrays

        start_l, end_l, ptr, done = list_schedule_arrays(
            prep.pred, d, prep.duration, dag.fused, dag.idle_before, dag.offsets
        )
    else:
        start_l, end_l, ptr, done = list_schedule_flat(
            prep.pred[:, 0].tolist(),
            prep.pred[:, 1].tolist(),
            d[:, 0].tolist(),
            d[:, 1].tolist(),
            prep.duration.tolist(),
            dag.fused.tolist(),
            dag.idle_before.tolist(),
            dag.offsets,
        )
    if ptr is not None:
        raise DeadlockError(_waits(dag, ptr, done, prep.pred))
    start, end = np.asarray(start_l, dtype=float), np.asarray(end_l, dtype=float)
    t0 = end[prep.edge_start_op]  # the producer's end, or a late SEND's post
    transfers = _record_p2p(prep, t0, t0 + prep.edge_time)
    tails = run_collectives_uncontended(schedule, costs, comm, dag, end, sync, dp_allreduce, transfers)
    return finish(
        schedule,
        costs,
        comm,
        prep,
        "async",
        start,
        end,
        transfers,
        tails,
        TimelineInfo(sync=sync, dp_allreduce=dp_allreduce),
    )


def run_collectives_uncontended(
    schedule: Schedule,
    costs: CostModel,
    comm: CommModel,
    dag: DagArrays,
    end: np.ndarray,
    sync: str,
    dp_allreduce: int,
    transfers: Transfers,
) -> np.ndarray:
    """Time the collectives with no contention, record them, and return each device's tail:
    how long its last collective runs past its last op.

    Example:
        Chimera holds each stage on both devices; with every op ending at 1, the two replica
        all-reduces (2 each under a fixed delay of 1) run side by side from 1 to 3.

        >>> from ppverify.schedules import build
        >>> from ppverify.core.comm import FixedDelay
        >>> s = build("chimera", p=2, m=2)
        >>> dag, tr = build_dag_arrays(s), Transfers()
        >>> end = np.ones(dag.num_ops)
        >>> run_collectives_uncontended(s, CostModel.abstract(s.placement), FixedDelay(1), dag, end, "eager", 0, tr).tolist()
        [2.0, 2.0]
        >>> tr.kind, tr.end
        (['allreduce', 'allreduce', 'allreduce', 'allreduce'], [3.0, 3.0, 3.0, 3.0])

        With ``dp_allreduce=2``, each device's data-parallel all-reduce (2 more) follows its syncs:

        >>> run_collectives_uncontended(s, CostModel.abstract(s.placement), FixedDelay(1), dag, end, "eager", 2, Transfers()).tolist()
        [4.0, 4.0]
    """
    dev_end = device_ends(dag, end, schedule.p)
    last = dev_end.copy()
    colls = collectives(schedule, costs, comm, dag, end, sync, dp_allreduce)
    for c in colls:
        if c.kind == DP_ALLREDUCE:
            continue
        t1 = c.ready + c.duration
        _record_collective(transfers, c, c.ready, t1)
        for dv in c.devices:
            last[dv] = max(last[dv], t1)
    for c in colls:
        if c.kind != DP_ALLREDUCE:
            continue
        dv = c.devices[0]
        t0 = max(c.ready, last[dv])  # after the device's replica syncs
        _record_collective(transfers, c, t0, t0 + c.duration)
        last[dv] = t0 + c.duration
    return last - dev_end


def _record_collective(transfers: Transfers, c: Collective, t0: float, t1: float) -> None:
    """One row per participating device (src -> its ring neighbour), ops -1."""
    devs = c.devices
    for n, dv in enumerate(devs):
        transfers.add(c.kind, dv, devs[(n + 1) % len(devs)], -1, -1, t0, t1, c.nbytes)


def memory_report(timeline: Timeline, capacity: float | None = None) -> dict[str, Any]:
    """Peak memory per device (activations plus the weights of every stage replica held, so a
    bidirectional placement counts its weights twice) against the device capacity (default: the
    system's, ``timeline.info.memory_capacity``). ``oom`` lists the devices over capacity.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> r = memory_report(run(build("1f1b", p=2, m=2)), capacity=1.5)
        >>> r["peak"], r["oom"]
        ([2.0, 1.0], [0])
    """
    cap = capacity
    if cap is None and timeline.costs.memory_unit == "bytes":
        # the system's capacity is bytes: peaks of explicit --costs count activations, which no
        # byte count can be checked against
        cap = timeline.info.memory_capacity
    peak = timeline.peak_memory(include_weights=True)
    oom = [] if cap is None else [d for d in range(timeline.p) if peak[d] > cap]
    return {
        "peak": peak.tolist(),
        "weights": timeline.static_memory().tolist(),
        "capacity": cap,
        "oom": oom,
        "unit": timeline.costs.memory_unit,
    }


def resources_of(comm: CommModel, src: int, dst: int) -> tuple[Hashable, ...]:
    """Resources a transfer between two devices holds under contention: the system's links/NICs,
    or for a model without topology the directed device pair (each pair one full-duplex link).

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> resources_of(FixedDelay(1.0), 2, 3), resources_of(FixedDelay(1.0), 3, 3)
        ((('link', 2, 3),), ())
    """
    if src == dst:
        return ()
    res = getattr(comm, "resources", None)
    if res is not None:
        return tuple(res(src, dst))
    return (("link", src, dst),)


def dp_resources(comm: CommModel, device: int) -> tuple[Hashable, ...]:
    """Resources a data-parallel all-reduce of one device holds: its NIC, both directions (a
    model without topology: a resource of its own).

    Example:
        >>> from ppverify.systems.system import load_system
        >>> dp_resources(load_system("dgx-h100"), 9)
        (('nic-tx', 1, 1), ('nic-rx', 1, 1))
    """
    nic = getattr(comm, "nic_of", None)
    node = getattr(comm, "node_of", None)
    if nic is None or node is None:
        return (("dp", device),)
    return (("nic-tx", node(device), nic(device)), ("nic-rx", node(device), nic(device)))


def ring_resources(comm: CommModel, devices: Sequence[int]) -> tuple[Hashable, ...]:
    """Resources of a ring collective: every directed hop of the ring, both directions.

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> ring_resources(FixedDelay(1.0), (0, 3))
        (('link', 0, 3), ('link', 3, 0))
    """
    out: list[Hashable] = []
    n = len(devices)
    for k in range(n):
        a, b = devices[k], devices[(k + 1) % n]
        out.extend(resources_of(comm, a, b))
        out.extend(resources_of(comm, b, a))
    return tuple(dict.fromkeys(out))
