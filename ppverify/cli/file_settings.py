"""What a ppverify JSON schedule file says about its own timing: the cost model (``show --save``,
``optimize --save``) and the communication and collectives (``optimize --save``). ``simulate`` and
``plot`` of such a file use them unless the command line says otherwise, so they reproduce the
value the file was saved with.

Precedence: ``--system/--model`` replace both; ``--costs`` replaces the cost model (and a stored
system, whose times are seconds); ``--comm-delay`` replaces the communication; ``--sync`` and
``--dp-allreduce`` replace the stored collectives.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

from ..core.comm import FixedDelay
from ..core.errors import ScheduleFileError
from ..core.schedule import Schedule
from .presets_args import PresetContext


def add_collective_arguments(group: argparse._ArgumentGroup, sync_default: str | None = None) -> None:
    """``--sync`` and ``--dp-allreduce``: the collectives that end a step, as ``simulate`` and
    ``verify --makespan-le`` take them (unset, a saved file's own settings or the defaults);
    ``optimize`` and ``gap`` read no saved settings and pass ``sync_default="eager"``.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_collective_arguments(p.add_argument_group("x"))
        >>> a = p.parse_args(["--dp-allreduce"]); a.sync, a.dp_allreduce
        (None, 2)
    """
    from ..core.comm import SYNC_MODES

    saved = "" if sync_default is not None else ", or what a saved file says"
    group.add_argument(
        "--sync",
        choices=SYNC_MODES,
        default=sync_default,
        help="weight-gradient all-reduce between stage replicas (Chimera): eager (as soon as "
        f"a stage's last backward ends; default{saved}), after-flush, or none",
    )
    group.add_argument(
        "--dp-allreduce",
        type=int,
        nargs="?",
        const=2,
        default=0,
        metavar="N",
        help="end the step with a data-parallel gradient all-reduce among N pipeline replicas "
        "(N defaults to 2 when the flag is given)",
    )


@dataclass(frozen=True)
class Timing:
    """Everything an engine run needs besides the schedule, and where it came from."""

    ctx: PresetContext
    sync: str = "eager"
    dp_allreduce: int = 0
    #: which settings came from the file (``costs``, ``comm``), for the report
    from_file: tuple[str, ...] = ()


def timing_from_file(args: argparse.Namespace, schedule: Schedule, ctx: PresetContext) -> Timing:
    """Apply the file's stored settings to ``ctx`` where the arguments leave them open.

    Example:
        >>> import tempfile, os
        >>> from ppverify.schedules import build
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.json_format import save_json
        >>> from ppverify.io.json_comm import CommSettings
        >>> s = build("gpipe", p=2, m=2)
        >>> f = save_json(s, os.path.join(tempfile.mkdtemp(), "s.json"), CostModel.abstract(s.placement, F=1, B=2),
        ...               comm=CommSettings(FixedDelay(1.5), "after-flush"))
        >>> ns = argparse.Namespace(schedule=str(f), costs=None, comm_delay=None, sync=None, dp_allreduce=0)
        >>> t = timing_from_file(ns, s, PresetContext(CostModel.unit(s.placement), FixedDelay(0.0)))
        >>> t.ctx.comm.delay, t.ctx.costs.duration["B"], t.sync, t.from_file
        (1.5, (2.0, 2.0), 'after-flush', ('costs', 'comm'))
    """
    sync, dp = getattr(args, "sync", None), getattr(args, "dp_allreduce", 0) or 0
    path = str(getattr(args, "schedule", "") or "")
    if not path.lower().endswith(".json") or ctx.preset_mode:
        return Timing(ctx, sync or "eager", dp)
    from ..core.files import read_text
    from ..io import sniff_format
    from ..io.json_format import read_json

    if sniff_format(read_text(path)) != "json":  # read by its content: a CSV named .json holds no settings
        return Timing(ctx, sync or "eager", dp)

    doc = read_json(path)
    used = []
    if doc.costs is not None and not getattr(args, "costs", None):
        if doc.costs.num_stages != schedule.num_stages:
            raise ScheduleFileError(
                path, "costs", f"describes {doc.costs.num_stages} stages; the placement has {schedule.num_stages}"
            )
        ctx = replace(ctx, costs=doc.costs, base_costs=None)
        used.append("costs")
    stored = doc.comm
    if stored is not None:
        # a stored system times transfers in seconds: only with the file's own (seconds) costs
        fits = isinstance(stored.comm, FixedDelay) or "costs" in used
        if getattr(args, "comm_delay", None) is None and fits:
            system = None if isinstance(stored.comm, FixedDelay) else stored.comm
            ctx = replace(ctx, comm=stored.comm, system=system)
            used.append("comm")
        sync = sync or stored.sync
        dp = dp or stored.dp_allreduce
    return Timing(ctx, sync or "eager", dp, tuple(used))
