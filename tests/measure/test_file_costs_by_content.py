"""measure reads a ppverify JSON's stored costs and communication by content, whatever its name."""

from __future__ import annotations

import shutil

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.io.json_comm import CommSettings
from ppverify.io.json_format import save_json
from ppverify.measure.options import file_comm_note, file_costs
from ppverify.schedules import build


def test_a_json_named_txt_keeps_its_costs_and_its_comm_note(tmp_path):
    s = build("1f1b", p=2, m=2)
    src = save_json(
        s, tmp_path / "s.json", CostModel.abstract(s.placement, F=1, B=3), comm=CommSettings(FixedDelay(1.0))
    )
    for name in ("s.txt", "s.sched", "s"):
        copy = tmp_path / name
        shutil.copy(src, copy)
        costs = file_costs(str(copy), s)
        # the file's B = 3 units slept at 10 ms a unit: 0.03 s, as for the same file named .json
        assert costs is not None and costs.duration["B"] == (0.03, 0.03), name
        note = file_comm_note(str(copy))
        assert note is not None and "--link-delay 0.01" in note, name  # the file's delay 1 at 10 ms a unit


def test_a_family_name_or_a_missing_file_has_no_stored_settings(tmp_path):
    s = build("1f1b", p=2, m=2)
    assert file_costs("1f1b", s) is None
    assert file_comm_note(str(tmp_path / "missing.json")) is None


def test_an_overlap_factor_is_read_as_1_for_the_run(tmp_path):
    # measure sleeps an overlapped cell's F and then its B: its prediction must not shorten the
    # cell by the file's overlap factor (0.5 x (F + B)), or it predicts a step the run cannot take
    s = build("dualpipe", p=2, m=4)
    f = save_json(s, tmp_path / "dp.json", CostModel.abstract(s.placement, F=1, B=2, overlap=0.5))
    costs = file_costs(str(f), s)
    assert costs is not None and costs.overlap == 1.0
    assert "overlap 0.5 read as 1" in costs.label
