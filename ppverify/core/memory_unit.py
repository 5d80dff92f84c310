"""ppverify's memory unit: one activation (one microbatch on a device's whole share of layers,
docs/memory.md) in a cost model's own memory unit, exactly (:func:`exact_unit`), and amounts
divided by it as ``show`` and ``simulate`` print them (:func:`printed_unit`,
:func:`in_activations`). :mod:`ppverify.core.memory_cap` reads caps in this unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from .costs import CostModel
from .exact import exact_fraction
from .placement import Placement


def in_activations(amounts: Sequence[float], unit: Fraction) -> list[float]:
    """``amounts`` (the cost model's unit) divided exactly by ``unit``.

    Example:
        >>> in_activations([4.0, 1.0], Fraction(2))
        [2.0, 0.5]
    """
    if unit == 1:
        return [float(x) for x in amounts]
    return [float(exact_fraction(x) / unit) for x in amounts]


def printed_unit(costs: CostModel, placement: Placement) -> Fraction:
    """One printed unit of memory in the cost model's own unit: 1 for bytes (or a cost model with
    no activation memory), else :func:`exact_unit`.

    Example:
        >>> from ppverify.core.placement import linear
        >>> pl = linear(2)
        >>> import dataclasses
        >>> printed_unit(dataclasses.replace(CostModel.abstract(pl), activation=(2.0, 1.0)), pl)
        Fraction(2, 1)
        >>> printed_unit(CostModel.abstract(pl), pl)
        Fraction(1, 1)
    """
    if costs.memory_unit == "bytes":
        return Fraction(1)
    unit = exact_unit(costs, placement)
    return unit if unit > 0 else Fraction(1)


def activation_unit(costs: CostModel, placement: Placement) -> float:
    """One activation in ppverify's unit (one microbatch on a device's whole share of layers) in
    the cost model's memory unit: the most one microbatch holds on one device, its stages of one
    pipe summed (with presets, the device with the logits; with devices of unequal shares, the
    largest share), which is ``v`` stage activations where every device holds ``v`` equal stages.

    Example:
        >>> from ppverify.core.placement import loop
        >>> activation_unit(CostModel.abstract(loop(2, 2)), loop(2, 2))
        1.0
    """
    return float(exact_unit(costs, placement))


def exact_unit(costs: CostModel, placement: Placement) -> Fraction:
    """:func:`activation_unit` as an exact rational (a cap read in it is an exact multiple).

    Example:
        >>> from ppverify.core.placement import loop
        >>> exact_unit(CostModel.abstract(loop(2, 2)), loop(2, 2))
        Fraction(1, 1)
    """
    # With bytes the largest stage is the last, whose logits sit on it whatever its share: "v times
    # the largest stage" would count the logits v times, and the same plain cap would allow an
    # interleaved or V placement more bytes than a linear one (GPT-3 1.3B, V at p = 4: 12 % more).
    # One microbatch on a device's stages is the bytes a linear pipeline's device holds (its layers
    # plus the logits), the unit `design` compares every placement in. Abstract costs take the same
    # sum: with unequal shares (stages 0 | 1, 2) the average share read one cap as another than
    # presets did, and gave opposite verdicts on one file.
    acts = [exact_fraction(a) for a in costs.activation]
    return max(
        sum((acts[s] for pipe_s, s in placement.stages_on(d) if pipe_s == pipe), Fraction(0))
        for pipe in range(placement.num_pipes)
        for d in range(placement.p)
    )


def uneven_stages(costs: CostModel, placement: Placement) -> int | None:
    """Stages of one pipe on the device whose share is one activation (:func:`exact_unit`), where
    devices hold unequal numbers of stages; ``None`` where every device holds as many.

    Example:
        >>> from ppverify.core.placement import Placement, v_shape
        >>> pl = Placement(2, ((0, 1, 1),))
        >>> uneven_stages(CostModel.abstract(pl), pl), uneven_stages(CostModel.abstract(v_shape(2)), v_shape(2))
        (2, None)
    """
    held = [
        [s for pipe_s, s in placement.stages_on(d) if pipe_s == pipe]
        for pipe in range(placement.num_pipes)
        for d in range(placement.p)
    ]
    if len({len(h) for h in held}) == 1:
        return None
    acts = [exact_fraction(a) for a in costs.activation]
    # the largest share, and of equal shares the most stages (ties: the sum, not the count, converts)
    return max((sum((acts[s] for s in h), Fraction(0)), len(h)) for h in held)[1]
