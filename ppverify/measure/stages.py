"""The model a measured run trains: one small block per stage, deterministic from a seed.

Every stage is the same transformer-like block (LayerNorm, then a two-layer MLP with GELU, added
back to its input: a residual), in float64 so that gradients can be compared to 1e-8. The last
stage's output goes into a mean-squared-error loss against a fixed target. Stage ``s``'s weights
depend only on ``(seed, s)``, so every process (and both replicas of a two-pipe schedule) builds
identical copies, and the single-process reference (:mod:`.gradcheck`) is the same model.

``compute="real"`` uses a wider block (relative timing of real CPU work); ``compute="sleep"``
uses a tiny one whose arithmetic is negligible, and each op then sleeps its cost (see
:func:`sleep_remaining`), so the timing measures the schedule and the runtime rather than this
machine's cores.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

COMPUTE_MODES: tuple[str, ...] = ("sleep", "real")


@dataclass(frozen=True)
class ModelSpec:
    """Sizes of the per-stage block and of the batch: ``dim`` (model width), ``hidden`` (MLP
    width), ``mb_size`` (rows per microbatch) and the ``seed`` of weights and data.

    Example:
        >>> ModelSpec.for_compute("sleep").dim, ModelSpec.for_compute("real").dim
        (8, 64)
    """

    dim: int
    hidden: int
    mb_size: int
    seed: int = 0

    @staticmethod
    def for_compute(compute: str, seed: int = 0) -> ModelSpec:
        """The sizes used for ``compute`` (``sleep``: tiny; ``real``: small but real work).

        Example:
            >>> ModelSpec.for_compute("real", seed=3)
            ModelSpec(dim=64, hidden=256, mb_size=8, seed=3)
        """
        if compute == "sleep":
            return ModelSpec(8, 16, 2, seed)
        if compute == "real":
            return ModelSpec(64, 256, 8, seed)
        from ..core.errors import ParameterError

        raise ParameterError("compute", compute, f"expected one of {', '.join(COMPUTE_MODES)}")


def build_stage_module(spec: ModelSpec, stage: int) -> Any:
    """Stage ``stage``'s block (a ``torch.nn.Module``, float64), weights from ``(seed, stage)``.

    Example:
        >>> import torch
        >>> a, b = build_stage_module(ModelSpec(4, 8, 2), 1), build_stage_module(ModelSpec(4, 8, 2), 1)
        >>> all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
        True
        >>> [n for n, _ in a.named_parameters()]
        ['norm.weight', 'norm.bias', 'up.weight', 'up.bias', 'down.weight', 'down.bias']
    """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(spec.dim, dtype=torch.float64)
            self.up = nn.Linear(spec.dim, spec.hidden, dtype=torch.float64)
            self.down = nn.Linear(spec.hidden, spec.dim, dtype=torch.float64)

        def forward(self, x: Any) -> Any:
            return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))

    gen = torch.Generator().manual_seed(1_000_003 * spec.seed + 7919 * stage + 17)
    block = Block()
    with torch.no_grad():
        for name, p in block.named_parameters():
            # LayerNorm starts away from (1, 0) so its own gradients are exercised too
            scale = 0.1 if name.startswith("norm") else 1.0 / spec.dim**0.5
            base = 1.0 if name == "norm.weight" else 0.0
            p.copy_(base + scale * torch.randn(p.shape, generator=gen, dtype=torch.float64))
    return block


def make_batch(spec: ModelSpec, m: int) -> tuple[Any, Any]:
    """The whole step's input and target, ``m * mb_size`` rows each (split evenly by row into
    microbatches, as PyTorch's runtime splits them).

    Example:
        >>> x, y = make_batch(ModelSpec(4, 8, 2), 3)
        >>> tuple(x.shape), tuple(y.shape), str(x.dtype)
        ((6, 4), (6, 4), 'torch.float64')
    """
    import torch

    gen = torch.Generator().manual_seed(1_000_003 * spec.seed + 5)
    x = torch.randn(m * spec.mb_size, spec.dim, generator=gen, dtype=torch.float64)
    y = torch.randn(m * spec.mb_size, spec.dim, generator=gen, dtype=torch.float64)
    return x, y


def loss_fn(output: Any, target: Any) -> Any:
    """Mean-squared error of one microbatch (the runtime then divides the gradients by m).

    Example:
        >>> import torch
        >>> float(loss_fn(torch.ones(2, 2), torch.zeros(2, 2)))
        1.0
    """
    import torch

    return torch.nn.functional.mse_loss(output, target)


def sleep_remaining(start_ns: int, cost_s: float) -> None:
    """Sleep until ``cost_s`` seconds after ``start_ns`` (CLOCK_MONOTONIC), so that an op lasts
    its cost whatever small arithmetic it also did; no sleep when already late.

    Example:
        >>> t = time.monotonic_ns(); sleep_remaining(t, 0.002); time.monotonic_ns() - t >= 2_000_000
        True
    """
    if cost_s <= 0:
        return
    left = cost_s - (time.monotonic_ns() - start_ns) * 1e-9
    if left > 0:
        time.sleep(left)
