"""Mutation testing: corrupt valid schedules and check that the verifier catches every corruption
and explains the injected fault with a core of at most 4 ops.

Mutations: drop an op, duplicate one, move one to another device, swap an op with one it
depends on, put a W before its own I, reorder a RECV into a deadlock (explicit SEND/RECV), and
lower the memory cap below the (hand-derived) peak.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ppverify.core.errors import ParameterError
from ppverify.core.ops import B, Comm, F, I, Op, W
from ppverify.schedules import build, families
from ppverify.verify import verify

FAMILIES = sorted(f.name for f in families())
SETTINGS = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


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
    pairs = [
        (pos[o], pos[b]) for o in pos if o.kind == F for b in (Op(B, o.stage, o.mb), Op(I, o.stage, o.mb)) if b in pos
    ]
    assume(pairs)
    (d, i), (_, j) = data.draw(st.sampled_from(pairs))
    rows = [list(p) for p in s.programs]
    rows[d][i], rows[d][j] = rows[d][j], rows[d][i]
    v = fault_core_ok(verify(with_rows(s, rows)), {"dependencies", "deadlock"})
    assert str(s.programs[d][i]) in v.ops or str(s.programs[d][j]) in v.ops


@SETTINGS
@given(
    st.sampled_from([f for f in FAMILIES if f in ("1f1b-split", "zb-h1", "zb-h2", "zbv", "dualpipev")]),
    st.integers(2, 5),
    st.integers(1, 8),
    st.data(),
)
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
def test_reorder_a_recv_into_a_rendezvous_deadlock(p, m, data):
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
    v = fault_core_ok(verify(with_rows(s, rows), comm_semantics="rendezvous"), {"deadlock"})
    # (under rendezvous the moved RECV is posted in one group with the RECV after it)
    assert any(str(recv) in o.split("+") for o in v.ops) and v.message.startswith("rank ")
    # buffered, as PyTorch's runtime runs it, a RECV is only posted early (as PyTorch's own
    # lowering posts them): the op that consumes its data still waits where it did, so it runs
    assert verify(with_rows(s, rows), comm_semantics="buffered").valid


@SETTINGS
@given(st.sampled_from(["1f1b", "gpipe"]), st.integers(2, 4), st.integers(2, 4))
def test_exceed_the_memory_cap(fam, p, m):
    # peaks by hand: GPipe holds all m activations on every device; 1F1B holds min(p, m) on
    # device 0 (1F1B's warm-up). A cap one below is exceeded; the core is cap + 1 <= 4 forwards
    s = build(fam, p=p, m=m)
    peak = m if fam == "gpipe" else min(p, m)
    assert verify(s, memory_cap=peak).valid
    v = fault_core_ok(verify(s, memory_cap=peak - 1), {"memory"})
    assert len(v.ops) == peak and all(o[1] == "F" for o in v.ops)


# ---- no silent wrong answer: verify's verdict against an independent checker -------------------
#
# The checker below is written from the definitions of a training step, not from ppverify's
# verifier: a schedule is valid when every required op of every (stage, microbatch) occurs exactly
# once on the device its pipe places the stage on, and some execution respects each device's
# program order and the step's dependencies (an acyclic graph). Dependencies: F(s,mb) after
# F(s-1,mb); the last stage's first backward after F(S-1,mb); B|I(s,mb) after B|I(s+1,mb) and after
# F(s,mb); W after I. With explicit SEND/RECV, every cross-device dependency needs exactly one SEND
# after its producer on the producer's device and one RECV before its consumer on the consumer's
# device (buffered: a RECV waits for its SEND), and nothing else.

import random

import pytest

from ppverify.core.ops import Overlap
from ppverify.engines.torch_steps import add_send_recv
from ppverify.io.json_format import dumps, loads_document


def independent_valid(s) -> bool:
    S, m, maps = s.num_stages, s.m, s.placement.maps
    node_of: dict = {}  # compute op -> its slot (an overlapped slot is one node)
    comm_at: dict = {}
    prev_edges = []
    for d, prog in enumerate(s.programs):
        last = None
        for n, a in enumerate(prog):
            if a is None or type(a).__name__ == "Marker":
                continue
            node = (d, n)
            if isinstance(a, Comm):
                if a in comm_at:
                    return False  # a SEND or RECV twice
                comm_at[a] = node
            else:
                for op in a.ops if isinstance(a, Overlap) else (a,):
                    if op in node_of or not (0 <= op.stage < S and 0 <= op.mb < m):
                        return False  # twice, or a stage/microbatch that does not exist
                    if maps[s.pipe_of_mb[op.mb]][op.stage] != d:
                        return False  # on a device that does not hold its stage
                    node_of[op] = node
            if last is not None:
                prev_edges.append((last, node))
            last = node
    # completeness: F and (B or I+W), exactly, for every stage and microbatch
    for st_ in range(S):
        for mb in range(m):
            kinds = {k for k in (F, B, I, W) if Op(k, st_, mb) in node_of}
            if kinds not in ({F, B}, {F, I, W}):
                return False
    if len(node_of) != sum(3 if Op(I, st_, mb) in node_of else 2 for st_ in range(S) for mb in range(m)):
        return False

    def grad(st_, mb):
        return Op(B, st_, mb) if Op(B, st_, mb) in node_of else Op(I, st_, mb)

    deps = []  # (producer, consumer, forward?)
    for mb in range(m):
        for st_ in range(S):
            if st_ > 0:
                deps.append((Op(F, st_ - 1, mb), Op(F, st_, mb), True))
            deps.append((Op(F, st_, mb), grad(st_, mb), None))
            if st_ < S - 1:
                deps.append((grad(st_ + 1, mb), grad(st_, mb), False))
            if Op(W, st_, mb) in node_of:
                deps.append((Op(I, st_, mb), Op(W, st_, mb), None))
    edges = list(prev_edges)
    explicit = bool(comm_at)
    used = set()
    for a, b, fwd in deps:
        na, nb = node_of[a], node_of[b]
        edges.append((na, nb))
        if explicit and fwd is not None and na[0] != nb[0]:
            send = Comm("SEND_F" if fwd else "SEND_B", a.stage, a.mb)
            recv = Comm("RECV_F" if fwd else "RECV_B", b.stage, b.mb)
            if send not in comm_at or recv not in comm_at or comm_at[send][0] != na[0] or comm_at[recv][0] != nb[0]:
                return False
            used.update((send, recv))
            edges += [(na, comm_at[send]), (comm_at[send], comm_at[recv]), (comm_at[recv], nb)]
    if set(comm_at) - used:
        return False  # a SEND or RECV no dependency needs
    # acyclic (Kahn); a self-loop (a dependency inside one overlapped slot) is a cycle
    succ: dict = {}
    indeg: dict = {}
    nodes = set(node_of.values()) | set(comm_at.values())
    for u, v in edges:
        succ.setdefault(u, []).append(v)
        indeg[v] = indeg.get(v, 0) + 1
    ready = [u for u in nodes if not indeg.get(u)]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        for v in succ.get(u, ()):
            indeg[v] -= 1
            if not indeg[v]:
                ready.append(v)
    return seen == len(nodes)


def _mutations(s, rng: random.Random):
    """Single faults of one schedule: (name, mutated rows) pairs."""
    rows = [list(p) for p in s.programs]
    acts = [(d, n) for d, prog in enumerate(rows) for n, a in enumerate(prog) if a is not None]
    comps = [(d, n) for d, n in acts if isinstance(rows[d][n], (Op, Overlap))]
    out = []

    def copy():
        return [list(p) for p in rows]

    d, n = rng.choice(comps)
    r = copy()
    del r[d][n]
    out.append(("drop", r))
    d, n = rng.choice(comps)
    r = copy()
    r[d].insert(rng.randrange(len(r[d]) + 1), rows[d][n])
    out.append(("duplicate", r))
    d, n = rng.choice(comps)
    same = [k for k in range(len(rows[d])) if k != n and isinstance(rows[d][k], (Op, Overlap))]
    if same:
        k = rng.choice(same)
        r = copy()
        r[d][n], r[d][k] = r[d][k], r[d][n]
        out.append(("swap", r))
    if s.p > 1:
        d, n = rng.choice(comps)
        e = rng.choice([x for x in range(s.p) if x != d])
        r = copy()
        a = r[d].pop(n)
        r[e].insert(rng.randrange(len(r[e]) + 1), a)
        out.append(("move", r))
    pos = {a: (d, n) for d, n in comps for a in [rows[d][n]] if type(a) is Op}
    # pairs on one device only (a first fault may have moved one of them: a second fault's list)
    ws = [
        (pos[o], pos[w])
        for o in pos
        if o.kind == I
        for w in [o._replace(kind=W)]
        if w in pos and pos[w][0] == pos[o][0]
    ]
    if ws:
        (d, i), (_, j) = rng.choice(ws)
        r = copy()
        w = r[d].pop(j)
        r[d].insert(i, w)
        out.append(("W before its I", r))
    fs = [
        (pos[o], pos[g])
        for o in pos
        if o.kind == F
        for g in (o._replace(kind=B), o._replace(kind=I))
        if g in pos and pos[g][0] == pos[o][0]
    ]
    if fs:
        (d, i), (_, j) = rng.choice(fs)
        r = copy()
        f = r[d].pop(i)
        r[d].insert(j, f)
        out.append(("F after its B", r))
    recvs = [(d, n) for d, n in acts if isinstance(rows[d][n], Comm) and rows[d][n].kind.startswith("RECV")]
    if recvs:
        d, n = rng.choice(recvs)
        r = copy()
        del r[d][n]
        out.append(("send without its receive", r))
    return out


def _exports():
    """Every family at small sizes, read back from its JSON export; one-pipe ones also lowered to
    explicit SEND/RECV as PyTorch would."""
    for fam in FAMILIES:
        for p, m in ((2, 2), (2, 4), (3, 3), (4, 4), (4, 8)):
            try:
                s = build(fam, p=p, m=m)
            except ParameterError:
                continue
            yield loads_document(dumps(s), f"{fam}.json").schedule
            if s.placement.num_pipes == 1:
                yield add_send_recv(s)


def _agreement(n: int, seed: int, double: bool = False) -> dict:
    # double: a second fault on top of each first one (two faults may mask each other's symptom,
    # e.g. a drop and a duplicate of the same op; the checker decides what the pair amounts to)
    rng = random.Random(seed)
    schedules = list(_exports())
    assert {s.family for s in schedules} >= set(FAMILIES)
    counts: dict = {}
    disagree = []
    while sum(counts.values()) < n:
        s = rng.choice(schedules)
        for name, rows in _mutations(s, rng):
            t = with_rows(s, rows)
            if double:
                second, rows2 = rng.choice(_mutations(t, rng))
                name, t = f"{name}+{second}", with_rows(t, rows2)
            want = independent_valid(t)
            got = verify(t).valid
            counts[(name, want)] = counts.get((name, want), 0) + 1
            if got != want:
                disagree.append(f"{name} of {s.describe()}: verify {got}, checker {want}")
    assert not disagree, disagree[:5]
    return counts


KINDS_OF_FAULT = {"drop", "duplicate", "swap", "move", "W before its I", "F after its B", "send without its receive"}


def test_verify_agrees_with_an_independent_checker():
    counts = _agreement(150, 7)  # the fast share; the 2,000 below run with the slow tests
    assert {n for n, _ in counts} == KINDS_OF_FAULT


@pytest.mark.slow
def test_verify_agrees_with_an_independent_checker_on_2000_mutations():
    counts = _agreement(2000, 15)
    assert {n for n, _ in counts} == KINDS_OF_FAULT
    # most faults break the schedule (a swap of independent ops may not): both verdicts occur
    assert sum(v for (_, ok), v in counts.items() if not ok) > 1000
    assert sum(v for (_, ok), v in counts.items() if ok) > 0


@pytest.mark.slow
def test_verify_agrees_with_an_independent_checker_on_double_faults():
    counts = _agreement(2000, 23, double=True)
    firsts = {n.split("+")[0] for n, _ in counts}
    assert firsts == KINDS_OF_FAULT
    assert sum(v for (_, ok), v in counts.items() if ok) > 0  # some pairs cancel out: VALID is right there


@SETTINGS
@given(st.integers(2, 5), st.integers(1, 6), st.data())
def test_a_schedule_valid_under_rendezvous_is_valid_buffered(p, m, data):
    # buffered only weakens what blocks (a SEND never, a RECV only at the op consuming its data),
    # so any program that completes with blocking, grouped rendezvous transfers completes buffered
    # too: move a few RECVs earlier (before their consumers, as PyTorch's lowering posts them)
    s, rows = explicit_1f1b(p, m)
    for _ in range(data.draw(st.integers(1, 3))):
        d = data.draw(st.integers(0, p - 1))
        recvs = [a for a in rows[d] if isinstance(a, Comm) and a.kind.startswith("RECV")]
        if not recvs:
            continue
        recv = data.draw(st.sampled_from(recvs))
        k = rows[d].index(recv)
        rows[d].remove(recv)
        rows[d].insert(data.draw(st.integers(0, k)), recv)
    mutant = with_rows(s, rows)
    if verify(mutant, comm_semantics="rendezvous").valid:
        assert verify(mutant, comm_semantics="buffered").valid


def test_a_recv_posted_before_a_send_its_peer_needs_runs(tmp_path):
    # rank 0 posts 0RECV_B0 before 0F1 and 0SEND_F1, which 1F1 needs; rank 1 posts 1RECV_F1
    # before 1SEND_B0, which 0B0 needs. With RECVs that block until their SEND it is a cycle of
    # waits; with RECVs only posted (irecv) and the wait at the consuming op, as PyTorch's runtime
    # runs it, every op's input arrives: 0F1, 0SEND_F1, 1F1 ... and 0B0 after 1SEND_B0
    from ppverify.io.torch_csv import load_csv

    f = tmp_path / "grp.csv"
    f.write_text(
        "0UNSHARD,0F0,0SEND_F0,0RECV_B0,0F1,0SEND_F1,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
        "1UNSHARD,1RECV_F0,1F0,1B0,1RECV_F1,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n"
    )
    s = load_csv(f)
    assert verify(s, comm_semantics="rendezvous").valid
    assert verify(s).valid
