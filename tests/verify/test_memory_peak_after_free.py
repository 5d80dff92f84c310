"""Memory proofs of schedules whose peak comes after a free.

Every registered family peaks before its first backward, so a level chain that carried the frees
of one allocating slot into the next ones (levels dropping below what the device holds) would
still read the families' peaks right. These hand-written programs peak later."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag
from ppverify.core.ops import Op
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.verify.memory import check_memory


def test_peak_after_a_free_is_refused_over_the_cap(tmp_path, capsys):
    # by hand, one unit activation per forward: 0F0 -> 1, 0B0 frees it -> 0, 0F1 -> 1, 0F2 -> 2
    # (0F1 and 0F2 held when 0F2 starts), 0B1 -> 1, 0B2 -> 0: peak 2, after a free
    path = tmp_path / "peak_after_free.csv"
    path.write_text("0F0,0B0,0F1,0F2,0B1,0B2\n")
    assert main(["verify", str(path), "--memory-cap", "1"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED memory: device 0 holds 2 activations when 0F2 starts (cap 1)" in out
    assert "core: 0F1 0F2" in out
    assert main(["verify", str(path), "--memory-cap", "2"]) == 0
    out = capsys.readouterr().out
    assert "proved  memory: activation memory <= 2 (activations) on every device at every instant (peaks 2)" in out


def _orders(m: int):
    """Programs of one stage: forwards in microbatch order, each backward some time after its own
    forward (the only edges of a one-stage DAG), in a drawn interleaving."""

    @st.composite
    def draw(pick) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        nxt, held = 0, []
        while nxt < m or held:
            if nxt < m and (not held or pick(st.booleans())):
                out.append(("F", nxt))
                held.append(nxt)
                nxt += 1
            else:
                k = held.pop(pick(st.integers(0, len(held) - 1)))
                out.append(("B", k))
        return out

    return draw()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6).flatmap(_orders))
def test_verify_peak_is_the_held_count_on_one_stage(order):
    # the peak by hand: count forwards not yet freed after each allocation
    held = peak = 0
    for kind, _ in order:
        held += 1 if kind == "F" else -1
        peak = max(peak, held)
    m = len(order) // 2
    s = build("1f1b", p=1, m=m)
    s = s.with_programs((tuple(Op(kind=k, stage=0, mb=mb) for k, mb in order),))
    costs = CostModel.unit(s.placement)
    violations, peaks = check_memory(build_dag(s), costs, m)
    assert violations == [] and peaks == [float(peak)]
    # the slot engine's curve says the same
    assert np.allclose(run(s, costs, semantics="slot").peak_memory(), [peak])
    # and a cap one under the peak is refused
    if peak > 1:
        assert check_memory(build_dag(s), costs, peak - 1)[0]
