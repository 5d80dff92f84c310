"""One rule for a Z3 ``unknown`` that an interrupt caused (hunt K2b): :func:`~ppverify.verify.smt.interrupt_error`,
shared by the verifier's :func:`~ppverify.verify.smt.no_answer` and ``prove``'s
:func:`~ppverify.verify.theorem.prove`. An interrupt before the call's time was up raises
``KeyboardInterrupt`` (no answer); a real timeout is ``prove``'s ``unknown`` result, and the
verifier's error."""

from __future__ import annotations

import threading
import time

import pytest
import z3

from ppverify.core.limits import LimitError
from ppverify.verify.smt import interrupt_error, no_answer
from ppverify.verify.theorem import Theorem, prove

x, y, z = z3.Ints("x y z")
#: Fermat's cubes (no positive x, y, z with x^3 + y^3 = z^3): Z3's nonlinear search never settles it
FERMAT = Theorem("fermat", "no positive cubes", z3.And(x > 0, y > 0, z > 0), x * x * x + y * y * y != z * z * z)


@pytest.mark.parametrize("reason", ["interrupted", "canceled", "interrupted from keyboard"])
def test_an_interrupt_before_the_time_is_up_is_a_keyboard_interrupt(reason):
    assert isinstance(interrupt_error(reason), KeyboardInterrupt)
    assert isinstance(no_answer(reason), KeyboardInterrupt)  # the verifier, with no --time-limit


@pytest.mark.parametrize("reason", ["timeout", "max. memory exceeded"])
def test_any_other_reason_is_no_interrupt(reason):
    assert interrupt_error(reason) is None
    assert isinstance(no_answer(reason), LimitError)


def test_a_call_whose_time_was_up_is_its_timeout_whatever_z3_says():
    # Z3 answers "canceled" to a timeout too: the caller's clock decides
    assert interrupt_error("canceled", timed_out=True) is None


def test_prove_keeps_a_real_timeout_as_unknown():
    # 50 ms for a question Z3 never settles: a result ("unknown"), not an interrupt
    assert prove(FERMAT, timeout_ms=50).status == "unknown"


def _interrupt_until(returned: threading.Event) -> threading.Thread:
    """A thread that interrupts Z3's context 0.3 s from now and again every 0.1 s until
    ``returned`` is set. One interrupt that comes before the check starts is lost (a check begun
    after it ran to its own timeout, measured), so a test process held up for 0.3 s before the
    check would wait out the whole timeout and get its "unknown"."""

    def run() -> None:
        time.sleep(0.3)
        while not returned.is_set():
            z3.main_ctx().interrupt()
            returned.wait(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_prove_raises_on_an_interrupt_before_its_timeout():
    returned = threading.Event()
    thread = _interrupt_until(returned)
    try:
        with pytest.raises(KeyboardInterrupt):
            prove(FERMAT, timeout_ms=60_000)
    finally:
        returned.set()
        thread.join()
