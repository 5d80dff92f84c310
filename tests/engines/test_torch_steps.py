"""The ``torch`` semantics reproduce PyTorch's ``_simulate_comms_compute`` step counts exactly.

Without torch: PyTorch's own test fixtures (11, 24 and 113 steps, from
test/distributed/pipelining/test_schedule.py; see tests/data/torch/PROVENANCE.md) and hand-derived
cases. With torch installed: every schedule class on a grid, against PyTorch's own functions.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ppverify.core.dag import structural_problems
from ppverify.core.errors import DeadlockError
from ppverify.engines import SEMANTICS, run
from ppverify.engines.torch_steps import add_send_recv, merge_bw, simulate_steps, torch_step_count, torch_timeline
from ppverify.io.torch_csv import load_csv, parse_rows
from ppverify.schedules import build

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"

# PyTorch test_schedule.py, test_send_recv "simple_2_rank_2_stage" (expected 11 steps)
SIMPLE_2_RANK_2_STAGE = [["0F0", "0F1", "   ", "0B0", "   ", "0B1"], ["   ", "1F0", "1B0", "1F1", "1B1", "   "]]
SIMPLE_COMMS = [
    ["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"],
    ["1RECV_F0", "1RECV_F1", "1F0", "1B0", "1SEND_B0", "1F1", "1B1", "1SEND_B1"],
]
# ... "v_2_rank_4_stage" (expected 24 steps); stage -> rank [0, 1, 1, 0]
V_2_RANK_4_STAGE = [
    ["0F0", "0F1", "   ", "3F0", "3B0", "3F1", "3B1", "0B0", "3W0", "0B1", "3W1", "0W0", "0W1"],
    ["   ", "1F0", "2F0", "1F1", "2F1", "2B0", "1B0", "2B1", "1B1", "2W0", "2W1", "1W0", "1W1"],
]
V_COMMS = [
    [
        "0F0",
        "0SEND_F0",
        "0F1",
        "0SEND_F1",
        "3RECV_F0",
        "3F0",
        "3B0",
        "3SEND_B0",
        "3RECV_F1",
        "3F1",
        "3B1",
        "3SEND_B1",
        "0RECV_B0",
        "0B0",
        "3W0",
        "0RECV_B1",
        "0B1",
        "3W1",
        "0W0",
        "0W1",
    ],
    [
        "1RECV_F0",
        "1RECV_F1",
        "1F0",
        "2F0",
        "2SEND_F0",
        "1F1",
        "2RECV_B0",
        "2F1",
        "2SEND_F1",
        "2B0",
        "2RECV_B1",
        "1B0",
        "1SEND_B0",
        "2B1",
        "1B1",
        "1SEND_B1",
        "2W0",
        "2W1",
        "1W0",
        "1W1",
    ],
]


def texts(schedule):
    return [[str(a) for a in prog] for prog in schedule.programs]


def test_pytorch_fixture_simple_2_rank_2_stage_11_steps():
    s = parse_rows(SIMPLE_2_RANK_2_STAGE)
    assert texts(add_send_recv(s)) == SIMPLE_COMMS
    assert torch_step_count(s) == 11


def test_pytorch_fixture_v_2_rank_4_stage_24_steps():
    s = parse_rows(V_2_RANK_4_STAGE)
    assert s.placement.maps == ((0, 1, 1, 0),)
    assert texts(add_send_recv(s)) == V_COMMS
    assert torch_step_count(s) == 24
    # PyTorch's fixture is not a valid training step: it runs a full B *and* a W per stage/mb
    probs = structural_problems(s)
    assert "stage 3 mb 0 has both a full backward B and a split I/W" in probs


def test_pytorch_fixture_zb1p_113_steps():
    s = load_csv(DATA / "zb1p_2rank_2stagep_compute.csv")
    merged = merge_bw(s)  # PyTorch's test merges adjacent I,W into B first
    with open(DATA / "zb1p_2rank_2stagep_comms.csv", newline="") as f:
        assert texts(add_send_recv(merged)) == list(csv.reader(f))
    assert torch_step_count(merged) == 113
    # the lowered file itself (compute_comms flavour) is simulated as is
    assert torch_step_count(load_csv(DATA / "zb1p_2rank_2stagep_comms.csv")) == 113


def test_gpipe_two_ranks_one_microbatch_by_hand():
    # lowered: rank 0 [0F0 0SEND_F0 0RECV_B0 0B0], rank 1 [1RECV_F0 1F0 1B0 1SEND_B0];
    # step 0: 0F0 | idle; 1: SEND | RECV (sent this step by the lower rank); 2: idle | 1F0;
    # 3: idle | 1B0; 4: 0RECV_B0 (second pass, after rank 1's SEND) | 1SEND_B0; 5: 0B0 | -
    grid = simulate_steps(add_send_recv(build("gpipe", p=2, m=1)))
    assert [[str(a) if a else "" for a in row] for row in grid] == [
        ["0F0", "0SEND_F0", "", "", "0RECV_B0", "0B0"],
        ["", "1RECV_F0", "1F0", "1B0", "1SEND_B0"],
    ]
    assert torch_step_count(build("gpipe", p=2, m=1)) == 6


def test_torch_semantics_through_run():
    assert "torch" in SEMANTICS
    s = parse_rows(SIMPLE_2_RANK_2_STAGE)
    tl = run(s, semantics="torch")
    assert tl.semantics == "torch" and tl.makespan == 11.0 and tl.info.steps == 11
    assert len(tl.ops) == 8 and len(tl.transfers) == 4
    # every transfer goes from its SEND step to the end of its RECV step, forward before use
    for k, src, dst, dst_op, t0, t1 in zip(
        tl.transfers.kind,
        tl.transfers.src_dev,
        tl.transfers.dst_dev,
        tl.transfers.dst_op,
        tl.transfers.start,
        tl.transfers.end,
    ):
        assert src != dst and t1 > t0 and tl.start[dst_op] >= t1


def test_single_rank_has_no_comms_and_counts_actions():
    s = parse_rows([["0F0", "1F0", "1B0", "0B0"]])
    assert add_send_recv(s).programs == s.programs
    assert torch_step_count(s) == 4


def test_deadlock_is_reported_not_hung():
    # rank 0 waits for 1B0 before sending 0F1; rank 1 wants 1F1 before 1B0
    s = parse_rows([["0F0", "0B0", "0F1", "0B1"], ["1F0", "1F1", "1B0", "1B1"]])
    with pytest.raises(DeadlockError):
        torch_step_count(s)


def test_w_is_never_checked_by_pytorch_model():
    # a W placed before its I: the torch step model (like PyTorch's) times it without complaint;
    # ppverify's slot engine and structural check are what reject it
    s = parse_rows([["0F0", "0W0", "0I0"]])
    assert torch_step_count(s) == 3
    with pytest.raises(DeadlockError):
        run(s, semantics="slot")


def test_overlap_cell_is_one_step():
    s = load_csv(DATA / "dualpipev_4rank_10mb.csv")
    tl = torch_timeline(s)
    pair = [i for i, o in enumerate(tl.ops) if str(o) in ("0F7", "7B3")]
    assert tl.start[pair[0]] == tl.start[pair[1]]


def test_two_pipes_have_no_torch_timing():
    from ppverify.core.errors import ParameterError

    with pytest.raises(ParameterError, match="one pipe"):
        torch_step_count(build("chimera", p=4, m=4))


# --- against PyTorch itself ---------------------------------------------------------------

import ppverify.io.torch_interop as torch_interop  # torch is a test dependency


def grid():
    for name in torch_interop.TORCH_CLASSES:
        vs = [1] if name in torch_interop.SINGLE_STAGE else [2] if name in torch_interop.V_CLASSES else [1, 2, 3]
        for p in (2, 3, 4):
            for m in (1, 2, 3, 4, 6, 8):
                for v in vs:
                    yield name, p, m, v


def torch_cases():
    out = []
    for name, p, m, v in grid():
        try:
            out.append((name, p, m, v, torch_interop.torch_schedule(name, p, m, v)))
        except Exception:  # PyTorch refuses the parameters (e.g. m < p for 1F1B)
            continue
    return out


def test_step_counts_and_lowering_equal_pytorch_on_the_grid():
    cases = torch_cases()
    assert len(cases) > 150
    compared = 0
    for name, p, m, v, s in cases:
        if name == "1F1B":
            continue  # its last rank's list is wrong (tests/io/test_torch_interop.py); checked below
        assert texts(add_send_recv(s)) == torch_interop.torch_lower(s), (name, p, m, v)
        ours = torch_step_count(s)
        if name == "DualPipeV":
            # PyTorch's simulator raises on OVERLAP_F_B; ppverify's extension counts a cell as one
            # step, so it can only be faster than running the cell's ops one after the other
            with pytest.raises(Exception, match="OVERLAP_F_B"):
                torch_interop.torch_simulated_steps(s)
            continue
        assert ours == torch_interop.torch_simulated_steps(s), (name, p, m, v)
        compared += 1
    assert compared > 100


def test_step_counts_equal_pytorch_for_ppverify_families():
    for fam, params in [("gpipe", {}), ("1f1b", {}), ("1f1b-split", {}), ("interleaved-1f1b", {"v": 2})]:
        for p, m in [(2, 4), (4, 4), (4, 8)]:
            s = build(fam, p=p, m=m, **params)
            assert torch_step_count(s) == torch_interop.torch_simulated_steps(s), (fam, p, m)


def test_comm_problems_of_lowered_files():
    from ppverify.engines.torch_steps import comm_problems

    good = load_csv(DATA / "zb1p_2rank_2stagep_comms.csv")
    assert comm_problems(good) == []
    assert comm_problems(load_csv(DATA / "zb1p_2rank_2stagep_compute.csv")) == []  # no comms: nothing to check
    # every lowering ppverify produces is consistent
    for fam, kw in [("gpipe", {}), ("zbv", {}), ("dualpipev", {}), ("interleaved-1f1b", {"v": 2})]:
        assert comm_problems(add_send_recv(build(fam, p=4, m=8, **kw))) == []
    # GPipe p=2 m=1 lowered, then broken by hand in four ways
    base = [["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]]
    assert comm_problems(parse_rows(base)) == []
    assert comm_problems(parse_rows([base[0], ["1F0", "1B0", "1SEND_B0"]])) == [
        "1RECV_F0 is missing (rank 1, before 1F0)"
    ]
    assert comm_problems(parse_rows([["0SEND_F0", "0F0", "0RECV_B0", "0B0"], base[1]])) == [
        "0SEND_F0 must come after 0F0 on rank 0"
    ]
    assert comm_problems(parse_rows([base[0], base[1] + ["1SEND_B0"]])) == ["1SEND_B0 appears 2 times"]
    assert comm_problems(parse_rows([base[0] + ["0SEND_B0"], base[1]])) == [
        "0SEND_B0 on rank 0 matches no transfer between ranks"
    ]


def test_run_accepts_the_simulate_commands_options():
    # `ppverify simulate --semantics torch` calls run(schedule, costs, comm, "torch", sync=..., dp_allreduce=...)
    from ppverify.core.comm import FixedDelay
    from ppverify.core.costs import CostModel

    s = load_csv(DATA / "zb1p_2rank_2stagep_compute.csv")
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5), "torch", sync="eager", dp_allreduce=0)
    assert tl.makespan == 113.0  # steps do not depend on costs or delays
    assert tl.busy().tolist() == [48.0, 48.0]  # 48 compute actions per rank, one step each
