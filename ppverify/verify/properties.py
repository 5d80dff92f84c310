"""The verifier's properties: one ordered registry that :func:`ppverify.verify.verify`, the
``ppverify verify`` command (``--help``, ``--list-properties``) and the HTML report read.

Each entry names a property, says in one line what it means, gives the check that decides it
(:mod:`.checks`: ``check(run) -> Outcome``) and the rule name its violations carry (the first
word of each error line, ``property`` in JSON). The order is the order of checking and printing.
Adding a property is one check function and one entry here (see ``docs/verification.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import checks, runtime_rules
from .analysis import Run
from .checks import Outcome


@dataclass(frozen=True)
class Property:
    """One verifier property.

    ``when`` is empty for a property checked on every schedule, else the condition under which it
    is (a cap given, a kind of file); ``rule`` is the name its violations carry.

    Example:
        >>> p = Property("tidy", "no device idles", lambda run: Outcome("yes"), "tidy")
        >>> p.to_text(8)
        'tidy      no device idles'
    """

    name: str
    description: str
    check: Callable[[Run], Outcome]
    rule: str
    when: str = ""

    def to_text(self, width: int = 14) -> str:
        """One line for listings: name, description and (when conditional) the condition."""
        when = f" [{self.when}]" if self.when else ""
        return f"{self.name:<{width}}  {self.description}{when}"


#: the properties, in the order they are checked and printed
REGISTRY: tuple[Property, ...] = (
    Property(
        "completeness",
        "each required op (F, B or I+W of every stage and microbatch) exactly once, nothing extra",
        checks.completeness,
        "completeness",
    ),
    Property(
        "placement",
        "every op, SEND/RECV, UNSHARD/RESHARD and REDUCE_GRAD on the device its stage is placed on",
        checks.placement,
        "placement",
    ),
    # PyTorch's runtime rules are ground rules over the order as written, like the two above, and
    # come before the order problem: a crossed message is the cause of what that problem finds
    Property(
        "pytorch-loss-order",
        "the last stage's forwards in microbatch order; with one stage, each backward of microbatch k "
        "after k+1 forwards (PyTorch's runtime reads each loss back by microbatch)",
        runtime_rules.loss_order,
        "pytorch-loss-order",
        "PyTorch CSV files",
    ),
    Property(
        "pytorch-message-order",
        "each rank's SENDs to another in the order that rank posts its RECVs (untagged, matched in posting order)",
        runtime_rules.message_order,
        "pytorch-message-order",
        "PyTorch compute_comms files",
    ),
    Property(
        "dependencies",
        "every edge of the step's DAG holds in program order (no op before its input)",
        checks.dependencies,
        "dependencies",
    ),
    Property(
        "exclusivity",
        "one compute op (or overlapped slot) at a time on each device",
        checks.exclusivity,
        "exclusivity",
    ),
    Property(
        "deadlock",
        "a complete execution exists under the point-to-point semantics (no cycle of waits)",
        checks.deadlock,
        "deadlock",
    ),
    Property(
        "reduction",
        "each stage's gradients reduced once (REDUCE_GRAD), on its rank, after its last B/W",
        checks.reduction,
        "reduction",
        "compute_comms files",
    ),
    Property(
        "sharding",
        "every compute op runs between an UNSHARD of its stage and the next RESHARD",
        checks.sharding,
        "sharding",
        "compute_comms files",
    ),
    Property(
        "memory",
        "activation memory within the cap on every device at every instant",
        checks.memory,
        "memory",
        "--memory-cap",
    ),
    Property(
        "timing",
        "the programs can finish by T under the cost model (with a witness timeline)",
        checks.timing,
        "timing",
        "--makespan-le",
    ),
)

#: the names of :data:`REGISTRY` as shipped (read :func:`names` for the registry in force)
PROPERTIES: tuple[str, ...] = tuple(p.name for p in REGISTRY)


def names() -> tuple[str, ...]:
    """The property names of the registry in force, in order.

    Example:
        >>> names()[:3]
        ('completeness', 'placement', 'pytorch-loss-order')
    """
    return tuple(p.name for p in REGISTRY)


def always_checked() -> tuple[Property, ...]:
    """The properties decided on every schedule (no cap, claim or file kind needed): what a bare
    VALID verdict proves.

    Example:
        >>> [p.name for p in always_checked()]
        ['completeness', 'placement', 'dependencies', 'exclusivity', 'deadlock']
    """
    return tuple(p for p in REGISTRY if not p.when)


def listing() -> str:
    """The registry as text, one property a line (``ppverify verify --list-properties``).

    Example:
        >>> print(listing().splitlines()[0])
        completeness           each required op (F, B or I+W of every stage and microbatch) exactly once, nothing extra
    """
    width = max((len(p.name) for p in REGISTRY), default=0)
    return "\n".join(p.to_text(width) for p in REGISTRY)
