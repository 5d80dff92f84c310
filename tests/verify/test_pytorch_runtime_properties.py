"""PyTorch's runtime rules in the verdict of ``verify`` and ``import``: a PyTorch CSV whose last
stage runs its forwards out of microbatch order (the step fails) or whose messages between two
ranks cross (wrong gradients, no error) is INVALID, named by ``pytorch-loss-order`` or
``pytorch-message-order``; a crossed file's SEND/RECV are matched in posting order, as the runtime
matches them, so no deadlock is reported that the runtime does not have. Families, ppverify JSON
and text tables keep their verdict and get a note instead. Expected values are derived by hand in
the comments (hypothesis generates the schedules; the oracles read the generated rows)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.ops import format_action
from ppverify.io.torch_csv import parse_rows
from ppverify.io.torch_lowering import lower_like_pytorch
from ppverify.schedules import build, families
from ppverify.verify import verify

# rank 1 holds stage 1, the last, and runs F1 before F0: every dependency holds
LATE = "0F0,0F1,0B0,0B1\n1F1,1F0,1B0,1B1\n"
# GPipe p=2 m=2 lowered as PyTorch lowers it (the well-ordered file)...
ORDERED = (
    "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
    "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1F1,1B0,1B1,1SEND_B0,1SEND_B1,1REDUCE_GRAD,1RESHARD\n"
)
# ...and rank 1 posting its gradient for microbatch 1 first: rank 0's first RECV (0RECV_B0) gets it
CROSSED = ORDERED.replace("1SEND_B0,1SEND_B1", "1SEND_B1,1SEND_B0")
NOTE = "  note  PyTorch's runtime could not run this as is: rank 1 runs the last stage's forwards in the order 1F1, 1F0"
SEMANTICS = (
    ["--comm-semantics", "buffered"],
    ["--comm-semantics", "rendezvous"],
    ["--comm-semantics", "rendezvous", "--ungrouped"],
)


def _file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _json(argv, capsys) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _rows(text: str) -> list[list[str]]:
    return [line.split(",") for line in text.split()]


# ---------------------------------------------------------------- the loss order


def test_verify_refuses_the_last_stage_out_of_order_in_text_and_json(tmp_path, capsys):
    f = _file(tmp_path, "late.csv", LATE)
    assert main(["verify", f]) == 1
    out = capsys.readouterr().out
    assert out.startswith("INVALID: late.csv p=2 m=2 format=compute_only placement=linear\n")
    line = next(x for x in out.splitlines() if "VIOLATED" in x)
    assert line.startswith(
        "  VIOLATED pytorch-loss-order: rank 1 runs the last stage's forwards in the order 1F1, 1F0: "
    )
    assert line.endswith("core: 1F1 1F0]")  # 1F1 runs where 1F0 belongs
    assert "note" not in out  # a PyTorch file: a violation, not a note
    code, doc = _json(["verify", f], capsys)
    assert code == 1 and doc["verdict"] == "INVALID" and doc["pytorch_runtime_note"] is None
    assert [(v["property"], v["core"]) for v in doc["violations"]] == [("pytorch-loss-order", ["1F1", "1F0"])]
    # everything else holds: the other properties are proved as before
    assert [p["property"] for p in doc["proved"]] == [
        "completeness",
        "placement",
        "dependencies",
        "exclusivity",
        "deadlock",
    ]


def test_import_says_pytorch_accepts_the_file_and_then_fails(tmp_path, capsys):
    f = _file(tmp_path, "late.csv", LATE)
    assert main(["import", f]) == 1
    out = capsys.readouterr().out
    assert (
        "runtime       PyTorch's runtime accepts the file, then fails the step "
        "(pytorch-loss-order: rank 1 runs the last stage's forwards in the order 1F1, 1F0)\n"
    ) in out
    assert "  - pytorch-loss-order: rank 1 runs" in out and out.endswith("verdict       INVALID\n")
    code, doc = _json(["import", f], capsys)
    assert code == 1 and doc["valid"] is False
    assert [p["property"] for p in doc["pytorch_runtime"]] == ["pytorch-loss-order"]
    assert doc["verifier"]["violations"][0].startswith("pytorch-loss-order: rank 1 runs")


def test_backwards_out_of_order_and_a_single_stage_are_fine(tmp_path, capsys):
    # losses are read back by microbatch number at each backward, so B1 before B0 is fine; one
    # stage receives nothing and back-propagates each loss once (torch_rules' module doc)
    for name, text in (("b.csv", "0F0,0F1,0B0,0B1\n1F0,1F1,1B1,1B0\n"), ("one.csv", "0F1,0F0,0B0,0B1\n")):
        code, doc = _json(["verify", _file(tmp_path, name, text)], capsys)
        assert code == 0 and doc["verdict"] == "VALID", name
        # proved for both: from two stages on, the forwards in microbatch order; at one stage, each
        # backward of microbatch k after k+1 forwards (0B0 and 0B1 run after two; test_runtime_rules_edges.py)
        assert "pytorch-loss-order" in [p["property"] for p in doc["proved"]], name


# ---------------------------------------------------------------- the message order


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_crossed_messages_are_invalid_and_no_deadlock(tmp_path, capsys, semantics):
    # the crossed file posts rank 1's two messages to rank 0 at the same places as the ordered
    # one; matched in posting order (the runtime's untagged ops), the k-th meets the k-th as in
    # the ordered file, which completes under each semantics: a wrong delivery, not a deadlock
    # (matched by name, rendezvous --ungrouped read it as one: 1SEND_B1 waiting for 0RECV_B1,
    # posted after 0B0, which waits for 1SEND_B0, posted after 1SEND_B1)
    ok = _file(tmp_path, "ordered.csv", ORDERED)
    code, doc = _json(["verify", ok, *semantics], capsys)
    assert code == 0 and "pytorch-message-order" in [p["property"] for p in doc["proved"]]
    f = _file(tmp_path, "crossed.csv", CROSSED)
    code, doc = _json(["verify", f, *semantics], capsys)
    assert code == 1
    assert [(v["property"], v["core"]) for v in doc["violations"]] == [
        ("pytorch-message-order", ["1SEND_B1", "0RECV_B0"])
    ]
    assert doc["violations"][0]["message"].startswith(
        "rank 1's first message to rank 0 is 1SEND_B1, which rank 0 receives as 0RECV_B0: "
    )
    deadlock = next(p["statement"] for p in doc["proved"] if p["property"] == "deadlock")
    assert "matched in posting order, as PyTorch's runtime matches them" in deadlock
    assert main(["verify", f, *semantics]) == 1
    assert "  VIOLATED pytorch-message-order: rank 1's first message to rank 0 is 1SEND_B1" in capsys.readouterr().out


def test_import_says_the_runtime_computes_wrong_gradients(tmp_path, capsys):
    f = _file(tmp_path, "crossed.csv", CROSSED)
    assert main(["import", f]) == 1
    out = capsys.readouterr().out
    assert (
        "runtime       PyTorch's runtime accepts the file, then computes wrong gradients (pytorch-message-order: "
        "rank 1's first message to rank 0 is 1SEND_B1, which rank 0 receives as 0RECV_B0)\n"
    ) in out
    assert out.endswith("verdict       INVALID\n")


# rank 1 sends B1 (before 1RECV_F2) and B0 (after 1F2); rank 0 receives B0 first and needs it
# before it sends F2. By name, 0RECV_B0 waits for 1SEND_B0, behind 1RECV_F2, which waits for
# 0SEND_F2, behind 0RECV_B0: a cycle. As posted, 0RECV_B0 meets rank 1's first SEND (1SEND_B1,
# before 1RECV_F2): the step completes, with microbatch 1's gradient as microbatch 0's.
TAG_ONLY_DEADLOCK = (
    "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0F2,0SEND_F2,0RECV_B1,0B1,0RECV_B2,0B2,0REDUCE_GRAD\n"
    "1RECV_F0,1F0,1RECV_F1,1F1,1B1,1B0,1SEND_B1,1RECV_F2,1F2,1SEND_B0,1B2,1SEND_B2,1REDUCE_GRAD\n"
)
# rank 1 sends B1 first, posted after 1RECV_F1; rank 0 posts 0SEND_F1 only after 0RECV_B0 and
# 0B0: as posted, 0RECV_B0 meets 1SEND_B1, behind 1RECV_F1, which waits for 0SEND_F1, behind
# 0RECV_B0: a deadlock in the runtime too
REAL_DEADLOCK = (
    "0F0,0SEND_F0,0RECV_B0,0B0,0F1,0SEND_F1,0RECV_B1,0B1,0REDUCE_GRAD\n"
    "1RECV_F0,1F0,1RECV_F1,1F1,1B1,1SEND_B1,1B0,1SEND_B0,1REDUCE_GRAD\n"
)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_a_deadlock_only_the_tag_model_has_is_not_reported(tmp_path, capsys, semantics):
    f = _file(tmp_path, "t.csv", TAG_ONLY_DEADLOCK)
    code, doc = _json(["verify", f, *semantics], capsys)
    assert code == 1 and [v["property"] for v in doc["violations"]] == ["pytorch-message-order"]
    # the library's tag model (no pytorch=True), which ppverify JSON files keep, has the cycle
    s = parse_rows(_rows(TAG_ONLY_DEADLOCK))
    assert [v.prop for v in verify(s, comm_semantics=semantics[1]).violations] == ["deadlock"]


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_a_real_deadlock_is_reported_after_the_crossing(tmp_path, capsys, semantics):
    f = _file(tmp_path, "d.csv", REAL_DEADLOCK)
    code, doc = _json(["verify", f, *semantics], capsys)
    assert code == 1 and [v["property"] for v in doc["violations"]] == ["pytorch-message-order", "deadlock"]
    core = " ".join(doc["violations"][1]["core"])  # grouped, a core item is a group: 0SEND_F0+0RECV_B0
    # the pair that meets as posted: 1SEND_B1 and 0RECV_B0, whose data 0B0 waits for (buffered,
    # the op that consumes a RECV's data waits, as in PyTorch's runtime; rendezvous, the RECV)
    assert "1SEND_B1" in core and ("0RECV_B0" in core or "0B0" in core.split())


def test_a_missing_send_is_reported_by_name_as_before(tmp_path, capsys):
    # 1SEND_B0 dropped: rank 1's messages to rank 0 (B1) and rank 0's RECVs (B0, B1) differ, so
    # the fault is the missing SEND (0RECV_B0 waits forever, by name), not an order
    text = ORDERED.replace("1SEND_B0,", "")
    code, doc = _json(["verify", _file(tmp_path, "m.csv", text)], capsys)
    assert code == 1
    assert [v["message"] for v in doc["violations"]] == ["rank 0 waits forever in 0RECV_B0: its SEND is never posted"]
    unchecked = {u["property"]: u["reason"] for u in doc["unchecked"]}
    assert unchecked["pytorch-message-order"].startswith("rank 1's SENDs to rank 0 and rank 0's RECVs from it name")


# ---------------------------------------------------------------- not PyTorch files: a note


def test_json_and_tables_keep_their_verdict_and_get_a_note(tmp_path, capsys):
    f = _file(tmp_path, "late.csv", LATE)
    j = str(tmp_path / "late.json")
    assert main(["export", f, "-o", j]) == 0  # JSON keeps any order (export refuses only CSVs)
    capsys.readouterr()
    # the same programs as a paper-layout table (ticks by hand: 1F1 needs 0F1, done at tick 1)
    table = _file(tmp_path, "late.txt", "tick 0 1 2 3 4 5\ndev 0 0F0 0F1 . . 0B0 0B1\ndev 1 . . 1F1 1F0 1B0 1B1\n")
    for path in (j, table):
        assert main(["verify", path]) == 0
        out = capsys.readouterr().out
        notes = [x for x in out.splitlines() if x.startswith("  note  ")]
        assert out.startswith("VALID: ") and len(notes) == 1 and notes[0].startswith(NOTE)
        assert notes[0].endswith("; `ppverify export` refuses it")
        code, doc = _json(["verify", path], capsys)
        assert code == 0 and doc["pytorch_runtime_note"] == notes[0][len("  note  ") :]
        assert "pytorch-loss-order" not in [p["property"] for p in doc["proved"]]
    assert main(["import", j]) == 0  # import of a JSON file: PyTorch never runs it as it is
    assert "runtime " not in capsys.readouterr().out


@pytest.mark.parametrize("fam", [f.name for f in families()])
def test_no_registered_family_gets_the_note(fam):
    built = 0
    for p, m in ((2, 4), (4, 8)):
        try:
            s = build(fam, p=p, m=m)
        except Exception:
            continue  # a size the family does not take
        built += 1
        r = verify(s)
        assert r.valid and r.runtime_note is None, (fam, p, m)
        assert "note" not in r.to_text() and r.to_dict()["pytorch_runtime_note"] is None
    assert built, f"{fam} built at no size"


# ---------------------------------------------------------------- generated schedules


def _placements(p: int, v: int) -> list[int]:
    """Stage -> rank: linear (v = 1) or loop (v = 2: stage s on rank s mod p)."""
    return [s % p for s in range(p * v)]


@st.composite
def valid_rows(draw, in_order: bool = False, least_m: int = 1) -> tuple[list[list[str]], int, int]:
    """A valid one-pipe compute_only file: ops run one at a time, each once ready (F(s, mb) after
    F(s-1, mb); B(s, mb) after F(s, mb) and B(s+1, mb)), so every dependency holds and nothing
    waits forever. ``in_order``: the last stage takes its forwards in microbatch order."""
    p, v, m = draw(st.integers(2, 3)), draw(st.integers(1, 2)), draw(st.integers(least_m, 4))
    stages = p * v
    rank = _placements(p, v)
    todo = {(k, s, mb) for k in "FB" for s in range(stages) for mb in range(m)}
    done: set[tuple[str, int, int]] = set()
    rows: list[list[str]] = [[] for _ in range(p)]

    def ready(k: str, s: int, mb: int) -> bool:
        if k == "F":
            first_free = not in_order or s < stages - 1 or all(("F", s, j) in done for j in range(mb))
            return (s == 0 or ("F", s - 1, mb) in done) and first_free
        return ("F", s, mb) in done and (s == stages - 1 or ("B", s + 1, mb) in done)

    while todo:
        k, s, mb = draw(st.sampled_from(sorted(op for op in todo if ready(*op))))
        todo.remove((k, s, mb))
        done.add((k, s, mb))
        rows[rank[s]].append(f"{s}{k}{mb}")
    return rows, stages, m


def _last_stage_mbs(rows: list[list[str]], stages: int) -> list[int]:
    """The microbatches of the last stage's forwards, in the order its row lists them."""
    return [int(c[len(f"{stages - 1}F") :]) for row in rows for c in row if re.fullmatch(rf"{stages - 1}F\d+", c)]


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(valid_rows())
def test_generated_files_are_invalid_exactly_when_the_last_stage_is_out_of_order(gen):
    rows, stages, _ = gen
    mbs = _last_stage_mbs(rows, stages)
    r = verify(parse_rows(rows), pytorch=True)
    assert r.valid == (mbs == sorted(mbs))
    assert [v.prop for v in r.violations] == ([] if mbs == sorted(mbs) else ["pytorch-loss-order"])


@SETTINGS
@given(valid_rows(in_order=True, least_m=2), st.data())
def test_permuting_the_last_stages_forwards_is_caught(gen, data):
    rows, stages, m = gen
    last = stages - 1
    rank = next(r for r, row in enumerate(rows) if f"{last}F0" in row)
    slots = [i for i, c in enumerate(rows[rank]) if re.fullmatch(rf"{last}F\d+", c)]
    order = data.draw(st.permutations(range(m)).filter(lambda o: list(o) != sorted(o)))
    for i, mb in zip(slots, order):
        rows[rank][i] = f"{last}F{mb}"
    r = verify(parse_rows(rows), pytorch=True)
    assert not r.valid
    v = next(v for v in r.violations if v.prop == "pytorch-loss-order")
    k = next(i for i, mb in enumerate(order) if mb != i)  # the first slot holding another microbatch
    assert v.ops == (f"{last}F{order[k]}", f"{last}F{k}")  # it, and the forward that belongs there
    assert f"rank {rank} runs the last stage's forwards in the order" in v.message


@SETTINGS
@given(valid_rows(in_order=True, least_m=2), st.data(), st.sampled_from(["SEND", "RECV"]))
def test_crossing_two_messages_is_caught(gen, data, which):
    rows = gen[0]
    lowered = lower_like_pytorch(parse_rows(rows))
    text = [[format_action(a) for a in prog] for prog in lowered.programs]
    rank = list(lowered.placement.maps[0])

    def peer(cell: str) -> int:
        # the other rank of a SEND/RECV: stage s's SEND_F goes to s+1, SEND_B to s-1; RECV_F
        # comes from s-1, RECV_B from s+1
        s, kind = re.fullmatch(r"(\d+)(?:SEND|RECV)_(F|B)\d+", cell).groups()
        return rank[int(s) + 1] if (kind == "F") == ("SEND" in cell) else rank[int(s) - 1]

    pairs = [
        (r, i, j)
        for r, row in enumerate(text)
        for i, a in enumerate(row)
        for j, b in enumerate(row)
        if i < j and which in a and which in b and peer(a) == peer(b)
    ]
    assert pairs  # m >= 2: rank 0 sends rank 1 two activations at least
    r, i, j = data.draw(st.sampled_from(pairs))
    text[r][i], text[r][j] = text[r][j], text[r][i]
    report = verify(parse_rows(text), pytorch=True)
    assert not report.valid and report.violations[0].prop == "pytorch-message-order"
    # a message's SEND still after the op it sends and its RECV still before the op it feeds:
    # the swap moved names, not the places where rank r posts, so what waits for what is as in
    # the lowered file, which completes; the crossing is the only fault
    moved = {text[r][i], text[r][j]}
    producers_kept = all(_in_place(text[r], cell) for cell in moved)
    if producers_kept:
        assert [v.prop for v in report.violations] == ["pytorch-message-order"]


def _in_place(row: list[str], cell: str) -> bool:
    """Whether a SEND follows the op it sends, or a RECV precedes the op that consumes it, in ``row``."""
    s, d, mb = re.fullmatch(r"(\d+)(?:SEND|RECV)_(F|B)(\d+)", cell).groups()
    at = row.index(cell)
    if "SEND" in cell:
        return f"{s}{d}{mb}" in row[:at]
    return f"{s}{d}{mb}" in row[at:]
