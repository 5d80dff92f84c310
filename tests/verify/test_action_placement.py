"""SEND/RECV, UNSHARD/RESHARD and REDUCE_GRAD on the wrong rank, duplicated or dropped: ``verify``
and ``import`` both say INVALID, and ``verify`` names the misplaced action.

The files are PyTorch ``compute_comms`` exports (PyTorch's lowering: SEND/RECV, UNSHARD/RESHARD,
REDUCE_GRAD) and ppverify JSON files with explicit SEND/RECV, of families on every placement
(linear, loop, v with overlapped F&B cells; bidirectional and wave as JSON). The expected
verdicts follow from the rules (PyTorch's runtime maps a stage to the one rank whose list names
it), not from ppverify's output.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.core.ops import Comm, Marker, Op, Overlap
from ppverify.io.json_format import dumps, loads_document
from ppverify.io.torch_csv import parse_rows, to_rows
from ppverify.schedules import build
from ppverify.verify import verify
from ppverify.verify.comm_model import insert_comms
from ppverify.verify.import_audit import audit
from tests.conftest import PPVERIFY

#: one family per placement: linear (plain and split backward), loop, v (plain and overlapped)
FAMILIES = (("1f1b", 3, 2), ("zb-h1", 3, 3), ("interleaved-1f1b", 2, 4), ("zbv", 2, 4), ("dualpipev", 2, 4))


def csv_file(family: str, p: int, m: int):
    """The family's ``compute_comms`` export, read back as ``import`` and ``verify`` read it."""
    return parse_rows(to_rows(build(family, p=p, m=m), "compute_comms"), f"{family}.csv")


def json_file(family: str, p: int, m: int):
    """The family with explicit SEND/RECV, through a ppverify JSON file."""
    return loads_document(dumps(insert_comms(build(family, p=p, m=m))), f"{family}.json").schedule


#: placements PyTorch's one-pipe CSV cannot hold: bidirectional (two pipes: a SEND/RECV belongs
#: to its microbatch's pipe) and wave, as JSON files with explicit SEND/RECV
JSON_ONLY = (("chimera", 4, 4), ("chimera-asym", 4, 4), ("hanayo", 2, 2))
FILES = {(kind, f): (csv_file if kind == "csv" else json_file)(*f) for kind in ("csv", "json") for f in FAMILIES}
FILES.update({("json", f): json_file(*f) for f in JSON_ONLY})
#: the files and the semantics they are valid under: PyTorch's lowering posts a rank's receives
#: early, so its exports hold under rendezvous too; SEND/RECV placed right after the producer and
#: right before the consumer can deadlock under rendezvous (interleaved-1f1b does), so the JSON
#: files are checked under buffered semantics
CASES = [(key, sem) for key in FILES for sem in (("buffered", "rendezvous") if key[0] == "csv" else ("buffered",))]


def verdicts(schedule, semantics: str = "buffered", certificates: bool = True):
    """``(verify's report, import's verdict)``; ``certificates`` off: Z3 decides every property."""
    report = verify(schedule, comm_semantics=semantics, certificates=certificates)
    return report, audit(schedule, comm_semantics=semantics)[0]["valid"]


def other_actions(schedule) -> list[tuple[int, int]]:
    """Positions ``(rank, index)`` of every SEND/RECV and marker."""
    return [(r, k) for r, prog in enumerate(schedule.programs) for k, a in enumerate(prog) if type(a) in (Comm, Marker)]


def holders(schedule, a) -> set[int]:
    """The ranks allowed to hold action ``a`` (its stage's rank for its microbatch's pipe)."""
    maps = schedule.placement.maps
    if type(a) is Comm:
        return {maps[schedule.pipe_of_mb[a.mb]][a.stage]}
    return {mp[a.stage] for mp in maps}


def draw_action(data, case):
    """The file and semantics of ``case`` and one of its SEND/RECV or markers, drawn:
    ``(schedule, semantics, rank, index, action)``."""
    key, semantics = case
    s = FILES[key]
    r, k = data.draw(st.sampled_from(other_actions(s)), label="action")
    return s, semantics, r, k, s.programs[r][k]


@pytest.mark.parametrize(("key", "semantics"), CASES, ids=[f"{k[0]}-{k[1][0]}-{sem}" for k, sem in CASES])
def test_every_unmodified_export_is_valid(key, semantics):
    report, imported = verdicts(FILES[key], semantics)
    assert report.valid and imported, [v.to_text() for v in report.violations]
    assert dict(report.proved)["placement"].startswith("every op, SEND/RECV and marker on its stage's device")


def test_the_issue_file_recv_on_rank_0():
    # issue 22: 1RECV_F0 written in rank 0's list, none on rank 1; rank 0 does not hold stage 1
    text = (
        "0UNSHARD,0F0,0SEND_F0,1RECV_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
        "1UNSHARD,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD"
    )
    rows = [line.split(",") for line in text.splitlines()]
    for semantics in ("buffered", "rendezvous"):
        report, imported = verdicts(parse_rows(rows), semantics)
        assert not report.valid and not imported
        # one fault, reported once: no second violation for the RECV missing on rank 1
        assert [(v.prop, v.ops) for v in report.violations] == [("placement", ("1RECV_F0",))]
        assert "rank 0" in report.violations[0].message and "rank 1" in report.violations[0].message


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES))
def test_an_action_moved_to_a_rank_not_holding_its_stage_is_a_placement_violation(data, case):
    s, semantics, r, k, a = draw_action(data, case)
    ranks = [d for d in range(s.p) if d not in holders(s, a)]
    if not ranks:  # a marker of a stage every rank holds (none of these files has one)
        return
    r2 = data.draw(st.sampled_from(ranks), label="to rank")
    progs = [list(prog) for prog in s.programs]
    del progs[r][k]
    dup = data.draw(st.booleans(), label="copy (keep the original)")
    if dup:
        progs[r].insert(k, a)
    progs[r2].insert(data.draw(st.integers(0, len(progs[r2])), label="position"), a)
    certificates = data.draw(st.booleans(), label="certificates")
    report, imported = verdicts(s.with_programs(tuple(map(tuple, progs))), semantics, certificates)
    assert not report.valid and not imported
    assert ("placement", (str(a),)) in [(v.prop, v.ops) for v in report.violations]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(CASES))
def test_an_action_dropped_or_duplicated_on_its_rank_is_invalid(data, case):
    # each SEND matched by exactly one RECV of the same stage pair, microbatch and direction; one
    # REDUCE_GRAD per stage; UNSHARD/RESHARD alternate and the step ends resharded
    s, semantics, r, k, a = draw_action(data, case)
    progs = [list(prog) for prog in s.programs]
    if data.draw(st.booleans(), label="drop"):
        del progs[r][k]
    else:
        progs[r].insert(data.draw(st.integers(0, len(progs[r])), label="position of the copy"), a)
    report, imported = verdicts(s.with_programs(tuple(map(tuple, progs))), semantics)
    assert not report.valid and not imported


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), key=st.sampled_from([k for k in FILES if k[0] == "json"]))
def test_a_send_or_recv_renamed_to_another_transfer_is_invalid(data, key):
    # a SEND/RECV whose stage pair, microbatch or direction matches no transfer (or another one)
    s = FILES[key]
    comms = [(r, k) for r, k in other_actions(s) if type(s.programs[r][k]) is Comm]
    r, k = data.draw(st.sampled_from(comms), label="action")
    a = s.programs[r][k]
    kind = data.draw(st.sampled_from(["SEND_F", "RECV_F", "SEND_B", "RECV_B"]), label="kind")
    mb = data.draw(st.integers(0, s.m - 1), label="mb")
    new = Comm(kind, a.stage, mb)
    if new == a:
        return
    progs = [list(prog) for prog in s.programs]
    progs[r][k] = new
    report, imported = verdicts(s.with_programs(tuple(map(tuple, progs))))
    assert not report.valid and not imported


def test_a_stage_left_unsharded_at_the_end_of_the_step_is_invalid():
    # PyTorch's runtime keeps its set of unsharded stages across steps: the next step's UNSHARD of
    # a stage left unsharded fails ("Unsharding the same stage twice")
    s = FILES[("csv", ("1f1b", 3, 2))]
    last = [max(k for k, a in enumerate(prog) if a == Marker("RESHARD", r)) for r, prog in enumerate(s.programs)]
    progs = tuple(prog[: last[r]] + prog[last[r] + 1 :] if r == 2 else prog for r, prog in enumerate(s.programs))
    report, imported = verdicts(s.with_programs(progs))
    assert not imported
    assert [(v.prop, v.ops) for v in report.violations] == [("sharding", ("2UNSHARD",))]
    assert "ends the step with stage 2 unsharded" in report.violations[0].message


def test_overlapped_cells_are_not_other_actions():
    # an overlapped F&B cell is two compute ops; only SEND/RECV and markers are moved above
    s = FILES[("csv", ("dualpipev", 2, 4))]
    kinds = {type(a) for prog in s.programs for a in prog}
    assert {Op, Overlap, Comm, Marker} <= kinds


def test_cli_verify_and_import_agree_on_moved_actions(tmp_path):
    # the files as written on disk: a CSV (RECV moved), a JSON (SEND moved), a DualPipeV CSV
    # (REDUCE_GRAD moved), each under both semantics
    cases = []
    rows = to_rows(build("1f1b", p=3, m=2), "compute_comms")
    rows[0].insert(1, rows[1].pop(rows[1].index("1RECV_F0")))
    cases.append(("recv.csv", "\n".join(",".join(r) for r in rows) + "\n", "1RECV_F0"))
    doc = json.loads(dumps(insert_comms(build("zbv", p=2, m=4))))
    doc["programs"][0].append(doc["programs"][1].pop(doc["programs"][1].index("2SEND_F0")))
    cases.append(("send.json", json.dumps(doc), "2SEND_F0"))
    rows = to_rows(build("dualpipev", p=2, m=4), "compute_comms")
    rows[1].append(rows[0].pop(rows[0].index("0REDUCE_GRAD")))
    cases.append(("dualpipev.csv", "\n".join(",".join(r) for r in rows) + "\n", "0REDUCE_GRAD"))
    for name, text, action in cases:
        f = tmp_path / name
        f.write_text(text)
        for semantics in ("buffered", "rendezvous"):
            flags = ["--comm-semantics", semantics, "--json"]
            v = subprocess.run([PPVERIFY, "verify", f, *flags], capture_output=True, text=True)
            i = subprocess.run([PPVERIFY, "import", f, *flags], capture_output=True, text=True)
            assert (v.returncode, i.returncode) == (1, 1), (name, v.stderr, i.stderr)
            found = [(x["property"], x["core"]) for x in json.loads(v.stdout)["violations"]]
            assert ("placement", [action]) in found
            assert json.loads(i.stdout)["valid"] is False
