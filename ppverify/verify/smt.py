"""Small helpers around Z3: fast difference-logic solvers, SMT-LIB text assembly, unsat cores.

Why SMT-LIB text: building 10^5 constraints through Z3's Python API costs tens of microseconds
each; generating the text with plain string formatting and letting Z3's C++ parser read it is an
order of magnitude faster, and the constraints Z3 decides are the same.

Why these solver settings: a conjunction of ``x - y >= c`` atoms is a simple temporal network.
Z3's auto-configuration picks its *dense* difference-logic solver for it, whose memory grows with
the square of the variable count (it was killed at 120,000 variables on a 23 GB machine). With
auto-configuration off and ``arith.solver=1`` (Bellman-Ford based, sparse) the same problem takes
seconds. The settings are per solver, never global, so other users of Z3 in the process are not
affected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

import z3

from ..core.exact import exact_fraction as exact_fraction  # re-exported: the verifier reads amounts through it
from ..core.limits import LimitError
from ..core.time_limit import check_time, seconds_left, time_out_error

#: Z3's ``reason_unknown`` after ``interrupt()`` on its context: ppverify's signal watcher
#: (:mod:`ppverify.cli.signals`) or the ``--time-limit`` watchdog stopped the call
INTERRUPTED = ("interrupted", "canceled", "interrupted from keyboard")


def own_signals(solver: z3.Solver) -> z3.Solver:
    """``solver`` with Z3's ``ctrl_c`` off: a Ctrl-C during its checks is Python's to handle.

    Why: with ``ctrl_c`` on (Z3's default) each ``check`` installs Z3's own SIGINT handler, which
    takes the signal and ends the check with ``unknown``: Python's handler never runs, so the
    command went on, reading that ``unknown`` as an answer. Off, the signal reaches ppverify's
    handler and its watcher thread, which interrupts Z3 (:mod:`ppverify.cli.signals`); the check
    then ends with ``unknown`` and the handler raises ``KeyboardInterrupt``.

    Example:
        >>> own_signals(z3.Solver()).check()
        sat
    """
    solver.set("ctrl_c", False)
    return solver


def idl_solver() -> z3.Solver:
    """A solver for (large) conjunctions of difference constraints, with unsat cores enabled.

    Example:
        >>> s = idl_solver()
        >>> s.from_string("(declare-const a Int)(declare-const b Int)(assert (>= (- b a) 1))(assert (>= (- a b) 0))")
        >>> s.check()
        unsat
    """
    s = own_signals(z3.Tactic("smt").solver())
    s.set("auto_config", False)
    s.set("arith.solver", 1)
    s.set("unsat_core", True)
    return s


def plain_solver() -> z3.Solver:
    """A general solver (ground rules, pseudo-Boolean sums) with unsat cores enabled.

    Example:
        >>> s = plain_solver()
        >>> s.from_string("(declare-const x Int)(assert (= x (+ 1 1)))(assert (< x 2))")
        >>> s.check()
        unsat
    """
    s = own_signals(z3.Solver())
    s.set("unsat_core", True)
    return s


#: SMT-LIB text is handed to Z3 in pieces of about this many characters (a few tens of ms each)
PARSE_CHUNK_CHARS = 256 * 1024


#: Z3's search on a parsed difference-logic problem (:func:`idl_solver`) takes 3-9x its parse (about 5x
#: typically), and once its simplification pass is done (about 1.5 to 3 parses in) it stops at no
#: interrupt (the whole problem is propagated at the base level, no decision: Z3's verbose log); a general
#: problem's (:func:`plain_solver`: memory levels, ground rules) 0.5-3.6x (measured, 10^4-10^5 constraints)
IDL_SEARCH_FACTOR, PLAIN_SEARCH_FACTOR = 5.0, 1.0


def load(
    solver: z3.Solver, text: str, chunk_chars: int = PARSE_CHUNK_CHARS, search_factor: float = PLAIN_SEARCH_FACTOR
) -> None:
    """``solver.from_string(text)``, in pieces of whole lines of about ``chunk_chars`` characters.

    Why: Z3's parser is one C call that no interrupt stops, so a time limit could only act after a
    whole problem was parsed (0.7 s for a few 10^5 constraints). Between pieces Python checks the
    ``--time-limit`` (:func:`ppverify.core.time_limit.check_time`), which stops the parse within one piece.
    The solver keeps the declarations of earlier pieces, and the assertions arrive in the same
    order, so Z3 decides exactly the same problem. A line holds whole commands (the texts of this
    package write one command per line); a piece that would split an s-expression grows to the
    next line where the parentheses balance. Under a time limit, a parse that leaves less of it
    than ``search_factor`` times the parse gives up at once (:func:`ppverify.core.time_limit.check_time`):
    the search to follow would overrun the limit, and could not be stopped in time.

    Example:
        >>> s = idl_solver()
        >>> load(s, "(declare-const a Int)\\n(declare-const b Int)\\n(assert (>= (- b a) 1))\\n(assert (>= (- a b) 0))", 8)
        >>> s.check(), len(s.assertions())
        (unsat, 2)
    """
    t0 = time.monotonic()
    n, i = len(text), 0
    while i < n:
        j = text.find("\n", min(n, i + chunk_chars))
        j = n if j < 0 else j + 1
        while j < n and text.count("(", i, j) != text.count(")", i, j):
            k = text.find("\n", j)
            j = n if k < 0 else k + 1
        check_time()
        solver.from_string(text[i:j])
        i = j
    check_time(search_factor * (time.monotonic() - t0))


def decide(solver: z3.Solver, *assumptions: z3.BoolRef) -> z3.CheckSatResult:
    """``solver.check(*assumptions)``, ``sat`` or ``unsat``: an ``unknown`` is never returned as an
    answer but raised (:func:`no_answer`). Under the ``--time-limit`` in force Z3's own
    ``timeout`` is set to the seconds left, so the search ends by the deadline, and its ``unknown``
    then (or after the limit's watchdog interrupted it) is the
    :class:`~ppverify.core.time_limit.TimeLimitError`. Without a limit, plain ``check``.

    Example:
        >>> s = plain_solver()
        >>> s.from_string("(declare-const x Int)(assert (> x 1))")
        >>> decide(s)
        sat
    """
    left = seconds_left()
    if left is not None:
        check_time()
        solver.set("timeout", max(1, int(left * 1000)))
    result = solver.check(*assumptions)
    if result == z3.unknown:
        raise no_answer(solver.reason_unknown())
    return result


#: a Z3 call stopped within this many seconds of the ``--time-limit`` was stopped by it: Z3's
#: ``timeout`` (the seconds left, in whole milliseconds) and an ``interrupt()`` both answer
#: "canceled" to a check with assumptions, so the clock tells them apart
LIMIT_MARGIN_S = 0.5


def no_answer(reason: str) -> BaseException:
    """The exception a Z3 ``unknown`` (for ``reason``, Z3's ``reason_unknown``) stands for: no
    answer, never a verdict. The ``--time-limit``'s time-out when Z3's timeout (the seconds left)
    or the limit's watchdog ended the call; ``KeyboardInterrupt`` when the call was interrupted
    before the limit (a signal: ppverify's watcher interrupts Z3 on Ctrl-C, SIGTERM and SIGHUP,
    and its handler raises at once, naming the signal, so this is only the fallback); else a
    :class:`~ppverify.core.limits.LimitError` naming Z3's reason.

    Example:
        >>> type(no_answer("interrupted")).__name__
        'KeyboardInterrupt'
        >>> str(no_answer("max. memory exceeded"))
        'Z3: gave no answer (max. memory exceeded): no verdict either way'
    """
    error, left = time_out_error(), seconds_left()
    if error is not None and left is not None and (reason == "timeout" or left < LIMIT_MARGIN_S):
        return error
    stop = interrupt_error(reason)
    return stop if stop is not None else LimitError("Z3", f"gave no answer ({reason}): no verdict either way")


def interrupt_error(reason: str, timed_out: bool = False) -> KeyboardInterrupt | None:
    """The ``KeyboardInterrupt`` to raise for a Z3 ``unknown`` (``reason``, Z3's
    ``reason_unknown``) that an interrupt caused, ``None`` for any other: a call interrupted
    before its time was up (a signal: ppverify's watcher interrupts Z3 on Ctrl-C, SIGTERM and
    SIGHUP) is no answer and stops the command. ``timed_out``: the caller's own clock says the
    call's time was up, so an interrupt-like reason is its timeout (Z3 answers "canceled" to
    both). The rule :func:`no_answer` and :func:`ppverify.verify.theorem.prove` share.

    Example:
        >>> interrupt_error("canceled"), interrupt_error("canceled", timed_out=True), interrupt_error("timeout")
        (KeyboardInterrupt('Z3 canceled'), None, None)
    """
    return KeyboardInterrupt(f"Z3 {reason}") if reason in INTERRUPTED and not timed_out else None


def num(x: int) -> str:
    """An integer as SMT-LIB text (negative numbers need ``(- n)``).

    Example:
        >>> num(3), num(-2)
        ('3', '(- 2)')
    """
    return str(x) if x >= 0 else f"(- {-x})"


def diff_ge(a: str, b: str, c: int) -> str:
    """The atom ``a - b >= c`` over two declared integer constants.

    Example:
        >>> diff_ge("t1", "t0", 1)
        '(>= (- t1 t0) 1)'
    """
    return f"(>= (- {a} {b}) {num(c)})"


def declare_ints(names: Iterable[str]) -> str:
    """Declarations of integer constants, one per line.

    Example:
        >>> declare_ints(["t0", "t1"])
        '(declare-const t0 Int)\\n(declare-const t1 Int)'
    """
    return "\n".join(f"(declare-const {n} Int)" for n in names)


def declare_bools(names: Iterable[str]) -> str:
    """Declarations of Boolean constants, one per line.

    Example:
        >>> declare_bools(["g0"])
        '(declare-const g0 Bool)'
    """
    return "\n".join(f"(declare-const {n} Bool)" for n in names)


def minimize_core(
    check: Callable[[Sequence[z3.BoolRef]], tuple[z3.CheckSatResult, list[z3.BoolRef]]],
    core: Sequence[z3.BoolRef],
    budget_s: float = 5.0,
) -> list[z3.BoolRef]:
    """Deletion-based minimization of an unsat core of assumption literals.

    ``check(assumptions)`` returns ``(result, core)``. Each literal is dropped in turn; if the
    rest is still unsat the (possibly smaller) new core replaces it. The result is minimal
    (every literal necessary) unless ``budget_s`` runs out first.

    Example:
        >>> s = plain_solver()
        >>> a, b, c = z3.Bools("a b c")
        >>> s.add(z3.Implies(a, z3.Not(b)), z3.Implies(c, z3.BoolVal(True)))
        >>> def check(lits):
        ...     r = s.check(*lits)
        ...     return r, list(s.unsat_core()) if r == z3.unsat else []
        >>> sorted(str(x) for x in minimize_core(check, [a, b, c]))
        ['a', 'b']
    """
    cur = list(core)
    deadline = time.monotonic() + budget_s
    i = 0
    while i < len(cur) and time.monotonic() < deadline:
        trial = cur[:i] + cur[i + 1 :]
        res, new_core = check(trial)
        if res == z3.unsat:
            keep = {str(x) for x in new_core}
            cur = [x for x in trial if str(x) in keep] if keep else trial
        else:
            i += 1
    return cur
