"""``optimize FILE`` starts its search from the file's own order too, where that is faster than
every other start: it never ends slower than the schedule it was given (within the cap). The
file here is a V schedule (p = 4, m = 8, F = I = W = 1, one unit per transfer, cap 2) that a
longer run proved optimal; with a tiny work limit the greedy and family starts alone ended at 63.
"""

from __future__ import annotations

import json
from pathlib import Path

from ppverify.cli import main

FILE = str(Path(__file__).parents[1] / "data" / "optimize" / "v-p4-m8-cap2.json")


def _json(capsys, argv):
    main(argv)
    return json.loads(capsys.readouterr().out)


def test_the_files_own_order_is_a_start(capsys):
    own = _json(capsys, ["simulate", FILE, "--json"])["makespan"]  # the async engine's timing of the file
    res = _json(capsys, ["optimize", FILE, "--memory-cap", "2", "--work-limit", "0.05", "--json"])
    assert res["value"] <= own
    assert res["hint"] == "given"


def test_a_family_start_is_unchanged_where_the_order_ties(capsys):
    # 1F1B at p = 2, m = 4 (F = 1, B = 2) is optimal, (m + p - 1)(F + B) = 15, as the registered
    # family among the starts already: the given order adds nothing and the start keeps its name
    res = _json(capsys, ["optimize", "1f1b", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--json"])
    assert res["value"] == 15 and res["hint"] != "given"
