"""One memory cap for every command: the ``--memory-cap`` text in the cost model's memory unit.

ppverify's unit (see ``docs/memory.md``): a plain number counts the activations of one microbatch
on a device's whole share of layers, the unit in which 1F1B's peak on its first device is ``p``
(Narayanan et al. SC'21, arXiv 2104.04473) and the zero-bubble (Qi et al. ICLR'24, arXiv
2401.10241) and V-shape (Qi et al. NeurIPS'24, arXiv 2405.15362) papers count. With ``v`` stages
per device one stage's activation (``M_F``) is ``1/v`` of it. With presets the cost model counts
bytes: a size (``64GiB``) is taken as it is and a plain number is converted with the bytes of one
microbatch's activations on a device's share. ``8MF`` counts stage activations (multiples of
``M_F``, the largest stage activation). ``none`` is unlimited memory.

:func:`read_memory_cap` is the one parser: ``show``, ``simulate``, ``verify``, ``optimize``,
``gap``, ``compare`` and ``report`` read ``--memory-cap`` with it once, at the command's boundary,
into a :class:`CapSpec`; :func:`resolve_memory_cap` turns that into each point's
:class:`MemoryCap` (:func:`parse_memory_cap` does both for one point), and
:meth:`MemoryCap.describe` is how each of them echoes it. The activation unit itself (one
activation in the cost model's unit, exactly) is :mod:`ppverify.core.memory_unit`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .costs import CostModel
from .errors import ParameterError
from .exact import exact_fraction
from .limits import MAX_NUMBER
from .memory_unit import exact_unit, uneven_stages
from .placement import Placement
from .sizes import SIZE_FORMS, format_apart, format_bytes, parse_size

#: the text that asks for no cap
UNLIMITED = "none"
#: how an unlimited cap is labelled wherever it is shown
UNLIMITED_LABEL = "unlimited memory"
#: a plain number this large in a byte-counting cost model was surely meant as bytes (``verify``
#: read plain numbers as bytes before the unit was one): refused with what to write instead
BYTES_LOOKALIKE = 2**20
#: ``--memory-cap``'s help, the same in every command
MEMORY_CAP_HELP = (
    "per-device activation memory cap: N activations of one microbatch on a device's whole share of "
    "layers (with --costs 1F1B's first device peaks at p; with --system/--model the share of the device "
    "that holds the most, the logits' one), NMF stage activations, a size such as 64GiB with "
    "--system/--model, or none (unlimited memory)"
)


@dataclass(frozen=True)
class MemoryCap:
    """A parsed cap: ``value`` in the cost model's memory unit (``None``: unlimited memory),
    ``activations`` in ppverify's unit (one microbatch on a device's share), ``stage_activations``
    in multiples of ``M_F``, ``stages_per_device`` (``1 / share_per_stage``), ``unit`` the cost
    model's memory unit and ``text`` as given. ``uneven_stages``: where devices hold unequal
    numbers of stages (a custom placement ``0,1,1``), the stages of the device that one activation
    counts (the largest share), else ``None``. ``exact``: the cap in the cost model's unit as the
    exact rational ``value`` is the float of (``8/3`` activations of 3 units each are 8, where
    ``8/3 * 3`` in floats is under 8), for the verifier to hold exact peaks against.

    Example:
        >>> from ppverify.core.placement import loop
        >>> pl = loop(4, 2)
        >>> cap = parse_memory_cap("4", CostModel.abstract(pl), pl)
        >>> cap.value, cap.stage_activations, cap.describe()
        (4.0, 8.0, 'cap 4 activations (8 stage activations, 2 stages per device)')
    """

    value: float | None
    activations: float | None
    stage_activations: float | None
    stages_per_device: float
    unit: str
    text: str
    uneven_stages: int | None = None
    exact: Fraction | None = None

    @property
    def unlimited(self) -> bool:
        """True for ``none``."""
        return self.value is None

    @property
    def two_units(self) -> bool:
        """True when the cost model's unit is not activations of a device's share: bytes, or
        several stages per device (then :meth:`describe` gives both).

        Example:
            >>> from ppverify.core.placement import linear, v_shape
            >>> [parse_memory_cap("4", CostModel.abstract(pl), pl).two_units for pl in (linear(4), v_shape(4))]
            [False, True]
        """
        return self.unit == "bytes" or self.uneven_stages is not None or not math.isclose(self.stages_per_device, 1.0)

    def describe(self) -> str:
        """The cap in words, in both units where they differ ("cap 4 activations (8 stage
        activations, 2 stages per device)"), bytes too when the cost model counts bytes.

        Example:
            >>> from ppverify.core.placement import linear
            >>> parse_memory_cap("none", CostModel.abstract(linear(2)), linear(2)).describe()
            'unlimited memory'
        """
        if self.value is None or self.activations is None or self.stage_activations is None:
            return UNLIMITED_LABEL
        extra = []
        if self.unit == "bytes":  # digits enough to read back as this cap, never one under it
            extra.append(format_apart([self.value, self.value], "bytes", cap_first=True)[0])
        if self.uneven_stages is not None:  # the average (1.5 on 0,1,1) is not what converts
            extra.append(
                f"{_num(self.stage_activations)} stage activations, {self.uneven_stages} "
                f"stage{'' if self.uneven_stages == 1 else 's'} on the largest device"
            )
        elif not math.isclose(self.stages_per_device, 1.0):
            extra.append(
                f"{_num(self.stage_activations)} stage activations, {_num(self.stages_per_device)} stages per device"
            )
        one = self.activations == 1  # "cap 1 activation", as a count reads
        return f"cap {_num(self.activations)} activation{'' if one else 's'}" + (
            f" ({'; '.join(extra)})" if extra else ""
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``value`` in the cost model's unit; all ``None`` when unlimited).

        Example:
            >>> from ppverify.core.placement import linear
            >>> parse_memory_cap("2", CostModel.abstract(linear(2)), linear(2)).to_dict()["activations"]
            2.0
        """
        return {
            "text": self.text,
            "value": self.value,
            "unit": self.unit,
            "activations": self.activations,
            "stage_activations": self.stage_activations,
            "stages_per_device": self.stages_per_device,
            "label": self.describe(),
        }


def _num(x: float) -> str:
    return f"{x:.6g}"


def unlimited_cap(costs: CostModel, placement: Placement) -> MemoryCap:
    """The cap ``none`` stands for.

    Example:
        >>> from ppverify.core.placement import linear
        >>> unlimited_cap(CostModel.abstract(linear(2)), linear(2)).unlimited
        True
    """
    per_device, uneven = 1.0 / placement.share_per_stage, uneven_stages(costs, placement)
    return MemoryCap(None, None, None, per_device, costs.memory_unit, UNLIMITED, uneven)


def cap_from_value(value: float, costs: CostModel, placement: Placement, text: str | None = None) -> MemoryCap:
    """The cap of ``value`` in the cost model's memory unit (a family's own peak, say).

    Example:
        >>> from ppverify.core.placement import loop
        >>> cap_from_value(2.0, CostModel.abstract(loop(2, 2)), loop(2, 2)).describe()
        'cap 2 activations (4 stage activations, 2 stages per device)'
    """
    exact = exact_fraction(value)
    return MemoryCap(
        float(exact),
        float(exact / exact_unit(costs, placement)),
        float(exact / exact_fraction(max(costs.activation))),
        1.0 / placement.share_per_stage,
        costs.memory_unit,
        _num(value) if text is None else text,
        uneven_stages(costs, placement),
        exact,
    )


@dataclass(frozen=True)
class CapSpec:
    """``--memory-cap`` as read, before any cost model: ``kind`` (``none``, ``activations``,
    ``stage_activations`` or ``bytes``), ``amount`` in that kind (``None`` for ``none``), ``text``
    as given (stripped) and the ``option`` that gave it (errors name it). Read once at a command's
    boundary by :func:`read_memory_cap`; each point's :class:`MemoryCap` comes from it by
    :func:`resolve_memory_cap`, never from the text again.

    Example:
        >>> read_memory_cap("8MF"), read_memory_cap("none").unlimited
        (CapSpec(kind='stage_activations', amount=Fraction(8, 1), text='8MF', option='memory-cap'), True)
    """

    kind: str
    amount: Fraction | None
    text: str
    option: str = "memory-cap"

    @property
    def unlimited(self) -> bool:
        """True for ``none``."""
        return self.kind == UNLIMITED


def read_memory_cap(text: str | float | None, option: str = "memory-cap", forms: str | None = None) -> CapSpec | None:
    """Read ``--memory-cap``'s spelling once: ``None`` when not given; ``none`` (unlimited
    memory); a plain number of activations; ``NMF`` stage activations; a size (``64GiB``).
    Refused with one line naming ``option``: ``none`` with a size, the old ``8x`` spelling, a
    number or unit it cannot read. What needs a cost model (bytes or activations, a cap below one
    stage activation) is :func:`resolve_memory_cap`'s.

    Example:
        >>> read_memory_cap("64 GiB").kind, read_memory_cap(None)
        ('bytes', None)
        >>> read_memory_cap("8x")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=8x: the x suffix is gone: 8x counted stage activations; write 8MF for that cap, or a plain number of activations of a device's whole share
        >>> read_memory_cap("0")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=0: must be > 0: a number (e.g. 8) or a size (e.g. 40GiB)
    """
    if text is None:
        return None
    raw = str(text).strip()
    low = raw.lower().replace(" ", "")
    if low == UNLIMITED:
        return CapSpec(UNLIMITED, None, raw, option)
    if UNLIMITED in low:
        raise ParameterError(option, raw, "none (unlimited memory) takes no size: give none alone, or a cap alone")
    if low.endswith("x"):
        raise ParameterError(
            option,
            raw,
            f"the x suffix is gone: {low[:-1]}x counted stage activations; write {low[:-1]}MF for that cap, "
            "or a plain number of activations of a device's whole share",
        )
    size = parse_size(raw, option) if forms is None else parse_size(raw, option, forms)
    if not size.value > 0:  # 0, 0MF, 0GiB: no op could start (as -1, and as the CLI refuses it)
        raise ParameterError(option, raw, f"must be > 0: {forms or SIZE_FORMS}")
    if low.endswith("mf"):
        return CapSpec("stage_activations", size.value, raw, option)
    return CapSpec("bytes" if size.is_bytes else "activations", size.value, raw, option)


def resolve_memory_cap(
    spec: CapSpec, costs: CostModel, placement: Placement, stage_activation_bytes: float | None = None
) -> MemoryCap:
    """The cap ``spec`` stands for under one cost model and placement, in its memory unit.

    Refused with one line naming the option and the rule: a cap below every stage's activation
    (no forward could start) or below the largest stage's (its forwards never could), a size
    without presets (or ``stage_activation_bytes``, the bytes of ``M_F`` that an explicit memory
    model such as ``optimize --memory-model`` gives) and, with presets, a plain number as large as
    a byte count.

    Example:
        >>> from ppverify.core.placement import loop
        >>> spec = read_memory_cap("8MF")
        >>> [resolve_memory_cap(spec, CostModel.abstract(pl), pl).activations for pl in (loop(4, 1), loop(4, 2))]
        [8.0, 4.0]
    """
    option, raw = spec.option, spec.text
    if spec.amount is None:
        return unlimited_cap(costs, placement)
    one = exact_unit(costs, placement)
    unit = float(one)
    mf = max(costs.activation)
    if not mf > 0:
        raise ParameterError(
            option, raw, "the cost model holds no activation memory (every stage's activation is 0): nothing to cap"
        )
    if spec.amount > MAX_NUMBER:  # checked as a fraction: 1e400 would overflow a float below
        raise ParameterError(option, raw, f"must be at most {MAX_NUMBER:g}{' bytes' if spec.kind == 'bytes' else ''}")
    # a number of activations is read as every amount is (exact_fraction): 2.6666666666666665,
    # the float of 8/3 that `show --json` prints, is 8/3; times the exact unit, the cap is the
    # exact product, never the float under it that a peak equal to it would exceed
    amount = spec.amount if spec.kind == "bytes" else exact_fraction(float(spec.amount))
    if spec.kind == "bytes":
        if costs.memory_unit != "bytes" and stage_activation_bytes:
            exact = amount / exact_fraction(stage_activation_bytes) * exact_fraction(mf)
        elif costs.memory_unit != "bytes":
            raise ParameterError(
                option,
                raw,
                "a size needs presets (--system/--model), whose cost model counts bytes; this one counts "
                f"{costs.memory_unit} (and no --memory-model with layers=L gives bytes): give a number of activations (one microbatch on a device's share of layers)",
            )
        else:
            exact = amount
    elif spec.kind == "stage_activations":
        exact = amount * exact_fraction(mf)
    else:
        if costs.memory_unit == "bytes" and spec.amount >= BYTES_LOOKALIKE:
            raise ParameterError(
                option,
                raw,
                f"a plain number counts activations (one microbatch on a device's share), not bytes: "
                f"write {raw}B for bytes, or a size such as 40GiB",
            )
        exact = amount * one
    value = float(exact)
    if not math.isfinite(value) or value <= 0 or value > MAX_NUMBER * max(unit, 1.0):
        raise ParameterError(option, raw, f"must be a finite number > 0 and at most {MAX_NUMBER:g} activations")
    # a stage whose activation is 0 always starts its forwards: then only the largest can fail
    least = min(costs.activation)
    if value < least * (1 - 1e-9):
        raise ParameterError(
            option,
            raw,
            f"is below one stage activation ({_num(value / unit)} < {_num(least / unit)} activations): "
            "no forward could start",
        )
    if value < mf * (1 - 1e-9):  # some stages' forwards fit, the largest stage's never do
        top = costs.activation.index(mf)
        raise ParameterError(
            option,
            raw,
            f"is below the largest stage's activation ({_num(value / unit)} < {_num(mf / unit)} "
            f"activation{'' if mf == unit else 's'}, stage {top}): its forwards could never run",
        )
    return MemoryCap(
        value, float(exact / one), float(exact / exact_fraction(mf)), 1.0 / placement.share_per_stage,
        costs.memory_unit, raw, uneven_stages(costs, placement), exact,
    )  # fmt: skip


def parse_memory_cap(
    text: str | float | CapSpec | None,
    costs: CostModel,
    placement: Placement,
    option: str = "memory-cap",
    stage_activation_bytes: float | None = None,
) -> MemoryCap | None:
    """Read ``--memory-cap`` for one cost model and placement: :func:`read_memory_cap` (skipped
    when ``text`` is already a :class:`CapSpec`), then :func:`resolve_memory_cap`; ``None`` when
    not given. A command reads the text once at its boundary and resolves the :class:`CapSpec`
    per point; this is the one-call form for a single point.

    Example:
        >>> from ppverify.core.placement import linear, v_shape
        >>> pl = v_shape(4)
        >>> parse_memory_cap("8MF", CostModel.abstract(pl), pl).activations
        4.0
        >>> parse_memory_cap("64GiB", CostModel.abstract(pl), pl)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=64GiB: a size needs presets (--system/--model), whose cost model counts bytes; this one counts activations (and no --memory-model with layers=L gives bytes): give a number of activations (one microbatch on a device's share of layers)
        >>> parse_memory_cap("0.25", CostModel.abstract(linear(2)), linear(2))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=0.25: is below one stage activation (0.25 < 1 activations): no forward could start
    """
    spec = text if isinstance(text, CapSpec) else read_memory_cap(text, option)
    return None if spec is None else resolve_memory_cap(spec, costs, placement, stage_activation_bytes)


def cap_check(peaks: Sequence[float], cap: MemoryCap, slack: float = 0.0) -> dict[str, Any]:
    """Per-device activation ``peaks`` (the cost model's unit) held against ``cap``: the cap
    (:meth:`MemoryCap.to_dict`), the devices over it and one line saying so, as ``show`` and
    ``simulate`` print it.

    Example:
        >>> from ppverify.core.placement import linear
        >>> cap = parse_memory_cap("3", CostModel.abstract(linear(4)), linear(4))
        >>> r = cap_check([4.0, 3.0, 2.0, 1.0], cap)
        >>> r["over"], r["line"]
        ([0], 'cap 3 activations: device 0 over it (peak 4)')
    """
    if cap.value is None:
        return {"cap": cap.to_dict(), "over": [], "line": UNLIMITED_LABEL}
    # the timelines' peaks are exact (each the float nearest the exact sum), so a peak over the
    # cap by any amount is over it; ``slack``: a relative allowance for peaks measured in floats
    over = [d for d, x in enumerate(peaks) if x > cap.value * (1 + slack)]
    fmt = format_bytes if cap.unit == "bytes" else _num
    if over:
        worst = max(peaks[d] for d in over)
        # a peak a hair over the cap prints as the cap: say by how much
        by = f", {fmt(worst - cap.value)} above it" if fmt(worst) == fmt(cap.value) else ""
        where = f"device{'s' if len(over) > 1 else ''} {', '.join(map(str, over))} over it (peak {fmt(worst)}{by})"
    else:
        where = f"every device within it (highest peak {fmt(max(peaks, default=0.0))})"
    return {"cap": cap.to_dict(), "over": over, "line": f"{cap.describe()}: {where}"}


def check_cap_mode(spec: CapSpec, counts_bytes: bool) -> None:
    """Refuse a cap no point could resolve, before a study runs: ``counts_bytes`` says whether
    its cost models count bytes (presets) or activations (abstract costs). A cap below one stage
    activation can only be told per point, in its own units.

    Example:
        >>> check_cap_mode(read_memory_cap("8"), False), check_cap_mode(read_memory_cap("64GiB"), True)
        (None, None)
        >>> check_cap_mode(read_memory_cap("64GiB"), False)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=64GiB: a size needs presets (--system/--model), whose cost model counts bytes; this one counts activations (and no --memory-model with layers=L gives bytes): give a number of activations (one microbatch on a device's share of layers)
    """
    import dataclasses

    from .placement import linear

    probe = CostModel.abstract(linear(2))
    if counts_bytes:  # one byte per activation: any size is at least one
        probe = dataclasses.replace(probe, memory_unit="bytes", activation=(1.0, 1.0))
    resolve_memory_cap(spec, probe, linear(2))


def check_cap_text(text: str, counts_bytes: bool, option: str = "memory-cap") -> CapSpec:
    """Read a cap's text once (:func:`read_memory_cap`) and refuse what no point could resolve
    (:func:`check_cap_mode`); returns the :class:`CapSpec` to resolve per point.

    Example:
        >>> check_cap_text("8", False).amount
        Fraction(8, 1)
        >>> check_cap_text("64GiB", False)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter memory-cap=64GiB: a size needs presets (--system/--model), whose cost model counts bytes; this one counts activations (and no --memory-model with layers=L gives bytes): give a number of activations (one microbatch on a device's share of layers)
    """
    spec = read_memory_cap(text, option)
    if spec is None:
        raise ParameterError(option, text, "names no cap")
    check_cap_mode(spec, counts_bytes)
    return spec
