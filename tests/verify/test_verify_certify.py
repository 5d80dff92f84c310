"""Certificates (``ppverify.verify.certify``) against Z3: on random schedules, random corruptions
of them, both point-to-point semantics, explicit SEND/RECV and random memory caps, the verifier
with certificates gives exactly the report Z3 alone gives (verdict, proved statements with their
peaks, every violation with its minimal core). Expected values elsewhere are by hand.

Run time: about 7 s CPU (40 s wall on the 2-core development machine at load 9)."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag_arrays, predecessors, split_pairs
from ppverify.core.errors import ParameterError
from ppverify.core.ops import Op
from ppverify.schedules import build, families
from ppverify.verify import verify
from ppverify.verify.certify import derived_order_witness, memory_levels, structure_holds
from ppverify.verify.comm_model import insert_comms

FAMILIES = sorted(f.name for f in families())
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def essence(r):
    """Everything a report says except how long it took and which path said it."""
    return r.valid, r.proved, r.violations, r.unchecked, r.witness


@st.composite
def schedules(draw):
    fam = draw(st.sampled_from(FAMILIES))
    p, m = draw(st.integers(2, 5)), draw(st.integers(1, 6))
    try:
        return build(fam, p=p, m=m)
    except ParameterError:
        assume(False)


def corrupt(s, data):
    """One random corruption (or none): drop, duplicate, move to another device, swap two
    actions of a device, rotate a device's program, reverse a stretch of it."""
    rows = [list(p) for p in s.programs]
    what = data.draw(st.sampled_from(["none", "drop", "dup", "move", "swap", "rotate", "reverse"]))
    d = data.draw(st.integers(0, s.p - 1))
    row = rows[d]
    if what == "none" or not row:
        return s
    i = data.draw(st.integers(0, len(row) - 1))
    j = data.draw(st.integers(0, len(row) - 1))
    if what == "drop":
        del row[i]
    elif what == "dup":
        row.insert(j, row[i])
    elif what == "move":
        other = data.draw(st.integers(0, s.p - 1))
        rows[other].insert(data.draw(st.integers(0, len(rows[other]))), row.pop(i))
    elif what == "swap":
        row[i], row[j] = row[j], row[i]
    elif what == "rotate":
        rows[d] = row[i:] + row[:i]
    else:
        lo, hi = min(i, j), max(i, j) + 1
        row[lo:hi] = row[lo:hi][::-1]
    return s.with_programs(tuple(tuple(r) for r in rows))


@SETTINGS
@given(schedules(), st.data())
def test_certificates_give_the_z3_report(s, data):
    explicit = data.draw(st.booleans())
    if explicit:
        s = insert_comms(s)
    s = corrupt(s, data)
    semantics = data.draw(st.sampled_from(["buffered", "rendezvous"]))
    freed = data.draw(st.sampled_from([0.0, 0.25, 1 / 3]))
    costs = CostModel.abstract(s.placement, F=1, I=1, W=1, freed_by_I=freed)
    cap = data.draw(st.sampled_from([None, 0.5, 1.0, 2.5, float(s.p), float(s.m) * s.p]))
    claim = data.draw(st.sampled_from([None, 3.0, 1000.0]))  # timing stays Z3's: the same either way
    kw = dict(costs=costs, memory_cap=cap, comm_semantics=semantics, makespan_le=claim)
    fast, z3 = verify(s, certificates=True, **kw), verify(s, certificates=False, **kw)
    event("valid" if z3.valid else "invalid: " + ", ".join(sorted({v.prop for v in z3.violations})))
    assert essence(fast) == essence(z3)
    assert z3.stats["certified"] == []
    assert set(fast.stats["certified"]) <= {p for p, _ in fast.proved}


@settings(max_examples=40, deadline=None, database=None)
@given(schedules())
def test_valid_schedules_are_settled_without_z3(s):
    # every family is valid (its own tests prove it): the certificates settle every property
    r = verify(s, memory_cap=float(s.m) * s.p)
    assert r.valid and r.stats["certified"] == [p for p, _ in r.proved]


def test_witness_respects_every_dependency_and_program_order():
    # dependencies from dag.predecessors (the rules, one op at a time), program order by hand
    s = build("zbv", p=4, m=8)
    a = build_dag_arrays(s)
    t = derived_order_witness(a)
    at = {op: int(x) for op, x in zip(a.ops, t)}
    split = split_pairs(s)
    for op in at:
        for q, _ in predecessors(op, s.num_stages, split):
            assert at[op] >= at[q] + 1, (op, q)
    for prog in s.programs:
        times = [at[o] for o in prog]
        assert times == sorted(times) and len(set(times)) == len(times)


def test_a_cross_device_cycle_has_no_witness():
    # device 1 runs microbatch 1 first; device 0 needs 1B0 before 0F1: a cycle of waits
    s = build("1f1b", p=2, m=2)
    F0, B0, F1, B1 = (Op(k, 0, mb) for k, mb in (("F", 0), ("B", 0), ("F", 1), ("B", 1)))
    one = [o._replace(stage=1) for o in (F1, F0, B0, B1)]
    bad = s.with_programs(((F0, B0, F1, B1), tuple(one)))
    assert structure_holds(bad) is not None  # the op set is fine ...
    assert derived_order_witness(build_dag_arrays(bad)) is None  # ... the order is not


def test_memory_peaks_are_the_1f1b_warmup():
    # 1F1B: device d holds min(p - d, m) activations at its peak (its warm-up plus one)
    for p, m in ((4, 8), (4, 2), (6, 5)):
        s = build("1f1b", p=p, m=m)
        ok, peaks = memory_levels(build_dag_arrays(s), CostModel.unit(s.placement), float(m), 5000)
        assert ok and peaks == [float(min(p - d, m)) for d in range(p)]


def test_memory_amounts_too_large_for_int64_go_to_z3():
    # 10^18 per activation: prefix sums could overflow int64, so no certificate; Z3 still proves it
    s = build("gpipe", p=2, m=4)
    c = CostModel.abstract(s.placement, F=1, B=2)
    huge = CostModel(c.duration, (1e18, 1e18), c.freed_by_I, c.boundary_bytes, c.weight_bytes)
    assert memory_levels(build_dag_arrays(s), huge, 4e18, 5000) is None
    r = verify(s, costs=huge, memory_cap=4e18)
    assert r.valid and "memory" in dict(r.proved) and "memory" not in r.stats["certified"]
