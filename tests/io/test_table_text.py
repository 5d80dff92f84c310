"""Text tables both ways: hand-derived tables, round trips for every family, PyTorch's own
``_format_pipeline_order`` output, and located errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.errors import ScheduleFileError
from ppverify.core.ops import Comm, Marker, Op, Overlap, compute_ops, format_action
from ppverify.core.placement import bidirectional, linear
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.engines.table import format_schedule_table, format_table
from ppverify.io.table_text import (
    load_table,
    parse_paper_table,
    parse_table,
    parse_torch_grid,
    programs_from_cells,
    schedule_from_programs,
)
from ppverify.schedules import build, families


def texts(programs):
    return [[format_action(a) for a in prog] for prog in programs]


# 1F1B, p=2, m=2, unit slots, derived by hand: device 1 runs 1F0@1, 1B0@2, 1F1@3 (0F1 ended at 2),
# 1B1@4; device 0 runs 0F0@0, 0F1@1, 0B0@3 (after 1B0), 0B1@5 (after 1B1).
PAPER_1F1B = """\
tick    0   1   2   3   4   5
dev 0 0F0 0F1   .   0B0 .   0B1
dev 1   . 1F0 1B0 1F1 1B1   .
"""
TORCH_1F1B = """\
        Rank 0 Rank 1
Step 0: 0F0
Step 1: 0F1    1F0
Step 2:        1B0
Step 3: 0B0    1F1
Step 4:        1B1
Step 5: 0B1
"""


def test_hand_derived_tables_match_rendering():
    s = build("1f1b", p=2, m=2)
    assert format_schedule_table(s, style="torch") == TORCH_1F1B.rstrip("\n")
    # the paper layout right-aligns every cell to one width
    assert format_schedule_table(s).split() == PAPER_1F1B.split()


def test_hand_written_tables_parse_with_idle_slots():
    want = [["0F0", "0F1", "", "0B0", "", "0B1"], ["", "1F0", "1B0", "1F1", "1B1"]]
    assert texts(parse_paper_table(PAPER_1F1B)) == want
    assert texts(parse_torch_grid(TORCH_1F1B)) == want
    s = parse_table(TORCH_1F1B)
    assert s.m == 2 and s.placement == linear(2)
    assert run(s, semantics="slot").makespan == 6.0


def test_multi_tick_ops():
    # F=1, B=2 on one device: 0F0 one tick, 0B0 two ticks
    s = build("gpipe", p=1, m=1)
    costs = CostModel.abstract(s.placement, F=1, B=2)
    tl = run(s, costs, semantics="slot")
    assert format_table(tl).splitlines()[1].split() == ["dev", "0", "0F0", "0B0", "0B0"]
    assert format_table(tl, "torch").splitlines()[1:] == ["Step 0: 0F0", "Step 1: 0B0", "Step 2: ~"]
    for style in ("paper", "torch"):
        assert texts(parse_table(format_table(tl, style)).programs) == [["0F0", "0B0"]]


def instances(buildable):
    for fam in families():
        for _p, _m, s in buildable(fam.name, ((2, 2), (4, 4), (4, 8), (3, 3))):
            yield s


@pytest.mark.parametrize("style", ["paper", "torch"])
@pytest.mark.parametrize("costs", [None, {"F": 1, "B": 2}, {"F": 1, "I": 1, "W": 1}])
def test_every_family_table_round_trips(style, costs, buildable):
    n = 0
    for s in instances(buildable):
        cm = CostModel.abstract(s.placement, **costs) if costs else None
        text = format_schedule_table(s, cm, style)
        back = parse_table(text, s.placement, s.m, s.pipe_of_mb, path="t.txt")
        # same op order on every device ...
        for a, b in zip(s.programs, back.programs):
            assert list(compute_ops(a)) == list(compute_ops(b))
        # ... the same table text, and the same timing
        assert format_schedule_table(back, cm, style) == text
        ta, tb = run(s, cm, semantics="slot"), run(back, cm, semantics="slot")
        assert np.array_equal(ta.start, tb.start) and np.array_equal(ta.end, tb.end)
        n += 1
    assert n >= len(families())


def test_two_pipe_tables_infer_the_pipe_of_each_microbatch():
    s = build("chimera", p=4, m=8)
    back = parse_table(format_schedule_table(s), bidirectional(4))
    assert back.pipe_of_mb == s.pipe_of_mb


def test_wide_tables_keep_device_labels_apart():
    s = build("1f1b", p=11, m=2)
    text = format_schedule_table(s)
    assert text.splitlines()[11].startswith("dev 10 ")
    back = parse_table(text)
    assert [list(compute_ops(p)) for p in back.programs] == [list(p) for p in s.programs]


def test_overlapped_slots_render_whole_and_round_trip():
    s = Schedule(linear(1), 2, ((Op("F", 0, 0), Overlap((Op("F", 0, 1), Op("B", 0, 0))), Op("B", 0, 1)),), (0, 0))
    for style, cell in (("paper", "0F1&0B0"), ("torch", "(0F1;0B0)OVERLAP_F_B")):
        text = format_schedule_table(s, style=style)
        assert cell in text
        assert parse_table(text, m=2).programs == s.programs


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.integers(0, 3))
def test_dualpipe_paper_tables_are_compact_and_read_back(half_p, extra):
    # the paper layout writes an overlapped F&B slot as 0F3&3B5 (7 characters, not PyTorch's 20),
    # so a column is as wide as its widest plain op or overlapped pair; the table reads back whole
    p = 2 * half_p
    m = 2 * p + 2 * extra  # DualPipe: an even m >= 2p
    s = build("dualpipe", p=p, m=m)
    text = format_schedule_table(s)
    assert "OVERLAP_F_B" not in text
    pairs = {a.compact for prog in s.programs for a in prog if type(a) is Overlap}
    assert pairs and all(pair in text for pair in pairs)
    widest = max(len(a.compact if type(a) is Overlap else str(a)) for prog in s.programs for a in prog if a)
    header = text.splitlines()[0].split()
    assert header[0] == "tick" and len(text.splitlines()[1]) <= len("dev 00 ") + (widest + 1) * (len(header) - 1)
    back = parse_table(text, bidirectional(p), m=m)
    assert [[a for a in prog if a] for prog in back.programs] == [[a for a in prog if a] for prog in s.programs]


# --------------------------------------------------------------------------- PyTorch's formatter


def torch_format(programs, error_step=None):
    import torch.distributed.pipelining.schedules as sched

    order = {
        r: [None if a is None else sched._Action.from_str(format_action(a)) for a in prog]
        for r, prog in enumerate(programs)
    }
    return sched._format_pipeline_order(order, error_step)


def strip_trailing_idle(programs):
    out = []
    for prog in programs:
        prog = list(prog)
        while prog and prog[-1] is None:
            prog.pop()
        out.append(tuple(prog))
    return tuple(out)


@pytest.mark.parametrize("name,p,m", [("1f1b", 4, 8), ("gpipe", 3, 2), ("interleaved-1f1b", 2, 4), ("chimera", 4, 4)])
def test_pytorchs_own_grid_parses_back(name, p, m):
    s = build(name, p, m)
    # PyTorch's lists are one action per step; give them the idle steps of the unit table
    programs = parse_table(format_schedule_table(s), s.placement, m).programs
    assert parse_torch_grid(torch_format(programs)) == strip_trailing_idle(programs)


def test_pytorchs_grid_with_comms_markers_wide_cells_and_error_marker():
    # a wide overlapped cell pushes its row right in PyTorch's layout (its column widths come from
    # the step labels, not the cells); ranks of different lengths; SEND/RECV and FSDP markers
    programs = (
        (
            Marker("UNSHARD", 0),
            Op("F", 0, 0),
            Comm("SEND_F", 0, 0),
            None,
            Overlap((Op("F", 0, 1), Op("B", 3, 0))),
            None,
        ),
        (None, Comm("RECV_F", 1, 0), Op("F", 1, 0), Op("B", 1, 0), None, Op("W", 1, 0), Marker("REDUCE_GRAD", 1)),
        (None, None, None, Comm("RECV_B", 2, 0)),
    )
    text = torch_format(programs, error_step=4)
    assert "<-- ERROR HERE" in text
    assert parse_torch_grid(text) == strip_trailing_idle(programs)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "text,location,rule",
    [
        ("dev 0 0F0", "line 1", "not a table: expected a 'tick 0 1 ...' or 'Rank 0 Rank 1 ...' header"),
        ("tick 0 2\ndev 0 0F0 0B0", "line 1", "number the columns 0, 1, 2"),
        ("tick 0 1\ndev 1 0F0 0B0", "line 2", "expected dev 0"),
        ("tick 0 1\ndev 0 0F0", "line 2", "has 1 cells; the header has 2 ticks"),
        ("tick 0 1\ndev 0 0F0 0Z0", "line 2 (tick 1)", "'0Z0' is not an action"),
        ("tick 0 1\nrow 0 0F0 0B0", "line 2", "expected a row 'dev 0"),
        ("        Rank 0\nStep 1: 0F0", "line 2", "expected Step 0"),
        (
            "        Rank 0 Rank 1\nStep 0: 0F0\nStep 1:   0F1",
            "line 3 column 11",
            "cell of rank 0 is not aligned under its 'Rank 0' header",
        ),
        ("        Rank 0\nStep 0: 0F0\nStep 1: 0B0 0F1 1F0", "line 3 column 13", "more cells than ranks"),
        ("        Rank 0 Rank 1\nStep 0: ~      0F0", "line 2 (rank 0)", "cell before it is idle"),
        ("        Rank 0\nStep 0: 0F0\nStep 1: 0Q0", "line 3 (rank 0)", "'0Q0' is not an action"),
        ("        Rank 1", "line 1", "Rank 0, Rank 1, ... in order"),
        ("hello", "line 1", "not a table"),
    ],
)
def test_table_errors_are_located(text, location, rule):
    with pytest.raises(ScheduleFileError) as err:
        parse_table(text, path="t.txt")
    assert err.value.path == "t.txt"
    assert err.value.location == location
    assert rule in err.value.rule


def test_layout_specific_header_errors():
    with pytest.raises(ScheduleFileError, match="starts with a 'tick 0 1 2 ...' header"):
        parse_paper_table("dev 0 0F0")
    with pytest.raises(ScheduleFileError, match="starts with a 'Rank 0 Rank 1 ...' header"):
        parse_torch_grid("tick 0 1")


def test_placement_and_pipe_errors(tmp_path):
    progs = programs_from_cells([["0F0"], ["1F0"]])
    with pytest.raises(ScheduleFileError, match="2 device rows but the placement has p=3"):
        schedule_from_programs(progs, linear(3))
    # bidirectional(2): stage 0 is on device 0 in pipe 0 and on device 1 in pipe 1; 0F0 and 1F0 both
    # on device 0 fit no single pipe: pipe 0 places 0F0 there, pipe 1 places 1F0, one op each, so
    # the tie goes to the lowest pipe and the verifier names the other op on the wrong device
    bad = programs_from_cells([["0F0", "1F0"], []])
    assert schedule_from_programs(bad, bidirectional(2)).pipe_of_mb == (0,)
    # a microbatch without ops fits both pipes: the lowest, and its ops are reported missing
    assert schedule_from_programs(programs_from_cells([["0F0"], ["1F0"]]), bidirectional(2), m=2).pipe_of_mb == (0, 0)
    path = tmp_path / "t.txt"
    path.write_text(TORCH_1F1B)
    assert load_table(path).m == 2


def test_every_pytorch_schedule_class_grid_parses_back():
    """PyTorch's own action lists (built by its schedule classes), printed by its own formatter,
    parse back into exactly those lists (REDUCE_GRAD markers and idle steps included)."""
    import torch.distributed.pipelining.schedules as sched

    from ppverify.io.torch_interop import TORCH_CLASSES, torch_pipeline_order

    for name in TORCH_CLASSES:
        for p, m in ((2, 4), (4, 8)):
            order = torch_pipeline_order(name, p, m)
            want = strip_trailing_idle(
                tuple(tuple(None if a is None else str(a) for a in order[r]) for r in sorted(order))
            )
            got = tuple(
                tuple(None if a is None else format_action(a) for a in prog)
                for prog in parse_torch_grid(sched._format_pipeline_order(order))
            )
            assert got == want, (name, p, m)


# --------------------------------------------------------------------------- property: random valid schedules

from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.dag import build_dag


@st.composite
def random_valid_schedules(draw):
    """A family's op set, placed by its placement, in a random dependency-respecting order per
    device (so never deadlocked), with random idle slots sprinkled in."""
    name = draw(st.sampled_from(["gpipe", "chimera", "interleaved-1f1b", "1f1b-split", "hanayo"]))
    p = draw(st.sampled_from([2, 4]))
    base = build(name, p, p)
    dag = build_dag(base)
    succ = dag.successors()
    indeg = [sum(1 for j in ps if j >= 0) for ps in dag.pred]
    ready = [i for i, n in enumerate(indeg) if n == 0]
    programs = [[] for _ in range(p)]
    while ready:
        i = ready.pop(draw(st.integers(0, len(ready) - 1)))
        d = dag.device[i]
        programs[d].extend([None] * draw(st.integers(0, 1)))
        programs[d].append(dag.ops[i])
        for k in succ[i]:
            indeg[k] -= 1
            if indeg[k] == 0:
                ready.append(k)
    costs = {"F": draw(st.integers(1, 3)), "B": draw(st.integers(1, 4))}
    return base.with_programs(tuple(tuple(prog) for prog in programs)), costs


@given(random_valid_schedules(), st.sampled_from(["paper", "torch"]))
@settings(max_examples=40, deadline=None)
def test_random_valid_schedules_round_trip_through_tables(case, style):
    s, costs = case
    cm = CostModel.abstract(s.placement, **costs)
    text = format_schedule_table(s, cm, style)
    back = parse_table(text, s.placement, s.m, s.pipe_of_mb)
    assert format_schedule_table(back, cm, style) == text
    ta, tb = run(s, cm, semantics="slot"), run(back, cm, semantics="slot")
    assert np.array_equal(ta.start, tb.start) and np.array_equal(ta.end, tb.end)


@given(
    st.sampled_from(["paper", "torch"]),
    st.lists(
        st.tuples(
            st.integers(0, 10_000),
            st.sampled_from(["", " ", ".", "~", "0", "9", "F", "B", "\n", ":", "Step 1:", "Rank 7", "dev 3"]),
        ),
        min_size=1,
        max_size=4,
    ),
)
@settings(max_examples=150, deadline=None)
def test_any_corrupted_table_is_a_located_error_or_parses(style, edits):
    text = format_schedule_table(build("1f1b", 3, 3), style=style)
    for pos, ins in edits:
        pos %= len(text) + 1
        text = text[:pos] + ins + text[pos + 1 :]  # replace one character (or delete it)
    try:
        parse_table(text, path="t.txt")
    except ScheduleFileError as exc:
        assert str(exc).startswith("t.txt: ")
