"""``scripts/bench_design_measured.py --link-delay``: the preset it hands to ``design`` and to the
runs is the calibrated one with the emulated delay added, nothing else changed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ppverify.systems.system import load_system

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_design_measured.py"
PRESET = Path(__file__).resolve().parents[2] / "examples" / "systems" / "calibrated-2core.yaml"


def test_link_delay_preset_is_the_calibrated_one_plus_the_delay():
    spec = importlib.util.spec_from_file_location("bench_design_measured", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = Path(mod._with_link_delay(str(PRESET), 0.01))
    try:
        slow, base = load_system(str(path)), load_system(str(PRESET))
    finally:
        path.unlink()
    assert base.link_delay_s == 0.0 and slow.link_delay_s == pytest.approx(0.01)
    # 10 ms more on every cross-device transfer, the runtime's terms unchanged
    assert slow.transfer_time(0, 1, 1000) - base.transfer_time(0, 1, 1000) == pytest.approx(0.01)
    assert (slow.action_overhead_s, slow.handover_s) == (base.action_overhead_s, base.handover_s)
