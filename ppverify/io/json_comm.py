"""The ``comm`` key of a ppverify JSON schedule file: the communication a schedule was made for.

``optimize --save`` stores it next to the cost model, so ``simulate`` and ``plot`` of the saved file
time the schedule with the same transfers and collectives the solver saw and reproduce its value.
Two forms::

    "comm": {"model": "fixed-delay", "delay": 1.0, "sync": "eager", "dp_allreduce": 0}
    "comm": {"model": "system", "system": {"name": "dgx-h100", "device_name": "...",
             "peak_TFLOPs": 989, "memory_GiB": 80, "gpus_per_node": 8, "nics_per_node": 8,
             "intra_node": {"name": "NVLink 4", "latency_us": 5, "bandwidth_GBps": 450},
             "inter_node": {...}, "topology": "switch", "ranks_per_node": null},
             "sync": "eager", "dp_allreduce": 0}

A system is stored whole (not by preset name) so the file stays right when presets change; an
infinite bandwidth (the ``ideal`` system) is written as ``null``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.comm import SYNC_MODES, CommModel, FixedDelay
from .json_checks import JsonReader

_KEYS = ("model", "delay", "system", "sync", "dp_allreduce")
_SYS_KEYS = (
    "name",
    "device_name",
    "description",
    "peak_TFLOPs",
    "memory_GiB",
    "gpus_per_node",
    "nics_per_node",
    "intra_node",
    "inter_node",
    "topology",
    "ranks_per_node",
    "action_overhead_us",
    "transfer_overhead_us",
    "two_pipe_overhead_us",
    "link_delay_us",
)
_LINK_KEYS = ("name", "latency_us", "bandwidth_GBps")
# System's parameter names in its errors -> the comm.system keys they come from
_SYSTEM_KEYS = {"intra_topology": "topology", "ranks-per-node": "ranks_per_node"}


@dataclass(frozen=True)
class CommSettings:
    """A communication model and the collectives' settings a schedule is timed with.

    Example:
        >>> CommSettings(FixedDelay(1.0)).describe()
        'fixed delay 1 per transfer, sync eager'
    """

    comm: CommModel
    sync: str = "eager"
    dp_allreduce: int = 0

    def describe(self) -> str:
        """One line for reports."""
        what = (
            f"fixed delay {self.comm.delay:g} per transfer"
            if isinstance(self.comm, FixedDelay)
            else f"system {getattr(self.comm, 'name', 'custom')}"
        )
        dp = f", data-parallel all-reduce over {self.dp_allreduce}" if self.dp_allreduce else ""
        return f"{what}, sync {self.sync}{dp}"


def charged_comm(stored: CommSettings | None, own_costs: bool) -> CommModel | None:
    """The communication a file stores, as every command that times the file charges it (unless
    ``--comm-delay`` or presets replace it): a fixed delay always; a system only beside the file's
    own cost model (``own_costs``), since it times transfers in seconds; ``None`` otherwise.

    Example:
        >>> charged_comm(CommSettings(FixedDelay(1.0)), own_costs=False)
        FixedDelay(delay=1.0)
        >>> charged_comm(None, own_costs=True) is None
        True
    """
    if stored is None or not (isinstance(stored.comm, FixedDelay) or own_costs):
        return None
    return stored.comm


def _link(t: Any) -> dict[str, Any] | None:
    if t is None:
        return None
    bw = None if math.isinf(t.bandwidth_Bps) else t.bandwidth_Bps / 1e9
    return {"name": t.name, "latency_us": t.latency_s * 1e6, "bandwidth_GBps": bw}


def comm_to_dict(settings: CommSettings) -> dict[str, Any]:
    """The JSON object of ``settings``.

    Example:
        >>> comm_to_dict(CommSettings(FixedDelay(0.5), "after-flush"))
        {'model': 'fixed-delay', 'delay': 0.5, 'sync': 'after-flush', 'dp_allreduce': 0}
        >>> from ppverify.systems.system import LinkTier, System
        >>> free = System("free", "gpu", 1e15, 2**30, 1, 1, None, LinkTier("free", 0.0, float("inf")))
        >>> comm_to_dict(CommSettings(free))["system"]["inter_node"]["bandwidth_GBps"] is None
        True
    """
    from ..systems.system import System

    c = settings.comm
    tail = {"sync": settings.sync, "dp_allreduce": int(settings.dp_allreduce)}
    if isinstance(c, FixedDelay):
        return {"model": "fixed-delay", "delay": float(c.delay), **tail}
    if isinstance(c, System):
        sysd = {
            "name": c.name,
            "device_name": c.device_name,
            "description": c.description,
            "peak_TFLOPs": c.peak_flops / 1e12,
            "memory_GiB": c.memory_bytes / 2**30,
            "gpus_per_node": c.gpus_per_node,
            "nics_per_node": c.nics_per_node,
            "intra_node": _link(c.intra),
            "inter_node": _link(c.inter),
            "topology": c.intra_topology,
            "ranks_per_node": c.ranks_per_node,
        }
        for key in ("action_overhead", "transfer_overhead", "link_delay"):  # the runtime's costs, when modeled
            if getattr(c, f"{key}_s", 0.0):
                sysd[f"{key}_us"] = getattr(c, f"{key}_s") * 1e6
        two_pipe = getattr(c, "two_pipe_overhead_s", None)
        if two_pipe is not None:  # [action, transfer] of the two-pipe runner
            sysd["two_pipe_overhead_us"] = [x * 1e6 for x in two_pipe]
        return {"model": "system", "system": sysd, **tail}
    raise TypeError(f"cannot store a {type(c).__name__} communication model in a schedule file")


def _two_pipe(rd: JsonReader, value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise rd.fail("comm.system.two_pipe_overhead_us", "expected [action us, transfer us]")
    return (
        rd.num(value[0], "comm.system.two_pipe_overhead_us[0]") / 1e6,
        rd.num(value[1], "comm.system.two_pipe_overhead_us[1]") / 1e6,
    )


def _seconds(rd: JsonReader, system: Mapping[str, Any], key: str) -> float:
    # ``<key>_us`` of a stored system in seconds; 0 (the System default) when absent
    return rd.num(system[f"{key}_us"], f"comm.system.{key}_us") / 1e6 if f"{key}_us" in system else 0.0


def _parse_link(rd: JsonReader, value: Any, where: str):
    from ..systems.system import LinkTier

    if value is None:
        return None
    d = rd.obj(value, where)
    rd.keys(d, where, _LINK_KEYS, ("latency_us",), ", ".join(_LINK_KEYS))
    bw = d.get("bandwidth_GBps")
    bps = math.inf if bw is None else rd.num(bw, f"{where}.bandwidth_GBps") * 1e9
    if bps <= 0:
        raise rd.fail(f"{where}.bandwidth_GBps", "must be > 0 (null for an infinite bandwidth)")
    return LinkTier(
        rd.str_(d.get("name", ""), f"{where}.name"), rd.num(d["latency_us"], f"{where}.latency_us") / 1e6, bps
    )


def comm_from_dict(rd: JsonReader, value: Any) -> CommSettings:
    """Validate the ``comm`` object of a file; errors name the file and the key.

    Example:
        >>> comm_from_dict(JsonReader("s.json"), {"model": "fixed-delay", "delay": 2})
        CommSettings(comm=FixedDelay(delay=2.0), sync='eager', dp_allreduce=0)
        >>> comm_from_dict(JsonReader("s.json"), {"model": "fixed-delay", "delay": 1, "sync": "later"})
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: comm.sync: unknown mode 'later'; expected eager, after-flush, none
    """
    from ..core.errors import ParameterError
    from ..systems.system import System

    c = rd.obj(value, "comm")
    rd.keys(c, "comm", _KEYS, ("model",), ", ".join(_KEYS))
    sync = rd.str_(c.get("sync", "eager"), "comm.sync")
    if sync not in SYNC_MODES:
        raise rd.fail("comm.sync", f"unknown mode {sync!r}; expected {', '.join(SYNC_MODES)}")
    dp = rd.int_(c.get("dp_allreduce", 0), "comm.dp_allreduce", 0)
    model = rd.str_(c["model"], "comm.model")
    if model == "fixed-delay":
        if "system" in c:
            raise rd.fail("comm.system", "a fixed-delay model has no system")
        return CommSettings(FixedDelay(rd.num(c.get("delay", 0.0), "comm.delay")), sync, dp)
    if model != "system":
        raise rd.fail("comm.model", f"unknown model {model!r}; expected fixed-delay or system")
    if "system" not in c:
        raise rd.fail("comm", "missing key 'system' (the links of the system model)")
    s = rd.obj(c["system"], "comm.system")
    rd.keys(
        s, "comm.system", _SYS_KEYS, ("peak_TFLOPs", "memory_GiB", "gpus_per_node", "inter_node"), ", ".join(_SYS_KEYS)
    )
    rpn = s.get("ranks_per_node")
    try:
        system = System(
            rd.str_(s.get("name", "custom"), "comm.system.name"),
            rd.str_(s.get("device_name", ""), "comm.system.device_name"),
            rd.num(s["peak_TFLOPs"], "comm.system.peak_TFLOPs") * 1e12,
            rd.num(s["memory_GiB"], "comm.system.memory_GiB") * 2**30,
            rd.int_(s["gpus_per_node"], "comm.system.gpus_per_node", 1),
            rd.int_(s.get("nics_per_node", 1), "comm.system.nics_per_node", 1),
            _parse_link(rd, s.get("intra_node"), "comm.system.intra_node"),
            _parse_link(rd, s["inter_node"], "comm.system.inter_node"),
            None if rpn is None else rd.int_(rpn, "comm.system.ranks_per_node", 1),
            rd.str_(s.get("description", ""), "comm.system.description"),
            rd.str_(s.get("topology", "switch"), "comm.system.topology"),
            action_overhead_s=_seconds(rd, s, "action_overhead"),
            transfer_overhead_s=_seconds(rd, s, "transfer_overhead"),
            link_delay_s=_seconds(rd, s, "link_delay"),
            two_pipe_overhead_s=_two_pipe(rd, s.get("two_pipe_overhead_us")),
        )
    except ParameterError as exc:
        # name the key the rule is about (System's parameter names are not the file's keys)
        key = _SYSTEM_KEYS.get(exc.name)
        if key is None:
            raise rd.fail("comm.system", exc.rule) from None
        raise rd.fail(f"comm.system.{key}", f"{exc.rule}, got {exc.value!r}") from None
    if system.inter is None:
        raise rd.fail("comm.system.inter_node", "must be a link, not null")
    return CommSettings(system, sync, dp)
