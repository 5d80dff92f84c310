"""Two things PyTorch 2.13's pipeline runtime needs of a schedule that ppverify's own rules
(completeness, dependencies, deadlock) do not ask, each found by running such files in the
runtime (``measure``) and checked before a file is written for it (``export``) or run (``measure``):

* **The last stage's forwards in microbatch order.** ``_PipelineScheduleRuntime`` appends each
  loss to a list as the last stage's forwards run (``_maybe_compute_loss``) and reads it back by
  microbatch number at that stage's backward (``_maybe_get_loss``). A last stage that runs ``F1``
  before ``F0`` hands microbatch 0's backward microbatch 1's loss: the step fails ("Failed to
  run stage backward ... Output gradient: None", or "Loss for microbatch 2 is not available").
  With a single stage nothing is received, each loss is back-propagated once and the gradients
  come out right, so the order rule applies from two stages on; but a lone stage's backward of
  microbatch k still needs k+1 losses in the list: ``0F2,0B2,0F3,0B3,0F0,0B0,0F1,0B1`` fails at
  ``0B2`` ("Loss for microbatch 2 is not available", found with ``measure``).
* **Messages between two ranks in one order.** The runtime's SEND/RECV ops carry no tag
  (``dist.P2POp(dist.isend, tensor, peer, group)``), so gloo and NCCL match the messages from one
  rank to another in the order they are posted. A ``compute_comms`` file whose rank posts
  ``1SEND_B1`` before ``1SEND_B0`` while the receiving rank posts ``0RECV_B0`` first delivers
  microbatch 1's gradient as microbatch 0's: no error, wrong gradients. PyTorch's own lowering of a
  ``compute_only`` file posts each RECV in its SEND's round, so only hand-written (or
  hand-edited) ``compute_comms`` files can break this.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..core.ops import Action, Comm, Op, Overlap
from ..core.schedule import Schedule


def _ops(action: Action) -> Iterator[Op]:
    if isinstance(action, Op):
        yield action
    elif isinstance(action, Overlap):
        yield from action.ops


def out_of_order_forwards(schedule: Schedule) -> tuple[int, tuple[Op, ...]] | None:
    """The rank of a one-pipe schedule's last stage and that stage's forwards in the order it
    runs them, when that is not microbatch order (see the module docstring), else None.
    Two-pipe schedules and single-stage ones: None.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rank, fwd = out_of_order_forwards(parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F1", "1F0", "1B0", "1B1"]]))
        >>> rank, [str(o) for o in fwd]
        (1, ['1F1', '1F0'])
    """
    last = schedule.num_stages - 1
    if last < 1 or schedule.placement.num_pipes != 1:
        return None
    rank = schedule.placement.maps[0][last]
    fwd = tuple(o for a in schedule.programs[rank] for o in _ops(a) if o.kind == "F" and o.stage == last)
    if [o.mb for o in fwd] == sorted(o.mb for o in fwd):
        return None
    return rank, fwd


def first_misplaced_forward(fwd: tuple[Op, ...]) -> tuple[Op, Op]:
    """The first forward of ``fwd`` out of microbatch order and the forward that belongs in its
    place (the lower microbatch PyTorch's runtime expects there): the two ops that explain it.

    Example:
        >>> from ppverify.core.ops import Op
        >>> [str(o) for o in first_misplaced_forward(tuple(Op("F", 1, mb) for mb in (0, 2, 1)))]
        ['1F2', '1F1']
    """
    want = sorted(o.mb for o in fwd)
    k = next(i for i, o in enumerate(fwd) if o.mb != want[i])
    return fwd[k], next(o for o in fwd[k:] if o.mb == want[k])


def early_backward(schedule: Schedule) -> tuple[int, Op, Op] | None:
    """A one-stage, one-pipe schedule's first backward (``B`` or ``I``) of microbatch k that its
    rank runs after fewer than k+1 forwards, with the forward it still lacks (the lowest
    microbatch not yet run), and the rank; else None. PyTorch's runtime reads microbatch k's loss
    back as the (k+1)-th it computed and fails the step when there are fewer (see the module
    docstring). Schedules of two stages or more: None (there :func:`out_of_order_forwards` decides).

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rank, bwd, fwd = early_backward(parse_rows([["0F2", "0B2", "0F3", "0B3", "0F0", "0B0", "0F1", "0B1"]]))
        >>> rank, str(bwd), str(fwd)
        (0, '0B2', '0F0')
        >>> early_backward(parse_rows([["0F1", "0F0", "0B0", "0B1"]])) is None  # two losses by 0B0: it runs
        True
    """
    if schedule.num_stages != 1 or schedule.placement.num_pipes != 1:
        return None
    rank = schedule.placement.maps[0][0]
    ran: list[Op] = []
    for a in schedule.programs[rank]:
        for o in _ops(a):
            if o.kind == "F":
                ran.append(o)
            elif o.kind in ("B", "I") and o.mb >= len(ran):
                seen = {f.mb for f in ran}
                later = [f for b in schedule.programs[rank] for f in _ops(b) if f.kind == "F" and f.mb not in seen]
                return rank, o, min(later, key=lambda f: f.mb) if later else o
    return None


def loss_order_problem(schedule: Schedule) -> str | None:
    """Why PyTorch's runtime cannot run ``schedule``'s last stage (its forwards out of microbatch
    order; see the module docstring), or None. Two-pipe schedules and single-stage ones: None.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> loss_order_problem(parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F1", "1F0", "1B0", "1B1"]]))  # doctest: +ELLIPSIS
        "rank 1 runs the last stage's forwards in the order 1F1, 1F0: PyTorch's runtime keeps ... in microbatch order"
        >>> loss_order_problem(parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F0", "1F1", "1B1", "1B0"]])) is None
        True
    """
    early = early_backward(schedule)
    if early is not None:
        rank, bwd, _ = early
        ran = sum(
            1
            for a in schedule.programs[rank][: schedule.programs[rank].index(_action_of(schedule, rank, bwd))]
            for o in _ops(a)
            if o.kind == "F"
        )
        return (
            f"rank {rank} runs {bwd} after {ran} forward{'s' if ran != 1 else ''}: PyTorch's runtime keeps the "
            f"losses in the order the forwards ran and reads microbatch {bwd.mb}'s back as number {bwd.mb + 1}, "
            f"so the step fails ('Loss for microbatch {bwd.mb} is not available'); run each backward of "
            "microbatch k after k+1 forwards (the forwards in microbatch order do)"
        )
    found = out_of_order_forwards(schedule)
    if found is None:
        return None
    rank, fwd = found
    last = schedule.num_stages - 1
    shown = ", ".join(map(str, fwd[:4])) + (", ..." if len(fwd) > 4 else "")
    return (
        f"rank {rank} runs the last stage's forwards in the order {shown}: PyTorch's runtime keeps the last "
        "stage's losses in the order its forwards ran and reads them back by microbatch number, so a backward "
        f"gets another microbatch's loss and the step fails; run stage {last}'s forwards in microbatch order"
    )


def _action_of(schedule: Schedule, rank: int, op: Op) -> Action:
    """The action of ``rank``'s program that runs ``op`` (the op, or the overlapped cell holding it)."""
    return next(a for a in schedule.programs[rank] if op in tuple(_ops(a)))


#: a transfer between two stages: ``(direction, sending stage, microbatch)``, direction ``F`` (an
#: activation to the next stage) or ``B`` (a gradient to the previous one)
Transfer = tuple[str, int, int]


def transfer_key(c: Comm) -> Transfer:
    """The transfer a SEND or RECV belongs to: ``(direction, sending stage, microbatch)``. A SEND
    names its own stage (``sSEND_Fmb`` sends ``F(s, mb)``'s output on), a RECV the stage it
    receives at, so its sender is the stage before (``F``) or after (``B``). The verifier matches a
    SEND with its RECV by this key; PyTorch's runtime, which ignores it, delivers in posting order.

    Example:
        >>> transfer_key(Comm("RECV_F", 2, 0)), transfer_key(Comm("SEND_B", 2, 0))
        (('F', 1, 0), ('B', 2, 0))
    """
    direction = c.kind[-1]
    if c.kind.startswith("SEND"):
        return direction, c.stage, c.mb
    return direction, c.stage - 1 if direction == "F" else c.stage + 1, c.mb


def transfer_ranks(key: Transfer, rank: Sequence[int]) -> tuple[int, int] | None:
    """The ranks ``(sender, receiver)`` a transfer joins, ``rank`` giving each stage's rank (one
    pipe); None when its sending or receiving stage does not exist (the last stage's ``SEND_F``,
    stage 0's ``RECV_F``: no message of the step, which the verifier reports by name).

    Example:
        >>> transfer_ranks(("F", 0, 1), (0, 1, 1, 0)), transfer_ranks(("B", 3, 0), (0, 1, 1, 0))
        ((0, 1), (0, 1))
        >>> transfer_ranks(("F", 3, 0), (0, 1, 1, 0)) is None  # no stage 4
        True
    """
    direction, src, _ = key
    dst = src + 1 if direction == "F" else src - 1
    if not (0 <= src < len(rank) and 0 <= dst < len(rank)):
        return None
    return rank[src], rank[dst]


@dataclass(frozen=True)
class Crossing:
    """The first message between two ranks that PyTorch's runtime delivers to the wrong RECV:
    rank ``src``'s ``nth`` message to rank ``dst`` (0 = first) is ``send``, which ``dst`` posts
    ``recv`` to receive; ``payload`` is what ``send`` carries: ``(direction, sending stage, mb)``."""

    src: int
    dst: int
    nth: int
    send: Comm
    recv: Comm
    payload: Transfer

    def to_text(self) -> str:
        """The crossing in words, with the fix.

        Example:
            >>> Crossing(1, 0, 0, Comm("SEND_B", 1, 1), Comm("RECV_B", 0, 0), ("B", 1, 1)).to_text()  # doctest: +ELLIPSIS
            "rank 1's first message to rank 0 is 1SEND_B1, which rank 0 receives as 0RECV_B0: ... gradient ..."
        """
        nth = {0: "first", 1: "second", 2: "third"}.get(self.nth, f"{self.nth + 1}th")
        what = "activation" if self.payload[0] == "F" else "gradient"
        src, dst, recv = self.src, self.dst, self.recv
        return (
            f"rank {src}'s {nth} message to rank {dst} is {self.send}, which rank {dst} receives as {recv}: "
            "PyTorch's send/receive ops carry no tag, so two ranks match their messages in the order they "
            f"post them, and {recv} gets microbatch {self.payload[2]}'s {what} (no error, wrong gradients); post "
            f"the SENDs in the order rank {dst} receives them, or write compute_only and let PyTorch place them"
        )


def crossed_messages(schedule: Schedule, reordered_only: bool = False) -> list[Crossing]:
    """For each pair of ranks, the first message PyTorch's runtime would deliver to another RECV
    than the one written for it (messages between two ranks are matched in posting order; see the
    module docstring), in rank-pair order. A schedule without SEND/RECV actions (PyTorch lowers it
    itself) and a two-pipe one: none. ``reordered_only``: only pairs of ranks whose SENDs and
    RECVs name the same messages in another order; where one is missing, extra or renamed, the
    fault is that action (what ``verify`` reports by name), and the order follows from it.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rows = [["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"],
        ...         ["1RECV_F0", "1F0", "1RECV_F1", "1F1", "1B0", "1B1", "1SEND_B1", "1SEND_B0"]]
        >>> [(c.src, c.dst, str(c.send), str(c.recv)) for c in crossed_messages(parse_rows(rows))]
        [(1, 0, '1SEND_B1', '0RECV_B0')]
        >>> rows[1].remove("1SEND_B0")  # 0RECV_B0 gets microbatch 1's gradient, 0RECV_B1 nothing
        >>> len(crossed_messages(parse_rows(rows))), crossed_messages(parse_rows(rows), reordered_only=True)
        (1, [])
    """
    out = []
    for (src, dst), (sends, recvs) in _messages(schedule).items():
        if reordered_only and sorted(m for m, _ in sends) != sorted(m for m, _ in recvs):
            continue
        for k, ((msg, send), (want, recv)) in enumerate(zip(sends, recvs)):
            if msg != want:
                out.append(Crossing(src, dst, k, send, recv, msg))
                break  # after the first crossing every later message of the pair is suspect
    return out


def unmatched_pairs(schedule: Schedule) -> list[tuple[int, int]]:
    """The pairs of ranks ``(sender, receiver)`` whose SENDs and RECVs do not name the same
    messages (one missing, extra or renamed), where :func:`crossed_messages` with
    ``reordered_only`` does not look.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> unmatched_pairs(parse_rows([["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0"]]))
        [(1, 0)]
    """
    return [
        pair
        for pair, (sends, recvs) in _messages(schedule).items()
        if sorted(m for m, _ in sends) != sorted(m for m, _ in recvs)
    ]


_Posted = list[tuple[Transfer, Comm]]


def _messages(schedule: Schedule) -> dict[tuple[int, int], tuple[_Posted, _Posted]]:
    """Per pair of ranks ``(sender, receiver)``, in pair order: the sender's SENDs and the
    receiver's RECVs in posting order, each with the message it names. One pipe only (else none)."""
    if schedule.placement.num_pipes != 1:
        return {}
    rank = tuple(schedule.placement.maps[0])
    sent: dict[tuple[int, int], _Posted] = {}
    received: dict[tuple[int, int], _Posted] = {}
    for r, program in enumerate(schedule.programs):
        for a in program:
            if not isinstance(a, Comm):
                continue
            msg = transfer_key(a)
            ranks = transfer_ranks(msg, rank)
            if ranks is None:  # no such stage: the verifier reports the action by name
                continue
            # the action's own end is the rank it is written on (a misplaced one is reported as such)
            send = a.kind.startswith("SEND")
            pair = (r, ranks[1]) if send else (ranks[0], r)
            if pair[0] != pair[1]:  # a hand-over between two stages of one rank sends nothing
                (sent if send else received).setdefault(pair, []).append((msg, a))
    return {pair: (sent.get(pair, []), received.get(pair, [])) for pair in sorted(set(sent) | set(received))}


def message_order_problem(schedule: Schedule) -> str | None:
    """Where ``schedule``'s SEND/RECV actions (a ``compute_comms`` file) would deliver one
    microbatch's tensor as another's in PyTorch's runtime (the first of :func:`crossed_messages`),
    or None. A schedule without SEND/RECV actions (PyTorch lowers it itself) and a two-pipe one: None.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rows = [["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"],
        ...         ["1RECV_F0", "1F0", "1RECV_F1", "1F1", "1B0", "1B1", "1SEND_B1", "1SEND_B0"]]
        >>> message_order_problem(parse_rows(rows))  # doctest: +ELLIPSIS
        "rank 1's first message to rank 0 is 1SEND_B1, which rank 0 receives as 0RECV_B0: ... gradient ..."
    """
    crossed = crossed_messages(schedule)
    return crossed[0].to_text() if crossed else None


def check_runnable(schedule: Schedule, hint: str = "") -> None:
    """Refuse (:class:`~ppverify.core.errors.ParameterError`, naming the schedule) a schedule whose
    last stage PyTorch's runtime cannot run (:func:`loss_order_problem`); ``hint`` ends the message.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> check_runnable(parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F1", "1F0", "1B0", "1B1"]], "x.csv"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedule=x.csv p=2 m=2 format=compute_only placement=linear: rank 1 runs the last stage's forwards in the order 1F1, 1F0: PyTorch's runtime keeps the last stage's losses in the order its forwards ran and reads them back by microbatch number, so a backward gets another microbatch's loss and the step fails; run stage 1's forwards in microbatch order
    """
    problem = loss_order_problem(schedule)
    if problem is not None:
        from ..core.errors import ParameterError

        raise ParameterError("schedule", schedule.describe(), problem + hint)


__all__ = [
    "Crossing",
    "Transfer",
    "check_runnable",
    "crossed_messages",
    "early_backward",
    "first_misplaced_forward",
    "loss_order_problem",
    "message_order_problem",
    "out_of_order_forwards",
    "transfer_key",
    "transfer_ranks",
    "unmatched_pairs",
]
