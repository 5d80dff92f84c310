"""Gradient reduction and sharding of a ``compute_comms`` schedule (PyTorch's runtime flavour).

PyTorch's runtime runs a ``compute_comms`` file as written: nothing adds the actions its
compute-only lowering would add (:mod:`ppverify.io.torch_lowering`). Two properties follow:

* **reduction**: each stage has exactly one ``sREDUCE_GRAD``, on the stage's rank, after every
  gradient-accumulating op of the stage (``B``, or ``W`` of a split backward). The runtime scales
  the accumulated gradients by ``1/m`` there; without it they are m times too large, and before
  the last ``B``/``W`` the later microbatches' gradients are not scaled.
* **sharding** (when the file shards, i.e. holds any ``UNSHARD``/``RESHARD``, as PyTorch's
  lowering always does): on its rank, every compute op of a stage runs between an ``UNSHARD`` of
  the stage and the next ``RESHARD`` of it; a stage is not unsharded twice nor resharded while
  sharded (PyTorch's runtime asserts both for FSDP stages), and a stage unsharded in the step
  ends it resharded: the runtime keeps the set of unsharded stages from one step to the next, so
  a stage left unsharded makes the next step's first ``UNSHARD`` fail ("Unsharding the same
  stage twice"); PyTorch's own lowering (``_add_unshard_reshard``) reshards every stage still
  active at the end. A file with no UNSHARD/RESHARD at all runs plain (unsharded) stages, for
  which the runtime skips these actions.

Schedules PyTorch lowers get both properties from the lowering, so the rules apply only to what
its runtime runs as written: a ``compute_comms`` file, or a schedule whose programs hold markers
(a file's markers decide, whatever its labels say). The rules are ground facts
about positions in the programs, decided by one scan; each violation's core names the ops that
break it (the marker and the compute op it is misplaced against, or the op left uncovered).
"""

from __future__ import annotations

from ..core.ops import B, Marker, Op, Overlap, W
from ..core.schedule import Schedule
from .report import Violation

REDUCTION, SHARDING = "reduction", "sharding"
RULE_REDUCE_ONCE = "each stage's gradients reduced once (REDUCE_GRAD), on its rank"
RULE_REDUCE_AFTER = "REDUCE_GRAD after the stage's last B/W"
RULE_UNSHARDED = "stage unsharded (UNSHARD) before use, not resharded (RESHARD) until after"
RULE_PAIRED = "UNSHARD and RESHARD alternate per stage"
RULE_ENDS_SHARDED = "a sharded stage ends the step resharded (RESHARD after its last use)"


def applies(schedule: Schedule) -> bool:
    """True for a one-pipe schedule in PyTorch's runtime flavour, run as written: one read from a
    ``compute_comms`` file (``params["format"]``, which the CSV reader sets from the cells), or
    one whose programs hold markers (``REDUCE_GRAD``, ``UNSHARD``/``RESHARD``), whatever its file
    says. A ppverify schedule with SEND/RECV and no marker is not one: nothing reduces its
    gradients in PyTorch's place. PyTorch's runtime has no two-pipe schedules.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> applies(parse_rows([["0F0", "0B0"]])), applies(parse_rows([["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]]))
        (False, True)
    """
    if schedule.placement.num_pipes != 1:
        return False
    if schedule.params.get("format") == "compute_comms":
        return True
    return any(Marker in set(map(type, prog)) for prog in schedule.programs)


def _parts(a):
    return a.ops if isinstance(a, Overlap) else (a,)


def check_reduction(schedule: Schedule, skip: frozenset[int] = frozenset()) -> list[Violation]:
    """Violations of the reduction rules (one per stage at most; none for the stages in ``skip``,
    whose REDUCE_GRAD the placement rules set aside).

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> s = parse_rows([["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0", "1REDUCE_GRAD"]])
        >>> print(check_reduction(s)[0].to_text())
        reduction: stage 0's gradients are never reduced (no 0REDUCE_GRAD on rank 0 after 0B0): PyTorch's runtime never runs the stage's gradient reduction step [each stage's gradients reduced once (REDUCE_GRAD), on its rank; core: 0B0]
    """
    rank_of = schedule.placement.maps[0]
    last_acc: dict[int, tuple[int, int, Op]] = {}  # stage -> (rank, position, op) of its last B/W
    reduces: dict[int, list[tuple[int, int]]] = {}
    for r, prog in enumerate(schedule.programs):
        for k, a in enumerate(prog):
            if isinstance(a, Marker):
                if a.kind == "REDUCE_GRAD":
                    reduces.setdefault(a.stage, []).append((r, k))
                continue
            for o in _parts(a):
                if type(o) is Op and o.kind in (B, W):
                    last_acc[o.stage] = (r, k, o)  # programs are per rank: the last seen is the last run
    out = []
    for s in range(schedule.num_stages):
        if s in skip:
            continue
        red = f"{s}REDUCE_GRAD"
        found = reduces.get(s, [])
        acc = last_acc.get(s)
        acc_txt = f" after {acc[2]}" if acc else ""
        if not found:
            out.append(
                Violation(
                    REDUCTION,
                    RULE_REDUCE_ONCE,
                    f"stage {s}'s gradients are never reduced (no {red} on rank {rank_of[s]}{acc_txt}): "
                    + (
                        f"PyTorch's runtime leaves them m={schedule.m} times too large"
                        if schedule.m > 1  # at m = 1 the 1/m scale is 1: the reduction step is what is lost
                        else "PyTorch's runtime never runs the stage's gradient reduction step"
                    ),
                    (str(acc[2]),) if acc else (),
                )
            )
        elif len(found) > 1:
            out.append(
                Violation(
                    REDUCTION,
                    RULE_REDUCE_ONCE,
                    f"{red} appears {len(found)} times (ranks {', '.join(str(r) for r, _ in found)}): "
                    "the gradients are scaled more than once",
                    (red,),
                )
            )
        elif found[0][0] != rank_of[s]:
            out.append(
                Violation(
                    REDUCTION,
                    RULE_REDUCE_ONCE,
                    f"{red} is on rank {found[0][0]} but stage {s} lives on rank {rank_of[s]}",
                    (red,),
                )
            )
        elif acc and acc[0] == found[0][0] and found[0][1] < acc[1]:
            out.append(
                Violation(
                    REDUCTION,
                    RULE_REDUCE_AFTER,
                    f"rank {acc[0]} runs {red} before {acc[2]}: that microbatch's gradients are "
                    "accumulated after the reduction",
                    (red, str(acc[2])),
                )
            )
    return out


def check_sharding(schedule: Schedule, skip: frozenset[int] = frozenset()) -> list[Violation]:
    """Violations of the sharding rules (the first per stage; none for the stages in ``skip``,
    whose markers the placement rules set aside), or none when the schedule holds no
    UNSHARD/RESHARD (plain stages).

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> s = parse_rows([["0F0", "0UNSHARD", "0B0", "0RESHARD", "0REDUCE_GRAD"]])
        >>> print(check_sharding(s)[0].to_text())
        sharding: rank 0 runs 0F0 while stage 0 is sharded (before its first 0UNSHARD) [stage unsharded (UNSHARD) before use, not resharded (RESHARD) until after; core: 0F0 0UNSHARD]
    """
    if not any(isinstance(a, Marker) and a.kind in ("UNSHARD", "RESHARD") for prog in schedule.programs for a in prog):
        return []
    out: list[Violation] = []
    bad: set[int] = set(skip)
    for r, prog in enumerate(schedule.programs):
        unsharded: set[int] = set()
        last_reshard: dict[int, str] = {}
        for k, a in enumerate(prog):
            if isinstance(a, Marker):
                s = a.stage
                if s in bad:
                    continue
                if a.kind == "UNSHARD":
                    if s in unsharded:
                        bad.add(s)
                        out.append(
                            Violation(
                                SHARDING,
                                RULE_PAIRED,
                                f"rank {r} unshards stage {s} twice without a RESHARD between",
                                (str(a),),
                            )
                        )
                    unsharded.add(s)
                elif a.kind == "RESHARD":
                    if s not in unsharded:
                        bad.add(s)
                        out.append(
                            Violation(
                                SHARDING, RULE_PAIRED, f"rank {r} reshards stage {s} which is not unsharded", (str(a),)
                            )
                        )
                    unsharded.discard(s)
                    last_reshard[s] = str(a)
                continue
            for o in _parts(a):
                if type(o) is not Op or o.stage in unsharded or o.stage in bad:
                    continue
                s = o.stage
                bad.add(s)
                core: tuple[str, ...]
                if s in last_reshard:
                    why, core = f"after {last_reshard[s]}", (str(o), last_reshard[s])
                else:
                    later = any(isinstance(x, Marker) and x.kind == "UNSHARD" and x.stage == s for x in prog[k:])
                    why = f"before its first {s}UNSHARD" if later else f"no {s}UNSHARD on rank {r}"
                    core = (str(o), f"{s}UNSHARD") if later else (str(o),)
                out.append(
                    Violation(SHARDING, RULE_UNSHARDED, f"rank {r} runs {o} while stage {s} is sharded ({why})", core)
                )
        for s in sorted(unsharded - bad):
            bad.add(s)
            out.append(
                Violation(
                    SHARDING,
                    RULE_ENDS_SHARDED,
                    f"rank {r} ends the step with stage {s} unsharded (no {s}RESHARD after its last {s}UNSHARD): "
                    "PyTorch's runtime keeps it unsharded, and the next step's UNSHARD fails "
                    "('Unsharding the same stage twice')",
                    (f"{s}UNSHARD",),
                )
            )
    return out


def check_grad_sync(schedule: Schedule) -> tuple[list[Violation], list[tuple[str, str]]]:
    """Both properties for a ``compute_comms`` file: ``(violations, proved statements)``; empty
    for other schedules (see :func:`applies`).

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> from ppverify.io.torch_lowering import lower_like_pytorch
        >>> from ppverify.schedules import build
        >>> rows = [[str(a) for a in prog] for prog in lower_like_pytorch(build("1f1b", p=2, m=2)).programs]
        >>> v, proved = check_grad_sync(parse_rows(rows))
        >>> v, [p for p, _ in proved]
        ([], ['reduction', 'sharding'])
    """
    if not applies(schedule):
        return [], []
    red, shard = check_reduction(schedule), check_sharding(schedule)
    proved = []
    if not red:
        proved.append(
            (
                REDUCTION,
                f"each of the {schedule.num_stages} stages reduces its gradients once, on its rank, after its last B/W",
            )
        )
    if not shard:
        shards = any(isinstance(a, Marker) and a.kind != "REDUCE_GRAD" for prog in schedule.programs for a in prog)
        proved.append(
            (
                SHARDING,
                "every compute op runs on an unsharded stage"
                if shards
                else "no UNSHARD/RESHARD: plain (unsharded) stages",
            )
        )
    return red + shard, proved


__all__ = [
    "REDUCTION",
    "RULE_ENDS_SHARDED",
    "RULE_PAIRED",
    "RULE_REDUCE_AFTER",
    "RULE_REDUCE_ONCE",
    "RULE_UNSHARDED",
    "SHARDING",
    "applies",
    "check_grad_sync",
    "check_reduction",
    "check_sharding",
]
