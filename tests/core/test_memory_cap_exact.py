"""A cap typed as the float of a peak holds that peak (docs/memory.md: "the cap is the exact
product, so a cap equal to a peak holds it"), where one activation is not one unit of the file."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.memory_cap import parse_memory_cap
from ppverify.core.memory_unit import exact_unit
from ppverify.core.placement import Placement, linear, v_shape

DOC = {
    "format": "ppverify-schedule",
    "version": 1,
    "p": 2,
    "m": 4,
    "placement": {"name": "linear", "maps": [[0, 1]]},
    "costs": {
        "duration": {"F": [1, 1], "B": [2, 2], "I": [1, 1], "W": [1, 1]},
        "activation": [2, 3],
        "freed_by_I": [0, 0],
    },
}
GPIPE_D0 = [["0F0", "0F1", "0F2", "0F3", "0B0", "0B1", "0B2", "0B3"]]
ONE_F_ONE_B_D0 = [["0F0", "0F1", "0B0", "0F2", "0B1", "0F3", "0B2", "0B3"]]
D1 = [["1F0", "1B0", "1F1", "1B1", "1F2", "1B2", "1F3", "1B3"]]


def _file(tmp_path, programs) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(dict(DOC, programs=programs)))
    return str(path)


def test_the_float_of_a_peak_resolves_to_the_exact_product():
    # activation [2, 3] on a linear p = 2: one activation is 3 units (device 1's share), so
    # 2.6666666666666665 (the float of 8/3) activations are 8/3 x 3 = 8 units, not the float
    # 2.6666666666666665 x 3 = 7.999999999999999 under them
    pl = linear(2)
    costs = dataclasses.replace(CostModel.abstract(pl), activation=(2.0, 3.0))
    cap = parse_memory_cap("2.6666666666666665", costs, pl)
    assert cap is not None
    assert cap.exact == Fraction(8) and cap.value == 8.0
    # stage activations: 8/3 of M_F = 3 units are 8 units too
    mf = parse_memory_cap("2.6666666666666665MF", costs, pl)
    assert mf is not None and mf.exact == Fraction(8)


def test_verify_and_simulate_hold_a_peak_under_a_cap_equal_to_it(tmp_path, capsys):
    # GPipe's device 0 holds its 4 forwards of 2 units = 8 units = 8/3 activations (by hand)
    path = _file(tmp_path, GPIPE_D0 + D1)
    assert main(["verify", path, "--memory-cap", "2.6666666666666665"]) == 0
    assert "proved  memory" in capsys.readouterr().out
    assert main(["simulate", path, "--memory-cap", "2.6666666666666665", "--no-table"]) == 0
    assert "every device within it" in capsys.readouterr().out
    # a cap a hair under it (2.666666666666666 x 3 = 7.999999999999998 < 8) is still refused
    assert main(["verify", path, "--memory-cap", "2.666666666666666"]) == 1
    assert "VIOLATED memory: device 0" in capsys.readouterr().out


def test_a_peak_equal_to_the_cap_prints_to_nearest(tmp_path, capsys):
    # 1F1B's device 0 holds 2 forwards of 2 units = 4 units = 4/3 activations: 1.33333 to six
    # digits (as show prints it); the cap is rounded up to 1.33334 so it reads back at least 4/3
    path = _file(tmp_path, ONE_F_ONE_B_D0 + D1)
    assert main(["verify", path, "--memory-cap", "1.3333333333333333"]) == 0
    out = capsys.readouterr().out
    assert "activation memory <= 1.33334 (activations)" in out
    assert "(peaks 1.33333, 1)" in out


def test_a_cap_under_a_positive_stage_names_that_stage_when_another_holds_nothing():
    # "activation": [0, 1]: stage 0's forwards hold nothing and always start, so a cap of 0.5
    # (under stage 1's 1 unit = 1 activation) is the largest stage's refusal, naming stage 1
    pl = Placement(2, ((0, 1),))
    costs = dataclasses.replace(CostModel.abstract(pl), activation=(0.0, 1.0))
    with pytest.raises(ParameterError) as err:
        parse_memory_cap("0.5", costs, pl)
    msg = str(err.value)
    assert "below the largest stage's activation (0.5 < 1 activation, stage 1)" in msg
    assert "no forward could start" not in msg


def test_one_activation_is_the_largest_devices_sum_not_v_times_the_largest_stage():
    # docs/memory.md: ZB-V at p = 2 holds stages 0 and 3 on device 0 (1 + 4 = 5 units) and 1 and 2
    # on device 1 (2 + 3 = 5): one activation is 5 units, where "the largest stage's times the
    # stages per device" would be 4 x 2 = 8
    pl = v_shape(2)
    costs = dataclasses.replace(CostModel.abstract(pl), activation=(1.0, 2.0, 3.0, 4.0))
    assert exact_unit(costs, pl) == 5
    cap = parse_memory_cap("2", costs, pl)
    assert cap is not None and cap.exact == 10
