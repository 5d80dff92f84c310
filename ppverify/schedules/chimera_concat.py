"""Chimera's concatenation of basic units (``units=concat``; Li & Hoefler, "Chimera", SC'21,
arXiv 2107.06925, section 3.5): the peaks of one unit and the programs of k units run back to
back, later units' forwards filling the previous unit's drain (see :mod:`.chimera`).
"""

from __future__ import annotations

from ..core.ops import B, F, Op, Overlap
from ..core.schedule import Schedule


def unit_peaks(unit: Schedule) -> list[int]:
    """Most activations each device of a schedule holds: the largest ``#F - #B`` over the prefixes
    of its program (an F starts only after every earlier op of its device has ended, so this does
    not depend on the costs).

    Example:
        >>> from ppverify.schedules import build
        >>> unit_peaks(build("chimera", 4, 4))
        [3, 4, 4, 3]
    """
    peaks = []
    for prog in unit.programs:
        held = peak = 0
        for op in prog:
            assert op is not None and not isinstance(op, Overlap)  # a unit has no overlapped or empty slots
            held += 1 if op.kind == F else -1 if op.kind == B else 0
            peak = max(peak, held)
        peaks.append(peak)
    return peaks


def concat_programs(unit: Schedule, k: int) -> tuple[tuple[Op, ...], ...]:
    """Programs of ``k`` concatenated copies of a basic unit of ``p`` microbatches (module doc,
    ``units=concat``): copy u runs microbatches ``u*p ..``; forwards of copy u+1 fill copy u's drain.

    The order is the one a slot-by-slot run at unit cost produces: in each slot every free device
    runs its current unit's next op if its inputs have arrived, else (only once that unit's forwards
    are all issued on it) the next unit's next op if that is a forward with its inputs there and the
    device holds fewer activations than :func:`unit_peaks` allows. Decisions in a slot use only what
    ended before it, so the device order does not matter.

    Example:
        >>> from ppverify.schedules import build
        >>> [str(o) for o in concat_programs(build("chimera", 4, 4), 2)[0]]
        ['0F0', '0F1', '3F2', '3B2', '3F3', '3B3', '0B0', '0F4', '0B1', '0F5', '3F6', '3B6', '3F7', '3B7', '0B4', '0B5']
    """
    from ..core.dag import predecessors

    p, n = unit.p, unit.m
    units = [[op for op in prog if isinstance(op, Op)] for prog in unit.programs]
    last_f = [max((i for i, op in enumerate(prog) if op.kind == F), default=-1) for prog in units]
    caps = unit_peaks(unit)
    preds = {op: [q for q, _ in predecessors(op, unit.num_stages, False)] for prog in units for op in prog}
    cur = [0] * p  # unit each device is in
    pos = [0] * p  # next op of that unit
    pulled = [0] * p  # leading ops (forwards) of the next unit already run
    held = [0] * p
    done: set[Op] = set()
    out: list[list[Op]] = [[] for _ in range(p)]
    started: list[tuple[int, int, Op]] = []  # (device, unit, op) run in the previous slot

    def ready(op: Op, u: int) -> bool:
        return all(Op(q.kind, q.stage, q.mb + u * n) in done for q in preds[op])

    while True:
        for d, u, op in started:
            done.add(Op(op.kind, op.stage, op.mb + u * n))
            if op.kind == B:
                held[d] -= 1
        started = []
        for d in range(p):
            if cur[d] >= k:
                continue
            u, prog = cur[d], units[d]
            if ready(prog[pos[d]], u):
                op, run_unit = prog[pos[d]], u
                pos[d] += 1
            elif (
                u + 1 < k
                and pos[d] > last_f[d]
                and pulled[d] < len(prog)
                and prog[pulled[d]].kind == F
                and held[d] < caps[d]
                and ready(prog[pulled[d]], u + 1)
            ):
                op, run_unit = prog[pulled[d]], u + 1
                pulled[d] += 1
            else:
                continue
            if op.kind == F:
                held[d] += 1
            out[d].append(Op(op.kind, op.stage, op.mb + run_unit * n))
            started.append((d, run_unit, op))
            if pos[d] == len(prog):
                cur[d], pos[d], pulled[d] = u + 1, pulled[d], 0
        if not started:
            break
    if any(c < k for c in cur):  # cannot happen: each unit alone completes (kept as a guard)
        raise RuntimeError(f"basic-unit concatenation stalled at units {cur}")
    return tuple(tuple(prog) for prog in out)
