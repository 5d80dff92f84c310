#!/usr/bin/env python
"""Every performance figure of ppverify in one run, as a Markdown table (prints, never asserts).

Simulation figures are measured here (medians of repeated runs; ratios against PyTorch 2.13's
own simulator where one exists); the verifier and optimizer figures come from running
``scripts/bench_verify.py`` and ``scripts/bench_optimize.py`` in subprocesses (their output is
appended verbatim, and the table quotes the rows it can read from it). The machine load
(``os.getloadavg()``) is printed with every figure: on a shared machine medians still move.

    python scripts/bench_all.py --quick                     # minutes: smaller sizes, short limits
    python scripts/bench_all.py --out docs/performance.md   # everything; rewrite the docs table
    python scripts/bench_all.py --skip verify optimize      # simulation figures only
    python scripts/bench_all.py --others-quick              # full simulation sizes, short solver limits

``--out FILE`` replaces the text between ``<!-- bench_all:start -->`` and
``<!-- bench_all:end -->`` in FILE (the whole file when the markers are missing).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_simulate as bs

MARK_START, MARK_END = "<!-- bench_all:start -->", "<!-- bench_all:end -->"


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def median_time(fn, repeat: int, setup=None) -> tuple[float, object]:
    """``(median seconds, last result)`` of ``repeat`` runs (bench_simulate's timer)."""
    med, _, out = bs.timed(fn, repeat, setup)
    return med, out


def median_wall_cpu(fn, repeat: int) -> tuple[float, float, object]:
    """``(median wall seconds, median CPU seconds of this process, last result)`` of ``repeat`` runs
    (CPU time is what other processes on a loaded machine do not inflate as much)."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        out = None  # the previous result is freed before the clock starts
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def row(figure: str, measured: str, goal: str, met: bool | None) -> dict:
    return {
        "figure": figure,
        "measured": measured,
        "goal": goal,
        "met": "-" if met is None else ("yes" if met else "**no**"),
        "load": load(),
    }


def torch_figures(repeat: int) -> list[dict]:
    """Async engine and torch step semantics against PyTorch's ``_simulate_comms_compute`` on
    Interleaved1F1B p=32 m=256 v=2, runs alternated so that both see the same load."""
    from torch.distributed.pipelining import schedules as ts

    from ppverify.engines import run
    from ppverify.engines.torch_steps import _as_schedule, lowered, simulate_steps, torch_timeline

    p, m, v = 32, 256, 2
    order = bs.torch_interleaved_order(p, m, v)
    low_torch = ts._add_send_recv(copy.deepcopy(order), lambda s: s % p, p * v)
    schedule = bs.ppverify_schedule_from_torch(order, p, m, v)
    costs, sysm = bs.preset_models(p * v)
    run(schedule, costs, sysm)  # load the compiled kernels once (not a per-call cost)
    # the torch semantics on PyTorch's own order, idle slots included: the same step counts
    with_idle = _as_schedule(order)
    low_pp = lowered(with_idle)
    torch_timeline(with_idle)
    t_sim, t_low, t_async, t_steps, t_tl = [], [], [], [], []
    c_sim, c_async = [], []  # CPU seconds of the same runs (a loaded machine inflates them less)
    for _ in range(repeat):
        lists = copy.deepcopy(low_torch)
        t0, c0 = time.perf_counter(), time.process_time()
        sim = ts._simulate_comms_compute(lists, lambda s: s % p, p * v)
        t_sim.append(time.perf_counter() - t0)
        c_sim.append(time.process_time() - c0)
        t_low.append(
            median_time(lambda x: ts._add_send_recv(x, lambda s: s % p, p * v), 1, setup=lambda: copy.deepcopy(order))[
                0
            ]
        )
        t0, c0 = time.perf_counter(), time.process_time()
        run(schedule, costs, sysm)
        t_async.append(time.perf_counter() - t0)
        c_async.append(time.process_time() - c0)
        t, grid = median_time(lambda: simulate_steps(low_pp), 1)
        t_steps.append(t)
        t, tl = median_time(lambda: torch_timeline(with_idle), 1)
        t_tl.append(t)
    ts_, tl_, ta = statistics.median(t_sim), statistics.median(t_low), statistics.median(t_async)
    st, tt = statistics.median(t_steps), statistics.median(t_tl)
    cs, ca = statistics.median(c_sim), statistics.median(c_async)
    torch_steps = max(len(r) for r in sim.values())
    same = torch_steps == tl.info.steps == max(len(r) for r in grid)
    n = schedule.num_ops
    return [
        row(
            f"async vs PyTorch `_simulate_comms_compute`, Interleaved1F1B p={p} m={m} v={v} ({n:,} ops)",
            f"{ts_ / ta:.0f}x (PyTorch {ts_ * 1e3:.0f} ms, ppverify {ta * 1e3:.1f} ms, {ta / n * 1e6:.2f} us/op; "
            f"CPU time {cs / ca:.0f}x: {cs * 1e3:.0f} ms vs {ca * 1e3:.1f} ms)",
            ">= 100x",
            ts_ / ta >= 100,
        ),
        row(
            "`--semantics torch` step simulator vs PyTorch's, lowered lists given",
            f"{ts_ / st:.1f}x (PyTorch {ts_ * 1e3:.0f} ms, ppverify {st * 1e3:.0f} ms); steps {torch_steps} vs "
            f"{tl.info.steps}, {'same' if same else 'DIFFERENT'}",
            ">= 5x, same step counts",
            ts_ / st >= 5 and same,
        ),
        row(
            "`--semantics torch` end to end (lowering + simulation + timeline) vs PyTorch's "
            "`_add_send_recv` + simulator",
            f"{(ts_ + tl_) / tt:.1f}x (PyTorch {(ts_ + tl_) * 1e3:.0f} ms, ppverify {tt * 1e3:.0f} ms)",
            ">= 5x",
            (ts_ + tl_) / tt >= 5,
        ),
    ]


def scale_worker(m: int) -> None:
    """In a fresh process: generation, async and contention at interleaved-1f1b p=64 v=4."""
    from ppverify.engines import run
    from ppverify.schedules import build

    p, v = 64, 4
    t_gen, c_gen, s = median_wall_cpu(lambda: build("interleaved-1f1b", p=p, m=m, v=v), 5)
    costs, sysm = bs.preset_models(p * v, layers=p * v)
    t0 = time.perf_counter()
    run(s, costs, sysm)
    first = time.perf_counter() - t0
    t_async, c_async, _ = median_wall_cpu(lambda: run(s, costs, sysm), 5)
    t_cont, c_cont, _ = median_wall_cpu(lambda: run(s, costs, sysm, semantics="contention"), 3)
    print(
        json.dumps(
            {
                "ops": s.num_ops,
                "gen_s": t_gen,
                "gen_cpu_s": c_gen,
                "async_first_s": first,
                "async_s": t_async,
                "async_cpu_s": c_async,
                "contention_s": t_cont,
                "contention_cpu_s": c_cont,
                "max_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            }
        )
    )


def scale_figures(m: int) -> list[dict]:
    out = subprocess.run(
        [sys.executable, __file__, "--scale-worker", str(m)], capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    n = r["ops"]
    a, c = r["async_s"] / n * 1e6, r["contention_s"] / n * 1e6
    where = f"interleaved-1f1b p=64 v=4 m={m} ({n:,} ops), synthetic 256-layer model on dgx-h100"
    return [
        row(
            f"async engine per op, {where}",
            f"{a:.2f} us/op ({r['async_s']:.2f} s wall, {r['async_cpu_s'] / n * 1e6:.2f} us/op CPU; first call in "
            f"a process {r['async_first_s']:.2f} s incl. loading the compiled kernels)",
            "<= 0.5 us/op",
            a <= 0.5,
        ),
        row(
            f"contention engine per op, {where}",
            f"{c:.2f} us/op ({r['contention_s']:.2f} s wall, {r['contention_cpu_s'] / n * 1e6:.2f} us/op CPU)",
            "<= 2 us/op",
            c <= 2,
        ),
        row(
            f"schedule generation, {where}",
            f"{r['gen_s']:.2f} s wall ({r['gen_cpu_s']:.2f} s CPU)",
            "<= 0.5 s at 1,048,576 ops",
            r["gen_s"] <= 0.5 if n >= 2**20 else None,
        ),
    ]


def cli_cpu(args: list[str], repeat: int) -> tuple[float, float]:
    """Median CPU seconds (user + sys) and wall seconds of a ppverify command in a subprocess."""
    cpus, walls = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ppverify", *args], capture_output=True, check=False)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpus), statistics.median(walls)


def cli_figures(m: int, repeat: int, startup_repeat: int) -> list[dict]:
    cpu, wall = cli_cpu(
        [
            "simulate",
            "interleaved-1f1b",
            "-p",
            "64",
            "-m",
            str(m),
            "--v",
            "4",
            "--costs",
            "F=1,B=2",
            "--comm-delay",
            "0.5",
            "--no-table",
        ],
        repeat,
    )
    n = 64 * m * 4 * 2
    show_cpu, show_wall = cli_cpu(["show", "gpipe", "-p", "4", "-m", "4"], startup_repeat)
    sim_cpu, sim_wall = cli_cpu(
        ["simulate", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--comm-delay", "0.5"], startup_repeat
    )
    return [
        row(
            f"`ppverify simulate interleaved-1f1b -p 64 -m {m} --v 4` end to end ({n:,} ops)",
            f"{cpu:.2f} s CPU ({wall:.2f} s wall)",
            "<= 3 s CPU at 1,048,576 ops",
            cpu <= 3 if n >= 2**20 else None,
        ),
        row(
            "start-up: `ppverify show gpipe -p 4 -m 4`",
            f"{show_wall * 1e3:.0f} ms wall ({show_cpu * 1e3:.0f} ms CPU)",
            "within 10 % of before",
            None,
        ),
        row(
            "start-up: `ppverify simulate 1f1b -p 4 -m 8`",
            f"{sim_wall * 1e3:.0f} ms wall ({sim_cpu * 1e3:.0f} ms CPU)",
            "within 10 % of before",
            None,
        ),
    ]


def script_output(name: str, args: list[str], limit_s: float) -> str:
    try:
        out = subprocess.run([sys.executable, str(HERE / name), *args], capture_output=True, text=True, timeout=limit_s)
        return out.stdout + (
            f"\n(exit {out.returncode}: {out.stderr.strip().splitlines()[-1:]})" if out.returncode else ""
        )
    except subprocess.TimeoutExpired as e:
        got = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return got + f"\n(stopped after {limit_s:.0f} s)"


def verify_figures(text: str) -> list[dict]:
    """The 49,152 and 1,048,576-op rows of bench_verify's table (``ops path verdict wall CPU``), both
    paths (``z3``: the solver; ``cert``: checking a certificate)."""
    rows = []
    for ops, goal, limit in (("49152", "<= 3 s CPU", 3.0), ("1048576", "< 60 s, < 8 GB", 60.0)):
        hits = [ln for ln in text.splitlines() if re.search(rf"\s{ops}\s+(z3|cert)\s", ln)]
        if not hits:
            rows.append(
                row(f"Z3 verification, {int(ops):,} ops", "not in bench_verify's output (see below)", goal, None)
            )
            continue
        for ln in hits:
            f = ln.split()
            k = f.index(ops)
            try:
                cpu = float(f[k + 4])
            except (IndexError, ValueError):
                rows.append(row(f"Z3 verification, {int(ops):,} ops", ln.strip(), goal, None))
                continue
            rows.append(
                row(
                    f"verification, {' '.join(f[:k])} ({int(ops):,} ops, path {f[k + 1]})",
                    f"{f[k + 2]}, {cpu:.2f} s CPU ({f[k + 3]} s wall)",
                    goal,
                    cpu <= limit,
                )
            )
    return rows


#: one result line of bench_optimize: the row's key, goal, status, value, bound, gap, CPU s and the rest
OPT_LINE = re.compile(
    r"^\s*(?P<set>\w+)\s+(?P<plc>\w+)\s+(?P<p>\d+)\s+(?P<m>\d+)\s+(?P<c>\S+)\s+(?P<cap>\S+)\s+\S+\s+"
    r"(?P<goal>OPTIMAL <\d+s|gap<=[\d.]+% \d+s|reference)\s+(?P<status>OPTIMAL|FEASIBLE|UNKNOWN|INFEASIBLE)\s+"
    r"(?P<value>\S+)\s+(?P<bound>\S+)\s+(?P<gap>\S+)%\s+(?P<cpu>\S+)\s+\S+\s+(?P<rest>.*)$"
)


def goal_met(goal: str, status: str, gap: float, cpu: float, rest: str) -> bool | None:
    """Whether a bench_optimize row meets its goal (``OPTIMAL <Ns``: proven within N CPU s;
    ``gap<=X% Ns``: that gap within N CPU s, and never above a stated reference); None for a
    reference row.

    Example:
        >>> goal_met("OPTIMAL <30s", "OPTIMAL", 0.0, 20.7, "-"), goal_met("gap<=1% 120s", "FEASIBLE", 0.165, 431.3, "-")
        (True, False)
    """
    if goal == "reference":
        return None
    secs = float(goal.rsplit(" ", 1)[1].rstrip("s").lstrip("<"))
    if goal.startswith("OPTIMAL"):
        return status == "OPTIMAL" and cpu < secs
    limit = float(goal.split("<=", 1)[1].split("%", 1)[0])
    return status in ("OPTIMAL", "FEASIBLE") and gap <= limit and cpu <= secs and not rest.startswith(">")


def optimize_figures(text: str) -> list[dict]:
    """Each result line of bench_optimize (status, value, bound, gap, CPU s) as one row judged
    against its goal, then each capped ``scale`` row's CPU time against the same problem without a
    cap (``free``; goal: within 2x)."""
    rows, found = [], []
    for ln in text.splitlines():
        mt = OPT_LINE.match(ln)
        if not mt:
            continue
        g = mt.groupdict()
        gap, cpu = float(g["gap"]), float(g["cpu"])
        found.append(g)
        label = ", ".join(f"{k}={g[k]}" for k in ("set", "plc", "p", "m", "c", "cap")).replace("plc=", "placement=")
        measured = (
            f"{g['status']} {g['value']} (bound {g['bound']}, gap {gap:.3f} %), {cpu:.1f} s CPU; {g['rest'].strip()}"
        )
        rows.append(row(f"CP-SAT {label}", measured, g["goal"], goal_met(g["goal"], g["status"], gap, cpu, g["rest"])))
    for s in (g for g in found if g["set"] == "scale"):
        free = next(
            (g for g in found if g["set"] == "free" and (g["p"], g["m"], g["c"]) == (s["p"], s["m"], s["c"])), None
        )
        if free is not None and float(free["cpu"]) > 0:
            ratio = float(s["cpu"]) / float(free["cpu"])
            rows.append(
                row(
                    f"CP-SAT capped (to its goal, {s['goal'].split()[0]}) vs uncapped (to the proof) CPU time, "
                    f"p={s['p']}, m={s['m']}, c={s['c']}",
                    f"{ratio:.1f}x ({float(s['cpu']):.1f} s vs {float(free['cpu']):.1f} s)",
                    "<= 2x",
                    ratio <= 2,
                )
            )
    return rows or [row("CP-SAT rows", "none read (see the output below)", "see the issue's table", None)]


def make_test_figure() -> dict:
    t0 = time.perf_counter()
    r = subprocess.run(["make", "test"], cwd=HERE.parent, capture_output=True, text=True)
    t = time.perf_counter() - t0
    return row(
        "`make test` on this checkout",
        f"{t / 60:.1f} min (exit {r.returncode})",
        "<= 7 min incl. installs",
        t <= 420 and r.returncode == 0,
    )


def table(rows: list[dict]) -> str:
    out = ["| figure | measured | goal | met | load |", "|---|---|---|---|---|"]
    out += [f"| {r['figure']} | {r['measured']} | {r['goal']} | {r['met']} | {r['load']} |" for r in rows]
    return "\n".join(out)


def write_out(path: Path, text: str) -> None:
    old = path.read_text() if path.exists() else ""
    if MARK_START in old and MARK_END in old:
        head, rest = old.split(MARK_START, 1)
        text = head + MARK_START + "\n" + text + "\n" + MARK_END + rest.split(MARK_END, 1)[1]
    path.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes and short limits (a few minutes)")
    ap.add_argument("--repeat", type=int, default=None, help="runs per timed figure (default 5, quick 3)")
    ap.add_argument("--skip", nargs="*", default=[], choices=("torch", "scale", "cli", "verify", "optimize"))
    ap.add_argument("--make-test", action="store_true", help="also time `make test` (takes many minutes)")
    ap.add_argument(
        "--others-quick",
        action="store_true",
        help="full simulation sizes, but the verify and optimize scripts with --quick's limits",
    )
    ap.add_argument("--out", type=Path, default=None, help="also write the Markdown into this file")
    ap.add_argument("--scale-worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scale_worker is not None:
        scale_worker(args.scale_worker)
        return
    repeat = args.repeat or (3 if args.quick else 5)
    m_big = 256 if args.quick else 2048  # 131,072 or 1,048,576 ops
    start_load = os.getloadavg()
    rows: list[dict] = []
    outputs: list[tuple[str, str]] = []
    if "torch" not in args.skip:
        rows += torch_figures(repeat)
    if "scale" not in args.skip:
        rows += scale_figures(m_big)
    if "cli" not in args.skip:
        rows += cli_figures(m_big, repeat, 5 if args.quick else 10)
    quick_others = args.quick or args.others_quick
    if "verify" not in args.skip:
        text = script_output(
            "bench_verify.py", ["--limit-s", "60" if quick_others else "600"], 1800 if quick_others else 7200
        )
        outputs.append(("scripts/bench_verify.py", text))
        rows += verify_figures(text)
    if "optimize" not in args.skip:
        opt_args = ["--only", "unit", "--time-limit-unit", "10"] if quick_others else []
        text = script_output("bench_optimize.py", opt_args, 1800 if quick_others else 4 * 3600)
        outputs.append((" ".join(["scripts/bench_optimize.py", *opt_args]), text))
        rows += optimize_figures(text)
    if args.make_test:
        rows.append(make_test_figure())
    end_load = os.getloadavg()
    md = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {os.cpu_count()} CPUs"
        f"{' (--quick: smaller sizes)' if args.quick else ''}; load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.1f}' for x in start_load)} at the start, {', '.join(f'{x:.1f}' for x in end_load)} at "
        f"the end; times are medians of {repeat} runs; `load` is the 1-minute load average after each figure.",
        "",
        table(rows),
    ]
    for name, text in outputs:
        md += ["", f"Output of `{name}`:", "", "```text", text.rstrip(), "```"]
    text = "\n".join(md)
    print(text)
    if args.out:
        write_out(args.out, text)


if __name__ == "__main__":
    main()
