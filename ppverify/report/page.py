"""The report page: one self-contained HTML file (styles, script and data inlined; nothing is
fetched when it opens).

The charts are drawn by a small hand-written canvas layer (``assets/report.js``, about 35 kB)
rather than a plotting library: plotly's bundle alone is about 3.5 MB per page and its SVG/WebGL
traces do not keep 50,000 hoverable bars responsive; a canvas redraw of 50,000 rectangles, culled
to the visible time range and batched per op kind, takes milliseconds.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from .. import __version__
from ..compare.ranks import does_not_fit, oom_devices_of
from ..verify.properties import always_checked
from .payload import WAIT_CODES
from .study import Study, level_legend

#: the page's row fields (a subset of the result columns: what the tables show)
ROW_FIELDS: tuple[str, ...] = (
    "config",
    "p",
    "m",
    "schedule",
    "level",
    "status",
    "makespan",
    "time_unit",
    "bubble_ratio",
    "peak_activation",
    "memory_unit",
    "lower_bound",
    "exact",
    "rank",
    "rank_change",
    "gap_to_bound",
    "optimum_peak",
    "verified",
    "note",
    "semantics",
    "memory_cap",
)


def _asset(name: str) -> str:
    return resources.files("ppverify.report").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def _clean(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):
        return _clean(v.item())
    return v


def oom_marks(rows: pd.DataFrame) -> list[list[int] | None]:
    """Per row (in order), the devices its schedule does not fit, or ``None`` when it fits or no
    capacity is known. Which rows are out is :func:`~ppverify.compare.ranks.does_not_fit`'s
    verdict, so the page marks the cells the text table marks; a row that shares its schedule's
    verdict (every level but the optimum) names the devices of its schedule's timed rows.

    Example:
        >>> df = pd.DataFrame({"config": "k", "schedule": ["a", "a", "a", "b"], "level": ["formula", "async", "optimum", "async"],
        ...                    "oom_devices": [None, "[0, 1]", "[]", "[]"]})
        >>> oom_marks(df)
        [[0, 1], [0, 1], None, None]
    """
    out_rows = does_not_fit(rows).tolist()
    if "oom_devices" not in rows or not any(out_rows):
        return [None] * len(rows)
    own = [oom_devices_of(c) for c in rows["oom_devices"]]
    shared: dict[tuple[Any, Any], set[int]] = {}  # (config, schedule) -> devices of its timed rows
    for c, s, lv, devs in zip(rows["config"], rows["schedule"], rows["level"], own):
        if lv != "optimum":
            shared.setdefault((c, s), set()).update(devs)
    marks: list[list[int] | None] = []
    for out, c, s, lv, devs in zip(out_rows, rows["config"], rows["schedule"], rows["level"], own):
        if not out:
            marks.append(None)
        else:
            marks.append(devs if devs or lv == "optimum" else sorted(shared.get((c, s), ())))
    return marks


def page_data(study: Study) -> dict[str, Any]:
    """Everything the page script reads, JSON-ready.

    Example:
        >>> from ppverify.compare import abstract_configs, run_comparison, ScheduleEntry
        >>> from ppverify.report.study import study_from_points
        >>> pts = []
        >>> df = run_comparison(abstract_configs({"F": 1}, (0.0,), (2,), (2,)), (ScheduleEntry("gpipe", "gpipe"),), ("slot",), on_point=pts.append)
        >>> d = page_data(study_from_points(df, pts))
        >>> list(d["levels"]), d["rows"][0]["makespan"], d["points"][0]["ops"][:2]
        (['slot'], 9.0, ['0F0', '0F1'])
    """
    rows = study.rows
    recs = [{k: _clean(r.get(k)) for k in ROW_FIELDS} for r in rows.to_dict(orient="records")]
    # the OOM mark: the devices a schedule does not fit, as the text table decides it
    for r, devs in zip(recs, oom_marks(rows) if len(rows) else []):
        r["oom"] = devs
    for r in recs:
        if r["exact"] is not None and not isinstance(r["exact"], bool):
            r["exact"] = str(r["exact"]).lower() == "true"
        for k in ("verified", "rank_change", "note", "semantics"):
            r[k] = "" if r[k] is None else str(r[k])
    levels = level_legend(rows)
    timed = set(rows["level"]) - {"formula"} if len(rows) else set()
    why: dict[str, None] = {}  # why a point is drawn as written, each reason once
    for pt in study.points:
        if "program" in pt.levels:
            if str(pt.verdict.get("verdict", "")).startswith("INVALID"):
                why["Z3 found the schedule INVALID"] = None
            elif timed:
                why["no engine could run this schedule"] = None
            else:  # --levels formula: valid schedules, simply not timed
                why["no timed level was asked for: --levels names only formula"] = None
    for pt in study.points:
        for lv in pt.levels:
            if lv not in levels:
                levels[lv] = f"the programs as written, one slot per op ({'; '.join(why)})" if lv == "program" else lv
    return {
        "title": study.title,
        "levels": levels,
        "rows": recs,
        "points": [pt.to_json() for pt in study.points],
        "findings": list(study.findings),
        "findings_maps": [
            {"name": name, "src": "data:image/png;base64," + base64.b64encode(png).decode()}
            for name, png in study.findings_maps
        ],
        "wait_codes": WAIT_CODES,
        "notes": list(study.notes),
        # what a "valid" verdict proves: the verifier's registry, not a list kept here
        "verifier": [{"name": p.name, "description": p.description} for p in always_checked()],
    }


def render_html(study: Study) -> str:
    """The whole page as one string.

    Example:
        >>> import pandas as pd
        >>> page = render_html(Study(pd.DataFrame(columns=["level", "semantics"]), ()))
        >>> page.startswith("<!doctype html>"), "<script src" in page, "http" in page.split("<script")[0]
        (True, False, False)
    """
    data = json.dumps(page_data(study), separators=(",", ":"), allow_nan=False)
    # no "<" at all inside the data block: "</script>" would end it, and "<!--" followed by
    # "<script" (a --title, a schedule file's name) would keep the block's own end tag from closing
    # it, so the page script never ran; JSON reads "\u003c" back as "<"
    data = data.replace("<", "\\u003c")
    n_cfg = study.rows["config"].nunique() if "config" in study.rows else 0
    n_sched = study.rows["schedule"].nunique() if "schedule" in study.rows else 0
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sub = (
        f"ppverify {__version__} &middot; {stamp} &middot; {len(study.rows)} rows &middot; {n_cfg} configurations "
        f"&middot; {n_sched} schedules &middot; {len(study.points)} charted points, {study.num_ops_drawn} ops drawn"
    )
    notes = "".join(f"<div>{html.escape(n)}</div>" for n in study.notes)
    return _TEMPLATE.format(
        title=html.escape(study.title),
        sub=sub,
        css=_asset("report.css"),
        js=_asset("report.js"),
        data=data,
        notes=f'<div class="notes">{notes}</div>' if notes else "",
    )


def write_report(study: Study, path: str | Path) -> Path:
    """Write the page; returns the path written.

    Example:
        >>> import tempfile, os, pandas as pd
        >>> p = write_report(Study(pd.DataFrame(columns=["level", "semantics"]), ()), os.path.join(tempfile.mkdtemp(), "r.html"))
        >>> p.read_text().count("<script")
        2
    """
    from ..core.errors import ParameterError

    out = Path(path)
    if out.parent and not out.parent.exists():
        raise ParameterError("-o", str(path), f"folder {out.parent} does not exist")
    from ..core.files import atomic_write

    atomic_write(path, render_html(study), "-o")  # as given: Path() would drop a trailing '/'
    return out


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{css}
</style></head>
<body>
<header><h1>{title}</h1><div class="sub">{sub}</div></header>
<nav><a href="#comparison">Comparison</a><a href="#schedule">Schedule timelines</a><a href="#verification">Verification</a><a href="#findings">Findings</a></nav>
<main>
<section id="comparison"><h2>Comparison: every level side by side</h2>
<div class="controls"><label>Configuration <select id="cfg-filter"></select></label><span class="muted">click a schedule to see its timelines</span></div>
<div id="cmp-tables"></div>
<h3>Levels and marks</h3><div id="legend" class="legend"></div>{notes}
</section>
<section id="schedule"><h2>Schedule timelines</h2>
<div class="controls">
<label>Configuration <select id="pt-config"></select></label>
<label>Schedule <select id="pt-schedule"></select></label>
<span class="levels" id="pt-levels"></span>
<label>Memory <select id="pt-mem"></select></label>
<span><button id="zoom-in" title="zoom in">+</button> <button id="zoom-out" title="zoom out">&minus;</button> <button id="zoom-reset" title="whole step (or double-click)">reset</button></span>
</div>
<div id="verdict" class="verdict"></div>
<div id="gantt-wrap"><canvas id="gantt"></canvas><canvas id="gantt-overlay"></canvas><div id="tooltip"></div></div>
<div class="keys"><span><i class="sw" style="background:#4c8bf5"></i>F forward</span><span><i class="sw" style="background:#34a853"></i>B backward</span><span><i class="sw" style="background:#f29d38"></i>I input-gradient</span><span><i class="sw" style="background:#a06cd5"></i>W weight-gradient</span><span><i class="sw" style="background:rgba(76,139,245,0.55)"></i>activation transfer</span><span><i class="sw" style="background:rgba(52,168,83,0.55)"></i>gradient transfer</span><span id="key-collective"><i class="sw" style="background:rgba(0,121,107,0.8)"></i>collective (all-reduce)</span><span id="key-pipe1"><i class="sw" style="background:repeating-linear-gradient(135deg,#4c8bf5 0 2px,#dbe7fd 2px 4px)"></i>second pipe (hatched)</span><span><i class="sw" style="border:2px solid #d50000"></i>minimal core</span><span>wheel: zoom &middot; drag: pan &middot; double-click: whole step &middot; hover: op, start, end, what it waited for</span></div>
</section>
<section id="verification"><h2>Verification (Z3)</h2><div id="verif"></div></section>
<section id="findings"><h2>Findings</h2><div id="findings-body"></div></section>
</main>
<script id="ppverify-data" type="application/json">{data}</script>
<script>
{js}
</script>
</body></html>
"""
