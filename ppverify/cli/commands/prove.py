"""``ppverify prove FAMILY``: prove a family's closed-form schedule correct for all sizes with Z3.

For GPipe and 1F1B at integer costs F=1,B=1 and F=1,B=2, for interleaved 1F1B with m = p
(v = 2 and 3, both costs) and m = k p (v = 2, F=B=1, k = 2..8), and for Chimera (p even; the basic unit
m = p and units=continuous with m = k p, k >= 2; both costs, or any F=1,B=b), the start of every
op is a closed-form function of (p, m, device, microbatch). Each theorem (a dependency, a pair
of ops of a device that must not overlap, the peak-memory bound, the makespan) is proved for ALL
integers p >= 2, m >= 1 in the family's range: Z3 shows its negation unsatisfiable, or prints a
counterexample. A final check compares the closed form with the generator's slot timeline on a
grid. Exit code 0 when everything is proved, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

from ...core.errors import ParameterError
from ...schedules.registry import get_family
from ...verify.prove import PROVABLE, prove_family
from .. import Command
from ..common import print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Family, optional costs, output.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> ns = parser.parse_args(["gpipe", "--costs", "F=1,B=2"])
        >>> ns.family, ns.costs, ns.json
        ('gpipe', 'F=1,B=2', False)
    """
    parser.add_argument("family", help=f"one of: {', '.join(PROVABLE)}, or 'all'")
    parser.add_argument(
        "--costs",
        default=None,
        metavar="F=f,B=b",
        help="one integer cost setting (default: F=1,B=1 and F=1,B=2; a kind left out is F=1 or B=2F; "
        "chimera needs F=1)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def _costs(text: str | None) -> tuple[tuple[int, int], ...] | None:
    if not text:
        return None
    vals: dict[str, int] = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        k = k.strip().upper()
        if k not in ("F", "B") or not v.strip().isdigit() or len(v.strip()) > 6 or int(v) < 1:
            raise ParameterError("costs", text, "expected positive integers F=f,B=b of at most 6 digits, e.g. F=1,B=2")
        if k in vals:  # F=1,B=2,B=3 proved B=3 alone without a word
            raise ParameterError("costs", text, f"{k} is given twice; give each kind once")
        vals[k] = int(v)
    return ((vals.get("F", 1), vals.get("B", 2 * vals.get("F", 1))),)


def run(args: argparse.Namespace) -> int:
    """Prove and print each theorem as it is done.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args(["gpipe", "--costs", "F=1,B=1"]))  # doctest: +ELLIPSIS
        == gpipe F=1,B=1
          starts: for all p >= 2, m >= 1, 0 <= d < p, 0 <= j < m: F(d,j) >= 0 and B(d,j) >= 0
            ... proved
        ...
          agrees with generator: closed form == slot timeline of `gpipe` for p in 2..8, m in 1..12 (84 schedules)
            ... proved
        11/11 proved
        0
    """
    from ...io import looks_like_file

    if looks_like_file(args.family):  # else "unknown schedule family" for a file the README says commands take
        raise ParameterError(
            "family",
            args.family,
            "prove takes a family (its closed form, for all p and m), not a schedule file: "
            f"ppverify verify {args.family} proves one schedule",
        )
    fams = list(PROVABLE) if args.family.strip().lower() == "all" else [get_family(args.family).name]
    for fam in fams:
        if fam not in PROVABLE:
            raise ParameterError(
                "family",
                args.family,
                f"no closed form to prove for all sizes ({fam} is checked size by size: ppverify verify {fam}"
                f" -p P -m M); provable: {', '.join(PROVABLE)}",
            )
    costs = _costs(args.costs)
    if costs and "chimera" in fams and costs[0][0] != 1:  # refused before anything is printed, not midway
        f, b = costs[0]
        raise ParameterError(
            "costs",
            f"F={f},B={b}",
            "chimera's closed form is derived for F=1 (any integer B >= 1); scale both costs so that F=1",
        )
    results = []
    last = [None]

    def show(label, r):
        if args.json:
            return
        if label != last[0]:
            print(f"== {label}")
            last[0] = label
        print(
            f"  {r.name}: {r.statement}\n    ... {r.status}"
            + ("" if not r.counterexample else " " + ", ".join(f"{k}={v}" for k, v in r.counterexample.items()))
        )

    for fam in fams:
        results += prove_family(fam, costs, on_result=show)
    ok = all(r.status == "proved" for _, r in results)
    notes = []  # else silently fewer results
    if "interleaved-1f1b" in fams and costs and any(f > b for f, b in costs):
        notes.append(
            "(interleaved-1f1b in PyTorch's order: its m = p closed form is derived for F <= B, not proved here)"
        )
    if "interleaved-1f1b" in fams and costs and (1, 1) not in costs:
        notes.append("(interleaved-1f1b with m = k p: its closed form is derived at F=1,B=1 only, not proved here)")
    if args.json:  # the list stays the results; what was left out goes beside it, on stderr
        print_json([{"setting": lbl, **r.to_dict()} for lbl, r in results])
        if notes:
            print("\n".join(notes), file=sys.stderr)
    else:
        n = sum(r.status == "proved" for _, r in results)
        refuted = any(r.status == "counterexample" for _, r in results)
        why = " (see the counterexamples above)" if refuted else " (the others unknown: Z3 stopped without an answer)"
        print(f"{n}/{len(results)} proved" + ("" if ok else why))
        if notes:
            print("\n".join(notes))
    return 0 if ok else 1


COMMAND = Command(
    "prove",
    "prove a family's closed-form schedule correct for all p >= 2, m with Z3",
    add_arguments,
    run,
    description=__doc__ or "",
    ends_on_signal=True,  # nothing half-written: a signal ends it within seconds, whatever Z3 does
)
