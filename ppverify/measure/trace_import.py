"""A recorded step of a profiler trace as a measured timeline (``ppverify import-trace``).

:func:`~ppverify.io.trace_step.recorded_step` gives each rank's actions on one clock; here they
become the :class:`~ppverify.measure.record.Event` values ``measure`` records itself, and the
same :func:`~ppverify.measure.record.to_timeline` turns them into a ``measured`` timeline:

* a compute action ``sKm`` (``PP:1F0``; ``Forward i`` / ``Backward i`` of the older schedule
  classes, one stage per rank, need the schedule) is op ``sKm``. Device-side ranges are the op
  as the GPU ran it. A host-side range also holds the wait for its input, so the op starts at the
  later of its range's start and the arrival of that input: the end of the receive work posted by
  ``sRECV_Fm`` (for F) or ``sRECV_Bm`` (for B and I) of the same step. Each op of an
  overlapped action ``(a;b)OVERLAP_F_B`` spans the whole cell, as the engines time a cell (so an
  error by kind compares like with like); :func:`fitted_costs` fits costs from the ops that ran
  on their own;
* ``sSEND_Fm`` / ``sSEND_Bm`` are sends posted at the range's start; ``RECV`` posts likewise;
* on host-side ranges, a send posted from inside an op's range (the two-pipe runner sends from within the op) ends
  the op there;
* ``sREDUCE_GRAD`` of a two-pipe schedule is the all-reduce of stage s's two replicas; UNSHARD,
  RESHARD and one-pipe REDUCE_GRAD (local) take no place in the timeline.

The recorded order is a schedule: each rank's ops in start order, on the placement given (a
schedule to compare with) or read from the trace (the rank that ran each stage; one pipe).
Ranks read on one host's clock are checked for causality across ranks (:func:`check_causality`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.costs import KINDS, CostModel
from ..core.errors import ParameterError, ScheduleFileError
from ..core.limits import check_stages_mbs
from ..core.ops import Op
from ..core.placement import Placement, placement_from_map
from ..core.schedule import Schedule
from ..core.timeline import Timeline, TimelineInfo
from ..io.profiler_trace import RankTrace
from ..io.trace_step import RecordedStep
from .record import Event, to_timeline
from .trace_costs import boundary_bytes_of, fitted_costs, overlapped_ops

_COMM_KINDS = ("SEND_F", "SEND_B", "RECV_F", "RECV_B")
_COMPUTE = re.compile(r"([0-9]+)([FBIW])([0-9]+)$")
_COMM = re.compile(r"([0-9]+)(SEND|RECV)_([FB])([0-9]+)$")
_OVERLAP = re.compile(r"\((.*)\)OVERLAP_F_B$")
_LEGACY = re.compile(r"(Forward|Backward) ([0-9]+)$")
_REDUCE = re.compile(r"([0-9]+)REDUCE_GRAD$")
#: slack (us) of the causality checks: float stamps, and the collective that aligns clocks
_TOLERANCE_US = 1.0


@dataclass(frozen=True, eq=False)
class ImportedStep:
    """A recorded step as ppverify values: the ``schedule`` it ran (recorded order), its
    ``timeline`` (``semantics="measured"``, seconds), the per-rank ``events`` (ns from the step
    start) and the :class:`~ppverify.io.trace_step.RecordedStep` read.

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> from ppverify.io.trace_step import recorded_step
        >>> traces = read_traces([traces_dir])
        >>> imp = import_step(traces, recorded_step(traces))
        >>> imp.timeline.semantics, imp.step.step, imp.schedule.describe()
        ('measured', 1, 'recorded p=2 m=4')
    """

    schedule: Schedule
    timeline: Timeline
    events: tuple[tuple[Event, ...], ...]
    step: RecordedStep


def _ns(us: float) -> int:
    return round(us * 1000.0)


def _legacy_stage(given: Schedule | None, rank: int, path: str) -> int:
    if given is None or given.placement.num_pipes != 1:
        raise ScheduleFileError(
            path, "Forward/Backward", "the older schedules' 'Forward i'/'Backward i' ranges need --schedule (one pipe)"
        )
    stages = [s for s, d in enumerate(given.placement.maps[0]) if d == rank]
    if len(stages) != 1:
        raise ScheduleFileError(
            path, "Forward/Backward", f"'Forward i' needs one stage per rank; rank {rank} holds {len(stages)}"
        )
    return stages[0]


def step_events(step: RecordedStep, traces: Sequence[RankTrace], given: Schedule | None = None) -> list[list[Event]]:
    """Each rank's :class:`Event` list of the step (ns from the step start; see the module
    docstring for the rules).

    Example:
        >>> from ppverify.io.profiler_trace import Span, Transfer
        >>> st = RecordedStep(0, (0,), (9.0,), "shared", (0.0,), "host",
        ...     ((Span("0RECV_F0", 0.0, 1.0), Span("0F0", 1.0, 9.0)),), ((Transfer("0RECV_F0", Span("gloo:recv", 0.5, 4.0)),),), 0.0)
        >>> step_events(st, [])
        [[Event(kind='RECV_F', stage=0, mb=0, start_ns=0, end_ns=1000), Event(kind='F', stage=0, mb=0, start_ns=4000, end_ns=9000)]]
    """
    out: list[list[Event]] = []
    for rank, (acts, trs) in enumerate(zip(step.actions, step.transfers)):
        arrival: dict[tuple[str, int, int], float] = {}
        for a in acts:
            m = _COMM.match(a.name)
            if m and m.group(2) == "RECV":
                key = (m.group(3), int(m.group(1)), int(m.group(4)))
                arrival[key] = max(arrival.get(key, a.end), a.end if step.side == "host" else a.start)
        for t in trs:
            m = _COMM.match(t.action)
            if m and m.group(2) == "RECV":
                key = (m.group(3), int(m.group(1)), int(m.group(4)))
                arrival[key] = max(arrival.get(key, t.span.end), t.span.end)
        evs: list[Event] = []
        for a in acts:
            name = a.name
            lm = _LEGACY.match(name)
            if lm:
                path = traces[rank].path if rank < len(traces) else "trace"
                stage = _legacy_stage(given, rank, path)
                name = f"{stage}{'F' if lm.group(1) == 'Forward' else 'B'}{lm.group(2)}"
            om = _OVERLAP.match(name)
            subs = om.group(1).split(";") if om else [name]
            # an overlapped cell's ops each span the whole cell, as the engines time them (one
            # convention on both sides of a prediction error; fitted_costs leaves them out)
            start, end = a.start, a.end
            # a host range also holds the wait for the input of its first op, which the cell
            # runs first (a later op's wait falls inside the cell, as the runtime runs it)
            for sub in subs[:1]:
                cm = _COMPUTE.match(sub)
                if cm and step.side == "host" and cm.group(2) != "W":
                    s, kind, mb = int(cm.group(1)), cm.group(2), int(cm.group(3))
                    wait = arrival.get(("F" if kind == "F" else "B", s, mb))
                    if wait is not None:
                        if wait > end + _TOLERANCE_US:  # clamped, it timed the op as 0
                            path = traces[rank].path if rank < len(traces) else "trace"
                            raise ScheduleFileError(
                                path,
                                f"PP:{a.name}",
                                f"the receive posted by {s}RECV_{'F' if kind == 'F' else 'B'}{mb} completes at "
                                f"{wait / 1000:.3f} ms, after {sub} ended at {end / 1000:.3f} ms (from the step's "
                                "start): an op cannot end before its input arrives, so the receive's record is "
                                "wrong (a truncated or edited trace)",
                            )
                        start = min(max(start, wait), end)
            for sub in subs:
                cm = _COMPUTE.match(sub)
                if cm:
                    evs.append(Event(cm.group(2), int(cm.group(1)), int(cm.group(3)), _ns(start), _ns(end)))
                    continue
                mm = _COMM.match(sub)
                if mm:
                    kind = f"{mm.group(2)}_{mm.group(3)}"
                    # a host-side range spans the post call: its end is when the rank went on
                    # (:mod:`.trace_posts`); a device-side one is the kernel, not the post
                    post_end = a.end if step.side == "host" and not om else a.start
                    evs.append(Event(kind, int(mm.group(1)), int(mm.group(4)), _ns(a.start), _ns(post_end)))
                rm = _REDUCE.match(sub)
                if rm and given is not None and given.placement.num_pipes > 1:
                    st = int(rm.group(1))
                    devs = [mp[st] for mp in given.placement.maps]
                    peer = next((d for d in devs if d != rank), rank)
                    evs.append(Event("ALLREDUCE", st, peer, _ns(a.start), _ns(a.end)))
        out.append(_end_at_nested_sends(evs) if step.side == "host" else evs)
    return out


def _end_at_nested_sends(evs: list[Event]) -> list[Event]:
    # a send posted from inside an op's range (the two-pipe runner) marks the op's end
    sends = sorted(e.start_ns for e in evs if e.kind in ("SEND_F", "SEND_B"))
    if not sends:
        return evs
    import bisect

    out = []
    for e in evs:
        if e.kind in KINDS:
            i = bisect.bisect_right(sends, e.start_ns)
            if i < len(sends) and sends[i] < e.end_ns:
                e = e._replace(end_ns=sends[i])
        out.append(e)
    return out


def recorded_schedule(
    events: Sequence[Sequence[Event]], given: Schedule | None = None, path: str = "trace"
) -> Schedule:
    """The schedule the step ran: each rank's compute ops in start order, on ``given``'s
    placement, or on the placement read from the trace (one pipe: the rank that ran each stage),
    of the microbatches and stages its compute and SEND/RECV events name (a microbatch whose ops
    are missing but whose transfers ran is then reported missing, not dropped).

    Example:
        >>> ev = [[Event("F", 0, 0, 0, 5), Event("B", 0, 0, 20, 30)], [Event("F", 1, 0, 6, 9), Event("B", 1, 0, 9, 19)]]
        >>> s = recorded_schedule(ev)
        >>> s.placement.name, [[str(o) for o in prog] for prog in s.programs]
        ('linear', [['0F0', '0B0'], ['1F0', '1B0']])
    """
    p = len(events)
    progs = []
    owner: dict[int, set[int]] = {}
    mbs = 0
    for rank, evs in enumerate(events):
        ops = sorted((e for e in evs if e.kind in KINDS), key=lambda e: (e.start_ns, e.end_ns))
        progs.append(tuple(Op(e.kind, e.stage, e.mb) for e in ops))
        # SEND/RECV name their rank's stage and microbatch too: a microbatch (or stage) whose
        # compute ranges are gone but whose transfers ran is then reported missing, not dropped
        for e in (e for e in evs if e.kind in KINDS or e.kind in _COMM_KINDS):
            owner.setdefault(e.stage, set()).add(rank)
            mbs = max(mbs, e.mb + 1)
    if given is not None:
        if given.p != p:
            raise ParameterError("schedule", given.describe(), f"has p={given.p}; the trace has {p} ranks")
        return Schedule(given.placement, given.m, tuple(progs), given.pipe_of_mb, "recorded", {"p": p, "m": given.m})
    if not owner:
        raise ScheduleFileError(path, "traceEvents", "no compute actions (F, B, I, W) in the step")
    S = max(owner) + 1
    # the size the ranges imply, checked before anything of it is allocated (docs/limits.md)
    r, e = next(
        (r, e) for r, evs in enumerate(events) for e in evs if e.mb == mbs - 1 and e.kind in KINDS + _COMM_KINDS
    )
    check_stages_mbs(S, mbs, f"{path}: rank {r}'s PP:{e.stage}{e.kind}{e.mb}", held=sum(len(p) for p in progs))
    stage_rank = []
    for s in range(S):
        ranks = sorted(owner.get(s, ()))
        if len(ranks) != 1:
            where = f"ran on ranks {ranks}" if ranks else "never ran"
            if not ranks:  # the stages are counted up to the highest one named: say which range named it
                r, e = next((r, e) for r, evs in enumerate(events) for e in evs if e.stage == S - 1)
                where += f", yet rank {r} recorded PP:{e.stage}{e.kind}{e.mb} (stages 0..{S - 1})"
            raise ScheduleFileError(path, f"stage {s}", f"{where}; give --schedule to read a two-pipe or partial trace")
        stage_rank.append(ranks[0])
    placement: Placement = placement_from_map(p, stage_rank)
    return Schedule(placement, mbs, tuple(progs), (0,) * mbs, "recorded", {"p": p, "m": mbs})


def _pairs(events: Sequence[Sequence[Event]]) -> list[tuple[int, Event, int, Event]]:
    """``(send rank, SEND, receive rank, RECV)`` of every message between two ranks: the k-th
    SEND one rank posts to another with the k-th RECV that rank posts from it, as PyTorch's
    runtime matches its untagged messages (so a crossed pair is matched as it ran). Without
    SEND/RECV (or a stage on two ranks) each compute op is paired with its input by name."""
    owner: dict[int, set[int]] = {}
    for rank, evs in enumerate(events):
        for e in evs:
            if e.kind in KINDS or e.kind in _COMM_KINDS:
                owner.setdefault(e.stage, set()).add(rank)
    out: list[tuple[int, Event, int, Event]] = []
    if any(len(r) > 1 for r in owner.values()):  # two pipes: a stage's rank depends on the microbatch
        return out
    rank_of = {s: next(iter(r)) for s, r in owner.items()}
    sends: dict[tuple[int, int], list[Event]] = {}
    recvs: dict[tuple[int, int], list[Event]] = {}
    for rank, evs in enumerate(events):
        for e in sorted((e for e in evs if e.kind in _COMM_KINDS), key=lambda e: e.start_ns):
            peer = rank_of.get(e.stage + (1 if e.kind in ("SEND_F", "RECV_B") else -1))
            if peer is not None and peer != rank:
                (sends if e.kind.startswith("SEND") else recvs).setdefault((rank, peer), []).append(e)
    for (q, r), ss in sends.items():
        out += [(q, snd, r, rcv) for snd, rcv in zip(ss, recvs.get((r, q), []))]
    return out


def _compute_of(rank_events: Sequence[Event], e: Event) -> Event | None:
    # the op a SEND sends the output of, or a RECV receives the input of (F for _F, B or I for _B)
    kinds = ("F",) if e.kind.endswith("F") else ("B", "I")
    return next((x for x in rank_events if x.kind in kinds and x.stage == e.stage and x.mb == e.mb), None)


def check_causality(events: Sequence[Sequence[Event]], step: RecordedStep, traces: Sequence[RankTrace] = ()) -> None:
    """Refuse a step read on one host's shared clock whose ranks put an effect before its cause
    (1 us of slack): a compute op that ends (device-side: starts; a host range also holds the
    wait) before the op whose output it receives ends, or a receive that completes before its
    SEND was posted. Messages are matched as the runtime matches them (:func:`_pairs`). Ranks read
    on one clock that they do not share do that, and every time across them would be wrong by the
    offset. The first such pair (earliest effect) is named. A step aligned on a collective is not
    checked: the alignment is only as good as the ranks' exit skew from it (0.2 ms on the stored
    CPU trace), and it is the fix this refusal offers.

    Example:
        >>> st = RecordedStep(1, (1,), (9.0,), "shared", (0.0, 0.0), "host", ((), ()), ((), ()), 0.0)
        >>> check_causality([[Event("F", 0, 0, 0, 5000)], [Event("F", 1, 0, 1000, 3000)]], st)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: trace: ProfilerStep#1: rank 1's 1F0 ends at 0.003 ms, before rank 0's 0F0, whose output it takes, ends at 0.005 ms: the ranks' clocks disagree (read as one host's shared clock); give --clock collective to align them on the collective before the step
    """
    if step.clock != "shared":
        # an alignment on a collective is only as good as the ranks' exit skew from it (0.2 ms on
        # the stored CPU trace): it is the fix offered here, not checked to the microsecond
        return
    tol = _TOLERANCE_US * 1000
    verb = "starts" if step.side == "device" else "ends"
    pairs: list[tuple[int, Event | None, Event | None, int, Event | None, Event | None]] = []
    matched = _pairs(events)
    for q0, send, r0, recv in matched:
        pairs.append((q0, send, _compute_of(events[q0], send), r0, recv, _compute_of(events[r0], recv)))
    if not matched:  # no messages recorded: each op's input by name
        at = {(e.kind, e.stage, e.mb): (rank, e) for rank, evs in enumerate(events) for e in evs if e.kind in KINDS}
        for r, evs in enumerate(events):
            for e in (e for e in evs if e.kind in ("F", "B", "I")):
                src = [(e.kind if e.kind == "F" else k, e.stage + (-1 if e.kind == "F" else 1), e.mb) for k in "BI"]
                hit = next((at[k] for k in src if k in at), None)
                if hit is not None and hit[0] != r:
                    pairs.append((hit[0], None, hit[1], r, None, e))
    bad: list[tuple[int, int, str]] = []  # (time of the effect, its rank, what)
    for q, snd, prod, r, rcv, cons in pairs:
        if prod is not None and cons is not None:
            mine = cons.start_ns if step.side == "device" else cons.end_ns
            if mine < prod.end_ns - tol:
                bad.append(
                    (
                        mine,
                        r,
                        f"rank {r}'s {cons.stage}{cons.kind}{cons.mb} {verb} at {mine / 1e6:.3f} ms, before rank "
                        f"{q}'s {prod.stage}{prod.kind}{prod.mb}, whose output it takes"
                        + (f" ({snd.stage}{snd.kind}{snd.mb})" if snd is not None and snd.mb != cons.mb else "")
                        + f", ends at {prod.end_ns / 1e6:.3f} ms",
                    )
                )
        if snd is None or rcv is None:
            continue
        name = f"{rcv.stage}{rcv.kind}{rcv.mb}"
        done = max((_ns(t.span.end) for t in step.transfers[r] if t.action == name), default=None)
        if done is not None and done < snd.start_ns - tol:
            bad.append(
                (
                    done,
                    r,
                    f"rank {r}'s receive posted by {name} completes at {done / 1e6:.3f} ms, before rank {q} posted "
                    f"{snd.stage}{snd.kind}{snd.mb} (its message) at {snd.start_ns / 1e6:.3f} ms",
                )
            )
    if not bad:
        return
    _, rank, what = min(bad)
    crossed = next(((q, r) for q, snd, _, r, rcv, _ in pairs if snd and rcv and snd.mb != rcv.mb), None)
    if crossed is not None:  # then the order is wrong too; say so, as the refusal hides the verdict
        what += (
            f" (messages matched in posting order, as PyTorch's runtime matches them: rank {crossed[0]}'s SENDs "
            f"cross rank {crossed[1]}'s RECVs, which breaks pytorch-message-order as well)"
        )
    path = traces[rank].path if rank < len(traces) else "trace"
    fix = (
        "the ranks' clocks disagree (read as one host's shared clock); give --clock collective to align them on "
        "the collective before the step"
    )
    raise ScheduleFileError(path, f"ProfilerStep#{step.step}", f"{what}: {fix}")


def schedule_differences(given: Schedule, recorded: Schedule) -> list[str]:
    """Every difference between what ran (``recorded``) and what was meant (``given``), rank by
    rank: missing ops, extra ops, and the op order (the first position where the common ops
    differ, and how many positions do). Empty: the same programs.

    Example:
        >>> from ppverify.schedules import build
        >>> g = build("1f1b", p=2, m=2)
        >>> r = g.with_programs((g.programs[0][:1] + g.programs[0][2:] + g.programs[0][1:2], g.programs[1][:-1]))
        >>> for line in schedule_differences(g, r): print(line)
        rank 0: op order differs at position 1: ran 0B0, the schedule has 0F1 (3 of 4 positions differ)
        rank 1: missing 1B1 (in the schedule, not in the trace)
        >>> schedule_differences(g, g.with_programs((g.programs[0] + g.programs[0][-1:], g.programs[1])))
        ['rank 0: ran 5 ops, the schedule has 4 (repeated: 0B1)']
    """
    out = []
    for rank in range(max(given.p, recorded.p)):
        g = [str(o) for o in given.ops(rank)] if rank < given.p else []
        r = [str(o) for o in recorded.ops(rank)] if rank < recorded.p else []
        gs, rs = set(g), set(r)
        missing = [o for o in g if o not in rs]
        extra = [o for o in r if o not in gs]
        gc = [o for o in g if o in rs]
        rc = [o for o in r if o in gs]
        diff = [i for i, (a, b) in enumerate(zip(rc, gc)) if a != b]
        if diff:
            i = diff[0]
            out.append(
                f"rank {rank}: op order differs at position {i}: ran {rc[i]}, the schedule has {gc[i]} "
                f"({len(diff)} of {len(gc)} positions differ)"
            )
        if missing:
            out.append(f"rank {rank}: missing {' '.join(missing)} (in the schedule, not in the trace)")
        if extra:
            out.append(f"rank {rank}: extra {' '.join(extra)} (in the trace, not in the schedule)")
        if not (diff or missing or extra) and r != g:  # the same ops and order, one of them run twice
            repeated = sorted({o for o in r if r.count(o) != g.count(o)})
            out.append(f"rank {rank}: ran {len(r)} ops, the schedule has {len(g)} (repeated: {' '.join(repeated)})")
    return out


def import_step(
    traces: Sequence[RankTrace], step: RecordedStep, given: Schedule | None = None, costs: CostModel | None = None
) -> ImportedStep:
    """The step as a schedule and a measured timeline; ``costs`` default to those fitted from the
    step itself (:func:`fitted_costs`).

    Example:
        >>> from pathlib import Path
        >>> import ppverify
        >>> traces_dir = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")
        >>> from ppverify.io.profiler_trace import read_traces
        >>> from ppverify.io.trace_step import recorded_step
        >>> from ppverify.schedules import build
        >>> traces = read_traces([traces_dir])
        >>> imp = import_step(traces, recorded_step(traces, step=2), build("1f1b", p=2, m=4))
        >>> [str(o) for o in imp.schedule.ops(0)]
        ['0F0', '0F1', '0B0', '0F2', '0B1', '0F3', '0B2', '0B3']
        >>> round(imp.timeline.makespan, 3)  # measure's own clock: 0.1776 s
        0.178
    """
    events = step_events(step, traces, given)
    if given is not None:
        _stages_in(events, given, traces)
    check_causality(events, step, traces)
    path = traces[0].path if traces else "trace"
    schedule = recorded_schedule(events, given, path)
    if costs is None:
        costs = fitted_costs(
            events, schedule.placement, boundary_bytes_of(step, schedule.num_stages), overlapped_ops(step)
        )
    elif costs.num_stages != schedule.num_stages:
        raise ParameterError(
            "costs", costs.label or "custom", f"describe {costs.num_stages} stages; the trace has {schedule.num_stages}"
        )
    info = TimelineInfo(compute=f"trace ({step.side}-side)", runner="profiler trace", clock=step.clock, step=step.step)
    timeline = to_timeline(schedule, costs, events, 0, info)
    return ImportedStep(schedule, timeline, tuple(tuple(e) for e in events), step)


def _stages_in(events: Sequence[Sequence[Event]], given: Schedule, traces: Sequence[RankTrace] = ()) -> None:
    """Refuse a recorded action of a stage ``given`` does not have (its timeline has no place for
    it): a trace of another schedule (ZBV's 4 stages read as 1F1B's 2), or a stray range.

    Example:
        >>> from ppverify.schedules import build
        >>> _stages_in([[Event("F", 0, 0, 0, 5)], [Event("F", 9, 0, 0, 5)]], build("1f1b", p=2, m=4))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: trace: PP:9F0: rank 1 ran stage 9; the schedule 1f1b p=2 m=4 has stages 0..1 (give the schedule that ran, or leave --schedule out)
    """
    S = given.num_stages
    for rank, evs in enumerate(events):
        bad = next((e for e in evs if e.kind in KINDS + _COMM_KINDS + ("ALLREDUCE",) and e.stage >= S), None)
        if bad is not None:
            path = traces[rank].path if rank < len(traces) else "trace"
            raise ScheduleFileError(
                path,
                f"PP:{bad.stage}{bad.kind}{bad.mb}" if bad.kind != "ALLREDUCE" else f"PP:{bad.stage}REDUCE_GRAD",
                f"rank {rank} ran stage {bad.stage}; the schedule {given.describe()} has stages 0..{S - 1} "
                "(give the schedule that ran, or leave --schedule out)",
            )


def recorded_size(traces: Sequence[RankTrace]) -> tuple[int, int]:
    """``(p, m)`` of a recorded job: its ranks, and its microbatches (one more than the largest
    microbatch of a ``PP:`` compute or SEND/RECV action; ``Forward i`` counts as microbatch i).

    Example:
        >>> from ppverify.io.profiler_trace import Span
        >>> t = RankTrace("r0", 0, 1, "h", "host", (Span("0F3", 0, 1), Span("Forward 5", 1, 2)), (), (), (), ())
        >>> recorded_size([t])
        (1, 6)
    """
    m, stages, held = 0, 0, 0
    where = "trace"
    for t in traces:
        for a in t.actions:
            om = _OVERLAP.match(a.name)
            for sub in om.group(1).split(";") if om else [a.name]:
                cm = _COMPUTE.match(sub) or _LEGACY.match(sub) or _COMM.match(sub)
                if cm:
                    mb = int(cm.group(cm.lastindex or 1))
                    if mb + 1 > m:
                        m, where = mb + 1, f"{t.path}: {'PP:' if cm.re is not _LEGACY else ''}{a.name}"
                    held += cm.re is not _COMM
                    stages = max(stages, int(cm.group(1)) + 1 if cm.re is not _LEGACY else 1)
    # a family is built at this size: one PP:0F200000 would build 200,001 microbatches
    check_stages_mbs(max(stages, len(traces)), m, where, held=held)
    return len(traces), m
