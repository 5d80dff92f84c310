"""``verify --comm-semantics rendezvous --makespan-le T``: the deadlock check runs under rendezvous,
but the timing claim is timed by the async engine, whose sends are buffered (never block). A
rendezvous step can take longer (a blocking SEND waits for its RECV), so a VALID read as covering
both was wrong; the timing statement now says which semantics it was timed under whenever the one
given is not the engine's, and is unchanged otherwise (docs/verification.md)."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main

# 1F1B p=2 m=2, F=1, B=2, no delay, by hand (as in test_timing_model_statement.py): device 0 runs
# F0 F1 B0 B1, device 1 F0 B0 F1 B1; 0F0 0-1, 0F1 1-2, 1F0 1-2, 1B0 2-4, 1F1 4-5, 1B1 5-7, 0B0 4-6,
# 0B1 7-9: the async engine's step is 9.
ARGS = ["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2"]
ENGINE = "async engine (buffered sends; --comm-semantics rendezvous applies to the deadlock check only)"
# the line docs/verification.md shows for a claim without the option
PLAIN = (
    "proved  timing: makespan <= 9 units under costs F=1,B=2,I=1,W=1 with no comm delay, async engine "
    "(witness finishes at 9 units)"
)


def _lines(argv, capsys) -> tuple[int, list[str]]:
    rc = main(argv)
    return rc, [ln.strip() for ln in capsys.readouterr().out.splitlines()]


def test_rendezvous_timing_line_says_the_sends_are_buffered(capsys):
    rc, lines = _lines([*ARGS, "--comm-semantics", "rendezvous", "--makespan-le", "9"], capsys)
    assert rc == 0
    timing = next(ln for ln in lines if "timing:" in ln)
    assert timing == (
        f"proved  timing: makespan <= 9 units under costs F=1,B=2,I=1,W=1 with no comm delay, {ENGINE} "
        "(witness finishes at 9 units)"
    )
    deadlock = next(ln for ln in lines if "deadlock:" in ln)
    assert "under rendezvous point-to-point semantics" in deadlock  # the deadlock check's own


def test_rendezvous_refutation_says_it_too(capsys):
    # 8 < 9: refuted, and the refutation names the model it was decided under
    rc, lines = _lines([*ARGS, "--comm-semantics", "rendezvous", "--makespan-le", "8"], capsys)
    assert rc == 1
    timing = next(ln for ln in lines if "timing:" in ln)
    assert timing.startswith(
        f"VIOLATED timing: no execution of these programs finishes by 8 units under costs F=1,B=2,I=1,W=1 with no "
        f"comm delay, {ENGINE} (Z3: infeasible;"
    ), timing
    assert "the earliest finish is 9 units)" in timing


@pytest.mark.parametrize("given", [[], ["--comm-semantics", "buffered"]], ids=["default", "buffered"])
def test_without_rendezvous_the_line_is_unchanged(capsys, given):
    rc, lines = _lines([*ARGS, *given, "--makespan-le", "9"], capsys)
    assert rc == 0
    assert next(ln for ln in lines if "timing:" in ln) == PLAIN


def test_json_statement_says_it(capsys):
    assert main([*ARGS, "--comm-semantics", "rendezvous", "--makespan-le", "9", "--json"]) == 0
    proved = dict((p["property"], p["statement"]) for p in json.loads(capsys.readouterr().out)["proved"])
    assert f"with no comm delay, {ENGINE} (witness finishes at 9 units)" in proved["timing"], proved
