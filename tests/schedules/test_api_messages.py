"""Library calls with values of the wrong type: refused in words naming the argument, or, where
the docs promise it (building-blocks.md: "any integral number, numpy's included"), accepted."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ppverify.compare.config import select_schedules
from ppverify.core.errors import InvalidScheduleError, ParameterError
from ppverify.core.ops import Op
from ppverify.core.placement import linear
from ppverify.core.schedule import Schedule
from ppverify.design.spec import Limits
from ppverify.engines.formulas import formula_for
from ppverify.schedules import build, get_family
from ppverify.schedules.blocks import Block, BlockOp, one_f_one_b_block, repeat
from ppverify.schedules.registry import _FAMILIES, Family, Param, register
from ppverify.verify import verify


def test_a_string_p_is_shown_quoted():
    with pytest.raises(ParameterError, match=r"^parameter p='4': must be an integer >= 1$"):
        build("1f1b", p="4", m=4)


def test_numpy_integers_are_integers():
    s = build("1f1b", p=np.int64(4), m=np.int64(8))
    assert (s.p, s.m, type(s.m)) == (4, 8, int)
    # 1F1B's block repeated 3 times: m = 3 microbatches, p = 2 devices
    assert repeat(one_f_one_b_block(2), np.int64(3)).m == 3
    blk = Block(linear(1), (BlockOp("F", np.int64(0), 0), BlockOp("B", np.int64(0), 1)), 2)
    assert [type(o.stage) for o in blk.ops] == [int, int]
    assert [str(o) for o in repeat(blk, 2).programs[0]] == ["0F0", "0B0", "0F1", "0B1"]


@pytest.mark.parametrize("name", [None, 5])
def test_a_family_name_that_is_no_string(name):
    with pytest.raises(ParameterError, match=r"family.*a family's name is a str"):
        get_family(name)
    with pytest.raises(ParameterError, match=r"family.*a family's name is a str"):
        build(name, p=4, m=4)


def _gen(p, m, k=1):
    assert isinstance(k, int)
    return build("gpipe", p=p, m=m)


def test_plugin_params_are_typed_at_register_and_build():
    with pytest.raises(ParameterError, match="a Param's type must be a type"):
        register(Family("api-msg-a", _gen, "demo", params=(Param("k", "int", 1, "k"),)))
    with pytest.raises(ParameterError, match="the default must be an int"):
        register(Family("api-msg-b", _gen, "demo", params=(Param("k", int, "one", "k"),)))
    assert "api-msg-a" not in _FAMILIES and "api-msg-b" not in _FAMILIES
    fam = register(Family("api-msg-c", _gen, "demo", params=(Param("k", int, 1, "k"),)))
    try:
        with pytest.raises(ParameterError, match=r"^parameter k='2': api-msg-c takes an int here, not a str$"):
            build("api-msg-c", p=2, m=2, k="2")
        assert build("api-msg-c", p=2, m=2, k=np.int64(2)).p == 2
    finally:
        for key in [k for k, f in _FAMILIES.items() if f is fam]:
            del _FAMILIES[key]


def test_formula_costs_are_checked():
    # 1F1B: (m + p - 1)(tF + tB) = 11 x (3 + 6) = 99 at F = 3 (B = 2F by default)
    assert formula_for("1f1b", 4, 8, {"F": 3}).makespan == 99
    with pytest.raises(ParameterError, match="not an op kind"):
        formula_for("1f1b", 4, 8, {"X": 1})
    with pytest.raises(ParameterError, match="must be a finite number >= 0, not a str"):
        formula_for("1f1b", 4, 8, {"F": "3"})


def test_an_unknown_kind_is_named_with_its_op_and_device():
    progs = (
        (Op("F", 0, 0), Op("F", 0, 1), Op("B", 0, 0), Op("B", 0, 1)),
        (Op("F", 1, 0), Op("B", 1, 0), Op("X", 1, 0), Op("F", 1, 1), Op("B", 1, 1)),
    )
    s = Schedule(linear(2), 2, progs, (0, 0))
    with pytest.raises(InvalidScheduleError, match=r"op 1X0 on device 1: unknown kind 'X'"):
        verify(s)


@pytest.mark.parametrize("offsets", [{0: 0, 1: 1}, {0, 1}, frozenset({0, 1})])
def test_block_offsets_in_a_mapping_or_set_are_refused(offsets):
    with pytest.raises(ParameterError, match="in stage order"):
        Block.of(linear(2), 3, F=offsets, B=(4, 2), lengths={"F": 1, "B": 2})


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_block_offsets_inf_or_nan_are_parameter_errors(bad):
    with pytest.raises(ParameterError, match="whole number of block units"):
        Block.of(linear(2), 3, F=(0, bad), B=(4, 2), lengths={"F": 1, "B": 2})


def test_select_schedules_reads_a_string_as_one_comma_list():
    assert [e.label for e in select_schedules("1f1b")] == ["1f1b"]
    assert [e.label for e in select_schedules("gpipe, 1f1b")] == ["gpipe", "1f1b"]


@pytest.mark.parametrize(
    "kw",
    [{"work": -1}, {"work": math.nan}, {"work": 0}, {"work": 1, "gap": -0.1}, {"work": 1, "search_work": math.nan}],
)
def test_limits_refuse_what_the_command_line_refuses(kw):
    with pytest.raises(ParameterError):
        Limits(**kw)


def test_the_design_notebook_writes_its_chart_to_a_temporary_folder():
    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "design_frontier.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    plots = [c for c in code if "plot_design(" in c]
    assert plots and all("tempfile.mkdtemp()" in c and 'plot_design(d, "' not in c for c in plots)
