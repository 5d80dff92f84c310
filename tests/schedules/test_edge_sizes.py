"""Every registered family at the edge sizes: p in {1, 2, 3, 4, 5, 8}, m in {1, 2, p-1, p, p+1,
2p+1, 3p}, under unit slots and one more cost set (F=1,I=1,W=1 for a split backward, F=1,B=2
otherwise).

A size either builds or is refused with a one-line ``ParameterError`` (the family's rule, restated
here); a built schedule has the asked size, is VALID under the verifier, its ``async`` timeline
without communication has the ``slot`` table's makespan (docs/simulation.md), and its table meets
the closed forms of docs/formulas-and-range.md and docs/schedule-families.md, which this file
computes on its own (:func:`documented`), not from ppverify's formulas. The formula ``show``
prints (``formula_for``) must agree with the table wherever it claims exactness, and must equal the
documented value where the docs call it exact.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.engines.formulas import EXACT, LOWER, UPPER, formula_for
from ppverify.schedules import build, families
from ppverify.verify import verify

PS = (1, 2, 3, 4, 5, 8)
#: families whose backward is split into I and W (their second cost set is F=1,I=1,W=1)
SPLIT = {"1f1b-split", "zb-h1", "zb-h2", "interleaved-zb", "zbv", "dualpipe", "dualpipev", "v-half", "v-min"}
#: the parameter settings tried per family ({} = the defaults)
PARAMS: dict[str, list[dict]] = {
    "interleaved-1f1b": [{"v": 1}, {"v": 2}, {"v": 3}, {"v": 2, "order": "megatron"}, {"v": 3, "order": "megatron"}],
    "interleaved-zb": [{"v": 1}, {"v": 2}, {"v": 3}],
    "looped-bfs": [{"v": 1}, {"v": 2}, {"v": 3}],
    "hanayo": [{"waves": 1}, {"waves": 2}, {"waves": 3}],
    "chimera": [{"units": "continuous"}, {"units": "concat"}],
    "chimera-asym": [{}, {"offset": 0}, {"units": "concat"}, {"offset": 0, "units": "concat"}, {"down": 1}],
}
CASES = [(f.name, params) for f in families() for params in PARAMS.get(f.name, [{}])]


def sizes(p: int) -> list[int]:
    return sorted({m for m in (1, 2, p - 1, p, p + 1, 2 * p + 1, 3 * p) if m >= 1})


def cost_sets(family: str) -> list[dict | None]:
    return [None, {"F": 1, "I": 1, "W": 1} if family in SPLIT else {"F": 1, "B": 2}]


def accepted(family: str, p: int, m: int, params: dict) -> bool:
    """The rules of `ppverify list` and docs/schedule-families.md, restated."""
    if family in ("chimera", "chimera-asym"):
        return p % 2 == 0 and m % p == 0
    if family == "dualpipe":
        return p % 2 == 0 and m % 2 == 0 and m >= 2 * p
    if family == "dualpipev":
        return m >= 2 * p
    if family == "interleaved-1f1b" and params.get("order") == "megatron" and params.get("v", 2) > 1:
        return m % p == 0  # Megatron-LM's interleaved schedule refuses other m
    if family in ("interleaved-1f1b", "interleaved-zb") and params.get("v", 2) > 1:
        return m % max(1, m // p) == 0  # PyTorch's rounds
    return True


def stages(family: str, p: int, params: dict) -> int:
    """Stages of one pipe (S) that the family's placement has."""
    if family in ("interleaved-1f1b", "interleaved-zb", "looped-bfs"):
        return params.get("v", 2) * p
    if family == "hanayo":
        return 2 * params.get("waves", 1) * p
    if family in ("zbv", "v-half", "v-min", "dualpipev"):
        return 2 * p
    return p


def documented(family: str, p: int, m: int, params: dict, costs: dict | None):
    """(makespan, kind, peaks, peak kind) from the docs' closed forms; None where the docs give
    none. Kinds: EXACT, LOWER (the table is never below) or UPPER (peaks never above)."""
    c = {"F": 1, "B": 1, "I": 1, "W": 1} if costs is None else dict(costs)
    if costs is not None:
        c.setdefault("I", c["B"] / 2 if "B" in c else 1)
        c.setdefault("W", c["B"] / 2 if "B" in c else 1)
        c.setdefault("B", c["I"] + c["W"])
    F, B, I, W = (Fr(c[k]) for k in "FBIW")
    t, busy = F + B, m * (F + I + W)
    mk = kind = peaks = pkind = None
    if family in ("gpipe", "1f1b", "1f1b-split"):
        mk = busy + (p - 1) * (F + I) if family == "1f1b-split" else (m + p - 1) * t
        kind, pkind = EXACT, EXACT
        peaks = [m] * p if family == "gpipe" else [min(p - d, m) for d in range(p)]
    elif family == "zb-h1":
        mk, kind = busy + (p - 1) * max(F, I, F + I - W), EXACT if m >= p else LOWER
    elif family == "zb-h2":
        mk, kind = busy + (p - 1) * F, EXACT if F == I == W and m >= p else LOWER
    elif family in ("interleaved-1f1b", "looped-bfs"):
        v = params.get("v", 2)
        mk, kind = (v * max(m, p) + min(m, p) - 1) * t / v, EXACT
        if family == "looped-bfs":  # every forward first: all m microbatches' v chunks (1/v each)
            peaks, pkind = [m] * p, EXACT
        elif v == 1:  # exactly 1f1b
            peaks, pkind = [min(p - d, m) for d in range(p)], EXACT
        else:
            n = m // max(1, m // p)  # round size
            megatron_all_forwards = params.get("order") == "megatron" and m == p
            warm = [m * v if megatron_all_forwards else min((v - 1) * n + 2 * (p - 1 - d), m * v) for d in range(p)]
            peaks, pkind = [Fr(min(w + 1, m * v), v) for w in warm], EXACT
    elif family == "interleaved-zb":
        mk, kind = busy + (p - 1) * F / params.get("v", 2), LOWER
    elif family == "hanayo":
        w = params.get("waves", 1)
        mk, kind = m * t + (p - 1) * max(F, B) / w, EXACT if m >= p else LOWER
        peaks = [
            Fr(min(2 * w * m, max(2 * w * m - (p - 1 - d), min(p - d, m) + 2 * m * (w - 1) + 1)), 2 * w)
            for d in range(p)
        ]
        pkind = EXACT
    elif family == "chimera" or (
        family == "chimera-asym" and params.get("offset", 1) % p == 0 and "down" not in params
    ):
        # chimera-asym with --offset 0 and the default split is exactly chimera
        k = m // p
        unit = p * t + (p - 2) * max(F, B)
        if params.get("units", "continuous") == "continuous":
            mk, kind = m * t + (p - 2) * max(F, B), EXACT
            peaks = [min(p - d, Fr(m, 2)) + min(d + 1, Fr(m, 2)) for d in range(p)]
        else:
            if k == 1:  # the basic unit itself
                mk, kind = unit, EXACT
            elif F == B:
                mk, kind = unit + (k - 1) * (2 * p + 2 * ((p - 2) // 4)) * F, EXACT
            elif p <= 4:
                mk, kind = unit + (k - 1) * (p * t + (p - 2) * abs(B - F)), EXACT
            else:
                mk, kind = (m + Fr(p, 2) - 1) * t, LOWER
            peaks = [min(p - d, p // 2) + min(d + 1, p // 2) for d in range(p)]
        pkind = EXACT
    elif family == "chimera-asym":
        off, down, k = params.get("offset", 1) % p, params.get("down", p // 2), m // p
        n0, n1 = down * k, (p - down) * k
        s1 = [(p - 1 + off - d) % p for d in range(p)]  # pipe 1's stage on device d
        mk = max((max(n0, n1) + p - 1) * t, max(min(d, s1[d]) for d in range(p)) * t + m * t)
        kind = LOWER
        peaks, pkind = [min(p - d, n0) + min(p - s1[d], n1) for d in range(p)], UPPER
    elif family == "zbv":
        mk, kind = busy + (p - 1) * F / 2, EXACT if F == I and F / 2 <= W <= F and m >= 2 * p else LOWER
    elif family in ("dualpipe", "dualpipev") and B == I + W:
        fb = F + B  # an overlapped F&B slot lasts the sum of its ops
        if family == "dualpipe":
            mk, fill = busy + (Fr(p, 2) - 1) * (fb + B - 3 * W), busy + (Fr(p, 2) - 1) * F
        else:  # chunk ops last half a share
            mk, fill = busy + (p - 1) * (fb + B - 3 * W) / 2, None
        kind = EXACT if F == I and W <= F else LOWER
        if kind == LOWER:
            mk = fill
    return mk, kind, peaks, pkind


def check_point(family: str, p: int, m: int, params: dict) -> list[str]:
    where = f"ppverify show {family} -p {p} -m {m} {' '.join(f'--{k} {v}' for k, v in params.items())}"
    try:
        s = build(family, p, m, **params)
    except ParameterError as e:
        if accepted(family, p, m, params):
            return [f"{where}: refused, but the rules accept it: {e}"]
        if "\n" in str(e) or not str(e).startswith("parameter "):
            return [f"{where}: refusal is not one line: {e!r}"]
        try:  # a size without a schedule has no closed form either (compare's formula level)
            formula_for(family, p, m, None, **params)
        except ParameterError:
            return []
        return [f"{where}: refused, but its formula evaluates"]
    except Exception as e:  # anything else is a bug
        return [f"{where}: {type(e).__name__}: {e}"]
    out = []
    if family == "chimera-asym" and params.get("offset") == 0 and "down" not in params:
        twin = build("chimera", p, m, units=params.get("units", "continuous"))
        if s.programs != twin.programs or s.pipe_of_mb != twin.pipe_of_mb:
            out.append(f"{where}: not exactly chimera (docs: --offset 0 --down p/2 is chimera)")
    if not accepted(family, p, m, params):
        out.append(f"{where}: built, but the rules refuse it")
    if (s.p, s.m, s.num_stages) != (p, m, stages(family, p, params)):
        out.append(f"{where}: built p={s.p} m={s.m} S={s.num_stages}")
    report = verify(s)
    if not report.valid:
        out.append(f"{where}: not VALID: {report.violations[0].to_text()}")
    for costs in cost_sets(family):
        at = f"{where}{'' if costs is None else ' --costs ' + ','.join(f'{k}={v}' for k, v in costs.items())}"
        cm = CostModel.unit(s.placement) if costs is None else CostModel.abstract(s.placement, **costs)
        slot, asyn = run(s, cm, semantics="slot"), run(s, cm, semantics="async")
        if abs(slot.makespan - asyn.makespan) > 1e-9:
            out.append(f"{at}: async {asyn.makespan} != slot {slot.makespan}")
        peaks = slot.peak_memory()
        # what `show` prints: an exact claim equals the table, a bound holds
        f = formula_for(family, p, m, costs, **params)
        if f.makespan_kind == EXACT and abs(f.makespan - slot.makespan) > 1e-9:
            out.append(f"{at}: table {slot.makespan} != formula {f.makespan} (claimed exact)")
        if f.makespan_kind == LOWER and slot.makespan < f.makespan - 1e-9:
            out.append(f"{at}: table {slot.makespan} below the formula's lower bound {f.makespan}")
        if f.peak_kind == EXACT and not np.allclose(peaks, f.peak_activations):
            out.append(f"{at}: peaks {peaks.tolist()} != formula {list(f.peak_activations)} (claimed exact)")
        if f.peak_kind == UPPER and (peaks > np.asarray(f.peak_activations) + 1e-9).any():
            out.append(f"{at}: peaks {peaks.tolist()} above the formula's bound {list(f.peak_activations)}")
        # the documented closed forms, computed here
        mk, kind, want_peaks, pkind = documented(family, p, m, params, costs)
        if kind == EXACT:
            if abs(slot.makespan - float(mk)) > 1e-9:
                out.append(f"{at}: table {slot.makespan} != documented {float(mk)}")
            # chimera-asym's formula is bounds only (docs), even where it is chimera
            if family != "chimera-asym" and (f.makespan_kind != EXACT or abs(f.makespan - float(mk)) > 1e-9):
                out.append(f"{at}: show's formula {f.makespan} ({f.makespan_kind}) != documented exact {float(mk)}")
        elif kind == LOWER and slot.makespan < float(mk) - 1e-9:
            out.append(f"{at}: table {slot.makespan} below the documented lower bound {float(mk)}")
        if want_peaks is not None:
            want = np.array([float(x) for x in want_peaks])
            if pkind == EXACT and not np.allclose(peaks, want):
                out.append(f"{at}: peaks {peaks.tolist()} != documented {want.tolist()}")
            if pkind == UPPER and (peaks > want + 1e-9).any():
                out.append(f"{at}: peaks {peaks.tolist()} above the documented bound {want.tolist()}")
    return out


@pytest.mark.parametrize("family, params", CASES, ids=[f"{f}{''.join(f'-{v}' for v in p.values())}" for f, p in CASES])
def test_edge_sizes(family, params):
    problems = [x for p in PS for m in sizes(p) for x in check_point(family, p, m, params)]
    assert problems == [], "\n".join(problems)


def test_every_family_is_covered():
    # a new family joins this check by default parameters; one with parameters needs a PARAMS row
    assert {f.name for f in families()} <= {f for f, _ in CASES}


@pytest.mark.parametrize("p, m, v", [(2, 5, 2), (4, 9, 2), (8, 17, 3)])
def test_interleaved_zb_formula_refuses_what_the_generator_refuses(p, m, v):
    # the formula used to evaluate (e.g. 28.5 at p=4, m=9, v=2) for sizes PyTorch's rounds rule
    # refuses, while build() and interleaved-1f1b's formula refuse them
    with pytest.raises(ParameterError, match="multiple of the number of rounds"):
        build("interleaved-zb", p, m, v=v)
    with pytest.raises(ParameterError, match="multiple of the number of rounds"):
        formula_for("interleaved-zb", p, m, v=v)
    assert formula_for("interleaved-zb", p, m, v=1).makespan_kind == LOWER  # one chunk: any m
