"""A sweep's YAML config: its keys read and checked (each error names the file, the key and the
rule broken) into a :class:`SweepSpec`, the grid of schedules x configurations x levels that
:mod:`ppverify.sweep.grid` expands into points.

Config file keys (``examples/sweep.yaml``)::

    schedules: [gpipe, 1f1b, {family: hanayo, waves: 2, label: hanayo-w2, only_m_eq_p: true},
                {file: mine.json}]          # a schedule file: its own p and m only; keyed by content
    p: [4, 8]
    m: [4, 8, 16]
    systems: [dgx-h100, ethernet-100g]      # with models: preset mode (seconds, bytes); a .yaml file:
                                            #   relative to the config, as a schedule file
    models: [gpt3-1.3b]
    costs: {F: 1, B: 2}                     # or abstract mode (units) ...
    comm_delays: [0, 0.5, 1]                # ... with these per-hop delays
    levels: [formula, slot, async, contention, optimum]   # alias: semantics
    time_limit: 0.5                         # CP-SAT seconds per solver point
    max_opt_ops: 256
    options: {mfu: 0.4, microbatch_size: 1} # preset options (see `ppverify simulate --help`)
    memory_cap: none                        # the optimum's cap (as --memory-cap; default: each schedule's own peak)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..compare.config import LEVELS, Config, ScheduleEntry
from ..core.errors import ParameterError, ScheduleFileError
from ..core.limits import MAX_NUMBER
from ..core.memory_cap import CapSpec

KEYS = (
    "name",
    "schedules",
    "p",
    "m",
    "systems",
    "models",
    "costs",
    "comm_delays",
    "levels",
    "semantics",
    "time_limit",
    "max_opt_ops",
    "options",
    "memory_cap",
)


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep config: the grid and the solver budget."""

    name: str
    entries: tuple[ScheduleEntry, ...]
    configs: tuple[Config, ...]
    levels: tuple[str, ...]
    time_limit: float = 0.5
    max_opt_ops: int = 256
    #: prove each schedule valid with Z3 (the ``verified`` column); maps skip it (schedule-only)
    verify: bool = True
    #: the optimum's cap, read from the file once (``None``: each schedule's own peak)
    memory_cap: CapSpec | None = None

    @property
    def num_points(self) -> int:
        """Rows the sweep produces: entries x configurations x levels."""
        return len(self.entries) * len(self.configs) * len(self.levels)


def _err(path: str, key: str, rule: str) -> ScheduleFileError:
    return ScheduleFileError(path, key, rule)


def _int_list(path: str, key: str, value: Any) -> tuple[int, ...]:
    vals = value if isinstance(value, list) else [value]
    if not vals or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in vals):
        raise _err(path, key, f"expected an integer >= 1 or a non-empty list of them, got {value!r}")
    return tuple(dict.fromkeys(vals))  # a value given twice is one point, stored once


def _str_list(path: str, key: str, value: Any) -> tuple[str, ...]:
    vals = value if isinstance(value, list) else [value]
    if not vals or any(not isinstance(v, str) or not v.strip() for v in vals):
        raise _err(path, key, f"expected a name or a non-empty list of names, got {value!r}")
    return tuple(dict.fromkeys(v.strip() for v in vals))


def _finite(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and abs(v) <= MAX_NUMBER  # NaN fails too


#: the preset options' value types (``PresetSettings``); ``None`` (YAML ``null``) is the default
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "mfu": (int, float),
    "microbatch_size": (int,),
    "seq_len": (int,),
    "tp": (int,),
    "ranks_per_node": (int,),
    "recompute": (bool,),
    "flash_attention": (bool,),
    "layers_per_stage": (str, list),
}


def _check_option(path: str, key: str, value: Any) -> None:
    """Refuse a preset option of the wrong type: ``recompute: "no"`` would read as true, and
    ``mfu: "0.4"`` would fail inside every point."""
    kinds = _OPTION_TYPES.get(key)
    if value is None or kinds is None:
        return
    wrong = isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds)
    if key == "layers_per_stage" and isinstance(value, list):
        wrong = any(isinstance(v, bool) or not isinstance(v, int) for v in value)
    if wrong:
        want = {"mfu": "a number", "recompute": "true or false", "flash_attention": "true or false"}.get(key)
        want = want or ("a list of layer counts or '3,3,2'" if key == "layers_per_stage" else "an integer")
        raise _err(path, f"options.{key}", f"expected {want}, got {value!r}")


def _check_options(path: str, configs: list[Config]) -> None:
    """Refuse options that no (p, system, model) of the grid accepts (``mfu: 2``): every point would
    be 'not applicable' for the same reason. One that fits some p only (``layers_per_stage``) is
    left to the points it does not fit, which say why in their note."""
    from ..compare.request import check_options

    first: ParameterError | None = None
    seen: set[tuple[int, str | None, str | None]] = set()
    for cfg in configs:
        if not cfg.options or (cfg.p, cfg.system, cfg.model) in seen:
            continue
        seen.add((cfg.p, cfg.system, cfg.model))
        try:
            check_options(replace(cfg, m=1))  # options do not depend on m: the smallest schedule
            return
        except ParameterError as exc:
            first = first or exc
    if first is not None:
        raise _err(path, f"options.{first.name.replace('-', '_')}", f"{first.value}: {first.rule}")


def _preset_files(path: str, key: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """Preset file paths (``.yaml``) read relative to the config, as schedule files are, and
    checked now: a missing one made every point 'not applicable' (``file not found``)."""
    from ..core.files import check_input_file

    out = []
    for nm in names:
        if nm.lower().endswith((".yaml", ".yml")):
            fpath = Path(nm) if Path(nm).is_absolute() else Path(path).parent / nm
            try:
                check_input_file(fpath)
            except ScheduleFileError as exc:
                raise _err(path, key, f"preset file {fpath}: {exc.rule}") from None
            nm = str(fpath)
        out.append(nm)
    return tuple(dict.fromkeys(out))


def _check_grid(path: str, points: int) -> None:
    from ..core.limits import MAX_SWEEP_POINTS, LimitError

    if points > MAX_SWEEP_POINTS:  # refused before the grid is expanded
        raise LimitError(path, f"the grid has {points} points; at most {MAX_SWEEP_POINTS} are allowed")


def _check_param(path: str, key: str, param: Any, value: Any) -> None:
    """Refuse a family parameter of the wrong type at load time: the generator would refuse it at
    every point, and the sweep would report each one 'not applicable' instead of naming the key."""
    if value is None and param.default is None:  # a parameter whose default is None takes null
        return
    if param.type is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise _err(path, key, f"expected an integer, got {value!r}")
    if param.type is str and not isinstance(value, str):
        raise _err(path, key, f"expected a name, got {value!r}")


def _entries(path: str, value: Any) -> tuple[ScheduleEntry, ...]:
    from ..schedules import get_family

    if not isinstance(value, list) or not value:
        raise _err(path, "schedules", "expected a non-empty list of family names or {family: ..., PARAM: ...} mappings")
    out = []
    for n, item in enumerate(value):
        key = f"schedules[{n}]"
        if isinstance(item, str):
            if Path(item).suffix or "/" in item:  # a path where a family name goes: say how to give a file
                raise _err(path, key, f"{item!r} is no family name; a schedule file is given as {{file: {item}}}")
            item = {"family": item}
        if isinstance(item, dict) and isinstance(item.get("file"), str):
            fpath = Path(item["file"])
            if not fpath.is_absolute():
                fpath = Path(path).parent / fpath  # relative to the config file
            from ..core.files import check_input_file

            try:
                check_input_file(fpath)  # a FIFO or a device is refused, never blocked on
            except ScheduleFileError as exc:
                raise _err(path, f"{key}.file", f"schedule file {fpath}: {exc.rule}") from None
            extra = set(item) - {"file", "label"}
            if extra:
                raise _err(path, f"{key}.{sorted(extra)[0]}", "a file entry takes only 'file' and 'label'")
            out.append(ScheduleEntry(str(item.get("label") or fpath.stem), "file", file=str(fpath)))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("family"), str):
            raise _err(path, key, "expected a family name, a mapping with a 'family' name, or {file: PATH}")
        params = {k: v for k, v in item.items() if k not in ("family", "label", "only_m_eq_p")}
        try:
            fam = get_family(item["family"])
        except Exception as exc:  # ParameterError names the known families
            raise _err(path, f"{key}.family", str(exc)) from None
        known = {pr.name for pr in fam.params}
        for k, v in params.items():
            if k not in known:
                raise _err(
                    path,
                    f"{key}.{k}",
                    f"{fam.name} has no parameter {k!r} (its parameters: {', '.join(sorted(known)) or 'none'})",
                )
            if isinstance(v, (list, dict)):
                raise _err(path, f"{key}.{k}", "expected a single value")
            _check_param(path, f"{key}.{k}", next(pr for pr in fam.params if pr.name == k), v)
        flag = item.get("only_m_eq_p", False)
        if not isinstance(flag, bool):  # bool("no") is True: a quoted word would restrict the entry silently
            raise _err(path, f"{key}.only_m_eq_p", f"expected true or false, got {flag!r}")
        if isinstance(item.get("label"), (bool, list, dict)):
            raise _err(path, f"{key}.label", f"expected a name, got {item['label']!r}")
        label = item.get("label") or (fam.name + "".join(f"-{k}{v}" for k, v in sorted(params.items())))
        out.append(ScheduleEntry(str(label), fam.name, tuple(sorted(params.items())), flag))
    labels = [e.label for e in out]
    dup = next((lb for lb in labels if labels.count(lb) > 1), None)
    if dup:
        raise _err(path, "schedules", f"label {dup!r} used twice; give each entry a distinct 'label'")
    return tuple(out)


def parse_sweep(data: Any, path: str = "<sweep>") -> SweepSpec:
    """Validate a loaded sweep config and expand its grid; errors name the file and the key.

    Example:
        >>> spec = parse_sweep({"schedules": ["gpipe", "1f1b"], "p": [4], "m": [4, 8],
        ...                     "costs": {"F": 1, "B": 2}, "comm_delays": [0, 1], "levels": ["slot"]})
        >>> spec.num_points, [c.label for c in spec.configs][:2]
        (8, ['p=4 m=4 F=1,B=2 c=0', 'p=4 m=8 F=1,B=2 c=0'])
        >>> parse_sweep({"schedules": ["gpipe"], "p": [0], "costs": {"F": 1}}, "s.yaml")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.yaml: p: expected an integer >= 1 or a non-empty list of them, got [0]
    """
    from ..core.costs import complete_costs

    if not isinstance(data, dict):
        raise _err(path, "", "a sweep config must be a YAML mapping of keys (schedules, p, m, ...)")
    for key in data:
        if key not in KEYS:
            raise _err(path, str(key), f"unknown key; expected some of {', '.join(KEYS)}")
    entries = _entries(path, data.get("schedules"))
    ps = _int_list(path, "p", data.get("p", [4]))
    ms = _int_list(path, "m", data["m"]) if "m" in data else None
    levels: list[str] = []
    for key in ("levels", "semantics"):
        if key in data:
            for lv in _str_list(path, key, data[key]):
                if lv not in LEVELS:
                    raise _err(path, key, f"unknown level {lv!r}; expected some of {', '.join(LEVELS)}")
                if lv not in levels:
                    levels.append(lv)
    levels = [lv for lv in LEVELS if lv in levels] or list(LEVELS)
    tl = data.get("time_limit", 0.5)
    if not _finite(tl) or not tl > 0:  # .inf (a solve that may never end) and .nan too
        raise _err(path, "time_limit", f"expected finite seconds > 0 and <= {MAX_NUMBER:g}, got {tl!r}")
    mo = data.get("max_opt_ops", 256)
    if isinstance(mo, bool) or not isinstance(mo, int) or mo < 0:
        raise _err(path, "max_opt_ops", f"expected an integer >= 0, got {mo!r}")
    for key in ("time_limit", "max_opt_ops"):  # as compare --time-limit/--max-opt-ops: not ignored
        if key in data and "optimum" not in levels:
            raise _err(
                path,
                key,
                "budgets the CP-SAT optimum, a level this sweep leaves out: add optimum to levels, or leave it out",
            )
    options = {} if data.get("options") is None else data["options"]
    if not isinstance(options, dict):
        raise _err(path, "options", "expected a mapping of preset options (mfu, microbatch_size, ...)")
    from ..systems.preset_models import SETTINGS_FIELDS

    known_opts = [f for f in SETTINGS_FIELDS if f not in ("system", "model", "costs", "comm_delay")]  # grid keys
    for key, value in options.items():
        if key not in known_opts:  # an unknown name was ignored: every point ran without it
            raise _err(path, f"options.{key}", f"unknown preset option; expected some of {', '.join(known_opts)}")
        _check_option(path, key, value)
    abstract = "costs" in data or "comm_delays" in data
    preset = "systems" in data or "models" in data
    if abstract and preset:
        raise _err(
            path, "costs", "give either systems+models (presets) or costs+comm_delays (abstract units), not both"
        )
    configs: list[Config] = []
    if abstract and options:  # they shape presets' durations; abstract costs are taken as given
        raise _err(
            path, "options", "preset options (mfu, microbatch_size, ...) need systems+models; these costs are abstract"
        )
    if abstract:
        costs = data.get("costs", {"F": 1, "B": 2})
        if not isinstance(costs, dict) or not costs:
            raise _err(path, "costs", "expected a mapping like {F: 1, B: 2}")
        try:
            bad = [k for k in costs if k not in ("F", "B", "I", "W")]
            if bad:
                raise ValueError(f"unknown kind {bad[0]!r}; expected F, B, I, W")
            if any(not _finite(v) or not v > 0 for v in costs.values()):
                raise ValueError(f"costs must be finite numbers > 0 and <= {MAX_NUMBER:g}, got {costs!r}")
            complete_costs({k: float(v) for k, v in costs.items()})
        except (ValueError, TypeError) as exc:
            raise _err(path, "costs", str(exc)) from None
        delays = data.get("comm_delays", [0])
        delays = delays if isinstance(delays, list) else [delays]
        if not delays or any(not _finite(d) or d < 0 for d in delays):
            raise _err(path, "comm_delays", f"expected numbers >= 0, got {data.get('comm_delays')!r}")
        delays = list(dict.fromkeys(float(d) for d in delays))
        _check_grid(path, len(entries) * len(ps) * len(ms or (1,)) * len(delays) * len(levels))
        ct = tuple((k, float(v)) for k, v in costs.items())
        configs = [Config(p, m, costs=ct, comm_delay=float(d)) for d in delays for p in ps for m in (ms or (p,))]
    else:
        from ..systems.presets import available, preset_name

        systems = _preset_files(path, "systems", _str_list(path, "systems", data.get("systems", ["dgx-h100"])))
        models = _preset_files(path, "models", _str_list(path, "models", data.get("models", ["gpt3-1.3b"])))
        # shipped names in any case, as on the command line
        systems = tuple(dict.fromkeys(preset_name("systems", n) for n in systems))
        models = tuple(dict.fromkeys(preset_name("llms", n) for n in models))
        for key, names, kind in (("systems", systems, "systems"), ("models", models, "llms")):
            known = available(kind)
            for nm in names:
                if nm not in known and not nm.lower().endswith((".yaml", ".yml")):
                    raise _err(path, key, f"unknown preset {nm!r}; available: {', '.join(known)}")
        # a list of layer counts is written as --layers-per-stage takes it: the configuration's label
        # (which `report --from` reads back) then holds no space
        # (null is the option's default: left out, so the label never shows "mfu=None")
        opts = tuple(
            sorted(
                (k, ",".join(map(str, v)) if isinstance(v, list) else v) for k, v in options.items() if v is not None
            )
        )
        _check_grid(path, len(entries) * len(ps) * len(ms or (1,)) * len(systems) * len(models) * len(levels))
        configs = [
            Config(p, m, s, md, options=opts) for md in models for s in systems for p in ps for m in (ms or (p,))
        ]
        _check_options(path, configs)
    name = data.get("name")
    if name is not None and (isinstance(name, (bool, list, dict)) or not str(name).strip()):
        raise _err(path, "name", f"expected the sweep's name (its rows carry it in the store), got {name!r}")
    name = str(name).strip() if name is not None else Path(path).stem
    cap = None
    if data.get("memory_cap") is not None and "optimum" not in levels:  # as compare --memory-cap: not ignored
        raise _err(
            path,
            "memory_cap",
            "caps the CP-SAT optimum, a level this sweep leaves out: add optimum to levels, or leave it out",
        )
    if data.get("memory_cap") is not None:  # read once, here; each point resolves it in its own units
        from ..core.memory_cap import check_cap_text

        try:
            cap = check_cap_text(str(data["memory_cap"]), counts_bytes=not abstract, option="memory_cap")
        except ParameterError as exc:
            raise _err(path, "memory_cap", exc.rule) from None
    from ..compare.request import check_grid_ops
    from ..core.limits import LimitError

    try:  # --max-ops: the largest point refused now, not every point run to an error row
        check_grid_ops(entries, configs)
    except LimitError as exc:
        raise LimitError(f"{path}: {exc.what}", exc.rule) from None
    return SweepSpec(name, entries, tuple(configs), tuple(levels), float(tl), int(mo), memory_cap=cap)


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep YAML file (see the module doc for the keys).

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "mini.yaml"
        >>> _ = f.write_text("{schedules: [gpipe, 1f1b], p: 2, m: [2, 4], costs: {F: 1, B: 2}, levels: [slot]}")
        >>> spec = load_sweep(f)
        >>> spec.name, spec.num_points, [c.label for c in spec.configs]
        ('mini', 4, ['p=2 m=2 F=1,B=2 c=0', 'p=2 m=4 F=1,B=2 c=0'])
    """
    from ..core.files import read_text
    from ..core.text_formats import load_yaml

    text = read_text(path)
    data = load_yaml(text, str(path))
    check_encodable(text, str(path))
    return parse_sweep(data, str(path))


def check_encodable(text: str, path: str) -> None:
    r"""Refuse a YAML text with a string no output can encode (a lone surrogate such as ``"\ud800"``,
    which a store row, a label or a report would fail to write), naming the file, line and column.

    Example:
        >>> check_encodable("schedules: [{family: 1f1b, label: ok}]", "s.yaml")
        >>> check_encodable('p: [2]\nschedules: [{family: 1f1b, label: "a\\ud800"}]', "s.yaml")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.yaml:2:35: 'a\ud800' holds a lone surrogate (\ud800), which no output can encode
    """
    import yaml

    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            bad = next((ch for ch in node.value if 0xD800 <= ord(ch) <= 0xDFFF), None)
            if bad is not None:
                shown = node.value.encode("utf-8", "backslashreplace").decode("ascii")
                where = f"{node.start_mark.line + 1}:{node.start_mark.column + 1}"
                raise _err(
                    path,
                    where,
                    f"'{shown[:60]}' holds a lone surrogate (\\u{ord(bad):04x}), which no output can encode",
                )
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(x for pair in node.value for x in pair)
