"""The Timeline every engine returns, and every metric derived from it (defined here once).

Metrics: makespan; per-device busy and idle time; bubble ratio (convention ``idle/total``:
``(makespan - busy) / makespan`` per device, averaged); per-device memory over time and its peak
(activations, plus the static weight bytes of the stages a device holds when asked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .costs import CostModel
from .ops import B, F, I, Op
from .schedule import Schedule
from .transfers import Transfers  # re-exported: engines and views import it from here

#: the bubble-ratio convention ppverify uses everywhere
BUBBLE_CONVENTION = "idle/total = (makespan - busy) / makespan per device, averaged over devices"


@dataclass(frozen=True)
class TimelineInfo:
    """What an engine knows about its timeline beyond the ops' times; ``None`` where that engine
    has nothing to say.

    * table (``slot``): ``tick`` (length of one table tick), ``ticks`` (table length),
      ``start_tick``/``end_tick`` (each op's cells, in op order), ``charge_comm``.
    * ``torch`` steps: ``steps`` (step count), ``grid`` (``grid[rank][step]``, the action run or
      ``None``), ``lowered`` (SEND/RECV were added), ``step_unit``.
    * ``async``/``contention``: ``sync``, ``dp_allreduce``, ``exposed_comm`` (per device),
      ``memory_capacity`` and ``system`` (of the communication model's system, if any);
      ``contention`` also ``num_resources`` and ``num_transfers`` (point-to-point ones timed).
    * ``cp-sat``: ``tick``, ``objective``, ``sync``, ``dp_allreduce``.
    * measured: ``compute``, ``runner``, ``clock``, ``format``, ``step`` (index of the measured step).

    Example:
        >>> TimelineInfo(tick=0.5, ticks=8).ticks, TimelineInfo().memory_capacity is None
        (8, True)
    """

    tick: float | None = None
    ticks: int | None = None
    # whole numbers of ticks, held as the floats list_schedule returns
    start_tick: Sequence[float] | None = None
    end_tick: Sequence[float] | None = None
    charge_comm: bool | None = None
    steps: int | None = None
    grid: Sequence[Sequence[object | None]] | None = None
    lowered: bool | None = None
    step_unit: str | None = None
    sync: str | None = None
    dp_allreduce: int | None = None
    exposed_comm: Sequence[float] | None = None
    memory_capacity: float | None = None
    system: str | None = None
    num_resources: int | None = None
    num_transfers: int | None = None
    objective: str | None = None
    compute: str | None = None
    runner: str | None = None
    clock: str | None = None
    format: str | None = None
    step: int | None = None


@dataclass(frozen=True, eq=False)
class Timeline:
    """Start/end of every op (and transfer) of one step under one engine's semantics.

    ``ops[i]`` ran on ``device[i]`` from ``start[i]`` to ``end[i]``. ``time_unit`` is "units" for
    abstract costs or "s". ``info`` carries engine-specific facts (:class:`TimelineInfo`: tick length
    of a table, exposed communication ...).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> tl = run(build("gpipe", p=4, m=4), semantics="slot")
        >>> tl.makespan, round(tl.bubble_ratio, 4), tl.peak_memory().tolist()
        (14.0, 0.4286, [4.0, 4.0, 4.0, 4.0])
    """

    schedule: Schedule
    costs: CostModel
    semantics: str
    ops: list[Op]
    device: np.ndarray
    start: np.ndarray
    end: np.ndarray
    transfers: Transfers = field(default_factory=Transfers)
    info: TimelineInfo = field(default_factory=TimelineInfo)

    @property
    def p(self) -> int:
        """Number of devices."""
        return self.schedule.p

    @property
    def time_unit(self) -> str:
        """Unit of the times ("units" or "s")."""
        return self.costs.time_unit

    @property
    def makespan(self) -> float:
        """End of the last op or transfer (the step time)."""
        last = float(self.end.max()) if len(self.end) else 0.0
        if len(self.transfers):
            last = max(last, float(self.transfers.column("end").max()))
        return last

    def busy(self) -> np.ndarray:
        """Per-device compute time (union of op intervals, so overlapped slots count once).

        Example:
            >>> from ppverify.schedules import build
            >>> from ppverify.engines import run
            >>> run(build("gpipe", p=2, m=1), semantics="slot").busy().tolist()
            [2.0, 2.0]
        """
        out = np.zeros(self.p)
        for d in range(self.p):
            sel = self.device == d
            if not sel.any():
                continue
            s, e = self.start[sel], self.end[sel]
            order = np.argsort(s, kind="stable")
            s, e = s[order], e[order]
            prev_end = np.concatenate(([-np.inf], np.maximum.accumulate(e)[:-1]))
            out[d] = np.clip(e - np.maximum(s, prev_end), 0, None).sum()
        return out

    def idle(self) -> np.ndarray:
        """Per-device idle time: ``makespan - busy``, never below 0 (a device busy the whole step
        sums its ops' lengths in floats, which may come out a rounding above the makespan).

        Example:
            >>> from ppverify.schedules import build
            >>> from ppverify.engines import run
            >>> run(build("gpipe", p=2, m=1), semantics="slot").idle().tolist()
            [2.0, 2.0]
        """
        return np.maximum(self.makespan - self.busy(), 0.0)

    @property
    def bubble_ratio(self) -> float:
        """Mean over devices of ``idle / makespan`` (see :data:`BUBBLE_CONVENTION`)."""
        ms = self.makespan
        return float((self.idle() / ms).mean()) if ms > 0 else 0.0

    def memory_events(self, device: int, include_weights: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(times, memory after each time)`` for one device: F allocates at its start, backward
        ops free at their end; at equal times frees come first. ``include_weights`` adds the
        device's :meth:`static_memory` throughout.

        Example:
            >>> from ppverify.schedules import build
            >>> from ppverify.engines import run
            >>> t, mem = run(build("1f1b", p=2, m=2), semantics="slot").memory_events(0)
            >>> t.tolist(), mem.tolist()
            ([0.0, 1.0, 4.0, 6.0], [1.0, 2.0, 1.0, 0.0])
        """
        times: list[float] = []
        deltas: list[float] = []
        freed_at = self.free_times
        for i in np.flatnonzero(self.device == device):
            op = self.ops[i]
            alloc, free = self.costs.memory_delta(op)
            if alloc:
                times.append(float(self.start[i]))
                deltas.append(alloc)
            if free:
                times.append(float(freed_at[i]))
                deltas.append(-free)
        t = np.asarray(times, dtype=float)
        dl = np.asarray(deltas, dtype=float)
        order = np.lexsort((dl, t))  # by time, frees (negative) first
        t, dl = t[order], dl[order]
        mem = np.cumsum(dl)
        base = self.static_memory()[device] if include_weights else 0.0
        return t, mem + base

    def static_memory(self) -> np.ndarray:
        """Per-device weight/optimizer bytes: every stage replica a device holds counts (so a
        bidirectional placement doubles them)."""
        out = np.zeros(self.p)
        pl = self.schedule.placement
        for pipe in range(pl.num_pipes):
            if pipe not in self.schedule.pipe_of_mb:
                continue
            for s, d in enumerate(pl.maps[pipe]):
                out[d] += self.costs.weight_bytes[s]
        return out

    def peak_memory(self, include_weights: bool = False) -> np.ndarray:
        """Per-device peak memory (activations; plus weights when asked): the maximum of
        :meth:`memory_events` (at least the weights), for all devices in one vectorised pass
        computed once per timeline.

        Example:
            >>> from ppverify.schedules import build
            >>> from ppverify.engines import run
            >>> run(build("1f1b", p=2, m=2), semantics="slot").peak_memory().tolist()
            [2.0, 1.0]
        """
        act = self._activation_peak
        if not include_weights:
            copy: np.ndarray = act.copy()
            return copy
        # max(mem + base) == max(mem) + base exactly: adding a constant is monotonic in floats
        base = self.static_memory()
        out: np.ndarray = np.where(act > 0, act + base, base)
        return out

    @cached_property
    def _activation_peak(self) -> np.ndarray:
        return activation_peaks(self.ops, self.device, self.start, self.free_times, self.costs, self.p)

    @cached_property
    def free_times(self) -> np.ndarray:
        """When each op frees what it frees: at its end, except a backward written before the
        forward of its overlapped slot, which PyTorch runs first (a cell's actions run in the
        order written): its free comes before that forward allocates, at the slot's start
        (:func:`freed_before_forward`).

        Example:
            >>> from ppverify.schedules import build
            >>> from ppverify.engines import run
            >>> tl = run(build("1f1b", p=2, m=2), semantics="slot")
            >>> bool((tl.free_times == tl.end).all())
            True
        """
        early = freed_before_forward(self.schedule)
        if not early:
            return self.end
        out: np.ndarray = self.end.copy()
        for i, op in enumerate(self.ops):
            if op in early:
                out[i] = self.start[i]
        return out

    def to_frame(self) -> pd.DataFrame:
        """Every op and transfer as rows: ``type, kind, stage, mb, device, src, dst, start, end, bytes``.

        Example:
            >>> from ppverify.schedules import build
            >>> from ppverify.engines import run
            >>> run(build("gpipe", p=2, m=1), semantics="slot").to_frame()[["kind", "device", "start", "end"]].values.tolist()[:2]
            [['F', 0, 0.0, 1.0], ['B', 0, 3.0, 4.0]]
            >>> rows = run(build("chimera", p=2, m=2)).to_frame()
            >>> bool(rows[rows["kind"] == "allreduce"][["stage", "mb"]].isna().all(axis=None))
            True
        """
        ops = pd.DataFrame(
            {
                "type": "op",
                "kind": [o.kind for o in self.ops],
                "stage": [o.stage for o in self.ops],
                "mb": [o.mb for o in self.ops],
                "device": self.device.astype(int),
                "src": -1,
                "dst": -1,
                "start": self.start,
                "end": self.end,
                "bytes": 0.0,
            }
        )
        tr = self.transfers
        if len(tr):
            # a collective (an all-reduce) carries no one op's output: its stage and mb are missing
            # (an empty CSV cell), not -1, which would read as a stage number; nullable integers keep
            # every other row's stage a whole number
            stage = pd.array([self.ops[j].stage if j >= 0 else None for j in tr.src_op], dtype="Int64")
            mb = pd.array([self.ops[j].mb if j >= 0 else None for j in tr.src_op], dtype="Int64")
            trs = pd.DataFrame(
                {
                    "type": "transfer",
                    "kind": tr.kind,
                    "stage": stage,
                    "mb": mb,
                    "device": tr.src_dev,
                    "src": tr.src_dev,
                    "dst": tr.dst_dev,
                    "start": tr.start,
                    "end": tr.end,
                    "bytes": tr.nbytes,
                }
            )
            ops = pd.concat([ops.astype({"stage": "Int64", "mb": "Int64"}), trs], ignore_index=True)
        return ops

    def metrics(self) -> dict[str, Any]:
        """The headline metrics as a plain dict (what ``--json`` prints).

        Example:
            >>> from ppverify.schedules import build
            >>> from ppverify.engines import run
            >>> m = run(build("1f1b", p=4, m=4), semantics="slot").metrics()
            >>> m["makespan"], m["peak_activations"]
            (14.0, [4.0, 3.0, 2.0, 1.0])
        """
        busy = self.busy()
        return {
            "schedule": self.schedule.describe(),
            "semantics": self.semantics,
            "time_unit": self.time_unit,
            "makespan": self.makespan,
            "bubble_ratio": self.bubble_ratio,
            "bubble_convention": BUBBLE_CONVENTION,
            "busy": busy.tolist(),
            "idle": np.maximum(self.makespan - busy, 0.0).tolist(),  # as idle(): never below 0
            "peak_activations": self.peak_memory().tolist(),
            "memory_unit": self.costs.memory_unit,
        }


def _exact_peaks(
    kc: np.ndarray, st: np.ndarray, device: np.ndarray, start: np.ndarray, end: np.ndarray, costs: CostModel, p: int
) -> np.ndarray | None:
    """:func:`activation_peaks` in exact integers (each amount read as
    :func:`~ppverify.core.exact.exact_fraction` reads it, scaled by the common denominator, as
    the verifier counts), each peak the float nearest to the exact one; None where the integers
    could overflow. A float sum leaves residues (``I`` freeing ``a * f`` and ``W`` ``a * (1 - f)``
    of ``a`` need not free ``a``), so a peak equal to a cap could read over it or just under it."""
    from .costs import scaled_memory_deltas
    from .ops import KIND_CODE

    scale, table = scaled_memory_deltas(costs)
    if max((abs(x) for pair in table.values() for x in pair), default=0) * (len(kc) + 1) >= 2**62:
        return None
    S = len(costs.activation)
    alloc_t = np.zeros(4 * S, dtype=np.int64)
    free_t = np.zeros(4 * S, dtype=np.int64)
    for (kind, stage), (a, f) in table.items():
        alloc_t[KIND_CODE[kind] * S + stage], free_t[KIND_CODE[kind] * S + stage] = a, f
    code = kc * S + st
    peaks = _device_peaks(alloc_t[code], free_t[code], device, start, end, p)
    return np.array([int(x) / scale for x in peaks])  # int / int: correctly rounded


def _device_peaks(
    alloc: np.ndarray, free: np.ndarray, device: np.ndarray, start: np.ndarray, end: np.ndarray, p: int
) -> np.ndarray:
    """Each device's most held (at least 0), in the amounts' own dtype: allocations at the ops'
    ``start``, frees at their ``end``, frees first at equal times, all devices sorted at once and
    summed device by device in that order (as :meth:`Timeline.memory_events` does)."""
    ia, iff = np.flatnonzero(alloc != 0), np.flatnonzero(free != 0)
    dev = np.concatenate((device[ia], device[iff]))
    t = np.concatenate((start[ia], end[iff])).astype(float)
    dl = np.concatenate((alloc[ia], -free[iff]))
    order = np.lexsort((dl, t, dev))  # per device, by time, frees (negative) first
    dev, dl = dev[order], dl[order]
    bounds = np.searchsorted(dev, np.arange(p + 1))
    out = np.zeros(p, dtype=dl.dtype)
    for d in range(p):
        if bounds[d + 1] > bounds[d]:
            out[d] = max(np.cumsum(dl[bounds[d] : bounds[d + 1]]).max(), 0)  # one cumsum per device
    return out


def freed_before_forward(schedule: Schedule) -> frozenset[Op]:
    """The backward ops written before the forward of their overlapped slot: PyTorch runs a
    cell's actions one after another in the order written, so such an op frees its activation
    before the forward allocates, and the slot never holds both (written forward first, it does).

    Example:
        >>> from ppverify.core.ops import Overlap
        >>> from ppverify.core.placement import linear
        >>> prog = (Op("F", 0, 0), Op("F", 0, 1), Overlap((Op("B", 0, 0), Op("F", 0, 2))), Op("B", 0, 1), Op("B", 0, 2))
        >>> sorted(map(str, freed_before_forward(Schedule(linear(1), 3, (prog,), (0, 0, 0)))))
        ['0B0']
    """
    from .ops import Overlap

    out: set[Op] = set()
    for prog in schedule.programs:
        for a in prog:
            if type(a) is Overlap:
                kinds = [o.kind for o in a.ops]
                if F in kinds:
                    out.update(o for o in a.ops[: kinds.index(F)] if o.kind != F)
    return frozenset(out)


def activation_peaks(
    ops: list[Op], device: np.ndarray, start: np.ndarray, end: np.ndarray, costs: CostModel, p: int
) -> np.ndarray:
    """Per-device peak activation memory of ops that ran on ``device`` from ``start`` to ``end``:
    the same events as :meth:`Timeline.memory_events` (F allocates at its start, backward ops free
    at their end, frees first at equal times) summed in the same order, all devices sorted at once.

    Example:
        >>> from ppverify.core.placement import linear
        >>> c = CostModel.abstract(linear(1))
        >>> ops = [Op("F", 0, 0), Op("F", 0, 1), Op("B", 0, 0), Op("B", 0, 1)]
        >>> activation_peaks(ops, np.zeros(4, int), np.array([0., 1, 2, 3]), np.array([1., 2, 3, 4]), c, 1).tolist()
        [2.0]
    """
    from .dag import _op_columns
    from .ops import KIND_CODE, W

    out = np.zeros(p)
    cols = _op_columns(ops) if ops else None
    if cols is None:
        return out
    kc, st, _ = cols
    exact = _exact_peaks(kc, st, device, start, end, costs, p)
    if exact is not None:
        return exact
    a = np.asarray(costs.activation, dtype=float)[st]
    frac = np.asarray(costs.freed_by_I, dtype=float)[st]
    alloc = np.where(kc == KIND_CODE[F], a, 0.0)
    free = np.where(
        kc == KIND_CODE[B],
        a,
        np.where(kc == KIND_CODE[I], a * frac, np.where(kc == KIND_CODE[W], a * (1.0 - frac), 0.0)),
    )
    return _device_peaks(alloc, free, device, start, end, p).astype(float)
