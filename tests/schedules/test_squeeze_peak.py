"""squeeze() never raises a device's peak above block_peaks (the repetition's): on V and loop
placements two stages share a device, and one stage's early forwards used to take the memory the
other's next forward needed (a bug hunt found 37 of 1,176 random blocks, all V or loop:2)."""

from __future__ import annotations

import random

import pytest

from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.placement import Placement, linear, loop, v_shape
from ppverify.engines import run
from ppverify.schedules.blocks import Block, block_peaks, block_span, repeat
from ppverify.schedules.squeeze import squeeze
from ppverify.verify import verify


def held_peaks(block: Block, programs: tuple[tuple, ...]) -> list[float]:
    """Each device's peak replayed from its order (the docs' rule: an F holds its stage's share from
    its start until the B or W of the same stage and microbatch ends)."""
    free = "W" if block.split else "B"
    out = []
    for prog in programs:
        held = peak = 0
        for op in prog:
            held += op.kind == "F"
            peak = max(peak, held)
            held -= op.kind == free
        out.append(peak * block.placement.share_per_stage)
    return out


def test_hunt_block_keeps_its_peak() -> None:
    # V, p = 2: device 0 holds stages 0 and 3. Its passes by offset, microbatch k at + 10k:
    # 0F0 0, 3F0 4, 3I0 6, 3W0 9, 0F1 10, 0I0 11, 0W0 13, 3F1 14, ...
    # held chunks (half a share each): 0F0 1, 3F0 2, 3W0 ends 1, 0F1 2, 0W0 ends 1: peak 2 x 1/2 = 1.0.
    # Running 0F1 at time 1 (stage 0's next pass, its input ready) would hold 0F0, 0F1, 3F0: 1.5.
    blk = Block.of(v_shape(2), 10, F=[0, 2, 3, 4], I=[11, 10, 7, 6], W=[13, 11, 9, 9], name="b")
    assert block_peaks(blk, 7) == (1.0, 1.0)
    sq = squeeze(blk, 7)
    assert [str(o) for o in sq.programs[0][:5]] == ["0F0", "3F0", "3I0", "3W0", "0F1"]
    assert held_peaks(blk, sq.programs) == [1.0, 1.0]
    assert verify(repeat(blk, 7), memory_cap=1).valid and verify(sq, memory_cap=1).valid


def _random_block(rng: random.Random) -> Block | None:
    """A block with forward and input-gradient chains in stage order, random gaps and W delays, at
    the least interval without collision (as the hunt's rblocks.py builds them)."""
    p = rng.choice([2, 3, 4])
    pl: Placement = rng.choice([linear(p), v_shape(p), loop(p, 2)])
    S = pl.num_stages
    lens = {k: rng.choice([1, 1, 2]) for k in "FIW"}
    f_off, t = [], 0
    for _ in range(S):
        f_off.append(t)
        t += lens["F"] + rng.choice([0, 0, 1, 2])
    i_off, t = [0] * S, f_off[-1] + lens["F"] + rng.choice([0, 1, 3])
    for s in reversed(range(S)):
        i_off[s] = t
        t += lens["I"] + rng.choice([0, 0, 1, 2])
    w_off = [i_off[s] + lens["I"] + rng.choice([0, 1, 3, 7]) for s in range(S)]
    work = sum(lens.values()) * (S // p)
    for T in range(work, work + 8):
        try:
            return Block.of(pl, T, F=f_off, I=i_off, W=w_off, lengths=lens)
        except ParameterError:
            continue
    return None


@pytest.mark.parametrize("seed", range(4))
def test_squeeze_never_peaks_above_the_repetition(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        blk = _random_block(rng)
        if blk is None:
            continue
        p = blk.placement.p
        for m in (2, 2 * p, 3 * p + 1):
            sq = squeeze(blk, m)
            peaks = block_peaks(blk, m)
            assert all(a <= b for a, b in zip(held_peaks(blk, sq.programs), peaks)), (blk, m)
            assert verify(sq, memory_cap=max(peaks)).valid, (blk, m)
            # the forward cap must not cost the other promise: at the block's lengths (a chunk pass
            # of length L is L units: whole-model costs L * S/p) the step stays within the span
            v = blk.placement.num_stages // p
            lens = {o.kind: o.length * v for o in blk.ops}
            tl = run(sq, CostModel.abstract(blk.placement, **lens), semantics="async")
            assert float(tl.makespan) <= block_span(blk, m), (blk, m)


def test_a_numpy_interval_is_read_as_numpy_offsets_are() -> None:
    # it refused np.int64(3) ("must be an integer >= 1") while np.int64 offsets were taken
    np = pytest.importorskip("numpy")
    blk = Block.of(linear(2), np.int64(3), F=(0, 1), B=(np.int64(4), 2), lengths={"F": 1, "B": 2})
    assert blk.interval == 3 and type(blk.interval) is int
    # 1F1B's block (F = 1, B = 2, interval 3), by hand on device 0 (microbatch k at + 3k):
    # 0F0 at 0, 0F1 at 3, 0B0 at 4, 0F2 at 6, 0B1 at 7, 0B2 at 10
    assert [str(o) for o in repeat(blk, 3).programs[0]] == ["0F0", "0F1", "0B0", "0F2", "0B1", "0B2"]
    for bad, rule in ((np.int64(0), "must be an integer >= 1"), (3.5, "whole number"), (True, "whole number")):
        with pytest.raises(ParameterError, match=rule):
            Block.of(linear(2), bad, F=(0, 1), B=(4, 2), lengths={"F": 1, "B": 2})
