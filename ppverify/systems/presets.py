"""Loading and validating the YAML presets of ``models/systems`` and ``models/llms``.

Presets ship inside the package as ``ppverify.models`` (pyproject maps the top-level ``models/``
folder there), so they are read with :mod:`importlib.resources` and work after a regular install.
A preset is named (``dgx-h100``) or given as a path to a ``.yaml`` file.

Every key that carries a unit names it (``bandwidth_GBps``, ``latency_us``, ``memory_GiB``,
``peak_TFLOPs``). Validation is strict, because a silently wrong unit gives a silently wrong
ranking: unknown keys, keys that lack their unit suffix (``bandwidth: 50``), missing keys,
non-numeric or non-positive values are rejected with the file and the key named
(:class:`PresetError`). An unknown preset name lists the available ones.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError, ScheduleFileError
from ..core.limits import MAX_NUMBER

KINDS = ("systems", "llms")


@functools.cache  # sweeps resolve presets thousands of times; the folder never moves
def shipped_presets() -> Any:
    """The folder of the shipped presets: the package ``ppverify.models`` once installed, else
    the source tree's ``models/`` (a checkout whose ``ppverify`` is imported from its own folder
    while a regular install sits in the environment: the local package has no ``models``).

    Example:
        >>> sorted(e.name for e in shipped_presets().iterdir() if e.name in KINDS)
        ['llms', 'systems']
    """
    try:
        return resources.files("ppverify.models")
    except ModuleNotFoundError:
        source = Path(__file__).resolve().parents[2] / "models"
        if (source / "systems").is_dir():
            return source
        raise


class PresetError(ScheduleFileError):
    """A preset file breaks a rule: names the file, the key and the rule.

    Example:
        >>> str(PresetError("x.yaml", "intra_node.bandwidth_GBps", "must be > 0"))
        'x.yaml: intra_node.bandwidth_GBps: must be > 0'
    """


@dataclass(frozen=True)
class Field:
    """Schema of one preset key: value type, whether required, and the allowed range.

    ``kind`` is ``"number"``, ``"int"``, ``"bool"``, ``"str"`` or ``"section"`` (a nested mapping
    validated by ``fields``). ``positive`` rejects 0 and negatives, ``nonneg`` only negatives;
    ``choices`` restricts a string. ``infinite`` admits ``.inf`` (an ideal link's bandwidth);
    elsewhere it is refused (an infinite latency, peak or memory is no device: use a large number).
    """

    kind: str
    required: bool = True
    positive: bool = False
    nonneg: bool = False
    fields: Mapping[str, Field] | None = None
    default: Any = None
    choices: tuple[str, ...] | None = None
    infinite: bool = False


#: unit suffixes a number key may carry; a key whose stem is known but whose suffix is missing or
#: different is reported as "has no unit" rather than as unknown
UNIT_STEMS = {"bandwidth": "GBps", "latency": "us", "memory": "GiB", "peak": "TFLOPs"}

_LINK = {
    "name": Field("str", required=False, default=""),
    "latency_us": Field("number", nonneg=True),
    "bandwidth_GBps": Field("number", positive=True, infinite=True),
}

_INTRA = {
    **_LINK,
    # switch: each GPU has one port to a switch (NVSwitch, PCIe switch), so a GPU's sends share its
    # port's transmit side and its receives the receive side; mesh: every ordered pair its own link
    "topology": Field("str", required=False, default="switch", choices=("switch", "mesh")),
}

# the hand-over model's terms (ppverify.engines.runtime), and the quantiles of the terms drawn per
# action (gap: residuals, may be negative)
_HANDOVER_TERMS = {
    **{
        k: Field("number", required=False, nonneg=True, default=0.0)
        for k in ("head_us", "overshoot_us", "gap_us", "send_us", "recv_us", "late_us", "wake_us")
    },
    "deciles": Field(
        "section",
        required=False,
        fields={
            t: Field("section", required=False, fields={f"d{i}_us": Field("number") for i in range(1, 11)})
            for t in ("head", "overshoot", "gap", "late", "wake")
        },
    ),
}
#: the worker-process counts a ``runtime.handover.ranks_<n>`` section may hold: one rank hands
#: nothing over to another (its terms are the pooled ones), and the preset writer
#: (:mod:`ppverify.measure.preset_file`) writes no other count
HANDOVER_RANKS = range(2, 65)
# the same terms measured with a given number of worker processes (``ranks_4``): a machine with
# fewer cores than processes stretches the round trips as the processes grow in number. A term
# left out is None here, not 0: it takes the pooled section's value (System, load_system)
_HANDOVER_RANK_TERMS = {
    **{k: replace(f, default=None) if f.kind == "number" else f for k, f in _HANDOVER_TERMS.items()},
}
_HANDOVER_BY_RANKS = {
    f"ranks_{n}": Field("section", required=False, fields=_HANDOVER_RANK_TERMS) for n in HANDOVER_RANKS
}

# the pipeline runtime's own cost, folded into op durations (ppverify.core.overhead); 0 when absent
_RUNTIME = {
    "name": Field("str", required=False, default=""),
    "action_overhead_us": Field("number", required=False, nonneg=True, default=0.0),
    "transfer_overhead_us": Field("number", required=False, nonneg=True, default=0.0),
    # the same two figures for two-pipe schedules (Chimera, DualPipe), which run on another runner
    # (ppverify's own); the one-pipe figures when absent
    "two_pipe": Field(
        "section",
        required=False,
        fields={
            "action_overhead_us": Field("number", nonneg=True),
            "transfer_overhead_us": Field("number", required=False, nonneg=True, default=0.0),
        },
    ),
    # PyTorch's runtime on gloo action by action (ppverify.engines.runtime): a rendezvous costs a
    # late receiver a round trip; read by the runtime semantics only
    "handover": Field("section", required=False, fields={**_HANDOVER_TERMS, **_HANDOVER_BY_RANKS}),
    # an emulated slow link (measure --link-delay): added to every cross-device transfer
    "link_delay_us": Field("number", required=False, nonneg=True, default=0.0),
}

SYSTEM_SCHEMA: dict[str, Field] = {
    "description": Field("str", required=False, default=""),
    "source": Field("str", required=False, default=""),
    "device": Field(
        "section",
        fields={
            "name": Field("str", required=False, default=""),
            "peak_TFLOPs": Field("number", positive=True),
            "memory_GiB": Field("number", positive=True),
        },
    ),
    "gpus_per_node": Field("int", positive=True),
    "nics_per_node": Field("int", positive=True, required=False, default=1),
    # optional when gpus_per_node == 1 (every hop then crosses nodes); checked in system.py
    "intra_node": Field("section", required=False, fields=_INTRA),
    "inter_node": Field("section", fields=_LINK),
    "runtime": Field("section", required=False, fields=_RUNTIME),
}

LLM_SCHEMA: dict[str, Field] = {
    "description": Field("str", required=False, default=""),
    "source": Field("str", required=False, default=""),
    "layers": Field("int", positive=True),
    "hidden_size": Field("int", positive=True),
    "attention_heads": Field("int", positive=True),
    "kv_heads": Field("int", positive=True, required=False),
    "ffn_hidden_size": Field("int", positive=True),
    "vocab_size": Field("int", positive=True),
    "seq_len": Field("int", positive=True),
    "gated_mlp": Field("bool", required=False, default=False),
    "tied_embeddings": Field("bool", required=False, default=True),
    "learned_position_embeddings": Field("bool", required=False, default=False),
    "biases": Field("bool", required=False, default=True),
    # attention and hidden dropout in training: true (the default) is GPT-3 as Megatron-LM and
    # Korthikanti et al. train it, every preset's count before the key existed; Llama says false
    "dropout": Field("bool", required=False, default=True),
}

SCHEMAS = {"systems": SYSTEM_SCHEMA, "llms": LLM_SCHEMA}


def available(kind: str) -> list[str]:
    """Names of the shipped presets of one kind (``systems`` or ``llms``), sorted.

    Example:
        >>> "dgx-h100" in available("systems"), "gpt3-13b" in available("llms")
        (True, True)
    """
    if kind not in KINDS:
        raise ValueError(f"preset kind must be one of {KINDS}")
    folder = shipped_presets().joinpath(kind)
    return sorted(e.name[:-5] for e in folder.iterdir() if e.name.endswith(".yaml"))


def _is_path(text: str) -> bool:
    # the suffix in any case: a file saved as SYSTEM.YAML is a file, not an unknown preset name
    return text.lower().endswith((".yaml", ".yml")) or "/" in text or "\\" in text


def preset_name(kind: str, name_or_path: str) -> str:
    """A shipped preset's name as it is spelled, whatever the case typed (``DGX-H100`` is
    ``dgx-h100``, as family names are read in any case); a path or an unknown name unchanged (an
    unknown one is refused where it is read, with the list of names).

    Example:
        >>> preset_name("systems", "DGX-H100"), preset_name("llms", "GPT3-1.3B"), preset_name("llms", "My.YAML")
        ('dgx-h100', 'gpt3-1.3b', 'My.YAML')
    """
    if _is_path(name_or_path):
        return name_or_path
    by_case = {n.lower(): n for n in available(kind)}
    return by_case.get(name_or_path.lower(), name_or_path)


def preset_file(kind: str, name_or_path: str) -> Path | Any:
    """The file :func:`read_preset` reads for a preset: the path given, or the shipped preset's
    file (a :mod:`importlib.resources` traversable; it may not exist for an unknown name).

    Example:
        >>> preset_file("systems", "dgx-h100").name, str(preset_file("llms", "my/llm.yaml"))
        ('dgx-h100.yaml', 'my/llm.yaml')
    """
    if _is_path(name_or_path):
        return Path(name_or_path)
    return shipped_presets().joinpath(kind, f"{preset_name(kind, name_or_path)}.yaml")


def read_preset(kind: str, name_or_path: str) -> tuple[str, dict[str, Any]]:
    """Read and validate a preset: returns ``(source label, validated mapping)``.

    Missing optional keys get their defaults. The label is the file path for a file and
    ``systems/NAME.yaml`` for a shipped preset (used in error messages).

    Example:
        >>> label, data = read_preset("systems", "dgx-h100")
        >>> label, data["gpus_per_node"], data["inter_node"]["bandwidth_GBps"]
        ('systems/dgx-h100.yaml', 8, 50)
        >>> read_preset("llms", "gpt-5")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter model=gpt-5: unknown llms preset; available: gpt3-1.3b, gpt3-13b, gpt3-175b, llama2-70b, llama2-7b (or a path to a .yaml file)
    """
    if _is_path(name_or_path):
        path = Path(name_or_path)
        label = str(path)
        from ..core.files import read_text

        try:
            text = read_text(path)  # missing, a directory, too large or not UTF-8: one line
        except ScheduleFileError as exc:
            raise PresetError(exc.path, exc.location, exc.rule) from None
    else:
        names = available(kind)
        name_or_path = preset_name(kind, name_or_path)
        if name_or_path not in names:
            what = "system" if kind == "systems" else "model"
            raise ParameterError(
                what, name_or_path, f"unknown {kind} preset; available: {', '.join(names)} (or a path to a .yaml file)"
            )
        label = f"{kind}/{name_or_path}.yaml"
        text = preset_file(kind, name_or_path).read_text(encoding="utf-8")
    return label, parse_preset(kind, text, label)


@functools.lru_cache(maxsize=256)
def _load_yaml(text: str, label: str = "<preset>") -> Any:
    """YAML parsed once per distinct text (sweeps resolve the same presets thousands of times);
    every failure is one line naming the file, line and column (:func:`ppverify.core.files.load_yaml`),
    a key given twice in one mapping included."""
    from ..core.text_formats import load_yaml

    return load_yaml(text, label)


def parse_preset(kind: str, text: str, label: str = "<preset>") -> dict[str, Any]:
    """Parse YAML text and validate it against the schema of ``kind``.

    Example:
        >>> parse_preset("systems", "gpus_per_node: 1\\ndevice: {peak_TFLOPs: 1, memory_GiB: 1}\\n"
        ...              "inter_node: {latency_us: 1, bandwidth: 50}", "x.yaml")
        Traceback (most recent call last):
        ...
        ppverify.systems.presets.PresetError: x.yaml: inter_node.bandwidth: key has no unit; write bandwidth_GBps
    """
    try:
        data = copy.deepcopy(_load_yaml(text, label))  # a copy: callers may edit what they get
    except PresetError:
        raise
    except ScheduleFileError as exc:  # malformed YAML, named by line and column
        raise PresetError(exc.path, exc.location, exc.rule) from None
    if not isinstance(data, dict):
        raise PresetError(label, "", "expected a mapping of keys at the top level")
    return _validate(data, SCHEMAS[kind], label, "")


def _validate(data: Mapping[str, Any], schema: Mapping[str, Field], label: str, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in data:
        if key not in schema:
            raise PresetError(label, prefix + str(key), _unknown_key_rule(str(key), schema))
    for key, f in schema.items():
        where = prefix + key
        if key not in data or data[key] is None:
            if f.required:
                raise PresetError(label, where, "missing key")
            out[key] = f.default
            continue
        out[key] = _check_value(data[key], f, label, where)
    return out


def _unknown_key_rule(key: str, schema: Mapping[str, Field]) -> str:
    """Why ``key`` is not a key of ``schema``: a missing unit, a ``ranks_<n>`` count a hand-over
    section cannot hold, or a key it does not know.

    Example:
        >>> _unknown_key_rule("ranks_1", _RUNTIME["handover"].fields or {})
        "one rank hands nothing over to another rank, so it has no ranks_1 section (ranks_2 .. ranks_64 hold the terms measured with that many worker processes): delete it (a prediction for one rank takes the section's own terms)"
    """
    lo, hi = HANDOVER_RANKS[0], HANDOVER_RANKS[-1]
    count = key.removeprefix("ranks_")
    if f"ranks_{lo}" in schema and key.startswith("ranks_") and count.isdigit():
        held = f"ranks_{lo} .. ranks_{hi} hold the terms measured with that many worker processes"
        if int(count) == 1:
            return (
                f"one rank hands nothing over to another rank, so it has no {key} section ({held}): "
                "delete it (a prediction for one rank takes the section's own terms)"
            )
        return f"not a rank count a preset holds ({held}; a prediction for another count uses the nearest one's)"
    stem = key.split("_")[0].lower()
    if stem in UNIT_STEMS:
        want = [k for k in schema if k.split("_")[0].lower() == stem]
        if want:
            return f"key has no unit; write {want[0]}" if key.lower() == stem else f"unknown unit; write {want[0]}"
    return f"unknown key; known keys: {', '.join(schema)}"


def _check_value(value: Any, f: Field, label: str, where: str) -> Any:
    if f.kind == "section":
        if not isinstance(value, dict):
            raise PresetError(label, where, "expected a mapping of keys")
        return _validate(value, f.fields or {}, label, where + ".")
    if f.kind == "str":
        if f.choices is not None and str(value) not in f.choices:
            raise PresetError(label, where, f"expected one of {', '.join(f.choices)}, got {value!r}")
        return str(value)
    if f.kind == "bool":
        if not isinstance(value, bool):
            raise PresetError(label, where, f"expected true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PresetError(label, where, f"expected a number, got {value!r}")
    if f.kind == "int" and not (isinstance(value, int) or float(value).is_integer()):
        raise PresetError(label, where, f"expected an integer, got {value!r}")
    if math.isnan(value):
        raise PresetError(label, where, "must be a number, not NaN")
    if math.isinf(value) and not f.infinite and f.kind != "int":
        raise PresetError(label, where, f"must be finite (at most {MAX_NUMBER:g}), got {value!r}")
    if math.isfinite(value) and abs(value) > MAX_NUMBER:  # .inf is meaningful (an ideal link); 1e300 is not
        more = " (or .inf)" if f.infinite else ""
        raise PresetError(label, where, f"must be at most {MAX_NUMBER:g}{more}, got {value!r}")
    if f.positive and not value > 0:
        raise PresetError(label, where, f"must be > 0, got {value!r}")
    if f.nonneg and not value >= 0:
        raise PresetError(label, where, f"must be >= 0, got {value!r}")
    if f.kind == "int":
        if math.isinf(value):
            raise PresetError(label, where, "must be finite")
        return int(value)
    return value
