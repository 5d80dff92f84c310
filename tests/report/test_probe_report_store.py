"""``report --from`` a sweep store cut mid-row (a killed sweep, or one still writing) says how the
store is made whole, instead of calling it corrupt."""

from __future__ import annotations

import pytest
import yaml

from ppverify.cli import main
from ppverify.core.errors import ScheduleFileError
from ppverify.report.results_file import load_results


def test_cut_store_names_the_repair(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump({"schedules": ["gpipe"], "p": 2, "m": [1, 2], "costs": {"F": 1}, "levels": ["slot"]}))
    store = tmp_path / "s.jsonl"
    assert main(["sweep", str(cfg), "--store", str(store), "--workers", "1", "--no-progress"]) == 0
    whole = store.read_text()
    assert whole.count("\n") == 2  # m = 1 and m = 2: two rows
    store.write_text(whole[:-20])  # the second row cut short
    with pytest.raises(ScheduleFileError, match=r"s.jsonl: row 2: the last row has no line end: .*rerunning its sweep"):
        load_results(store)
    assert main(["sweep", str(cfg), "--store", str(store), "--workers", "1", "--no-progress"]) == 0
    assert len(load_results(store)) == 2  # repaired: the cut row dropped and computed again
