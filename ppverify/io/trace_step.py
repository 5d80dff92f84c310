"""One step of a recorded job, every rank on one clock (the second half of reading profiler traces;
:mod:`.profiler_trace` reads the files).

**Steps.** With ``ProfilerStep#N`` ranges an action belongs to the step whose host range holds
its host-side start (a device-side copy to the step of its host range, matched by occurrence:
the k-th GPU copy of ``PP:0F1`` is the k-th host range of that name). Without them, the k-th
occurrence of each action is step k. Every rank must hold the same steps. The default step is the
median one: the steps sorted by makespan, the lower middle (as ``measure`` picks its step).

**Clocks.** Ranks of one host (``host_name`` equal in every file) share its clock (PyTorch's
profiler stamps events with the host's monotonic clock; GPU events are converted to it), so
their times are compared as recorded: ``clock == "shared"``. Ranks of several hosts are aligned on
the last collective (barrier or all-reduce) that ends, on each rank, before its first action of
the step: every rank leaves a collective at the same moment (up to its latency), so each rank's
times are shifted to make those ends coincide with rank 0's (``clock == "collective"``). A job
with no such collective on some rank cannot be aligned and is refused.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..core.errors import ParameterError, ScheduleFileError
from .profiler_trace import COMPUTE_ACTION, RankTrace, Span, Transfer

CLOCKS = ("auto", "shared", "collective")


@dataclass(frozen=True)
class RecordedStep:
    """One step of every rank on one clock: ``actions[rank]`` and ``transfers[rank]`` in
    microseconds from ``origin`` (the earliest action start of the step, any rank), the step
    number ``step`` among ``steps`` (all recorded), each step's makespan (µs, same order),
    ``clock`` (``shared`` or ``collective``), ``offsets`` (µs added to each rank's times) and
    ``side`` (``device`` or ``host``); ``profiler_steps``: the steps are ``ProfilerStep#N`` ranges
    (False: the actions' n-th occurrences, in a trace recorded without them).

    Example:
        >>> s = RecordedStep(0, (0,), (5.0,), "shared", (0.0,), "host", ((Span("0F0", 0.0, 5.0),),), ((),), 0.0)
        >>> s.makespan
        5.0
    """

    step: int
    steps: tuple[int, ...]
    makespans: tuple[float, ...]
    clock: str
    offsets: tuple[float, ...]
    side: str
    actions: tuple[tuple[Span, ...], ...]
    transfers: tuple[tuple[Transfer, ...], ...]
    origin: float
    profiler_steps: bool = True

    @property
    def makespan(self) -> float:
        """The step's makespan: first action start to the last compute action's end, any rank
        (µs; :func:`last_end`)."""
        return last_end([a for acts in self.actions for a in acts], _replica_reduces(self.actions))


def last_end(spans: Sequence[Span], reduced: Collection[str] = ()) -> float:
    """The end of a step's last compute action (F, B, I, W, an overlapped cell, ``Forward i``) or
    of an action named in ``reduced`` (a two-pipe stage's ``REDUCE_GRAD``, the all-reduce of its
    replicas), as the step's timeline ends: a one-pipe ``REDUCE_GRAD``, ``RESHARD`` or SEND/RECV
    post takes no place in it (the latest end of any action where none counts).

    Example:
        >>> last_end([Span("0B0", 10.0, 80.0), Span("0REDUCE_GRAD", 81.0, 231.0)])
        80.0
        >>> last_end([Span("0B0", 10.0, 80.0), Span("0REDUCE_GRAD", 81.0, 231.0)], {"0REDUCE_GRAD"})
        231.0
    """
    ends = [a.end for a in spans if COMPUTE_ACTION.match(a.name) or a.name in reduced]
    return max(ends or [a.end for a in spans], default=0.0)


def _replica_reduces(acts: Sequence[Sequence[Span]]) -> set[str]:
    # a stage's REDUCE_GRAD on two ranks is the all-reduce of its two replicas (two pipes)
    ranks: dict[str, int] = defaultdict(int)
    for a in acts:
        for name in {x.name for x in a if x.name.endswith("REDUCE_GRAD")}:
            ranks[name] += 1
    return {name for name, n in ranks.items() if n > 1}


def _step_numbers(trace: RankTrace) -> tuple[list[int | None], list[int | None]]:
    # the step of each host action and of each (device or host) action
    host = trace.host_actions
    if trace.steps:
        starts = [s[1] for s in trace.steps]
        host_steps: list[int | None] = []
        for a in host:
            i = bisect.bisect_right(starts, a.start) - 1
            inside = i >= 0 and a.start <= trace.steps[i][2]
            host_steps.append(trace.steps[i][0] if inside else None)
    else:
        _same_occurrences(trace)
        seen: dict[str, int] = defaultdict(int)
        host_steps = []
        for a in host:
            host_steps.append(seen[a.name])
            seen[a.name] += 1
    if trace.side == "host":
        return host_steps, host_steps
    by_name: dict[str, list[int | None]] = defaultdict(list)
    for a, st in zip(host, host_steps):
        by_name[a.name].append(st)
    copies: dict[str, int] = defaultdict(int)
    for a in trace.actions:
        copies[a.name] += 1
    for name, n in copies.items():
        # the k-th copy is the k-th range's only when none was dropped: one missing record would
        # shift every later copy into the next step (and read a valid order as invalid)
        if n != len(by_name.get(name, ())):
            raise ScheduleFileError(
                trace.path,
                f"PP:{name}",
                f"{n} device-side copies (gpu_user_annotation) but {len(by_name.get(name, ()))} host-side ranges: "
                "a record was dropped, so the copies cannot be matched to their steps (record the trace again)",
            )
    count: dict[str, int] = defaultdict(int)
    out: list[int | None] = []
    for a in trace.actions:
        k = count[a.name]
        count[a.name] += 1
        out.append(by_name[a.name][k])
    return host_steps, out


def _same_occurrences(trace: RankTrace) -> None:
    """Refuse a trace without ``ProfilerStep`` ranges whose actions do not all occur equally
    often: the k-th occurrence is step k only when none was dropped, and one missing record would
    shift every later occurrence of its action into the next step (a wrong time, or a refusal
    that blames the clocks).

    Example:
        >>> sp = lambda n, t: Span(n, t, t + 1.0)
        >>> t = RankTrace("r1", 1, 2, "h", "host", (), (sp("1F3", 0), sp("1B3", 2), sp("1F3", 5)), (), (), ())
        >>> _same_occurrences(t)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: r1: PP:1B3: recorded 1 time, PP:1F3 2 times: without ProfilerStep ranges the k-th occurrence of each action is step k, so a dropped record would shift its action's later occurrences into the next step (record with a profiler schedule and prof.step(), or the whole trace again)
    """
    counts: dict[str, int] = defaultdict(int)
    for a in trace.host_actions:
        counts[a.name] += 1
    if len(set(counts.values())) <= 1:
        return
    few = min(counts, key=lambda n: (counts[n], n))
    many = max(counts, key=lambda n: (counts[n], n))

    def times(n: int) -> str:
        return f"{n} time{'s' if n != 1 else ''}"

    raise ScheduleFileError(
        trace.path,
        f"PP:{few}",
        f"recorded {times(counts[few])}, PP:{many} {times(counts[many])}: without ProfilerStep ranges the k-th "
        "occurrence of each action is step k, so a dropped record would shift its action's later occurrences into "
        "the next step (record with a profiler schedule and prof.step(), or the whole trace again)",
    )


def step_host_actions(trace: RankTrace, step: int) -> list[Span]:
    """The host-side ranges of ``step`` on one rank, in start order: the order in which the
    runtime issued its actions (SEND/RECV posts and markers included), on the file's clock.

    Example:
        >>> t = RankTrace("r0", 0, 1, "h", "host", (), (Span("0F0", 1.0, 2.0), Span("0F0", 5.0, 6.0)), (), (), ())
        >>> step_host_actions(t, 1)
        [Span(name='0F0', start=5.0, end=6.0, nbytes=0.0)]
    """
    host_steps = _step_numbers(trace)[0]
    return sorted((a for a, st in zip(trace.host_actions, host_steps) if st == step), key=lambda a: (a.start, -a.end))


def _split(trace: RankTrace) -> tuple[dict[int, list[Span]], dict[int, list[Transfer]]]:
    host_steps, steps = _step_numbers(trace)
    acts: dict[int, list[Span]] = defaultdict(list)
    for a, st in zip(trace.actions, steps):
        if st is not None:
            acts[st].append(a)
    # a transfer belongs to the step of the host action that posted it (the k-th of its name)
    post_step: dict[str, list[int | None]] = defaultdict(list)
    for a, st in zip(trace.host_actions, host_steps):
        post_step[a.name].append(st)
    starts: dict[str, list[float]] = defaultdict(list)
    for a in trace.host_actions:
        starts[a.name].append(a.start)
    trs: dict[int, list[Transfer]] = defaultdict(list)
    for t in trace.transfers:
        lst = starts.get(t.action, [])
        k = bisect.bisect_right(lst, t.span.start) - 1 if lst else -1
        if 0 <= k < len(post_step[t.action]):
            st = post_step[t.action][k]
            if st is not None:
                trs[st].append(t)
    return acts, trs


def _collective_end(trace: RankTrace, before: float) -> float | None:
    ends = [c.end for c in trace.collectives if c.end <= before]
    return max(ends) if ends else None


def _offsets(
    traces: Sequence[RankTrace], acts: Sequence[dict[int, list[Span]]], step: int, clock: str
) -> tuple[str, list[float]]:
    hosts = {t.host for t in traces}
    # one rank has one clock: nothing to align, with or without a host name
    one = len(traces) == 1 or (len(hosts) == 1 and None not in hosts)
    if clock == "shared" or (clock == "auto" and one):
        return "shared", [0.0] * len(traces)
    anchors = []
    for t, a in zip(traces, acts):
        first = min(x.start for x in a[step])
        end = _collective_end(t, first)
        if end is None:
            if clock == "collective":
                why = "--clock collective"
            else:
                why = "hosts differ" if len(hosts) > 1 else "no host names recorded"
            raise ScheduleFileError(
                t.path,
                f"ProfilerStep#{step}",
                f"clocks cannot be aligned ({why}): rank {t.rank} records no barrier or all-reduce before its first "
                "action of the step; call dist.barrier() at the start of each profiled step",
            )
        anchors.append(end)
    return "collective", [anchors[0] - x for x in anchors]


def steps_held(traces: Sequence[RankTrace], steps: Sequence[int]) -> str:
    """How the traces number their ``steps``, for a message: ``ProfilerStep 1, 2``, or, without
    ``ProfilerStep`` ranges, the actions' occurrences.

    Example:
        >>> steps_held([RankTrace("r0", 0, 1, None, "host", (), (), (), (), ())], [0, 1])
        "no ProfilerStep ranges; steps are the actions' occurrences 0, 1"
    """
    listed = ", ".join(map(str, steps))
    if any(t.steps for t in traces):
        return f"ProfilerStep {listed}"
    return f"no ProfilerStep ranges; steps are the actions' occurrences {listed}"


def recorded_step(traces: Sequence[RankTrace], step: int | None = None, clock: str = "auto") -> RecordedStep:
    """Step ``step`` (``ProfilerStep#step``; None: the median step) of every rank, on one clock
    (``clock``: ``auto``, ``shared`` or ``collective``; see the module docstring). Ranks that hold
    different steps are refused as traces of different jobs.

    Example:
        >>> t = [RankTrace(f"r{r}", r, 2, "h", "host", (Span("0F0" if r == 0 else "1F0", 10.0 * r, 10.0 * r + 8),),
        ...                (Span("0F0" if r == 0 else "1F0", 10.0 * r, 10.0 * r + 8),), (), (), ()) for r in range(2)]
        >>> s = recorded_step(t)
        >>> s.step, s.clock, s.makespan
        (0, 'shared', 18.0)
    """
    if clock not in CLOCKS:
        raise ParameterError("clock", clock, f"expected one of {', '.join(CLOCKS)}")
    with_steps = [t for t in traces if t.steps]
    bare = next((t for t in traces if not t.steps), None)
    if with_steps and bare is not None:  # numbered by occurrence, its steps would not match theirs
        raise ScheduleFileError(
            bare.path,
            "ProfilerStep",
            f"rank {bare.rank}'s trace has no ProfilerStep ranges while rank {with_steps[0].rank}'s has them: record "
            "every rank with the same profiler schedule, calling prof.step() after each step",
        )
    split = [_split(t) for t in traces]
    acts = [a for a, _ in split]
    common = set(acts[0])
    for t, a in zip(traces, acts):
        if set(a) != common:
            counts = ", ".join(f"rank {u.rank}: {len(b)}" for u, b in zip(traces, acts))
            # which steps each rank holds, so the odd one out can be seen
            held = "; ".join(f"rank {u.rank} {', '.join(map(str, sorted(b))) or 'none'}" for u, b in zip(traces, acts))
            raise ScheduleFileError(
                t.path, "ProfilerStep", f"traces of different jobs mixed (steps per rank {counts}): step numbers {held}"
            )
    steps = sorted(common)
    if not steps:
        raise ScheduleFileError(traces[0].path, "ProfilerStep", "no step holds pipeline actions")
    spans = []
    offsets_of = {}
    for st in steps:
        how, off = _offsets(traces, acts, st, clock)
        offsets_of[st] = (how, off)
        lo = min(x.start + o for a, o in zip(acts, off) for x in a[st])
        # the step's end as its timeline's (the median step is the median of those makespans)
        shifted = [[Span(x.name, x.start + o, x.end + o) for x in a[st]] for a, o in zip(acts, off)]
        hi = last_end([x for a in shifted for x in a], _replica_reduces(shifted))
        spans.append(hi - lo)
    if step is None:
        order = sorted(range(len(steps)), key=lambda i: (spans[i], i))
        step = steps[order[(len(order) - 1) // 2]]
    elif step not in common:
        raise ParameterError("step", step, f"not recorded; the traces hold {steps_held(traces, steps)}")
    how, off = offsets_of[step]
    origin = min(x.start + o for a, o in zip(acts, off) for x in a[step])

    def shift(s: Span, o: float) -> Span:
        return Span(s.name, s.start + o - origin, s.end + o - origin, s.nbytes)

    return RecordedStep(
        step,
        tuple(steps),
        tuple(spans),
        how,
        tuple(off),
        traces[0].side if all(t.side == traces[0].side for t in traces) else "mixed",
        tuple(tuple(shift(x, o) for x in a[step]) for a, o in zip(acts, off)),
        tuple(tuple(Transfer(t.action, shift(t.span, o)) for t in tr.get(step, [])) for (_, tr), o in zip(split, off)),
        origin,
        any(t.steps for t in traces),
    )
