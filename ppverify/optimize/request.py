"""From what a user asks to an optimization :class:`~ppverify.optimize.Problem`: the options read
once into a typed :class:`Request` (:func:`optimize_request`), which backward (split or full), the
memory model applied to the costs, the memory cap in the cost model's units, and the description
printed with the result (:func:`summary_lines`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel, parse_costs
from ..core.memory_cap import UNLIMITED_LABEL, CapSpec
from ..core.placement import Placement
from .memory import DEFAULT_MEMORY_MODEL, MemoryModel, parse_memory_model
from .problem import Problem


@dataclass(frozen=True)
class Request:
    """The options of one optimization, typed: build it from the command line's text with
    :func:`optimize_request`, the one place that reads it.

    ``costs`` are the ``--costs`` given, as ``(kind, cost)`` pairs (they decide
    ``backward="auto"``; ``None``: not given), ``memory_model`` the ``--memory-model`` read
    (``None``: not given, the default model), ``memory_cap`` the ``--memory-cap`` read
    (:class:`~ppverify.core.memory_cap.CapSpec`, resolved in the problem's cost model),
    ``preset_mode`` whether the costs come from a model preset (bytes; its activation memory is
    used unless a memory model is given), ``file_memory`` whether they come from a saved file
    (its activation memory, what ``simulate`` and ``verify`` of the file use, is kept unless a
    memory model is given), ``comm_text`` how the communication is named in the description.

    Example:
        >>> Request(costs=(("F", 1.0), ("I", 1.0))).backward
        'auto'
    """

    costs: tuple[tuple[str, float], ...] | None = None
    backward: str = "auto"
    memory_model: MemoryModel | None = None
    memory_cap: CapSpec | None = None
    objective: str = "makespan"
    sync: str = "eager"
    dp_allreduce: int = 0
    preset_mode: bool = False
    comm_text: str = "fixed delay 0"
    file_memory: bool = False


def optimize_request(
    costs: str | Sequence[tuple[str, float]] | None = None,
    backward: str = "auto",
    memory_model: str | None = None,
    memory_cap: str | None = None,
    objective: str = "makespan",
    sync: str = "eager",
    dp_allreduce: int = 0,
    preset_mode: bool = False,
    comm_text: str = "fixed delay 0",
) -> Request:
    """Read ``optimize``'s and ``gap``'s text options once into a :class:`Request`: ``--costs``
    (or the ``(kind, cost)`` pairs a command already read them into),
    ``--memory-model`` and ``--memory-cap``'s spelling (its size in the cost model's unit is
    :func:`build_problem`'s, per problem).

    Example:
        >>> req = optimize_request("F=1,I=1,W=1", memory_model="w-frees-all", memory_cap="8MF")
        >>> req.costs, req.memory_model.name, req.memory_cap.kind
        ((('F', 1.0), ('I', 1.0), ('W', 1.0)), 'w-frees-all', 'stage_activations')
    """
    from ..core.memory_cap import read_memory_cap

    return Request(
        (tuple(parse_costs(costs).items()) if isinstance(costs, str) else tuple(costs)) if costs else None,
        backward,
        parse_memory_model(memory_model) if memory_model else None,
        read_memory_cap(memory_cap),
        objective,
        sync,
        dp_allreduce,
        preset_mode,
        comm_text,
    )


def build_problem(
    placement: Placement,
    m: int,
    pipes: tuple[int, ...],
    costs: CostModel,
    comm: CommModel,
    request: Request,
    schedule_splits: bool = False,
) -> tuple[Problem, dict[str, Any]]:
    """The problem ``request`` asks for on these ops, and its description (what
    :func:`summary_lines` and ``--json`` print). ``schedule_splits``: the schedule the ops come
    from splits its backward (``backward="auto"`` then splits too).

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.placement import linear
        >>> pl = linear(4)
        >>> req = optimize_request("F=1,I=1,W=1", memory_cap="4")
        >>> pr, info = build_problem(pl, 8, (0,) * 8, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(0), req)
        >>> pr.split, pr.memory_cap, info["placement"], info["backward"]
        (True, 4.0, 'linear', 'split')
    """
    named = dict(request.costs or ())
    if request.backward == "auto":
        split = ("I" in named or "W" in named) or schedule_splits
    else:
        split = request.backward == "split"
    mm = request.memory_model or parse_memory_model(DEFAULT_MEMORY_MODEL)
    # the costs' own activation memory is kept where it is a preset's or a saved file's (an
    # optimize --save file of w-frees-all came back under the default zero-bubble model)
    applied = request.memory_model is not None or not (request.preset_mode or request.file_memory)
    if applied:
        costs = mm.apply(costs)
    from ..core.memory_cap import resolve_memory_cap

    # read once at the boundary; an explicit memory model's M_F in bytes converts a size
    mf_bytes = mm.bytes_per_activation if request.memory_model is not None else None
    spec = request.memory_cap
    parsed = None if spec is None else resolve_memory_cap(spec, costs, placement, stage_activation_bytes=mf_bytes)
    cap = None if parsed is None or parsed.unlimited else parsed.value
    info = {
        "placement": placement.name,
        "p": placement.p,
        "m": m,
        "stages": placement.num_stages,
        "costs": costs.label or "custom",
        "comm": request.comm_text,
        "memory_model": mm.name if applied else kept_memory_label(costs, request.preset_mode, split),
        "memory_cap": None if spec is None else spec.text,
        "memory_cap_label": parsed.describe() if parsed is not None else UNLIMITED_LABEL,
        "memory_cap_value": cap,
        # the unit of memory_cap_value, the peaks and the bounds' memory figures, as simulate's JSON
        "memory_unit": costs.memory_unit,
        "backward": "split" if split else "full",
        "sync": request.sync,
        "dp_allreduce": request.dp_allreduce or 0,
    }
    pr = Problem(
        placement, m, costs, comm, split, cap, request.objective, pipes, request.sync, request.dp_allreduce or 0
    )
    return pr, info


def kept_memory_label(costs: CostModel, preset: bool, split: bool) -> str:
    """How the description names activation memory kept from the costs: a preset's, or a saved
    file's with the share its ``I`` frees (the zero-bubble default frees 63 %).

    Example:
        >>> from ppverify.core.placement import linear
        >>> pl = linear(2)
        >>> kept_memory_label(CostModel.abstract(pl, F=1, I=1, W=1, freed_by_I=0.25), False, True)
        "the file's activation memory (I frees 25 %, W the rest)"
        >>> kept_memory_label(CostModel.abstract(pl), True, False)
        "the model preset's activation memory"
    """
    if preset:
        return "the model preset's activation memory"
    shares = sorted(set(costs.freed_by_I))
    if not split or len(shares) != 1:
        return "the file's activation memory"
    return f"the file's activation memory (I frees {100 * shares[0]:.4g} %, W the rest)"


def own_peak_problem(problem: Any, info: dict[str, Any], peak: float) -> tuple[Any, dict[str, Any]]:
    """``problem`` capped at a family's own ``peak`` (in the cost model's unit), and its
    description saying so.

    Example:
        >>> from ppverify.optimize import Problem
        >>> from ppverify.core.placement import v_shape
        >>> pl = v_shape(4)
        >>> pr, info = own_peak_problem(Problem(pl, 8, CostModel.abstract(pl)), {}, 4.0)
        >>> pr.memory_cap, info["memory_cap_label"]
        (4.0, "cap 4 activations (8 stage activations, 2 stages per device): the family's own peak")
    """
    import dataclasses

    from ..core.memory_cap import cap_from_value

    cap = cap_from_value(peak, problem.costs, problem.placement)
    label = f"{cap.describe()}: the family's own peak"
    # memory_cap_value: the number, as build_problem gives it for a cap asked for
    info = dict(info, memory_cap=cap.text, memory_cap_label=label, memory_cap_value=peak)
    return dataclasses.replace(problem, memory_cap=peak), info


def summary_lines(res: Any, info: dict[str, Any]) -> list[str]:
    """The text report of an :class:`~ppverify.optimize.OptimizeResult` for the problem
    :func:`build_problem` described as ``info``.

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize import optimize
        >>> pl = linear(2)
        >>> pr, info = build_problem(pl, 2, (0, 0), CostModel.abstract(pl, F=1, B=2), FixedDelay(0), Request())
        >>> lines = summary_lines(optimize(pr, time_limit=10), info)
        >>> lines[2], lines[3]
        ('status     OPTIMAL', 'makespan   9')
    """
    u = "" if res.time_unit != "s" else " s"
    b = res.bounds
    val = "-" if res.objective is None else f"{res.objective:.10g}{u}"
    # the clock (or Ctrl-C) cut the bounds: those left at 0 were not computed, not proven 0
    cut = f"{res.solver.get('wall_limited', '')}, {res.solver.get('interrupted', '')}".split(", ")
    unknown = "bounds" in cut or "model building" in cut

    def bnd(name: str) -> str:
        return "-" if unknown and not b.get(name) else f"{b.get(name, 0):.10g}"

    lines = [
        f"problem    {info['placement']} placement, p={info['p']}, m={info['m']}, {info['stages']} stage{'' if info['stages'] == 1 else 's'}, "
        f"{info['backward']} backward, costs {info['costs']}, {info['comm']}",
        f"memory     {info.get('memory_cap_label') or UNLIMITED_LABEL}, {info['memory_model']}",
        f"status     {res.status}" + (f" ({res.reason})" if res.reason else ""),
        f"{res.objective_name:<10} {val}",
        *([f"collective {res.collectives}"] if res.collectives else []),
        f"bound      {res.bound:.10g}{u}  (critical path {bnd('critical_path')}, device work {bnd('device_work')}, "
        f"memory window {bnd('memory_window')}"
        + (f", one machine {b['one_machine']:.10g}" if b.get("one_machine") else "")
        + (f", device relaxation {b['device_relaxation']:.10g}" if b.get("device_relaxation") else "")
        + (f", memory cycle {b['memory_cycle']:.10g}" if b.get("memory_cycle") else "")
        + (f", warm-up {b['warmup']:.10g}" if b.get("warmup") else "")
        + ")",
        f"gap        {'-' if res.gap is None else f'{100 * res.gap:.2f}%'} to bound  (value - bound) / value",
        f"wall time  {res.wall_s:.1f} s  ({res.solver.get('workers', '-')} workers, seed {res.solver.get('seed', '-')}, "
        f"tick {res.tick:.10g}{'' if res.exact else ', durations rounded to ticks'})",
    ]
    if res.hint:
        lines.append(
            f"start      {res.hint}" + (f" ({res.hint_objective:.10g}{u})" if res.hint_objective is not None else "")
        )
    return lines


def solve(
    problem: Problem,
    schedule: Any = None,
    time_limit: float = 60.0,
    workers: int = 2,
    seed: int = 0,
    deadline: Any = None,
    gap_limit: float | None = None,
    work_limit: float | None = None,
    progress: Any = None,
    start: Any = None,
) -> Any:
    """Solve ``problem`` with CP-SAT: the best schedule of its ops (``start``, a schedule of the
    problem, among the starting schedules: the result is never slower than it within the cap),
    or, given ``schedule``, the timing of that schedule's program order on every device (its
    makespan under the problem's costs, communication and cap). ``gap_limit``: stop the search within that relative gap (see
    :func:`~ppverify.optimize.optimize`). ``work_limit`` (CP-SAT's deterministic seconds): the
    search stops on that work, in a fixed order (deterministic), with ``time_limit`` as a
    wall-clock ceiling; ``progress``: a :class:`~ppverify.optimize.solver_run.Progress`.
    Returns an :class:`~ppverify.optimize.OptimizeResult`.

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=2)
        >>> pr, _ = build_problem(s.placement, 2, (0, 0), CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0), Request())
        >>> solve(pr, s, time_limit=10).objective, solve(pr, time_limit=10).objective  # (m+p-1)(F+B): optimal
        (9.0, 9.0)
    """
    from .evaluate import evaluate
    from .solve import optimize

    if schedule is None:
        return optimize(
            problem,
            time_limit,
            workers,
            seed,
            deadline=deadline,
            gap_limit=gap_limit,
            work_limit=work_limit,
            deterministic=work_limit is not None,
            progress=progress,
            start=start,
        )
    return evaluate(
        schedule,
        problem.costs,
        problem.comm,
        problem.memory_cap,
        problem.objective,
        time_limit,
        workers,
        seed,
        problem.sync,
        problem.dp_allreduce,
        deadline=deadline,
        work_limit=work_limit,
        progress=progress,
    )


def save_result(res: Any, problem: Problem, path: str) -> None:
    """Write the schedule of ``res`` as a ppverify JSON file with the problem's costs and
    communication (transfers and collectives too, so ``simulate`` and ``plot`` of the file
    reproduce the value); nothing when no schedule was found (``--evaluate`` of an order that
    breaks the cap or was not timed in time has no value: the order is not a result to save).
    The file's comment gives the status, value and bound as printed, and the cap they hold for
    (the file keeps no cap: a command reading it back is given ``--memory-cap`` again).

    Example:
        >>> import os, tempfile
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.io import load_schedule
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize import optimize
        >>> pl = linear(2)
        >>> pr, _ = build_problem(pl, 2, (0, 0), CostModel.abstract(pl, F=1, B=2), FixedDelay(0), Request())
        >>> path = os.path.join(tempfile.mkdtemp(), "best.json")
        >>> save_result(optimize(pr, time_limit=10), pr, path)
        >>> import json
        >>> load_schedule(path).m, json.load(open(path))["comment"]  # (m+p-1)(F+B) = 9
        (2, 'ppverify optimize: OPTIMAL makespan 9 bound 9, unlimited memory')
    """
    if res.schedule is None or res.objective is None:
        return
    from ..io.json_comm import CommSettings
    from ..io.json_format import save_json

    comm = CommSettings(problem.comm, problem.sync, problem.dp_allreduce)
    save_json(res.schedule, path, problem.costs, comment=saved_comment(res, problem), comm=comm, flag="--save")


def saved_comment(res: Any, problem: Problem) -> str:
    """The comment :func:`save_result` writes: status, value and bound in the cost model's unit
    (as :func:`summary_lines` prints them) and the memory cap of the problem they belong to.

    Example:
        >>> from types import SimpleNamespace
        >>> from ppverify.core.placement import v_shape
        >>> pl = v_shape(2)
        >>> pr = Problem(pl, 4, CostModel.abstract(pl), memory_cap=1.5)
        >>> res = SimpleNamespace(status="FEASIBLE", objective_name="makespan", objective=0.1 + 0.2, bound=0.25, time_unit="units")
        >>> saved_comment(res, pr)
        'ppverify optimize: FEASIBLE makespan 0.3 bound 0.25, cap 1.5 activations (3 stage activations, 2 stages per device)'
    """
    from ..core.memory_cap import cap_from_value

    u = " s" if res.time_unit == "s" else ""
    cap = (
        UNLIMITED_LABEL
        if problem.memory_cap is None
        else cap_from_value(problem.memory_cap, problem.costs, problem.placement).describe()
    )
    return (
        f"ppverify optimize: {res.status} {res.objective_name} {res.objective:.10g}{u} bound {res.bound:.10g}{u}, {cap}"
    )


def result_text(
    res: Any,
    info: dict[str, Any],
    problem: Problem,
    chart_width: int | None = 100,
    table: bool = False,
    table_width: int | None = None,
) -> str:
    """The text ``ppverify optimize`` prints: :func:`summary_lines`, the timeline as a chart
    ``chart_width`` columns wide (``None``: no chart) and, with ``table``, the schedule found as a
    slot table, cut into blocks of at most ``table_width`` columns (``None``: one block), as
    ``show --width`` cuts its own.

    Example:
        >>> from ppverify.core.comm import FixedDelay
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize import optimize
        >>> pl = linear(2)
        >>> pr, info = build_problem(pl, 1, (0,), CostModel.abstract(pl, F=1, B=2), FixedDelay(0), Request())
        >>> print(result_text(optimize(pr, time_limit=10), info, pr, chart_width=6).split("\\n\\n")[1])
        time    0 .. 6 units, 1 per column
        dev 0  F...BB
        dev 1  .FBB..
    """
    parts = ["\n".join(summary_lines(res, info))]
    if res.timeline is not None and chart_width is not None:
        from ..core.timeline_text import gantt

        parts.append(gantt(res.timeline, chart_width))
    if table and res.schedule is not None and res.objective is not None:  # an order timed, not one refused
        from ..engines import format_table
        from ..engines import run as run_engine

        parts.append(format_table(run_engine(res.schedule, problem.costs, semantics="slot"), width=table_width))
    return "\n\n".join(parts)
