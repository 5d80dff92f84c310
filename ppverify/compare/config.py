"""What ``ppverify compare`` evaluates: schedule entries, configurations, and the built-in default set.

A *configuration* is one point of the system space: ``p`` devices, ``m`` microbatches, a system and
a model (presets, resolved by :mod:`ppverify.systems.presets`), or abstract costs (``F=1,B=2`` per device
share) with a fixed per-hop delay. A *schedule entry* is a registered family with fixed parameters
(``hanayo`` with ``waves=2`` ...) plus the regime it is evaluated in.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError
from ..engines.registry import ENGINES
from ..engines.registry import names as engine_names

#: the engine levels, in the engine registry's order (an engine registered with
#: ``compare_level=True`` becomes a column)
ENGINE_LEVELS: tuple[str, ...] = engine_names(levels_only=True)
#: abstraction levels, cheapest first; each names the semantics that produced its numbers
LEVELS: tuple[str, ...] = ("formula", *ENGINE_LEVELS, "optimum")

LEVEL_SEMANTICS: dict[str, str] = {
    # the closed forms take one cost per op kind: each stage costs the mean device share, so a
    # model whose first and last stages are heavier (embedding, head) is slower in the table
    "formula": "closed-form formula of the family on uniform stages (each op its mean cost per device share; "
    "communication ignored)",
    **{name: ENGINES[name].level_help or ENGINES[name].help for name in ENGINE_LEVELS},
    "optimum": "CP-SAT: best op order for the same placement, costs, transfers, replica all-reduce (async timing)",
    "measured": "PyTorch's pipeline runtime on this machine, ops sleeping their durations (p <= 4; compare --measured)",
}
#: the measured level read from profiler traces (``--measured-trace``), not run here
MEASURED_TRACE_SEMANTICS = (
    "the step recorded in the PyTorch profiler traces given (compare --measured-trace), read as import-trace reads it"
)
#: every level, the opt-in ``measured`` last (real runs: never in the default set)
ALL_LEVELS: tuple[str, ...] = LEVELS + ("measured",)


@dataclass(frozen=True)
class ScheduleEntry:
    """One row of a comparison table: a family with fixed parameters.

    ``only_m_eq_p`` restricts the entry to its regime ``m = p`` (Hanayo); outside it the entry is
    reported as not applicable rather than evaluated.

    Example:
        >>> e = ScheduleEntry("hanayo-w2", "hanayo", (("waves", 2),), only_m_eq_p=True)
        >>> e.params, e.applies(4, 8)
        ({'waves': 2}, False)
    """

    label: str
    family: str
    fixed: tuple[tuple[str, Any], ...] = ()
    only_m_eq_p: bool = False
    #: a schedule file (JSON, PyTorch CSV) instead of a family; evaluated at its own p and m only
    file: str | None = None

    @property
    def params(self) -> dict[str, Any]:
        """The fixed family parameters as a dict."""
        return dict(self.fixed)

    def applies(self, p: int, m: int) -> bool:
        """False when the configuration lies outside the entry's regime."""
        return not self.only_m_eq_p or m == p


#: the one list of default schedules: the seven of the seed paper's comparison (Hanayo in its regime
#: m = p, W in {1, 2}) plus ``1f1b-split``; the findings read it too (``findings.FINDINGS_SCHEDULES``)
DEFAULT_SCHEDULES: tuple[ScheduleEntry, ...] = (
    ScheduleEntry("gpipe", "gpipe"),
    ScheduleEntry("1f1b", "1f1b"),
    ScheduleEntry("1f1b-split", "1f1b-split"),
    ScheduleEntry("interleaved-v2", "interleaved-1f1b", (("v", 2),)),
    ScheduleEntry("chimera", "chimera"),
    ScheduleEntry("chimera-asym", "chimera-asym"),
    ScheduleEntry("hanayo-w1", "hanayo", (("waves", 1),), only_m_eq_p=True),
    ScheduleEntry("hanayo-w2", "hanayo", (("waves", 2),), only_m_eq_p=True),
)

#: labels of :data:`DEFAULT_SCHEDULES` that the seed paper does not compare (left out of the findings)
NOT_IN_PAPER: frozenset[str] = frozenset({"1f1b-split"})

#: systems of the default comparison: fast intra-node, PCIe, InfiniBand, Ethernet, and no network
DEFAULT_SYSTEMS: tuple[str, ...] = ("ideal", "dgx-h100", "pcie-gen4", "ib-ndr-cluster", "ethernet-100g")
#: a small and a large model
DEFAULT_MODELS: tuple[str, ...] = ("gpt3-1.3b", "gpt3-13b")
DEFAULT_P: tuple[int, ...] = (4,)
#: m = p (Chimera's and Hanayo's operating point), 2p and 4p
DEFAULT_M: tuple[int, ...] = (4, 8, 16)
#: the optimum level's CP-SAT work per point (deterministic seconds) and its size limit in ops,
#: when ``--time-limit`` / ``--max-opt-ops`` are left out (``compare`` and ``report --from`` alike)
DEFAULT_TIME_LIMIT = 0.5
DEFAULT_MAX_OPT_OPS = 256


@dataclass(frozen=True)
class Config:
    """One configuration: ``p``, ``m`` and either presets (``system``, ``model``) or abstract
    costs (``costs`` per device share, ``comm_delay`` per cross-device transfer).

    Example:
        >>> Config(4, 8, "dgx-h100", "gpt3-13b").label
        'p=4 m=8 dgx-h100 gpt3-13b'
        >>> Config(4, 8, "dgx-h100", "gpt3-13b", options=(("mfu", 0.5),)).label
        'p=4 m=8 dgx-h100 gpt3-13b mfu=0.5'
        >>> Config(4, 4, costs=(("F", 1.0), ("B", 2.0)), comm_delay=0.5).label
        'p=4 m=4 F=1,B=2 c=0.5'
    """

    p: int
    m: int
    system: str | None = None
    model: str | None = None
    costs: tuple[tuple[str, float], ...] | None = None
    comm_delay: float = 0.0
    options: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        for name, value in (("p", self.p), ("m", self.m)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParameterError(name, value, "must be an integer >= 1")
        if self.costs is None and (self.system is None or self.model is None):
            raise ParameterError("config", self.label_parts(), "give a system and a model, or abstract costs")

    @property
    def abstract(self) -> bool:
        """True for abstract costs (units), False for presets (seconds, bytes)."""
        return self.costs is not None

    def label_parts(self) -> str:
        """The label without ``p`` and ``m``: the costs and delay, or the system, model and options."""
        if self.costs is not None:
            c = ",".join(f"{k}={_num(v)}" for k, v in self.costs)
            return f"{c} c={_num(self.comm_delay)}"
        opts = "".join(f" {k.replace('_', '-')}={v}" for k, v in self.options)
        return f"{self.system} {self.model}{opts}"

    @property
    def label(self) -> str:
        """Short human-readable name used as table title and CSV key."""
        return f"p={self.p} m={self.m} {self.label_parts()}"

    def key(self) -> dict[str, Any]:
        """The columns that identify the configuration in result rows."""
        return {
            "config": self.label,
            "p": self.p,
            "m": self.m,
            "system": self.system if not self.abstract else f"comm-delay={_num(self.comm_delay)}",
            "model": self.model if not self.abstract else ",".join(f"{k}={_num(v)}" for k, v in self.costs or ()),
        }


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{float(x):g}"


def default_configs(
    systems: tuple[str, ...] = DEFAULT_SYSTEMS,
    models: tuple[str, ...] = DEFAULT_MODELS,
    ps: tuple[int, ...] = DEFAULT_P,
    ms: tuple[int, ...] = DEFAULT_M,
    options: tuple[tuple[str, Any], ...] = (),
) -> list[Config]:
    """The grid of preset configurations, model-major so one model's systems print together;
    ``options`` go to the presets (``mfu``, ``microbatch_size``, ``seq_len``, ``tp``, ``ranks_per_node``).

    Example:
        >>> cs = default_configs(systems=("ideal",), models=("gpt3-1.3b",), ms=(4, 8))
        >>> [c.label for c in cs]
        ['p=4 m=4 ideal gpt3-1.3b', 'p=4 m=8 ideal gpt3-1.3b']
    """
    return [Config(p, m, s, md, options=options) for md in models for s in systems for p in ps for m in ms]


def abstract_configs(
    costs: Mapping[str, float], delays: tuple[float, ...], ps: tuple[int, ...], ms: tuple[int, ...]
) -> list[Config]:
    """Abstract configurations (costs per device share, a fixed delay per cross-device transfer).

    Example:
        >>> [c.label for c in abstract_configs({"F": 1, "B": 2}, (0.0, 1.0), (4,), (4,))]
        ['p=4 m=4 F=1,B=2 c=0', 'p=4 m=4 F=1,B=2 c=1']
    """
    cs = tuple((k, float(v)) for k, v in costs.items())
    return [Config(p, m, costs=cs, comm_delay=float(c)) for c in delays for p in ps for m in ms]


def select_schedules(
    names: list[str] | str | None, entries: tuple[ScheduleEntry, ...] = DEFAULT_SCHEDULES
) -> tuple[ScheduleEntry, ...]:
    """Entries picked by label or family name (``hanayo`` selects both Hanayo entries); any other
    registered family name becomes a new entry with default parameters, a schedule file (``.json``,
    ``.csv``) an entry evaluated at the file's own p and m.

    A string is one comma-separated list, as ``--schedules`` takes it (not its characters).

    Example:
        >>> [e.label for e in select_schedules(["gpipe", "hanayo"])]
        ['gpipe', 'hanayo-w1', 'hanayo-w2']
        >>> [e.label for e in select_schedules("1f1b, gpipe")]
        ['1f1b', 'gpipe']
    """
    if isinstance(names, str):  # "1f1b" would otherwise be read as "1", "f", "1", "b"
        names = [n for n in names.split(",") if n.strip()] or None
    if not names:
        return entries
    from ..io import looks_like_file
    from ..schedules import families, get_family

    out: list[ScheduleEntry] = []
    for name in names:
        if looks_like_file(name.strip()):
            from pathlib import Path

            path = name.strip()
            if not Path(path).is_file():
                raise ParameterError("schedules", path, "file not found")
            out.append(ScheduleEntry(Path(path).stem, "file", file=path))
            continue
        key = name.strip().lower()
        hit = [e for e in entries if e.label == key] or [e for e in entries if e.family == key]
        if not hit:
            try:
                fam = get_family(key)
            except ParameterError:  # name the option and every accepted spelling, labels included
                raise ParameterError(
                    "schedules",
                    name.strip(),
                    "unknown schedule family or label (nor a schedule file: .json, .csv, .txt); labels: "
                    f"{', '.join(e.label for e in entries)}; families: {', '.join(f.name for f in families())}",
                ) from None
            hit = [ScheduleEntry(fam.name, fam.name)]
        out.extend(hit)
    return tuple(distinct_entries(out))


def distinct_entries(entries: Sequence[ScheduleEntry]) -> list[ScheduleEntry]:
    """``entries`` without repeats; two different schedules under one label are refused, since
    tables and curves are keyed by label and would merge them (a file is labelled by its name).

    Example:
        >>> one = ScheduleEntry("1f1b", "1f1b")
        >>> [e.label for e in distinct_entries([one, one])]
        ['1f1b']
        >>> distinct_entries([one, ScheduleEntry("1f1b", "file", file="mine/1f1b.json")])
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedules=1f1b: two different schedules are labelled '1f1b' (family 1f1b, file mine/1f1b.json): their results would merge; rename the file
    """
    seen: dict[str, ScheduleEntry] = {}
    for e in entries:
        other = seen.setdefault(e.label, e)
        if other != e:
            what = ", ".join(f"file {x.file}" if x.file else f"family {x.family}" for x in (other, e))
            raise ParameterError(
                "schedules",
                e.label,
                f"two different schedules are labelled {e.label!r} ({what}): their results would merge; rename the file",
            )
    return list(seen.values())


def input_digests(
    entry: ScheduleEntry, config: Config, seen: dict[str, str | None] | None = None
) -> dict[str, str | None]:
    """SHA-256 of every file a point reads, by role: its schedule file (``file``), its system and
    model presets (``system``, ``model``: a shipped preset's file, or the ``.yaml`` path given),
    ``None`` for a file that does not exist (the point's evaluation reports it). ``seen`` caches
    digests by file within one call site, so a sweep reads each file once.

    Example:
        >>> import hashlib
        >>> d = input_digests(ScheduleEntry("gpipe", "gpipe"), Config(4, 4, "dgx-h100", "gpt3-1.3b"))
        >>> from ppverify.systems.presets import shipped_presets
        >>> shipped = shipped_presets().joinpath("systems", "dgx-h100.yaml").read_bytes()
        >>> sorted(d), d["system"] == hashlib.sha256(shipped).hexdigest()
        (['model', 'system'], True)
    """
    from ..core.files import read_bytes
    from ..systems.presets import preset_file

    cache = {} if seen is None else seen

    def digest(role: str, path: Any) -> str | None:
        key = f"{role}:{path}"
        if key not in cache:
            if isinstance(path, Path):
                # a FIFO, a device, a folder: refused, never blocked on
                cache[key] = hashlib.sha256(read_bytes(path)).hexdigest() if os.path.exists(path) else None
            else:  # a shipped preset
                cache[key] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        return cache[key]

    out: dict[str, str | None] = {}
    if entry.file:
        out["file"] = digest("file", Path(entry.file))
    for role, kind, name in (("system", "systems", config.system), ("model", "llms", config.model)):
        if name is not None:
            out[role] = digest(role, preset_file(kind, name))
    return out
