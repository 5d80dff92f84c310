"""Zero-length and tiny ops in a ppverify JSON file (its reader accepts F = 0): the optimizer kept
them at 0 ticks only from this fix on. Before it, a 0 duration was stretched to one tick, so
``optimize`` of 1F1B p=2 m=2 with F=0, B=3 claimed OPTIMAL 18 with a certified bound of 18 (tick 3)
while the schedule runs in 9, and ``gap`` called the family 9 below its "optimum"."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.io.json_format import save_json
from ppverify.optimize.energy import available
from ppverify.schedules import build


def _file(tmp_path, name: str, p: int, m: int, F: list[float], B: list[float], unit: str = "units") -> str:
    s = build("1f1b", p=p, m=m)
    path = save_json(s, tmp_path / f"{name}.json", CostModel.abstract(s.placement, F=1, B=3))
    data = json.loads(path.read_text())
    data["costs"]["duration"]["F"] = F
    data["costs"]["duration"]["B"] = B
    data["costs"]["time_unit"] = unit
    path.write_text(json.dumps(data))
    return str(path)


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_zero_forward_is_not_stretched(tmp_path, capsys):
    path = _file(tmp_path, "fz", 2, 2, [0.0, 0.0], [3.0, 3.0])
    # by hand: every F takes 0, 1B0 runs 0-3, then 1B1 and 0B0 3-6 (0F0's activation waits), 0B1
    # 6-9: makespan 9. Device 0 alone needs 2 B's after 1B0's 3: no schedule beats 9 either.
    out = _json(capsys, ["optimize", path, "--work-limit", "1", "--json"])
    assert out["status"] == "OPTIMAL" and out["value"] == 9 and out["bound"] == 9
    out = _json(capsys, ["gap", path, "--work-limit", "1", "--json"])
    assert out["family_value"] == 9
    assert out["bound"] <= 9


@pytest.mark.parametrize("cap", ["1", "2", "none"])
def test_saved_optimum_simulates_to_its_value(tmp_path, capsys, cap):
    # zero-length forwards under a memory cap: the saved program order must reproduce the value
    # (a 0-length F tied in start with a B went after it and waited for the B's end: 23 -> 29)
    path = _file(tmp_path, "fz3", 3, 6, [0.0, 0.0, 0.0], [3.0, 2.0, 3.0])
    saved = str(tmp_path / f"opt{cap}.json")
    out = _json(capsys, ["optimize", path, "--work-limit", "2", "--memory-cap", cap, "--save", saved, "--json"])
    sim = _json(capsys, ["simulate", saved, "--json"])
    assert out["status"] == "OPTIMAL"
    assert sim["makespan"] == pytest.approx(out["value"])
    if cap == "none":
        # by hand, no cap: stage 2 (device 2) holds 6 B's of 3 = 18 and can start its first B only
        # at 0; its last B ends >= 18, then 1B5 (2) and 0B5 (3) follow: >= 23, which 1F1B reaches
        # (all forwards at 0, device 2 busy 0-18 back to back)
        assert out["value"] == 23


def test_tiny_forward_floored_keeps_the_bound_valid(tmp_path, capsys):
    # F = 1e-9 s is below the optimizer's 0.1 us tick: floored to 0 ticks (not stretched to one).
    # By hand the real makespan is 3 B's of 3 ms on device 0 after 1B0 plus the two F's on the
    # critical path: 9 ms + 3 ns; the bound, in floored ticks, must not exceed it (it is 9 ms).
    path = _file(tmp_path, "tiny", 2, 2, [1e-9, 1e-9], [3e-3, 3e-3], unit="s")
    out = _json(capsys, ["optimize", path, "--work-limit", "1", "--save", str(tmp_path / "o.json"), "--json"])
    sim = _json(capsys, ["simulate", path, "--json"])
    assert sim["makespan"] == pytest.approx(9e-3 + 3e-9, rel=1e-12)
    assert out["bound"] <= sim["makespan"]
    assert out["bound"] == pytest.approx(9e-3, rel=1e-9)


def test_tiny_times_keep_a_positive_tick(tmp_path, capsys):
    # F = 1.234567e-13 next to B = 3: the exact tick (about 1e-19) gives ~1e20 ticks, beyond the
    # cap on horizon ticks; the coarser tick used to round to 0 and fall back to the exact one.
    path = _file(tmp_path, "t13", 2, 2, [1.234567e-13] * 2, [3.0, 3.0])
    out = _json(capsys, ["optimize", path, "--work-limit", "1", "--json"])
    # by hand: 9 + 3 x 1.234567e-13 (as for F = 0 above, plus three forwards on the path)
    assert 0 < out["tick"] < 1e-9
    assert out["bound"] <= 9 + 3 * 1.234567e-13
    assert out["value"] == pytest.approx(9, rel=1e-9)


def test_available_with_zero_steps():
    # cap 4, up step 0 (all forwards at once: 4 every tick), down 2 per tick from the end:
    # down over 5 ticks is 10, 8, 6, 4, 2 -> min(4, .) = 4, 4, 4, 4, 2 = 18
    assert available(4, 0, 1, 1, 2, 5) == 18
    # both steps 0: the cap every tick, 4 x 5 = 20
    assert available(4, 0, 1, 0, 1, 5) == 20
