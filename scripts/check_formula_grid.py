"""Formula vs slot table over the whole of issue 2's grid (p in 2..16, m in 1..64, v in 1..4,
W in 1, 2, unit slots), with the structural check; the slow test samples this grid.

    .venv/bin/python scripts/check_formula_grid.py          # 960 sizes, 7703 cases: minutes
    .venv/bin/python scripts/check_formula_grid.py --p 2 4   # only some pipeline sizes

Prints the sizes checked, the cases run, the time taken and every mismatch; exits 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests" / "schedules" / "test_formulas.py"


def _test_module():
    # the cases and the comparison are the test module's own, so script and test cannot drift
    spec = importlib.util.spec_from_file_location("test_formulas", TESTS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, nargs="*", help="only these p (default: 2..16)")
    args = ap.parse_args(argv)
    tf = _test_module()
    sizes = [(p, m) for p, m in tf.FULL_GRID if not args.p or p in args.p]
    t0 = time.perf_counter()
    cases = sum(1 for p, m in sizes for _ in tf.cases(p, m))
    problems = tf.grid_problems(sizes)
    took = time.perf_counter() - t0
    print(f"{len(sizes)} sizes, {cases} cases, {took:.1f} s, {len(problems)} mismatches")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
