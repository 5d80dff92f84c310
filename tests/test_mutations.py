"""Mutation testing: corrupt valid schedules and check that the verifier catches every corruption
and explains the injected fault with a core of at most 4 ops.

Mutations: drop an op, duplicate one, move one to another device, swap an op with one it
depends on, put a W before its own I, reorder a RECV into a deadlock (explicit SEND/RECV), and
lower the memory cap below the (hand-derived) peak.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from ppverify.errors import ParameterError
from ppverify.ops import B, Comm, F, I, Op, W
from ppverify.schedules import build, families
from ppverify.verify import verify

FAMILIES = sorted(f.name for f in families())
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def schedules(draw):
    fam = draw(st.sampled_from(FAMILIES))
    p = draw(st.integers(2, 6))
    m = draw(st.integers(1, 8))
    try:
        s = build(fam, p=p, m=m)
    except ParameterError:
        assume(False)
    return s


def plain_positions(s):
    """(device, index) of every plain Op action (not inside an overlapped slot)."""
    return [(d, n) for d, prog in enumerate(s.programs) for n, a in enumerate(prog) if type(a) is Op]


def with_rows(s, rows):
    return s.with_programs(tuple(tuple(r) for r in rows))


def fault_core_ok(r, props):
    """The injected fault is reported (a violation of one of ``props``) with a core of <= 4 ops."""
    assert not r.valid
    hits = [v for v in r.violations if v.prop in props]
    assert hits, [v.to_text() for v in r.violations]
    assert 1 <= len(hits[0].ops) <= 4, hits[0].to_text()
    return hits[0]


@SETTINGS
@given(schedules(), st.data())
def test_drop_an_op(s, data):
    d, n = data.draw(st.sampled_from(plain_positions(s)))
    op = s.programs[d][n]
    rows = [list(p) for p in s.programs]
    del rows[d][n]
    v = fault_core_ok(verify(with_rows(s, rows)), {"completeness"})
    assert v.ops == (str(op),) and "missing" in v.message


@SETTINGS
@given(schedules(), st.data())
def test_duplicate_an_op(s, data):
    d, n = data.draw(st.sampled_from(plain_positions(s)))
    op = s.programs[d][n]
    rows = [list(p) for p in s.programs]
    rows[d].insert(data.draw(st.integers(n + 1, len(rows[d]))), op)
    r = verify(with_rows(s, rows))
    v = fault_core_ok(r, {"completeness"})
    assert v.ops == (str(op),) and "appears 2 times" in v.message
    assert len(r.violations) == 1  # the later copy is set aside: nothing else is wrong


@SETTINGS
@given(schedules(), st.data())
def test_move_an_op_to_another_device(s, data):
    d, n = data.draw(st.sampled_from(plain_positions(s)))
    op = s.programs[d][n]
    other = data.draw(st.sampled_from([x for x in range(s.p) if x != d]))
    rows = [list(p) for p in s.programs]
    del rows[d][n]
    rows[other].insert(data.draw(st.integers(0, len(rows[other]))), op)
    r = verify(with_rows(s, rows))
    v = fault_core_ok(r, {"placement"})
    assert v.ops == (str(op),)
    assert [x.prop for x in r.violations] == ["placement"]


@SETTINGS
@given(schedules(), st.data())
def test_swap_an_op_with_its_dependency(s, data):
    # F(s, mb) and its first backward (B or I) run on the same device: swap their slots
    pos = {s.programs[d][n]: (d, n) for d, n in plain_positions(s)}
    pairs = [(pos[o], pos[b]) for o in pos if o.kind == F
             for b in (Op(B, o.stage, o.mb), Op(I, o.stage, o.mb)) if b in pos]
    assume(pairs)
    (d, i), (_, j) = data.draw(st.sampled_from(pairs))
    rows = [list(p) for p in s.programs]
    rows[d][i], rows[d][j] = rows[d][j], rows[d][i]
    v = fault_core_ok(verify(with_rows(s, rows)), {"dependencies", "deadlock"})
    assert str(s.programs[d][i]) in v.ops or str(s.programs[d][j]) in v.ops


@SETTINGS
@given(st.sampled_from([f for f in FAMILIES if f in ("1f1b-split", "zb-h1", "zb-h2", "zbv", "dualpipev")]),
       st.integers(2, 5), st.integers(1, 8), st.data())
def test_w_before_its_own_i(fam, p, m, data):
    try:
        s = build(fam, p=p, m=m)
    except ParameterError:
        assume(False)
    pos = {s.programs[d][n]: (d, n) for d, n in plain_positions(s)}
    pairs = [(pos[o], pos[Op(W, o.stage, o.mb)]) for o in pos if o.kind == I and Op(W, o.stage, o.mb) in pos]
    assume(pairs)
    (d, i), (_, j) = data.draw(st.sampled_from(pairs))
    rows = [list(p) for p in s.programs]
    w = rows[d].pop(j)
    rows[d].insert(i, w)  # W right before its I
    v = fault_core_ok(verify(with_rows(s, rows)), {"dependencies"})
    assert v.rule == "W after its own I" and set(v.ops) == {str(w), str(w._replace(kind=I))}


def explicit_1f1b(p: int, m: int):
    """1F1B with explicit comms placed by hand: RECV right before the consumer, SEND right after
    the producer (linear placement: stage s on device s)."""
    s = build("1f1b", p=p, m=m)
    rows = []
    for d, prog in enumerate(s.programs):
        row = []
        for op in prog:
            if op.kind == F and d > 0:
                row.append(Comm("RECV_F", d, op.mb))
            if op.kind == B and d < p - 1:
                row.append(Comm("RECV_B", d, op.mb))
            row.append(op)
            if op.kind == F and d < p - 1:
                row.append(Comm("SEND_F", d, op.mb))
            if op.kind == B and d > 0:
                row.append(Comm("SEND_B", d, op.mb))
        rows.append(row)
    return s, rows


@SETTINGS
@given(st.integers(2, 6), st.integers(1, 8), st.data())
def test_reorder_a_recv_into_a_deadlock(p, m, data):
    s, rows = explicit_1f1b(p, m)
    assert verify(with_rows(s, rows)).valid
    # device d's RECV of the last forward moved to the front of its program. Device d-1 warms
    # up with w = p-d forwards, then runs pairs F(w+k), B(k): F(m-1) follows the backward B(m-2-w)
    # exactly when m >= w + 2; that backward needs device d's gradient, which device d sends only
    # after the moved RECV: a cycle of waits
    d = data.draw(st.integers(1, p - 1))
    assume(m >= p - d + 2)
    recv = Comm("RECV_F", d, m - 1)
    rows[d].remove(recv)
    rows[d].insert(0, recv)
    for sem in ("buffered", "rendezvous"):
        v = fault_core_ok(verify(with_rows(s, rows), comm_semantics=sem), {"deadlock"})
        # (under rendezvous the moved RECV is posted in one group with the RECV after it)
        assert any(str(recv) in o.split("+") for o in v.ops) and v.message.startswith("rank ")


@SETTINGS
@given(st.sampled_from(["1f1b", "gpipe"]), st.integers(2, 4), st.integers(2, 4))
def test_exceed_the_memory_cap(fam, p, m):
    # peaks by hand: GPipe holds all m activations on every device; 1F1B holds min(p, m) on
    # device 0 (REFERENCE §1). A cap one below is exceeded; the core is cap + 1 <= 4 forwards
    s = build(fam, p=p, m=m)
    peak = m if fam == "gpipe" else min(p, m)
    assert verify(s, memory_cap=peak).valid
    v = fault_core_ok(verify(s, memory_cap=peak - 1), {"memory"})
    assert len(v.ops) == peak and all(o[1] == "F" for o in v.ops)
