"""The words for a memory cap that no schedule, or one given order, can meet: amounts as
``--memory-cap`` counts them (activations of a device's share, or bytes as GiB with presets), with
the digits that tell the amount and the cap apart."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.memory_text import held_and_cap
from ..core.memory_unit import printed_unit
from .heuristic import order_peaks
from .problem import Instance


def _held_and_cap(inst: Instance, amount: int) -> tuple[str, str]:
    # an amount and the cap, both in instance units, as texts in the cap's own printed unit
    assert inst.cap is not None
    costs = inst.problem.costs
    one = printed_unit(costs, inst.problem.placement)
    return held_and_cap(amount * inst.mem_unit / one, inst.cap * inst.mem_unit / one, costs.memory_unit, True)


def cap_infeasibility(inst: Instance) -> str:
    """Why no schedule meets the cap, where one activation alone exceeds it, or one microbatch's
    activations on a device's stages do; else "". A microbatch's forward reaches the last of a
    device's stages before any of its backwards there can run (each needs the backward of the
    stage after it), so those activations are all held when that last forward starts. Amounts
    print as ``--memory-cap`` counts them (activations of a device's share, or bytes as GiB with
    presets), the digits telling them apart.

    Example:
        >>> from ppverify.core.placement import linear, v_shape
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.problem import Problem, instance
        >>> pl = linear(2)
        >>> cap_infeasibility(instance(Problem(pl, 2, CostModel.abstract(pl), memory_cap=0.5)))
        "memory cap 0.5 activations is below stage 0's activation (1 activation): no forward of that stage can ever run"
        >>> pl = v_shape(2)  # device 0 holds stages 0 and 3, half a share each
        >>> cap_infeasibility(instance(Problem(pl, 2, CostModel.abstract(pl), memory_cap=0.75)))
        "memory cap 0.75 activations is below one microbatch's activations on device 0 (1 activation: stages 0, 3): its forward reaches stage 3 before a backward frees stage 0's, so they are held together"
    """
    if inst.cap is None:
        return ""
    for i, op in enumerate(inst.dag.ops):
        if inst.alloc[i] > inst.cap:
            need, cap = _held_and_cap(inst, inst.alloc[i])
            return (
                f"memory cap {cap} is below stage {op.stage}'s activation ({need}): "
                f"no forward of that stage can ever run"
            )
    for members in inst.mb_members.values():
        held: dict[int, list[int]] = {}  # device -> this microbatch's forwards there
        for i in members:
            if inst.alloc[i] > 0:
                held.setdefault(inst.dag.device[i], []).append(i)
        for d, fwd in sorted(held.items()):
            if sum(inst.alloc[i] for i in fwd) > inst.cap:
                stages = sorted(inst.dag.ops[i].stage for i in fwd)
                need, cap = _held_and_cap(inst, sum(inst.alloc[i] for i in fwd))
                return (
                    f"memory cap {cap} is below one microbatch's activations on device {d} ({need}: stages "
                    f"{', '.join(map(str, stages))}): its forward reaches stage {stages[-1]} before a backward "
                    f"frees stage {stages[0]}'s, so they are held together"
                )
    return ""


def cap_breach(inst: Instance, order: Sequence[Sequence[int]]) -> str:
    """Where running ``order`` breaks the instance's cap: the first device over it, its peak and
    the cap as ``verify`` words a breach (:func:`~ppverify.core.memory_text.held_and_cap`: digits
    enough to tell them apart); "" when no cap or the order keeps it.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.optimize.evaluate import problem_for
        >>> from ppverify.optimize.problem import instance
        >>> s = build("1f1b", p=8, m=32)
        >>> inst = instance(problem_for(s, CostModel.abstract(s.placement, F=1, B=2), memory_cap=7), s)
        >>> cap_breach(inst, [list(inst.device_ops(d)) for d in range(inst.p)])
        'device 0 holds 8 activations at its peak, over the cap 7 activations'
    """
    if inst.cap is None:
        return ""
    for d, peak in enumerate(order_peaks(inst, order)):
        if peak > inst.cap:
            held, cap = _held_and_cap(inst, peak)
            return f"device {d} holds {held} at its peak, over the cap {cap}"
    return ""


__all__ = ["cap_breach", "cap_infeasibility"]
