"""Theorems about closed forms and their proof with Z3: the vocabulary that :mod:`.prove` and the
per-family theorem modules (:mod:`.prove_interleaved`, :mod:`.prove_interleaved_pytorch`) share,
kept apart so that those modules need not import each other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import z3

from .smt import interrupt_error, own_signals

__all__ = ["Result", "Theorem", "prove"]


@dataclass(frozen=True)
class Theorem:
    """One universally quantified statement: ``hyp => concl`` for all integer values."""

    name: str
    statement: str
    hyp: Any
    concl: Any


@dataclass(frozen=True)
class Result:
    """Outcome of one theorem: ``proved``, ``counterexample`` (with the values) or ``unknown``.

    Example:
        >>> Result("t", "x >= 0", "proved", {}, 0.01).to_text()
        't: x >= 0 ... proved'
    """

    name: str
    statement: str
    status: str
    counterexample: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_text(self) -> str:
        """One line: name, statement, verdict (and the counterexample)."""
        cex = ""
        if self.counterexample:
            cex = " " + ", ".join(f"{k}={v}" for k, v in self.counterexample.items())
        return f"{self.name}: {self.statement} ... {self.status}{cex}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (one entry of ``ppverify prove --json``, less its setting).

        Example:
            >>> Result("t", "x >= 0", "proved", {}, 0.5).to_dict()
            {'theorem': 't', 'statement': 'x >= 0', 'status': 'proved', 'counterexample': {}, 'seconds': 0.5}
        """
        return {
            "theorem": self.name,
            "statement": self.statement,
            "status": self.status,
            "counterexample": self.counterexample,
            "seconds": self.seconds,
        }


def prove(th: Theorem, timeout_ms: int = 60_000) -> Result:
    """Prove one theorem with Z3 (its negation must be unsat). ``unknown`` is Z3 stopping without
    an answer within ``timeout_ms`` (or for another reason of its own); a call interrupted by a
    signal (Ctrl-C, SIGTERM, SIGHUP: ppverify's watcher interrupts Z3) is no result: it raises
    ``KeyboardInterrupt``, as the signal's handler does.

    Example:
        >>> x = z3.Int("x")
        >>> prove(Theorem("sq", "x >= 1 => 2x >= 2", x >= 1, 2 * x >= 2)).status
        'proved'
        >>> r = prove(Theorem("bad", "x >= 1 => x >= 2", x >= 1, x >= 2))
        >>> r.status, r.counterexample
        ('counterexample', {'x': 1})
    """
    s = own_signals(z3.Solver())  # a Ctrl-C is ppverify's, not read as "unknown" by Z3
    s.set("timeout", timeout_ms)
    s.add(th.hyp, z3.Not(th.concl))
    t = time.perf_counter()
    r = s.check()
    secs = time.perf_counter() - t
    if r == z3.unsat:
        return Result(th.name, th.statement, "proved", {}, secs)
    if r == z3.sat:
        mdl = s.model()
        cex = {
            d.name(): mdl[d].as_long() for d in sorted(mdl.decls(), key=lambda d: d.name()) if z3.is_int_value(mdl[d])
        }
        return Result(th.name, th.statement, "counterexample", cex, secs)
    # a timeout also reads "canceled" to Z3: the time taken tells it from an interrupt
    stop = interrupt_error(s.reason_unknown(), timed_out=secs >= timeout_ms / 1000)
    if stop is not None:
        raise stop
    return Result(th.name, th.statement, "unknown", {}, secs)  # a real timeout: a result, not an error
