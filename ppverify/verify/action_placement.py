"""Placement of the actions that are not compute ops: SEND/RECV and UNSHARD/RESHARD/REDUCE_GRAD.

A rank's list may only name stages that rank holds. PyTorch's runtime maps each stage index to
the rank whose list names it, and refuses a file where two ranks name one stage ("Stage 1 is
assigned to both rank 1 and rank 0"); the verifier's order model, which matches a SEND with its
RECV by stage, microbatch and direction, would otherwise pair a RECV written on the wrong rank
with its SEND as if it ran where it belongs. The rules, one ground fact per action:

* ``sSEND_Fmb``, ``sRECV_Fmb``, ``sSEND_Bmb``, ``sRECV_Bmb`` run on the rank holding stage ``s``
  for microbatch ``mb``'s pipe (``place(pipe(mb), s)``, the rank that runs ``F(s, mb)``), and
  name a stage and microbatch that exist;
* ``sUNSHARD``, ``sRESHARD``, ``sREDUCE_GRAD`` run on a rank holding stage ``s`` (in some pipe).

A misplaced action is a ``placement`` violation whose core is the action itself; a comm action
naming a stage or microbatch that does not exist breaks ``completeness``. Like a misplaced
compute op, it is set aside before the later checks (:func:`check_action_placement` returns its
position), and the transfer or stage it concerns is excused there, so one fault is reported
once. That each SEND is matched by exactly one RECV of the same stage pair, microbatch and
direction (and the reverse) is the order model's part (:mod:`.comm_model`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.ops import Comm, Marker
from ..core.schedule import Schedule
from ..io.torch_rules import transfer_key
from .report import Violation

RULE_COMM = "SEND/RECV on the rank holding its stage"
RULE_MARKER = "UNSHARD/RESHARD/REDUCE_GRAD on a rank holding its stage"
RULE_EXISTS = "stage and microbatch exist"


@dataclass(frozen=True)
class Misplaced:
    """What the structural rules set aside among the non-compute actions: their positions
    ``(rank, index in the rank's list)``, the transfers they belong to (``(direction, sending
    stage, microbatch)``, the order model's key) and the stages of misplaced markers.

    Example:
        >>> Misplaced().positions
        frozenset()
    """

    positions: frozenset[tuple[int, int]] = frozenset()
    transfers: frozenset[tuple[str, int, int]] = frozenset()
    stages: frozenset[int] = frozenset()


def has_other_actions(schedule: Schedule) -> bool:
    """True when any program holds a SEND/RECV or a marker (the only actions checked here).

    Example:
        >>> from ppverify.schedules import build
        >>> has_other_actions(build("1f1b", p=2, m=2))
        False
    """
    return any(Comm in kinds or Marker in kinds for kinds in (set(map(type, prog)) for prog in schedule.programs))


def check_action_placement(schedule: Schedule) -> tuple[list[Violation], Misplaced]:
    """The violations of the rules above, in program order, and what they set aside.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> s = parse_rows([["0F0", "0SEND_F0", "1RECV_F0", "0RECV_B0", "0B0"], ["1F0", "1B0", "1SEND_B0"]])
        >>> v, out = check_action_placement(s)
        >>> print(v[0].to_text())
        placement: 1RECV_F0 is on rank 0 but stage 1 (microbatch 0) lives on rank 1 [SEND/RECV on the rank holding its stage; core: 1RECV_F0]
        >>> sorted(out.positions), sorted(out.transfers)
        ([(0, 2)], [('F', 0, 0)])
    """
    if not has_other_actions(schedule):
        return [], Misplaced()
    S, m, pl = schedule.num_stages, schedule.m, schedule.placement
    holders = [{mp[s] for mp in pl.maps} for s in range(S)]
    out: list[Violation] = []
    positions: set[tuple[int, int]] = set()
    transfers: set[tuple[str, int, int]] = set()
    stages: set[int] = set()
    for r, prog in enumerate(schedule.programs):
        for k, a in enumerate(prog):
            if type(a) is Comm:
                if not (0 <= a.stage < S and 0 <= a.mb < m):
                    msg = (
                        f"{a} on rank {r} refers to a stage or microbatch that does not exist "
                        f"(stages 0..{S - 1}, microbatches 0..{m - 1})"
                    )
                    out.append(Violation("completeness", RULE_EXISTS, msg, (str(a),)))
                else:
                    want = pl.maps[schedule.pipe_of_mb[a.mb]][a.stage]
                    if want == r:
                        continue
                    msg = f"{a} is on rank {r} but stage {a.stage} (microbatch {a.mb}) lives on rank {want}"
                    out.append(Violation("placement", RULE_COMM, msg, (str(a),)))
                transfers.add(transfer_key(a))
                positions.add((r, k))
            elif type(a) is Marker:
                if 0 <= a.stage < S and r in holders[a.stage]:
                    continue
                where = (
                    f"stage {a.stage} lives on rank {', '.join(map(str, sorted(holders[a.stage])))}"
                    if 0 <= a.stage < S
                    else f"stage {a.stage} does not exist (stages 0..{S - 1})"
                )
                out.append(Violation("placement", RULE_MARKER, f"{a} is on rank {r} but {where}", (str(a),)))
                positions.add((r, k))
                stages.add(a.stage)
    return out, Misplaced(frozenset(positions), frozenset(transfers), frozenset(stages))


__all__ = ["RULE_COMM", "RULE_EXISTS", "RULE_MARKER", "Misplaced", "check_action_placement", "transfer_key"]
