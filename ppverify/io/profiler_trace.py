"""Read the ``torch.profiler`` Chrome traces of a pipeline-parallel job: one file per rank.

PyTorch's ``export_chrome_trace`` writes one JSON object per rank (``.json``, or ``.json.gz``
compressed) with ``traceEvents`` and, under ``torch.distributed``, ``distributedInfo``
(``rank``, ``world_size``). What this module takes from each file:

* **actions**: the ranges ``_PipelineScheduleRuntime`` records around every action,
  ``record_function("PP:<action>")`` (``PP:0F1``, ``PP:1SEND_F0``, ``PP:0RECV_B2``,
  ``PP:0REDUCE_GRAD`` ...), and the older schedule classes' ``Forward i`` / ``Backward i``. Where
  the trace holds device-side copies (``cat: gpu_user_annotation``, the span of the kernels the
  range launched on a CUDA stream) those are the actions, in GPU time (an action whose name never
  has a device copy, having launched no kernel, keeps its host range); otherwise the host-side
  ``user_annotation`` ranges (launch time on a GPU, compute time on a CPU);
* **steps**: the ``ProfilerStep#N`` ranges that ``prof.step()`` records under a profiler
  ``schedule``; without them the k-th occurrence of an action belongs to step k;
* **transfers**: the point-to-point works each SEND/RECV action posted: host ranges
  ``gloo:send`` / ``gloo:recv`` / ``nccl:send`` / ``nccl:recv`` that start inside the action's host
  range (post to completion), and NCCL kernels (``cat: kernel``, ``nccl`` in the name) launched
  inside it (matched by ``correlation`` to their ``cudaLaunchKernel`` or ``cuLaunchKernel``);
  bytes from the recorded shapes (``record_shapes=True``) where present;
* **collectives**: barriers and all-reduces (``gloo:barrier``, ``nccl:all_reduce``, NCCL
  ``AllReduce`` kernels), used to put ranks of different hosts on one clock.

Times stay in each file's microseconds here; :func:`align` states how the ranks are put on one
clock. Bad files raise :class:`~ppverify.core.errors.ScheduleFileError` naming the file and the rule.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ScheduleFileError
from .trace_input import check_action, check_digits, correlation, gunzip, no_overlapping_compute, shorten

#: how to record actions, said when a trace has none
HOW_TO_RECORD = (
    "record with torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True, "
    "schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)) around "
    "_PipelineScheduleRuntime.step() and call prof.step() after each step "
    "(or `ppverify measure --profile DIR`)"
)
# digits are ASCII [0-9], as in ppverify's action text (core/ops.py): a str pattern's \d also takes other
# scripts' digits, which int() reads ("ProfilerStep#\u0663" as step 3) and no profiler writes
_STEP = re.compile(r"ProfilerStep#([0-9]+)$")
#: largest trace read, as a file and as the JSON text a ``.json.gz`` expands to: a GPU job's
#: trace of one rank (kernels, shapes) outgrows the 64 MiB of every other file ppverify reads
MAX_TRACE_BYTES = 256 * 2**20
#: a ``ts`` of at most this many microseconds (3,000 years from the epoch), a ``dur`` of at most
#: ``MAX_DUR_US`` (11.6 days): beyond them a number is not a time any profiler writes
MAX_TS_US, MAX_DUR_US = 1e17, 1e12
_LEGACY = re.compile(r"(Forward|Backward) ([0-9]+)$")
#: the older schedule classes' ``Forward i`` / ``Backward i`` ranges
LEGACY_ACTION = _LEGACY
#: a compute action (F, B, I, W, an overlapped cell, or the older classes' Forward i / Backward i)
COMPUTE_ACTION = re.compile(r"([0-9]+[FBIW][0-9]+|\(.*\)OVERLAP_F_B|(Forward|Backward) [0-9]+)$")
#: a step or older-class range numbered in any script's digits (\d), refused unless they are ASCII
_ANY_DIGITS = re.compile(r"(?:ProfilerStep#|(?:Forward|Backward) )\d+$")
_P2P_HOST = ("gloo:send", "gloo:recv", "nccl:send", "nccl:recv")
_COLLECTIVE_HOST = ("gloo:barrier", "gloo:all_reduce", "nccl:barrier", "nccl:all_reduce")
_DTYPE_BYTES = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
    "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
}  # fmt: skip
#: NCCL's dtype names (the ``dtype`` of a kernel's or ``record_param_comms``' args)
_NCCL_DTYPE_BYTES = {"Float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Int": 4, "Long": 8, "Byte": 1, "Char": 1}


@dataclass(frozen=True)
class Span:
    """One range of a trace: ``name``, ``start`` and ``end`` in the file's microseconds, and the
    bytes its tensors held (0 where no shapes were recorded).

    Example:
        >>> Span("PP:0F1", 10.0, 25.5).dur
        15.5
    """

    name: str
    start: float
    end: float
    nbytes: float = 0.0

    @property
    def dur(self) -> float:
        """Length in microseconds."""
        return self.end - self.start


@dataclass(frozen=True)
class Transfer:
    """A point-to-point work posted by a SEND or RECV action: ``action`` (e.g. ``1RECV_F0``),
    the work's span (post to completion, microseconds), and its bytes.

    Example:
        >>> Transfer("1RECV_F0", Span("gloo:recv", 5.0, 9.0, 128.0)).span.nbytes
        128.0
    """

    action: str
    span: Span


@dataclass(frozen=True)
class RankTrace:
    """What one rank's file holds: ``actions`` (names without ``PP:``, in start order; from the
    device side when ``side == "device"``), ``host_actions`` (the host-side ranges, for the
    works they posted), ``steps`` (``(N, start, end)`` of each ``ProfilerStep#N``),
    ``transfers``, ``collectives``, and the job's identity (``rank``, ``world_size``, ``host``).

    Example:
        >>> t = RankTrace("r0.json", 0, 2, "h", "host", (Span("0F0", 1.0, 2.0),), (), (), (), ())
        >>> t.action_names()
        ['0F0']
    """

    path: str
    rank: int
    world_size: int | None
    host: str | None
    side: str
    actions: tuple[Span, ...]
    host_actions: tuple[Span, ...]
    steps: tuple[tuple[int, float, float], ...]
    transfers: tuple[Transfer, ...]
    collectives: tuple[Span, ...]

    def action_names(self) -> list[str]:
        """The recorded actions' names, in start order."""
        return [a.name for a in self.actions]


def load_json(path: str | Path) -> dict[str, Any]:
    """The JSON object of a trace file, ``.json`` or gzip-compressed ``.json.gz``; a truncated or
    corrupt file raises :class:`ScheduleFileError` (one line: file, where, rule).

    Example:
        >>> load_json("/nonexistent/rank0.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: /nonexistent/rank0.json: file not found
    """
    from ..core.files import read_bytes

    raw = read_bytes(path, MAX_TRACE_BYTES)
    if not raw.strip():
        raise ScheduleFileError(str(path), "", "empty file: no trace")
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(str(path), raw, MAX_TRACE_BYTES)
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise ScheduleFileError(str(path), "", "not a JSON trace (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        ends_early = exc.pos >= len(raw.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        rule = f"truncated JSON: the file ends early ({exc.msg})" if ends_early else f"invalid JSON ({exc.msg})"
        raise ScheduleFileError(str(path), f"{exc.lineno}:{exc.colno}", rule) from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ScheduleFileError(str(path), "", "not a Chrome trace: expected an object with a traceEvents list")
    return data


def _nbytes(args: Any) -> float:
    if not isinstance(args, dict):
        return 0.0
    dims, types = args.get("Input Dims"), args.get("Input type")
    if isinstance(dims, list) and isinstance(types, list):
        total = 0.0
        for d, t in zip(dims, types):
            if isinstance(d, list) and all(isinstance(x, int) for x in d) and t in _DTYPE_BYTES:
                n = 1
                for x in d:
                    n *= x
                total += n * _DTYPE_BYTES[t]
        return total
    nelems = args.get("In msg nelems")
    size = _NCCL_DTYPE_BYTES.get(str(args.get("dtype", "")), 4)
    return float(nelems) * size if isinstance(nelems, (int, float)) else 0.0


def _innermost(ranges: Sequence[Span], starts: Sequence[float], t: float) -> Span | None:
    # the innermost (latest-starting) range containing time t; ranges sorted by start
    import bisect

    i = bisect.bisect_right(starts, t) - 1
    while i >= 0:
        r = ranges[i]
        if r.start <= t <= r.end:
            return r
        i -= 1
        if i >= 0 and t - ranges[i].start > 6e7:  # ranges are shorter than a minute: stop looking
            break
    return None


def read_rank_trace(path: str | Path, data: dict[str, Any] | None = None) -> RankTrace:
    """Read one rank's trace (see the module docstring for what is taken).

    Example:
        >>> import json, tempfile
        >>> ev = [{"ph": "X", "cat": "user_annotation", "name": "PP:0F0", "ts": 10, "dur": 5, "pid": 1, "tid": 1}]
        >>> f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        >>> _ = f.write(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": ev})); f.close()
        >>> t = read_rank_trace(f.name)
        >>> t.rank, t.side, t.actions
        (0, 'host', (Span(name='0F0', start=10.0, end=15.0, nbytes=0.0),))
    """
    path = str(path)
    if data is None:
        data = load_json(path)
    info = data.get("distributedInfo")
    rank = world = None
    if isinstance(info, dict):
        rank, world = info.get("rank"), info.get("world_size")
    host = data.get("host_name") if isinstance(data.get("host_name"), str) else None
    host_pp: list[Span] = []
    dev_pp: list[Span] = []
    steps: list[tuple[int, float, float]] = []
    works: list[Span] = []
    kernels: list[tuple[Span, Any]] = []
    launches: dict[Any, float] = {}
    collectives: list[Span] = []
    # host compute ranges of this rank, whatever their thread: the runtime issues every action
    # from one loop, so two that overlap on two threads (two traces merged) are no less impossible
    compute: list[tuple[Span, int]] = []
    step_at: dict[int, int] = {}  # step number -> its event's index
    for k, ev in enumerate(data["traceEvents"]):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        name, cat = ev.get("name"), ev.get("cat")
        if not isinstance(name, str):
            continue
        try:
            start = float(ev["ts"])
            dur = float(ev.get("dur", 0.0))
        except OverflowError:  # an integer past any float (10**400)
            raise ScheduleFileError(
                path, f"traceEvents[{k}]", f"event {shorten(name)} has a ts/dur out of range (past any float)"
            ) from None
        except (KeyError, TypeError, ValueError):
            raise ScheduleFileError(path, f"traceEvents[{k}]", f"event {name!r} has no numeric ts/dur") from None
        if (
            not (math.isfinite(start) and math.isfinite(dur))
            or isinstance(ev["ts"], bool)
            or isinstance(ev.get("dur"), bool)
        ):
            raise ScheduleFileError(
                path, f"traceEvents[{k}]", f"event {name!r} has a ts/dur that is not a finite number"
            )
        if abs(start) > MAX_TS_US or dur > MAX_DUR_US:  # 1e300 printed as 300 digits in a message, later
            raise ScheduleFileError(
                path,
                f"traceEvents[{k}]",
                f"event {shorten(name)} has ts {start:.6g} us and dur {dur:.6g} us: out of range (ts at most "
                f"{MAX_TS_US:g} us from the epoch, dur at most {MAX_DUR_US:g} us)",
            )
        if dur < 0:  # an end before the start would time the op as 0 and fit nonsense costs
            raise ScheduleFileError(path, f"traceEvents[{k}]", f"event {name!r} has a negative duration ({dur:g} us)")
        if "dur" not in ev and _is_read(name, cat):  # timed as 0 it fitted a cost of 0
            raise ScheduleFileError(
                path, f"traceEvents[{k}]", f"event {name!r} has no dur: a complete event (ph X) needs its duration"
            )
        end = start + dur
        if cat == "kernel":
            if "nccl" in name.lower():
                corr = correlation(path, k, ev)
                span = Span(name, start, end, _nbytes(ev.get("args")))
                kernels.append((span, corr))
                if "allreduce" in name.lower():
                    collectives.append(span)
            continue
        if cat in ("cuda_runtime", "cuda_driver") and isinstance(ev.get("args"), dict) and "correlation" in ev["args"]:
            launches[correlation(path, k, ev)] = start
            continue
        if _ANY_DIGITS.match(name) and not name.isascii():  # int() would read them; ppverify's actions refuse them
            raise ScheduleFileError(
                path,
                f"traceEvents[{k}]",
                f"{shorten(name)} is numbered in digits other than ASCII 0-9: the profiler writes "
                "ProfilerStep#<N>, and PyTorch's older schedules Forward <i> / Backward <i>, in ASCII digits",
            )
        if name.startswith("PP:") or _LEGACY.match(name):
            check_action(path, k, name[3:]) if name.startswith("PP:") else check_digits(path, k, name)
            span = Span(name[3:] if name.startswith("PP:") else name, start, end)
            (dev_pp if cat == "gpu_user_annotation" else host_pp).append(span)
            if cat != "gpu_user_annotation" and COMPUTE_ACTION.match(span.name):
                compute.append((span, k))
        elif name.startswith("ProfilerStep#"):
            m = _STEP.match(name)
            if m and cat != "gpu_user_annotation":
                check_digits(path, k, name)
                n = int(m.group(1))
                if n in step_at:  # two steps of one number: which holds an action is a guess
                    raise ScheduleFileError(
                        path,
                        f"traceEvents[{k}]",
                        f"{name} recorded twice (also traceEvents[{step_at[n]}]): one profiler session numbers each "
                        "step once (two sessions' traces merged?)",
                    )
                step_at[n] = k
                steps.append((n, start, end))
        elif name.startswith(_P2P_HOST):
            works.append(Span(name, start, end, _nbytes(ev.get("args"))))
        elif name.startswith(_COLLECTIVE_HOST):
            collectives.append(Span(name, start, end))
    no_overlapping_compute(path, compute)
    host_pp.sort(key=lambda s: s.start)
    dev_pp.sort(key=lambda s: s.start)
    starts = [s.start for s in host_pp]
    transfers = []
    for w in works:
        owner = _innermost(host_pp, starts, w.start)
        if owner is not None and ("SEND" in owner.name or "RECV" in owner.name):
            transfers.append(Transfer(owner.name, w))
    for span, corr in kernels:
        at = launches.get(corr)
        owner = _innermost(host_pp, starts, at) if at is not None else None
        if owner is not None and ("SEND" in owner.name or "RECV" in owner.name):
            transfers.append(Transfer(owner.name, span))
    if not isinstance(rank, int) or isinstance(rank, bool):
        rank = _rank_from_name(path)
    world = world if isinstance(world, int) and not isinstance(world, bool) else None
    side = "device" if dev_pp else "host"
    if dev_pp:  # actions that launched no kernel have no device copy: their host range stands in
        on_device = {a.name for a in dev_pp}
        dev_pp = sorted(dev_pp + [a for a in host_pp if a.name not in on_device], key=lambda a: a.start)
    return RankTrace(
        path,
        rank,
        world,
        host,
        side,
        tuple(dev_pp if dev_pp else host_pp),
        tuple(host_pp),
        tuple(sorted(steps)),
        tuple(sorted(transfers, key=lambda t: t.span.start)),
        tuple(sorted(collectives, key=lambda s: s.start)),
    )


def _is_read(name: str, cat: Any) -> bool:
    """Whether an event's times are read: actions, steps, transfers and collectives.

    Example:
        >>> _is_read("PP:0F1", "user_annotation"), _is_read("aten::mm", "cpu_op")
        (True, False)
    """
    if cat == "kernel":
        return "nccl" in name.lower()
    return name.startswith(("PP:", "ProfilerStep#", *_P2P_HOST, *_COLLECTIVE_HOST)) or bool(_LEGACY.match(name))


def _rank_from_name(path: str) -> int:
    m = re.search(r"rank[_-]?([0-9]+)", Path(path).name)
    if m is None:
        raise ScheduleFileError(
            path,
            "distributedInfo",
            "no rank: the trace has no distributedInfo.rank and its name holds no rank<N> (import-trace reads the "
            "PyTorch profiler's trace of each rank, as `measure --profile DIR` writes them; the timeline "
            "`--trace` writes is for Perfetto)",
        )
    return int(m.group(1))


def trace_files(inputs: Sequence[str | Path]) -> list[Path]:
    """The trace files named by ``inputs``: files as given, directories expanded to their
    ``*.json`` and ``*.json.gz`` files (sorted).

    Example:
        >>> trace_files(["/nonexistent"])
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: /nonexistent: no such trace file or directory
    """
    out: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.name.endswith((".json", ".json.gz")) and q.is_file())
            if not found:
                raise ScheduleFileError(str(p), "", "holds no trace files (*.json, *.json.gz)")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise ScheduleFileError(str(p), "", "no such trace file or directory")
    return out


def read_traces(inputs: Sequence[str | Path]) -> list[RankTrace]:
    """Every rank's trace of one job, in rank order. Refused (one line each): traces of different
    jobs (world sizes that disagree), a rank twice or missing, no pipeline actions (with how to
    record them).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> traces = read_traces([traces_dir])
        >>> [t.rank for t in traces], [t.world_size for t in traces], [t.side for t in traces]
        ([0, 1], [2, 2], ['host', 'host'])
    """
    traces = [read_rank_trace(p) for p in trace_files(inputs)]
    worlds = {t.world_size for t in traces if t.world_size is not None}
    if len(worlds) > 1:
        shown = ", ".join(f"{Path(t.path).name}: {t.world_size}" for t in traces)
        raise ScheduleFileError(
            traces[0].path, "distributedInfo.world_size", f"traces of different jobs mixed ({shown})"
        )
    by_rank: dict[int, RankTrace] = {}
    for t in traces:
        if t.rank in by_rank:
            raise ScheduleFileError(
                t.path,
                "distributedInfo.rank",
                f"rank {t.rank} also in {by_rank[t.rank].path}: give one trace file per rank (a profiler schedule "
                "with repeat > 1 writes one per cycle)",
            )
        by_rank[t.rank] = t
    world = worlds.pop() if worlds else max(by_rank) + 1
    if world < 1:
        raise ScheduleFileError(traces[0].path, "distributedInfo.world_size", f"{world}: a job has at least one rank")
    for t in traces:  # a rank beyond the world size is another job's file, not a missing rank
        if not 0 <= t.rank < world:
            raise ScheduleFileError(
                t.path, "distributedInfo.rank", f"rank {t.rank} is outside world size {world} (ranks 0..{world - 1})"
            )
    if world > 2 * len(by_rank) + 8:  # far more ranks than files (10**12): not a few missing to list
        raise ScheduleFileError(
            traces[0].path,
            "distributedInfo.world_size",
            f"{world} ranks, but {len(by_rank)} trace file{'s' if len(by_rank) != 1 else ''} given: give one file "
            "per rank of the job (or these files are not its traces)",
        )
    missing = [r for r in range(world) if r not in by_rank]
    if missing or len(by_rank) != world:
        where = Path(traces[0].path).parent
        raise ScheduleFileError(
            str(where),
            "",
            f"rank {', '.join(map(str, missing)) or '?'} missing: world size {world}, {len(by_rank)} trace files",
        )
    for t in traces:
        if not t.actions:
            raise ScheduleFileError(
                t.path,
                "traceEvents",
                f"no pipeline actions (PP:<action> or Forward i / Backward i ranges); {HOW_TO_RECORD}",
            )
        if not t.host_actions:  # a device copy's step is its host range's: none to match
            raise ScheduleFileError(
                t.path,
                "traceEvents",
                "device-side PP:<action> copies (gpu_user_annotation) but no host-side ranges, which give each "
                f"action its step and its transfers: record the CPU activity too; {HOW_TO_RECORD}",
            )
    return [by_rank[r] for r in range(world)]
