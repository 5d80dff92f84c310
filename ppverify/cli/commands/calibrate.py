"""``ppverify calibrate [--out FILE.yaml]``: measure this machine's pipeline runtime and write it
as a system preset.

Measures the point-to-point link between two gloo worker processes (a ping-pong over message
sizes: latency and bandwidth along their lower envelope) and the per-action overhead of PyTorch's pipeline
runtime (a few schedules whose ops sleep 5/10 ms: the overhead per compute action and per
SEND/RECV that makes ``simulate --semantics async`` reproduce the measured makespans; a separate
figure for ppverify's two-pipe runner) and, action by action, its hand-overs (gloo's rendezvous:
a RECV posted after its SEND costs a round trip; ``runtime.handover``), and writes a preset in
the schema of ``models/systems/`` (``runtime:`` section for the overheads). Use it
with ``simulate --system FILE.yaml --costs F=0.01,B=0.02`` to predict ``measure --compute sleep``.
Takes about a minute (``--quick``: about half).

``--from-trace DIR`` fits the same preset to a profiler trace instead (``measure --profile DIR``
or a PyTorch job's, see docs/traces.md), nothing run: op costs per stage and kind (median),
link from the transfers (bytes from the recorded shapes, else from ``--model`` or
``--boundary-bytes``), overheads and hand-over terms from the ``--fit-steps`` (default: all but
the last quarter of the recorded steps, at least 3 fitted: outlier rejection needs 3), and
prints the prediction of the other (held-out) steps, saying when none is left.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...core.errors import ParameterError
from .. import Command
from ..common import check_nonnegative, print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--out``, ``--quick``, ``--timeout``, ``--json``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["--quick", "-o", "mine.yaml"])
        >>> ns.out, ns.quick, ns.timeout, ns.from_trace
        ('mine.yaml', True, None, None)

    ``--timeout`` and ``--wait-quiet`` default to ``None`` (120 s and no wait when measuring), so
    that a trace fit, which runs nothing, sees them given and refuses them.
    """
    parser.add_argument(
        "--out", "-o", default=None, metavar="FILE.yaml", help="write the preset there (default: print it)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes, repeats and steps")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds allowed to each measured run before it counts as a hang (default 120)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the measured figures as one JSON object (without --out, the preset too: preset_text)",
    )
    parser.add_argument(
        "--wait-quiet", type=float, default=None, metavar="S", help="first wait up to S s for a quiet machine"
    )
    parser.add_argument(
        "--realtime",
        action="store_true",
        help="run the workers at real-time priority (SCHED_FIFO; root or CAP_SYS_NICE), as measure --realtime does: "
        "other jobs on the machine then barely move the figures",
    )
    t = parser.add_argument_group("from a profiler trace")
    t.add_argument("--from-trace", metavar="DIR|FILE", nargs="+", default=None, help="fit to these traces, run nothing")
    t.add_argument(
        "--fit-steps",
        default=None,
        metavar="N,N,...",
        help="ProfilerStep numbers to fit (default: all but the last quarter, at least 3)",
    )
    t.add_argument(
        "--schedule", default=None, metavar="FAMILY|FILE", help="the schedule the trace ran (two-pipe traces)"
    )
    t.add_argument("--model", metavar="NAME|FILE", help="LLM preset sizing a trace's transfers recorded without shapes")
    t.add_argument(
        "--microbatch-size", type=int, default=None, help="sequences per microbatch, with --model (default 1)"
    )
    t.add_argument("--seq-len", type=int, default=None, help="tokens per sequence, with --model (default: the model's)")
    t.add_argument("--boundary-bytes", metavar="SIZE", help="bytes of every stage boundary (no shapes), e.g. 128B")


def run(args: argparse.Namespace) -> int:
    """Measure, then print or write the preset.

    Example:
        Bad options are refused before anything is measured:

        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["--timeout", "0"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter timeout=0.0: must be a finite number of seconds in (0, 86400]
    """
    from ...core.files import atomic_write, check_output_path
    from ...measure.calibrate import preset_text
    from ...measure.calibrate_run import check_calibrate_mode, measure_calibration
    from ...measure.calibration_report import calibration_json, calibration_lines
    from ...measure.options import check_timeout

    # bad options are refused now, not after a minute of measuring
    check_calibrate_mode(vars(args), bool(args.from_trace))
    if args.timeout is not None:
        check_timeout(args.timeout)
    if args.wait_quiet is not None:
        check_nonnegative("wait-quiet", args.wait_quiet)
    if args.realtime:  # refused before --wait-quiet waits, not after
        from ...measure.realtime import check_realtime

        check_realtime(True)
    if args.out is not None:
        check_output_path(args.out, "--out")
        check_out_suffix(args.out)
    sized = (args.model, args.microbatch_size, args.seq_len, args.boundary_bytes)
    if args.from_trace or any(x is not None for x in sized):
        return _from_trace(args)
    cal = measure_calibration(args.quick, args.timeout, args.realtime, args.wait_quiet)
    name = Path(args.out).stem if args.out else "calibrated"
    text = preset_text(cal, name)
    if args.out:
        atomic_write(args.out, text, "--out")
    if args.json:
        print_json({**calibration_json(cal, args.out), **({} if args.out else {"preset_text": text})})
    elif args.out:
        print("\n".join(calibration_lines(cal)))
        print(f"wrote              {args.out}")
    else:
        print(text, end="")
    return 0


def check_out_suffix(out: str) -> None:
    """Refuse an ``--out`` that ``--system`` would not read back: the preset is YAML, and
    ``--system`` takes a file by its ``.yaml``/``.yml`` suffix (any case); checked before the
    minute of measuring, not after.

    Example:
        >>> check_out_suffix("lab.YML")
        >>> check_out_suffix("lab.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --out=lab.json: the preset is YAML, and --system reads a file named .yaml or .yml: give e.g. lab.yaml
    """
    path = Path(out)
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ParameterError(
            "--out",
            out,
            f"the preset is YAML, and --system reads a file named .yaml or .yml: give e.g. {path.stem or 'lab'}.yaml",
        )


def _from_trace(args: argparse.Namespace) -> int:
    from ...core.files import atomic_write
    from ...measure.calibration_report import held_out_lines, summary_lines, trace_fit_json
    from ...measure.trace_calibrate import from_trace, trace_notes
    from ...measure.trace_sizes import transfer_sizes

    # bad sizes (or sizes without a trace) are refused before any trace is read
    sizes = transfer_sizes(args.model, args.microbatch_size, args.seq_len, args.boundary_bytes, args.from_trace)
    name = Path(args.out).stem if args.out else "from-trace"
    fit, text, rows = from_trace(args.from_trace, args.schedule, args.fit_steps, name, sizes)
    for note in trace_notes(fit, rows, bool(args.fit_steps), sizes):  # recorded shapes won, too few steps
        print(f"ppverify: note: {note}", file=sys.stderr)
    if args.out:
        atomic_write(args.out, text, "--out")
    if args.json:
        print_json({**trace_fit_json(fit, rows, args.out), **({} if args.out else {"preset_text": text})})
    elif args.out:
        print("\n".join(summary_lines(fit, text, rows)))
        print(f"wrote              {args.out}")
    else:  # the held-out steps as comments: the preset stays one YAML document on standard output
        print(text, end="")
        print("".join(f"# {line}\n" for line in held_out_lines(fit, rows)), end="")
    return 0


COMMAND = Command(
    "calibrate",
    "measure this machine's pipeline runtime overhead and link; write a system preset",
    add_arguments,
    run,
    description=__doc__.split("\n\n", 1)[1] if __doc__ else "",
)
