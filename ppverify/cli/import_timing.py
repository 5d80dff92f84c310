"""The cost model and communication that time ``ppverify import``'s slot table, read as ``show``
and ``simulate`` read them: ``--costs`` over a ppverify JSON file's own cost model (or a text
table's widths as drawn) over the default, ``--comm-delay`` over the file's stored fixed delay
(:mod:`.file_settings`).
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
    and ``simulate`` take them: ``--costs`` (else a ppverify JSON file's own cost model or a text
    table's widths as drawn, whatever the file's name, else the default ``F=1,B=2,I=1,W=1``) and
    ``--comm-delay`` (else the file's stored fixed delay, else none); and what was used, for the
    report.

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
    # a saved JSON file's own costs and comm, a text table's widths as drawn; by content, as import read it
    timing = file_timing(args.file or "", given, schedule, ctx, unsniffed="csv")
    print_notes(timing.notes)
    costs, comm = timing.ctx.costs, timing.ctx.comm
    sources = (("costs", "the file's"), ("drawn", "the table's cells"))
    source = next((s for k, s in sources if k in timing.from_file), "--costs" if args.costs else "default")
    label = costs.label or "custom"
    # a drawn label already says where it came from: F=1,B=2 (cells as drawn); unit does not
    text = label if "drawn" in timing.from_file and label.endswith(")") else f"{label} ({source})"
    charged = not isinstance(comm, FixedDelay) or comm.delay > 0
    if charged:
        delay = f"{comm.delay:g}" if isinstance(comm, FixedDelay) else "the file's system"
        where = "the file's" if "comm" in timing.from_file else "--comm-delay"
        text += f", comm {delay} per cross-device op ({where})"
    used = {
        "label": label,
        "source": source,
        "comm_delay_per_column": comm.delay if isinstance(comm, FixedDelay) else None,
        "text": text,
    }
    return costs, comm if charged else None, used
