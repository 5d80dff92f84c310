"""A signal ends ``verify`` and ``prove`` within a short grace, even inside native work that polls
no interrupt (hunt K2a).

Z3's search of a large difference-logic problem polls no interrupt once its simplification is
done: a Ctrl-C that landed there stopped ``verify interleaved-1f1b -p 16 -m 256 --comm-semantics
rendezvous`` only when the query ended (68.6 s after the signal, measured on the 2-core machine
under load). The commands with nothing half-written (``verify``, ``prove``) now start a watchdog
as the signal arrives: after :data:`~ppverify.cli.signals.GRACE_S` (2 s) it prints the usual
line and ends the process with the signal's code. Every other command keeps "a signal stops it
where it polls, with what it has done".

The fast tests hold the main thread in a C call (``sleep`` through ctypes, with the signals
blocked in that thread so that the kernel hands them to another one): native work that polls
nothing, as Z3's late search, without its minutes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ppverify.cli import _commands
from ppverify.cli.signals import GRACE_S

#: the grace (2 s) plus a wide margin for a loaded machine: what "within seconds" is held to, far
#: from the 60 s native call (and the 68.6 s of the slow test below) that it tells apart. 8 s was
#: too close: with three CPU burners and a solver-heavy pytest -n 2 beside it on the 2-core
#: machine, verify ended 7.1 s after the signal
WITHIN_S = 20.0

_STUCK_VERIFY = """
import ctypes, signal, sys
import ppverify.cli.commands.verify as command

def stuck(*args, **kwargs):  # the verifier, held in native work that polls no interrupt
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    print("stuck", flush=True)
    ctypes.CDLL(None).sleep(60)
    raise AssertionError("the signal did not end the command")

command.verify = stuck
sys.argv = ["ppverify", "verify", "1f1b", "-p", "2", "-m", "2"]  # the console script's own process
from ppverify.cli import main
sys.exit(main())
"""


def _signalled(code: str, sig: int, timeout: float = 90) -> tuple[int, float, str, str, float]:
    """Run ``code``; once it prints ``stuck``, send it ``sig``: its exit code, the seconds from
    the signal to its end, its stdout and stderr, and the monotonic time the signal was sent by.

    The clock is read once the signal is sent: read before, it also counted any seconds this test
    process was held up on its way to sending it (a loaded machine), and the signal looked earlier
    than it was."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first == "stuck\n", first + proc.communicate(timeout=timeout)[1]
    proc.send_signal(sig)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, time.monotonic() - sent, first + out, err, sent


@pytest.mark.parametrize(
    "sig,code,words",
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
    ids=["SIGINT", "SIGTERM"],
)
def test_verify_ends_within_the_grace_inside_native_work(sig, code, words):
    # before: the signal waited for the 60 s call to return (the test's timeout, not 130)
    rc, seconds, out, err, _ = _signalled(_STUCK_VERIFY, sig)
    assert rc == code, out + err
    assert GRACE_S == 2.0  # docs/limits.md: "end within a grace of 2 s of the signal"
    assert seconds < WITHIN_S, seconds
    assert err == f"ppverify verify: {words}\n"  # the usual line (docs/limits.md), once
    assert out == "stuck\n"  # no verdict


_BLOCK = """
import argparse, ctypes, signal, sys, time
from ppverify.cli.signals import _sigterm_raises, ends_within

with _sigterm_raises(own_process=True) as signals:
    args = argparse.Namespace(_signals=signals)
    try:
        with ends_within(args, "ppverify x", {grace}):
            signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGINT}})
            print("stuck", flush=True)
            ctypes.CDLL(None).sleep({seconds})
            print("returned", file=sys.stderr, flush=True)  # reached only if the signal came later
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}})  # the handler runs, raises
            time.sleep(60)  # until the signal comes, whenever the test sends it
    except KeyboardInterrupt:
        print("raised", time.monotonic(), file=sys.stderr, flush=True)
        time.sleep({after})  # what is done is kept and printed, however long that takes
        print("kept what was done")
"""


def _raised(err: str) -> float:
    """The monotonic time (one clock for every process of the machine) the signal was raised."""
    (line,) = [line for line in err.splitlines() if line.startswith("raised ")]
    return float(line.split()[1])


def test_without_the_grace_the_command_keeps_control():
    # design, sweep, optimize: no watchdog; the signal is raised once the native call returns
    # (3 s, past the grace a watchdog would have given) and the command ends as it chooses. On a
    # loaded machine the test may send the signal late (CI saw it once: after the call had
    # returned); a try where the signal was not raised more than 2 s after it was sent (where a
    # watchdog would not yet have ended the process) proves nothing and is run again. The time it
    # was sent by is read after sending it (_signalled): read before, a test process held up
    # between the two made a signal sent after the call's return look 2 s early
    for _ in range(5):
        rc, _, out, err, sent = _signalled(_BLOCK.format(grace=None, seconds=3, after=0), signal.SIGINT)
        assert rc == 0 and out == "stuck\nkept what was done\n", out + err
        if _raised(err) - sent > 2.0:
            assert "returned" not in err  # the signal came inside the call, raised as it returned
            return
    pytest.fail("the signal never came more than 2 s before the native call returned, in 5 tries")


def test_a_command_that_ended_in_time_is_not_ended_by_the_watchdog():
    # the call returns at once (0 s), the signal is raised in the block, which is left: the
    # 1 s grace then passes while the program goes on for 2.5 s more, and nothing ends it. A
    # process held up for the whole grace between the signal and leaving the block (a loaded
    # machine) is rightly ended before it prints "raised": such a try proves nothing, run again
    for _ in range(5):
        rc, _, out, err, _ = _signalled(_BLOCK.format(grace=1.0, seconds=0, after=2.5), signal.SIGINT)
        if "raised " in err:  # the block was left before the watchdog acted
            assert (rc, out) == (0, "stuck\nkept what was done\n")
            assert "ppverify x" not in err, err  # no "interrupted" line from a watchdog
            return
    pytest.fail(f"the block was never left within the 1 s grace, in 5 tries: {rc} {err!r}")


def test_only_verify_and_prove_end_on_a_signal():
    # the others keep "a signal stops it where it polls, with what it has done"
    assert {c.name for c in _commands() if c.ends_on_signal} == {"verify", "prove"}


@pytest.mark.slow
def test_a_ctrl_c_in_z3s_late_search_ends_verify_within_seconds():
    # interleaved-1f1b p=16 m=256 under rendezvous: 65,536 ops; its order check's first query (the
    # whole difference-logic problem) ran from 6 s to 62 s of the process on the 2-core machine
    # under load, and a Ctrl-C at 20 s waited for it: exit 130 only 68.6 s after the signal (at
    # 12 s it still stopped in 1.8 s: the simplification, which polls). With the grace: ~2 s
    argv = ["interleaved-1f1b", "-p", "16", "-m", "256", "--comm-semantics", "rendezvous"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppverify", "verify", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(20)
    assert proc.poll() is None  # still deciding (the whole run takes about a minute or more)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()  # after the signal is sent, as in _signalled
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, out + err
    assert time.monotonic() - sent < WITHIN_S
    assert out == "" and err.strip().splitlines()[-1] == "ppverify verify: interrupted"
