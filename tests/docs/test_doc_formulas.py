"""Every formula the manual quotes in its formula tables equals the code's.

The tables of ``docs/schedule-families.md`` (makespan and peak per family),
``docs/formulas-and-range.md`` (makespan per family) and the schedule zoo of ``docs/pytorch.md``
(the formula column) are read from the pages; each formula is turned into
Python as written (``·`` and juxtaposition multiply, the minus sign subtracts, ``⌊x⌋`` floors) and
evaluated, in exact fractions, over sizes and costs inside the domain the page states, against
:func:`ppverify.engines.formulas.formula_for`. A formula cell the test does not know fails it, so a new or
edited formula gets checked on purpose.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import product

import pytest

from ppverify.core.errors import ParameterError
from ppverify.engines.formulas import formula_for
from tests.conftest import ROOT

FUNCTIONS = {"max": max, "min": min, "floor": math.floor}
#: names a formula may use, longest first (``2Wm`` is 2·W·m); ``F&B`` is an overlapped cell
NAMES = (
    "F&B",
    "busy",
    "max",
    "min",
    "floor",
    "w_d",
    "tF",
    "tB",
    "tI",
    "tW",
    "p",
    "m",
    "v",
    "t",
    "d",
    "W",
    "B",
    "n",
    "k",
)
TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|(" + "|".join(re.escape(n) for n in NAMES) + r")|([-+*/(),]))")


def to_python(text: str) -> str:
    """A formula as the pages write it, as a Python expression (names kept, ``F&B`` as ``FB``).

    >>> to_python("m(tF+tI+tW) + (p-1)·max(tF, tI, tF+tI-tW)")
    'm*(tF+tI+tW)+(p-1)*max(tF,tI,tF+tI-tW)'
    >>> to_python("min(2Wm, 2p-⌊(p-2)/4⌋)/(2W)")
    'min(2*W*m,2*p-floor((p-2)/4))/(2*W)'
    """
    s = text.replace("·", "*").replace("⌊", "floor(").replace("⌋", ")").replace(" ", "")
    out: list[str] = []
    pos = 0
    prev = ""  # kind of the previous token: value (number, name, ')'), func, or op
    while pos < len(s):
        mt = TOKEN.match(s, pos)
        if mt is None:
            raise ValueError(f"cannot read {text!r} at {s[pos:]!r}")
        num, name, op = mt.groups()
        kind = (
            "value"
            if (num or (name and name not in FUNCTIONS))
            else ("func" if name else ("open" if op == "(" else "op"))
        )
        if prev == "value" and kind in ("value", "func", "open"):
            out.append("*")
        out.append("FB" if name == "F&B" else (num or name or op))
        prev = "value" if op == ")" else kind
        pos = mt.end()
    return "".join(out)


def evaluate(text: str, env: dict[str, Fraction | int]) -> Fraction:
    """The formula's value at ``env`` (exact when the inputs are fractions)."""
    return Fraction(eval(to_python(text), dict(FUNCTIONS), dict(env)))  # the manual's own text


@dataclass(frozen=True)
class Quote:
    """One quoted formula: the page, its family (row), the text as quoted, what it gives
    (``makespan``, or ``peak`` per device ``d``), the family's parameters, the sizes and costs
    where the page says it holds, and how its symbols are bound (beyond p, m, d, tF..tW, t)."""

    page: str
    family: str
    text: str
    what: str = "makespan"
    params: dict[str, int] = field(default_factory=dict)
    sizes: Callable[[int, int], bool] = lambda p, m: True
    costs: Callable[[dict[str, Fraction]], bool] = lambda c: True
    symbols: Callable[[int, int, dict[str, Fraction]], dict[str, Fraction | int]] = lambda p, m, c: {}


FAM, ZOO, RANGE = "docs/schedule-families.md", "docs/pytorch.md", "docs/formulas-and-range.md"
SPLIT = {"F", "I", "W"}


def _chunk(p, m, c):  # DualPipe(V)'s F&B, B and W in chunk times (half a share), F&B = F + B
    h = {k: x / 2 for k, x in c.items()}
    return {"FB": h["F"] + h["B"], "B": h["B"], "W": h["W"]}


def _dualpipe(p, m, c):  # DualPipe: one chunk per device, F&B = F + B at share costs
    return {"FB": c["F"] + c["B"], "B": c["B"], "W": c["W"]}


def _domain_dualpipe(c):  # the pages: exact for tF = tI, tW <= tF
    return c["F"] == c["I"] and c["W"] <= c["F"]


def _two_pipes(p, m):  # dualpipe's rules: p, m even, m >= 2p
    return p % 2 == 0 and m % 2 == 0 and m >= 2 * p


#: how the DualPipe rows' makespans hold and bind F&B, B, W: DualPipeV in chunk times, DualPipe in shares
DUALPIPEV = {"sizes": lambda p, m: m >= 2 * p, "costs": _domain_dualpipe, "symbols": _chunk}
DUALPIPE = {"sizes": _two_pipes, "costs": _domain_dualpipe, "symbols": _dualpipe}


QUOTES = (
    Quote(FAM, "gpipe", "(m+p-1)·t"),
    Quote(FAM, "gpipe", "m", "peak"),
    Quote(FAM, "1f1b", "(m+p-1)·t"),
    Quote(FAM, "1f1b", "min(p-d, m)", "peak"),
    Quote(FAM, "interleaved-1f1b", "(v·max(m, p) + min(m, p) - 1)·t/v", params={"v": 2}),
    Quote(FAM, "interleaved-1f1b", "(v·max(m, p) + min(m, p) - 1)·t/v", params={"v": 3}),
    Quote(FAM, "chimera", "m·t + (p-2)·max(tF, tB)", sizes=lambda p, m: p % 2 == 0 and m % p == 0),
    Quote(FAM, "chimera", "min(p-d, m/2) + min(d+1, m/2)", "peak", sizes=lambda p, m: p % 2 == 0 and m % p == 0),
    Quote(FAM, "hanayo", "m·t + (p-1)·max(tF, tB)/W", params={"waves": 1}, sizes=lambda p, m: m >= p),
    Quote(FAM, "hanayo", "m·t + (p-1)·max(tF, tB)/W", params={"waves": 2}, sizes=lambda p, m: m >= p),
    Quote(
        FAM,
        "hanayo",
        "min(2Wm, max(2Wm-(p-1-d), min(p-d,m)+2m(W-1)+1)) / (2W)",
        "peak",
        params={"waves": 2},
    ),
    Quote(FAM, "1f1b-split", "m(tF+tI+tW) + (p-1)(tF+tI)"),
    Quote(FAM, "1f1b-split", "min(p-d, m)", "peak"),
    Quote(ZOO, "zb-h1", "m(tF+tI+tW) + (p-1)·max(tF, tI, tF+tI-tW)", sizes=lambda p, m: m >= p),
    Quote(ZOO, "zb-h1", "min(p,m)", "peak"),
    Quote(ZOO, "interleaved-zb", "m(tF+tI+tW) + (p-1)tF/v", params={"v": 2}),
    Quote(ZOO, "zb-h2", "(p-1)tF + m(tF+tI+tW)"),
    Quote(ZOO, "zb-h2", "min(2p-1,m)", "peak"),
    Quote(ZOO, "zbv", "m(tF+tI+tW) + (p-1)tF/2"),
    Quote(ZOO, "dualpipev", "m(tF+tB) + (p-1)(F&B + B - 3W)", **DUALPIPEV),
    Quote(ZOO, "dualpipev", "(2p+1)/2", "peak", sizes=lambda p, m: m >= 2 * p),
    Quote(ZOO, "dualpipe", "m(tF+tB) + (p/2-1)(F&B + B - 3W)", **DUALPIPE),
    Quote(ZOO, "dualpipe", "p+1", "peak", sizes=_two_pipes),
    Quote(ZOO, "looped-bfs", "(v·max(m,p) + min(m,p) - 1)(tF+tB)/v", params={"v": 2}),
    Quote(ZOO, "looped-bfs", "m", "peak", params={"v": 2}),
    Quote(RANGE, "gpipe", "(m+p-1)·t"),
    Quote(RANGE, "1f1b", "(m+p-1)·t"),
    Quote(RANGE, "1f1b-split", "busy + (p-1)(tF+tI)"),
    Quote(RANGE, "zb-h1", "busy + (p-1)·max(tF, tI, tF+tI-tW)", sizes=lambda p, m: m >= p),
    Quote(RANGE, "zb-h2", "busy + (p-1)·tF"),
    Quote(RANGE, "interleaved-1f1b", "(v·max(m,p) + min(m,p) - 1)·t/v", params={"v": 2}),
    Quote(RANGE, "interleaved-1f1b", "m·t + (p-1)·t/v", params={"v": 3}, sizes=lambda p, m: m >= p),
    Quote(RANGE, "interleaved-zb", "busy + (p-1)·tF/v", params={"v": 2}),
    Quote(RANGE, "looped-bfs", "(v·max(m,p) + min(m,p) - 1)·t/v", params={"v": 3}),
    Quote(RANGE, "hanayo", "m·t + (p-1)·max(tF, tB)/W", params={"waves": 2}, sizes=lambda p, m: m >= p),
    Quote(RANGE, "chimera", "m·t + (p-2)·max(tF, tB)", sizes=lambda p, m: p % 2 == 0 and m % p == 0),
    Quote(RANGE, "zbv", "busy + (p-1)·tF/2"),
    Quote(RANGE, "dualpipe", "busy + (p/2-1)(F&B + B - 3W)", **DUALPIPE),
    Quote(RANGE, "dualpipev", "busy + (p-1)(F&B + B - 3W)", **DUALPIPEV),
    Quote(RANGE, "v-min", "busy + (p-1)·tF/2", sizes=lambda p, m: m >= 1),
)

#: formulas the tables quote that are not single expressions of the sizes and costs, with why
NOT_EXPRESSIONS = {
    (FAM, "interleaved-1f1b", "min(w_d+1, m·v)/v, w_d = Megatron warm-up"): "w_d is the warm-up, a rule",
    (
        FAM,
        "chimera-asym",
        "≥ max((n+p-1)·t, max over d of min(s0, s1)·t + m·t), n = busier pipe's microbatches, s0/s1 = device d's stages",
    ): "a bound over the placement",
    (FAM, "chimera-asym", "≤ sum of both pipes' 1F1B in-flight counts"): "a bound in words",
    (RANGE, "chimera", "U + (k-1)·P (see the schedule families page)"): "--units concat: test_chimera_concat.py",
    (RANGE, "chimera-asym", "max of two fill bounds"): "a bound in words",
    (
        RANGE,
        "v-half",
        "t·(3m + K(p)) at tF = tI = tW = t ([building blocks](building-blocks.md))",
    ): "K(p) is the block's fill, a rule of p (building-blocks.md): test_blocks.py checks it against the engine",
}

COSTS = (
    {"F": 1, "B": 2},
    {"F": 2, "B": 1},
    {"F": 1, "B": 3},
    {"F": 1, "I": 1, "W": 1},
    {"F": 1, "I": 2, "W": 1},
    {"F": 2, "I": 1, "W": 3},
    {"F": 2, "I": 2, "W": 1},
    {"F": 1, "I": 1, "W": Fraction(1, 2)},
)
SIZES = tuple(product(range(1, 9), range(1, 17)))


def _full(c: dict) -> dict[str, Fraction]:
    """B = I + W; with only B, I = W = B/2 (as the cost models derive them)."""
    out = {k: Fraction(v) for k, v in c.items()}
    if "B" not in out:
        out["B"] = out["I"] + out["W"]
    out.setdefault("I", out["B"] / 2)
    out.setdefault("W", out["B"] / 2)
    return out


def _cells(page: str) -> dict[str, list[str]]:
    """The formula cells of a page's formula table, by family: the makespan and peak columns of
    schedule-families.md, the backticked formulas of pytorch.md's zoo."""
    text = (ROOT / page).read_text().replace("\u2212", "-")  # the pages' minus sign, as ASCII here
    out: dict[str, list[str]] = {}
    header = {
        FAM: "| family | makespan | peak activations on device d |",
        ZOO: "| family | what | placement |",
        RANGE: "| family | makespan | exact where |",
    }[page]
    lines = text[text.index(header) :].splitlines()[2:]
    for line in lines:
        if not line.startswith("|"):
            break
        cols = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        family = cols[0].strip("`").split()[0]
        if page == FAM:
            if "`--units concat`" in cols[0]:
                continue  # the concatenated construction: checked by tests/schedules/test_chimera_concat.py
            out.setdefault(family, []).extend(cols[1:3])
        elif page == RANGE:  # "formula; for m ≥ p: its form there", "formula, chunk times"
            out.setdefault(family, []).extend(cols[1].removesuffix(", chunk times").split("; for m ≥ p: "))
        else:
            out.setdefault(family, []).extend(re.findall(r"`([^`]*)`", cols[-1]))
    return out


def test_every_quoted_formula_is_checked_or_explained():
    known = {(q.page, q.family, q.text) for q in QUOTES} | set(NOT_EXPRESSIONS)
    quoted = {(page, fam, txt) for page in (FAM, ZOO, RANGE) for fam, cells in _cells(page).items() for txt in cells}
    assert sorted(quoted - known) == []
    assert sorted(known - quoted) == []  # a stale entry here: the page changed


@pytest.mark.parametrize("quote", QUOTES, ids=lambda q: f"{q.family}-{q.what}-{q.text}")
def test_quoted_formula_equals_the_codes(quote: Quote):
    checked = 0
    for c0, (p, m) in product(COSTS, SIZES):
        c = _full(c0)
        if not (quote.sizes(p, m) and quote.costs(c)):
            continue
        if (
            quote.family in ("gpipe", "1f1b", "chimera", "hanayo", "interleaved-1f1b", "looped-bfs")
            and set(c0) == SPLIT
        ):
            continue  # one-backward families: costs given as F and B
        try:
            f = formula_for(quote.family, p, m, {k: float(x) for k, x in c.items()}, **quote.params)
        except ParameterError:
            continue  # outside the family's rules
        t = c["F"] + c["B"]
        env = {"p": p, "m": m, "tF": c["F"], "tB": c["B"], "tI": c["I"], "tW": c["W"], "t": t, "busy": m * t}
        env.update({"v": quote.params.get("v", 1), "W": quote.params.get("waves", 1)})
        env.update(quote.symbols(p, m, c))
        if quote.what == "makespan":
            assert f.makespan == pytest.approx(float(evaluate(quote.text, env))), (quote.text, p, m, c0)
        else:
            got = [float(evaluate(quote.text, {**env, "d": d})) for d in range(p)]
            assert list(f.peak_activations) == pytest.approx(got), (quote.text, p, m, c0)
        checked += 1
    assert checked >= 5, f"{quote.text}: fewer than 5 samples inside its domain"
