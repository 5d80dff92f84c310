"""``report --from`` charts only the levels its rows computed: an optimum row 'not applicable'
(past the sweep's ``max_opt_ops``) got a chart anyway, solved again by the report, while
``compare --report`` of the same run shows none."""

from __future__ import annotations

import yaml

from ppverify.cli import main
from ppverify.report.build import report_from_file


def _sweep(tmp_path, levels):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {"schedules": ["gpipe"], "p": 2, "m": 2, "costs": {"F": 1, "B": 2}, "levels": levels, "max_opt_ops": 0}
        )
    )
    out = tmp_path / "s.csv"
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    return out


def test_level_without_a_number_has_no_chart(tmp_path):
    out = _sweep(tmp_path, ["async", "optimum"])
    st = report_from_file(str(out), str(tmp_path / "r.html"))
    (point,) = st.points
    assert list(point.levels) == ["async"]
    # gpipe p=2 m=2: 2 devices x 2 microbatches x (F, B) = 8 ops, drawn once (async only)
    assert st.num_ops_drawn == 8


def test_point_with_no_number_at_all_is_not_charted(tmp_path):
    out = _sweep(tmp_path, ["optimum"])
    st = report_from_file(str(out), str(tmp_path / "r.html"))
    assert (len(st.rows), len(st.points), st.num_ops_drawn) == (1, 0, 0)  # the row stays in the table
