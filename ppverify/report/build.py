"""Build a report from what a command has at hand: a finished comparison run, or a results file,
plus optional findings (``compare --findings --json`` output) and a findings map (PNG)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import ParameterError, ScheduleFileError
from .page import write_report
from .results_file import load_results
from .study import DEFAULT_MAX_CHART_OPS, Study, study_from_points, study_from_rows

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: the last 12 bytes of every whole PNG: the empty IEND chunk (length 0, type, its CRC)
PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def check_output(path: str, option: str = "-o") -> None:
    """Refuse, before a long run, an output that is not an .html file or cannot be written (a
    missing folder, a folder, a FIFO: :func:`~ppverify.core.files.check_output_path`); errors name
    ``option`` as the command spells it (``report``'s ``-o``, ``compare``'s ``--report``).

    Example:
        >>> check_output("study.html")
        >>> check_output("study.pdf")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter -o=study.pdf: expected a file ending in .html (or .htm)
        >>> check_output("/nonexistent-dir/study.html", "--report")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --report=/nonexistent-dir/study.html: folder /nonexistent-dir does not exist
    """
    from ..core.files import check_output_path

    if Path(path).suffix.lower() not in (".html", ".htm"):
        raise ParameterError(option, path, "expected a file ending in .html (or .htm)")
    check_output_path(path, option)


def findings_to_dicts(findings: Iterable[Any]) -> list[dict[str, Any]]:
    """:class:`~ppverify.compare.findings.Finding` objects in the ``compare --findings --json`` form.

    Example:
        >>> findings_to_dicts([])
        []
    """
    return [
        {
            "key": f.key,
            "claim": f.claim,
            "summary": f.summary,
            "verdicts": [{"level": v.level, "reproduced": v.reproduced, "evidence": v.evidence} for v in f.verdicts],
        }
        for f in findings
    ]


def load_findings(path: str | None) -> list[dict[str, Any]]:
    """Findings from a ``ppverify compare --findings --json`` output file (none when no path).

    Example:
        >>> load_findings(None)
        []
    """
    if not path:
        return []
    from ..core.files import read_text
    from ..core.limits import check_json_text

    p = Path(path)
    text = read_text(p)  # missing, a directory, too large or not UTF-8: one line
    check_json_text(text, str(p))
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleFileError(str(p), f"line {exc.lineno}", "not valid JSON: truncated or corrupt") from None
    found = doc.get("findings") if isinstance(doc, dict) else None
    if not isinstance(found, list):
        raise ScheduleFileError(str(p), "findings", "expected the output of `ppverify compare --findings --json`")
    for n, f in enumerate(found):
        if not isinstance(f, dict) or not {"key", "claim", "verdicts"} <= set(f) or not isinstance(f["verdicts"], list):
            raise ScheduleFileError(str(p), f"findings[{n}]", "expected key, claim and verdicts")
    return found


def load_map(path: str | None) -> tuple[tuple[str, bytes], ...]:
    """The findings map images as ``(name, PNG bytes)``: one PNG, or every ``*.png`` of a folder
    (what ``ppverify compare --findings --map --plots DIR`` writes); none without a path.

    Example:
        >>> load_map(None)
        ()
    """
    if not path:
        return ()
    from ..core.files import read_bytes

    p = Path(path)
    files = sorted(p.glob("*.png")) if p.is_dir() else [p]
    if not files:
        raise ScheduleFileError(str(p), "", "no .png image in this folder")
    out = []
    for f in files:
        data = read_bytes(f)  # missing, a FIFO, a device or over the size limit: one line
        if not data.startswith(PNG_MAGIC):
            raise ScheduleFileError(str(f), "", "not a PNG image")
        if not data.endswith(PNG_END):  # a cut copy or a header alone would embed as a broken image
            raise ScheduleFileError(str(f), "", "a PNG image cut short (it does not end with the IEND chunk)")
        out.append((f.stem, data))
    return tuple(out)


def report_from_run(
    rows: pd.DataFrame,
    points: list[Any],
    output: str,
    findings: Iterable[Any] = (),
    findings_map: str | None = None,
    title: str | None = None,
    max_chart_ops: int | None = None,
    findings_json: str | None = None,
) -> Study:
    """Write the report of a finished comparison (``points`` collected with ``on_point``).

    Example:
        >>> import tempfile, os
        >>> from ppverify.compare import abstract_configs, run_comparison, ScheduleEntry
        >>> pts = []
        >>> df = run_comparison(abstract_configs({"F": 1}, (0.0,), (2,), (2,)), (ScheduleEntry("gpipe", "gpipe"),), ("slot",), on_point=pts.append)
        >>> report_from_run(df, pts, os.path.join(tempfile.mkdtemp(), "r.html")).num_ops_drawn
        8
    """
    fnd = [f if isinstance(f, dict) else findings_to_dicts([f])[0] for f in findings] or load_findings(findings_json)
    st = study_from_points(
        rows, points, fnd, load_map(findings_map), title or "ppverify study", max_chart_ops or DEFAULT_MAX_CHART_OPS
    )
    write_report(st, output)
    return st


def report_from_file(
    results: str,
    output: str,
    time_limit: float | None = None,
    max_opt_ops: int | None = None,
    findings_json: str | None = None,
    findings_map: str | None = None,
    title: str | None = None,
    max_chart_ops: int = DEFAULT_MAX_CHART_OPS,
) -> Study:
    """Write the report of a results file (timelines recomputed from its rows; ``None`` for
    ``time_limit``/``max_opt_ops``: compare's defaults).

    Example:
        >>> import tempfile, os
        >>> from ppverify.compare import abstract_configs, run_comparison, ScheduleEntry
        >>> d = tempfile.mkdtemp(); f = os.path.join(d, "r.csv")
        >>> run_comparison(abstract_configs({"F": 1}, (0.0,), (2,), (2,)), (ScheduleEntry("gpipe", "gpipe"),), ("slot",)).to_csv(f, index=False)
        >>> report_from_file(f, os.path.join(d, "r.html")).num_ops_drawn
        8
    """
    check_output(output)
    rows = load_results(results)
    st = study_from_rows(
        rows,
        time_limit,
        max_opt_ops,
        load_findings(findings_json),
        load_map(findings_map),
        title or f"ppverify study: {Path(results).name}",
        max_chart_ops,
    )
    write_report(st, output)
    return st
