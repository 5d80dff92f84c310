"""``--format torch-csv-comms`` writes PyTorch's own runtime lowering, and the verifier's
reduction/sharding rules reject compute_comms files that would train wrongly.

The oracle is PyTorch 2.13 itself: ``_PipelineScheduleRuntime._load_csv`` on the compute_only
file (UNSHARD/RESHARD, REDUCE_GRAD and SEND/RECV passes) must give exactly the cells ppverify
writes in the compute_comms flavour.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppverify.io.torch_interop as ti
from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.io.torch_csv import parse_rows, to_rows
from ppverify.schedules import build, families
from ppverify.verify import verify

TWO_PIPE = ("chimera", "chimera-asym", "dualpipe")
EXPORTABLE = sorted(f.name for f in families() if f.name not in TWO_PIPE)
GRID = [(2, 4), (3, 6), (4, 8), (4, 4)]


def test_the_exportable_families_are_every_one_pipe_family():
    # the two-pipe families are the only ones the format cannot hold
    for name in TWO_PIPE:
        with pytest.raises(ParameterError, match="one pipe"):
            to_rows(build(name, p=4, m=8), "compute_comms")
    assert len(EXPORTABLE) >= 11


@pytest.mark.parametrize("family", EXPORTABLE)
def test_comms_export_equals_pytorch_runtime_lowering(family, buildable):
    built = 0
    for p, m, s in buildable(family, GRID):  # sizes the family refuses are skipped
        built += 1
        theirs = ti.torch_runtime_load_schedule(s, "compute_only")
        ours = to_rows(s, "compute_comms")
        assert [theirs[r] for r in sorted(theirs)] == ours, (family, p, m)
        # PyTorch runs a compute_comms file as written: the verifier accepts it, rules included
        r = verify(parse_rows(ours, f"{family}.csv"))
        assert r.valid and {"reduction", "sharding"} <= {p for p, _ in r.proved}, r.to_text()
    assert built >= 2


def rows_1f1b():
    return to_rows(build("1f1b", p=2, m=4), "compute_comms")


def edit(rows, r, remove=(), insert=None):
    """Row ``r`` without the cells in ``remove``; ``insert=(cell, before)`` puts a cell before another."""
    out = [list(x) for x in rows]
    out[r] = [c for c in out[r] if c not in remove]
    if insert:
        cell, before = insert
        out[r].insert(out[r].index(before), cell)
    return out


def violations(rows):
    r = verify(parse_rows(rows, "bad.csv"))
    assert not r.valid
    return r.violations


def test_missing_reduce_grad_is_invalid_naming_the_rule_and_last_backward():
    (v,) = violations(edit(rows_1f1b(), 0, remove=("0REDUCE_GRAD",)))
    # 1F1B p=2 m=4: stage 0's last backward is 0B3, so that is where the reduction is missing
    assert (v.prop, v.ops) == ("reduction", ("0B3",))
    assert "REDUCE_GRAD" in v.rule and "m=4 times too large" in v.message


def test_reduce_grad_before_last_backward_is_invalid():
    (v,) = violations(edit(rows_1f1b(), 1, remove=("1REDUCE_GRAD",), insert=("1REDUCE_GRAD", "1B3")))
    assert v.prop == "reduction" and set(v.ops) == {"1REDUCE_GRAD", "1B3"}


def test_reduce_grad_twice_or_on_wrong_rank_is_invalid():
    rows = rows_1f1b()
    twice = edit(rows, 0, insert=("0REDUCE_GRAD", "0RESHARD"))
    assert [v.prop for v in violations(twice)] == ["reduction"]
    moved = edit(edit(rows, 0, remove=("0REDUCE_GRAD",)), 1, insert=("0REDUCE_GRAD", "1RESHARD"))
    assert "lives on rank 0" in violations(moved)[0].message


def test_unshard_after_use_is_invalid():
    # rank 1 runs 1F0 before unsharding stage 1
    (v,) = violations(edit(rows_1f1b(), 1, remove=("1UNSHARD",), insert=("1UNSHARD", "1B0")))
    assert (v.prop, v.ops) == ("sharding", ("1F0", "1UNSHARD")) and "UNSHARD" in v.rule


def test_use_after_reshard_is_invalid():
    (v,) = violations(edit(rows_1f1b(), 0, remove=("0RESHARD",), insert=("0RESHARD", "0B3")))
    assert (v.prop, v.ops) == ("sharding", ("0B3", "0RESHARD"))


def test_compute_only_files_get_the_markers_from_the_lowering():
    # a compute_only file never holds REDUCE_GRAD: PyTorch adds it, so the rules do not apply
    r = verify(parse_rows(to_rows(build("1f1b", p=2, m=4)), "co.csv"))
    assert r.valid and "reduction" not in {p for p, _ in r.proved}


def test_import_reports_missing_reduce_grad_exit_1(tmp_path, capsys):
    f = tmp_path / "bad.csv"
    f.write_text("\n".join(",".join(r) for r in edit(rows_1f1b(), 1, remove=("1REDUCE_GRAD",))) + "\n")
    assert main(["import", str(f)]) == 1
    out = capsys.readouterr().out
    assert "verdict       INVALID" in out and "reduction: stage 1's gradients are never reduced" in out
    assert main(["verify", str(f)]) == 1
    assert "VIOLATED reduction" in capsys.readouterr().out


# ----------------------------------------------------------------------------- linear in m (issue 22 item 6)


@settings(max_examples=300, deadline=None)
@given(
    cells=st.lists(
        st.one_of(
            st.tuples(st.sampled_from("FBW"), st.integers(0, 5), st.integers(0, 3)),
            st.lists(st.tuples(st.sampled_from("FB"), st.integers(0, 5), st.integers(0, 3)), min_size=2, max_size=3),
        ),
        max_size=40,
    ),
    count=st.integers(1, 4),
)
def test_the_windows_in_one_pass_are_pytorchs_window_at_every_cell(cells, count):
    # the one-pass windows equal PyTorch's next_stage_indices recomputed from every cell on
    # (the quadratic original, kept as the reference), overlapped cells and their overshoot included
    from ppverify.core.ops import Op, Overlap
    from ppverify.io.torch_lowering import _next_stages, next_stage_windows

    def cell(c):
        return Overlap(tuple(Op(k, s, mb) for k, s, mb in c)) if isinstance(c, list) else Op(*c)

    compute = [cell(c) for c in cells]
    assert next_stage_windows(count, compute) == [_next_stages(count, compute[i:]) for i in range(len(compute))]


def test_the_comms_export_of_a_v_placement_is_linear_in_m():
    # every rank of zbv holds two stages, fewer than PyTorch's window of 3: each window used to scan
    # to the end of the rank's list. Counted, not timed: the cells looked at per window are bounded
    # by a constant (the next cell's stages), so the work for 4x the microbatches is 4x
    from ppverify.io import torch_lowering
    from ppverify.schedules import build

    looked: list[int] = []

    def counting(count, compute):
        looked.append(len(compute))
        return original(count, compute)

    original = torch_lowering.next_stage_windows
    for m in (64, 256):
        looked.clear()
        torch_lowering.next_stage_windows = counting
        try:
            torch_lowering.lower_like_pytorch(build("zbv", p=4, m=m))
        finally:
            torch_lowering.next_stage_windows = original
        assert len(looked) == 4 and sum(looked) == 4 * 2 * 3 * m  # one pass per rank over its F, I, W
