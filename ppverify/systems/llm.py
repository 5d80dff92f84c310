"""LLM presets and the one derivation from (model, device, training setup) to a per-stage
:class:`~ppverify.core.costs.CostModel` in seconds and bytes.

Formulas (FLOPs: Narayanan et al., SC'21, arXiv 2104.04473; activations: Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models", MLSys'23, arXiv 2205.05198), for
microbatch size b, sequence length s, hidden h, heads a, key/value width h_kv, FFN size f,
vocabulary V, tensor-parallel size t:

* forward FLOPs of one layer: ``2*b*s*(h*(h + 2*h_kv) + h*h + k*h*f)`` for the matmuls (k = 2, or
  3 for a gated MLP; ``h_kv = h * kv_heads / a``) plus ``4*b*s*s*h`` for attention scores and values
  (GPT-3: ``24*b*s*h^2 + 4*b*s^2*h``). The output head adds ``2*b*s*h*V`` on the last stage.
* backward = 2 x forward, split into ``I`` (input gradient: the matmuls once, attention's
  score/value products twice since they have no weights) and ``W`` (weight gradient: the matmuls
  once). Full recomputation (``recompute``) adds the layers' forward to ``I`` (so tB = 3 tF on a
  stage without the head); the head is not recomputed, since its logits are kept (below), so a
  microbatch of a GPT-3-shaped model of l layers costs ``96*b*s*l*h^2*(1 + s/(6h) + V/(16*l*h))``
  over all stages, Narayanan et al.'s F.
* time = FLOPs / t / (peak FLOP/s x MFU).
* boundary bytes: ``b*s*h`` elements of ``dtype_bytes`` (divided by t under sequence parallelism).
* activations per microbatch and layer: the tensors the layer keeps for its backward, counted
  one by one after Korthikanti et al. 2022 (arXiv 2205.05198, Section 4.1, with sequence
  parallelism, so divided by t) with the architecture as parameters
  (:mod:`ppverify.systems.activations`): in units of ``s*b*h`` bytes, with d = ``dtype_bytes``,
  r = h_kv/h, δ = 1 with dropout (1-byte masks) and 0 without, ``d*(6 + 2r + k*f/h) + 2δ``
  (k = 2 for a GeLU MLP, 4 for a gated one: gate output, SiLU output, up output, product) plus
  ``(d + δ*(d + 1))*a*s/h`` for the attention scores. GPT-3 (r = 1, f = 4h, dropout):
  ``s*b*h*(16d + 2 + (2d + 1)*a*s/h) / t``, Korthikanti's ``s*b*h*(34 + 5*a*s/h) / t`` at d = 2.
  Llama 2 7B (SwiGLU f = 11008, no dropout) at d = 2: ``s*b*h*(37.5 + 2*a*s/h) / t``. The
  ``a*s/h`` term vanishes with flash attention; full recomputation keeps only the layer input,
  ``d*s*b*h / t``.
  The last stage also holds the fp32 logits, ``4*s*b*V / t``. ``I`` frees the dropout masks and
  the attention-score tensors (zero-bubble memory model, Qi et al. 2024: ``(2h + 5as)/(34h + 5as)``
  for GPT-3 at d = 2, ``2/34`` with flash attention; ``2as/(37.5h + 2as)`` for Llama 2 7B, none
  with flash attention), ``W`` the rest.
* weights + gradients + optimizer state: ``state_bytes_per_param`` per parameter (16 for
  mixed-precision Adam: bf16 weights and gradients, fp32 master weights, momentum and variance;
  Rajbhandari et al. 2020), divided by t. The embedding sits on the first stage (a learned
  position table of max(s, the model's context) rows), the final norm and output head on the last
  (a tied head is a second copy there, as in Megatron, unless the last stage runs on the first
  stage's device, as in V-shape placements).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from ..core.costs import CostModel
from ..core.errors import ParameterError
from ..core.ops import KINDS
from .activations import LayerActivation, SavedTensor, layer_activation, saved_tensors
from .presets import read_preset


@dataclass(frozen=True)
class LLM:
    """A transformer's public configuration (see ``models/llms/*.yaml``).

    Example:
        >>> m = load_llm("gpt3-175b")
        >>> round(m.total_params() / 1e9, 1)
        174.6
    """

    name: str
    layers: int
    hidden_size: int
    attention_heads: int
    ffn_hidden_size: int
    vocab_size: int
    seq_len: int
    kv_heads: int | None = None
    gated_mlp: bool = False
    tied_embeddings: bool = True
    learned_position_embeddings: bool = False
    biases: bool = True
    #: attention and hidden dropout in training (GPT-3 as Megatron-LM trains it); with it a layer
    #: keeps 1-byte masks and the dropped-out attention probabilities for the backward
    dropout: bool = True
    description: str = ""
    source: str = ""

    @property
    def kv_dim(self) -> int:
        """Width of the key (= value) projection: ``h * kv_heads / heads``."""
        kv = self.kv_heads or self.attention_heads
        return self.hidden_size * kv // self.attention_heads

    def layer_params(self) -> int:
        """Parameters of one transformer layer (attention, MLP, two norms).

        Example:
            >>> load_llm("llama2-7b").layer_params()
            202383360
        """
        h, f, kv = self.hidden_size, self.ffn_hidden_size, self.kv_dim
        attn = h * (h + 2 * kv) + h * h + ((h + 2 * kv) + h if self.biases else 0)
        mlp = (3 if self.gated_mlp else 2) * h * f + ((f + h) if self.biases else 0)
        norms = 2 * (2 * h if self.biases else h)
        return attn + mlp + norms

    def embedding_params(self, seq_len: int | None = None) -> int:
        """Token (and learned position) embedding: on the first stage. A learned position table
        has a row per position up to ``seq_len`` (trained longer than the model's context, it
        grows to the training length).

        Example:
            >>> m = load_llm("gpt3-1.3b")
            >>> m.embedding_params() == (50257 + 2048) * 2048, m.embedding_params(4096) == (50257 + 4096) * 2048
            (True, True)
        """
        rows = max(self.seq_len, seq_len or 0)
        return self.vocab_size * self.hidden_size + (rows * self.hidden_size if self.learned_position_embeddings else 0)

    def head_params(self, separate_copy: bool = True) -> int:
        """Final norm plus output projection: on the last stage (a tied projection is a copy when
        first and last stage differ, ``separate_copy``)."""
        h = self.hidden_size
        norm = 2 * h if self.biases else h
        proj = self.vocab_size * h if (not self.tied_embeddings or separate_copy) else 0
        return norm + proj

    def total_params(self) -> int:
        """Parameters of the model (a tied head counted once)."""
        return self.layers * self.layer_params() + self.embedding_params() + self.head_params(separate_copy=False)

    def layer_flops(self, b: int, s: int) -> tuple[float, float]:
        """``(matmul FLOPs, attention score/value FLOPs)`` of one layer's forward.

        Example:
            >>> mm, at = load_llm("gpt3-13b").layer_flops(1, 2048)
            >>> mm == 24 * 2048 * 5120**2, at == 4 * 2048**2 * 5120
            (True, True)
        """
        h, f, kv = self.hidden_size, self.ffn_hidden_size, self.kv_dim
        mm = 2.0 * b * s * (h * (h + 2 * kv) + h * h + (3 if self.gated_mlp else 2) * h * f)
        return mm, 4.0 * b * s * s * h

    def saved_tensors(self, dtype_bytes: int = 2) -> tuple[SavedTensor, ...]:
        """The tensors one layer keeps for its backward (:mod:`ppverify.systems.activations`).

        Example:
            >>> ts = load_llm("llama2-70b").saved_tensors()
            >>> sum(t.width * t.element_bytes for t in ts if not t.scores)  # bytes per token
            331776
        """
        return saved_tensors(
            self.hidden_size,
            self.attention_heads,
            self.kv_heads or self.attention_heads,
            self.ffn_hidden_size,
            self.gated_mlp,
            self.dropout,
            dtype_bytes,
        )


def load_llm(name_or_path: str) -> LLM:
    """Load an LLM preset (a shipped name or a ``.yaml`` path).

    Example:
        >>> load_llm("llama2-70b").kv_dim
        1024
    """
    label, d = read_preset("llms", name_or_path)
    name = label.split("/")[-1].rsplit(".", 1)[0]
    from .presets import PresetError

    if d["hidden_size"] % d["attention_heads"]:
        raise PresetError(label, "hidden_size", f"must be divisible by attention_heads ({d['attention_heads']})")
    if d["kv_heads"] is not None and d["attention_heads"] % d["kv_heads"]:
        # grouped-query attention: each key/value head serves a whole group of query heads
        raise PresetError(
            label, "kv_heads", f"must divide attention_heads ({d['attention_heads']}), got {d['kv_heads']}"
        )
    return LLM(
        name,
        d["layers"],
        d["hidden_size"],
        d["attention_heads"],
        d["ffn_hidden_size"],
        d["vocab_size"],
        d["seq_len"],
        d["kv_heads"],
        d["gated_mlp"],
        d["tied_embeddings"],
        d["learned_position_embeddings"],
        d["biases"],
        d["dropout"],
        d["description"],
        d["source"],
    )


@dataclass(frozen=True)
class Training:
    """How the model is trained: microbatch size, sequence length (default: the model's), MFU,
    tensor-parallel size, recomputation, flash attention, bytes per element (``dtype_bytes``: of
    the boundary activations and of the stored activations, dropout masks aside) and per parameter,
    and an optional explicit ``layers_per_stage`` split.

    Example:
        >>> Training(mfu=0.5).mfu
        0.5
    """

    microbatch_size: int = 1
    seq_len: int | None = None
    mfu: float = 0.4
    tp: int = 1
    recompute: bool = False
    flash_attention: bool = False
    dtype_bytes: int = 2
    state_bytes_per_param: float = 16.0
    grad_bytes_per_param: float = 2.0
    layers_per_stage: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not 0 < self.mfu <= 1:
            raise ParameterError("mfu", self.mfu, "must be a fraction in (0, 1]")
        for name in ("microbatch_size", "tp", "dtype_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ParameterError(name.replace("_", "-"), v, "must be an integer >= 1")
        if self.seq_len is not None and self.seq_len < 1:
            raise ParameterError("seq-len", self.seq_len, "must be an integer >= 1")
        if not self.state_bytes_per_param > 0 or not 0 <= self.grad_bytes_per_param <= self.state_bytes_per_param:
            raise ParameterError(
                "state_bytes_per_param", self.state_bytes_per_param, "must be > 0 and at least grad_bytes_per_param"
            )


def split_layers(layers: int, stages: int) -> tuple[int, ...]:
    """Default split of ``layers`` over ``stages``: equal shares, the remainder going to the
    middle stages first (the first stage also holds the embedding, the last the output head).

    Example:
        >>> split_layers(24, 8), split_layers(24, 5), split_layers(3, 2)
        ((3, 3, 3, 3, 3, 3, 3, 3), (5, 5, 5, 5, 4), (2, 1))
    """
    if layers < stages:
        raise ParameterError(
            "stages", stages, f"the model has only {layers} layers; give --layers-per-stage to allow empty stages"
        )
    base, extra = divmod(layers, stages)
    out = [base] * stages
    order = list(range(1, stages - 1)) + [0, stages - 1]
    for s in order[:extra]:
        out[s] += 1
    return tuple(out)


@dataclass(frozen=True)
class StageCosts:
    """Per-stage quantities of one model split over ``S`` stages (seconds, bytes, FLOPs).

    Example:
        >>> from ppverify.systems.system import load_system
        >>> sc = stage_costs(load_llm("gpt3-1.3b"), load_system("dgx-h100").peak_flops, 8, Training())
        >>> sc.layers, round(sc.duration["F"][1] * 1e3, 3)
        ((3, 3, 3, 3, 3, 3, 3, 3), 1.824)
    """

    model: str
    layers: tuple[int, ...]
    params: tuple[int, ...]
    flops: dict[str, tuple[float, ...]]
    duration: dict[str, tuple[float, ...]]
    activation: tuple[float, ...]
    freed_by_I: tuple[float, ...]
    boundary_bytes: tuple[float, ...]
    weight_bytes: tuple[float, ...]
    grad_bytes: tuple[float, ...]
    label: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    def cost_model(self) -> CostModel:
        """The :class:`CostModel` (seconds, bytes) engines consume.

        ``extra["grad_fraction"]`` is gradient bytes / weight bytes, which the engines use to size
        replica and data-parallel all-reduces from ``weight_bytes``.
        """
        frac = self.grad_bytes[0] / self.weight_bytes[0] if self.weight_bytes and self.weight_bytes[0] else 0.0
        return CostModel(
            duration=self.duration,
            activation=self.activation,
            freed_by_I=self.freed_by_I,
            boundary_bytes=self.boundary_bytes,
            weight_bytes=self.weight_bytes,
            time_unit="s",
            memory_unit="bytes",
            label=self.label,
            extra={"grad_fraction": frac, **self.extra},
        )


def last_stage_freed(layer_bytes: float, stage_bytes: float, layer: LayerActivation) -> float:
    """The fraction of the last stage's activation that ``I`` frees: the layers' own fraction of
    their ``layer_bytes``, none of the logits (the rest of ``stage_bytes``). Rounded down to a
    multiple of 2^-19 (under 0.0002 % of the stage), so that no peak is under-stated: the fraction
    of layers and logits is a ratio of large integers, and memory is counted exactly in rationals
    of small denominators (:func:`ppverify.core.costs.scaled_memory_deltas`), which a denominator
    of a million or more would carry past the solver's 64-bit integers; a binary fraction reads
    back exactly.

    Example:
        >>> from ppverify.systems.activations import LayerActivation
        >>> la = LayerActivation(34.0, 80.0, 82.0)  # GPT-3 1.3B at s = 2048: 82 of 114 sbh freed
        >>> f = last_stage_freed(6 * 114.0, 6 * 114.0 + 98.0, la)  # 6 layers and the logits (4V/h)
        >>> f * 2**19 == round(f * 2**19), 0 <= 6 * 82 / (6 * 114 + 98) - f < 2**-19
        (True, True)
    """
    if not stage_bytes > 0:
        return 0.0
    # rounded down, never to nearest: freeing a hair more than the layers free would put each
    # peak after an I under its exact bytes, and a byte cap just under it would be proved
    exact = Fraction(layer_bytes) * Fraction(layer.freed) / (Fraction(layer.dense) + Fraction(layer.score))
    return math.floor(exact / Fraction(stage_bytes) * 2**19) / 2**19


def stage_costs(
    llm: LLM, peak_flops: float, stages: int, training: Training, head_with_embedding: bool = False
) -> StageCosts:
    """Derive every per-stage cost of ``llm`` split into ``stages`` stages on a device of
    ``peak_flops`` FLOP/s (see the module doc for the formulas). ``head_with_embedding``: the
    last stage runs on the first stage's device (a V-shape placement), so a tied head uses the
    embedding's weights there instead of a copy.

    Example:
        >>> sc = stage_costs(load_llm("gpt3-13b"), 989e12, 4, Training())
        >>> sc.boundary_bytes[0] == 2048 * 5120 * 2, sc.duration["B"][1] == 2 * sc.duration["F"][1]
        (True, True)
    """
    t = training
    if stages < 1:
        raise ParameterError("stages", stages, "must be >= 1")
    groups = llm.kv_heads or llm.attention_heads
    if llm.attention_heads % t.tp or groups % t.tp:  # tp=3 of 16 heads, tp=1024: no rank holds whole heads
        kv = f" and {groups} key/value heads" if groups != llm.attention_heads else ""
        raise ParameterError(
            "tp",
            t.tp,
            f"must divide the model's {llm.attention_heads} attention heads{kv} (tensor parallelism splits "
            "whole heads across its ranks)",
        )
    if t.layers_per_stage is not None:
        lps = tuple(t.layers_per_stage)
        if len(lps) != stages or any(x < 0 for x in lps) or sum(lps) != llm.layers:
            raise ParameterError(
                "layers-per-stage",
                ",".join(map(str, lps)),
                f"need {stages} non-negative counts summing to the model's {llm.layers} layers",
            )
    else:
        lps = split_layers(llm.layers, stages)
    b, s, h, V = t.microbatch_size, t.seq_len or llm.seq_len, llm.hidden_size, llm.vocab_size
    rate = peak_flops * t.mfu * t.tp  # FLOP/s of the t devices sharing one stage
    mm, attn = llm.layer_flops(b, s)
    head = 2.0 * b * s * h * V
    fl: dict[str, list[float]] = {k: [] for k in KINDS}
    act, freed, params = [], [], []
    d = t.dtype_bytes
    # the tensors one layer keeps for its backward, in units of s*b*h (see activations.py): GPT-3
    # gives Korthikanti et al.'s sbh(16d + 2) + as^2b(2d + 1), Llama 2 no dropout and a SwiGLU MLP
    layer = layer_activation(llm.saved_tensors(d), h, s, t.flash_attention)
    for st, n in enumerate(lps):
        last = st == stages - 1
        f = n * (mm + attn) + (head if last else 0.0)
        i = n * (mm + 2 * attn) + (head if last else 0.0)
        w = n * mm + (head if last else 0.0)
        if t.recompute:
            # the layers' forward again; the head is not recomputed (its logits are kept, see the
            # activations below), so F + B = 4 layer forwards + 3 heads (Narayanan et al., F)
            i += n * (mm + attn)
        fl["F"].append(f)
        fl["I"].append(i)
        fl["W"].append(w)
        fl["B"].append(i + w)
        per_layer = d * s * b * h if t.recompute else layer.bytes(s, b, h)
        a_bytes = (n * per_layer + (4.0 * s * b * V if last else 0.0)) / t.tp
        act.append(a_bytes)
        # I frees what only the input gradient reads: the dropout masks (the 2h of Qi et al.'s
        # 2h + 5as; none without dropout) and the attention-score tensors, of the layers only: the
        # logits' bytes stay until W, their gradient (as large) being what the head's W reads
        if t.recompute:
            freed.append(0.0)
        else:
            freed.append(last_stage_freed(n * per_layer, a_bytes * t.tp, layer) if last else layer.freed_fraction())
        pr = (
            n * llm.layer_params()
            + (llm.embedding_params(s) if st == 0 else 0)
            + (llm.head_params(separate_copy=stages > 1 and not head_with_embedding) if last else 0)
        )
        params.append(pr)
    dur = {k: tuple(x / rate for x in v) for k, v in fl.items()}
    boundary = (float(b * s * h * t.dtype_bytes) / t.tp,) * (stages - 1)
    label = (
        f"{llm.name}, b={b}, s={s}, mfu={t.mfu:g}"
        + (f", tp={t.tp}" if t.tp > 1 else "")
        + (", recompute" if t.recompute else "")
        + (", flash-attention" if t.flash_attention else "")
    )
    return StageCosts(
        llm.name,
        lps,
        tuple(params),
        {k: tuple(v) for k, v in fl.items()},
        dur,
        tuple(act),
        tuple(freed),
        boundary,
        tuple(p * t.state_bytes_per_param / t.tp for p in params),
        tuple(p * t.grad_bytes_per_param / t.tp for p in params),
        label,
    )


def llm_cost_model(llm: LLM | str, peak_flops: float, stages: int, training: Training | None = None) -> CostModel:
    """Shortcut: ``stage_costs(...).cost_model()``; ``llm`` may be a preset name.

    Example:
        >>> c = llm_cost_model("gpt3-1.3b", 989e12, 8)
        >>> c.time_unit, c.memory_unit, len(c.boundary_bytes)
        ('s', 'bytes', 7)
    """
    model = load_llm(llm) if isinstance(llm, str) else llm
    return stage_costs(model, peak_flops, stages, training or Training()).cost_model()
