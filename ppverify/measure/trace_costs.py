"""Op costs and boundary bytes fitted from a recorded step (:mod:`.trace_import` rebuilds the
step; ``import-trace`` predicts with these costs, ``calibrate --from-trace`` writes them): the
median duration per stage and kind, overlapped F&B cells (each op spanning the whole cell) left
out where the kind ran on its own, and each boundary's bytes from the recorded shapes.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence

from ..core.costs import KINDS, CostModel
from ..core.placement import Placement
from ..io.trace_step import RecordedStep
from .record import Event

_COMPUTE = re.compile(r"([0-9]+)([FBIW])([0-9]+)$")
_COMM = re.compile(r"([0-9]+)(SEND|RECV)_([FB])([0-9]+)$")
_OVERLAP = re.compile(r"\((.*)\)OVERLAP_F_B$")
#: an op as ``(kind, stage, mb)``
OpKey = tuple[str, int, int]


def overlapped_ops(step: RecordedStep) -> dict[OpKey, OpKey]:
    """Each op of an overlapped cell ``(a;b)OVERLAP_F_B`` of the step, as ``(kind, stage, mb)``,
    with the other op of its cell (for :func:`fitted_costs`).

    Example:
        >>> from ppverify.io.profiler_trace import Span
        >>> st = RecordedStep(0, (0,), (9.0,), "shared", (0.0,), "device", ((Span("(1F3;0B0)OVERLAP_F_B", 0.0, 9.0),),), ((),), 0.0)
        >>> overlapped_ops(st)
        {('F', 1, 3): ('B', 0, 0), ('B', 0, 0): ('F', 1, 3)}
    """
    out: dict[OpKey, OpKey] = {}
    for acts in step.actions:
        for a in acts:
            om = _OVERLAP.match(a.name)
            if om:
                keys = [
                    (m.group(2), int(m.group(1)), int(m.group(3)))
                    for m in map(_COMPUTE.match, om.group(1).split(";"))
                    if m
                ]
                for i, key in enumerate(keys):
                    out[key] = keys[1 - i] if len(keys) == 2 else key
    return out


def fitted_costs(
    events: Sequence[Sequence[Event]],
    placement: Placement,
    boundary_bytes: Sequence[float] = (),
    overlapped: Mapping[OpKey, OpKey] | None = None,
) -> CostModel:
    """Op costs fitted from a step: the median duration of each stage's ops of each kind, in
    seconds (a kind never recorded: B = I + W, I = W = B / 2, F from B / 2; zero if none). The ops
    of an overlapped cell (``overlapped``: :func:`overlapped_ops`; each spans the whole cell) are
    left out where the stage's kind ran on its own; otherwise each cell gives the cell's time less
    its other op's fitted cost (half the cell where that is unknown too).

    Example:
        >>> from ppverify.core.placement import linear
        >>> ev = [[Event("F", 0, 0, 0, 10**7), Event("F", 0, 1, 0, 3 * 10**7), Event("B", 0, 0, 0, 4 * 10**7)]]
        >>> c = fitted_costs(ev, linear(1))
        >>> c.duration["F"], c.duration["B"], c.duration["I"]
        ((0.02,), (0.04,), (0.02,))
        >>> # 0F2 and 0B1 overlapped in one 60 ms cell: F stays the plain median, B = 60 - 20 = 40
        >>> ev = [[Event("F", 0, 0, 0, 10**7), Event("F", 0, 1, 0, 3 * 10**7), Event("F", 0, 2, 0, 6 * 10**7), Event("B", 0, 1, 0, 6 * 10**7)]]
        >>> c = fitted_costs(ev, linear(1), overlapped={("F", 0, 2): ("B", 0, 1), ("B", 0, 1): ("F", 0, 2)})
        >>> c.duration["F"], round(c.duration["B"][0], 9)
        ((0.02,), 0.04)
    """
    S = placement.num_stages
    cells = overlapped or {}
    per: dict[tuple[str, int], list[float]] = {}
    in_cells: dict[tuple[str, int], list[tuple[float, OpKey]]] = {}
    for evs in events:
        for e in evs:
            if e.kind in KINDS:
                d = (e.end_ns - e.start_ns) / 1e9
                partner = cells.get((e.kind, e.stage, e.mb))
                if partner is None:
                    per.setdefault((e.kind, e.stage), []).append(d)
                else:
                    in_cells.setdefault((e.kind, e.stage), []).append((d, partner))
    plain = {key: statistics.median(v) for key, v in per.items()}
    for key, samples in in_cells.items():
        if key not in plain:  # only ever overlapped: the cell less its other op
            per[key] = [
                max(d - plain[(pk, ps)], 0.0) if (pk, ps) in plain and pk != key[0] else d / 2
                for d, (pk, ps, _) in samples
            ]
    dur: dict[str, list[float]] = {k: [] for k in KINDS}
    for s in range(S):
        med = {k: statistics.median(per[(k, s)]) for k in KINDS if (k, s) in per}
        if "B" not in med and "I" in med and "W" in med:
            med["B"] = med["I"] + med["W"]
        if "B" in med:
            med.setdefault("I", med["B"] / 2)
            med.setdefault("W", med["B"] / 2)
        med.setdefault("F", med.get("B", 0.0) / 2)
        med.setdefault("B", 2 * med["F"])
        med.setdefault("I", med["B"] / 2)
        med.setdefault("W", med["B"] / 2)
        for k in KINDS:
            dur[k].append(float(med[k]))
    share = placement.share_per_stage
    bb = tuple(float(x) for x in boundary_bytes) if len(boundary_bytes) == max(S - 1, 0) else (0.0,) * max(S - 1, 0)
    return CostModel(
        duration={k: tuple(v) for k, v in dur.items()},
        activation=(share,) * S,
        freed_by_I=(0.0,) * S,
        boundary_bytes=bb,
        weight_bytes=(0.0,) * S,
        time_unit="s",
        label="fitted from the trace (median per stage and kind)",
    )


def boundary_bytes_of(step: RecordedStep, num_stages: int) -> tuple[float, ...]:
    """Bytes of each stage boundary from the recorded shapes of the step's sends (the largest
    seen; 0 where none was recorded).

    Example:
        >>> from ppverify.io.profiler_trace import Span, Transfer
        >>> st = RecordedStep(0, (0,), (1.0,), "shared", (0.0,), "host", ((),), ((Transfer("0SEND_F0", Span("gloo:send", 0, 1, 128.0)),),), 0.0)
        >>> boundary_bytes_of(st, 2)
        (128.0,)
    """
    out = [0.0] * max(num_stages - 1, 0)
    for trs in step.transfers:
        for t in trs:
            m = _COMM.match(t.action)
            if not m:
                continue
            s = int(m.group(1))
            b = s if m.group(3) == "F" else s - 1
            if m.group(2) == "RECV":
                b = s - 1 if m.group(3) == "F" else s
            if 0 <= b < len(out):
                out[b] = max(out[b], t.span.nbytes)
    return tuple(out)


__all__ = ["OpKey", "boundary_bytes_of", "fitted_costs", "overlapped_ops"]
