"""Idle time is ``makespan - busy`` per device, clamped at 0: a device busy the whole step has no
idle time, even when its ops' lengths, summed in floats, come out a rounding above the makespan."""

from __future__ import annotations

import json

from ppverify.cli import main


def test_one_device_running_every_op_has_no_bubble(capsys):
    # p = 1: one device runs all of hanayo's ops back to back, so idle = 0 and the bubble ratio
    # is 0 (it printed -0.0000: busy summed in floats above the makespan)
    args = ["simulate", "hanayo", "-p", "1", "-m", "1", "--waves", "4", "--system", "ideal", "--model", "gpt3-1.3b"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bubble_ratio"] == 0.0 and all(x == 0.0 for x in out["idle"])
    assert main([*args, "--no-table"]) == 0
    assert "bubble ratio  0.0000 " in capsys.readouterr().out
