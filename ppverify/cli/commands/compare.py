"""``ppverify compare``: the same schedules at every abstraction level, side by side.

With no arguments it runs the built-in default comparison (the seed paper's seven schedules on
five systems, two models and three microbatch counts) and prints one table per configuration.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ...compare import (
    DEFAULT_M,
    DEFAULT_MODELS,
    DEFAULT_SYSTEMS,
    LEVEL_SEMANTICS,
    LEVELS,
    abstract_configs,
    default_configs,
    format_config_table,
    format_legend,
    run_comparison,
    select_schedules,
)
from ...compare.config import ALL_LEVELS
from ...compare.findings import FINDINGS_SCHEDULES, Setup, abstract_setup, evaluate_findings, format_findings
from ...compare.table import unavailable_levels
from ...costs import parse_costs
from ...errors import ParameterError
from .. import Command
from ..common import print_json


def _csv(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))  # each value once
    return items or None


def _ints(name: str, text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    if text is None:
        return default
    try:
        vals = tuple(int(t) for t in _csv(text) or ())
    except ValueError:
        raise ParameterError(name, text, "expected comma-separated integers, e.g. 4,8,16") from None
    if not vals or any(v < 1 for v in vals):
        raise ParameterError(name, text, "expected comma-separated integers >= 1")
    return tuple(dict.fromkeys(vals))  # a value given twice is one configuration


def _floats(name: str, text: str, default: tuple[float, ...]) -> tuple[float, ...]:
    if text is None:
        return default
    try:
        vals = tuple(float(t) for t in _csv(text) or ())
    except ValueError:
        raise ParameterError(name, text, "expected comma-separated numbers, e.g. 0,0.5,1") from None
    if not vals or any(not v >= 0 for v in vals):
        raise ParameterError(name, text, "expected comma-separated numbers >= 0")
    return vals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Selections (schedules, systems, models, p, m, levels), solver budget and outputs."""
    parser.add_argument(
        "--schedules",
        help="comma-separated schedule labels or families "
        "(default: gpipe,1f1b,1f1b-split,interleaved-v2,chimera,chimera-asym,hanayo-w1,hanayo-w2)",
    )
    parser.add_argument("--systems", help=f"comma-separated system presets (default: {','.join(DEFAULT_SYSTEMS)})")
    parser.add_argument("--models", help=f"comma-separated model presets (default: {','.join(DEFAULT_MODELS)})")
    parser.add_argument("-p", dest="ps", help="pipeline devices, comma-separated (default 4)")
    parser.add_argument(
        "-m", dest="ms", help=f"microbatches, comma-separated (default {','.join(map(str, DEFAULT_M))})"
    )
    parser.add_argument(
        "--levels",
        "--semantics",
        dest="levels",
        help=f"abstraction levels / semantics, comma-separated (default: {','.join(LEVELS)})",
    )
    g = parser.add_argument_group("preset options (apply to every system and model)")
    g.add_argument("--mfu", type=float, default=None, help="model FLOPs utilization (default 0.4)")
    g.add_argument("--microbatch-size", type=int, default=None, help="sequences per microbatch (default 1)")
    g.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (default: the model's)")
    g.add_argument("--tp", type=int, default=None, help="tensor-parallel size per pipeline rank (default 1)")
    g.add_argument(
        "--ranks-per-node",
        type=int,
        default=None,
        help="pipeline ranks per node (default: every GPU of a node; 1 = every hop on the network)",
    )
    parser.add_argument(
        "--measured",
        action="store_true",
        help="add the measured level: every schedule run in PyTorch's pipeline runtime on this "
        "machine, ops sleeping their durations (1 abstract unit = 10 ms); p <= 4 only",
    )
    parser.add_argument("--costs", help="abstract mode: op costs per device share, e.g. F=1,B=2 (no presets)")
    parser.add_argument("--comm-delay", help="abstract mode: per-hop delays, comma-separated (default 0)")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=0.5,
        help="CP-SAT work per solver point, in its deterministic seconds (default 0.5; the same table on a "
        "loaded machine; the wall clock stops a solve at 4x); larger points get a bound only",
    )
    parser.add_argument(
        "--max-opt-ops",
        type=int,
        default=256,
        help="solve the optimum only for schedules with at most this many ops (default 256)",
    )
    parser.add_argument("--out", help="write one row per (schedule, configuration, level) to .csv or .parquet")
    parser.add_argument("--json", action="store_true", help="print the rows (and findings) as JSON")
    parser.add_argument(
        "--findings",
        action="store_true",
        help="check the seed paper's findings (reproduced / not, under which semantics)",
    )
    parser.add_argument(
        "--no-verify", action="store_true", help="skip proving each schedule valid with the Z3 verifier (the Z3 column)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    from ..findings_map_cli import add_map_arguments

    add_map_arguments(parser)
    parser.add_argument(
        "--report", metavar="HTML", help="also write this run's self-contained HTML report (ppverify report)"
    )


def run(args: argparse.Namespace) -> int:
    """Run the comparison (or the findings) and print tables or JSON."""
    t0 = time.perf_counter()
    levels = tuple(_csv(args.levels) or LEVELS)
    if getattr(args, "measured", False) and "measured" not in levels:
        levels += ("measured",)
    for lv in levels:
        if lv not in ALL_LEVELS:
            raise ParameterError("levels", lv, f"unknown level; expected some of {', '.join(ALL_LEVELS)}")
    if args.time_limit is not None and not args.time_limit > 0:
        raise ParameterError("time-limit", args.time_limit, "must be > 0 seconds")
    if args.out and Path(args.out).suffix.lower() not in (".csv", ".parquet"):
        raise ParameterError("out", args.out, "expected a .csv or .parquet file")
    if args.report:
        from ...report.build import check_output

        check_output(args.report)
    points: list = []  # with --report: every point, its levels' timelines included
    if getattr(args, "map", False):
        if not args.findings:
            raise ParameterError("map", True, "--map maps the findings: give --findings --map")
        from ..findings_map_cli import run_map_command

        return run_map_command(args)
    if args.findings:
        return _run_findings(args, levels, t0, points)
    entries = select_schedules(_csv(args.schedules))
    ps = _ints("p", args.ps, (4,))
    ms = _ints("m", args.ms, DEFAULT_M)
    if args.costs or args.comm_delay:
        costs = parse_costs(args.costs or "F=1,B=2")
        configs = abstract_configs(costs, _floats("comm-delay", args.comm_delay, (0.0,)), ps, ms)
    else:
        systems = tuple(_csv(args.systems) or DEFAULT_SYSTEMS)
        models = tuple(_csv(args.models) or DEFAULT_MODELS)
        _check_presets(systems, models)
        configs = default_configs(systems, models, ps, ms, _preset_options(args))
        _check_options(configs[0])
    df = run_comparison(
        configs,
        entries,
        levels,
        args.time_limit,
        args.max_opt_ops,
        progress=not args.no_progress,
        verify=not args.no_verify,
        on_point=points.append if args.report else None,
    )
    _write(df, args.out)
    if args.json:
        print_json(
            {
                "levels": {lv: LEVEL_SEMANTICS[lv] for lv in levels},
                "rows": df.astype(object).where(df.notna(), None).to_dict(orient="records"),
            }
        )
        return _report(args, df, points)
    for cfg in dict.fromkeys(df["config"]):
        print(format_config_table(df, cfg))
        print()
    print(format_legend([lv for lv in levels]))
    for lv, why in unavailable_levels(df).items():
        print(f"  level {lv} produced no numbers: {why}")
    print(
        f"\n{len(df)} rows ({len(configs)} configurations x {len(entries)} schedules x {len(levels)} levels) "
        f"in {time.perf_counter() - t0:.1f} s" + (f"; written to {args.out}" if args.out else "")
    )
    return _report(args, df, points)


def _run_findings(args: argparse.Namespace, levels: tuple[str, ...], t0: float, points: list) -> int:
    levels = tuple(lv for lv in levels if lv != "optimum") if not args.levels else levels
    if args.costs or args.comm_delay:
        delays = _floats("comm-delay", args.comm_delay, (0.0, 1.0))
        if len(delays) != 2:
            raise ParameterError("comm-delay", args.comm_delay, "--findings needs two delays: fast,slow")
        costs = tuple((k, float(v)) for k, v in parse_costs(args.costs or "F=1,B=2").items())
        setup, configs = abstract_setup(delays[0], delays[1], costs, _ints("p", args.ps, (4, 8)))
    else:
        systems = _csv(args.systems) or ["dgx-h100", "ethernet-100g"]
        if len(systems) != 2:
            raise ParameterError("systems", args.systems, "--findings needs two systems: fast,slow")
        model = (_csv(args.models) or ["gpt3-1.3b"])[0]
        _check_presets(tuple(systems), (model,))
        setup = Setup(systems[0], systems[1], model, _ints("p", args.ps, (4, 8)), options=_preset_options(args))
        configs = setup.configs()
        _check_options(configs[0])
    df = run_comparison(
        configs,
        FINDINGS_SCHEDULES,
        levels,
        args.time_limit,
        args.max_opt_ops,
        progress=not args.no_progress,
        on_point=points.append if args.report else None,
    )
    _write(df, args.out)
    found = evaluate_findings(df, setup, levels)
    if args.json:
        print_json(
            {
                "findings": [
                    {
                        "key": f.key,
                        "claim": f.claim,
                        "summary": f.summary,
                        "verdicts": [
                            {"level": v.level, "reproduced": v.reproduced, "evidence": v.evidence} for v in f.verdicts
                        ],
                    }
                    for f in found
                ]
            }
        )
        return _report(args, df, points, found)
    print(
        f"Seed-paper findings, fast = {setup.fast}, slow = {setup.slow}"
        + (f", model {setup.model}" if setup.model else "")
        + f", p in {list(setup.ps)}, m in {{p, {setup.large_m_factor}p}}\n"
    )
    print(format_findings(found))
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return _report(args, df, points, found)


def _report(args: argparse.Namespace, df, points: list, findings=()) -> int:
    """With --report: write the HTML report of this run and say where (exit 0)."""
    if args.report:
        from ...report.build import report_from_run

        st = report_from_run(
            df,
            points,
            args.report,
            findings,
            getattr(args, "findings_map", None),
            getattr(args, "title", None),
            getattr(args, "max_chart_ops", None),
            getattr(args, "findings_json", None),
        )
        print(
            f"report written to {args.report} ({len(st.points)} charted points, {st.num_ops_drawn} ops)",
            file=sys.stderr if args.json else sys.stdout,
        )
    return 0


def _preset_options(args: argparse.Namespace) -> tuple[tuple[str, object], ...]:
    """Preset options given on the command line, validated by the presets when used."""
    return tuple(
        (k, getattr(args, k))
        for k in ("mfu", "microbatch_size", "seq_len", "tp", "ranks_per_node")
        if getattr(args, k, None) is not None
    )


def _check_options(config) -> None:
    """Resolve one point eagerly so a bad preset option is one error, not a table of them."""
    from ...compare.evaluate import resolve
    from ...schedules import build

    if config.options:
        resolve(config, build("gpipe", config.p, config.m))


def _check_presets(systems: tuple[str, ...], models: tuple[str, ...]) -> None:
    """Unknown preset names are refused up front (a .yaml path is loaded by the presets module)."""
    from ...presets import available

    for key, names, kind in (("systems", systems, "systems"), ("models", models, "llms")):
        known = available(kind)
        for name in names:
            if name not in known and not name.endswith((".yaml", ".yml")):
                raise ParameterError(key, name, f"unknown preset; available: {', '.join(known)}")


def _write(df, out: str | None) -> None:
    if not out:
        return
    path = Path(out)
    if path.parent and not path.parent.exists():
        raise ParameterError("out", out, f"directory {path.parent} does not exist")
    from ...files import atomic_path

    with atomic_path(path, "--out") as tmp:  # temporary name, then rename: never half a table
        if path.suffix.lower() == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    print(f"wrote {len(df)} rows to {path}", file=sys.stderr)


COMMAND = Command(
    "compare",
    "rank schedules under every abstraction level (formula, slot, async, contention, CP-SAT)",
    add_arguments,
    run,
    description=__doc__.replace("``", ""),
)
