"""On rounded ticks (preset costs in seconds) ``optimize`` reports its schedule's time at the true
durations: docs/optimization.md, "the value is the makespan `simulate` gives the saved schedule"."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main

PRESETS = ["--system", "ethernet-100g", "--model", "gpt3-1.3b"]


@pytest.mark.parametrize(
    "extra", [["-p", "2", "-m", "4", "--placement", "v", "--memory-cap", "20GiB"], ["-p", "4", "-m", "4"]]
)
def test_the_value_is_what_simulate_gives_the_saved_schedule(tmp_path, capsys, extra):
    out = tmp_path / "best.json"
    argv = ["optimize", *extra, *PRESETS, "--work-limit", "0.2", "--time-limit", "60", "--json", "--save", str(out)]
    assert main(argv) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["exact_ticks"] is False  # 0.1 us ticks, durations rounded down for the solver
    assert main(["simulate", str(out), "--json"]) == 0
    simulated = json.loads(capsys.readouterr().out)["makespan"]
    assert res["value"] == pytest.approx(simulated, rel=1e-12, abs=0)
    # the gap is the one definition, (value - bound) / value, from that value
    assert res["gap"] == pytest.approx((simulated - res["bound"]) / simulated, rel=1e-9)
    assert res["bound"] <= simulated
    # and verify holds the saved file to it (it was 35 ticks of 0.1 us short on the V, p = 4, m = 8;
    # 1e-12 relative: Z3 sums the durations exactly, simulate in floats)
    assert main(["verify", str(out), "--makespan-le", repr(res["value"] * (1 + 1e-12))]) == 0
    capsys.readouterr()
