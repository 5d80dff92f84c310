"""Memory models for the optimizer: how much of an activation the input-gradient ``I`` frees, and
how many bytes one stage's activation ``M_F`` is (a cap given as a size, ``64GiB``, is read with it
by :func:`ppverify.core.memory_cap.parse_memory_cap`, the parser every command shares).

The zero-bubble model (Qi et al., ICLR'24, arXiv 2401.10241) counts, per
transformer layer and per sample-token row, ``F`` allocating ``34h + 5as`` bytes, ``I`` freeing
``2h + 5as`` and ``W`` freeing the remaining ``32h``. Only the ratio matters for a cap counted in
activations; a cap in bytes also needs the microbatch size ``b``, the sequence length ``s`` and the
layers per stage.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction

from ..core.costs import CostModel
from ..core.errors import ParameterError


@dataclass(frozen=True)
class MemoryModel:
    """How activations are freed: ``I`` frees ``freed_by_I`` of them, ``W`` (or ``B``) the rest.

    ``alloc_per_row``/``freed_by_I_per_row`` are the exact integer byte counts per layer and
    sample-token row when the model has them (used for exact integer memory in the solver);
    ``bytes_per_activation`` is ``M_F`` in bytes (``None`` when unknown).

    Example:
        >>> zb = zero_bubble(h=2304, a=24, s=1024)
        >>> zb.alloc_per_row, zb.freed_by_I_per_row, round(float(zb.freed_by_I), 4)
        (201216, 127488, 0.6336)
    """

    name: str
    freed_by_I: Fraction
    alloc_per_row: int | None = None
    freed_by_I_per_row: int | None = None
    bytes_per_activation: float | None = None

    def apply(self, costs: CostModel) -> CostModel:
        """The same cost model with this model's ``freed_by_I`` on every stage.

        Example:
            >>> from ppverify.core.placement import linear
            >>> zero_bubble(2304, 24, 1024).apply(CostModel.abstract(linear(2))).freed_by_I[0] > 0.63
            True
        """
        return dataclasses.replace(costs, freed_by_I=(float(self.freed_by_I),) * costs.num_stages)


def zb_settings() -> list[dict[str, int]]:
    """The zero-bubble paper's profiled settings shipped in ``ppverify/data/zb_settings.csv`` (its
    header states their provenance): one dict of integers per row, times in microseconds.

    Example:
        >>> row = zb_settings()[0]
        >>> row["p"], row["m"], row["f"], row["h"]
        (8, 24, 18522, 2304)
    """
    import csv
    from importlib import resources

    text = resources.files("ppverify").joinpath("data/zb_settings.csv").read_text()
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return [{k: int(v) for k, v in row.items()} for row in csv.DictReader(lines)]


def zero_bubble(h: int, a: int, s: int, b: int = 1, layers: int = 1) -> MemoryModel:
    """The zero-bubble paper's model at hidden size ``h``, heads ``a``, sequence ``s``.

    ``M_F`` in bytes is ``layers * b * s * (34h + 5as)`` (Korthikanti et al., "Reducing Activation
    Recomputation in Large Transformer Models", MLSys 2023, arXiv 2205.05198; bf16, no
    recomputation), with ``layers`` the transformer layers of one stage.

    Example:
        >>> zero_bubble(h=2304, a=24, s=1024, layers=2).bytes_per_activation
        412090368.0
        >>> zero_bubble(h=2304, a=24, s=1024, b=2, layers=6).name, zero_bubble(h=2304, a=24, s=1024).name
        ('zero-bubble(h=2304,a=24,s=1024,b=2,layers=6)', 'zero-bubble(h=2304,a=24,s=1024)')
    """
    for name, val in (("h", h), ("a", a), ("s", s), ("b", b), ("layers", layers)):
        if not isinstance(val, int) or val < 1:
            raise ParameterError(f"memory-model {name}", val, "must be an integer >= 1")
    alloc = 34 * h + 5 * a * s
    freed_i = 2 * h + 5 * a * s
    # b and layers scale the bytes only; named where not 1, so the label says which size was meant
    extra = "".join(f",{k}={v}" for k, v in (("b", b), ("layers", layers)) if v != 1)
    return MemoryModel(
        f"zero-bubble(h={h},a={a},s={s}{extra})",
        Fraction(freed_i, alloc),
        alloc,
        freed_i,
        float(layers * b * s * alloc),
    )


#: ``--memory-model`` default (issue 5): the zero-bubble model at the paper's 1.5B setting
DEFAULT_MEMORY_MODEL = "zero-bubble:h=2304,a=24,s=1024"


def parse_memory_model(text: str) -> MemoryModel:
    """Parse ``--memory-model``: ``zero-bubble[:h=..,a=..,s=..,b=..,layers=..]``, ``w-frees-all``
    (I frees nothing, W frees the whole activation) or ``i-frees=FRACTION``.

    Example:
        >>> parse_memory_model("zero-bubble:h=4096,a=32,s=2048").alloc_per_row
        466944
        >>> parse_memory_model("i-frees=0.5").freed_by_I
        Fraction(1, 2)
        >>> parse_memory_model("zero-bubble").bytes_per_activation is None  # a stage's layers unknown
        True
        >>> parse_memory_model("zero-bubble:layers=6").bytes_per_activation  # 6 * 1024 * (34h + 5as)
        1236271104.0
        >>> parse_memory_model("magic")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-model=magic: expected zero-bubble[:h=H,a=A,s=S,b=B,layers=L], w-frees-all or i-frees=FRACTION
    """
    rule = "expected zero-bubble[:h=H,a=A,s=S,b=B,layers=L], w-frees-all or i-frees=FRACTION"
    t = text.strip().lower()
    if t in ("w-frees-all", "none"):
        return MemoryModel("w-frees-all", Fraction(0))
    if t.startswith("i-frees="):
        try:
            frac = Fraction(t.split("=", 1)[1]).limit_denominator(10**6)
        except ValueError:
            raise ParameterError("memory-model", text, rule) from None
        if not 0 <= frac <= 1:
            raise ParameterError("memory-model", text, "the fraction I frees must be in [0, 1]")
        return MemoryModel(f"i-frees={float(frac):g}", frac)
    name, _, rest = t.partition(":")
    if name not in ("zero-bubble", "zb"):
        raise ParameterError("memory-model", text, rule)
    args = {"h": 2304, "a": 24, "s": 1024, "b": 1, "layers": 1}
    seen: set[str] = set()
    for part in filter(None, (x.strip() for x in rest.split(","))):
        key, sep, val = part.partition("=")
        if not sep or key not in args or not val.strip().isdigit():
            raise ParameterError("memory-model", text, f"bad setting {part!r}; {rule}")
        if key in seen:  # the last one silently won
            raise ParameterError("memory-model", text, f"{key} is given twice; give each setting once")
        seen.add(key)
        args[key] = int(val)
    model = zero_bubble(**args)
    # M_F in bytes needs the layers of one stage: without layers= a size would be read as one
    # layer's bytes (1GiB as 5.2 activations at the default h, a, s), unlike the default model
    return model if "layers" in seen else dataclasses.replace(model, bytes_per_activation=None)
