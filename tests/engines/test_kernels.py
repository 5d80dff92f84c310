"""The compiled kernels (numba) against the pure-Python engines they replace above a size
threshold: on random families, sizes, per-stage costs and communication settings, every start,
end and transfer of the compiled path equals the reference's exactly. The threshold is forced
to 0 (compiled) or out of reach (reference) so both paths run on the same small inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify import compiled
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import DeadlockError, PPVerifyError
from ppverify.core.ops import Op
from ppverify.engines import run
from ppverify.engines.core import list_schedule_flat
from ppverify.engines.kernels import list_schedule_arrays
from ppverify.engines.torch_steps import add_send_recv, simulate_steps, torch_timeline
from ppverify.schedules import build
from ppverify.systems.system import load_system

FAMILIES = [
    "gpipe",
    "1f1b",
    "1f1b-split",
    "interleaved-1f1b",
    "interleaved-zb",
    "looped-bfs",
    "zb-h1",
    "zb-h2",
    "zbv",
    "dualpipev",
    "dualpipe",
    "chimera",
    "hanayo",
]
ONE_PIPE = [
    "gpipe",
    "1f1b",
    "1f1b-split",
    "interleaved-1f1b",
    "interleaved-zb",
    "looped-bfs",
    "zb-h1",
    "zb-h2",
    "zbv",
    "dualpipev",
]
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)


def both(fn):
    """``(reference result, compiled result)`` of ``fn()``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compiled, "COMPILED_MIN_OPS", 10**12)
        ref = fn()
        mp.setattr(compiled, "COMPILED_MIN_OPS", 0)
        return ref, fn()


def try_build(data, names):
    family = data.draw(st.sampled_from(names), label="family")
    p = data.draw(st.integers(2, 8), label="p")
    m = data.draw(st.integers(1, 3), label="m per p") * p
    kw = {"v": data.draw(st.integers(2, 3), label="v")} if family in ("interleaved-1f1b", "looped-bfs") else {}
    try:
        return build(family, p=p, m=m, **kw)
    except PPVerifyError:
        return None


def random_costs(data, schedule):
    """Per-stage integer-valued and fractional durations, activations, bytes."""
    S = schedule.num_stages
    vals = st.lists(st.sampled_from([0.0, 0.25, 1.0, 1.5, 2.0, 3.0, 0.1]), min_size=S, max_size=S)
    f, i, w = data.draw(vals, label="F"), data.draw(vals, label="I"), data.draw(vals, label="W")
    return CostModel(
        {"F": tuple(f), "B": tuple(a + b for a, b in zip(i, w)), "I": tuple(i), "W": tuple(w)},
        tuple([1.0] * S),
        tuple([0.5] * S),
        tuple(data.draw(vals, label="bytes")[: S - 1]),
        tuple([0.0] * S),
        overlap=data.draw(st.sampled_from([1.0, 0.7]), label="overlap"),
    )


def random_comm(data, p):
    if data.draw(st.booleans(), label="system"):
        # a few GPUs per node so that NICs are shared between nodes
        return load_system("dgx-h100", ranks_per_node=data.draw(st.sampled_from([1, 2, 4]), label="per node"))
    return FixedDelay(data.draw(st.sampled_from([0.0, 0.3, 1.0, 2.5]), label="delay"))


def assert_same_timeline(a, b):
    assert a.ops == b.ops
    assert np.array_equal(a.device, b.device)
    assert np.array_equal(a.start, b.start) and np.array_equal(a.end, b.end)
    for f in ("kind", "src_dev", "dst_dev", "src_op", "dst_op", "start", "end", "nbytes"):
        assert getattr(a.transfers, f) == getattr(b.transfers, f), f
    assert a.info == b.info


@SETTINGS
@given(st.data())
def test_async_compiled_equals_reference(data):
    s = try_build(data, FAMILIES)
    if s is None:
        return
    costs, comm = random_costs(data, s), random_comm(data, s.p)
    ref, fast = both(lambda: run(s, costs, comm, semantics="async"))
    assert_same_timeline(ref, fast)


@SETTINGS
@given(st.data())
def test_contention_compiled_equals_reference(data):
    s = try_build(data, FAMILIES)
    if s is None:
        return
    costs, comm = random_costs(data, s), random_comm(data, s.p)
    sync = data.draw(st.sampled_from(["none", "eager"]), label="sync")  # eager: collectives, reference path
    ref, fast = both(lambda: run(s, costs, comm, semantics="contention", sync=sync))
    assert_same_timeline(ref, fast)


@SETTINGS
@given(st.data())
def test_torch_steps_compiled_equals_reference(data):
    s = try_build(data, ONE_PIPE)
    if s is None:
        return
    ref, fast = both(lambda: torch_timeline(s))
    assert_same_timeline(ref, fast)
    low = add_send_recv(s)
    g_ref, g_fast = both(lambda: simulate_steps(low))
    assert g_ref == g_fast


@SETTINGS
@given(st.data())
def test_list_schedule_kernel_with_idle_ticks_and_overlaps(data):
    # the slot table's case: idle slots cost a tick; DualPipe's overlapped F&B slots
    from ppverify.core.dag import build_dag_arrays

    s = try_build(data, ["dualpipe", "dualpipev", "zb-h1", "1f1b"])
    if s is None:
        return
    dag = build_dag_arrays(s)
    n = dag.num_ops
    dur = data.draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n), label="durations")
    delay = np.array(
        data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=2 * n, max_size=2 * n), label="delays")
    ).reshape(n, 2)
    tick = data.draw(st.sampled_from([0.0, 1.0, 0.5]), label="tick")
    ref = list_schedule_flat(
        dag.pred[:, 0].tolist(),
        dag.pred[:, 1].tolist(),
        delay[:, 0].tolist(),
        delay[:, 1].tolist(),
        dur,
        dag.fused.tolist(),
        dag.idle_before.tolist(),
        dag.offsets,
        tick,
    )
    fast = list_schedule_arrays(dag.pred, delay, np.array(dur), dag.fused, dag.idle_before, dag.offsets, tick)
    assert fast[0].tolist() == ref[0] and fast[1].tolist() == ref[1] and fast[2] is ref[2] is None


def test_deadlock_reported_the_same_way(monkeypatch):
    # device 0 runs 0B0 first: it waits for 1B0, which waits for 1F0, which waits for 0F0
    s = build("gpipe", p=2, m=2)
    prog = s.programs[0]
    broken = s.with_programs(((prog[2],) + prog[:2] + (prog[3],), s.programs[1]))
    msgs = []
    for threshold in (10**12, 0):
        monkeypatch.setattr(compiled, "COMPILED_MIN_OPS", threshold)
        for sem in ("async", "contention", "torch"):
            with pytest.raises(DeadlockError) as exc:
                run(broken, semantics=sem, comm=FixedDelay(1.0))
            msgs.append(str(exc.value))
    assert msgs[:3] == msgs[3:]


def test_threshold_keeps_small_runs_on_the_reference(monkeypatch):
    # below the threshold the kernels module (and numba) is never needed
    assert not compiled.use_compiled(compiled.COMPILED_MIN_OPS - 1)
    assert compiled.use_compiled(compiled.COMPILED_MIN_OPS)
    monkeypatch.setenv("PPVERIFY_COMPILED", "0")
    assert not compiled.use_compiled(10**9)


def test_torch_steps_fall_back_on_duplicated_actions(monkeypatch):
    # an action twice cannot be encoded: the reference runs. PyTorch never checks a W, so both
    # 0W0 run at once after 0B0: row 0 is 0F0 0SEND_F0 . . 0RECV_B0 0B0 0W0 0W0 (8 steps)
    from ppverify.engines.torch_steps_kernel import simulate_steps_compiled

    low = add_send_recv(build("gpipe", p=2, m=1))
    dup = low.with_programs((low.programs[0] + (Op("W", 0, 0), Op("W", 0, 0)), low.programs[1]))
    monkeypatch.setattr(compiled, "COMPILED_MIN_OPS", 0)
    assert simulate_steps_compiled(dup) is None
    assert [len(r) for r in simulate_steps(dup)] == [8, 5]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(1, 9), st.integers(1, 24), st.integers(1, 4))
def test_vectorised_generators_equal_reference(p, m, v):
    # interleaved 1F1B (any v, PyTorch's round rule) and plain 1F1B, op for op
    for family, kw in (
        ("interleaved-1f1b", {"v": v}),
        ("interleaved-1f1b", {"v": v, "order": "megatron"}),
        ("1f1b", {}),
    ):
        try:
            ref, fast = both(lambda: build(family, p=p, m=m, **kw))
        except PPVerifyError:
            continue
        assert fast.programs == ref.programs
        assert (fast.placement, fast.m, fast.pipe_of_mb, fast.family, fast.params) == (
            ref.placement,
            ref.m,
            ref.pipe_of_mb,
            ref.family,
            ref.params,
        )
        assert all(
            type(op) is Op and type(op.stage) is int and type(op.mb) is int for prog in fast.programs for op in prog
        )


@SETTINGS
@given(st.data())
def test_compiled_lowering_equals_reference(data):
    # PyTorch's _add_send_recv, compiled: the same lowered programs, action for action, also with
    # idle slots kept in the input (as PyTorch's own pipeline_order has them)
    from ppverify.engines.torch_steps_kernel import lowered_compiled

    s = try_build(data, ONE_PIPE)
    if s is None:
        return
    if data.draw(st.booleans(), label="idle slots"):
        k = data.draw(st.integers(0, s.p - 1), label="rank")
        prog = s.programs[k]
        at = data.draw(st.integers(0, len(prog)), label="at")
        s = s.with_programs(s.programs[:k] + (prog[:at] + (None,) + prog[at:],) + s.programs[k + 1 :])
    assert lowered_compiled(s).programs == add_send_recv(s).programs
