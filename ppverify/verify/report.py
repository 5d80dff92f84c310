"""What the verifier returns: the properties it proved, the violations it found (each with the
minimal set of ops that explains it), an optional witness timeline, and text/JSON renderings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Violation:
    """One violated property instance.

    ``ops`` is the explanation: a minimized Z3 unsat core, as the text of the ops (and comm
    actions) involved. ``rule`` names the constraint family in words.

    Example:
        >>> v = Violation("dependencies", "backward after its forward", "device 0 runs 0B0 before 0F0", ("0B0", "0F0"))
        >>> v.to_text()
        'dependencies: device 0 runs 0B0 before 0F0 [backward after its forward; core: 0B0 0F0]'
    """

    prop: str
    rule: str
    message: str
    ops: tuple[str, ...] = ()

    def to_text(self) -> str:
        """One line: property, message, rule and core."""
        core = f"; core: {' '.join(self.ops)}" if self.ops else ""
        return f"{self.prop}: {self.message} [{self.rule}{core}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"property": self.prop, "rule": self.rule, "message": self.message, "core": list(self.ops)}


@dataclass(frozen=True)
class Report:
    """The verdict on one schedule.

    ``proved`` lists the properties Z3 proved (each with a short statement); ``unchecked`` those
    not asked for (no memory cap, no makespan claim) or not decidable because an earlier property
    failed; ``witness`` is a timing witness (op text -> start time) when a makespan claim holds;
    ``runtime_note`` says why PyTorch's runtime could not run a schedule that is no PyTorch file
    (so its rules are no property of it) as it is.

    Example:
        >>> r = Report("gpipe p=2 m=1", (("completeness", "4 ops"),), (), ())
        >>> r.valid, r.to_text().splitlines()[0]
        (True, 'VALID: gpipe p=2 m=1')
    """

    schedule: str
    proved: tuple[tuple[str, str], ...]
    violations: tuple[Violation, ...]
    unchecked: tuple[tuple[str, str], ...]
    witness: dict[str, float] | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    truncated: int = 0
    runtime_note: str | None = None

    @property
    def valid(self) -> bool:
        """True when no property is violated."""
        return not self.violations

    def to_text(self, max_violations: int = 50) -> str:
        """Human-readable verdict: VALID/INVALID, proved properties, violations, unchecked ones."""
        lines = [f"{'VALID' if self.valid else 'INVALID'}: {self.schedule}"]
        for prop, what in self.proved:
            lines.append(f"  proved  {prop}: {what}")
        for v in self.violations[:max_violations]:
            lines.append(f"  VIOLATED {v.to_text()}")
        more = len(self.violations) - max_violations + self.truncated
        if more > 0:
            lines.append(f"  ... and {more} more violation(s) not listed")
        for prop, why in self.unchecked:
            lines.append(f"  not checked  {prop}: {why}")
        if self.runtime_note is not None:
            lines.append(f"  note  {self.runtime_note}")
        if self.witness is not None:
            lines.append(f"  witness: {len(self.witness)} start times (use --json to see them)")
        if "seconds" in self.stats:
            lines.append(
                f"  ({self.stats.get('ops', '?')} ops, {self.stats.get('actions', '?')} actions, "
                f"{self.stats['seconds']:.2f} s)"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``ppverify verify --json`` prints)."""
        return {
            "schedule": self.schedule,
            "verdict": "VALID" if self.valid else "INVALID",
            "proved": [{"property": p, "statement": w} for p, w in self.proved],
            "violations": [v.to_dict() for v in self.violations],
            "violations_not_listed": self.truncated,
            "unchecked": [{"property": p, "reason": w} for p, w in self.unchecked],
            "witness": self.witness,
            "pytorch_runtime_note": self.runtime_note,
            "stats": self.stats,
        }
