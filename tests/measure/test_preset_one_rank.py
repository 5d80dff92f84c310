"""The preset writer and reader agree on ``runtime.handover.ranks_<n>``: one rank hands nothing over
to another, so a calibration holding one-rank terms writes no ``ranks_1`` section and its preset
loads back; a hand-written ``ranks_1`` is refused saying why, not as an unknown key."""

from __future__ import annotations

import pytest

from ppverify.engines.runtime import Handover
from ppverify.measure.calibration import Calibration
from ppverify.measure.preset_file import preset_text
from ppverify.systems.presets import PresetError
from ppverify.systems.system import load_system


def _calibration(by_ranks: tuple[tuple[int, Handover], ...]) -> Calibration:
    return Calibration(1e-4, 2e-5, 5e-5, 1e9, handover=Handover(late=2e-4), handover_by_ranks=by_ranks)


def test_a_preset_written_for_one_rank_loads_back(tmp_path):
    # a one-rank trace fits terms for one worker process only: pooled late 200 us, the same for n = 1
    text = preset_text(_calibration(((1, Handover(late=2e-4)),)), "one")
    assert "ranks_1" not in text
    path = tmp_path / "one.yaml"
    path.write_text(text)
    system = load_system(str(path))
    # late_us 200.000 written, read back in seconds: 200e-6; the 6th of HANDOVER_KEYS is late_us
    assert system.handover_s is not None and system.handover_s[5] == pytest.approx(200e-6)
    assert system.handover_by_ranks_s == ()


def test_the_other_counts_are_still_written(tmp_path):
    # 1, 2 and 65 processes measured: only 2 is a count a preset holds (2 .. 64); late 300 us there
    cal = _calibration(((1, Handover(late=2e-4)), (2, Handover(late=3e-4)), (65, Handover(late=9e-4))))
    path = tmp_path / "three.yaml"
    path.write_text(preset_text(cal, "three"))
    system = load_system(str(path))
    assert [n for n, _, _ in system.handover_by_ranks_s] == [2]
    assert system.handover_by_ranks_s[0][1][5] == pytest.approx(300e-6)


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("ranks_1", "ranks_1: one rank hands nothing over to another rank, so it has no ranks_1 section"),
        ("ranks_65", "ranks_65: not a rank count a preset holds (ranks_2 .. ranks_64 hold"),
        ("ranks_x", "ranks_x: unknown key; known keys:"),
    ],
)
def test_a_count_no_preset_holds_says_why(tmp_path, key, says):
    text = preset_text(_calibration(((2, Handover(late=3e-4)),)), "bad").replace("    ranks_2:", f"    {key}:")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(PresetError) as exc:
        load_system(str(path))
    assert f"bad.yaml: runtime.handover.{says}" in str(exc.value)
