"""Building blocks (Qi et al., NeurIPS 2024, arXiv 2405.15362): 1F1B and ZB-H1 written as blocks
equal the registered families op for op; V-Min and V-Half peaks against the simulator; collisions
and broken dependencies are refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.placement import linear, v_shape
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.schedules.blocks import Block, block_peaks, block_span, one_f_one_b_block, repeat, v_block, zb_h1_block
from ppverify.schedules.v_half import v_half_delay
from ppverify.verify import verify


@given(st.integers(1, 8), st.integers(1, 24))
@settings(max_examples=60, deadline=None)
def test_one_f_one_b_block_is_1f1b(p: int, m: int) -> None:
    assert repeat(one_f_one_b_block(p), m).programs == build("1f1b", p=p, m=m).programs


@given(st.integers(1, 8), st.integers(1, 24))
@settings(max_examples=60, deadline=None)
def test_zb_h1_block_is_zb_h1(p: int, m: int) -> None:
    assert repeat(zb_h1_block(p), m).programs == build("zb-h1", p=p, m=m).programs


def test_one_f_one_b_block_by_hand() -> None:
    # p = 2: F at 0, 1; B of stage 1 at 2 (length 2), of stage 0 at 4; interval 3
    blk = one_f_one_b_block(2)
    assert [(o.kind, o.stage, o.offset, o.length) for o in blk.ops] == [
        ("F", 0, 0, 1), ("F", 1, 1, 1), ("B", 0, 4, 2), ("B", 1, 2, 2)
    ]  # fmt: skip
    # the unsqueezed repetition ends at 4 + 2 + 3 (m - 1)
    assert block_span(blk, 4) == 15


@pytest.mark.parametrize("name", ["v-min", "v-half"])
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6, 8])
def test_v_families_verify_and_peaks_match_simulator(name: str, p: int) -> None:
    m = 2 * p + 1
    sched = build(name, p=p, m=m)
    assert sched.placement.maps == v_shape(p).maps
    # hand closed form: floor((p+4)/3), plus V-Half's W delay (docs/building-blocks.md)
    expect = min(m, (p + 4) // 3 + (v_half_delay(p) if name == "v-half" else 0))
    report = verify(sched, memory_cap=expect)
    assert report.valid and "memory" in [prop for prop, _ in report.proved]
    assert not verify(sched, memory_cap=expect - 0.5).valid  # the peak is reached
    tl = run(sched, CostModel.abstract(sched.placement, F=1, I=1, W=1), semantics="async")
    assert [float(x) for x in tl.peak_memory()] == [float(expect)] * p


@given(st.integers(1, 12), st.integers(1, 40), st.integers(0, 3))
@settings(max_examples=80, deadline=None)
def test_v_block_peak_never_above_formula_exact_from_2p(p: int, m: int, w: int) -> None:
    peaks = block_peaks(v_block(p, w), m)
    bound = min(m, (p + 4) // 3 + w)
    assert max(peaks) <= bound
    if m >= 2 * p:
        assert peaks == (float(bound),) * p


@pytest.mark.parametrize("p", [2, 4])
def test_v_block_span_bounds_makespan(p: int) -> None:
    # at F = I = W = 1 per share a chunk pass lasts 1/2: the block's span in halves bounds the step
    m = 3 * p
    sched = build("v-min", p=p, m=m)
    tl = run(sched, CostModel.abstract(sched.placement, F=1, I=1, W=1), semantics="async")
    assert tl.makespan <= block_span(v_block(p), m) / 2
    assert tl.makespan >= 3 * m  # each device works 3m


def test_collision_and_dependency_are_refused() -> None:
    with pytest.raises(ParameterError, match="collide on device 0 modulo the interval 2"):
        Block.of(linear(2), 2, F=(0, 1), B=(4, 3))
    with pytest.raises(ParameterError, match="0B starts at 2, before its input 1B ends"):
        Block.of(linear(2), 4, F=(0, 1), B=(2, 2))
    with pytest.raises(ParameterError, match="give the offsets of B, or of both I and W"):
        Block.of(linear(1), 3, F=(0,), I=(1,))
    with pytest.raises(ParameterError, match="one-pipe"):
        from ppverify.core.placement import bidirectional

        Block.of(bidirectional(2), 3, F=(0, 1), B=(2, 3))
