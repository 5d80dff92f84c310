"""Vectorised forms of the 1F1B-shaped generators (plain and interleaved 1F1B) for large steps.

The reference generators build each device's program op by op in Python; at a million ops that
costs seconds, more than simulating them. Here each program's order is computed as numpy arrays
(which forward or backward comes k-th, its chunk and microbatch) and the :class:`~ppverify.core.ops.Op`
values are made in one C-level pass. The programs are identical, op for op, to the reference's
(tests/engines/test_kernels.py); the generators call this above
:data:`ppverify.core.compiled.COMPILED_MIN_OPS` ops.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import repeat

import numpy as np

from ..core.ops import B, F, Op


def one_f_one_b_positions(warm: int, total: int) -> tuple[np.ndarray, np.ndarray]:
    """``(is_forward, k)`` of each slot of :func:`~ppverify.schedules.one_f_one_b.one_f_one_b_order`:
    ``warm`` forwards, then forward ``warm + k`` and backward ``k`` alternating, then the rest.

    Example:
        >>> f, k = one_f_one_b_positions(1, 3)
        >>> f.tolist(), k.tolist()
        ([True, True, False, True, False, False], [0, 1, 0, 2, 1, 2])
    """
    steady = total - warm
    mid_k = np.arange(steady)
    is_f = np.concatenate((np.ones(warm, bool), np.tile([True, False], steady), np.zeros(warm, bool)))
    k = np.concatenate((np.arange(warm), np.stack((mid_k + warm, mid_k), axis=1).reshape(-1), np.arange(steady, total)))
    return is_f, k


@contextmanager
def no_gc_pauses() -> Iterator[None]:
    """Suspend the cyclic garbage collector while a million tuples are made (they hold no
    cycles; each collection would rescan every tuple made so far: 5-7x the creation time), then
    restore its previous state.

    Example:
        >>> with no_gc_pauses():
        ...     gc.isenabled()
        False
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _ops(kinds: list[str], stages: np.ndarray, mbs: np.ndarray) -> tuple[Op, ...]:
    # tuple.__new__ over zipped columns: one C call per op, no Python-level constructor
    return tuple(map(tuple.__new__, repeat(Op, len(kinds)), zip(kinds, stages.tolist(), mbs.tolist())))


def _int_objects(n: int) -> np.ndarray:
    """``0..n-1`` as Python ints in an object array: indexing it and ``tolist`` hand out these same
    objects, so a million ops share ``n`` ints instead of each making its own (less time, less
    memory; the values are the same)."""
    out = np.empty(n, dtype=object)
    out[:] = range(n)
    return out


def _numbered(chunks: np.ndarray, v: int) -> np.ndarray:
    """For a sequence of chunks, how many earlier entries had the same chunk (each chunk's
    microbatches counted up)."""
    mb = np.empty(len(chunks), dtype=np.int64)
    for c in range(v):
        sel = chunks == c
        mb[sel] = np.arange(int(sel.sum()))
    return mb


def interleaved_programs(p: int, m: int, v: int, n: int, warmups: list[int]) -> tuple[tuple[Op, ...], ...]:
    """Programs of interleaved 1F1B (``loop`` placement, round size ``n``, device d's warm-up
    ``warmups[d]``), as :func:`~ppverify.schedules.interleaved.interleaved_1f1b` builds them.

    Example:
        >>> [str(o) for o in interleaved_programs(2, 2, 2, 2, [4, 4])[1]]
        ['1F0', '1F1', '3F0', '3F1', '3B0', '3B1', '1B0', '1B1']
    """
    total = m * v
    fwd_chunks = (np.arange(total) // n) % v
    mb = _numbered(fwd_chunks, v)  # the backward walk mirrors chunks: same counts per position
    stage_ints, mb_ints = _int_objects(v * p), _int_objects(m)
    programs = []
    with no_gc_pauses():
        for d in range(p):
            is_f, k = one_f_one_b_positions(warmups[d], total)
            chunk = np.where(is_f, fwd_chunks[k], v - 1 - fwd_chunks[k])
            kinds = np.where(is_f, F, B).tolist()
            programs.append(_ops(kinds, stage_ints[chunk * p + d], mb_ints[mb[k]]))
    return tuple(programs)


def one_f_one_b_programs(p: int, m: int) -> tuple[tuple[Op, ...], ...]:
    """Programs of plain 1F1B (``linear`` placement), as
    :func:`~ppverify.schedules.one_f_one_b.one_f_one_b` builds them.

    Example:
        >>> [str(o) for o in one_f_one_b_programs(3, 3)[2]]
        ['2F0', '2B0', '2F1', '2B1', '2F2', '2B2']
    """
    mb_ints = _int_objects(m)
    programs = []
    with no_gc_pauses():
        for d in range(p):
            is_f, k = one_f_one_b_positions(min(p - 1 - d, m), m)
            programs.append(_ops(np.where(is_f, F, B).tolist(), np.full(len(k), d), mb_ints[k]))
    return tuple(programs)
