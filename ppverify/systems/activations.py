"""The bytes one transformer layer keeps from its forward for its backward, tensor by tensor.

Korthikanti et al. ("Reducing Activation Recomputation in Large Transformer Models", MLSys 2023,
arXiv 2205.05198, Section 4.1) count GPT's layer for 2-byte elements and 1-byte dropout masks:
attention ``11sbh + 5as^2b``, MLP ``19sbh``, the two LayerNorms ``4sbh``, in all
``sbh(34 + 5as/h)``. Their count assumes a 4h MLP without a gate, full multi-head attention and
dropout after the attention softmax, after the attention block and after the MLP. The list below
follows their accounting tensor by tensor, with the architecture as parameters: key/value width
``h_kv = h * kv_heads / a`` (grouped-query attention), FFN size f, a gated (SwiGLU) MLP or not,
dropout or not, d-byte elements. Each tensor is sized per token (``s*b*width`` elements) or, for
the attention scores, per query head and token pair (``a*s^2*b``). In units of ``s*b*h`` bytes,
with r = h_kv/h and δ = 1 with dropout, 0 without:

* dense: ``d*(6 + 2r + k*f/h) + 2δ``, k = 2 (GeLU MLP) or 4 (gated MLP);
* score: ``(d + δ*(d + 1)) * a*s/h``, none with flash attention.

GPT-3 (r = 1, f = 4h, k = 2, δ = 1) gives Korthikanti's ``16d + 2`` and ``(2d + 1)as/h``, i.e.
``34 + 5as/h`` at d = 2. Llama 2 7B (r = 1, f = 11008, h = 4096, gated, δ = 0) gives
``2*(8 + 4*11008/4096) = 37.5`` and ``2as/h``. Tensor parallelism with sequence parallelism
divides every term by t (the caller's business). Per-token statistics of the norms (s*b floats)
and flash attention's softmax log-sum-exp (a*s*b floats) are left out, as Korthikanti et al. do.

The input gradient ``I`` frees what only it reads (Qi et al., "Zero Bubble Pipeline Parallelism",
ICLR 2024, arXiv 2401.10241: ``2h + 5as`` of GPT's ``34h + 5as``): the dropout masks and the
attention-score tensors; the weight gradient ``W`` frees the rest.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SavedTensor:
    """One tensor a layer keeps for its backward: ``element_bytes`` per element, ``width``
    elements per token (``s*b*width`` in all) or, when ``scores``, ``width`` query heads of an
    ``s x s`` score matrix per sequence (``width*s*s*b``); ``freed_by_I`` when only the input
    gradient reads it.

    Example:
        >>> SavedTensor("query", 4096, 2).element_bytes * 4096
        8192
    """

    name: str
    width: int
    element_bytes: int
    scores: bool = False
    freed_by_I: bool = False


def saved_tensors(
    hidden: int, heads: int, kv_heads: int, ffn: int, gated: bool, dropout: bool, dtype_bytes: int
) -> tuple[SavedTensor, ...]:
    """The tensors one layer keeps for its backward (before tensor parallelism), Korthikanti et
    al.'s Section 4.1 generalised: ``kv_heads`` key/value heads, a gated MLP or not, dropout or
    not, ``dtype_bytes`` per element (a dropout mask is 1 byte).

    Example:
        >>> gpt = saved_tensors(2048, 16, 16, 8192, False, True, 2)
        >>> sum(t.width * t.element_bytes for t in gpt if not t.scores) == 34 * 2048
        True
        >>> sum(t.width * t.element_bytes for t in gpt if t.scores) == 5 * 16
        True
    """
    h, d, f = hidden, dtype_bytes, ffn
    kv = hidden * kv_heads // heads
    out = [
        # attention block: the norm's backward reads its input (LayerNorm and RMSNorm alike)
        SavedTensor("attention norm input", h, d),
        # the Q, K and V projections share one input (the norm's output), for their weight gradients
        SavedTensor("QKV projection input", h, d),
        # Q K^T reads both factors (after a rotary embedding, whose backward needs no activation);
        # grouped-query attention keeps kv_heads keys, not a
        SavedTensor("query", h, d),
        SavedTensor("key", kv, d),
        # softmax's backward reads its output: one s x s matrix per query head
        SavedTensor("softmax output", heads, d, scores=True, freed_by_I=True),
    ]
    if dropout:
        # the dropout after the softmax keeps its 1-byte mask, and the product with V reads the
        # dropped-out probabilities (without dropout it reads the softmax output, counted above)
        out += [
            SavedTensor("attention dropout mask", heads, 1, scores=True, freed_by_I=True),
            SavedTensor("attention dropout output", heads, d, scores=True, freed_by_I=True),
        ]
    out += [
        # the probabilities' product with V reads V
        SavedTensor("value", kv, d),
        # the output projection reads the heads' context, for its weight gradient
        SavedTensor("output projection input", h, d),
    ]
    if dropout:
        out.append(SavedTensor("attention output dropout mask", h, 1, freed_by_I=True))
    # MLP block
    out.append(SavedTensor("MLP norm input", h, d))
    if gated:
        # SwiGLU, down(silu(gate(x)) * up(x)): gate and up share their input x; SiLU's backward
        # reads its input (the gate output); the product's backward reads both factors (the SiLU
        # output and the up output); the down projection reads the product
        out += [
            SavedTensor("gate/up projection input", h, d),
            SavedTensor("gate output (SiLU input)", f, d),
            SavedTensor("SiLU output", f, d),
            SavedTensor("up output", f, d),
            SavedTensor("product (down projection input)", f, d),
        ]
    else:
        # GeLU MLP: the first linear reads its input, GeLU its input, the second linear GeLU's output
        out += [
            SavedTensor("first linear input", h, d),
            SavedTensor("GeLU input", f, d),
            SavedTensor("second linear input (GeLU output)", f, d),
        ]
    if dropout:
        out.append(SavedTensor("MLP dropout mask", h, 1, freed_by_I=True))
    return tuple(out)


@dataclass(frozen=True)
class LayerActivation:
    """One layer's activation bytes in units of ``s*b*h``: ``dense`` (the per-token tensors),
    ``score`` (the attention-score tensors, 0 with flash attention) and ``freed`` (the part of
    ``dense + score`` that the input gradient frees).

    Example:
        >>> la = LayerActivation(34.0, 160.0, 162.0)
        >>> la.bytes(2048, 1, 12288) == 2048 * 12288 * 194, la.freed_fraction()
        (True, 0.8350515463917526)
    """

    dense: float
    score: float
    freed: float

    def bytes(self, s: int, b: int, h: int) -> float:
        """Bytes of one layer for one microbatch (before tensor parallelism)."""
        return s * b * h * (self.dense + self.score)

    def freed_fraction(self) -> float:
        """The fraction of :meth:`bytes` the input gradient frees."""
        return self.freed / (self.dense + self.score)


def layer_activation(
    tensors: tuple[SavedTensor, ...], hidden: int, seq_len: int, flash_attention: bool
) -> LayerActivation:
    """Sum ``tensors`` into units of ``s*b*h`` for sequence length ``seq_len``; flash attention
    keeps none of the score tensors (it recomputes them in the backward).

    Summed as integers first and scaled once (``dense = bytes per token / h``,
    ``score = bytes per score element * s / h``), so GPT-3's ``16d + 2`` and ``(2d + 1)*a*s/h``
    come out as the very floats Korthikanti's formula gives.

    Example:
        >>> ts = saved_tensors(4096, 32, 32, 11008, True, False, 2)  # Llama 2 7B
        >>> la = layer_activation(ts, 4096, 4096, False)
        >>> la.dense, la.score, la.freed
        (37.5, 64.0, 64.0)
    """
    h, s = hidden, seq_len
    dense = sum(t.width * t.element_bytes for t in tensors if not t.scores) / h
    freed_dense = sum(t.width * t.element_bytes for t in tensors if not t.scores and t.freed_by_I) / h
    per_score = sum(t.width * t.element_bytes for t in tensors if t.scores)
    per_freed_score = sum(t.width * t.element_bytes for t in tensors if t.scores and t.freed_by_I)
    score = 0.0 if flash_attention else float(per_score) * s / h
    freed_score = 0.0 if flash_attention else float(per_freed_score) * s / h
    return LayerActivation(dense, score, freed_dense + freed_score)
