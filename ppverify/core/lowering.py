"""PyTorch pipelining's SEND/RECV lowering, reproduced without torch: the pass that turns a
compute-only schedule into PyTorch's ``compute_comms`` form, its check, and ``_merge_bw``.

PyTorch 2.13's ``_add_send_recv`` visits the ranks round-robin, each placing at most its next
action per round once its input has been received; every F/I/B whose neighbour stage lives on
another rank is followed by its SEND, and the matching RECV is appended to the receiving rank's
list at that moment (:func:`add_send_recv`). The ``torch`` engine
(:mod:`ppverify.engines.torch_steps`) times the lowered lists; the file writers
(:mod:`ppverify.io.torch_lowering`) add PyTorch's other passes in front. A core module: it imports
only ops, schedule and errors.
"""

from __future__ import annotations

import heapq

from .errors import DeadlockError, ParameterError
from .ops import Action, B, Comm, F, I, Marker, Op, Overlap, W
from .schedule import Schedule

SEND_F, RECV_F, SEND_B, RECV_B = "SEND_F", "RECV_F", "SEND_B", "RECV_B"


def _stage_rank(schedule: Schedule) -> tuple[int, ...]:
    if schedule.placement.num_pipes != 1 or any(schedule.pipe_of_mb):
        raise ParameterError(
            "semantics",
            "torch",
            "PyTorch's runtime has one pipe; a two-pipe schedule (chimera, dualpipe) has no torch timing",
        )
    return schedule.placement.maps[0]


def _parts(action: Action) -> tuple:
    return action.ops if isinstance(action, Overlap) else (action,)


def runs_as_written(schedule: Schedule) -> bool:
    """True when the schedule's transfers run as written, with no lowering to place them: a
    program holds SEND/RECV actions or markers (``REDUCE_GRAD``, ``UNSHARD``/``RESHARD``: what
    makes a PyTorch file ``compute_comms``, which PyTorch's runtime runs as it is), so a transfer
    it does not write is missing. Decided by the programs alone, never by a file's labels.

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.io.torch_csv import parse_rows
        >>> runs_as_written(build("1f1b", p=2, m=2)), runs_as_written(parse_rows([["0F0", "0B0", "0REDUCE_GRAD"]]))
        (False, True)
    """
    return any(not set(map(type, prog)).isdisjoint((Comm, Marker)) for prog in schedule.programs)  # C-speed scan


def add_send_recv(schedule: Schedule) -> Schedule:
    """Lower a compute-only schedule to PyTorch's ``compute_comms`` form, action for action as
    PyTorch's ``_add_send_recv`` does (idle slots dropped, markers kept in place).

    Raises :class:`DeadlockError` when no rank can place its next action (PyTorch raises
    ``AssertionError: Malformed compute schedule``).

    Example:
        >>> from ppverify.schedules import build
        >>> [[str(a) for a in prog] for prog in add_send_recv(build("gpipe", p=2, m=1)).programs]
        [['0F0', '0SEND_F0', '0RECV_B0', '0B0'], ['1RECV_F0', '1F0', '1B0', '1SEND_B0']]
    """
    rank_of = _stage_rank(schedule)
    S = schedule.num_stages
    todo = {r: list(prog) for r, prog in enumerate(schedule.programs) if prog}
    out: dict[int, list[Action]] = {r: [] for r in range(schedule.p)}
    prev: dict[int, set] = {r: set() for r in range(schedule.p)}

    def has_comms(a: Action) -> bool:
        if type(a) is not Op or not 0 <= a.stage < S:
            return False
        if a.kind == F:
            return a.stage != S - 1 and rank_of[a.stage + 1] != rank_of[a.stage]
        if a.kind in (I, B):
            return a.stage != 0 and rank_of[a.stage - 1] != rank_of[a.stage]
        return False

    def ready(a: Action, seen: set) -> bool:
        if type(a) is not Op:
            return True
        if a.kind == F and a.stage != 0:
            return Comm(RECV_F, a.stage, a.mb) in seen or Op(F, a.stage - 1, a.mb) in seen
        if a.kind in (I, B) and a.stage != S - 1:
            return (
                Comm(RECV_B, a.stage, a.mb) in seen
                or Op(I, a.stage + 1, a.mb) in seen
                or Op(B, a.stage + 1, a.mb) in seen
            )
        return True

    # PyTorch's loop visits every rank in rank order each round and places at most one action per
    # rank; run as written it is quadratic (a blocked rank is re-checked every round, pop(0) shifts
    # the list). Same rounds here, but a rank not ready sleeps until its set of placed actions
    # grows, and a cursor replaces pop(0): linear in the cells, the same output action for action.
    pos = {r: 0 for r in todo}
    current = sorted(todo)
    while current:
        heapq.heapify(current)
        queued, nxt = set(current), set()
        while current:
            r = heapq.heappop(current)
            a = todo[r][pos[r]]
            parts = _parts(a)
            if not all(ready(x, prev[r]) for x in parts):
                continue  # asleep until prev[r] grows (a woken rank checks again)
            if a is not None:
                out[r].append(a)
                for x in parts:
                    prev[r].add(x)
                    if has_comms(x):
                        fwd = x.kind == F
                        send = Comm(SEND_F if fwd else SEND_B, x.stage, x.mb)
                        recv_stage = x.stage + 1 if fwd else x.stage - 1
                        recv = Comm(RECV_F if fwd else RECV_B, recv_stage, x.mb)
                        out[r].append(send)
                        prev[r].add(send)
                        peer = rank_of[recv_stage]
                        out[peer].append(recv)
                        prev[peer].add(recv)
                        if peer in todo and peer != r:  # wake it: later this round, or the next
                            if peer > r and peer not in queued:
                                heapq.heappush(current, peer)
                                queued.add(peer)
                            elif peer < r:
                                nxt.add(peer)
            pos[r] += 1
            if pos[r] == len(todo[r]):
                del todo[r]
            else:
                nxt.add(r)
        current = sorted(k for k in nxt if k in todo)
    if todo:
        raise DeadlockError(
            [(r, str(todo[r][pos[r]]), "its input (no rank can place its next action)") for r in sorted(todo)]
        )
    return schedule.with_programs(tuple(tuple(out[r]) for r in range(schedule.p)))


def comm_problems(schedule: Schedule) -> list[str]:
    """Problems with the SEND/RECV of a schedule that runs its transfers as written
    (:func:`runs_as_written`: SEND/RECV or markers in its programs; empty otherwise).

    Every dependency between stages on different ranks (of the microbatch's pipe) needs exactly one
    SEND on the producer's rank, after the producing op, and one RECV on the consumer's rank, before the consuming op
    (``SEND_F``/``RECV_F`` for activations, ``SEND_B``/``RECV_B`` for gradients); nothing else.
    PyTorch's runtime hangs or reads the wrong tensor otherwise, and its simulator misses an
    unmatched SEND.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> comm_problems(parse_rows([["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0"]]))
        ['1SEND_B0 is missing (rank 1, after 1B0)']
        >>> len(comm_problems(parse_rows([["0F0", "0B0", "0REDUCE_GRAD"], ["1F0", "1B0", "1REDUCE_GRAD"]])))  # markers: as written
        4
    """
    if not runs_as_written(schedule):
        return []
    maps, pipe_of = schedule.placement.maps, schedule.pipe_of_mb  # two-pipe files: each mb's own pipe
    S, m = schedule.num_stages, schedule.m
    where: dict = {}  # action -> [(rank, position)]
    for r, prog in enumerate(schedule.programs):
        for k, a in enumerate(prog):
            for x in _parts(a):
                if x is not None and not isinstance(x, Marker):
                    where.setdefault(x, []).append((r, k))

    def grad_op(s: int, mb: int) -> Op:
        return Op(I, s, mb) if Op(I, s, mb) in where else Op(B, s, mb)

    expected: dict[Comm, tuple[int, Op, bool]] = {}  # comm -> (rank, op it follows/precedes, after?)
    for mb in range(m):
        rank_of = maps[pipe_of[mb]]
        for s in range(S - 1):
            if rank_of[s] == rank_of[s + 1]:
                continue
            expected[Comm(SEND_F, s, mb)] = (rank_of[s], Op(F, s, mb), True)
            expected[Comm(RECV_F, s + 1, mb)] = (rank_of[s + 1], Op(F, s + 1, mb), False)
            expected[Comm(SEND_B, s + 1, mb)] = (rank_of[s + 1], grad_op(s + 1, mb), True)
            expected[Comm(RECV_B, s, mb)] = (rank_of[s], grad_op(s, mb), False)
    problems = []
    for c, (rank, op, after) in expected.items():
        seen = where.get(c, [])
        rel = "after" if after else "before"
        if not seen:
            problems.append(f"{c} is missing (rank {rank}, {rel} {op})")
            continue
        if len(seen) > 1:
            problems.append(f"{c} appears {len(seen)} times")
        r, k = seen[0]
        if r != rank:
            problems.append(f"{c} is on rank {r}, expected rank {rank}")
        elif op in where:
            ro, ko = where[op][0]
            if ro == r and (k <= ko if after else k >= ko):
                problems.append(f"{c} must come {rel} {op} on rank {r}")
    for c in where:
        if isinstance(c, Comm) and c not in expected:
            problems.append(f"{c} on rank {where[c][0][0]} matches no transfer between ranks")
    return problems


def merge_bw(schedule: Schedule) -> Schedule:
    """PyTorch's ``_merge_bw`` on every program: an ``I`` directly followed (idle slots skipped)
    by the ``W`` of the same stage and microbatch becomes one ``B``; idle slots are dropped.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> s = merge_bw(parse_rows([["0F0", "0I0", "", "0W0"]]))
        >>> [str(a) for a in s.programs[0]]
        ['0F0', '0B0']
    """
    progs = []
    for prog in schedule.programs:
        rest = [a for a in prog if a is not None]
        out: list[Action] = []
        k = 0
        while k < len(rest):
            a = rest[k]
            nxt = rest[k + 1] if k + 1 < len(rest) else None
            if (
                type(a) is Op
                and a.kind == I
                and type(nxt) is Op
                and nxt.kind == W
                and nxt.stage == a.stage
                and nxt.mb == a.mb
            ):
                out.append(Op(B, a.stage, a.mb))
                k += 2
            else:
                out.append(a)
                k += 1
        progs.append(tuple(out))
    return schedule.with_programs(tuple(progs))


def lowered(schedule: Schedule) -> Schedule:
    """The schedule PyTorch's simulator runs: as is when it already holds SEND/RECV actions
    (the ``compute_comms`` flavour), else lowered by :func:`add_send_recv`.

    Example:
        >>> from ppverify.schedules import build
        >>> sum(1 for _ in lowered(build("gpipe", p=2, m=2)).programs[0])
        8
    """
    has_comm = any(isinstance(a, Comm) for prog in schedule.programs for a in prog)
    return schedule if has_comm else add_send_recv(schedule)


__all__ = ["RECV_B", "RECV_F", "SEND_B", "SEND_F", "add_send_recv", "comm_problems", "lowered", "merge_bw"]
