"""The array paths behind the async engine's speed: transfers kept as numpy arrays (read as lists
only on demand), the compiled DAG links and exposed-communication sums, and the dense lookup of
edge transfer times. Each is checked against the plain form it replaces: lists written by hand,
the numpy rules of ``build_dag_arrays``, the numpy ``exposed_comm`` (exact equality)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify import compiled
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag_arrays
from ppverify.core.errors import PPVerifyError
from ppverify.core.timeline import Transfers
from ppverify.engines.kernels import dag_links, exposed_waits
from ppverify.engines.simulate import _edge_times, compiled_links, exposed_comm, simulate_async
from ppverify.schedules import build
from ppverify.systems.system import load_system

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
FAMILIES = ["gpipe", "1f1b", "1f1b-split", "interleaved-1f1b", "zb-h1", "zbv", "dualpipev", "dualpipe", "chimera"]


def test_transfers_from_arrays_read_as_lists():
    tr = Transfers.from_arrays(
        ("activation", "gradient"),
        np.array([1, 0, 1]),
        np.array([0, 1, 2]),
        np.array([1, 0, 1]),
        np.array([0, 3, 5]),
        np.array([2, 1, 4]),
        np.array([1.0, 2.0, 3.5]),
        np.array([1.5, 2.25, 4.0]),
        np.array([8.0, 8.0, 16.0]),
    )
    assert len(tr) == 3
    assert tr.kind == ["gradient", "activation", "gradient"] and tr.kind.count("gradient") == 2
    assert tr.src_dev == [0, 1, 2] and type(tr.src_dev[0]) is int
    assert tr.start == [1.0, 2.0, 3.5] and type(tr.start[0]) is float
    assert tr.column("end").tolist() == [1.5, 2.25, 4.0] and tr.column("kind").tolist() == tr.kind
    tr.add("allreduce", 0, 1, -1, -1, 5.0, 6.0, 32.0)
    assert len(tr) == 4 and tr.kind[-1] == "allreduce" and tr.src_op == [0, 3, 5, -1]
    assert tr.column("end").tolist() == [1.5, 2.25, 4.0, 6.0]


def test_transfers_from_lists_and_empty():
    tr = Transfers(["activation"], [0], [1], [0], [2], [1.0], [1.5], [4.0])
    assert len(tr) == 1 and tr.column("nbytes").tolist() == [4.0] and tr.column("src_op").dtype == np.int64
    empty = Transfers()
    assert len(empty) == 0 and empty.kind == [] and empty.column("start").tolist() == []
    with pytest.raises(KeyError):
        empty.column("size")


def test_makespan_counts_transfers_kept_as_arrays():
    # gpipe p=2 m=1, F=B=1, delay 0.5: 0F0 [0,1], 1F0 [1.5,2.5], 1B0 [2.5,3.5], 0B0 [4,5]
    s = build("gpipe", p=2, m=1)
    tl = simulate_async(s, CostModel.abstract(s.placement, F=1, B=1), FixedDelay(0.5))
    # listed by consumer position: 0B0's gradient (position 1), then 1F0's activation (position 2)
    assert tl.makespan == 5.0 and tl.transfers.kind == ["gradient", "activation"]
    assert tl.transfers.start == [3.5, 1.0] and tl.transfers.end == [4.0, 1.5]
    late = Transfers.from_arrays(("allreduce",), *(np.array([v]) for v in (0, 0, 1, -1, -1, 5.0, 9.0, 0.0)))
    assert replace(tl, transfers=late).makespan == 9.0  # a transfer ending after the last op


def _schedule(data):
    family = data.draw(st.sampled_from(FAMILIES), label="family")
    p = data.draw(st.integers(2, 6), label="p")
    m = data.draw(st.integers(1, 3), label="m per p") * p
    kw = {"v": data.draw(st.integers(2, 3), label="v")} if family == "interleaved-1f1b" else {}
    try:
        return build(family, p=p, m=m, **kw)
    except PPVerifyError:
        return None


@SETTINGS
@given(st.data())
def test_compiled_links_equal_numpy_rules(data):
    s = _schedule(data)
    if s is None:
        return
    ref = build_dag_arrays(s)
    pred, cross = dag_links(ref.kind, ref.stage, ref.mb, ref.device, s.num_stages, s.m)
    assert np.array_equal(pred, ref.pred) and np.array_equal(cross, ref.cross)
    assert pred.dtype == ref.pred.dtype and cross.dtype == ref.cross.dtype


@SETTINGS
@given(st.data())
def test_exposed_waits_equal_numpy_sums(data):
    s = _schedule(data)
    if s is None:
        return
    dag = build_dag_arrays(s)
    n = dag.num_ops
    # arbitrary times (not a real execution): the sums must still agree bit for bit
    vals = st.sampled_from([0.0, 0.1, 0.25, 1.0, 1.5, 3.0, 7.3])
    start = np.array(data.draw(st.lists(vals, min_size=n, max_size=n), label="start"))
    end = start + np.array(data.draw(st.lists(vals, min_size=n, max_size=n), label="length"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compiled, "COMPILED_MIN_OPS", 10**12)
        ref = exposed_comm(dag, start, end, s.p)
    assert exposed_waits(dag.pred, start, end, dag.offsets).tolist() == ref.tolist()


def test_links_hook_only_above_threshold():
    kc = np.zeros(3, np.int64)
    assert compiled_links(kc, kc, kc, kc, 1, 3) is None  # 3 ops: the numpy rules
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compiled, "COMPILED_MIN_OPS", 0)
        s = build("1f1b", p=3, m=3)
        a = build_dag_arrays(s, links=compiled_links)
    b = build_dag_arrays(s)
    assert np.array_equal(a.pred, b.pred) and np.array_equal(a.cross, b.cross)


@pytest.mark.parametrize("system", [False, True])
def test_edge_times_dense_table_equals_sorted_lookup(system):
    rng = np.random.default_rng(0)
    comm = load_system("dgx-h100", ranks_per_node=2) if system else FixedDelay(0.75)
    src, dst = rng.integers(0, 8, 500), rng.integers(0, 8, 500)
    boundary, bb = rng.integers(0, 5, 500), np.array([1e3, 2e6, 3.5e7, 0.0, 4e9])
    dense = _edge_times(comm, src, dst, boundary, bb, 8)  # 8*8*5 keys: the dense table
    sparse = _edge_times(comm, src, dst, boundary, bb, 4096)  # same pairs, keys too spread: np.unique
    assert np.array_equal(dense[0], sparse[0]) and np.array_equal(dense[1], sparse[1])
    want = [comm.transfer_time(int(a), int(b), float(bb[k])) for a, b, k in zip(src, dst, boundary)]
    assert dense[1].tolist() == want
