"""How large a schedule PyTorch's schedule loader can take in reasonable time, checked up front.

Each worker loads the whole CSV with ``_PipelineScheduleRuntime._load_csv``. In the
``compute_only`` flavour PyTorch then lowers every rank's row, and its first pass
(``_add_unshard_reshard``) looks, for each action, at the rest of the row (``compute_actions[i:]``
scanned until three stages are seen, which a rank holding fewer never reaches): n cells cost about
n²/2 steps, and every worker lowers all p rows. Timed in measure's own workers (two processes
sharing a 2-core machine with other jobs), where n is the largest row's cells and the work is
Σ n_r² over the ranks' rows:

=============  ======  ============  ===========
schedule       n       Σ n_r²        load
=============  ======  ============  ===========
1f1b p=2 m=1k   2,000  8.0e6         1.4 s
1f1b p=2 m=2k   4,000  3.2e7         3.8 .. 5.3 s
zb-h1 p=2 m=2k  6,000  7.2e7         16 s
1f1b p=2 m=4k   8,000  1.28e8        21 s
1f1b p=2 m=8k  16,000  5.12e8        91 s
=============  ======  ============  ===========

About 170 ns per unit of Σ n_r² (each doubling of m: four times the time), so
``1f1b -p 2 -m 100000`` (Σ n_r² = 8e10) would load for hours. A run above :data:`MAX_LOAD_WORK`
is refused before any worker starts, naming -m and the largest m that fits; the
``compute_comms`` flavour (lowered by ppverify, linear in the actions) is loaded without PyTorch's
lowering, so it has no such limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..core.errors import ParameterError
from ..core.schedule import Schedule

#: most lowering work (Σ over the ranks' rows of cells², see above) a run may hand PyTorch's
#: compute-only loader: about 11 s in the table's workers, well inside the default 60 s timeout
MAX_LOAD_WORK = 2**26


def load_work(rows: Sequence[Sequence[str]]) -> int:
    """The compute-only lowering work of a CSV: Σ over the rows of (cells in the row)².

    Example:
        >>> load_work([["0F0", "0B0"], ["1F0", "", "1B0"]])  # 2² + 3²
        13
    """
    return sum(len(row) ** 2 for row in rows)


def check_load_size(schedule: Schedule, rows: Sequence[Sequence[str]], format: str) -> None:
    """Refuse a ``compute_only`` CSV whose lowering in PyTorch's loader would outlast a run
    (:data:`MAX_LOAD_WORK`), naming -m and the largest m of the same schedule that fits (the
    rows grow in proportion to m, so the work grows with m²).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.io.torch_csv import to_rows
        >>> s = build("1f1b", p=2, m=4000)
        >>> check_load_size(s, to_rows(s), "compute_comms")  # loaded as written: no lowering
        >>> check_load_size(s, to_rows(s), "compute_only")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter -m=4000: 1f1b p=2 m=4000 is too large for PyTorch's schedule loader: ...
    """
    work = load_work(rows)
    if format != "compute_only" or work <= MAX_LOAD_WORK:
        return
    m = schedule.m
    # the work is work * (m'/m)² at m' microbatches: the largest m' with that <= the limit
    most = max(1, math.isqrt(MAX_LOAD_WORK * m * m // work))
    longest = max(range(len(rows)), key=lambda r: len(rows[r]))
    raise ParameterError(
        "-m",
        m,
        f"{schedule.describe()} is too large for PyTorch's schedule loader: its compute-only lowering "
        f"(_load_csv) takes time that grows with the square of each rank's actions ({len(rows[longest]):,} on "
        f"rank {longest}; squares summed over the ranks {work:,}, {work / MAX_LOAD_WORK:,.0f} times the limit of "
        f"{MAX_LOAD_WORK:,}, about 10 s of loading): give -m {most} or less, or --format compute_comms (loaded "
        "without that lowering)",
    )


__all__ = ["MAX_LOAD_WORK", "check_load_size", "load_work"]
