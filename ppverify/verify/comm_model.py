"""Point-to-point actions and their semantics: build the :class:`~.order.OrderProblem` of a
schedule.

Where SEND/RECV come from:

* **explicit**: when any program holds :class:`~ppverify.core.ops.Comm` actions (PyTorch's
  ``compute_comms`` flavour), they are taken as written. ``sSEND_Fmb`` sends ``F(s, mb)``'s
  output to stage s+1, whose ``(s+1)RECV_Fmb`` receives it; ``sSEND_Bmb`` sends the gradient of
  ``(s, mb)`` to stage s-1, whose ``(s-1)RECV_Bmb`` receives it. A SEND must follow the op it
  sends, the consumer must follow its RECV, and the k-th SEND of a transfer matches its k-th
  RECV. A RECV whose SEND is never posted (or, blocking, a SEND never received) waits forever.
  ``posting=True`` matches them as PyTorch's runtime does instead (its ops carry no tag): the
  k-th SEND from one rank to another with the k-th RECV the other rank posts from it, whatever
  they name; each SEND still follows the op it names and each consumer the RECV named for it.
  That differs only where the names cross (``pytorch message order``): what then arrives is
  another microbatch's tensor, and whether the step completes is decided under that matching.
* **derived** (compute-only programs), the placement policy: every dependency that crosses
  devices gets a SEND right after the producing op and a RECV right before the consuming op.

Semantics:

* ``buffered``: a SEND never blocks (it is copied into a buffer, like ``isend`` with unlimited
  buffering); a RECV is posted (``irecv``) and the op that consumes its data waits until its
  SEND has been posted, as PyTorch's runtime waits on a RECV only at that op. With the derived
  policy this is exactly the step's DAG, so no extra nodes are needed.
* ``rendezvous``: NCCL-style blocking point-to-point: a transfer happens once both its SEND
  and its RECV are posted, and both devices resume only after it. Consecutive comm actions with
  no compute between them are posted as one group (``ncclGroupStart/End``,
  ``batch_isend_irecv``, Megatron's ``send_forward_recv_backward``): all are posted at once, each
  transfer completes on its own, and the device resumes when all of them completed.
  ``group=False`` posts each action on its own, in program order (under which plain 1F1B
  deadlocks, as is well known).
"""

from __future__ import annotations

from ..core.dag import ACT, GRAD, StepDAG
from ..core.errors import ParameterError
from ..core.lowering import runs_as_written
from ..core.ops import Comm, Op, Overlap, W
from ..core.schedule import Schedule
from ..io.torch_rules import Transfer, transfer_key, transfer_ranks
from .order_problem import OrderProblem

COMM_SEMANTICS: tuple[str, ...] = ("buffered", "rendezvous")
#: rule of a SEND that matches no transfer of the step (reported under completeness)
NO_TRANSFER = "SEND matches no transfer of the step"


def edge_rule(op: Op, kind: str) -> str:
    """Name of the dependency rule an edge into ``op`` enforces.

    Example:
        >>> edge_rule(Op("W", 0, 1), "local"), edge_rule(Op("F", 1, 0), "activation")
        ('W after its own I', "forward after the previous stage's forward")
    """
    if kind == ACT:
        return "forward after the previous stage's forward"
    if kind == GRAD:
        return "backward after the next stage's backward"
    return "W after its own I" if op.kind == W else "backward after its forward"


def _comm_text(kind: str, q: Op, i: Op, send: bool) -> str:
    d = "F" if kind == ACT else "B"
    return f"{q.stage}SEND_{d}{q.mb}" if send else f"{i.stage}RECV_{d}{i.mb}"


def build_problem(
    dag: StepDAG,
    semantics: str = "buffered",
    group: bool = True,
    excused: frozenset[tuple[str, int, int]] = frozenset(),
    posting: bool = False,
) -> tuple[OrderProblem, list[int]]:
    """The order problem of a (structurally clean) schedule's DAG; returns it and the node of
    each DAG position. ``excused`` transfers (``(direction, sending stage, microbatch)``) lost a
    SEND or RECV that the structural rules set aside (:mod:`.action_placement`): their missing
    partner is not reported again. ``posting``: explicit SEND/RECV between two ranks matched in
    posting order, as PyTorch's runtime matches them (see the module doc).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.core.dag import build_dag
        >>> pb, _ = build_problem(build_dag(build("gpipe", p=2, m=1)), "rendezvous")
        >>> pb.text[:4], pb.text[-1]
        (['0F0', '0SEND_F0+0RECV_B0', '0SEND_F0+0RECV_B0', '0B0'], 'transfer of 0SEND_F0')
    """
    if semantics not in COMM_SEMANTICS:
        raise ParameterError("comm semantics", semantics, f"expected one of {', '.join(COMM_SEMANTICS)}")
    if runs_as_written(dag.schedule):
        return _explicit(dag, semantics, group, excused, posting)
    return _derived(dag, semantics, group)


def _dep_edges(pb: OrderProblem, dag: StepDAG, node: list[int], cross_too: bool) -> None:
    for i, preds in enumerate(dag.pred):
        for e, q in enumerate(preds):
            if q >= 0 and (cross_too or not dag.cross[i][e]):
                pb.edge(node[q], node[i], 1, edge_rule(dag.ops[i], dag.edge[i][e]))


def _derived(dag: StepDAG, semantics: str, group: bool) -> tuple[OrderProblem, list[int]]:
    pb = OrderProblem()
    node = [-1] * dag.num_ops
    if semantics == "buffered":
        for i in range(dag.num_ops):
            node[i] = pb.node(
                str(dag.ops[i]), dag.device[i], i > 0 and dag.fused[i - 1] and dag.device[i - 1] == dag.device[i]
            )
        _dep_edges(pb, dag, node, cross_too=True)
        return pb, node
    # rendezvous: comm actions live in the gaps between slots; gap k precedes slot k
    slot_of = [0] * dag.num_ops
    nslots = []
    for d in range(len(dag.offsets) - 1):
        k = -1
        for i in range(dag.offsets[d], dag.offsets[d + 1]):
            if i == dag.offsets[d] or not dag.fused[i - 1]:
                k += 1
            slot_of[i] = k
        nslots.append(k + 1)
    gaps: dict[tuple[int, int], list[tuple[str, int]]] = {}  # (device, gap) -> [(text, pair id)]
    send_text: list[str] = []
    npairs = 0
    for i, preds in enumerate(dag.pred):
        for e, q in enumerate(preds):
            if q >= 0 and dag.cross[i][e]:
                kind = dag.edge[i][e]
                send_text.append(_comm_text(kind, dag.ops[q], dag.ops[i], True))
                gaps.setdefault((dag.device[q], slot_of[q] + 1), []).append((send_text[-1], npairs))
                gaps.setdefault((dag.device[i], slot_of[i]), []).append(
                    (_comm_text(kind, dag.ops[q], dag.ops[i], False), npairs)
                )
                npairs += 1
    ends: dict[tuple[int, bool], tuple[int, int]] = {}  # (pair id, is send) -> (post, done)
    for d in range(len(dag.offsets) - 1):
        i = dag.offsets[d]
        for k in range(nslots[d] + 1):
            acts = sorted(gaps.get((d, k), []), key=lambda x: ("RECV" in x[0], x[1]))  # sends first
            for grp in [acts] if acts and group else [[a] for a in acts]:
                post_done = _group_nodes(pb, "+".join(t for t, _ in grp), d)
                for t, pid in grp:
                    ends[(pid, "SEND" in t)] = post_done
            first = True
            while i < dag.offsets[d + 1] and slot_of[i] == k:
                node[i] = pb.node(str(dag.ops[i]), d, not first)
                first = False
                i += 1
    _dep_edges(pb, dag, node, cross_too=False)
    for pid in range(npairs):
        _rendezvous(pb, ends[(pid, True)], ends[(pid, False)], send_text[pid])
    return pb, node


RENDEZVOUS_RULE = "rendezvous: a transfer completes once SEND and RECV are both posted, and both wait for it"


def _group_nodes(pb: OrderProblem, text: str, device: int) -> tuple[int, int]:
    """A group of comm actions posted together: its post and its completion, in program order."""
    post = pb.node(text, device)
    return post, pb.node(text, device)


def _rendezvous(pb: OrderProblem, send: tuple[int, int], recv: tuple[int, int], what: str) -> None:
    """Blocking pair: the transfer event x happens after both posts; both completions wait for
    it. (Other transfers of the same group are independent of this one, as in NCCL groups.)"""
    x = pb.node(f"transfer of {what}", -1)
    for a, b in ((send[0], x), (recv[0], x), (x, send[1]), (x, recv[1])):
        pb.edge(a, b, 0, RENDEZVOUS_RULE)


#: rule of a transfer matched as PyTorch's runtime matches it (``posting=True``)
POSTING_RULE = "untagged: a RECV gets the SEND posted in the same place of the other rank's messages to it"


def _explicit(
    dag: StepDAG,
    semantics: str,
    group: bool,
    excused: frozenset[tuple[str, int, int]] = frozenset(),
    posting: bool = False,
) -> tuple[OrderProblem, list[int]]:
    pb = OrderProblem()
    node = [-1] * dag.num_ops
    sends: dict[tuple[str, int, int], list[tuple[int, int]]] = {}
    recvs: dict[tuple[str, int, int], list[tuple[int, int]]] = {}
    blocking = semantics == "rendezvous"
    rank = tuple(dag.schedule.placement.maps[0])
    # posting order: (is SEND, sender, receiver) -> nodes in program order; a hand-over between
    # two stages of one rank sends nothing, so it keeps the matching by name
    posted: dict[tuple[bool, int, int], list[tuple[tuple[int, int], str]]] = {}

    def positional(key: Transfer) -> tuple[int, int] | None:
        """The ranks ``(sender, receiver)`` of a transfer matched in posting order, else None."""
        # a SEND/RECV naming no stage pair (the last stage's SEND_F) is matched by name, reported so
        pair = transfer_ranks(key, rank) if posting else None
        return pair if pair is not None and pair[0] != pair[1] else None

    i = 0
    for d, prog in enumerate(dag.schedule.programs):
        pending: list[Comm] = []

        def flush() -> None:
            if not pending:
                return
            grps = [pending[:]] if (blocking and group and pending) else [[c] for c in pending]
            for grp in grps:
                text = "+".join(str(c) for c in grp)
                pd = _group_nodes(pb, text, d) if blocking else (pb.node(text, d),) * 2
                for c in grp:
                    key, is_send = transfer_key(c), c.kind.startswith("SEND")
                    (sends if is_send else recvs).setdefault(key, []).append(pd)
                    pair = positional(key)
                    if pair is not None:
                        posted.setdefault((is_send, *pair), []).append((pd, str(c)))
            pending.clear()

        for a in prog:
            if type(a) is Op or type(a) is Overlap:
                flush()
                for n, _ in enumerate(a.ops if type(a) is Overlap else (a,)):
                    node[i] = pb.node(str(dag.ops[i]), d, n > 0)
                    i += 1
            elif type(a) is Comm:
                pending.append(a)
        flush()
    _dep_edges(pb, dag, node, cross_too=False)
    used_s: dict[tuple, int] = {}
    used_r: dict[tuple, int] = {}
    # buffered: a RECV is posted (irecv) and the op that consumes its data waits, as PyTorch's
    # runtime waits on a RECV only at that op; the RECV itself blocks nothing
    consumer: dict[int, int] = {}
    for i2, preds in enumerate(dag.pred):
        for e, q in enumerate(preds):
            if q < 0 or not dag.cross[i2][e]:
                continue
            key = ("F" if dag.edge[i2][e] == ACT else "B", dag.ops[q].stage, dag.ops[q].mb)
            s_list, r_list = sends.get(key, []), recvs.get(key, [])
            k_s, k_r = used_s.get(key, 0), used_r.get(key, 0)
            snd = s_list[k_s] if k_s < len(s_list) else None
            rcv = r_list[k_r] if k_r < len(r_list) else None
            used_s[key], used_r[key] = k_s + 1, k_r + 1
            if snd is not None:
                pb.edge(node[q], snd[0], 1, "SEND after the op it sends")
            if rcv is None:
                if key not in excused:
                    pb.edge(node[i2], node[i2], 1, f"input of {dag.ops[i2]} is never received (no RECV)")
                continue
            pb.edge(rcv[1], node[i2], 1, "op after the RECV of its input")
            consumer.setdefault(rcv[1], node[i2])
            if positional(key) is not None:
                continue  # what the RECV receives is decided by posting order, below
            if snd is None:
                if key not in excused:
                    pb.edge(rcv[1], rcv[1], 1, "its SEND is never posted")
            elif blocking:
                _rendezvous(pb, snd, rcv, _names(key)[0])
            else:
                pb.edge(snd[0], node[i2], 1, "buffered: an op waits for its input's SEND")
    # comm actions no transfer uses
    for key, lst in recvs.items():
        if key not in excused and positional(key) is None:
            _unused(pb, dag.schedule, key, False, lst[used_r.get(key, 0) :], len(lst), sends.get(key, []), blocking)
    for key, lst in sends.items():
        if key not in excused and not (blocking and positional(key) is not None):
            _unused(pb, dag.schedule, key, True, lst[used_s.get(key, 0) :], len(lst), recvs.get(key, []), blocking)
    _match_in_posting_order(pb, posted, blocking, consumer)
    return pb, node


#: rule of a SEND or RECV written more than once (one message per transfer)
DUPLICATE = "one SEND and one RECV per transfer"
#: rule of a SEND/RECV between two stages of one rank (which hands over without a message)
SAME_RANK = "SEND/RECV only between stages on different ranks"


def _ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``... ``11th``, ``21st``.

    Example:
        >>> [_ordinal(n) for n in (1, 2, 3, 4, 11, 12, 21)]
        ['1st', '2nd', '3rd', '4th', '11th', '12th', '21st']
    """
    tail = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{tail}"


def _names(key: Transfer) -> tuple[str, str]:
    """The SEND and the RECV of a transfer ``(direction, sending stage, microbatch)``.

    Example:
        >>> _names(("F", 1, 0)), _names(("B", 2, 3))
        (('1SEND_F0', '2RECV_F0'), ('2SEND_B3', '1RECV_B3'))
    """
    d, s, mb = key
    return f"{s}SEND_{d}{mb}", f"{s + 1 if d == 'F' else s - 1}RECV_{d}{mb}"


def _unused(
    pb: OrderProblem,
    schedule: Schedule,
    key: Transfer,
    is_send: bool,
    extra: list[tuple[int, int]],
    count: int,
    partners: list[tuple[int, int]],
    blocking: bool,
) -> None:
    """Report the SENDs (``is_send``) or RECVs of ``key`` that no transfer of the step uses
    (``extra``, of ``count`` written; ``partners``: the other side's, each as posted), each by
    the rule it breaks: a SEND/RECV between two stages of one rank; one written ``count > 1``
    times (the k-th SEND meets the k-th RECV, so an extra one with an extra partner is a second
    message, and one without waits forever, a buffered SEND excepted); else a RECV whose SEND
    is never posted, or a SEND of no transfer (blocking: never received)."""
    send_name, recv_name = _names(key)
    name, other = (send_name, recv_name) if is_send else (recv_name, send_name)
    spare = len(partners) - (count - len(extra))  # the other side's copies that no transfer uses either
    d, stage, mb = key
    to = stage + 1 if d == "F" else stage - 1
    pl = schedule.placement
    pipe = schedule.pipe_of_mb[mb] if 0 <= mb < schedule.m else 0
    ranks = {pl.maps[pipe][x] for x in (stage, to) if 0 <= x < schedule.num_stages}
    for j, (post, done) in enumerate(extra):
        r = pb.device[post]
        if len(ranks) == 1 and 0 <= to < schedule.num_stages and 0 <= stage < schedule.num_stages:
            what = "activation" if d == "F" else "gradient"
            why = f"stages {stage} and {to} are both on rank {r}, which hands microbatch {mb}'s {what} over without a message"
            pb.fault(done, SAME_RANK, "completeness", f"{name} on rank {r} matches no transfer between ranks: {why}")
        elif count > 1:
            times = f"{name} appears {count} times"
            has = f"{other} " + ("once" if len(partners) == 1 else f"{len(partners)} times")
            nth = _ordinal(count - len(extra) + j + 1)
            if j < spare:  # met by an extra partner: the one message of the transfer is sent again
                sent = min(count, len(partners))
                msg = f"{times} on rank {r} (and {has}): the step's one message is sent {'twice' if sent == 2 else f'{sent} times'}"
                pb.fault(done, DUPLICATE, "completeness", msg)
            elif is_send and not blocking:  # left in its buffer: no hang, but no transfer either
                msg = f"{times} on rank {r} (and {has}): no RECV takes the {nth}"
                pb.fault(done, DUPLICATE, "completeness", msg)
            else:
                wait = "no RECV takes" if is_send else "no SEND comes for"
                msg = f"rank {r} waits forever in {pb.text[done]}: {times} (and {has}), and {wait} the {nth}"
                pb.fault(done, DUPLICATE, "deadlock", msg)
        elif is_send:  # blocking: the sender hangs; buffered: harmless to progress, but no such transfer
            pb.edge(done, done, 1, "blocking SEND never received" if blocking else NO_TRANSFER)
        else:
            pb.edge(done, done, 1, "its SEND is never posted")


def _match_in_posting_order(
    pb: OrderProblem,
    posted: dict[tuple[bool, int, int], list[tuple[tuple[int, int], str]]],
    blocking: bool,
    consumer: dict[int, int] | None = None,
) -> None:
    """PyTorch's runtime: the k-th SEND from one rank to another meets the k-th RECV the other
    rank posts from it; a RECV with no k-th SEND waits forever, and so does a blocking SEND with
    no k-th RECV (a buffered one is left in its buffer). Buffered, the op that consumes the
    RECV's data waits for the SEND (``consumer``: RECV node -> that op's node), not the RECV."""
    for (is_send, src, dst), nodes in sorted(posted.items()):
        other = posted.get((not is_send, src, dst), [])
        if is_send:
            for (snd, text), (rcv, _) in zip(nodes, other):
                if blocking:
                    _rendezvous(pb, snd, rcv, text)
                else:
                    pb.edge(snd[0], (consumer or {}).get(rcv[1], rcv[1]), 1, POSTING_RULE)
        for pd, _ in nodes[len(other) :] if blocking or not is_send else ():
            pb.edge(pd[1], pd[1], 1, "blocking SEND never received" if is_send else "its SEND is never posted")


def insert_comms(schedule: Schedule) -> Schedule:
    """The schedule with explicit SEND/RECV actions placed by the derived policy: each
    cross-device dependency gets a SEND right after its producer and a RECV right before its
    consumer (PyTorch's ``compute_comms`` flavour). Under ``buffered`` semantics it verifies
    exactly like the compute-only schedule.

    Example:
        >>> from ppverify.schedules import build
        >>> [str(a) for a in insert_comms(build("gpipe", p=2, m=1)).programs[1]]
        ['1RECV_F0', '1F0', '1B0', '1SEND_B0']
    """
    from ..core.dag import build_dag

    dag = build_dag(schedule, check=False)
    before: dict[int, list[Comm]] = {}
    after: dict[int, list[Comm]] = {}
    for i, preds in enumerate(dag.pred):
        for e, q in enumerate(preds):
            if q >= 0 and dag.cross[i][e]:
                d = "F" if dag.edge[i][e] == ACT else "B"
                after.setdefault(q, []).append(Comm(f"SEND_{d}", dag.ops[q].stage, dag.ops[q].mb))
                before.setdefault(i, []).append(Comm(f"RECV_{d}", dag.ops[i].stage, dag.ops[i].mb))
    programs = []
    i = 0
    for prog in schedule.programs:
        out: list = []
        for a in prog:
            if type(a) is Op or type(a) is Overlap:
                n = len(a.ops) if type(a) is Overlap else 1
                for k in range(i, i + n):
                    out += before.get(k, [])
                out.append(a)
                for k in range(i, i + n):
                    out += after.get(k, [])
                i += n
            else:
                out.append(a)
        programs.append(tuple(out))
    return schedule.with_programs(tuple(programs))


def pytorch_lowering(schedule: Schedule) -> Schedule | None:
    """What PyTorch's runtime runs for a ``compute_only`` schedule: its SEND/RECV placed as
    PyTorch's lowering places them (:func:`ppverify.core.lowering.add_send_recv`: a SEND right
    after its producer, its RECV appended to the receiving rank's list at that moment, i.e.
    posted early), which decides a rendezvous verdict. None when the programs hold SEND/RECV
    already (run as written), for a two-pipe schedule (PyTorch has none), or when the lowering
    cannot place them (no rank can place its next action: the file as written shows that
    deadlock under the derived policy, as PyTorch's ``Malformed compute schedule`` would).

    Example:
        >>> from ppverify.schedules import build
        >>> [str(a) for a in pytorch_lowering(build("1f1b", p=2, m=2)).programs[1]]
        ['1RECV_F0', '1F0', '1RECV_F1', '1B0', '1SEND_B0', '1F1', '1B1', '1SEND_B1']
        >>> pytorch_lowering(insert_comms(build("1f1b", p=2, m=2))) is None
        True
    """
    from ..core.errors import InvalidScheduleError
    from ..core.lowering import add_send_recv

    if runs_as_written(schedule) or schedule.placement.num_pipes != 1:
        return None
    try:
        return add_send_recv(schedule)
    except (InvalidScheduleError, ParameterError):
        return None
