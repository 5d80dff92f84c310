"""Against PyTorch 2.13 itself: its seven schedule classes imported and checked by ppverify, the
known ``Schedule1F1B`` last-rank bug reported precisely, ppverify's exports loaded by PyTorch's
runtime, and schedules PyTorch's ``_validate_schedule`` accepts although they are wrong."""

from __future__ import annotations

import pytest

import ppverify.io.torch_interop as ti  # torch is a test dependency (make test installs the torch extra)
from ppverify.core.costs import CostModel
from ppverify.core.dag import structural_problems
from ppverify.core.errors import DeadlockError, InvalidScheduleError
from ppverify.engines import run
from ppverify.engines.torch_steps import add_send_recv
from ppverify.io.torch_csv import parse_rows, save_csv, to_rows
from ppverify.schedules import build

MARKERS = ("UNSHARD", "RESHARD", "REDUCE_GRAD")


def classes_grid():
    for name in ti.TORCH_CLASSES:
        vs = [1] if name in ti.SINGLE_STAGE else [2] if name in ti.V_CLASSES else [1, 2, 3]
        for p in (2, 3, 4, 5):
            for m in (1, 2, 3, 4, 5, 6, 8, 10):
                for v in vs:
                    yield name, p, m, v


def verifier():
    """The Z3 verifier (``ppverify.verify.verify``)."""
    from ppverify.verify import verify

    return verify


def test_every_pytorch_class_imports_valid_except_1f1b_last_rank():
    seen = {name: 0 for name in ti.TORCH_CLASSES}
    check = verifier()
    for name, p, m, v in classes_grid():
        try:
            s = ti.torch_schedule(name, p, m, v)
        except ti.ParameterError:
            continue  # PyTorch refuses (1F1B with m < p, DualPipeV with m < 2p, rounds ...)
        seen[name] += 1
        probs = structural_problems(s)
        if name == "1F1B":
            last = p - 1
            assert probs == [
                f"op {last}F{m} on device {last}: stage must be in 0..{last} and microbatch in 0..{m - 1}",
                f"op {last}F0 is missing (should run on device {last})",
            ], (p, m)
            if check is not None:
                r = check(s)
                assert [(v.prop, v.ops) for v in r.violations] == [
                    ("completeness", (f"{last}F{m}",)),
                    ("completeness", (f"{last}F0",)),
                ]
            continue
        assert probs == [], (name, p, m, v, probs[:3])
        # in-order execution completes (idle slots kept, one tick each) under both engines
        run(s, semantics="slot")
        run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="async")
        if check is not None and m <= 8:
            # Z3: valid as written (buffered sends), and with SEND/RECV where PyTorch's lowering
            # puts them even when a send waits for its receive (rendezvous, like NCCL)
            assert check(s).valid, (name, p, m, v)
            assert check(add_send_recv(s), comm_semantics="rendezvous").valid, (name, p, m, v)
    assert all(n >= 5 for n in seen.values()), seen


def test_1f1b_last_rank_bug_is_located_op_by_op():
    for p, m in [(2, 2), (3, 5), (4, 4), (4, 8)]:
        theirs = ti.torch_schedule("1F1B", p, m)
        ours = build("1f1b", p=p, m=m)
        diffs = ti.order_differences(ours, theirs)
        # only the last rank differs, and only in its forwards: each is one microbatch late
        assert {d for d, *_ in diffs} == {p - 1}
        assert [(got, exp) for _, _, exp, got in diffs] == [(f"{p - 1}F{k + 1}", f"{p - 1}F{k}") for k in range(m)]
        # the backwards B0..B(m-1) are where ppverify's 1F1B has them
        assert [str(o) for o in theirs.ops(p - 1) if o.kind == "B"] == [f"{p - 1}B{k}" for k in range(m)]
        # PyTorch's own validator agrees once asked (the single-stage classes never call it)
        assert "without first running Forward" in ti.torch_validate(theirs)
    assert "F1..Fm instead of F0..F(m-1)" in ti.SCHEDULE_1F1B_BUG


def test_pytorch_refuses_what_it_refuses():
    with pytest.raises(ti.ParameterError, match="PyTorch refuses"):
        ti.torch_pipeline_order("1F1B", 4, 2)
    with pytest.raises(ti.ParameterError):
        ti.torch_pipeline_order("ZBVZeroBubble", 2, 4, v=3)


EXPORTS = [
    ("gpipe", {}),
    ("1f1b", {}),
    ("1f1b-split", {}),
    ("interleaved-1f1b", {"v": 2}),
    ("looped-bfs", {"v": 2}),
    ("interleaved-zb", {"v": 2}),
    ("zb-h1", {}),
    ("zb-h2", {}),
    ("zbv", {}),
    ("dualpipev", {}),
    ("hanayo", {"waves": 1}),
]


@pytest.mark.parametrize("family,params", EXPORTS)
def test_pytorch_runtime_loads_ppverify_exports(family, params):
    for p, m in [(2, 4), (4, 8)]:
        s = build(family, p=p, m=m, **params)
        theirs = ti.torch_runtime_load_schedule(s, "compute_only")
        same_lowering(s, theirs)
        # compute_comms: ppverify writes PyTorch's own lowering, which PyTorch takes as is
        ours = to_rows(s, "compute_comms")
        assert list(theirs.values()) == ours
        assert list(ti.torch_runtime_load_schedule(s, "compute_comms").values()) == ours


def same_lowering(s, lowered):
    """PyTorch's runtime lowering of ``s`` keeps every rank's compute order and adds exactly the
    SEND/RECV that ppverify's lowering adds. (It interleaves them differently because it inserts
    UNSHARD/RESHARD first, and each takes a round of ``_add_send_recv``.)"""
    ours = [[str(a) for a in prog] for prog in add_send_recv(s).programs]
    comm = ("SEND_F", "RECV_F", "SEND_B", "RECV_B")
    for r, row in lowered.items():
        compute = [a for a in row if not any(k in a for k in comm) and not a.endswith(MARKERS)]
        assert compute == [str(a) for a in s.programs[r] if a is not None]
        assert sorted(a for a in row if any(k in a for k in comm)) == sorted(
            a for a in ours[r] if any(k in a for k in comm)
        )


def test_pytorch_runtime_loads_cp_sat_optimal_schedules():
    import ppverify.optimize as opt
    from ppverify.core.comm import NO_COMM
    from ppverify.core.placement import linear

    for split in (False, True):
        pl = linear(3)
        costs = CostModel.abstract(pl, F=1, B=2)
        r = opt.optimize(opt.Problem(pl, 4, costs, NO_COMM, split=split), time_limit=10)
        assert r.status == "OPTIMAL" and r.schedule is not None
        s = r.schedule
        assert structural_problems(s) == []
        theirs = ti.torch_runtime_load_schedule(s, "compute_only")
        same_lowering(s, theirs)
        assert list(theirs.values()) == to_rows(s, "compute_comms")
        assert list(ti.torch_runtime_load_schedule(s, "compute_comms").values()) == to_rows(s, "compute_comms")


def test_pytorch_runtime_loads_its_own_fixture(tmp_path):
    lowered = ti.torch_runtime_load("tests/data/torch/zb1p_2rank_2stagep_compute.csv", 2, 8, 4)
    assert lowered[0][:3] == ["0UNSHARD", "2UNSHARD", "0F0"]


# --- where PyTorch's validation passes and ppverify's fails -----------------------------------


def gap_case(rows, prop=None, **kw):
    s = parse_rows(rows, **kw)
    assert ti.torch_validate(s) is None  # PyTorch's _validate_schedule accepts it
    check = verifier()
    if check is not None and prop is not None:
        r = check(s)
        assert not r.valid and r.violations[0].prop == prop, r.to_text()
    return s


def test_gap_cross_stage_violation():
    # one rank holds stages 0 and 1 and runs 1F0 before 0F0: per-stage order is fine for PyTorch,
    # but stage 1's forward consumes stage 0's output, which does not exist yet
    s = gap_case([["1F0", "0F0", "1B0", "0B0"]], "dependencies")
    assert structural_problems(s) == []
    with pytest.raises(DeadlockError, match="device 0 waits in 1F0 for 0F0"):
        run(s, semantics="slot")


def test_gap_deadlock_across_ranks():
    # rank 0 waits in 0B0 for 1B0; rank 1 runs 1F1 (needing 0F1, queued after 0B0) before 1B0
    s = gap_case([["0F0", "0B0", "0F1", "0B1"], ["1F0", "1F1", "1B0", "1B1"]], "deadlock")
    assert structural_problems(s) == []
    with pytest.raises(DeadlockError) as err:
        run(s, semantics="slot")
    assert {d for d, _, _ in err.value.waits} == {0, 1}
    # PyTorch's own lowering then gives up too, but only after validation said yes
    with pytest.raises(AssertionError, match="Malformed compute schedule"):
        ti.torch_lower(s)


def test_gap_w_before_its_i():
    # PyTorch's _validate_schedule does check W against its I *within a list* (it rejects
    # ["0F0", "0W0", "0I0"]), so the case it misses is its simulator: _simulate_comms_compute
    # treats every W as ready. ppverify's engines reject the order.
    s = parse_rows([["0F0", "0W0", "0I0"]])
    assert "without first running Backward Input" in ti.torch_validate(s)
    assert ti.torch_simulated_steps(s) == 3  # PyTorch times it without complaint
    with pytest.raises(DeadlockError, match="waits in 0W0 for 0I0"):
        run(s, semantics="slot")
    check = verifier()
    if check is not None:
        r = check(s)
        assert r.violations[0].prop == "dependencies" and set(r.violations[0].ops) == {"0W0", "0I0"}


def test_gap_microbatch_with_no_backward():
    # stage 0 runs B0 *and* I0/W0 for microbatch 0 and nothing for microbatch 1: PyTorch counts
    # b + (i + w) // 2 = 1 + 1 = 2 = m backwards and is satisfied
    s = gap_case([["0F0", "0F1", "0B0", "0I0", "0W0"]], "completeness")
    probs = structural_problems(s)
    assert "stage 0 mb 0 has both a full backward B and a split I/W" in probs
    assert "op 0B1 is missing (should run on device 0)" in probs
    with pytest.raises(InvalidScheduleError):
        run(s, semantics="slot")


def test_gap_out_of_range_microbatch():
    # m = 2 but the rank runs microbatches 0 and 5: PyTorch counts 2 distinct forwards and backwards
    s = gap_case([["0F0", "0F5", "0B0", "0B5"]], "completeness", m=2)
    probs = structural_problems(s)
    assert probs[0] == "op 0F5 on device 0: stage must be in 0..0 and microbatch in 0..1"
    assert "op 0F1 is missing (should run on device 0)" in probs


def test_validation_gap_cases_export_and_reload(tmp_path):
    # the wrong files round-trip unchanged, so the user can hand them to PyTorch and see it accept
    s = parse_rows([["0F0", "0B0", "0F1", "0B1"], ["1F0", "1F1", "1B0", "1B1"]])
    f = tmp_path / "deadlock.csv"
    save_csv(s, f)
    assert f.read_text() == "0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n"


def test_pytorch_lowering_is_what_makes_v_schedules_safe_under_rendezvous():
    check = verifier()
    assert check is not None
    # ZB-V on 2 ranks: with each RECV right before its consumer (the verifier's derived placement)
    # and sends that wait for their receive, ranks 0 and 1 wait on each other; PyTorch's
    # _add_send_recv posts receives as soon as the sender runs, which breaks the cycle
    s = ti.torch_schedule("ZBVZeroBubble", 2, 4)
    naive = check(s, comm_semantics="rendezvous")
    assert not naive.valid and naive.violations[0].prop == "deadlock"
    assert check(add_send_recv(s), comm_semantics="rendezvous").valid
    assert check(s).valid  # buffered sends: fine either way
