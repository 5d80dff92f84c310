"""Building blocks (Qi et al., NeurIPS 2024, arXiv 2405.15362): 1F1B and ZB-H1 written as blocks
equal the registered families op for op; V-Min and V-Half peaks against the simulator; collisions
and broken dependencies are refused."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.placement import linear, v_shape
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.schedules.block_zbv import zbv_block, zbv_cooldown, zbv_from_block
from ppverify.schedules.blocks import (
    Block,
    block_peaks,
    block_span,
    one_f_one_b_block,
    repeat,
    v_block,
    zb_h1_block,
)
from ppverify.schedules.squeeze import squeeze
from ppverify.schedules.v_half import v_half_delay
from ppverify.schedules.v_min import v_formula, v_min_formula, v_peak, v_peak_exact_from
from ppverify.verify import verify


@given(st.integers(1, 8), st.integers(1, 24))
@settings(max_examples=60, deadline=None)
def test_one_f_one_b_block_is_1f1b(p: int, m: int) -> None:
    assert repeat(one_f_one_b_block(p), m).programs == build("1f1b", p=p, m=m).programs


@given(st.integers(1, 8), st.integers(1, 24))
@settings(max_examples=60, deadline=None)
def test_zb_h1_block_is_zb_h1(p: int, m: int) -> None:
    assert repeat(zb_h1_block(p), m).programs == build("zb-h1", p=p, m=m).programs


@given(st.integers(1, 8), st.integers(1, 24))
@settings(max_examples=80, deadline=None)
def test_zbv_block_is_zbv(p: int, m: int) -> None:
    assert zbv_from_block(p, m).programs == build("zbv", p=p, m=m).programs


@pytest.mark.parametrize("p", [1, 2, 3, 4, 6, 8])
def test_zbv_block_squeezed_is_zbv_up_to_the_cool_down(p: int) -> None:
    # the cool-down only reorders each device's passes after its last F, I, W of the second chunk
    m = 3 * p
    sq, ref = squeeze(zbv_block(p), m), build("zbv", p=p, m=m)
    assert zbv_cooldown(sq).programs == ref.programs
    for d, (mine, theirs) in enumerate(zip(sq.programs, ref.programs)):
        last = max(i for i, op in enumerate(mine) if op.kind == "F") + 3
        assert mine[:last] == theirs[:last] and sorted(map(str, mine[last:])) == sorted(map(str, theirs[last:]))
        # by hand (PyTorch's warm-up): 2(p - d) - 1 first-chunk forwards before the second chunk's first
        assert [op.stage for op in mine].index(2 * p - 1 - d) == min(2 * (p - d) - 1, m)


def test_zbv_block_by_hand() -> None:
    # p = 2: first leg F at 0, 1, second leg F at 5s - 4p + 2 (4, 9), its I chain 8p - 3 - s (11, 10)
    blk = zbv_block(2)
    assert [(o.kind, o.stage, o.offset) for o in blk.ops if o.kind != "W"] == [
        ("F", 0, 0), ("F", 1, 1), ("F", 2, 4), ("F", 3, 9), ("I", 0, 19), ("I", 1, 14), ("I", 2, 11), ("I", 3, 10)
    ]  # fmt: skip
    assert blk.split and blk.interval == 6


@given(st.integers(1, 8), st.integers(1, 24))
@settings(max_examples=40, deadline=None)
def test_squeeze_keeps_blocks_without_warm_up_bubbles(p: int, m: int) -> None:
    # 1F1B's and ZB-H1's repetitions leave no slot a later pass could fill: squeezing changes nothing
    for blk in (one_f_one_b_block(p), zb_h1_block(p)):
        assert squeeze(blk, m).programs == repeat(blk, m).programs


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


@given(st.integers(1, 12), st.integers(1, 40), st.integers(0, 3), st.integers(0, 3))
@settings(max_examples=80, deadline=None)
def test_v_block_peak_never_above_formula_exact_from_stage_0s_life(p: int, m: int, w: int, i: int) -> None:
    # docs/building-blocks.md: bound min(m, floor((p+4)/3) + i_delay + w_delay), on every device once
    # m >= ceil(L0/6), L0 = c + 2p + 2 + 6w stage 0's life, c = 2p + ((2 - 2p) mod 6) + 6i. By hand,
    # 2p + ((2 - 2p) mod 6) is 2p + 4, 2p + 2, 2p for p = 3j+2, 3j+3, 3j+1, so ceil((4p + 2 + that
    # remainder)/6) is 2j+3, 2j+3, 2j+1 = 2 floor((p+1)/3) + 1 (p = 3: c = 8, L0 = 16, 3)
    blk = v_block(p, w, i_delay=i)
    bound = min(m, (p + 4) // 3 + i + w)
    exact_from = 2 * ((p + 1) // 3) + 1 + i + w
    sched = repeat(blk, m)
    slot = run(sched, CostModel.abstract(sched.placement, F=1, I=1, W=1), semantics="slot").peak_memory()
    for peaks in (block_peaks(blk, m), tuple(float(x) for x in slot)):
        assert max(peaks) <= bound
        if m >= exact_from:
            assert peaks == (float(bound),) * p
    assert v_peak(p, m, w, i) == bound and v_peak_exact_from(p, w, i) == exact_from


def test_v_block_peak_below_stage_0s_life_falls_short() -> None:
    # the hunt's case (docs/building-blocks.md): p = 3, w_delay = 1, i_delay = 3, m = 6 = 2p. c = 6 + 2
    # + 18 = 26; stage 0 holds [6k, 40 + 6k), stage 5 [5 + 6k, 35 + 6k): at t = 30..35 device 0 holds
    # 6 + 5 chunks, 5.5 activations, not floor(7/3) + 3 + 1 = 6; exact from ceil(40/6) = 7 (6 + 6/2)
    blk = v_block(3, 1, i_delay=3)
    assert block_peaks(blk, 6) == (5.5, 6.0, 6.0)  # devices 1 and 2 live shorter (L0 - 2d <= 36)
    assert block_peaks(blk, 7) == (6.0, 6.0, 6.0)
    # the formula of a block with a W delay claims exactness only from there: p = 3, w_delay = 4 is
    # exact from 2 + 1 + 4 = 7 > 2p = 6 (p = 3: c = 8, stage 0 lives 8 + 6 + 2 + 24 = 40 units)
    f6, f7 = v_formula("v", 3, 6, None, 4), v_formula("v", 3, 7, None, 4)
    assert (f6.peak_kind, f7.peak_kind) == ("upper bound", "exact")
    assert "peaks exact for m >= 7" in f7.conditions
    # without a delay: from 2 floor((3 + 1)/3) + 1 = 3, not from 2p = 6
    assert "peaks exact for m >= 3" in v_formula("v-min", 3, 6, None, 0).conditions


def test_v_min_peak_exact_below_2p() -> None:
    # docs/formulas-and-range.md: v-min's peaks are upper bounds only for m < 2 floor((p+1)/3) + 1.
    # p = 6: exact from 2 floor(7/3) + 1 = 5 (well below 2p = 12), at floor((6 + 4)/3) = 3 on all 6
    # devices; m = 4 is below it (an upper bound there)
    f = v_min_formula(6, 5)
    assert f.peak_kind == "exact" and f.peak_activations == (3.0,) * 6
    assert "peaks exact for m >= 5" in f.conditions and v_min_formula(6, 4).peak_kind == "upper bound"
    tl = run(build("v-min", p=6, m=5), semantics="slot")
    assert tl.peak_memory().tolist() == [3.0] * 6


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


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6, 8, 10, 12])
def test_v_half_closed_forms_against_the_engine(p: int) -> None:
    # peak: the paper's V-Half memory floor((p+2)/2), exact from m = p; step at F = I = W = t exact
    # from m = p (t = 1 and t = 2: the timing scales), a lower bound below
    from ppverify.schedules.v_half import v_half_formula

    for m in range(1, 3 * p + 2):
        sched = build("v-half", p=p, m=m)
        f = v_half_formula(p, m)
        for t in (1, 2):
            tl = run(sched, CostModel.abstract(sched.placement, F=t, I=t, W=t), semantics="async")
            peaks = [float(x) for x in tl.peak_memory()]
            assert max(peaks) == min(m, (p + 2) // 2)
            if m >= p:
                assert peaks == [float(min(m, (p + 2) // 2))] * p and f.peak_kind == "exact"
                assert float(tl.makespan) == t * f.makespan and f.makespan_kind == "exact"
            else:
                assert float(tl.makespan) >= t * f.makespan


@given(st.integers(3, 16), st.integers(0, 2))
@settings(max_examples=30, deadline=None)
def test_v_half_buys_time_with_its_memory(p: int, extra: int) -> None:
    # V-Half holds more than V-Min (floor((p+4)/3)) from p = 4 and is faster from p = 3
    m = 2 * p + extra
    costs = {"F": 1, "I": 1, "W": 1}
    half, vmin = build("v-half", p=p, m=m), build("v-min", p=p, m=m)
    t_half = run(half, CostModel.abstract(half.placement, **costs), semantics="async").makespan
    t_min = run(vmin, CostModel.abstract(vmin.placement, **costs), semantics="async").makespan
    assert t_half < t_min
    # never below the bound every V schedule meets: busy 3m plus the fill (p - 1)/2
    assert t_half >= 3 * m + (p - 1) / 2


def test_offsets_and_lengths_must_be_whole_block_units() -> None:
    # 1.5 was truncated to 1 before: another block than the one written
    with pytest.raises(ParameterError, match="1F offset=1.5: must be a whole number of block units"):
        Block.of(linear(2), 3, F=(0, 1.5), B=(4, 2))
    with pytest.raises(ParameterError, match="length of B=2.5: must be a whole number"):
        Block.of(linear(2), 3, F=(0, 1), B=(4, 2), lengths={"F": 1, "B": 2.5})
    with pytest.raises(ParameterError, match="0F offset=None"):
        Block.of(linear(2), 3, F=(None, 1), B=(4, 2))
    with pytest.raises(ParameterError, match="give the offsets of F"):
        Block.of(linear(2), 3, F=None, B=(4, 2))  # type: ignore[arg-type]
    # a length for a kind the block lacks (here I in a full-backward block) was silently ignored
    with pytest.raises(ParameterError, match=r"lengths=I: is not a pass of this block \(its passes: F, B\)"):
        Block.of(linear(2), 3, F=(0, 1), B=(4, 2), lengths={"F": 1, "B": 2, "I": 2})
    # a whole float is its integer: 1F1B's block for p = 2 (F at 0, 1; B at 4, 2)
    assert Block.of(linear(2), 3, F=(0, 1.0), B=(4, 2), lengths={"F": 1, "B": 2}).ops == one_f_one_b_block(2).ops


def test_interval_below_a_devices_work_is_named() -> None:
    # one stage, F = 1 and B = 2: 3 units of work cannot repeat every 2
    with pytest.raises(ParameterError, match=r"interval=2: below the work of device 0 in block block \(3 units\)"):
        Block.of(linear(1), 2, F=(0,), B=(1,), lengths={"F": 1, "B": 2})


def test_negative_offsets_shift_the_block_only() -> None:
    # 1F1B's p = 2 block moved 3 units earlier: F at -3, -2, B at 1, -1 (length 2); same schedule,
    # and the span still runs from the first start (-3) to the last end (1 + 2) plus 3 per microbatch
    shifted = Block.of(linear(2), 3, F=(-3, -2), B=(1, -1), lengths={"F": 1, "B": 2})
    assert repeat(shifted, 4).programs == build("1f1b", p=2, m=4).programs
    assert block_span(shifted, 4) == 6 + 3 * 3 == block_span(one_f_one_b_block(2), 4)
    late = Block.of(linear(2), 3, F=(10, 11), B=(14, 12), lengths={"F": 1, "B": 2})
    assert block_span(late, 4) == 15
    with pytest.raises(ParameterError, match="m=0"):
        block_span(late, 0)


def test_block_built_directly_is_checked() -> None:
    from ppverify.schedules.blocks import BlockOp

    with pytest.raises(ParameterError, match="stage 1 has no B"):
        Block(linear(2), (BlockOp("F", 0, 0), BlockOp("F", 1, 1), BlockOp("B", 0, 4)), 3)
    with pytest.raises(ParameterError, match="0B starts at 1, before its input 1B ends"):
        Block(linear(2), (BlockOp("F", 0, 0), BlockOp("F", 1, 0), BlockOp("B", 0, 1), BlockOp("B", 1, 1)), 3)


@pytest.mark.parametrize("path", ["of", "direct"])
def test_interval_read_by_one_rule_on_both_paths(path: str) -> None:
    # Block.of took 3.0 while Block(...) refused it as "not an integer >= 1", and Fraction(3) was
    # called "not a whole number": both paths now read the interval as the offsets and lengths are
    from fractions import Fraction

    from ppverify.schedules.blocks import BlockOp

    def make(interval: object) -> Block:
        if path == "of":
            return Block.of(linear(2), interval, F=(0, 1), B=(4, 2), lengths={"F": 1, "B": 2})  # type: ignore[arg-type]
        ops = (BlockOp("F", 0, 0), BlockOp("F", 1, 1), BlockOp("B", 0, 4, 2), BlockOp("B", 1, 2, 2))
        return Block(linear(2), ops, interval)  # type: ignore[arg-type]

    # 1F1B's p = 2 block (F at 0, 1; B at 4, 2 of length 2), interval 3 however it is written
    for whole in (3, 3.0, Fraction(3)):
        blk = make(whole)
        assert blk.interval == 3 and type(blk.interval) is int and blk.ops == one_f_one_b_block(2).ops
    rule = r"must be a whole number of block units \(an int, float or fraction, numpy's included; not a bool\)"
    for bad in (2.5, Fraction(5, 2), True, "3", math.inf, math.nan):
        with pytest.raises(ParameterError, match=f"parameter interval=.*: {rule}"):
            make(bad)
    with pytest.raises(ParameterError, match="parameter interval='3': "):  # a string shown quoted
        make("3")
    # whole but too small: the minimum named (0 is a whole number)
    for small in (0, 0.0, Fraction(0), -3):
        with pytest.raises(ParameterError, match=r"parameter interval=\S+: must be an integer >= 1$"):
            make(small)


def test_block_with_two_stages_per_device() -> None:
    # loop(2, 2): stages 0, 2 on device 0 and 1, 3 on device 1; F[s] = s, B = 7, 6, 5, 4, interval 4.
    # Device 0 mod 4: F0 0, F2 2, B2 1, B0 3; device 1: F1 1, F3 3, B3 0, B1 2: no collision.
    from ppverify.core.placement import loop

    blk = Block.of(loop(2, 2), 4, F=range(4), B=(7, 6, 5, 4))
    sched = repeat(blk, 2)
    assert [str(o) for o in sched.programs[0]] == ["0F0", "2F0", "0F1", "2B0", "2F1", "0B0", "2B1", "0B1"]
    assert [str(o) for o in sched.programs[1]] == ["1F0", "3F0", "3B0", "1F1", "1B0", "3F1", "3B1", "1B1"]
    assert verify(sched).valid and verify(squeeze(blk, 2)).valid
    # device 0 holds 0F0, 2F0, 0F1 (three chunks of half a share) before 2B0; device 1 at most two
    assert block_peaks(blk, 2) == (1.5, 1.0)
    with pytest.raises(ParameterError, match="0F \\(offset 0\\) and 2F \\(offset 4\\) collide on device 0"):
        Block.of(loop(2, 2), 4, F=(0, 1, 4, 5), B=(9, 8, 7, 6))


def test_zbv_cooldown_refuses_other_schedules() -> None:
    # it used to drop 1F1B's B's (24 ops in, 23 out) and to reorder V-Min into a deadlock
    with pytest.raises(ParameterError, match="needs the V placement"):
        zbv_cooldown(repeat(one_f_one_b_block(3), 4))
    with pytest.raises(ParameterError, match="would deadlock"):
        zbv_cooldown(repeat(v_block(3), 6))
    with pytest.raises(ParameterError, match="build=-1"):
        squeeze(zbv_block(2), 2, build=-1)
