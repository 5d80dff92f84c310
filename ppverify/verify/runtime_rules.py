"""PyTorch's runtime rules as verifier properties, for a schedule read from a PyTorch pipelining
CSV (:func:`ppverify.verify.verify` with ``pytorch=True``), and the note ``verify`` prints for any
other one-pipe schedule that breaks the first.

PyTorch 2.13's ``_PipelineScheduleRuntime`` loads and validates such a file and then, where a
rule is broken, fails the step or trains on the wrong tensors (:mod:`ppverify.io.torch_rules`):

* ``pytorch-loss-order``: the last stage's forwards in microbatch order (the runtime keeps the
  losses in forward order and reads them back by microbatch number; otherwise the step fails);
* ``pytorch-message-order`` (files with SEND/RECV): the SENDs from one rank to another posted in
  the order the other rank posts its RECVs (the runtime's messages carry no tag and are matched in
  posting order; otherwise a RECV gets another microbatch's tensor, with no error).

A file's verdict is INVALID when either is broken. Files, families and tables that are not
PyTorch CSVs keep their verdict: PyTorch never reads them as they are.
"""

from __future__ import annotations

from ..core.lowering import runs_as_written
from ..core.schedule import Schedule
from ..io.torch_rules import (
    early_backward,
    first_misplaced_forward,
    loss_order_problem,
    out_of_order_forwards,
    unmatched_pairs,
)
from .analysis import Run
from .checks import Outcome
from .report import Violation

#: the rule a ``pytorch-loss-order`` violation names
LOSS_RULE = "the last stage's forwards in microbatch order (PyTorch's runtime reads each loss back by microbatch)"
#: the rule a ``pytorch-loss-order`` violation of a one-stage file names
EARLY_RULE = "each backward of microbatch k after k+1 forwards (PyTorch's runtime reads its loss back as the (k+1)-th)"
#: the rule a ``pytorch-message-order`` violation names
MESSAGE_RULE = "one order of messages between two ranks (PyTorch's SEND/RECV carry no tag: matched in posting order)"


def loss_order(run: Run) -> Outcome:
    """A PyTorch file's last stage runs its forwards in microbatch order (one pipe, two stages or
    more); with one stage, each backward of microbatch k runs after k+1 forwards (PyTorch's
    runtime reads its loss back as the (k+1)-th). The property does not apply to other schedules.

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.torch_csv import parse_rows
        >>> s = parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F1", "1F0", "1B0", "1B1"]], "late.csv")
        >>> v = loss_order(Run(s, CostModel.unit(s.placement), NO_COMM, pytorch=True)).violations[0]
        >>> v.prop, v.ops, v.message.split(": ")[0]
        ('pytorch-loss-order', ('1F1', '1F0'), "rank 1 runs the last stage's forwards in the order 1F1, 1F0")
        >>> loss_order(Run(s, CostModel.unit(s.placement), NO_COMM)).statement is None  # not a PyTorch file
        True
        >>> one = parse_rows([["0F2", "0B2", "0F3", "0B3", "0F0", "0B0", "0F1", "0B1"]], "one.csv")
        >>> loss_order(Run(one, CostModel.unit(one.placement), NO_COMM, pytorch=True)).violations[0].ops
        ('0B2', '0F0')
    """
    s = run.structure().clean
    last = s.num_stages - 1
    if not run.pytorch or s.placement.num_pipes != 1:
        return Outcome()
    if last == 0:  # one stage: any forward order runs, but microbatch k's backward needs k+1 losses
        early = early_backward(s)
        if early is None:
            return Outcome(
                f"rank {s.placement.maps[0][0]} runs each backward of microbatch k after k+1 forwards, "
                "so PyTorch's runtime has its loss to read back"
            )
        return Outcome(
            violations=(
                Violation("pytorch-loss-order", EARLY_RULE, loss_order_problem(s) or "", tuple(map(str, early[1:]))),
            ),
        )
    found = out_of_order_forwards(s)
    if found is None:
        rank = s.placement.maps[0][last]
        return Outcome(
            f"rank {rank} runs the last stage's forwards in microbatch order, "
            "the order in which PyTorch's runtime reads their losses back"
        )
    first, belongs = first_misplaced_forward(found[1])
    why = loss_order_problem(s) or ""
    return Outcome(
        violations=(Violation("pytorch-loss-order", LOSS_RULE, why, (str(first), str(belongs))),),
    )


def message_order(run: Run) -> Outcome:
    """A PyTorch file's SENDs from each rank to another are posted in the order the other rank
    posts its RECVs (files with SEND/RECV only: PyTorch lowers a ``compute_only`` file itself,
    in order). One violation per pair of ranks: its first crossed message.

    Example:
        >>> from ppverify.core.comm import NO_COMM
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rows = [["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"],
        ...         ["1RECV_F0", "1F0", "1RECV_F1", "1F1", "1B0", "1B1", "1SEND_B1", "1SEND_B0"]]
        >>> s = parse_rows(rows, "crossed.csv")
        >>> v = message_order(Run(s, CostModel.unit(s.placement), NO_COMM, pytorch=True)).violations[0]
        >>> v.prop, v.ops, v.message.split(": ")[0]
        ('pytorch-message-order', ('1SEND_B1', '0RECV_B0'), "rank 1's first message to rank 0 is 1SEND_B1, which rank 0 receives as 0RECV_B0")
    """
    s = run.structure().clean
    if not run.pytorch or s.placement.num_pipes != 1 or not runs_as_written(s):
        return Outcome()
    crossed = run.crossings()
    odd = unmatched_pairs(s)
    if not crossed and not odd:
        return Outcome(
            "every rank posts its SENDs to another rank in the order that rank posts its RECVs "
            "(PyTorch's runtime matches their untagged messages in that order)"
        )
    # a missing, extra or renamed SEND/RECV is reported by name, as the cause; an order beside it is moot
    src, dst = odd[0] if odd else (0, 0)
    why = (
        f"rank {src}'s SENDs to rank {dst} and rank {dst}'s RECVs from it name different messages (see the violations)"
    )
    return Outcome(
        violations=tuple(
            Violation("pytorch-message-order", MESSAGE_RULE, c.to_text(), (str(c.send), str(c.recv))) for c in crossed
        ),
        unchecked=why if odd else None,
    )


def runtime_note(schedule: Schedule) -> str | None:
    """For a schedule not read from a PyTorch CSV (its verdict unchanged): the note ``verify``
    prints when PyTorch's runtime could not run it as it is (its last stage's forwards out of
    microbatch order; one-pipe schedules only), else None.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> runtime_note(s) is None
        True
        >>> late = s.with_programs((s.programs[0], (s.programs[1][2], s.programs[1][0], *s.programs[1][1:2], *s.programs[1][3:])))
        >>> [str(a) for a in late.programs[1]]
        ['1F1', '1F0', '1B0', '1B1']
        >>> runtime_note(late)  # doctest: +ELLIPSIS
        "PyTorch's runtime could not run this as is: rank 1 runs the last stage's forwards in the order 1F1, 1F0: ...; `ppverify export` refuses it"
    """
    problem = loss_order_problem(schedule)
    if problem is None:
        return None
    return f"PyTorch's runtime could not run this as is: {problem}; `ppverify export` refuses it"
