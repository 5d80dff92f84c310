"""The gradient check: every parameter gradient of every stage replica after a pipelined step
against one plain, single-process forward/backward of the same model on the same batch.

The reference chains the stage blocks (:mod:`.stages`) in one process, runs every microbatch
through them, and back-propagates ``sum over microbatches of loss(mb) / m``: exactly what
PyTorch's runtime computes (per-microbatch loss, gradients accumulated, then divided by m at
REDUCE_GRAD since ``scale_grads=True``). A two-pipe schedule's replicas start from identical
weights and sum their gradients, so each replica must match the same reference.

Everything is float64; a gradient matches when ``max |pipelined - reference| <= TOLERANCE``
(summation order differs between the two runs, which costs about 1e-16 relative).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

#: largest absolute difference allowed between a pipelined gradient and the reference (float64)
TOLERANCE = 1e-8


@dataclass(frozen=True)
class GradCheck:
    """The verdict: ``ok``, and for the worst parameter its ``stage``, ``pipe`` (replica),
    ``param`` name and ``max_abs_diff``; ``checked`` counts the gradients compared.

    Example:
        >>> GradCheck(False, 1, "up.weight", 0.5, 1e-8, pipe=0, checked=12).message
        'gradient MISMATCH: stage 1 parameter up.weight: max |pipelined - reference| = 0.5 > 1e-08'
        >>> GradCheck(True, None, None, 3e-17, 1e-8, checked=12).message
        'gradients match the single-process reference: 12 parameters, max |difference| 3e-17 <= 1e-08'
    """

    ok: bool
    stage: int | None
    param: str | None
    max_abs_diff: float
    tolerance: float
    pipe: int = 0
    checked: int = 0

    @property
    def message(self) -> str:
        """One line: the verdict, naming the stage and parameter on a mismatch."""
        if self.ok:
            return (
                f"gradients match the single-process reference: {self.checked} parameters, "
                f"max |difference| {self.max_abs_diff:.3g} <= {self.tolerance:g}"
            )
        where = f"stage {self.stage}" + (f" (pipe {self.pipe} replica)" if self.pipe else "")
        return (
            f"gradient MISMATCH: {where} parameter {self.param}: "
            f"max |pipelined - reference| = {self.max_abs_diff:.3g} > {self.tolerance:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form.

        Example:
            >>> sorted(GradCheck(True, None, None, 0.0, 1e-8).to_dict())
            ['checked', 'max_abs_diff', 'ok', 'param', 'pipe', 'stage', 'tolerance']
        """
        return {
            "ok": self.ok,
            "stage": self.stage,
            "pipe": self.pipe,
            "param": self.param,
            "max_abs_diff": self.max_abs_diff,
            "tolerance": self.tolerance,
            "checked": self.checked,
        }


def reference_grads(spec: Any, num_stages: int, m: int) -> dict[int, dict[str, np.ndarray]]:
    """Gradients of the plain (non-pipelined) model: ``reference[stage][param name]``.

    Example:
        >>> from ppverify.measure.stages import ModelSpec
        >>> ref = reference_grads(ModelSpec(4, 8, 2), 2, 3)
        >>> sorted(ref), ref[1]["up.weight"].shape
        ([0, 1], (8, 4))
    """
    import torch

    from .stages import build_stage_module, loss_fn, make_batch

    mods = [build_stage_module(spec, s) for s in range(num_stages)]
    x, y = make_batch(spec, m)
    total = None
    for xm, ym in zip(torch.tensor_split(x, m), torch.tensor_split(y, m)):
        h = xm
        for mod in mods:
            h = mod(h)
        loss = loss_fn(h, ym)
        total = loss if total is None else total + loss
    assert total is not None  # m >= 1: tensor_split gave at least one microbatch
    (total / m).backward()
    return {s: {n: p.grad.detach().numpy().copy() for n, p in mod.named_parameters()} for s, mod in enumerate(mods)}


def check(
    grads: Mapping[tuple[int, int], Mapping[str, Any]],
    reference: Mapping[int, Mapping[str, np.ndarray]],
    tolerance: float = TOLERANCE,
) -> GradCheck:
    """Compare pipelined gradients ``grads[(pipe, stage)][name]`` (``None`` = never computed)
    with the reference; the verdict names the worst parameter of the first mismatching stage
    (stages in order), or the overall largest difference when all match.

    Example:
        >>> ref = {0: {"w": np.array([1.0, 2.0])}, 1: {"w": np.array([0.5])}}
        >>> check({(0, 0): {"w": np.array([1.0, 2.0])}, (0, 1): {"w": np.array([0.5])}}, ref).ok
        True
        >>> bad = check({(0, 0): {"w": np.array([1.0, 2.0])}, (0, 1): {"w": np.array([2.0])}}, ref)
        >>> bad.ok, bad.stage, bad.param, bad.max_abs_diff
        (False, 1, 'w', 1.5)
    """
    worst: tuple[float, int | None, str | None, int] = (0.0, None, None, 0)  # (diff, stage, param, pipe)
    checked = 0
    for pipe, stage in sorted(grads, key=lambda k: (k[1], k[0])):
        got = grads[(pipe, stage)]
        stage_worst: tuple[float, str | None] = (0.0, None)
        for name, want in reference[stage].items():
            g = got.get(name)
            diff = float("inf") if g is None else float(np.max(np.abs(np.asarray(g) - want))) if want.size else 0.0
            checked += 1
            if diff > stage_worst[0] or stage_worst[1] is None:
                stage_worst = (diff, name)
        if stage_worst[0] > tolerance:
            return GradCheck(False, stage, stage_worst[1], stage_worst[0], tolerance, pipe, checked)
        if stage_worst[0] >= worst[0]:
            worst = (stage_worst[0], stage, stage_worst[1], pipe)
    missing = sorted(set(reference) - {s for _, s in grads})
    if missing:
        return GradCheck(
            False, missing[0], "(every parameter: no rank holds this stage)", float("inf"), tolerance, 0, checked
        )
    return GradCheck(True, None, None, worst[0], tolerance, 0, checked)
