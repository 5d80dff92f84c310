"""Family labels of the design plot: crowded marks get labels that do not cover each other."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.text import Text

from ppverify.report.labels import place_labels

# the registered families at p = 4, m = 12, unit costs (F = B = 1 slot... as `design -p 4` prints
# them): five families within one activation and 8 units of each other around peak 4
CROWD = [
    (4.0, 45.0, "1f1b"),
    (4.0, 42.0, "1f1b-split"),
    (4.0, 39.0, "zb-h1"),
    (4.0, 37.5, "interleaved-zb, zbv"),
    (4.5, 39.0, "dualpipev"),
    (5.0, 40.0, "chimera"),
    (5.0, 38.0, "dualpipe"),
    (5.5, 40.5, "interleaved-1f1b"),
    (3.0, 40.5, "v-half"),
    (2.0, 41.5, "v-min"),
    (7.0, 39.0, "zb-h2"),
    (8.0, 57.0, "chimera-asym"),
    (12.0, 45.0, "gpipe"),
    (12.0, 42.0, "hanayo"),
    (12.0, 40.5, "looped-bfs"),
]


def _text_boxes(labels):
    # the text alone: a leader line may cross another label's line, never its words
    return [Text.get_window_extent(a) for a in labels]


def test_crowded_family_labels_do_not_overlap_and_stay_inside():
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter([x for x, _, _ in CROWD], [y for _, y, _ in CROWD], marker="x")
    ax.set_xlim(0.5, 12.7)
    ax.set_ylim(32, 150)
    labels = place_labels(ax, CROWD)
    fig.canvas.draw()
    boxes = _text_boxes(labels)
    inside = ax.get_window_extent()
    assert sorted(a.get_text() for a in labels) == sorted(t for _, _, t in CROWD)
    for i, b in enumerate(boxes):
        assert inside.x0 <= b.x0 and b.x1 <= inside.x1 and inside.y0 <= b.y0 and b.y1 <= inside.y1, labels[i].get_text()
        for j in range(i + 1, len(boxes)):
            assert not b.overlaps(boxes[j]), (labels[i].get_text(), labels[j].get_text())
    plt.close(fig)


def test_a_label_moved_away_gets_a_leader_line_and_a_lone_one_none():
    import math

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    # twenty names on one point cannot all sit within 12 points of it: some are led back by a line
    crowd = [(5, 5, f"family-{i}") for i in range(20)]
    labels = place_labels(ax, [*crowd, (1, 9, "alone")])
    for a in labels:
        far = math.hypot(*a.xyann) > 12
        assert (a.arrow_patch is not None) == far, a.get_text()
    assert next(a for a in labels if a.get_text() == "alone").arrow_patch is None
    assert sum(a.arrow_patch is not None for a in labels) >= 1
    plt.close(fig)


def test_the_legend_is_kept_clear():
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.scatter([9.5], [9.5], label="a mark under the legend's corner")
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    ax.legend(loc="upper right")
    (label,) = place_labels(ax, [(9.5, 9.5, "family")])
    fig.canvas.draw()
    assert not Text.get_window_extent(label).overlaps(ax.get_legend().get_window_extent())
    plt.close(fig)
