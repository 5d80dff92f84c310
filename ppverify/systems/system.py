"""Systems: pipeline ranks mapped to devices and nodes, link tiers, NICs, collective costs.

A :class:`System` is a communication model (it implements ``transfer_time`` of
:class:`ppverify.core.comm.CommModel`) built from a preset (``models/systems/*.yaml``):

* rank ``r`` runs on device ``r`` of the job; devices fill nodes in order, ``ranks_per_node`` at a
  time (default: every GPU of a node). Setting ``ranks_per_node=1`` models tensor parallelism
  inside a node with the pipeline across nodes.
* two ranks on one node talk over the ``intra`` tier (NVLink, PCIe), ranks on different nodes over
  the ``inter`` tier (InfiniBand, Ethernet) through one NIC of each node (GPU ``g`` of a node uses
  NIC ``g * nics_per_node // ranks_per_node``, the rail layout of DGX nodes).
* links are full duplex: latency and bandwidth are per direction, and the two directions of a
  link are separate resources (what the ``contention`` engine queues on, see :meth:`resources`).
  Inside a node the ``switch`` topology (default; NVSwitch, PCIe switch) gives each GPU one port,
  shared by all its peers; ``mesh`` gives every ordered pair its own link.
* a point-to-point transfer costs ``latency + bytes / bandwidth`` (alpha-beta); a ring all-reduce
  over n ranks ``2(n-1)*latency + 2(n-1)/n * bytes / bandwidth`` on its slowest link
  (the ring algorithm of Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
  Operations in MPICH", IJHPCA 2005).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.comm import CommModel, FixedDelay  # noqa: F401  (FixedDelay: used by the doctests)
from ..core.errors import ParameterError
from .presets import PresetError, read_preset

GiB = 2**30


@dataclass(frozen=True)
class LinkTier:
    """One class of link: per-direction latency (s) and bandwidth (bytes/s).

    Example:
        >>> LinkTier("IB NDR", 10e-6, 50e9).time(50e6)
        0.00101
    """

    name: str
    latency_s: float
    bandwidth_Bps: float

    def time(self, nbytes: float) -> float:
        """``latency + nbytes / bandwidth`` (0 bytes still pays the latency)."""
        return self.latency_s + (nbytes / self.bandwidth_Bps if nbytes else 0.0)


@dataclass(frozen=True)
class System:
    """Devices grouped in nodes, two link tiers, NICs, and each device's compute and memory.

    Example:
        >>> s = System("toy", "gpu", 100e12, 80 * GiB, 2, 1,
        ...            LinkTier("nvlink", 5e-6, 100e9), LinkTier("ib", 10e-6, 10e9))
        >>> s.node_of(3), round(s.transfer_time(0, 1, 1e6), 9), round(s.transfer_time(1, 2, 1e6), 9)
        (1, 1.5e-05, 0.00011)
    """

    name: str
    device_name: str
    peak_flops: float
    memory_bytes: float
    gpus_per_node: int
    nics_per_node: int
    intra: LinkTier | None
    inter: LinkTier
    ranks_per_node: int | None = None
    description: str = ""
    intra_topology: str = "switch"
    #: the pipeline runtime's time per compute action and per SEND/RECV action a rank posts
    #: (preset ``runtime:`` section; folded into op durations by :mod:`ppverify.core.overhead`)
    action_overhead_s: float = 0.0
    transfer_overhead_s: float = 0.0
    #: the same for two-pipe schedules (preset ``runtime.two_pipe``); None: the figures above
    two_pipe_overhead_s: tuple[float, float] | None = None
    #: PyTorch's runtime action by action (preset ``runtime.handover``, seconds in the order of
    #: :class:`ppverify.engines.runtime.Handover`); None: absent. Only the ``runtime`` engine reads it
    handover_s: tuple[float, ...] | None = None
    #: ``(term, ten quantiles in s)`` of ``runtime.handover.deciles``; () when absent
    handover_deciles_s: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: ``(ranks, terms, deciles)`` of each ``runtime.handover.ranks_<n>`` section (the terms measured
    #: with that many worker processes), in the forms above, by rank count; () when absent
    handover_by_ranks_s: tuple[tuple[int, tuple[float, ...], tuple[tuple[str, tuple[float, ...]], ...]], ...] = ()
    #: an emulated link delay (preset ``runtime.link_delay_us``; ``measure --link-delay``): every
    #: cross-device transfer takes this much longer, and its data never reaches the consumer before
    #: its SEND's post plus this delay
    link_delay_s: float = 0.0

    def __post_init__(self) -> None:
        rpn = self.per_node
        if rpn < 1 or rpn > self.gpus_per_node:
            raise ParameterError(
                "ranks-per-node", rpn, f"must be in 1..{self.gpus_per_node} (GPUs per node of {self.name})"
            )
        if rpn > 1 and self.intra is None:
            raise ParameterError("ranks-per-node", rpn, f"{self.name} has no intra-node link tier")
        if self.intra_topology not in ("switch", "mesh"):
            raise ParameterError("intra_topology", self.intra_topology, "expected switch or mesh")

    @property
    def per_node(self) -> int:
        """Pipeline ranks placed on one node."""
        return self.gpus_per_node if self.ranks_per_node is None else self.ranks_per_node

    def with_ranks_per_node(self, n: int | None) -> System:
        """Same system with another rank -> node mapping (``None``: fill every GPU).

        Example:
            >>> load_system("dgx-h100").with_ranks_per_node(1).node_of(3)
            3
        """
        return self if n is None else replace(self, ranks_per_node=n)

    def node_of(self, rank: int) -> int:
        """Node that holds pipeline rank ``rank``."""
        return rank // self.per_node

    def nic_of(self, rank: int) -> int:
        """Index, within its node, of the NIC that rank ``rank`` sends and receives through."""
        return (rank % self.per_node) * self.nics_per_node // self.per_node

    def link(self, src: int, dst: int) -> LinkTier:
        """The link tier between two ranks (intra-node or inter-node)."""
        if self.node_of(src) == self.node_of(dst):
            assert self.intra is not None  # guaranteed by __post_init__ when ranks share a node
            return self.intra
        return self.inter

    def transfer_time(self, src: int, dst: int, nbytes: float) -> float:
        """Seconds to move ``nbytes`` from rank ``src`` to ``dst``; 0 on the same rank."""
        if src == dst:
            return 0.0
        return self.link(src, dst).time(nbytes) + self.link_delay_s

    def resources(self, src: int, dst: int) -> tuple[Hashable, ...]:
        """What a transfer occupies for its whole duration (``contention`` queues on these).

        Inside a node with a ``switch`` topology (NVSwitch, a PCIe switch): the sender's port
        transmit side and the receiver's port receive side, so one GPU sending to two peers sends
        one at a time; with a ``mesh``: the directed link of the pair. Between nodes: the sending
        NIC's transmit side and the receiving NIC's receive side. Full duplex throughout: the two
        directions never share.

        Example:
            >>> s = load_system("dgx-h100")
            >>> s.resources(0, 1), s.resources(7, 8)
            ((('port-tx', 0), ('port-rx', 1)), (('nic-tx', 0, 7), ('nic-rx', 1, 0)))
        """
        if src == dst:
            return ()
        a, b = self.node_of(src), self.node_of(dst)
        if a == b:
            if self.intra_topology == "mesh":
                return (("link", src, dst),)
            return (("port-tx", src), ("port-rx", dst))
        return (("nic-tx", a, self.nic_of(src)), ("nic-rx", b, self.nic_of(dst)))

    def summary(self) -> str:
        """One line: name, device, link tiers.

        Example:
            >>> load_system("ethernet-100g").summary()
            'ethernet-100g: 1 x H100 SXM5 80GB per node (989 TFLOP/s, 80 GiB); inter-node 100 GbE 30 us, 12.5 GB/s'
            >>> load_system("dgx-h100").with_ranks_per_node(2).summary().split(";")[0]
            'dgx-h100: 2 pipeline ranks per node of 8 x H100 SXM5 80GB (989 TFLOP/s, 80 GiB)'
        """

        def tier(t: LinkTier) -> str:
            bw = "inf" if math.isinf(t.bandwidth_Bps) else f"{t.bandwidth_Bps / 1e9:g}"
            return f"{t.name} {t.latency_s * 1e6:g} us, {bw} GB/s"

        ranks = (  # fewer pipeline ranks than GPUs on a node: TP, or --ranks-per-node
            ""
            if self.per_node == self.gpus_per_node
            else f"{self.per_node} pipeline rank{'s' if self.per_node > 1 else ''} per node of "
        )
        parts = [
            f"{self.name}: {ranks}{self.gpus_per_node} x {self.device_name}{'' if ranks else ' per node'} "
            f"({self.peak_flops / 1e12:g} TFLOP/s, {self.memory_bytes / GiB:g} GiB)"
        ]
        if self.intra is not None and self.per_node > 1:
            parts.append(f"intra-node {tier(self.intra)}")
        parts.append(f"inter-node {tier(self.inter)}")
        return "; ".join(parts)


def load_system(name_or_path: str, ranks_per_node: int | None = None) -> System:
    """Load a system preset (a shipped name or a ``.yaml`` path).

    Example:
        >>> s = load_system("dgx-h100")
        >>> s.intra.bandwidth_Bps, s.inter.latency_s, s.memory_bytes / GiB
        (450000000000.0, 1e-05, 80.0)
    """
    label, d = read_preset("systems", name_or_path)
    if d["intra_node"] is None and d["gpus_per_node"] > 1:
        raise PresetError(label, "intra_node", "missing key (required when gpus_per_node > 1)")

    def tier(sec: dict | None) -> LinkTier | None:
        if sec is None:
            return None
        return LinkTier(sec["name"], sec["latency_us"] / 1e6, sec["bandwidth_GBps"] * 1e9)

    name = label.split("/")[-1].rsplit(".", 1)[0]
    inter = tier(d["inter_node"])
    assert inter is not None
    topology = d["intra_node"]["topology"] if d["intra_node"] is not None else "switch"
    rt = d.get("runtime") or {}
    handover = rt.get("handover") or {}
    # the runtime's optional figures by keyword: a positional run of them shifts unnoticed
    return System(
        name,
        d["device"]["name"],
        d["device"]["peak_TFLOPs"] * 1e12,
        d["device"]["memory_GiB"] * GiB,
        d["gpus_per_node"],
        d["nics_per_node"],
        tier(d["intra_node"]),
        inter,
        ranks_per_node,
        d["description"],
        topology,
        action_overhead_s=rt.get("action_overhead_us", 0.0) / 1e6,
        transfer_overhead_s=rt.get("transfer_overhead_us", 0.0) / 1e6,
        two_pipe_overhead_s=(
            rt["two_pipe"]["action_overhead_us"] / 1e6,
            rt["two_pipe"]["transfer_overhead_us"] / 1e6,
        )
        if rt.get("two_pipe")
        else None,
        handover_s=_handover_terms(handover) if handover else None,
        handover_deciles_s=_handover_deciles(handover),
        handover_by_ranks_s=tuple(
            (int(key.split("_", 1)[1]), *_inherit(sec, handover))
            for key, sec in sorted(
                ((k, v) for k, v in handover.items() if k.startswith("ranks_") and v),
                key=lambda kv: int(kv[0].split("_", 1)[1]),
            )
        ),
        link_delay_s=rt.get("link_delay_us", 0.0) / 1e6,
    )


def _handover_terms(section: Mapping[str, Any]) -> tuple[float, ...]:
    # the terms (s) of a handover section, in HANDOVER_KEYS order
    return tuple(section[k] / 1e6 for k in HANDOVER_KEYS)


def _handover_deciles(section: Mapping[str, Any]) -> tuple[tuple[str, tuple[float, ...]], ...]:
    # ((term, ten quantiles s), ...) of a handover section; () when it has none
    return tuple(
        (t, tuple(q[f"d{i}_us"] / 1e6 for i in range(1, 11))) for t, q in (section.get("deciles") or {}).items() if q
    )


def _inherit(
    section: Mapping[str, Any], pooled: Mapping[str, Any]
) -> tuple[tuple[float, ...], tuple[tuple[str, tuple[float, ...]], ...]]:
    """The terms and deciles of a ``ranks_<n>`` section, each term it leaves out (None) taken
    from the pooled section, its deciles with it; a term the section states keeps only its own
    deciles (the pooled ones were drawn around another mean).

    Example:
        >>> pooled = {k: 100.0 for k in HANDOVER_KEYS} | {"deciles": {"late": {f"d{i}_us": 1.0 for i in range(1, 11)}}}
        >>> terms, deciles = _inherit({k: None for k in HANDOVER_KEYS} | {"late_us": 2400.0}, pooled)
        >>> [round(t * 1e6) for t in terms], deciles   # late_us 2400, the rest 100; no late deciles
        ([100, 100, 100, 100, 100, 2400, 100], ())
    """
    merged = {k: pooled[k] if section.get(k) is None else section[k] for k in HANDOVER_KEYS}
    own = dict(_handover_deciles(section))
    for term, q in _handover_deciles(pooled):
        if term not in own and section.get(f"{term}_us") is None:
            own[term] = q
    return _handover_terms(merged), tuple(own.items())


#: the ``runtime.handover`` keys of a preset, in the order of ``System.handover_s``
HANDOVER_KEYS = ("head_us", "overshoot_us", "gap_us", "send_us", "recv_us", "late_us", "wake_us")


def link_delay_of(comm: object) -> float:
    """The emulated link delay (seconds) a communication model states: a :class:`System`'s
    ``link_delay_s`` (preset ``runtime.link_delay_us``), 0 for any other model.

    Example:
        >>> link_delay_of(load_system("dgx-h100")), link_delay_of(FixedDelay(0.5))
        (0.0, 0.0)
    """
    return float(getattr(comm, "link_delay_s", 0.0))


def allreduce_time(comm: CommModel, ranks: Sequence[int], nbytes: float) -> float:
    """Ring all-reduce of ``nbytes`` over ``ranks``: ``2(n-1)`` steps, each moving ``nbytes/n``
    to the ring neighbour, paced by the slowest link of the ring. Under an alpha-beta link this is
    ``2(n-1)*alpha + 2(n-1)/n * bytes/beta`` (Thakur et al., IJHPCA 2005); under a fixed delay c it is
    ``2(n-1)*c``. One rank (or none) costs 0.

    Example:
        >>> s = load_system("dgx-h100")
        >>> round(allreduce_time(s, [0, 7], 1e9) * 1e3, 4)   # 2*5us + 1e9/450e9 s
        2.2322
        >>> allreduce_time(FixedDelay(0.5), [0, 1, 2, 3], 0)
        3.0
    """
    n = len(ranks)
    if n < 2:
        return 0.0
    chunk = nbytes / n
    step = max(comm.transfer_time(ranks[k], ranks[(k + 1) % n], chunk) for k in range(n))
    return float(2 * (n - 1) * step)


def dp_allreduce_time(comm: CommModel, n: int, nbytes: float) -> float:
    """Ring all-reduce of ``nbytes`` among ``n`` data-parallel replicas of one pipeline rank.

    Data-parallel replicas of a pipeline live on other nodes, so a :class:`System` uses its
    inter-node tier, each of the ``2(n-1)`` steps a cross-device transfer that also pays the
    system's emulated ``link_delay_s`` (as :meth:`System.transfer_time` does); any other model
    uses its rank 0 -> rank 1 transfer time.

    Example:
        >>> round(dp_allreduce_time(load_system("ib-ndr-cluster"), 4, 1e9), 6)   # 6*10us + 1.5*1e9/50e9
        0.03006
        >>> slow = replace(load_system("ib-ndr-cluster"), link_delay_s=1e-3)
        >>> round(dp_allreduce_time(slow, 4, 1e9), 6)   # the same + 6 steps x 1 ms
        0.03606
    """
    if n < 2:
        return 0.0
    if isinstance(comm, System):
        return float(2 * (n - 1) * (comm.inter.time(nbytes / n) + comm.link_delay_s))
    return float(2 * (n - 1) * comm.transfer_time(0, 1, nbytes / n))
