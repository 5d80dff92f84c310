"""What a design prints and writes: the text report, the files of every frontier schedule
(``--save-dir``: ppverify JSON and PyTorch CSV, compute only and with SEND/RECV) and the frontier
plot (``--plot``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..core.limits import max_ops
from ..core.schedule import Schedule
from .design_file import is_design_result as is_design_result  # re-exported: read where a design is written
from .design_file import load_design as load_design
from .options import families_over_limit
from .points import NOT_RUN, FamilyPoint, same_time
from .run import Design
from .spec import stage_split


def _num(x: float | None, digits: int = 6) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _widths(head: Sequence[str], rows: Sequence[Sequence[str]], least: Sequence[int]) -> list[int]:
    return [max([least[i], len(head[i])] + [len(r[i]) for r in rows]) for i in range(len(head))]


def _budget(b: float) -> str:
    return "none" if math.isinf(b) else f"{b:g}"


def design_text(d: Design) -> str:
    """The report: the request, the frontier (peak, step time, bound, gap, placement, budget,
    start, Z3's verdict), then every family at its own peak beside the frontier's value there.

    Example:
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> d = design(DesignRequest(2, 2, "linear", "1,2", PresetSettings(costs="F=1,B=2"), Limits(5.0)), progress=False)
        >>> design_text(d).splitlines()[4].split()  # peak, time, bound, gap, placement, budget, start, Z3
        ['1', '12', '12', '0', '%', 'linear', '1', 'greedy-AW', 'valid']
    """
    rq = d.request
    st = rq.settings
    # without --costs the abstract default (F=1,B=2,I=1,W=1), said as such: "unit slots" is every
    # op lasting 1 (core/closed_form.py), which B = 2 is not
    default = d.setups[0].costs.label if d.setups else "F=1,B=2,I=1,W=1"
    costs = st.costs or (default if st.model is None else f"{st.system} / {st.model}")
    comm = f"delay {st.comm_delay:g}" if st.comm_delay is not None else ("system" if st.system else "none")
    lines = [
        f"design     p={rq.p} m={rq.m}  costs {costs}  comm {comm}  backward "
        f"{'split' if rq.split_backward else 'full'}  placements {', '.join(s.label for s in d.setups)}",
        f"points     {d.done} of {d.total} done{' (interrupted: the frontier of the points done)' if d.interrupted else ''}; "
        f"{f'{d.cut} cut by --time-limit {rq.limits.ceiling:g}{_optimal_anyway(d)}; ' if d.cut else ''}"
        f"{f'{d.skipped} skipped (bound no faster than a step found within the budget; --all-points); ' if d.skipped else ''}"
        f"work limit {rq.limits.work:g} per point"
        f"{f' (+{rq.limits.search_work:g} for a frontier point above the gap)' if rq.limits.search_work > 0 else ''}, gap limit "
        f"{'none' if rq.limits.gap is None else f'{100 * rq.limits.gap:g} %'}; times in {_time_unit(d)}; "
        f"peaks in {d.memory_unit()}",
        "frontier",
    ]
    # columns as wide as their widest entry (preset times in seconds take more digits than units)
    front: list[tuple[str, ...]] = [
        (
            _num(q.peak),
            _num(q.time, 8),
            _num(q.bound, 8),
            "-" if q.gap is None else f"{100 * q.gap:.3g} %",
            q.placement,
            d.budget_name(q.budget),  # as typed: inf stays inf, 1e9 is not 1e+09
            q.start or "-",  # whole: cut short, interleaved-zb and interleaved-1f1b read the same
            v,
        )
        for q, v in zip(d.front, d.verified)
    ]
    head: tuple[str, ...] = ("peak", "time", "bound", "gap", "placement", "budget", "start", "verified")
    w = _widths(head, front, (6, 9, 9, 8, 15, 6, 10, 0))
    for row in [head, *front]:
        lines.append(
            f"  {row[0]:>{w[0]}} {row[1]:>{w[1]}} {row[2]:>{w[2]}} {row[3]:>{w[3]}}  {row[4]:<{w[4]}} "
            f"{row[5]:>{w[5]}}  {row[6]:<{w[6]}} {row[7]}"
        )
    if not d.front:
        lines.append("  (no schedule found within the limits)")
    lines += _unscheduled(d)
    rows = d.family_rows()
    if d.families_cut:  # else a short list reads as every family there is
        lines.append(f"families   the run's --time-limit passed while they were timed: {len(rows)} of them listed")
    left = families_over_limit(d)
    if left:  # else a family missing for the limit reads as one that does not fit the design
        lines.append(
            f"families   left out, over the op limit of {max_ops()} (ppverify --max-ops N) or the memory limit "
            f"(--max-memory-gib X): "
            f"{', '.join(f'{name} (up to {n} ops)' for name, n in left)}"
        )
    if rows:
        split = stage_split(st)
        only = "" if split is None else f"those of {split} stages, as --layers-per-stage splits the model; "
        lines.append(f"families   ({only}frontier: its value at the family's peak; difference: frontier - family)")
        fam: list[tuple[str, ...]] = [
            (
                str(r["family"]),
                str(r["placement"]),
                _num(r["peak"]),
                _num(r["time"], 8),
                _num(r["frontier"], 8),
                _num(r["difference"], 6),
                f"  {r['note']}" if "note" in r else "",
            )
            for r in rows
        ]
        head = ("family", "placement", "peak", "time", "frontier", "difference", "")
        w = _widths(head, fam, (22, 15, 6, 9, 9, 10, 0))
        for row in [head, *fam]:
            lines.append(
                f"  {row[0]:<{w[0]}} {row[1]:<{w[1]}} {row[2]:>{w[2]}} {row[3]:>{w[3]}} "
                f"{row[4]:>{w[4]}} {row[5]:>{w[5]}}{row[6]}".rstrip()
            )
    return "\n".join(lines)


def design_json(d: Design) -> dict:
    """What ``design --json`` prints and ``--save-dir`` writes as ``design.json``: :meth:`Design.to_dict`
    with the costs used named (the default ``F=1,B=2,I=1,W=1`` when none was given: ``null`` said
    nothing; presets keep theirs as ``system`` and ``model``) and ``families_left_out``, the
    families over the op limit (:func:`families_over_limit`).

    Example:
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> d = design(DesignRequest(2, 2, "linear", "none", PresetSettings(), Limits(1.0)), progress=False)
        >>> out = design_json(d)
        >>> out["design"]["costs"], out["families_left_out"]
        ('F=1,B=2,I=1,W=1', [])
    """
    out = d.to_dict()
    st = d.request.settings
    if out["design"]["costs"] is None and st.system is None and st.model is None and d.setups:
        out["design"]["costs"] = d.setups[0].costs.label  # reads back as the same costs (load_design)
    out["families_left_out"] = [{"family": name, "ops": n} for name, n in families_over_limit(d)]
    return out


def _unscheduled(d: Design) -> list[str]:
    """The points searched or cut without a schedule, with their bounds: what a run the clock cut
    short has proven (a skipped point has its answer within its budget: not listed)."""
    rows = [
        (q.placement, d.budget_name(q.budget), q.status, _num(q.bound, 8), q.note)
        for q in d.points
        if q.time is None and not q.skipped
    ]
    if not rows:
        return []
    head = ("placement", "budget", "status", "bound", "note")
    w = _widths(head, rows, (15, 6, 10, 9, 0))
    out = ["no schedule (bound: no schedule of the placement within the budget is faster)"]
    for r in [head, *rows]:
        out.append(f"  {r[0]:<{w[0]}} {r[1]:>{w[1]}}  {r[2]:<{w[2]}} {r[3]:>{w[3]}}  {r[4]}".rstrip())
    return out


def _time_unit(d: Design) -> str:
    """What the step times count: seconds with presets, the cost model's units otherwise."""
    return d.setups[0].costs.time_unit if d.setups else "units"


def point_name(i: int, label: str, budget: float) -> str:
    """The file stem of frontier point ``i``.

    Example:
        >>> point_name(0, "loop:2", 3.0), point_name(4, "v", math.inf)
        ('frontier-00-loop2-budget3', 'frontier-04-v-budgetnone')
    """
    return f"frontier-{i:02d}-{label.replace(':', '')}-budget{_budget(budget)}"


def one_pipe(schedule: Schedule) -> bool:
    """Whether ``schedule`` has PyTorch's CSV (one pipe: each stage on one rank); a two-pipe one
    (bidirectional) is saved as ppverify JSON only.

    Example:
        >>> from ppverify.schedules import build
        >>> one_pipe(build("1f1b", 2, 4)), one_pipe(build("chimera", 2, 4))
        (True, False)
    """
    return schedule.placement.num_pipes == 1 and not any(schedule.pipe_of_mb)


def save_design(d: Design, directory: str | Path) -> list[Path]:
    """Write every frontier schedule as ppverify JSON (with its costs) and PyTorch CSV
    (``.compute_only.csv`` and ``.compute_comms.csv``; one-pipe schedules only, :func:`one_pipe`),
    plus ``design.json`` (the result); returns the schedule files. Every file loads with every command.

    Example:
        >>> import tempfile
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> d = design(DesignRequest(2, 2, "linear", "2", PresetSettings(costs="F=1,B=2"), Limits(5.0)), progress=False)
        >>> [p.name for p in save_design(d, tempfile.mkdtemp())]
        ['frontier-00-linear-budget2.json', 'frontier-00-linear-budget2.compute_only.csv', 'frontier-00-linear-budget2.compute_comms.csv']
    """
    import json

    from ..core.files import atomic_write, prepare_output_dir
    from ..io.json_comm import CommSettings
    from ..io.json_format import save_json
    from ..io.torch_csv import COMPUTE_COMMS, COMPUTE_ONLY, save_csv
    from ..io.torch_rules import check_runnable
    from .points import point_problem

    out = prepare_output_dir(directory, "--save-dir")
    by_label = {s.label: s for s in d.setups}
    written: list[Path] = []
    for i, q in enumerate(d.front):
        if q.schedule is None:
            continue
        stem = point_name(i, q.placement, q.budget)
        note = f"ppverify design p={d.request.p} m={d.request.m}: {q.placement} budget {_budget(q.budget)}, time {q.time:g}, bound {q.bound:g}"
        size = d.activation_bytes()
        if size is not None and not math.isinf(q.budget):
            # verify's plain --memory-cap follows the file's own stages, which --layers-per-stage can split unevenly
            note += f"; budget in bytes: verify FILE --memory-cap {math.ceil(q.budget * size)}B"
        # the costs and the communication it was designed with: every command then times it as design did
        pr = point_problem(by_label[q.placement], q.budget, d.request.m)
        comm = CommSettings(pr.comm, pr.sync, pr.dp_allreduce)
        written.append(
            save_json(q.schedule, out / f"{stem}.json", pr.costs, comment=note, comm=comm, flag="--save-dir")
        )
        if not one_pipe(q.schedule):
            continue  # PyTorch's CSV maps each stage to one rank: a two-pipe schedule has no CSV
        # never fires (the optimizer orders each stage's microbatches per kind): a CSV PyTorch's
        # runtime would fail on is refused rather than written
        check_runnable(q.schedule, f"; {stem}.json is written, its CSVs are not")
        for flavour in (COMPUTE_ONLY, COMPUTE_COMMS):
            path = out / f"{stem}.{flavour}.csv"
            save_csv(q.schedule, path, flavour, "--save-dir")
            written.append(path)
    atomic_write(out / "design.json", json.dumps(design_json(d), indent=1) + "\n", "--save-dir")
    _drop_earlier_frontiers(out, written)
    return written


def _drop_earlier_frontiers(out: Path, written: Sequence[Path]) -> None:
    """Remove the frontier files an earlier design left in ``out`` (named as :func:`point_name`
    names them, not written now): beside this run's ``design.json`` they would pass for its
    frontier (a run of 6 frontier points, then one of 2 in the same folder, left 4 strangers)."""
    import re

    mine = {p.name for p in written}
    named = re.compile(
        r"frontier-\d{2,}-[A-Za-z0-9]+-budget(none|[0-9.e+-]+)\.(json|compute_only\.csv|compute_comms\.csv)"
    )
    for f in out.iterdir():
        if f.name not in mine and named.fullmatch(f.name) and f.is_file():
            f.unlink()


def saved_text(written: Sequence[Path]) -> str:
    """What :func:`save_design` wrote, in words: the schedules, and which have PyTorch's CSV.

    Example:
        >>> saved_text([Path("a.json"), Path("a.compute_only.csv"), Path("a.compute_comms.csv"), Path("b.json")])
        '2 frontier schedules (JSON; CSV for the 1 of one pipe: a two-pipe schedule has none)'
        >>> saved_text([Path("a.json"), Path("a.compute_only.csv"), Path("a.compute_comms.csv")])
        '1 frontier schedules (JSON and CSV)'
    """
    n = sum(p.suffix == ".json" for p in written)
    csv = sum(p.name.endswith(".compute_only.csv") for p in written)
    both = (
        "JSON and CSV"
        if csv == n
        else "JSON only: a two-pipe schedule has no PyTorch CSV"
        if csv == 0
        else f"JSON; CSV for the {csv} of one pipe: a two-pipe schedule has none"
    )
    return f"{n} frontier schedules ({both})"


def plot_design(d: Design, path: str | Path) -> Path:
    """The frontier as a step line over (peak, step time), every point searched in grey, the
    families as labelled markers.

    Example:
        >>> import tempfile, os
        >>> from ppverify.design.run import DesignRequest, design
        >>> from ppverify.design.spec import Limits
        >>> from ppverify.systems.preset_models import PresetSettings
        >>> d = design(DesignRequest(2, 2, "linear", "1,2", PresetSettings(costs="F=1,B=2"), Limits(5.0)), progress=False)
        >>> plot_design(d, os.path.join(tempfile.mkdtemp(), "f.png")).suffix
        '.png'
    """
    from ..report.labels import place_labels
    from ..report.plots import check_plot_path, plt, save_figure

    target = check_plot_path(path, "--plot")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    searched = [(q.peak, q.time) for q in d.points if q.time is not None and q.peak is not None and not q.skipped]
    ax.scatter([x for x, _ in searched], [y for _, y in searched], color="#bbbbbb", s=14, label="points searched")
    front = [(q.peak, q.time, q.bound) for q in d.front if q.time is not None and q.peak is not None]
    if front:
        xs = [x for x, _, _ in front]
        ys = [y for _, y, _ in front]
        ax.step(xs, ys, where="post", color="#C44E52", lw=2, label="frontier")
        ax.scatter(xs, ys, color="#C44E52", s=30, zorder=3)
        ax.errorbar(
            xs,
            ys,
            yerr=[[y - bound for _, y, bound in front], [0.0] * len(front)],
            fmt="none",
            color="#C44E52",
            alpha=0.4,
        )
    labels = family_labels(d.families)
    for peak, step in labels:
        ax.scatter([peak], [step], marker="x", color="#4C72B0", s=30)
    ax.set_xlabel(f"peak, in {d.memory_unit()}")
    ax.set_ylabel(f"step time ({d.setups[0].costs.time_unit if d.setups else 'units'})")
    ax.set_title(f"design p={d.request.p} m={d.request.m}: frontier and families", fontsize=10)
    ax.legend(fontsize=8)
    # last, once the limits and the legend are fixed: families crowd one peak (1F1B, ZB-H1, ZB-V ...)
    place_labels(ax, [(peak, step, names) for (peak, step), names in labels.items()])
    save_figure(fig, target, "--plot")
    return target


def family_labels(fams: Sequence[FamilyPoint]) -> dict[tuple[float, float], str]:
    """The families by their (peak, step) point, the names of those on one point joined: drawn one
    over another they read as neither (chimera and dualpipe, 1f1b-split and v-min at p = 2).

    Example:
        >>> family_labels([FamilyPoint("chimera", "bidirectional", 3.0, 12.0, None),
        ...                FamilyPoint("dualpipe", "bidirectional", 3.0, 12.000000000000002, None)])
        {(3.0, 12.0): 'chimera, dualpipe'}
    """
    out: dict[tuple[float, float], list[str]] = {}
    for f in fams:
        key = next((k for k in out if k[0] == f.peak and same_time(k[1], f.time)), (f.peak, f.time))  # peaks: exact
        out.setdefault(key, []).append(f.family)
    return {k: ", ".join(v) for k, v in out.items()}


def _optimal_anyway(d: Design) -> str:
    """The cut points not started at all (counted as done, they hold no search), and those proven
    optimal all the same: their time and bound stand whatever the clock (only which optimal
    schedule was kept may differ with machine load)."""
    n = sum(q.cut and q.status == "OPTIMAL" for q in d.points)
    late = sum(q.note.startswith(NOT_RUN) for q in d.points)
    parts = ([f"{late} of them not started"] if late else []) + (
        [f"{n} of them proven optimal all the same"] if n else []
    )
    return f" ({', '.join(parts)})" if parts else ""
