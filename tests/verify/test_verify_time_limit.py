"""``verify --time-limit`` holds on huge inputs: Z3 gets its SMT-LIB text in pieces, so a pending
alarm stops a long parse between two pieces instead of after the whole problem (issue 15), and
the pieces make exactly the problem the whole text makes."""

from __future__ import annotations

import time

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli import build_parser, main
from ppverify.limits import TimeLimitError, time_limit
from ppverify.verify.smt import idl_solver, load

#: the slack the tests allow past a limit: the machine is shared, and stopping Z3's search
#: (an interrupt), unwinding and freeing a large solver take their time too
SLACK_S = 0.5


def chain_text(n: int) -> str:
    """``t0 < t1 < ... < t(n-1)``, one command a line, as this package writes its problems."""
    decls = "\n".join(f"(declare-const t{i} Int)" for i in range(n))
    return decls + "\n" + "\n".join(f"(assert (>= (- t{i + 1} t{i}) 1))" for i in range(n - 1))


@settings(max_examples=40, deadline=None)
@given(
    weights=st.lists(st.integers(-3, 3), min_size=1, max_size=12),
    chunk=st.integers(1, 120),
    multiline=st.booleans(),
)
def test_pieces_make_the_same_problem(weights, chunk, multiline):
    # a cycle t0 -> t1 -> ... -> t0 with the drawn weights: unsat iff the weights sum > 0
    n = len(weights)
    lines = [f"(declare-const t{i} Int)" for i in range(n)]
    for i, w in enumerate(weights):
        a, b = f"t{(i + 1) % n}", f"t{i}"
        atom = f"(>= (- {a} {b}) {w if w >= 0 else f'(- {-w})'})"
        lines.append(f"(assert\n  {atom})" if multiline else f"(assert {atom})")  # a command over two lines
    text = "\n".join(lines)
    whole, pieces = idl_solver(), idl_solver()
    whole.from_string(text)
    load(pieces, text, chunk)
    assert [a.sexpr() for a in pieces.assertions()] == [a.sexpr() for a in whole.assertions()]
    assert pieces.check() == (z3.unsat if sum(weights) > 0 else z3.sat)


def test_a_long_parse_stops_at_the_limit():
    # 300,000 constraints: about 14 MB of text, seconds for Z3's parser in one piece
    text = chain_text(300_000)
    limit = 0.3
    t = time.perf_counter()
    try:
        with time_limit(limit):
            load(idl_solver(), text)
    except TimeLimitError:
        pass
    else:  # a machine fast enough to parse it all in 0.3 s proves nothing, but is no failure
        return
    assert time.perf_counter() - t < limit + SLACK_S


def test_verify_time_limit_holds_on_a_large_schedule(capsys):
    # 1F1B p=32 m=512: 32,768 ops; the timing claim is one Z3 problem of about 3.5 MB of text
    # and 80,000 constraints (parse and search take seconds), so a 1 s limit ends in the middle
    limit = 1.0
    argv = ["verify", "1f1b", "-p", "32", "-m", "512", "--makespan-le", "100000", "--time-limit", f"{limit:g}"]
    args = build_parser().parse_args(argv)  # the limit covers the command, from loading on
    t = time.perf_counter()
    with pytest.raises(TimeLimitError, match="no answer within 1 s"):
        args._run(args)
    assert time.perf_counter() - t < limit + SLACK_S
    assert main(argv) == 2  # no verdict: neither VALID (0) nor INVALID (1)
    assert "no answer within 1 s" in capsys.readouterr().err


def test_a_hard_stop_ends_native_work_that_ignores_signals():
    # native work that lets other threads run (as Z3's does) but ignores the alarm and the
    # interrupt (as Z3's simplifier does): simulated by ignoring SIGALRM around a sleep; the hard
    # stop still ends the process at HARD_STOP_FACTOR times the limit, with the one-line time-out
    import subprocess
    import sys
    import time

    from ppverify.limits import HARD_STOP_FACTOR

    code = (
        "import signal, time\n"
        "from ppverify.limits import time_limit\n"
        "with time_limit(0.5, hard_stop='ppverify verify'):\n"
        "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "    time.sleep(30)\n"
    )
    t0 = time.monotonic()
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - t0
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "ppverify verify: error: --time-limit 0.5: no answer within 0.5 s (stopped)"
    ]
    # interpreter start-up (well under 2 s even on a loaded machine) plus 0.5 s x the factor
    assert elapsed < 0.5 * HARD_STOP_FACTOR + 2.0


def test_without_a_hard_stop_a_finished_block_is_not_stopped():
    from ppverify.limits import time_limit

    with time_limit(0.2, hard_stop="ppverify verify"):
        total = sum(range(1000))
    import time

    time.sleep(0.3)  # past 0.2 x the factor: the stopper was cancelled with the block
    assert total == 499500


def test_the_command_stops_within_its_limit(ppverify_cli):
    # the console script (its own process, so the hard stop applies): one line, exit 2
    import time

    t0 = time.monotonic()
    run = ppverify_cli("verify", "1f1b", "-p", "32", "-m", "512", "--makespan-le", "100000", "--time-limit", "1")
    elapsed = time.monotonic() - t0
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "--time-limit 1" in run.stderr
    assert elapsed < 1.08 + 4.0  # the limit's 8 % plus interpreter start-up on a loaded machine
