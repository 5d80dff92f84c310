"""The pipeline runtime's per-action overhead, folded into op durations.

A runtime such as PyTorch's ``_PipelineScheduleRuntime`` spends time of its own on every action
it runs on a rank: a compute action (F, B, I, W) costs its compute plus ``action`` seconds, and each
SEND/RECV the rank posts for it costs ``transfer`` seconds of the rank's time (the transfer itself
is the communication model's). A system preset states both (``runtime:`` section,
``action_overhead_us`` and ``transfer_overhead_us``; 0 when absent).

They are folded into the cost model where it is built (:func:`with_overhead`): an op of kind k on
stage s lasts ``duration + action + transfer * n``, n being the SEND/RECV actions PyTorch's
lowering attaches to it on its rank (a RECV before and a SEND after each F/I/B whose neighbour
stage lives on another rank; none for W). Every level that reads durations (formulas, the slot,
async, contention and torch engines, the optimizer, the verifier's timing claims) therefore sees
the same overhead; none has a separate term. Zero overhead returns the cost model unchanged.

Neighbours are those of pipe 0; in the two-pipe placements (Chimera, DualPipe) every stage
boundary crosses devices in both pipes, so the count is the same. Two-pipe schedules have no
PyTorch runtime: they run on another runner (ppverify's own), whose figures a preset may state
apart (``runtime.two_pipe``; :func:`runtime_overhead` picks them for two-pipe placements).

Not folded, because no op duration can carry them (``scripts/bench_measured.py`` prints their
sizes): the step's head (barrier exit to the first op, the same on every rank, a shift of the
whole step: a few hundred microseconds); the two-pipe runner's replica all-reduce after its last
op (milliseconds on a loaded machine; the engines charge it two link latencies); and the overlap
of a waiting op's own overhead with its wait (the fold adds it after the wait). Nor the cost of a
hand-over itself, which on gloo depends on which side came first (a rendezvous: a RECV posted
after its SEND costs a round trip, one posted before costs a wake-up), so no per-op constant
follows it; the ``runtime`` semantics (:mod:`ppverify.engines.runtime`) models PyTorch's runtime
action by action instead (it takes the costs before this fold), the other engines keep the fold.
"""

from __future__ import annotations

from .costs import CostModel
from .ops import KINDS, B, F, I, W
from .placement import Placement


def comm_actions(placement: Placement, kind: str, stage: int) -> int:
    """SEND/RECV actions a rank posts around one op of ``kind`` on ``stage`` (PyTorch's lowering).

    Example:
        >>> from ppverify.core.placement import linear, v_shape
        >>> [comm_actions(linear(4), k, s) for k, s in (("F", 0), ("F", 1), ("B", 3), ("W", 1))]
        [1, 2, 1, 0]
        >>> comm_actions(v_shape(2), "F", 1)   # stage 2 is on the same device: only the RECV_F
        1
    """
    rank_of = placement.maps[0]
    S = len(rank_of)
    if kind == W:
        return 0
    prev_cross = stage > 0 and rank_of[stage - 1] != rank_of[stage]
    next_cross = stage < S - 1 and rank_of[stage + 1] != rank_of[stage]
    if kind not in (F, B, I):
        return 0
    return int(prev_cross) + int(next_cross)


def with_overhead(costs: CostModel, placement: Placement, action_s: float = 0.0, transfer_s: float = 0.0) -> CostModel:
    """``costs`` with the runtime's overhead added to every op duration (see the module doc).

    Example:
        >>> from ppverify.core.placement import linear
        >>> c = with_overhead(CostModel.abstract(linear(2), F=1, B=2), linear(2), 0.25, 0.125)
        >>> c.duration["F"], c.duration["W"], c.label
        ((1.375, 1.375), (1.25, 1.25), 'F=1,B=2,I=1,W=1 +overhead 0.25/0.125')
    """
    if not action_s and not transfer_s:
        return costs
    S = costs.num_stages
    duration = {
        k: tuple(costs.duration[k][s] + action_s + transfer_s * comm_actions(placement, k, s) for s in range(S))
        for k in KINDS
    }
    if costs.time_unit == "s":
        label = f"{costs.label} +overhead {action_s * 1e6:.4g} us/action, {transfer_s * 1e6:.4g} us/transfer"
    else:
        label = f"{costs.label} +overhead {action_s:g}/{transfer_s:g}"
    label = label.strip()
    return CostModel(
        duration,
        costs.activation,
        costs.freed_by_I,
        costs.boundary_bytes,
        costs.weight_bytes,
        costs.overlap,
        costs.time_unit,
        costs.memory_unit,
        label,
        costs.extra,
    )


def formula_share_costs(share: dict[str, float], schedule: object) -> dict[str, float]:
    """Per-share costs a closed form can take. With overhead folded in, ``B`` (one action) is no
    longer ``I + W`` (two actions), which :func:`ppverify.core.costs.complete_costs` rejects: give the
    formula the kinds the schedule runs (``I``, ``W`` when it splits its backward, else ``B``).
    Costs with ``B = I + W`` are returned unchanged.

    Example:
        >>> from ppverify.schedules import build
        >>> formula_share_costs({"F": 1.1, "B": 2.1, "I": 1.1, "W": 1.1}, build("1f1b", p=2, m=2))
        {'F': 1.1, 'B': 2.1}
    """
    if abs(share["B"] - share["I"] - share["W"]) <= 1e-12 * max(1.0, abs(share["B"])):
        return share
    if getattr(schedule, "has_split_backward", False):
        return {"F": share["F"], "I": share["I"], "W": share["W"]}
    return {"F": share["F"], "B": share["B"]}


def runtime_overhead(placement: Placement, system: object) -> tuple[float, float]:
    """``(action s, transfer s)`` a system states for schedules of ``placement``: the
    ``two_pipe`` figures (``runtime.two_pipe`` in a preset) for two-pipe placements when the
    system has them, else ``action_overhead_s``/``transfer_overhead_s``; (0, 0) for anything
    without them (e.g. a fixed-delay model).

    Example:
        >>> from dataclasses import replace
        >>> from ppverify.core.placement import linear, bidirectional
        >>> from ppverify.systems.system import load_system
        >>> s = replace(load_system("dgx-h100"), action_overhead_s=2e-3, two_pipe_overhead_s=(1e-3, 0.0))
        >>> runtime_overhead(linear(4), s), runtime_overhead(bidirectional(4), s)
        ((0.002, 0.0), (0.001, 0.0))
    """
    two = getattr(system, "two_pipe_overhead_s", None)
    if two is not None and placement.num_pipes > 1:
        return float(two[0]), float(two[1])
    return getattr(system, "action_overhead_s", 0.0), getattr(system, "transfer_overhead_s", 0.0)


def system_overhead(costs: CostModel, placement: Placement, system: object) -> CostModel:
    """:func:`with_overhead` with the overhead a system states for ``placement``
    (:func:`runtime_overhead`).

    Example:
        >>> from ppverify.core.placement import linear
        >>> from ppverify.systems.system import load_system
        >>> c = CostModel.abstract(linear(2))
        >>> system_overhead(c, linear(2), load_system("dgx-h100")) is c
        True
    """
    return with_overhead(costs, placement, *runtime_overhead(placement, system))


__all__ = ["comm_actions", "formula_share_costs", "runtime_overhead", "system_overhead", "with_overhead"]
