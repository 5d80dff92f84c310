"""How a memory cap is echoed and refused on stages of unequal size (bug hunt of memory units):
the stages that convert activations into stage activations are the largest device's, not the
average; a cap between the smallest and the largest stage activation names the largest stage
instead of saying no forward could start. Expected values derived by hand in the comments."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.memory_cap import parse_memory_cap
from ppverify.core.memory_text import held_and_cap
from ppverify.core.placement import Placement, linear, v_shape

UNEVEN = Placement(2, ((0, 1, 1),))  # device 0: stage 0; device 1: stages 1 and 2


def test_uneven_placement_names_the_stages_that_convert():
    # by hand: each stage holds p/S = 2/3 unit; one activation is device 1's 2 stages = 4/3; 4MF
    # = 4 x 2/3 = 8/3 = 2 activations: the ratio is 2 stages (the largest device's), not the
    # average S/p = 1.5 it printed
    cap = parse_memory_cap("4MF", CostModel.abstract(UNEVEN), UNEVEN)
    assert cap.activations == pytest.approx(2) and cap.stage_activations == pytest.approx(4)
    assert cap.describe() == "cap 2 activations (4 stage activations, 2 stages on the largest device)"
    # even placements keep "per device": V at p = 2 holds 2 stages on every device
    assert (
        parse_memory_cap("4MF", CostModel.abstract(v_shape(2)), v_shape(2))
        .describe()
        .endswith("(4 stage activations, 2 stages per device)")
    )


def test_verify_echoes_the_uneven_cap_the_same(tmp_path, capsys):
    doc = json.loads((Path(__file__).parents[1] / "data" / "uneven-0-1-1.json").read_text())
    path = tmp_path / "u.json"
    path.write_text(json.dumps(doc))
    main(["verify", str(path), "--memory-cap", "4MF"])
    assert "cap 2 activations (4 stage activations, 2 stages on the largest device)" in capsys.readouterr().out


def _act13() -> tuple[CostModel, Placement]:
    pl = linear(2)
    return dataclasses.replace(CostModel.unit(pl), activation=(1.0, 3.0)), pl


def test_a_cap_between_the_stages_names_the_largest():
    # by hand: activation [1, 3] on linear p = 2: one activation is 3 units (the largest device's),
    # stage 0 holds 1/3 of one and stage 1 one. Cap 0.5 holds stage 0's forwards, never stage 1's
    costs, pl = _act13()
    with pytest.raises(ParameterError) as err:
        parse_memory_cap("0.5", costs, pl)
    assert str(err.value).endswith(
        "is below the largest stage's activation (0.5 < 1 activation, stage 1): its forwards could never run"
    )
    # 0.3 < 1/3: below every stage, so indeed no forward could start (the smallest stage is named)
    with pytest.raises(
        ParameterError, match=r"below one stage activation \(0\.3 < 0\.333333 activations\): no forward"
    ):
        parse_memory_cap("0.3", costs, pl)
    assert parse_memory_cap("1", costs, pl).value == 3.0


def test_verify_refuses_the_cap_between_stages_in_one_line(tmp_path, capsys):
    costs, _ = _act13()
    from ppverify.io.json_format import save_json
    from ppverify.schedules import build

    path = save_json(build("gpipe", p=2, m=2), tmp_path / "a13.json", costs)
    assert main(["verify", str(path), "--memory-cap", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "largest stage's activation" in err and "Traceback" not in err


def test_held_and_cap_tells_unequal_amounts_apart():
    # docs/memory.md: the fewest digits that read back apart; 7/3 and 2.3333333 agree to 8
    # significant digits (2.3333333), so 9: 2.33333333 against 2.3333333(0)
    held = held_and_cap(Fraction(7, 3), Fraction("2.3333333"), "activations")
    assert held == ("2.33333333 activations", "2.3333333")
    # bytes as GiB: 6149513216 B = 5.727 GiB and 5534561894 B = 5.154 GiB differ at 3 digits
    assert held_and_cap(Fraction(6149513216), Fraction(5534561894), "bytes") == ("5.73 GiB", "5.15 GiB")
