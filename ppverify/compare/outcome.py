"""What a ``ppverify compare`` request computed (:class:`CompareOutcome`) and how it is shown:
one table per configuration with its legend (:func:`format_outcome`), or plain data for
``--json`` (:func:`outcome_json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.memory_cap import CapSpec
from .config import LEVEL_SEMANTICS, MEASURED_TRACE_SEMANTICS
from .findings import Finding, Setup, format_findings
from .ranks import does_not_fit
from .results import PointResult
from .table import format_config_table, format_legend, never_applicable, unavailable_levels

#: the frame's columns that hold a list or an object as JSON text, one cell each in a CSV or Parquet
#: file (:func:`~ppverify.compare.table.point_rows` writes them so); ``--json`` gives their values
JSON_TEXT_COLUMNS: tuple[str, ...] = ("params", "peak_activations", "oom_devices")


def row_values(row: dict[str, Any]) -> dict[str, Any]:
    """A frame row with its JSON-text cells (:data:`JSON_TEXT_COLUMNS`) as the lists and objects
    they hold, as ``compare --json`` prints them; a missing cell stays ``None``.

    Example:
        >>> row_values({"params": '{"v": 2}', "oom_devices": "[0, 1]", "peak_activations": None, "p": 4})
        {'params': {'v': 2}, 'oom_devices': [0, 1], 'peak_activations': None, 'p': 4}
    """
    return {
        k: json.loads(v) if k in JSON_TEXT_COLUMNS and isinstance(v, str) and v.strip() else v for k, v in row.items()
    }


def row_cells(row: dict[str, Any]) -> dict[str, Any]:
    """A row read back from ``compare --json`` with those lists and objects as the JSON text the
    frame holds (:func:`row_values` undone; text cells, from an older ``--json``, kept): what
    ``report --from`` reads either form through.

    Example:
        >>> row_cells({"params": {"v": 2}, "oom_devices": [0, 1], "peak_activations": "[2.0, 1.0]"})
        {'params': '{"v": 2}', 'oom_devices': '[0, 1]', 'peak_activations': '[2.0, 1.0]'}
    """
    return {
        k: json.dumps(v, sort_keys=True) if k in JSON_TEXT_COLUMNS and isinstance(v, (list, dict)) else v
        for k, v in row.items()
    }


@dataclass(frozen=True)
class CompareOutcome:
    """What a request computed: the rows, the levels, the counts behind them, the findings (with
    ``findings``) and, with ``keep_points``, every point result for a report."""

    rows: pd.DataFrame = field(repr=False)
    levels: tuple[str, ...]
    num_configs: int
    num_schedules: int
    setup: Setup | None = None
    findings: tuple[Finding, ...] = ()
    points: tuple[PointResult, ...] = field(default=(), repr=False)
    memory_cap: CapSpec | None = None


def outcome_json(outcome: CompareOutcome) -> dict[str, Any]:
    """The outcome as plain data: the findings' verdicts with ``findings``, else the levels and
    every row.

    Example:
        >>> from ppverify.compare.request import compare_request, run_request
        >>> o = run_request(compare_request(schedules="gpipe", ps="2", ms="2", costs="F=1,B=2", levels="slot"))
        >>> d = outcome_json(o)
        >>> list(d["levels"]), d["rows"][0]["makespan"], d["rows"][0]["verified"]   # (m+p-1)(tF+tB) = 3*3
        (['slot'], 9.0, 'valid')
        >>> d["rows"][0]["peak_activations"], d["rows"][0]["params"]   # GPipe holds all m = 2 on each
        ([2.0, 2.0], {})
    """
    if outcome.setup is not None:
        return {
            "findings": [
                {
                    "key": f.key,
                    "claim": f.claim,
                    "summary": f.summary,
                    "verdicts": [
                        {"level": v.level, "reproduced": v.reproduced, "evidence": v.evidence} for v in f.verdicts
                    ],
                }
                for f in outcome.findings
            ]
        }
    df = outcome.rows
    semantics = dict(LEVEL_SEMANTICS, measured=MEASURED_TRACE_SEMANTICS) if _from_trace(df) else LEVEL_SEMANTICS
    return {
        "levels": {lv: semantics[lv] for lv in outcome.levels},
        "memory_cap": optimum_memory(outcome.memory_cap),
        # the lists and objects the frame holds as JSON text (one CSV cell each) given as such
        "rows": [row_values(r) for r in df.astype(object).where(df.notna(), None).to_dict(orient="records")],
    }


def optimum_memory(memory_cap: CapSpec | None) -> str:
    """What the optimum column's memory is, in words: each family's own peak (the default),
    unlimited memory (``none``) or the cap given.

    Example:
        >>> from ppverify.core.memory_cap import read_memory_cap
        >>> [optimum_memory(read_memory_cap(t)) for t in (None, "none", " 8")]
        ["each schedule's own peak", 'unlimited memory', 'cap 8']
    """
    from ..core.memory_cap import UNLIMITED_LABEL

    if memory_cap is None:
        return "each schedule's own peak"
    return UNLIMITED_LABEL if memory_cap.unlimited else f"cap {memory_cap.text}"


def format_outcome(outcome: CompareOutcome, seconds: float, out: str | None = None) -> str:
    """The outcome in text: one table per configuration, the legend, the levels that produced
    nothing and a closing count (or, with findings, the findings and their evidence).

    Example:
        >>> from ppverify.compare.request import compare_request, run_request
        >>> o = run_request(compare_request(schedules="gpipe", ps="2", ms="2", costs="F=1", levels="slot"))
        >>> format_outcome(o, 0.5).splitlines()[-1]
        '1 rows (1 configurations x 1 schedules x 1 levels) in 0.5 s'
    """
    if outcome.setup is not None:
        setup = outcome.setup
        head = (
            f"Seed-paper findings, fast = {setup.fast}, slow = {setup.slow}"
            + (f", model {setup.model}" if setup.model else "")
            + f", p in {list(setup.ps)}, m in {{p, {setup.large_m_factor}p}}\n"
        )
        return f"{head}\n{format_findings(list(outcome.findings))}\n\n({seconds:.1f} s)"
    df = outcome.rows
    out_lines = []
    for cfg in dict.fromkeys(df["config"]):
        out_lines += [format_config_table(df, cfg), ""]
    verified = "verified" in df and bool((df["verified"].fillna("") != "").any())  # the Z3 column is shown
    measured = df[df["level"] == "measured"] if "level" in df else df.iloc[:0]
    peak = bool(measured["peak_activation"].notna().any()) if len(measured) else False
    oom = bool(does_not_fit(df).any())  # the OOM mark is explained where it is printed
    out_lines.append(
        format_legend(list(outcome.levels), optimum_memory(outcome.memory_cap), verified, _from_trace(df), peak, oom)
    )
    out_lines += [f"  level {lv} produced no numbers: {why}" for lv, why in unavailable_levels(df).items()]
    out_lines += [f"  {s} is not applicable in any configuration: {why}" for s, why in never_applicable(df).items()]
    out_lines.append(
        f"\n{len(df)} rows ({outcome.num_configs} configurations x {outcome.num_schedules} schedules x "
        f"{len(outcome.levels)} levels) in {seconds:.1f} s" + (f"; written to {out}" if out else "")
    )
    return "\n".join(out_lines)


def _from_trace(df: Any) -> bool:
    """Whether the rows' measured level was read from profiler traces (``--measured-trace``)."""
    if "level" not in df or "semantics" not in df:
        return False
    return bool((df[df["level"] == "measured"]["semantics"] == MEASURED_TRACE_SEMANTICS).any())


__all__ = [
    "JSON_TEXT_COLUMNS",
    "CompareOutcome",
    "format_outcome",
    "optimum_memory",
    "outcome_json",
    "row_cells",
    "row_values",
]
