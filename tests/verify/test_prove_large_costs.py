"""Two edges of `prove` found by a hunt: large integer costs are no counterexample, and the
interleaved closed forms and theorems refuse what they do not cover."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.verify.family_theorems import theorems
from ppverify.verify.prove import closed_form_starts, grid_check


def test_large_costs_are_not_a_counterexample() -> None:
    # by hand, at p = m = 8, v = 3, F = 1, B = 999999, the generator starts 0B3 at
    # 8666668.333333332 and the closed form gives 26000005/3 = 8666668.333333334: one rounding
    # step at 8.7e6 (about 1.9e-9), not a disagreement
    n, bad = grid_check("interleaved-1f1b", 1, 999999, range(8, 9), v=3)
    assert n == 1 and bad == []


def test_prove_with_microsecond_costs_proves_everything(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "interleaved-1f1b", "--costs", "F=1,B=500000"]) == 0
    assert "42/42 proved" in capsys.readouterr().out


@pytest.mark.parametrize("kwargs", [{"v": 1}, {"order": "bogus"}])
def test_interleaved_forms_refuse_what_they_do_not_cover(kwargs: dict) -> None:
    # v = 1 is 1F1B: B(0, 0) = p f + (p - 1) b = 5 at p = 3, f = b = 1, where the interleaved form gave 7
    with pytest.raises(ParameterError):
        theorems("interleaved-1f1b", 1, 1, **kwargs)
    with pytest.raises(ParameterError):
        closed_form_starts("interleaved-1f1b", 3, 3, 1, 1, **kwargs)
