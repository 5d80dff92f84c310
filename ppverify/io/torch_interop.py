"""Interoperability with PyTorch's schedule classes (``torch.distributed.pipelining``, 2.13).

torch is an optional extra: it is imported lazily, inside the functions that need it, and
:func:`torch_available` says whether it can be. What needs no torch (reading/writing the CSV,
the ``torch`` step semantics) lives in :mod:`ppverify.io.torch_csv` and
:mod:`ppverify.engines.torch_steps`.

PyTorch's classes compute the action lists of every rank in their constructor. They need no
process group for that: plain objects with ``num_stages``, ``group_size``, ``group_rank``,
``stage_index`` and ``submod=None`` stand in for the stages (:func:`torch_pipeline_order`).

Known defect of PyTorch 2.13 (:data:`SCHEDULE_1F1B_BUG`): ``Schedule1F1B`` gives the last rank
no warm-up forward, so its forward counter starts at 0 and is incremented *before* the first
steady-state forward is appended: the last rank runs ``F1 .. Fm`` instead of ``F0 .. F(m-1)``
(each forward one microbatch late, ``F(m)`` out of range, ``F0`` missing), while its backwards
``B0 .. B(m-1)`` are right. The runtime never notices because ``Schedule1F1B`` executes its own
loop, not this list; the list is what ``_dump_csv`` and tools reading ``pipeline_order`` see.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..core.errors import ParameterError, PPVerifyError
from ..core.ops import Comm, compute_ops, format_action
from ..core.schedule import Schedule
from .torch_csv import COMPUTE_ONLY, parse_rows, to_rows

#: PyTorch's schedule classes, by the name ``get_schedule_class`` knows them
TORCH_CLASSES: tuple[str, ...] = (
    "GPipe",
    "1F1B",
    "LoopedBFS",
    "Interleaved1F1B",
    "InterleavedZeroBubble",
    "ZBVZeroBubble",
    "DualPipeV",
)
#: classes taking one stage per rank (``PipelineScheduleSingle``)
SINGLE_STAGE: frozenset[str] = frozenset({"GPipe", "1F1B"})
#: classes that need exactly two stages per rank in the V placement
V_CLASSES: frozenset[str] = frozenset({"ZBVZeroBubble", "DualPipeV"})

SCHEDULE_1F1B_BUG = (
    "Schedule1F1B (torch 2.13) on the last rank: no warm-up forward, so the steady-state loop "
    "increments its forward counter from 0 before appending; the rank runs F1..Fm instead of "
    "F0..F(m-1): F(m) is out of range and F0 is missing"
)


class TorchUnavailableError(PPVerifyError):
    """torch (the optional ``torch`` extra) is not installed.

    Example:
        >>> str(TorchUnavailableError())
        'this needs PyTorch (pip install ppverify[torch])'
    """

    def __init__(self) -> None:
        super().__init__("this needs PyTorch (pip install ppverify[torch])")


def torch_available() -> bool:
    """True when ``torch.distributed.pipelining`` can be imported.

    Example:
        >>> isinstance(torch_available(), bool)
        True
    """
    try:
        import torch.distributed.pipelining.schedules  # noqa: F401
    except Exception:  # any import failure means: no usable torch
        return False
    return True


def _schedules_module():
    try:
        import torch.distributed.pipelining.schedules as sched
    except Exception:
        raise TorchUnavailableError() from None
    return sched


def _fake_stages(p: int, v: int, rank: int, style: str) -> list[SimpleNamespace]:
    from torch.distributed.pipelining._utils import generate_rank_to_stage_mapping

    idx = generate_rank_to_stage_mapping(p, p * v, style=style)[rank]
    return [
        SimpleNamespace(
            num_stages=p * v,
            group_size=p,
            group_rank=rank,
            stage_index=s,
            submod=None,
            is_first=s == 0,
            is_last=s == p * v - 1,
        )
        for s in idx
    ]


#: most steps PyTorch's generators may take, estimated as ``p*v * m * (p*v + m)`` (their passes over
#: the action lists are quadratic: ZBVZeroBubble and Interleaved1F1B at p = m = 64 are 1.6e6 steps,
#: 4 to 8 s on a 2-core machine; p = m = 500 ran for minutes within the op limit before this bound)
MAX_TORCH_STEPS = 4_000_000
#: most rank-steps of the step-by-step replay that checks an import (every rank looked at in every
#: step, about ``p * (p*v + 2*v*m)``): p = 400, m = 1 is 160,000, about 10 s on a loaded 2-core machine
MAX_REPLAY_STEPS = 250_000


def torch_order_steps(p: int, m: int, v: int) -> tuple[int, int]:
    """The work of building one schedule class's action lists and of replaying them step by step,
    estimated before PyTorch is called and checked against :data:`MAX_TORCH_STEPS` and
    :data:`MAX_REPLAY_STEPS`: import is bounded in ``p``, ``m`` and ``v`` before it starts.

    Example:
        >>> torch_order_steps(64, 64, 2)
        (1572864, 24576)
    """
    return p * v * m * (p * v + m), p * (p * v + 2 * v * m)


def torch_pipeline_order(name: str, p: int, m: int, v: int | None = None) -> dict[int, list[Any]]:
    """PyTorch's own per-rank action lists (``pipeline_order``) of one schedule class, built
    without a process group. ``v`` is the stages per rank (1 for GPipe/1F1B, default 2 otherwise;
    ZBVZeroBubble and DualPipeV need 2). PyTorch's own parameter checks raise
    :class:`ParameterError`. The lists are a deep copy (PyTorch helpers consume their input).

    Example:
        >>> order = torch_pipeline_order("GPipe", 2, 2)
        >>> [str(a) for a in order[1]]
        ['1F0', '1F1', '1B0', '1B1', '1REDUCE_GRAD']
    """
    from ..core.limits import LimitError, check_ops

    if name not in TORCH_CLASSES:  # checked before importing torch (seconds)
        raise ParameterError("class", name, f"expected one of {', '.join(TORCH_CLASSES)}")
    if v is None:
        v = 1 if name in SINGLE_STAGE else 2
    for flag, val in (("p", p), ("m", m), ("v", v)):  # PyTorch's helpers fail on 0 with a KeyError or a modulo by 0
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ParameterError(flag, val, "must be an integer >= 1")
    check_ops(3 * max(p, 1) * max(m, 1) * max(v, 1), f"--torch-class {name} -p {p} -m {m} --v {v}")
    steps, replay = torch_order_steps(p, m, v)
    what = f"--torch-class {name} -p {p} -m {m} --v {v}"
    if steps > MAX_TORCH_STEPS:
        raise LimitError(
            what,
            f"PyTorch builds these lists in about p*v * m * (p*v + m) = {steps:.3g} steps, over the limit of "
            f"{MAX_TORCH_STEPS:.0e} (minutes); export the CSV from PyTorch and import the file instead",
        )
    if replay > MAX_REPLAY_STEPS:
        raise LimitError(
            what,
            f"checking the import replays about p * (p*v + 2*v*m) = {replay:.3g} rank-steps, over the limit of "
            f"{MAX_REPLAY_STEPS:.1e} (minutes)",
        )
    sched = _schedules_module()
    if name in SINGLE_STAGE and v != 1:
        raise ParameterError("v", v, f"Schedule{name} has one stage per rank")
    if name in V_CLASSES and v != 2:
        raise ParameterError("v", v, f"Schedule{name} needs exactly 2 stages per rank")
    cls = sched.get_schedule_class(name)
    style = "v" if name in V_CLASSES else "loop"
    stages = _fake_stages(p, v, 0, style)
    try:
        obj = cls(stages[0], m) if name in SINGLE_STAGE else cls(stages, m)
    except (ValueError, AssertionError, RuntimeError) as exc:
        raise ParameterError("schedule", f"{name} p={p} m={m} v={v}", f"PyTorch refuses it: {exc}") from None
    return {r: list(obj.pipeline_order[r]) for r in sorted(obj.pipeline_order)}


def order_to_rows(
    order: Mapping[int, Sequence[Any]] | Sequence[Sequence[Any]], strip_reduce_grad: bool = False
) -> list[list[str]]:
    """CSV cells of a ``pipeline_order`` (``None`` -> empty cell); optionally without REDUCE_GRAD.

    Example:
        >>> order_to_rows({0: ["0F0", None, "0B0", "0REDUCE_GRAD"]}, strip_reduce_grad=True)
        [['0F0', '', '0B0']]
    """
    rows = [order[k] for k in sorted(order)] if isinstance(order, Mapping) else list(order)
    out = []
    for row in rows:
        cells = ["" if a is None else str(a) for a in row]
        if strip_reduce_grad:
            cells = [c for c in cells if not c.endswith("REDUCE_GRAD")]
        out.append(cells)
    return out


def from_torch(
    order: Mapping[int, Sequence[Any]] | Sequence[Sequence[Any]],
    name: str = "torch",
    strip_reduce_grad: bool = False,
    **options: Any,
) -> Schedule:
    """A ppverify :class:`Schedule` from PyTorch action lists (``_Action`` objects or their text);
    options as :func:`ppverify.io.torch_csv.parse_rows` (``placement``, ``m``, ``num_stages``).

    Example:
        >>> s = from_torch({0: ["0F0", "0B0"], 1: [None, "1F0", "1B0"]}, "mine")
        >>> s.family, s.placement.name, s.programs[1][0] is None
        ('mine', 'linear', True)
    """
    sched = parse_rows(order_to_rows(order, strip_reduce_grad), name, **options)
    return Schedule(sched.placement, sched.m, sched.programs, sched.pipe_of_mb, name, dict(sched.params))


def torch_schedule(
    name: str, p: int, m: int, v: int | None = None, strip_reduce_grad: bool = True, strip_idle: bool = False
) -> Schedule:
    """Build a PyTorch class's action lists and import them (REDUCE_GRAD markers dropped by
    default; idle slots kept unless ``strip_idle``: PyTorch's runtime skips them, the ``slot``
    engine charges one tick each). The stage count and placement are given explicitly, so that
    ``1F1B``'s last-rank bug shows as wrong ops rather than as a different step.

    Example:
        >>> torch_schedule("1F1B", 2, 2).programs[1]
        (Op(kind='F', stage=1, mb=1), Op(kind='B', stage=1, mb=0), Op(kind='F', stage=1, mb=2), Op(kind='B', stage=1, mb=1))
    """
    order = torch_pipeline_order(name, p, m, v)
    vv = 1 if name in SINGLE_STAGE else (v or 2)
    placement = "v" if name in V_CLASSES else ("linear" if vv == 1 else "loop")
    if strip_idle:
        order = {r: [a for a in row if a is not None] for r, row in order.items()}
    return from_torch(order, f"torch-{name}", strip_reduce_grad, placement=placement, m=m, num_stages=p * vv)


def to_torch(schedule: Schedule) -> dict[int, list[Any]]:
    """The schedule as PyTorch ``_Action`` lists (``None`` for idle slots), ready for PyTorch's
    helpers (``_validate_schedule``, ``_add_send_recv``, ``_simulate_comms_compute``).

    Example:
        >>> from ppverify.schedules import build
        >>> [str(a) for a in to_torch(build("gpipe", p=2, m=1))[1]]
        ['1F0', '1B0']
    """
    sched = _schedules_module()
    return {r: [sched._Action.from_str(c) if c else None for c in row] for r, row in enumerate(_cells(schedule))}


def _cells(schedule: Schedule) -> list[list[str]]:
    if schedule.placement.num_pipes != 1 or any(schedule.pipe_of_mb):
        return to_rows(schedule)  # raises the one-pipe error
    return [[format_action(a) for a in prog] for prog in schedule.programs]


def torch_validate(schedule: Schedule) -> str | None:
    """Run PyTorch's ``_validate_schedule`` on a schedule: ``None`` when it passes, else its
    error message (first line). It checks per-stage order (F before B/I, I before W), counts and
    one rank per stage — nothing across stages.

    Example:
        >>> from ppverify.schedules import build
        >>> torch_validate(build("1f1b", p=2, m=2)) is None
        True
    """
    sched = _schedules_module()
    actions = to_torch(schedule)
    actions = {r: [a for a in row if a is None or a.is_compute_op] for r, row in actions.items()}
    try:
        sched._validate_schedule(actions, schedule.p, schedule.num_stages, schedule.m)
    except (AssertionError, KeyError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def torch_lower(schedule: Schedule) -> list[list[str]]:
    """PyTorch's own ``_add_send_recv`` lowering of a compute-only schedule, as CSV cells.

    Example:
        >>> from ppverify.schedules import build
        >>> torch_lower(build("gpipe", p=2, m=1))
        [['0F0', '0SEND_F0', '0RECV_B0', '0B0'], ['1RECV_F0', '1F0', '1B0', '1SEND_B0']]
    """
    sched = _schedules_module()
    rank_of = schedule.placement.maps[0]
    actions = {
        r: [
            a
            for a in row
            if a is None or a.is_compute_op or a.computation_type.value in ("UNSHARD", "RESHARD", "REDUCE_GRAD")
        ]
        for r, row in to_torch(schedule).items()
    }
    low = sched._add_send_recv(actions, lambda s: rank_of[s], schedule.num_stages)
    return [[str(a) for a in low[r]] for r in sorted(low)]


def torch_simulated_steps(schedule: Schedule) -> int:
    """PyTorch's own step count: ``_simulate_comms_compute`` on its ``_add_send_recv`` lowering
    (or on the schedule itself when it already holds SEND/RECV), markers removed first because
    PyTorch's simulator rejects them. PyTorch's simulator also rejects ``OVERLAP_F_B`` cells and
    stalls on deadlocks: both raise :class:`ParameterError` naming PyTorch's message.

    Example:
        >>> from ppverify.schedules import build
        >>> torch_simulated_steps(build("gpipe", p=2, m=1))
        6
    """
    sched = _schedules_module()
    rank_of = schedule.placement.maps[0]
    has_comm = any(isinstance(a, Comm) for prog in schedule.programs for a in prog)
    rows = _cells(schedule) if has_comm else torch_lower(schedule)
    order = {
        r: [sched._Action.from_str(c) for c in row if c and not c.endswith(("UNSHARD", "RESHARD", "REDUCE_GRAD"))]
        for r, row in enumerate(rows)
    }
    import contextlib

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # PyTorch prints the grid before raising
            sim = sched._simulate_comms_compute(order, lambda s: rank_of[s], schedule.num_stages)
    except ValueError as exc:  # OVERLAP_F_B cells, or no progress
        raise ParameterError("schedule", schedule.describe(), f"PyTorch's simulator rejects it: {exc}") from None
    return max(len(row) for row in sim.values())


def torch_runtime_load(
    path: str | Path, p: int, m: int, num_stages: int, format: str = COMPUTE_ONLY, rank: int = 0
) -> dict[int, list[str]]:
    """Load a CSV the way a PyTorch job does: ``_PipelineScheduleRuntime._load_csv`` on fake
    stages of ``rank`` (stage -> rank map from the file, validation, and for ``compute_only`` the
    UNSHARD/RESHARD, REDUCE_GRAD and SEND/RECV lowering). Returns the lowered lists as text;
    PyTorch's errors propagate (this is a conformance probe, not a parser).

    Example:
        >>> torch_runtime_load("tests/data/torch/zb1p_2rank_2stagep_compute.csv", 2, 8, 4)[0][:3]
        ['0UNSHARD', '2UNSHARD', '0F0']
    """
    sched = _schedules_module()
    v = num_stages // p
    stages = _fake_stages(p, v, rank, "loop")
    rt = sched._PipelineScheduleRuntime(stages, m)
    rt._load_csv(str(path), format=format)
    return {r: [str(a) for a in rt.pipeline_order_with_comms[r]] for r in sorted(rt.pipeline_order_with_comms)}


def torch_runtime_load_schedule(schedule: Schedule, format: str = COMPUTE_ONLY) -> dict[int, list[str]]:
    """Write a schedule with :func:`ppverify.io.torch_csv.save_csv` and load it with
    :func:`torch_runtime_load` (the round trip a user makes to run a ppverify schedule).

    Example:
        >>> from ppverify.schedules import build
        >>> [a for a in torch_runtime_load_schedule(build("1f1b", p=2, m=2))[1] if "SEND" in a]
        ['1SEND_B0', '1SEND_B1']
    """
    from .torch_csv import save_csv

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "schedule.csv"
        save_csv(schedule, path, format)
        return torch_runtime_load(path, schedule.p, schedule.m, schedule.num_stages, format)


def order_differences(a: Schedule, b: Schedule) -> list[tuple[int, int, str, str]]:
    """Where two schedules' programs differ, comparing compute ops only (idle slots and markers
    ignored): ``(device, position, op in a, op in b)``; ``"-"`` where one program is shorter.

    Example:
        >>> from ppverify.schedules import build
        >>> order_differences(build("gpipe", p=2, m=2), build("1f1b", p=2, m=2))
        [(1, 1, '1F1', '1B0'), (1, 2, '1B0', '1F1')]
    """
    out = []
    for d in range(max(a.p, b.p)):
        pa = [str(o) for o in compute_ops(a.programs[d])] if d < a.p else []
        pb = [str(o) for o in compute_ops(b.programs[d])] if d < b.p else []
        for k in range(max(len(pa), len(pb))):
            x = pa[k] if k < len(pa) else "-"
            y = pb[k] if k < len(pb) else "-"
            if x != y:
                out.append((d, k, x, y))
    return out


__all__ = [
    "SCHEDULE_1F1B_BUG",
    "TORCH_CLASSES",
    "TorchUnavailableError",
    "from_torch",
    "order_differences",
    "order_to_rows",
    "to_torch",
    "torch_available",
    "torch_lower",
    "torch_pipeline_order",
    "torch_runtime_load",
    "torch_runtime_load_schedule",
    "torch_schedule",
    "torch_simulated_steps",
    "torch_validate",
]
