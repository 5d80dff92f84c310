"""`interleaved-1f1b --order megatron` follows Megatron-LM or refuses where Megatron refuses;
`chimera --units` says that it has no effect at m = p."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.engines.formulas import formula_for
from ppverify.schedules import build


def _program(s, d):
    return [str(o) for o in s.programs[d]]


def test_megatron_order_at_m_multiple_of_p_by_hand():
    # Megatron-LM (forward_backward_pipelining_with_interleaving, group size p): p=2, m=4, v=2.
    # Forwards go in groups of p = 2 microbatches per chunk: (mb0,c0) (mb1,c0) (mb0,c1) (mb1,c1)
    # (mb2,c0) (mb3,c0) (mb2,c1) (mb3,c1); backwards walk the same table with the chunk mirrored.
    # Device 1 holds chunk 0 as stage 1 and chunk 1 as stage 3. Its warm-up is
    # 2(p-d-1) + (v-1)p = 0 + 2 forwards; then forward k+2 and backward k alternate (6 times),
    # then the last 2 backwards.
    want = (
        ["1F0", "1F1"]
        + ["3F0", "3B0", "3F1", "3B1", "1F2", "1B0", "1F3", "1B1", "3F2", "3B2", "3F3", "3B3"]
        + ["1B2", "1B3"]
    )
    megatron = build("interleaved-1f1b", p=2, m=4, v=2, order="megatron")
    assert _program(megatron, 1) == want
    # at m = k*p, k >= 2, that is also PyTorch's order (its rounds are then groups of p)
    assert megatron.programs == build("interleaved-1f1b", p=2, m=4, v=2).programs


def test_megatron_order_at_m_equal_p_runs_every_forward_first():
    # Megatron Core <= 0.9 at m == p: all m*v = 4 forwards first on every device, then backwards
    s = build("interleaved-1f1b", p=2, m=2, v=2, order="megatron")
    assert _program(s, 1) == ["1F0", "1F1", "3F0", "3F1", "3B0", "3B1", "1B0", "1B1"]


@pytest.mark.parametrize(("p", "m"), [(4, 6), (4, 2), (3, 4), (2, 3)])
def test_megatron_order_refused_where_megatron_refuses(p, m):
    # m not a multiple of p (m < p included): Megatron-LM raises; ppverify must not show PyTorch's
    # order under Megatron's name
    for make in (
        lambda: build("interleaved-1f1b", p=p, m=m, v=2, order="megatron"),
        lambda: formula_for("interleaved-1f1b", p, m, v=2, order="megatron"),
    ):
        with pytest.raises(ParameterError, match=f"order=megatron .* multiple of p={p}") as err:
            make()
        assert err.value.name == "m"


def test_megatron_order_v1_is_plain_1f1b_for_any_m():
    # Megatron does not interleave with one chunk: its non-interleaved 1F1B takes any m
    s = build("interleaved-1f1b", p=4, m=6, v=1, order="megatron")
    assert s.programs == build("1f1b", p=4, m=6).programs


def test_cli_refuses_megatron_order_in_one_line(capsys):
    assert main(["show", "interleaved-1f1b", "-p", "4", "-m", "6", "--order", "megatron"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "order=megatron" in err and "multiple of p=4" in err


@pytest.mark.parametrize("family", ["chimera", "chimera-asym"])
def test_chimera_units_at_m_equal_p_says_it_has_no_effect(family):
    # m = p is one basic unit: concat and continuous are the same schedule, and the formula says so
    assert build(family, 4, 4, units="concat").programs == build(family, 4, 4).programs
    f = formula_for(family, 4, 4, units="concat")
    assert "units=concat has no effect at m = p = 4" in f.conditions
    assert "no effect" not in formula_for(family, 4, 8, units="concat").conditions
    assert "no effect" not in formula_for(family, 4, 4).conditions


def test_show_tells_the_user_units_has_no_effect(capsys):
    assert main(["show", "chimera", "-p", "4", "-m", "4", "--units", "concat"]) == 0
    assert "units=concat has no effect at m = p = 4" in capsys.readouterr().out
