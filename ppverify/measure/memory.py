"""Activation memory measured in the running program, next to the predicted peaks, in bytes.

The workers record every tensor autograd saves inside a stage's block and the moment the graph
lets go of it (:mod:`.memrecord`). Per rank these events, summed in order, are the rank's saved
activations over the step: the measured curve; its maximum is the measured peak. Each event
carries the stage and microbatch that saved the tensor and the op the rank ran when it was freed,
so the bytes are attributed (:attr:`MeasuredMemory.saved`, :attr:`MeasuredMemory.freed_by`).

**The measured model's bytes.** One stage's block on one microbatch (:mod:`.stages`: LayerNorm,
Linear up, GELU, Linear down, residual; float64, ``r`` rows, width ``d``, MLP width ``h``) saves,
parameters aside: LayerNorm's input (``r*d``), its mean and reciprocal deviation (``r`` each),
its output as the up-projection's input (``r*d``), GELU's input (``r*h``) and GELU's output as
the down-projection's input (``r*h``); the residual add saves nothing. That is
``8 * r * (2d + 2 + 2h)`` bytes: 800 for ``--compute sleep`` (r=2, d=8, h=16) and 41,088 for
``real`` (r=8, d=64, h=256) (:func:`stage_activation_bytes`).

**What I and W free.** PyTorch's runtime runs a split backward's ``I`` with ``retain_graph=True``
and keeps the graph's nodes that lead to the weights for the ``W`` (``stage_backward_input``);
ppverify's two-pipe runner does the same. Every saved tensor of the block lies on a path from
the output to a weight, so ``I`` frees none of them and ``W`` frees all: the measured model's
``freed_by_I`` is 0 (:data:`FREED_BY_I`), a full ``B`` frees everything.

**The prediction in the same bytes** is the predicted timeline's per-device peak
(:func:`ppverify.core.timeline.activation_peaks`: F allocates at its start, backward ops free at their
end, an overlapped cell's actions in the order written, as PyTorch runs them) with each stage's activation set to :func:`stage_activation_bytes` and ``freed_by_I`` to
:data:`FREED_BY_I`. In the abstract unit (one microbatch over a device's whole share = 1), a
stage's activation is ``p / S``, so an abstract peak ``a`` is ``a * S / p`` stage activations,
``a * S / p * stage_activation_bytes`` bytes. Ops run one at a time on a rank, so the measured
curve reaches each predicted level at the end of the F that the prediction counts at its start:
the peaks are equal to the byte (the accounting counts tensors' own bytes, not the allocator's
blocks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.costs import CostModel
from ..core.timeline import Timeline, activation_peaks
from .memrecord import MemEvent
from .stages import ModelSpec

#: fraction of a stage's saved activations a split backward's I frees in the measured runs
FREED_BY_I = 0.0
#: bytes of one element of the measured model (float64)
ELEMENT_BYTES = 8


def stage_activation_bytes(spec: ModelSpec) -> int:
    """Bytes autograd saves for one stage's block on one microbatch (see the module docstring).

    Example:
        >>> stage_activation_bytes(ModelSpec.for_compute("sleep")), stage_activation_bytes(ModelSpec.for_compute("real"))
        (800, 41088)
    """
    r, d, h = spec.mb_size, spec.dim, spec.hidden
    return ELEMENT_BYTES * r * (2 * d + 2 + 2 * h)


def byte_costs(costs: CostModel, stage_bytes: float) -> CostModel:
    """``costs`` with the measured model's memory: every stage's activation ``stage_bytes``,
    ``freed_by_I`` :data:`FREED_BY_I`, in bytes (durations unchanged).

    Example:
        >>> from ppverify.core.placement import loop
        >>> c = byte_costs(CostModel.abstract(loop(2, 2)), 800)
        >>> c.activation, c.freed_by_I, c.memory_unit
        ((800, 800, 800, 800), (0.0, 0.0, 0.0, 0.0), 'bytes')
    """
    S = costs.num_stages
    return replace(costs, activation=(stage_bytes,) * S, freed_by_I=(FREED_BY_I,) * S, memory_unit="bytes")


def predicted_peaks(timeline: Timeline, stage_bytes: float) -> list[float]:
    """Per-device peak of ``timeline``'s ops with the measured model's bytes (:func:`byte_costs`).

    Example:
        >>> from ppverify.engines import run
        >>> from ppverify.schedules import build
        >>> predicted_peaks(run(build("1f1b", p=2, m=4)), 800)  # 1F1B holds p - d microbatches
        [1600.0, 800.0]
    """
    tl = timeline
    costs = byte_costs(tl.costs, stage_bytes)
    return [float(x) for x in activation_peaks(tl.ops, tl.device, tl.start, tl.free_times, costs, tl.p)]


@dataclass(frozen=True)
class MeasuredMemory:
    """The saved activations of one measured step: per device its ``events`` in time order,
    ``times`` (seconds from the step start) and ``held`` (bytes after each event), ``peaks`` (the
    maximum per device), the ``predicted`` peaks in the same bytes (None without a prediction)
    and ``stage_bytes`` (the model's bytes per stage activation).

    Example:
        >>> ev = [[MemEvent(10, 0, 0, 800, "F"), MemEvent(30, 0, 0, -800, "B")], []]
        >>> mm = MeasuredMemory.from_events(ev, 0, 800, [800.0, 0.0])
        >>> mm.peaks, mm.matches, mm.saved, mm.freed_by
        ((800, 0), True, {(0, 0): 800}, {'B': 800})
    """

    events: tuple[tuple[MemEvent, ...], ...]
    times: tuple[tuple[float, ...], ...]
    held: tuple[tuple[int, ...], ...]
    peaks: tuple[int, ...]
    predicted: tuple[float, ...] | None
    stage_bytes: int

    @staticmethod
    def from_events(
        events: Sequence[Sequence[MemEvent]], t0_ns: int, stage_bytes: int, predicted: Sequence[float] | None
    ) -> MeasuredMemory:
        """Build from each rank's events of one step (``events[rank]``), the step start and the
        predicted peaks (bytes).

        Example:
            >>> MeasuredMemory.from_events([[MemEvent(5, 0, 0, 800, "F")]], 0, 800, None).times
            ((5e-09,),)
        """
        ordered, times, held, peaks = [], [], [], []
        for evs in events:
            evs = sorted(evs, key=lambda e: e.t_ns)  # stable: same-instant events keep their order
            level = np.cumsum([e.nbytes for e in evs], dtype=np.int64)
            ordered.append(tuple(evs))
            times.append(tuple((e.t_ns - t0_ns) * 1e-9 for e in evs))
            held.append(tuple(int(x) for x in level))
            peaks.append(max(int(level.max()), 0) if len(level) else 0)
        pred = tuple(float(x) for x in predicted) if predicted is not None else None
        return MeasuredMemory(tuple(ordered), tuple(times), tuple(held), tuple(peaks), pred, stage_bytes)

    @property
    def saved(self) -> dict[tuple[int, int], int]:
        """Bytes each forward saved, by ``(stage, microbatch)``.

        Example:
            >>> MeasuredMemory.from_events([[MemEvent(5, 1, 2, 128, "F"), MemEvent(6, 1, 2, 672, "F")]], 0, 800, None).saved
            {(1, 2): 800}
        """
        out: dict[tuple[int, int], int] = {}
        for e in (e for evs in self.events for e in evs if e.nbytes > 0):
            out[(e.stage, e.mb)] = out.get((e.stage, e.mb), 0) + e.nbytes
        return out

    @property
    def freed_by(self) -> dict[str, int]:
        """Bytes freed while an op of each kind ran ("" between ops).

        Example:
            >>> ev = [MemEvent(1, 0, 0, 800, "F"), MemEvent(2, 0, 0, -800, "W")]
            >>> MeasuredMemory.from_events([ev], 0, 800, None).freed_by
            {'W': 800}
        """
        out: dict[str, int] = {}
        for e in (e for evs in self.events for e in evs if e.nbytes < 0):
            out[e.during] = out.get(e.during, 0) - e.nbytes
        return out

    @property
    def matches(self) -> bool | None:
        """True when every device's measured peak equals the predicted one (bytes); None when
        there is no prediction.

        Example:
            >>> MeasuredMemory.from_events([[MemEvent(5, 0, 0, 800, "F")]], 0, 800, [1600.0]).matches
            False
        """
        if self.predicted is None:
            return None
        return all(float(a) == b for a, b in zip(self.peaks, self.predicted))

    @property
    def curves(self) -> list[tuple[tuple[float, ...], tuple[int, ...]]]:
        """Per device ``(times, bytes held after each)``: what ``--trace`` and ``--plot`` draw.

        Example:
            >>> MeasuredMemory.from_events([[MemEvent(10, 0, 0, 800, "F")]], 0, 800, None).curves
            [((1e-08,), (800,))]
        """
        return list(zip(self.times, self.held))

    def peaks_in(self, activation: Sequence[float]) -> tuple[float, ...]:
        """Per-device measured peaks in another unit: each byte of stage s counts
        ``activation[s] / stage_bytes`` (a configuration's activation per stage and microbatch,
        abstract or bytes), summed in the measured order; 12 significant digits.

        Example:
            >>> ev = [[MemEvent(1, 0, 0, 800, "F"), MemEvent(2, 1, 0, 800, "F"), MemEvent(3, 1, 0, -800, "B")]]
            >>> MeasuredMemory.from_events(ev, 0, 800, None).peaks_in([0.5, 0.5])  # interleaved: a stage is half a share
            (1.0,)
        """
        out = []
        for evs in self.events:
            level = np.cumsum([e.nbytes * float(activation[e.stage]) / self.stage_bytes for e in evs])
            out.append(float(f"{max(float(level.max()), 0.0):.12g}") if len(level) else 0.0)
        return tuple(out)

    @property
    def peak(self) -> int:
        """The highest device's measured peak (bytes).

        Example:
            >>> MeasuredMemory.from_events([[MemEvent(5, 0, 0, 800, "F")], []], 0, 800, None).peak
            800
        """
        return max(self.peaks, default=0)

    def to_dict(self) -> dict[str, Any]:
        """What ``measure --json`` prints under ``memory``: peaks, prediction, attribution and the
        curve (per device ``[[time_s, bytes held], ...]``).

        Example:
            >>> mm = MeasuredMemory.from_events([[MemEvent(10, 0, 0, 800, "F")]], 0, 800, None)
            >>> mm.to_dict()["curve"], mm.to_dict()["saved"]
            ([[[1e-08, 800]]], [{'stage': 0, 'mb': 0, 'bytes': 800}])
        """
        return {
            "unit": "bytes",
            "what": "tensors autograd saved in each stage's block (parameters and the loss excluded)",
            "stage_activation_bytes": self.stage_bytes,
            "freed_by_I": FREED_BY_I,
            "peaks_measured": list(self.peaks),
            "peaks_predicted": list(self.predicted) if self.predicted is not None else None,
            "match": self.matches,
            "saved": [{"stage": s, "mb": mb, "bytes": b} for (s, mb), b in sorted(self.saved.items())],
            "freed_by": dict(sorted(self.freed_by.items())),
            "curve": [[[t, b] for t, b in zip(ts, hs)] for ts, hs in zip(self.times, self.held)],
        }

    def to_frame(self) -> Any:
        """The curve as rows in the columns of :meth:`Timeline.to_frame` (``type`` = memory,
        ``kind`` save/free, ``bytes`` the change, at ``start`` = ``end``), plus ``held`` (bytes
        after the row) and ``during`` (the op the rank was running).

        Example:
            >>> mm = MeasuredMemory.from_events([[MemEvent(10, 2, 1, 800, "F")]], 0, 800, None)
            >>> mm.to_frame()[["type", "kind", "stage", "mb", "device", "bytes", "held", "during"]].values.tolist()
            [['memory', 'save', 2, 1, 0, 800, 800, 'F']]
        """
        import pandas as pd

        rows = [
            ("memory", "save" if e.nbytes > 0 else "free", e.stage, e.mb, d, -1, -1, t, t, e.nbytes, h, e.during)
            for d, (evs, ts, hs) in enumerate(zip(self.events, self.times, self.held))
            for e, t, h in zip(evs, ts, hs)
        ]
        cols = ["type", "kind", "stage", "mb", "device", "src", "dst", "start", "end", "bytes", "held", "during"]
        return pd.DataFrame(rows, columns=cols)


def measured_memory(
    events: Sequence[Sequence[MemEvent]],
    t0_ns: int,
    spec: ModelSpec,
    predicted: Timeline | None,
) -> MeasuredMemory:
    """The :class:`MeasuredMemory` of one measured step (``events[rank]`` from the workers), with the peaks ``predicted`` predicts in the same bytes.

    Example:
        >>> ev = [[MemEvent(0, 0, 0, 800, "F"), MemEvent(5, 0, 0, -800, "B")], [MemEvent(2, 1, 0, 800, "F"), MemEvent(3, 1, 0, -800, "B")]]
        >>> measured_memory(ev, 0, ModelSpec.for_compute("sleep"), None).peaks
        (800, 800)
    """
    nbytes = stage_activation_bytes(spec)
    pred = predicted_peaks(predicted, nbytes) if predicted is not None else None
    return MeasuredMemory.from_events(events, t0_ns, nbytes, pred)
