"""The cost model and communication that time ``ppverify import``'s slot table, read as ``show``
and ``simulate`` read them: ``--costs`` over a ppverify JSON file's own cost model over the
default, ``--comm-delay`` over the file's stored fixed delay (:mod:`.file_settings`).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..core.comm import CommModel, FixedDelay
from ..core.costs import CostModel
from ..core.schedule import Schedule
from ..systems.preset_models import PresetContext
from .cost_args import check_nonnegative, costs_from_args
from .file_settings import FileOverrides, file_timing, print_notes


def import_timing(args: argparse.Namespace, schedule: Schedule) -> tuple[CostModel, CommModel | None, dict[str, Any]]:
    """The cost model and per-column communication that time ``schedule``'s slot table, as ``show``
    and ``simulate`` take them: ``--costs`` (else a ppverify JSON file's own cost model, else the
    default ``F=1,B=2,I=1,W=1``) and ``--comm-delay`` (else the file's stored fixed delay, else
    none); and what was used, for the report.

    Example:
        >>> from ppverify.schedules import build
        >>> ns = argparse.Namespace(file=None, costs="F=1,B=3", comm_delay=1.0)
        >>> costs, comm, used = import_timing(ns, build("1f1b", p=2, m=2))
        >>> costs.duration["B"], comm.delay, used["text"]
        ((3.0, 3.0), 1.0, 'F=1,B=3,I=1.5,W=1.5 (--costs), comm 1 per cross-device op (--comm-delay)')
    """
    check_nonnegative("comm-delay", args.comm_delay)
    ctx = PresetContext(costs_from_args(args, schedule), FixedDelay(args.comm_delay or 0.0))
    given = FileOverrides(bool(args.costs), args.comm_delay is not None)
    timing = file_timing(args.file or "", given, schedule, ctx)  # a saved JSON file's own costs and comm
    print_notes(timing.notes)
    costs, comm = timing.ctx.costs, timing.ctx.comm
    source = "the file's" if "costs" in timing.from_file else "--costs" if args.costs else "default"
    text = f"{costs.label or 'custom'} ({source})"
    charged = not isinstance(comm, FixedDelay) or comm.delay > 0
    if charged:
        delay = f"{comm.delay:g}" if isinstance(comm, FixedDelay) else "the file's system"
        where = "the file's" if "comm" in timing.from_file else "--comm-delay"
        text += f", comm {delay} per cross-device op ({where})"
    used = {
        "label": costs.label or "custom",
        "source": source,
        "comm_delay_per_column": comm.delay if isinstance(comm, FixedDelay) else None,
        "text": text,
    }
    return costs, comm if charged else None, used
