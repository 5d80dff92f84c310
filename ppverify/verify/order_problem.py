"""The order problem: nodes (ops and point-to-point actions) on device chains, and guarded
difference constraints between them. :mod:`.comm_model` builds it, :mod:`.order` decides it with
Z3, :mod:`.cycles` puts its infeasible cycles into words and :mod:`.certify` checks witnesses for
it; the data lives here so that none of them imports another to reach it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class OrderProblem:
    """Nodes (ops and comm actions) on device chains, program order, and guarded edges.

    ``chain[d]`` lists device d's nodes in program order with ``rank`` counting strict steps
    (fused nodes share a rank). ``edges`` are ``(a, b, c, rule)``: ``t_b - t_a >= c``.

    Example:
        >>> pb = OrderProblem()
        >>> a, b = pb.node("0F0", 0), pb.node("0B0", 0)
        >>> pb.edge(a, b, 1, "backward after its forward")
        >>> pb.chains(), pb.rank
        ({0: [0, 1]}, [0, 1])
    """

    text: list[str] = field(default_factory=list)
    device: list[int] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    edges: list[tuple[int, int, int, str]] = field(default_factory=list)
    #: edge id -> ``(property, message)`` of a :meth:`fault`: words its builder knows better
    notes: dict[int, tuple[str, str]] = field(default_factory=dict)
    _last: dict[int, int] = field(default_factory=dict)

    def node(self, text: str, device: int, fused_with_previous: bool = False) -> int:
        """Append a node at the end of ``device``'s chain; returns its id."""
        n = len(self.text)
        if device < 0:  # a free node (a transfer event): on no device's chain
            self.text.append(text)
            self.device.append(device)
            self.rank.append(0)
            return n
        prev = self._last.get(device)
        r = 0 if prev is None else self.rank[prev] + (0 if fused_with_previous else 1)
        self.text.append(text)
        self.device.append(device)
        self.rank.append(r)
        self._last[device] = n
        return n

    def edge(self, a: int, b: int, c: int, rule: str) -> None:
        """Require ``t_b - t_a >= c`` (a guarded constraint: it may appear in a core)."""
        self.edges.append((a, b, c, rule))

    def fault(self, a: int, rule: str, prop: str, message: str) -> None:
        """Mark node ``a`` as a fault (an edge from it to itself, infeasible): reported as
        ``prop`` with ``message`` (the node's action named in it), under ``rule``.

        Example:
            >>> pb = OrderProblem()
            >>> pb.fault(pb.node("0SEND_F0", 0), "one SEND per transfer", "completeness", "0SEND_F0 appears 2 times")
            >>> pb.edges, pb.notes
            ([(0, 0, 1, 'one SEND per transfer')], {0: ('completeness', '0SEND_F0 appears 2 times')})
        """
        self.notes[len(self.edges)] = (prop, message)
        self.edge(a, a, 1, rule)

    def chains(self) -> dict[int, list[int]]:
        """Nodes per device in program order."""
        out: dict[int, list[int]] = {}
        for n, d in enumerate(self.device):
            if d >= 0:
                out.setdefault(d, []).append(n)
        return out
