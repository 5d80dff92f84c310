"""From what a user asks to an optimization :class:`~ppverify.optimize.Problem`: which backward
(split or full), the memory model applied to the costs, the memory cap in the cost model's units,
and the description printed with the result (:func:`summary_lines`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel, parse_costs
from ..core.memory_cap import UNLIMITED_LABEL
from ..core.placement import Placement
from .memory import DEFAULT_MEMORY_MODEL, parse_memory_model
from .problem import Problem


@dataclass(frozen=True)
class Request:
    """The options of one optimization, as text where the user gives text.

    ``costs_text`` is the ``--costs`` text (it decides ``backward="auto"``), ``memory_model`` and
    ``memory_cap`` the options of the same names (``None``: not given), ``preset_mode`` whether
    the costs come from a model preset (bytes; its activation memory is used unless a memory
    model is given), ``comm_text`` how the communication is named in the description.
    """

    costs_text: str | None = None
    backward: str = "auto"
    memory_model: str | None = None
    memory_cap: str | None = None
    objective: str = "makespan"
    sync: str = "eager"
    dp_allreduce: int = 0
    preset_mode: bool = False
    comm_text: str = "fixed delay 0"


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
        >>> req = Request(costs_text="F=1,I=1,W=1", memory_cap="4")
        >>> pr, info = build_problem(pl, 8, (0,) * 8, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(0), req)
        >>> pr.split, pr.memory_cap, info["placement"], info["backward"]
        (True, 4.0, 'linear', 'split')
    """
    named = parse_costs(request.costs_text) if request.costs_text else {}
    if request.backward == "auto":
        split = ("I" in named or "W" in named) or schedule_splits
    else:
        split = request.backward == "split"
    mm = parse_memory_model(request.memory_model or DEFAULT_MEMORY_MODEL)
    applied = bool(request.memory_model) or not request.preset_mode
    if applied:
        costs = mm.apply(costs)
    from ..core.memory_cap import parse_memory_cap

    # the one parser of every command; an explicit memory model's M_F in bytes converts a size
    mf_bytes = mm.bytes_per_activation if request.memory_model else None
    parsed = parse_memory_cap(request.memory_cap, costs, placement, stage_activation_bytes=mf_bytes)
    cap = None if parsed is None or parsed.unlimited else parsed.value
    info = {
        "placement": placement.name,
        "p": placement.p,
        "m": m,
        "stages": placement.num_stages,
        "costs": costs.label or "custom",
        "comm": request.comm_text,
        "memory_model": mm.name if applied else "the model preset's activation memory",
        "memory_cap": request.memory_cap,
        "memory_cap_label": parsed.describe() if parsed is not None else UNLIMITED_LABEL,
        "memory_cap_value": cap,
        "backward": "split" if split else "full",
        "sync": request.sync,
        "dp_allreduce": request.dp_allreduce or 0,
    }
    pr = Problem(
        placement, m, costs, comm, split, cap, request.objective, pipes, request.sync, request.dp_allreduce or 0
    )
    return pr, info


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
    return dataclasses.replace(problem, memory_cap=peak), dict(info, memory_cap=cap.text, memory_cap_label=label)


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
    lines = [
        f"problem    {info['placement']} placement, p={info['p']}, m={info['m']}, {info['stages']} stages, "
        f"{info['backward']} backward, costs {info['costs']}, {info['comm']}",
        f"memory     {info.get('memory_cap_label') or UNLIMITED_LABEL}, {info['memory_model']}",
        f"status     {res.status}" + (f" ({res.reason})" if res.reason else ""),
        f"{res.objective_name:<10} {val}",
        *([f"collective {res.collectives}"] if res.collectives else []),
        f"bound      {res.bound:.10g}{u}  (critical path {b['critical_path']:.10g}, device work {b['device_work']:.10g}, "
        f"memory window {b['memory_window']:.10g}"
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
) -> Any:
    """Solve ``problem`` with CP-SAT: the best schedule of its ops, or, given ``schedule``, the
    timing of that schedule's program order on every device (its makespan under the problem's
    costs, communication and cap). ``gap_limit``: stop the search within that relative gap (see
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
    )


def save_result(res: Any, problem: Problem, path: str) -> None:
    """Write the schedule of ``res`` as a ppverify JSON file with the problem's costs and
    communication (transfers and collectives too, so ``simulate`` and ``plot`` of the file
    reproduce the value); nothing when no schedule was found.

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
        >>> load_schedule(path).m
        2
    """
    if res.schedule is None:
        return
    from ..io.json_comm import CommSettings
    from ..io.json_format import save_json

    save_json(
        res.schedule,
        path,
        costs=problem.costs,
        comm=CommSettings(problem.comm, problem.sync, problem.dp_allreduce),
        comment=f"ppverify optimize: {res.status} {res.objective_name} {res.objective} bound {res.bound}",
    )


def result_text(
    res: Any, info: dict[str, Any], problem: Problem, chart_width: int | None = 100, table: bool = False
) -> str:
    """The text ``ppverify optimize`` prints: :func:`summary_lines`, the timeline as a chart
    ``chart_width`` columns wide (``None``: no chart) and, with ``table``, the schedule found as a
    slot table.

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
    if table and res.schedule is not None:
        from ..engines import format_table
        from ..engines import run as run_engine

        parts.append(format_table(run_engine(res.schedule, problem.costs, semantics="slot")))
    return "\n\n".join(parts)
