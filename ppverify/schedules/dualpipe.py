"""DualPipe (DeepSeek-V3, arXiv 2412.19437; order of the deepseek-ai/DualPipe reference code).

Bidirectional like Chimera: ``p`` even, placement ``bidirectional`` (pipe 0 stage s on device s,
pipe 1 stage s on device ``p-1-s``), the first ``m/2`` microbatches flow down pipe 0, the rest
up pipe 1. Each device runs the eight phases of the reference ``DualPipe.step`` with
``N = p/2`` "half ranks", its half rank ``h = min(d, p-1-d)`` and ``M = m/2`` microbatches per
direction. Phase 0 is the device's early stage (pipe 0 on the first half of the devices, pipe 1 on
the second half), phase 1 its late stage:

1. ``2(N-h-1)`` phase-0 forwards;  2. ``h+1`` (phase-0 F, phase-1 F);
3. ``N-h-1`` (phase-1 I, oldest pending W, phase-1 F);
4. ``M-2N+h+1`` (overlapped phase-0 F & phase-1 B, overlapped phase-1 F & phase-0 B) — the first
   pair is not overlapped on the two middle devices;
5. ``N-h-1`` (phase-1 B, overlapped phase-1 F & phase-0 B);
6. ``h+1`` (phase-1 backward, phase-0 backward), split into I (W deferred) from the middle on;
7. ``N-h-1`` (oldest pending W, phase-0 backward, split); 8. the remaining W's.

The same phases with ``N = p``, ``h = d`` and ``M = m`` on the V placement are DualPipeV
(:mod:`ppverify.schedules.dualpipev`). F&B overlapped slots are :class:`ppverify.core.ops.Overlap`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction

from ..core.closed_form import EXACT, LOWER, Formula, exact_costs
from ..core.errors import ParameterError
from ..core.ops import Action, B, F, I, Op, Overlap, W
from ..core.placement import bidirectional
from ..core.schedule import Schedule
from .registry import Family, register


def dualpipe_program(N: int, h: int, M: int, op_of: Callable[[str, int, int], Op]) -> list[Action]:
    """One device's DualPipe phases (see the module doc). ``op_of(kind, phase, k)`` is the op
    of the device's ``k``-th ``kind`` in ``phase`` (0 early stage, 1 late stage).

    Example:
        >>> prog = dualpipe_program(1, 0, 2, lambda k, ph, i: Op(k, ph, i))
        >>> [str(a) for a in prog]
        ['0F0', '1F0', '0F1', '1B0', '(1F1;0B0)OVERLAP_F_B', '1B1', '0I1', '0W1']
    """
    fcount = [0, 0]
    bcount = [0, 0]
    pending_w: list[Op] = []
    out: list[Action] = []

    def fwd(ph: int) -> Op:
        op = op_of(F, ph, fcount[ph])
        fcount[ph] += 1
        return op

    def bwd(ph: int, split: bool) -> Op:
        k = bcount[ph]
        bcount[ph] += 1
        if split:
            pending_w.append(op_of(W, ph, k))
            return op_of(I, ph, k)
        return op_of(B, ph, k)

    def weight() -> None:
        if pending_w:
            out.append(pending_w.pop(0))

    middle = h == N - 1
    out += [fwd(0) for _ in range(2 * (N - h - 1))]
    for _ in range(h + 1):
        out += [fwd(0), fwd(1)]
    for _ in range(N - h - 1):
        out.append(bwd(1, True))
        weight()
        out.append(fwd(1))
    for i in range(M - 2 * N + h + 1):
        if i == 0 and middle:
            out += [fwd(0), bwd(1, False)]  # not overlapped: shrinks the middle bubble
        else:
            a = fwd(0)
            out.append(Overlap((a, bwd(1, False))))
        a = fwd(1)
        out.append(Overlap((a, bwd(0, False))))
    for _ in range(N - h - 1):
        out.append(bwd(1, False))
        a = fwd(1)
        out.append(Overlap((a, bwd(0, False))))
    split = False
    steps6 = h + 1
    for i in range(steps6):
        if i == steps6 // 2 and h % 2 == 1:
            split = True
        out.append(bwd(1, split))
        if i == steps6 // 2 and h % 2 == 0:
            split = True
        out.append(bwd(0, split))
    for _ in range(N - h - 1):
        weight()
        out.append(bwd(0, split))
    for _ in range(h + 1):
        weight()
    return out


def _check(name: str, p: int, m: int) -> None:
    if p % 2:
        raise ParameterError("p", p, f"{name} needs an even p (two directions over p/2 device pairs)")
    if m % 2 or m < 2 * p:
        raise ParameterError(
            "m",
            m,
            f"{name} needs an even m >= 2p = {2 * p} (m/2 microbatches per direction, as the reference code asserts)",
        )


def dualpipe(p: int, m: int) -> Schedule:
    """DualPipe on ``p`` (even) devices with ``m`` (even, ``>= 2p``) microbatches.

    Example:
        >>> s = dualpipe(2, 4)
        >>> [str(a) for a in s.programs[0]]
        ['0F0', '1F2', '0F1', '1B2', '(1F3;0B0)OVERLAP_F_B', '1B3', '0I1', '0W1']
        >>> s.pipe_of_mb
        (0, 0, 1, 1)
    """
    _check("dualpipe", p, m)
    N, M = p // 2, m // 2
    programs = []
    for d in range(p):
        second = d >= N
        h = min(d, p - 1 - d)

        def op_of(kind: str, ph: int, k: int, d: int = d, second: bool = second) -> Op:
            pipe = ph ^ int(second)
            stage = d if pipe == 0 else p - 1 - d
            return Op(kind, stage, k + pipe * M)

        programs.append(tuple(dualpipe_program(N, h, M, op_of)))
    pipe_of_mb = tuple(0 if mb < M else 1 for mb in range(m))
    return Schedule(bidirectional(p), m, tuple(programs), pipe_of_mb, "dualpipe", {"p": p, "m": m})


DUALPIPE_NOTE = (
    "makespan exact for tF = tI, tW <= tF and B = I + W (the paper's bubble), else the fill lower "
    "bound; peaks exact for m >= 2p (checked p <= 8)"
)


def dualpipe_makespan(c: Mapping[str, Fraction], busy: Fraction, fill: Fraction) -> tuple[Fraction, bool]:
    """``(makespan, exact)`` of DualPipe's phases: ``busy + fill (F&B + B - 3W)`` (DeepSeek-V3's
    bubble, F&B slots lasting ``F + B``) when ``tF = tI``, ``tW <= tF`` and ``B = I + W``, where it
    is exact; otherwise the fill lower bound ``busy + fill tF``. ``fill`` is the number of forwards
    the latest-starting device waits for (``N - 1`` for ``N`` half ranks).

    Example:
        >>> c = {"F": Fraction(1), "B": Fraction(2), "I": Fraction(1), "W": Fraction(1)}
        >>> dualpipe_makespan(c, Fraction(24), Fraction(1))
        (Fraction(26, 1), True)
        >>> dualpipe_makespan(dict(c, W=Fraction(2)), Fraction(24), Fraction(1))
        (Fraction(25, 1), False)
    """
    if c["F"] == c["I"] and c["W"] <= c["F"] and c["B"] == c["I"] + c["W"]:
        return busy + fill * ((c["F"] + c["B"]) + c["B"] - 3 * c["W"]), True
    return busy + fill * c["F"], False


def dualpipe_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
    """DualPipe: makespan ``m(tF+tB) + (p/2-1)(F&B + B - 3W)`` with ``F&B = F + B``, exact when
    ``tF = tI`` and ``tW <= tF``; peak ``p + 1`` on every device.

    Each pipe's replica is a whole share (as in Chimera), so every device does ``m(tF+tB)`` of
    work; the bubble is DeepSeek-V3's (Table 2) for PP = p ranks. ppverify checks it against the
    table (p <= 8, 2p <= m <= 4p): exact in the domain above, with the paper's ``p+1``
    activations per device. Outside the domain the paper's value is neither exact nor a bound,
    and ppverify reports the plain lower bound: the middle devices' first forward waits for
    ``p/2-1`` forwards, then each device has ``m(tF+tB)`` of work. F&B slots last ``F + B``
    (``overlap = 1``). The peaks do not depend on ``freed_by_I`` (the share an I frees; checked
    against the table for p <= 6 at four shares).

    Example:
        >>> f = dualpipe_formula(4, 8, {"F": 1, "B": 2})
        >>> f.makespan, f.makespan_kind, f.peak_activations
        (26.0, 'exact', (5.0, 5.0, 5.0, 5.0))
    """
    _check("dualpipe", p, m)
    c = exact_costs(costs)
    busy = m * (c["F"] + c["B"])
    makespan, exact = dualpipe_makespan(c, busy, Fraction(p, 2) - 1)
    return Formula(
        "dualpipe",
        float(makespan),
        float(1 - busy / makespan),
        (float(p + 1),) * p,
        EXACT if exact else LOWER,
        EXACT,
        DUALPIPE_NOTE,
        "DeepSeek-V3 technical report, Table 2 (arXiv 2412.19437); domain checked here",
    )


register(
    Family(
        "dualpipe",
        dualpipe,
        "DualPipe: bidirectional, overlapped F&B slots, zero-bubble tail (DeepSeek-V3)",
        rules="p even, m even and m >= 2p",
        formula=dualpipe_formula,
    )
)
