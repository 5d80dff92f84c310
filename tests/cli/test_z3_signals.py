"""A signal during a Z3 check stops the command; it is never read as Z3's answer (hunt B, defect 2).

With Z3's ``ctrl_c`` on (its default) each check installed Z3's own SIGINT handler: a Ctrl-C ended
the check with ``unknown`` and Python's handler never ran, so ``verify`` went on (an ``unknown``
read as "not orderable", or as "no more cores") and ``prove`` printed "unknown" with exit 1. Every
solver ppverify makes now leaves SIGINT to ppverify's handler, whose watcher interrupts Z3, and an
``unknown`` that no time limit caused is raised, never returned. Each subprocess test signals its
own process 0.5 s into a check that would run for minutes (Fermat's cubes: no positive x, y, z
with x^3 + y^3 = z^3, which Z3's nonlinear search never settles) and reads what came out."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
import z3

from ppverify.core.limits import LimitError
from ppverify.verify.smt import decide, plain_solver
from tests.verify.test_z3_unknown_rule import _interrupt_until

_SIGNALLED = """
import os, signal, threading, time
import z3
from ppverify.cli.signals import _sigterm_raises
from ppverify.verify.smt import decide, idl_solver, plain_solver
from ppverify.verify.theorem import Theorem, prove

x, y, z = z3.Ints("x y z")
positive = z3.And(x > 0, y > 0, z > 0)
cubes = x * x * x + y * y * y == z * z * z
s = plain_solver()
s.add(positive, cubes)
t = time.monotonic()
try:
    with _sigterm_raises(own_process=True):
        # the timer starts once the handlers are in: started before them, a process held up for
        # half a second met SIGTERM's default action (killed, nothing printed)
        threading.Timer(0.5, os.kill, (os.getpid(), signal.{sig})).start()
        if "{call}" == "decide":
            print("answered", decide(s))
        else:
            print("answered", prove(Theorem("fermat", "no positive cubes", positive, z3.Not(cubes))).status)
except KeyboardInterrupt as exc:
    print(type(exc).__name__, "within 10 s:", time.monotonic() - t < 10)
"""


@pytest.mark.parametrize(
    "call,sig,raised",
    [
        ("decide", "SIGINT", "KeyboardInterrupt"),  # verify's checks (order, memory, timing, structure)
        ("prove", "SIGINT", "KeyboardInterrupt"),  # ppverify prove's theorems
        ("decide", "SIGTERM", "Terminated"),  # the handler names the signal: exit 143, not 130
    ],
)
def test_a_signal_inside_a_z3_check_raises_and_is_no_answer(call, sig, raised):
    code = _SIGNALLED.format(sig=sig, call=call)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    # before: "answered unknown" (Z3 took the Ctrl-C), or the whole timeout waited out
    assert done.stdout.split("\n")[0] == f"{raised} within 10 s: True", done.stdout + done.stderr
    assert done.stderr == ""


def test_a_ctrl_c_inside_a_check_of_the_cli_is_exit_130(tmp_path):
    # ppverify's own entry point: the one line and 130, as docs/limits.md says
    code = """
import os, signal, sys, threading
import z3
import ppverify.verify.smt as smt
from ppverify.cli import main

def hard_check(solver, *assumptions):  # the order check's first decision, made one that runs for minutes
    x, y, z = z3.Ints("x y z")
    s = smt.plain_solver()
    s.add(x > 0, y > 0, z > 0, x * x * x + y * y * y == z * z * z)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    return real(s)

real = smt.decide
import ppverify.verify.order as order
order.decide = hard_check
sys.exit(main(["verify", "interleaved-1f1b", "-p", "4", "-m", "8", "--comm-semantics", "rendezvous"]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stdout == ""  # no verdict
    assert done.stderr.strip().splitlines()[-1] == "ppverify verify: interrupted"


def _fermat() -> z3.Solver:
    x, y, z = z3.Ints("x y z")
    s = plain_solver()
    s.add(x > 0, y > 0, z > 0, x * x * x + y * y * y == z * z * z)
    return s


def test_an_interrupted_check_raises_without_a_signal_handler():
    # Z3 interrupted (by ppverify's watcher, here by a thread) and no time limit in force: the
    # "unknown" is no answer, whoever asked. The thread interrupts until the check has returned:
    # one interrupt sent before the check began is lost, and Fermat's check then runs for good
    s = _fermat()
    returned = threading.Event()
    thread = _interrupt_until(returned)
    try:
        with pytest.raises(KeyboardInterrupt):
            decide(s)
    finally:
        returned.set()
        thread.join()


class _Unknown:
    """A solver that answers unknown for a reason of Z3's own (no interrupt, no time limit)."""

    def check(self, *assumptions: z3.BoolRef) -> z3.CheckSatResult:
        return z3.unknown

    def reason_unknown(self) -> str:
        return "max. memory exceeded"


def test_any_other_unknown_is_a_clear_error():
    with pytest.raises(LimitError, match=r"^Z3: gave no answer \(max. memory exceeded\): no verdict either way$"):
        decide(_Unknown())  # type: ignore[arg-type]
