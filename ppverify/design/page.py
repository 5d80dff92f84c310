"""``design --report PAGE.html``: one self-contained page with the frontier drawn as SVG (the
frontier as a step line, every family as a labelled point), where hovering a point names its
schedule, bound and gap, and clicking it opens that schedule's timeline (a Gantt chart of the async
engine, inlined as SVG) further down the page. The notes the text report prints beside a family
(why it is not on the frontier: its placement not searched, the budget to add...) are listed
under the frontier, and repeated in that family's hover and timeline. Nothing is loaded from
elsewhere: it opens offline.
"""

from __future__ import annotations

import html
import math
import tempfile
from pathlib import Path

from .points import FamilyPoint, Point
from .run import Design

_W, _H, _PAD = 720, 420, 56
#: an upper estimate of one character's width in the 9 px labels (sans-serif), to fit them in
_LABEL_CHAR_PX = 5.0
#: an upper estimate of one character's width in the 10 px tick labels
_TICK_CHAR_PX = 6.0

_SCRIPT = """
document.querySelectorAll('a[href^="#point-"], a[href^="#family-"]').forEach(function (a) {
  a.addEventListener('click', function () {
    var d = document.getElementById(a.getAttribute('href').slice(1));
    if (d) { d.open = true; }
  });
});
"""


def _gantt_svg(point: Point | FamilyPoint, d: Design) -> str:
    from ..engines import run
    from ..report.plots import gantt
    from ..systems.preset_models import resolve_presets

    sched = point.schedule
    if sched is None:
        return "<p>(no schedule)</p>"
    ctx = resolve_presets(d.request.settings, sched)
    tl = run(sched, ctx.costs, ctx.comm, semantics="async")
    with tempfile.TemporaryDirectory() as tmp:
        path = gantt(tl, Path(tmp) / "g.svg", title=None)
        text = path.read_text(encoding="utf-8")  # matplotlib writes the SVG as UTF-8 (its title has a ·)
    return text[text.find("<svg") :]


def _scale(values: list[float], lo_px: float, hi_px: float) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    return lo, (hi_px - lo_px) / (hi - lo)


def y_ticks(lo: float, hi: float) -> list[float]:
    """Three to five evenly spaced round values from ``lo`` to ``hi`` (one when they are equal):
    the step is 1, 2 or 5 times a power of ten.

    Example:
        >>> y_ticks(0.212045, 4.80977)
        [1.0, 2.0, 3.0, 4.0]
        >>> y_ticks(36, 36), y_ticks(10, 11)
        ([36], [10.0, 10.5, 11.0])
    """
    if hi - lo < 1e-12:
        return [lo]
    top = math.floor(math.log10(hi - lo))
    for p10 in range(top + 1, top - 3, -1):
        for mult in (5, 2, 1):
            step = mult * 10.0**p10
            first = math.ceil(lo / step - 1e-9)
            ticks = [round(k * step, 12) for k in range(first, math.floor(hi / step + 1e-9) + 1)]
            if len(ticks) >= 3:
                return ticks[:: -(-len(ticks) // 5)] if len(ticks) > 5 else ticks
    return [lo, hi]


def frontier_svg(d: Design) -> str:
    """The frontier and the families as an SVG: every point a link (``#point-i``, ``#family-j``)
    with a ``<title>`` naming its schedule, step time, bound and gap.

    Example:
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> dd = design(DesignRequest(2, 2, "linear", "1,2", PresetSettings(costs="F=1,B=2"), Limits(2.0)), progress=False)
        >>> svg = frontier_svg(dd)
        >>> svg.count('class="pt frontier"'), "bound 9, gap 0 %" in svg
        (2, True)
    """
    front = [(q, q.peak, q.time) for q in d.front if q.peak is not None and q.time is not None]
    fams = list(d.families)
    xs = [x for _, x, _ in front] + [f.peak for f in fams]
    ys = [y for _, _, y in front] + [f.time for f in fams]
    if not xs:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
    x0, sx = _scale(xs, _PAD, _W - 20)
    y0, sy = _scale(ys, 20, _H - _PAD)

    def X(v: float) -> float:
        return _PAD + (v - x0) * sx

    def Y(v: float) -> float:
        return _H - _PAD - (v - y0) * sy

    parts = ["<svg>"]  # the opening tag last: the labels decide how far the picture reaches
    parts.append(f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - 10}" y2="{_H - _PAD}" stroke="#444"/>')
    parts.append(f'<line x1="{_PAD}" y1="10" x2="{_PAD}" y2="{_H - _PAD}" stroke="#444"/>')
    parts.append(
        f'<text x="{_W / 2}" y="{_H - 14}" text-anchor="middle" font-size="12">peak, in '
        f"{html.escape(d.memory_unit())}</text>"
    )
    unit = html.escape(d.setups[0].costs.time_unit if d.setups else "units")
    parts.append(
        f'<text x="14" y="{_H / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {_H / 2})">step time ({unit})</text>'
    )
    # a tick label per distinct peak, but none closer to the last one drawn than their half widths
    # (peaks 1.74901 and 1.8745 once printed over each other)
    last = -math.inf
    for v in sorted(set(xs)):
        half = len(f"{v:g}") * _TICK_CHAR_PX / 2
        if X(v) - half < last + 4:
            continue
        parts.append(f'<text x="{X(v):.1f}" y="{_H - _PAD + 16}" text-anchor="middle" font-size="10">{v:g}</text>')
        last = X(v) + half
    # a few evenly spaced step times, left of the axis and clear of a frontier circle (radius 6)
    # on it, vertically centred on their value
    for v in y_ticks(min(ys), max(ys)):
        parts.append(f'<text x="{_PAD - 9}" y="{Y(v):.1f}" dy="0.35em" text-anchor="end" font-size="10">{v:g}</text>')
    if front:
        pts = []
        for (_, x, y), nxt in zip(front, front[1:] + [None]):
            pts.append(f"{X(x):.1f},{Y(y):.1f}")
            if nxt is not None:
                pts.append(f"{X(nxt[1]):.1f},{Y(y):.1f}")
        parts.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="#C44E52" stroke-width="2"/>')
    # the families first: the frontier's points are drawn over them and stay clickable. Families
    # at one (peak, time) share one marker, whose hover names them all, and each keeps its own
    # label beside it, a link of its own (one marker over another could not be reached)
    at: dict[tuple[float, float], list[int]] = {}
    for j, f in enumerate(fams):
        at.setdefault((f.peak, f.time), []).append(j)
    notes = family_notes(d)
    tips = {
        j: f"{f.family} ({f.placement}): time {f.time:g}, peak {f.peak:g}" + (f"; {notes[j]}" if j in notes else "")
        for j, f in enumerate(fams)
    }
    for (peak, time), js in at.items():
        parts.append(
            f'<a class="pt family" href="#family-{js[0]}"><rect x="{X(peak) - 4:.1f}" y="{Y(time) - 4:.1f}" '
            f'width="8" height="8" fill="#4C72B0"><title>{html.escape(chr(10).join(tips[j] for j in js))}</title></rect></a>'
        )
    # one line of labels per marker, its families side by side, placed where it covers no marker,
    # frontier point or other label (a covered one could be neither read nor clicked), as close
    # above its marker as that allows, with a thin line back to the marker when it had to move
    taken = [(X(x) - 6, X(x) + 6, Y(y) - 6, Y(y) + 6) for _, x, y in front]
    taken += [(X(x) - 4, X(x) + 4, Y(y) - 4, Y(y) + 4) for x, y in at]
    # how far the labels reach (right of the largest peak, above the fastest time): the picture
    # grows to hold them, else a label there is cut off and its link cannot be clicked
    right, top = float(_W), 0.0
    for (peak, time), js in at.items():
        lx0 = X(peak) + 8  # clear of a frontier circle (radius 6) drawn on the marker
        lx1 = lx0 + sum(_LABEL_CHAR_PX * len(fams[j].family) + 5 for j in js)
        y_label = Y(time) + 3  # a 9 px font's baseline that centres the text on the marker

        def clear(y: float, lx0: float = lx0, lx1: float = lx1) -> bool:
            return all(lx1 <= a or b <= lx0 or y + 2 <= c or e <= y - 9 for a, b, c, e in taken)

        while not clear(y_label):
            y_label -= 10
        taken.append((lx0, lx1, y_label - 9, y_label + 2))
        right, top = max(right, lx1), min(top, y_label - 10)
        if y_label != Y(time) + 3:
            parts.append(
                f'<line x1="{X(peak) + 4:.1f}" y1="{Y(time):.1f}" x2="{lx0 - 1:.1f}" y2="{y_label - 3:.1f}" '
                'stroke="#999" stroke-width="0.6"/>'
            )
        x_label = lx0
        for j in js:
            parts.append(
                f'<a class="pt family-label" href="#family-{j}"><text x="{x_label:.1f}" '
                f'y="{y_label:.1f}" font-size="9">{html.escape(fams[j].family)}'
                f"<title>{html.escape(tips[j])}</title></text></a>"
            )
            x_label += _LABEL_CHAR_PX * len(fams[j].family) + 5
    for i, (q, x, y) in enumerate(front):
        gap = "-" if q.gap is None else f"{100 * q.gap:.3g} %"
        budget = d.budget_name(q.budget)  # as typed, as the text's table names it
        tip = (
            f"frontier {i}: {q.placement}, budget {budget}, from {q.start or '-'}: time {y:g}, "
            f"bound {q.bound:g}, gap {gap}, peak {x:g}"
        )
        parts.append(
            f'<a class="pt frontier" href="#point-{i}"><circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="6" '
            f'fill="#C44E52"><title>{html.escape(tip)}</title></circle></a>'
        )
    parts.append("</svg>")
    width, height = math.ceil(right), math.ceil(_H - top)
    parts[0] = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 {math.floor(top)} {width} {height}" class="frontier">'
    )
    return "\n".join(parts)


def family_notes(d: Design) -> dict[int, str]:
    """The note the text report prints beside a family (:meth:`~.run.Design.family_rows`: why one
    faster than the frontier at its peak, or fitting below it, is not on it), by the family's index
    in ``d.families``; families without a note are left out.

    Example:
        >>> from ppverify.design.points import FamilyPoint, Point
        >>> from ppverify.design.run import DesignRequest
        >>> from ppverify.design.spec import setups
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> rq = DesignRequest(2, 4, "linear", "1", PresetSettings(costs="F=1,B=2"))
        >>> one = Point("linear", 1.0, "OPTIMAL", 24.0, 24.0, 1.0, None, None)
        >>> fams = (FamilyPoint("gpipe", "linear", 4.0, 30.0, None), FamilyPoint("zbv", "v", 2.0, 12.5, None))
        >>> family_notes(Design(rq, setups("linear", 2, 4, rq.settings), (one,), fams, (one,), 1, 1, False))
        {1: 'faster than the frontier: its placement was not searched'}
    """
    return {j: str(row["note"]) for j, row in enumerate(d.family_rows()) if row.get("note")}


def notes_html(d: Design) -> str:
    """The families' notes as a list under the frontier, each naming its family (a link to its
    timeline) and placement; with the families timed only in part (``--time-limit``), a first line
    says so. Empty when there is nothing to note.

    Example:
        >>> from ppverify.design.points import FamilyPoint
        >>> from ppverify.design.run import DesignRequest
        >>> d = Design(DesignRequest(2, 4, "linear"), (), (), (FamilyPoint("zbv", "v", 2.0, 12.5, None),), (), 0, 0, False)
        >>> print(notes_html(d))  # doctest: +NORMALIZE_WHITESPACE
        <h2>Notes</h2><ul class="family-notes"><li><a href="#family-0">zbv</a> (v): fits below every frontier point
        (the frontier is empty): its placement was not searched</li></ul>
    """
    items = []
    if d.families_cut:  # else a short list reads as every family there is
        items.append(
            f"<li>the run's --time-limit passed while the families were timed: {len(d.families)} of them listed</li>"
        )
    for j, note in family_notes(d).items():
        f = d.families[j]
        items.append(
            f'<li><a href="#family-{j}">{html.escape(f.family)}</a> ({html.escape(f.placement)}): '
            f"{html.escape(note)}</li>"
        )
    return f'<h2>Notes</h2><ul class="family-notes">{"".join(items)}</ul>' if items else ""


def design_page(d: Design, title: str | None = None) -> str:
    """The whole page: the report text, the frontier SVG and every timeline (closed until clicked);
    ``title`` heads it (default: the design's p and m).

    Example:
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> dd = design(DesignRequest(2, 2, "linear", "2", PresetSettings(costs="F=1,B=2"), Limits(2.0)), progress=False)
        >>> page = design_page(dd)
        >>> page.count('<details id="point-'), '<details id="family-0">' in page
        (1, True)
    """
    from .output import design_text

    heading = html.escape(title or f"Design p={d.request.p} m={d.request.m}")
    body = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>ppverify {heading}</title>",
        "<style>body{font-family:sans-serif;margin:20px} pre{font-size:12px} details{margin:6px 0}"
        " a.pt{cursor:pointer} summary{cursor:pointer}</style></head><body>",
        f"<h1>{heading}</h1>",
        "<p>Hover a point for its schedule, bound and gap; click it for its timeline.</p>",
        frontier_svg(d),
        notes_html(d),
        f"<pre>{html.escape(design_text(d))}</pre>",
        "<h2>Frontier schedules</h2>",
    ]
    for i, q in enumerate(d.front):
        body.append(
            f'<details id="point-{i}"><summary>frontier {i}: {html.escape(q.placement)}, time {q.time:g}, '
            f"bound {q.bound:g}</summary>{_gantt_svg(q, d)}</details>"
        )
    body.append("<h2>Families</h2>")
    notes = family_notes(d)
    for j, f in enumerate(d.families):
        chart = _gantt_svg(f, d)  # an async run of the family's own schedule: no searched placement needed
        note = f'<p class="note">{html.escape(notes[j])}</p>' if j in notes else ""
        body.append(
            f'<details id="family-{j}"><summary>{html.escape(f.family)} ({html.escape(f.placement)}), '
            f"time {f.time:g}, peak {f.peak:g}</summary>{note}{chart}</details>"
        )
    body.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(body)


def write_design_page(d: Design, path: str | Path, title: str | None = None, option: str = "--report") -> Path:
    """Write :func:`design_page` (headed ``title``) to ``path`` (an ``.html`` or ``.htm`` file, as
    every report page); errors name ``option``, the option the path came from.

    Example:
        >>> write_design_page(None, "x.txt")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --report=x.txt: expected a file ending in .html (or .htm)
    """
    from ..core.files import atomic_write
    from ..report.build import check_output

    # the comparison page's rule: `report -o page.htm` took a results file's page and refused a design's
    check_output(str(path), option)
    target = Path(path)
    atomic_write(target, design_page(d, title), option)
    return target
