"""``optimize`` and ``gap`` of a ppverify JSON file use the costs and communication it was saved
with, as ``simulate`` does: ``optimize FILE --evaluate`` of a schedule saved with a delay of 1 timed
it with delay 0 (``design --save-dir``'s V frontier point of 26.5 came back as 16.5)."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.io.json_comm import CommSettings
from ppverify.io.json_format import save_json
from ppverify.schedules import build


@pytest.fixture()
def saved(tmp_path):
    s = build("gpipe", p=2, m=2)
    return str(
        save_json(s, tmp_path / "g.json", CostModel.abstract(s.placement, F=1, B=2), comm=CommSettings(FixedDelay(1)))
    )


def _objective(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_evaluate_times_the_file_as_saved(saved, capsys):
    # by hand, GPipe p=2 m=2, F=1 B=2 per device, delay 1: device 1 runs F0 2-3, F1 3-4, B0 4-6,
    # B1 6-8; device 0's B0 waits for 6 + 1 = 7 (7-9), its B1 for 8 + 1 = 9: 11. Delay 0: 9.
    out = _objective(capsys, ["optimize", saved, "--evaluate", "--work-limit", "1", "--json"])
    assert out["value"] == 11 and out["comm"] == "fixed delay 1"
    out = _objective(capsys, ["optimize", saved, "--evaluate", "--work-limit", "1", "--comm-delay", "0", "--json"])
    assert out["value"] == 9


def test_gap_times_the_family_as_saved(saved, capsys):
    out = _objective(capsys, ["gap", saved, "--work-limit", "1", "--json"])
    assert out["family_value"] == 11
