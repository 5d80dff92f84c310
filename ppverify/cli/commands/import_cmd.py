"""``ppverify import FILE.csv``: read a PyTorch pipelining CSV, show it and verify it.

Shows how the file was read (flavour, ranks, stages, microbatches, the stage -> rank map that was
inferred or given, counts of compute/comm/marker/idle cells) and the checks ppverify runs:

* structure: every F and B (or I and W) of every stage and microbatch exactly once, on the rank
  holding its stage, nothing out of range;
* order: the ranks' lists run to completion in order (no rank waits for an op queued behind its
  own wait: cross-stage violations and deadlocks), via the ``slot`` engine;
* the Z3 verifier (:func:`ppverify.verify.verify`): the properties it proves and each violation
  with the minimal set of ops that explains it, under ``buffered`` or ``rendezvous``
  point-to-point semantics (``--comm-semantics``), with the file's SEND/RECV when it has them;
* optionally (``--torch``) PyTorch's own ``_validate_schedule`` verdict, to show what it misses.

Then the timing of a valid file: the ``slot`` table's makespan, bubble ratio and peaks, and
PyTorch's simulator step count (``torch`` semantics). Exit code 0 when valid, 1 when not.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...dag import structural_problems
from ...engines import run
from ...errors import InvalidScheduleError, ParameterError
from ...ops import Comm, Marker, Op, Overlap
from ...schedule import Schedule
from .. import Command
from ..common import add_cost_arguments, costs_from_args, print_json

MAX_LISTED = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``FILE``, ``--placement``, ``-m``, ``--stages``, costs, ``--torch``, ``--json``."""
    parser.add_argument(
        "file",
        metavar="FILE.csv",
        nargs="?",
        default=None,
        help="a PyTorch pipelining CSV (compute_only or compute_comms)",
    )
    parser.add_argument(
        "--torch-class",
        default=None,
        metavar="NAME",
        help="instead of a file, build the action lists of one of PyTorch's schedule classes "
        "(GPipe, 1F1B, LoopedBFS, Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble, "
        "DualPipeV) with -p, -m and --v; needs torch",
    )
    parser.add_argument("-p", type=int, default=4, help="ranks for --torch-class (default 4)")
    parser.add_argument("--v", type=int, default=None, help="stages per rank for --torch-class")
    parser.add_argument(
        "--placement",
        default=None,
        help="stage -> rank map: linear, loop, v, or one rank per stage (e.g. 0,1,1,0); "
        "default: inferred from the rows",
    )
    parser.add_argument("-m", type=int, default=None, help="microbatches (default: largest index in the file + 1)")
    parser.add_argument(
        "--stages", type=int, default=None, help="number of stages (default: largest stage index in the file + 1)"
    )
    add_cost_arguments(parser)
    parser.add_argument(
        "--torch", action="store_true", help="also run PyTorch's own _validate_schedule (needs torch installed)"
    )
    parser.add_argument(
        "--comm-semantics",
        choices=("buffered", "rendezvous"),
        default="buffered",
        help="point-to-point semantics for the verifier's deadlock check: buffered (a SEND "
        "never blocks; default) or rendezvous (a SEND waits for its RECV, like NCCL)",
    )
    parser.add_argument(
        "--table",
        choices=("paper", "torch"),
        default=None,
        help="also print the slot table of a valid file: paper (device x tick) or torch (PyTorch's step x rank grid)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _counts(schedule: Schedule) -> dict[str, int]:
    out = {"compute": 0, "overlapped_cells": 0, "comm": 0, "marker": 0, "idle": 0}
    for prog in schedule.programs:
        for a in prog:
            if a is None:
                out["idle"] += 1
            elif isinstance(a, Op):
                out["compute"] += 1
            elif isinstance(a, Overlap):
                out["overlapped_cells"] += 1
                out["compute"] += len(a.ops)
            elif isinstance(a, Comm):
                out["comm"] += 1
            elif isinstance(a, Marker):
                out["marker"] += 1
    return out


def _z3_verdict(schedule: Schedule, costs: Any = None, comm_semantics: str = "buffered") -> Any:
    """The Z3 verifier's :class:`~ppverify.verify.Report`, or None when the verifier is not
    available (it is imported lazily: z3 is a dependency of the verifier only)."""
    try:
        from ...verify import verify
    except ImportError:
        return None
    return verify(schedule, costs, comm_semantics=comm_semantics)


def report(
    schedule: Schedule,
    costs_args: argparse.Namespace | None = None,
    with_torch: bool = False,
    comm_semantics: str = "buffered",
) -> dict[str, Any]:
    """Everything ``ppverify import`` prints, as a dict (``valid`` is the verdict).

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> r = report(parse_rows([["0F0", "0F1", "", "0B0", "", "0B1"], ["", "1F0", "1B0", "1F1", "1B1"]]))
        >>> r["valid"], r["slot"]["makespan"], r["torch_steps"]
        (True, 6.0, 11)
    """
    return _check(schedule, costs_args, with_torch, comm_semantics)[0]


def _check(
    schedule: Schedule, costs_args: argparse.Namespace | None, with_torch: bool, comm_semantics: str
) -> tuple[dict[str, Any], Any]:
    """The report and the slot timeline (None when the file cannot be timed)."""
    tl = None
    rep: dict[str, Any] = {
        "schedule": schedule.describe(),
        "format": schedule.params.get("format"),
        "ranks": schedule.p,
        "stages": schedule.num_stages,
        "microbatches": schedule.m,
        "placement": {"name": schedule.placement.name, "stage_to_rank": list(schedule.placement.maps[0])},
        "cells": _counts(schedule),
    }
    problems = structural_problems(schedule)
    rep["structure"] = {"ok": not problems, "problems": problems}
    from ...engines.torch_steps import comm_problems

    comms = comm_problems(schedule) if not problems else []
    rep["comms"] = {
        "ok": not comms,
        "problems": comms,
        "explicit": any(isinstance(a, Comm) for prog in schedule.programs for a in prog),
    }
    order: dict[str, Any] = {"ok": None, "problem": None}
    slot = None
    if not problems:
        try:
            costs = costs_from_args(costs_args, schedule) if costs_args is not None else None
            tl = run(schedule, costs, semantics="slot")
            order["ok"] = True
            slot = {
                "makespan": tl.makespan,
                "bubble_ratio": tl.bubble_ratio,
                "peak_activations": tl.peak_memory().tolist(),
                "time_unit": tl.time_unit,
            }
        except InvalidScheduleError as exc:
            order = {"ok": False, "problem": str(exc)}
    rep["order"] = order
    rep["slot"] = slot
    # verify what PyTorch would run: a compute_only file with SEND/RECV where its lowering puts
    # them (receives posted early), which matters under rendezvous semantics
    target, sendrecv = schedule, "from the file" if rep["comms"]["explicit"] else "derived"
    if not rep["comms"]["explicit"]:
        try:
            from ...engines.torch_steps import add_send_recv

            target, sendrecv = add_send_recv(schedule), "placed by PyTorch's lowering"
        except (InvalidScheduleError, ParameterError):
            pass  # the lowering itself deadlocks or cannot apply: verify the file as written
    z3 = _z3_verdict(target, None, comm_semantics)
    rep["verifier"] = (
        None
        if z3 is None
        else {
            "valid": z3.valid,
            "proved": [p for p, _ in z3.proved],
            "violations": [v.to_text() for v in z3.violations],
            "comm_semantics": comm_semantics,
            "send_recv": sendrecv,
        }
    )
    rep["torch_steps"] = None
    if not problems and order["ok"]:
        try:
            from ...engines.torch_steps import torch_step_count

            rep["torch_steps"] = torch_step_count(schedule)
        except (InvalidScheduleError, ParameterError) as exc:
            rep["torch_steps_problem"] = str(exc)
    if with_torch:
        from ...io.torch_interop import torch_validate

        msg = torch_validate(schedule)
        rep["pytorch_validate"] = {"ok": msg is None, "message": msg}
    rep["valid"] = bool(not problems and order["ok"] and not comms and (z3 is None or z3.valid))
    return rep, tl


def _print_problems(label: str, problems: list[str]) -> None:
    """A report line ``label  N problem(s):`` and the first ``MAX_LISTED`` problems."""
    print(f"{label:<14}{len(problems)} problem(s):")
    for p in problems[:MAX_LISTED]:
        print(f"  - {p}")
    if len(problems) > MAX_LISTED:
        print(f"  ... and {len(problems) - MAX_LISTED} more")


def _print(rep: dict[str, Any]) -> None:
    c = rep["cells"]
    pl = rep["placement"]
    print(f"file          {rep['schedule']}")
    print(
        f"read as       {rep['format']}: {rep['ranks']} ranks, {rep['stages']} stages, {rep['microbatches']} microbatches"
    )
    print(f"placement     {pl['name']}: stage -> rank {pl['stage_to_rank']}")
    print(
        f"cells         {c['compute']} compute ops ({c['overlapped_cells']} overlapped cells), "
        f"{c['comm']} send/recv, {c['marker']} markers, {c['idle']} idle"
    )
    st = rep["structure"]
    if st["ok"]:
        print("structure     ok: every F and B (or I+W) once, on its stage's rank")
    else:
        _print_problems("structure", st["problems"])
    cm = rep["comms"]
    if cm["explicit"]:
        if cm["ok"]:
            print("send/recv     ok: one SEND after each producer, one RECV before each consumer, across ranks")
        else:
            _print_problems("send/recv", cm["problems"])
    od = rep["order"]
    if od["ok"] is True:
        print("order         ok: every rank's list runs to completion in order")
    elif od["ok"] is False:
        print(f"order         {od['problem']}")
    else:
        print("order         not checked (fix the structure first)")
    vr = rep.get("verifier")
    if vr is not None:
        head = "VALID" if vr["valid"] else f"INVALID, {len(vr['violations'])} violation(s)"
        print(
            f"Z3 verifier   {head}; proved: {', '.join(vr['proved']) or 'nothing'} "
            f"({vr['comm_semantics']} semantics, SEND/RECV {vr['send_recv']})"
        )
        for v in vr["violations"][:MAX_LISTED]:
            print(f"  - {v}")
    if "pytorch_validate" in rep:
        pv = rep["pytorch_validate"]
        print("PyTorch       _validate_schedule " + ("accepts it" if pv["ok"] else f"rejects it: {pv['message']}"))
    if rep["slot"]:
        s = rep["slot"]
        print(
            f"slot table    makespan {s['makespan']:g} {s['time_unit']}, bubble {s['bubble_ratio']:.4f} (idle/total), "
            f"peak activations {[round(x, 4) for x in s['peak_activations']]}"
        )
    if rep["torch_steps"] is not None:
        note = (
            "; an overlapped cell counts as one step, PyTorch's simulator rejects them"
            if rep["cells"]["overlapped_cells"]
            else ""
        )
        print(f"torch steps   {rep['torch_steps']} (PyTorch's _simulate_comms_compute: every action one step{note})")
    elif rep.get("torch_steps_problem"):
        print(f"torch steps   n/a: {rep['torch_steps_problem']}")
    print("verdict       " + ("VALID" if rep["valid"] else "INVALID"))


def run_import(args: argparse.Namespace) -> int:
    """Load, check, print; 0 when valid, 1 when not."""
    from ...io import load_torch_file

    if args.torch_class:
        from ...io.torch_interop import torch_schedule

        if args.file:
            raise ParameterError("file", args.file, "give a file or --torch-class, not both")
        schedule = torch_schedule(args.torch_class, args.p, args.m if args.m is not None else args.p, args.v)
        if args.torch_class == "1F1B" and not args.json:
            from ...io.torch_interop import SCHEDULE_1F1B_BUG

            print(f"known bug     {SCHEDULE_1F1B_BUG}")
    elif args.file:
        schedule = load_torch_file(args.file, placement=args.placement, m=args.m, num_stages=args.stages)
    else:
        raise ParameterError("file", None, "give a PyTorch CSV file or --torch-class NAME")
    rep, tl = _check(schedule, args, args.torch, args.comm_semantics)
    if args.json:
        print_json(rep)
    else:
        _print(rep)
        if args.table and tl is not None:
            from ...engines.table import format_table

            print()
            print(format_table(tl, style=args.table))
    return 0 if rep["valid"] else 1


COMMAND = Command(
    "import",
    "read a PyTorch pipelining CSV, show it and verify it",
    add_arguments,
    run_import,
    description=__doc__.split("\n\n", 1)[1] if __doc__ else "",
)
