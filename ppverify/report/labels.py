"""Labels beside the marks of a scatter plot, placed so that none covers another.

Families often sit on nearly the same (peak, step time): placed at one fixed offset their names
print over each other and read as none. Each label tries positions around its mark at growing
distance and keeps the first that stays inside the axes and overlaps no label placed before it,
no mark and the legend; a label set away from its mark gets a thin line back to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

#: distances from the mark (points) tried in turn, and the directions tried at each of them
_RADII = (4.0, 11.0, 19.0, 28.0, 38.0, 50.0, 64.0, 80.0)
_ANGLES = (20, -20, 90, -90, 160, 200, 55, -55, 125, -125)
#: beyond this distance a label is joined to its mark by a line
_LEADER = 12.0
#: half the side of the square a mark covers, in display pixels
_MARK_HALF = 4.0


def _alignment(angle: float) -> tuple[str, str]:
    """Text alignment that puts the label on the far side of the mark for ``angle``."""
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    ha = "left" if c > 0.3 else "right" if c < -0.3 else "center"
    va = "bottom" if s > 0.3 else "top" if s < -0.3 else "center"
    return ha, va


def _free(box: Bbox, inside: Bbox, taken: Sequence[Bbox]) -> bool:
    pad = box.expanded(1.04, 1.1)
    fits = inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
    return fits and not any(pad.overlaps(t) for t in taken)


def place_labels(ax: Any, marks: Sequence[tuple[float, float, str]], fontsize: float = 7.0) -> list[Annotation]:
    """Annotate each ``(x, y, text)`` of ``marks`` (data coordinates) beside its point, no two labels
    overlapping where the axes leave room; call it after everything else is drawn on ``ax`` (its
    limits and legend fixed), since the placement is computed in display space.

    Example:
        >>> import matplotlib.pyplot as plt
        >>> fig, ax = plt.subplots()
        >>> _ = ax.scatter([1, 1.01, 1.02], [5, 5, 5.01]); _ = ax.set_xlim(0, 3); _ = ax.set_ylim(0, 10)
        >>> labels = place_labels(ax, [(1, 5, "1f1b"), (1.01, 5, "zb-h1"), (1.02, 5.01, "zbv")])
        >>> boxes = [a.get_window_extent() for a in labels]
        >>> any(boxes[i].overlaps(boxes[j]) for i in range(3) for j in range(i + 1, 3))
        False
        >>> plt.close(fig)
    """
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    taken: list[Bbox] = []
    for x, y in [(x, y) for x, y, _ in marks]:
        px, py = ax.transData.transform((x, y))
        taken.append(Bbox.from_extents(px - _MARK_HALF, py - _MARK_HALF, px + _MARK_HALF, py + _MARK_HALF))
    legend = ax.get_legend()
    if legend is not None:
        taken.append(legend.get_window_extent(renderer))
    out: list[Annotation] = []
    # left to right, so that a crowd's labels fan out in reading order
    for x, y, text in sorted(marks, key=lambda t: (t[0], -t[1])):
        chosen: tuple[float, float, float] | None = None
        for r in _RADII:
            for deg in _ANGLES:
                dx, dy = r * math.cos(math.radians(deg)), r * math.sin(math.radians(deg))
                ha, va = _alignment(deg)
                trial = ax.annotate(
                    text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=fontsize
                )
                box = trial.get_window_extent(renderer)
                trial.remove()
                if _free(box, inside, taken):
                    chosen = (dx, dy, float(deg))
                    taken.append(box)
                    break
            if chosen is not None:
                break
        dx, dy, angle = chosen if chosen is not None else (3.0, 3.0, 45.0)  # no room left: the old place
        ha, va = _alignment(angle)
        far = math.hypot(dx, dy) > _LEADER
        arrow = {"arrowstyle": "-", "color": "#888888", "lw": 0.6, "shrinkA": 0, "shrinkB": 3} if far else None
        out.append(
            ax.annotate(
                text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=fontsize,
                arrowprops=arrow,
            )
        )  # fmt: skip
    return out
