"""The full zero-false-positive grid: every registered family, every p in 2..16 and m in 1..64
inside its rules (``build`` raises ParameterError outside them), verified by Z3 alone and by the
default verifier (checked certificates, Z3 as the fallback); prints per family how many schedules
were checked, how many were VALID on each path, any disagreement, and the time.

The test suite runs a stated sample of this grid (``tests/verify/test_verify_families.py``); this script
is the whole of it (about 7 min for the Z3 path on a 2-core machine).

Usage: ``python scripts/verify_grid.py [--path z3|cert|both] [--family NAME ...] [--max-p 16] [--max-m 64]``
(exit status 1 when a schedule is not VALID or the paths disagree).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ppverify.core.errors import ParameterError
from ppverify.schedules import build, families
from ppverify.verify import verify


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--path",
        choices=("z3", "cert", "both"),
        default="both",
        help="Z3 alone, certificates (the default verifier), or both compared",
    )
    ap.add_argument("--family", nargs="*", help="only these families (default: all registered)")
    ap.add_argument("--max-p", type=int, default=16)
    ap.add_argument("--max-m", type=int, default=64)
    args = ap.parse_args(argv)
    names = args.family or [f.name for f in families()]
    paths = {"z3": (False,), "cert": (True,), "both": (False, True)}[args.path]
    print(
        f"verify grid: p 2..{args.max_p}, m 1..{args.max_m}, path {args.path}; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'family':<22} {'checked':>7} {'VALID z3':>8} {'VALID cert':>10} {'disagree':>8} {'seconds':>8}")
    failed = False
    t_all = time.perf_counter()
    for name in names:
        t = time.perf_counter()
        checked, valid, disagree = 0, {False: 0, True: 0}, 0
        for p in range(2, args.max_p + 1):
            for m in range(1, args.max_m + 1):
                try:
                    s = build(name, p=p, m=m)
                except ParameterError:
                    continue
                checked += 1
                verdicts = {}
                for cert in paths:
                    r = verify(s, certificates=cert)
                    verdicts[cert] = r.valid
                    valid[cert] += r.valid
                    if not r.valid:
                        print(f"  NOT VALID ({'cert' if cert else 'z3'}): {s.describe()}: {r.violations[0].to_text()}")
                if len(set(verdicts.values())) > 1:
                    disagree += 1
                    print(f"  DISAGREE: {s.describe()}: {verdicts}")
        show = {c: (str(valid[c]) if c in paths else "-") for c in (False, True)}
        print(
            f"{name:<22} {checked:>7} {show[False]:>8} {show[True]:>10} {disagree:>8} {time.perf_counter() - t:>8.1f}"
        )
        failed |= disagree > 0 or any(valid[c] != checked for c in paths)
    print(f"total {time.perf_counter() - t_all:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
