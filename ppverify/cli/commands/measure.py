"""``ppverify measure FAMILY|FILE``: run a schedule for real in p worker processes, check its
gradients, time every op and compare with the prediction.

The schedule runs in PyTorch's own pipeline runtime (gloo, one process per device, this machine;
two-pipe schedules on ppverify's point-to-point runner). Every parameter gradient is compared with
a plain single-process forward/backward (exit 1 on a mismatch, naming stage and parameter). Each
op's start and end are recorded on one clock into a timeline (``--json``, ``--trace``,
``--frame``, ``--plot`` as for ``simulate``), printed next to the ``async`` engine's prediction
with the same costs (and, with ``--system PRESET``, the prediction calibrated to that preset's
runtime overhead and links, as written by ``ppverify calibrate``). ``--compute sleep`` (default): each op sleeps its cost (seconds per device
share, as in ``simulate --costs``); ``--compute real``: small real blocks. A hang is stopped after
``--timeout`` seconds with each rank's blocked action named (exit 1). Each rank's activation
memory over the step is recorded from the run itself (the tensors autograd saves, attributed to
stage and microbatch) and its per-device peak printed next to the predicted one, in bytes; the
files written carry the measured curve.
"""

from __future__ import annotations

import argparse
import sys

from .. import Command
from ..common import add_schedule_arguments, build_schedule, parsed_costs, print_json, schedule_source
from ..timeline_outputs import (
    add_timeline_outputs,
    chart_width,
    check_timeline_outputs,
    write_timeline_outputs,
    written_lines,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Schedule, costs, run and output options.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["1f1b", "-p", "2"])
        >>> ns.costs, ns.compute, ns.steps, ns.warmup, ns.timeout
        (None, 'sleep', 3, 1, 60.0)
    """
    add_schedule_arguments(parser, placement=True)  # a text table's --placement too
    g = parser.add_argument_group("measurement")
    g.add_argument(
        "--costs",
        default=None,
        help="op costs in seconds per device share, e.g. F=0.01,B=0.02 or F=0.01,I=0.01,W=0.01; a kind left out: F=0.01, "
        "B=2F, I=W=B/2 (default: a JSON schedule file's own costs at 10 ms a unit, else F=0.01,B=0.02; with --compute "
        "real the prediction then takes the op costs measured in the run)",
    )
    g.add_argument(
        "--compute",
        choices=("sleep", "real"),
        default="sleep",
        help="sleep: each op sleeps its cost (default); real: small real transformer-like blocks",
    )
    g.add_argument("--steps", type=int, default=3, help="measured steps (default 3)")
    g.add_argument("--warmup", type=int, default=1, help="unmeasured steps first (default 1)")
    g.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds before a run counts as hung (default 60; start-up not included)",
    )
    g.add_argument("--seed", type=int, default=0, help="seed of weights and data (default 0)")
    g.add_argument(
        "--format",
        choices=("compute_only", "compute_comms"),
        default=None,
        help="CSV flavour handed to PyTorch's runtime (default compute_only; a compute_comms file runs as written; "
        "two-pipe schedules read no CSV)",
    )
    g.add_argument(
        "--system",
        default=None,
        metavar="NAME|FILE",
        help="also print the prediction calibrated with this system preset (runtime overhead and "
        "links), e.g. one written by `ppverify calibrate`",
    )
    g.add_argument(
        "--link-delay",
        type=float,
        default=None,
        metavar="S",
        help="emulate a slower link: every cross-rank input reaches its op no earlier than S seconds "
        "after its SEND was posted; the predictions add S to every transfer (default: the --system "
        "preset's runtime.link_delay_us, else 0)",
    )
    g.add_argument(
        "--memory-cap",
        default=None,
        metavar="N|NMF|none",
        help="hold every device's measured activation memory to this cap: N activations (one "
        "microbatch on a device's share of stages) or N stage activations (NMF) of the run's own "
        "model; exit 1 over it",
    )
    out = add_timeline_outputs(parser)
    out.add_argument(
        "--profile",
        metavar="DIR",
        default=None,
        help="also record a torch.profiler trace of the measured steps in every worker: DIR/rank<r>.pt.trace.json "
        "(read back by `ppverify import-trace DIR`)",
    )
    g.add_argument(
        "--realtime",
        action="store_true",
        help="run the workers at real-time priority (SCHED_FIFO; root or CAP_SYS_NICE): other jobs do not delay them",
    )


def run(args: argparse.Namespace) -> int:
    """Measure and print (text or JSON); 0 ok, 1 gradient mismatch or hang, 129 SIGHUP.

    Example:
        Bad run options are refused before any worker process starts:

        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["1f1b", "-p", "2", "--steps", "0"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter steps=0: must be an integer in 1..10000
    """
    # a closed terminal's SIGHUP stops the run as SIGTERM does (ppverify.cli.signals raises Hangup,
    # the workers' clean-up runs on it, and main prints one line and exits 129)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ...measure import MeasureTimeout
    from ...measure.request import OPTIONS, hang_json, hang_text, measure_request
    from ...measure.summary import measure_text

    pairs = parsed_costs(args)  # read once, before the build
    schedule = build_schedule(schedule_source(args))
    options = {k: getattr(args, k) for k in OPTIONS}  # every one checked before any worker starts
    req = measure_request(schedule, args.schedule, dict(pairs) if pairs else None, **options)
    check_timeline_outputs(args)  # not after the run: a bad path is bad input
    if req.note:
        print(f"ppverify: note: {req.note}", file=sys.stderr)
    try:
        res = req.run()
    except MeasureTimeout as exc:
        print_json(hang_json(schedule, exc)) if args.json else print(hang_text(schedule, exc))
        return 1
    rep = req.report(res)
    write_timeline_outputs(args, res.timeline, rep, memory=res.memory)  # the measured memory curve too
    if args.json:
        print_json(rep)
    else:
        print(measure_text(schedule, res, rep, args.warmup, None if args.no_table else chart_width(args), req.system))
        for line in written_lines(args):
            print(line)
        if args.profile:
            print(f"{'profile':<13} torch.profiler traces written to {args.profile}/rank<r>.pt.trace.json")
    return 0 if res.grad_check.ok and not rep.get("over_memory_cap") else 1


COMMAND = Command(
    "measure",
    "run a schedule in PyTorch's real pipeline runtime: check gradients, time it vs the prediction",
    add_arguments,
    run,
    description=__doc__ or "",
)
