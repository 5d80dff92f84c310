"""How much memory an optimization will take, estimated from the problem's size before anything
is built, and the refusal when that is over ``--max-memory-gib`` (:func:`ppverify.core.limits.check_memory`).

The time limit bounds a run only relative to time: with a long ``--time-limit``, a step of a
million ops builds its whole CP-SAT model and passes 2 GB. The peak grows linearly with the ops
(each op brings its start variable, interval, precedences with its at most two inputs, its
entries in the DAG, the starting schedules and CP-SAT's copy of all of it); the devices and the
step's collectives add a few objects each. Measured peaks (resident set, whole process, 2 CP-SAT
workers, a time limit long enough to build the model and search;
``python scripts/bench_optimize_memory.py``) are in :data:`PER_OP_BYTES`.
"""

from __future__ import annotations

from typing import Any

from ..core.limits import check_family, check_memory, family_ops, max_memory_gib, max_ops, ops_memory

#: a tiny optimization, start-up included (numpy, OR-Tools, 2 CP-SAT workers: 180 MiB measured)
BASE_BYTES = 192 * 2**20
#: each CP-SAT worker past the first two (measured: 8 workers 19 MiB more than 2 at 64 ops, 9 MiB
#: more at 49,152 ops with a cap); a hostile ``--workers 100000`` is refused, not started
PER_WORKER_BYTES = 4 * 2**20
#: peak bytes per op above the start (resident set, 2 workers, the model built and searched), no
#: memory cap / a cap (two more intervals per forward, in a cumulative constraint). Measured with
#: --costs F=1,I=1,W=1: no cap 6.0 KB (1f1b -p 32 -m 256, 24,576 ops), 4.1 KB (-m 1024), 2.9 KB
#: (loop -p 16 -m 1024); a cap 8.5 KB (1f1b -p 32 -m 512 --memory-cap 8), 7.8 KB (-m 1024), 8.0 KB
#: (-m 2062, 197,952 ops: 1,615 MiB); the estimate is 7 % to 94 % above every peak measured
PER_OP_BYTES = {False: 6_000, True: 10_000}


def estimate_bytes(problem: Any, workers: int = 2) -> int:
    """The estimated peak memory of optimizing ``problem``, a :class:`~ppverify.optimize.Problem`
    (or of evaluating a schedule of its ops) with ``workers`` CP-SAT workers, in bytes:
    :data:`BASE_BYTES`, :data:`PER_OP_BYTES` per op and :data:`PER_WORKER_BYTES` per worker past
    two. (Typed ``Any``: :mod:`.problem` imports this module.)

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize import Problem
        >>> pl = linear(64)
        >>> pr = Problem(pl, 4096, CostModel.abstract(pl, F=1, I=1, W=1), split=True)
        >>> pr.num_ops, round(estimate_bytes(pr) / 2**30, 2)  # 786,432 ops: over the default 2 GiB
        (786432, 4.58)
    """
    per_op = PER_OP_BYTES[problem.memory_cap is not None]
    return BASE_BYTES + per_op * problem.num_ops + PER_WORKER_BYTES * max(0, workers - 2)


def check_footprint(problem: Any, workers: int = 2) -> None:
    """Refuse ``problem`` (a :class:`~ppverify.core.limits.LimitError`: one line, exit code 2) when its
    :func:`estimate_bytes` (with ``workers``) is over the memory limit in force, before anything
    is built.

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize import Problem
        >>> pl = linear(64)
        >>> check_footprint(Problem(pl, 64, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> check_footprint(Problem(pl, 8192, CostModel.abstract(pl, F=1, B=2), split=False))
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: optimize linear placement, p=64, m=8192, 64 stages (1048576 ops): needs about 6.047 GiB of memory (6.0 KB per op, no memory cap), over the limit of 2 GiB (raise it with ppverify --max-memory-gib X)
    """
    pl = problem.placement
    capped = problem.memory_cap is not None
    what = f"optimize {pl.name} placement, p={pl.p}, m={problem.m}, {pl.num_stages} stages ({problem.num_ops} ops)"
    how = f"{PER_OP_BYTES[capped] / 1000:.1f} KB per op, {'with a' if capped else 'no'} memory cap"
    check_memory(estimate_bytes(problem, workers), what, how + _workers_text(workers))


def footprint_key(problem: Any) -> tuple[int, bool]:
    """What :func:`estimate_bytes` reads of ``problem`` besides the workers: its ops and whether it
    has a memory cap. A problem changed in either (``dataclasses.replace``) is checked again.

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize import Problem
        >>> footprint_key(Problem(linear(2), 3, CostModel.abstract(linear(2), F=1, B=2), split=False))
        (12, False)
    """
    return problem.num_ops, problem.memory_cap is not None


def checked_footprint(problem: Any, workers: int = 2) -> Any:
    """:func:`check_footprint` at a command's boundary, with its ``workers``, and ``problem``
    marked checked (its :func:`footprint_key`): :func:`~ppverify.optimize.problem.instance`
    trusts the mark and does not check it again; a problem without it (a Python caller's) is
    checked there, once.

    Example:
        >>> from ppverify.core.costs import CostModel
        >>> from ppverify.core.placement import linear
        >>> from ppverify.optimize import Problem
        >>> pl = linear(2)
        >>> pr = checked_footprint(Problem(pl, 3, CostModel.abstract(pl, F=1, B=2), split=False))
        >>> pr.footprint_checked == footprint_key(pr), pr.m
        (True, 3)
    """
    import dataclasses

    check_footprint(problem, workers)
    return dataclasses.replace(problem, footprint_checked=footprint_key(problem))


def check_family_footprint(
    name: str, p: int, m: int, params: dict[str, Any], workers: int = 2, *, then_build: bool = False
) -> None:
    """Refuse to optimize family ``name`` at ``(p, m, params)`` before its schedule is built, when
    even the fewest ops it can pose (an F and a B per stage and microbatch, no memory cap) are
    over the memory limit in force; the op limit (``--max-ops``, :func:`~ppverify.core.limits.check_family`)
    is checked first. ``then_build``: the caller builds the family next with
    :func:`ppverify.schedules.build`, which checks the op limit itself, before generating; it is
    not checked here too (over it, nothing is estimated: the build refuses it, with the same
    line). The exact check, :func:`check_footprint`, follows once the problem is known.

    Example:
        >>> check_family_footprint("1f1b", 8, 64, {})
        >>> check_family_footprint("zb-h1", 64, 4096, {})  # its schedule fits; the solver's model would not
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: optimize zb-h1 -p 64 -m 4096 (at least 524288 ops): needs about 3.117 GiB of memory (6.0 KB per op, no memory cap), over the limit of 2 GiB (raise it with ppverify --max-memory-gib X)
        >>> check_family_footprint("gpipe", 10**5, 10**5, {}, then_build=True)  # the build refuses it
    """
    if not then_build:
        check_family(name, p, m, params)
    elif _over_op_limit(family_ops(name, p, m, params)):
        return  # the build's check_family refuses it, once
    ops = family_ops(name, p, m, params) * 2 // 3  # family_ops counts F, I and W: 3 per stage and mb
    how = f"{PER_OP_BYTES[False] / 1000:.1f} KB per op, no memory cap"
    needed = BASE_BYTES + PER_OP_BYTES[False] * ops + PER_WORKER_BYTES * max(0, workers - 2)
    check_memory(needed, f"optimize {name} -p {p} -m {m} (at least {ops} ops)", how + _workers_text(workers))


def _workers_text(workers: int) -> str:
    """The workers' share of the estimate where they add one, so that a refusal names its cause
    (``--workers 100000`` alone asks 390 GiB).

    Example:
        >>> _workers_text(2), _workers_text(100000)
        ('', ', 4 MiB per CP-SAT worker past two: --workers 100000')
    """
    return "" if workers <= 2 else f", {PER_WORKER_BYTES // 2**20} MiB per CP-SAT worker past two: --workers {workers}"


def _over_op_limit(n: int) -> bool:
    # what check_ops (of check_family) refuses: over --max-ops, or its memory over --max-memory-gib
    return n > max_ops() or ops_memory(n) > max_memory_gib() * 2**30
