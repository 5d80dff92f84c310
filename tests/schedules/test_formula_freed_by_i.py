"""Formula peaks follow the engines' memory model when an ``I`` frees part of an activation
(``freed_by_I`` > 0, what presets use): split-backward families no longer count every activation
as held until its ``W``."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from ppverify.compare.config import Config, ScheduleEntry
from ppverify.compare.evaluate import evaluate_point
from ppverify.compare.resolve import activation_share, share_costs
from ppverify.core.closed_form import EXACT, freed_share
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.engines.formulas import formula_for
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings, resolve_presets

#: every family with a split backward and a closed form, with sizes inside its rules
SPLIT = [
    ("1f1b-split", 4, 8),
    ("zb-h1", 4, 8),
    ("zb-h1", 4, 3),
    ("zb-h2", 4, 8),
    ("zb-h2", 3, 4),
    ("zbv", 4, 8),
    ("dualpipe", 4, 8),
    ("dualpipev", 4, 8),
    ("v-min", 4, 8),
    ("v-half", 4, 8),
    ("interleaved-zb", 4, 8),
]


def test_zb_h1_peak_by_hand():
    # zb-h1, p=4, m=8, I frees f = 1/4. Device d warms up with w = 3-d forwards, then step j runs
    # F(w+j), I(j) and, once j >= d, W(j-d). Memory peaks when a forward starts. Device 3 (w = 0):
    # F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 ...; when F3 starts it holds 4 forwards less 3 I's at 1/4:
    # 4 - 3/4 = 3.25; when F4 starts: 5 forwards - 4/4 (four I's) - 3/4 (W0 frees the rest) = 3.25
    # again, and so on. Device 0 (w = 3, W right after its I) peaks at its 4th forward: 4.
    # In general the d delayed W's hold 3/4 each: (4-d) + 3/4 d -> 4, 3.75, 3.5, 3.25.
    f = formula_for("zb-h1", 4, 8, {"F": 1, "B": 2, "freed_by_I": 0.25})
    assert f.peak_activations == (4.0, 3.75, 3.5, 3.25)
    assert f.peak_kind == EXACT
    # f = 0 (the abstract default): min(p, m) = 4 everywhere, as before
    assert formula_for("zb-h1", 4, 8, {"F": 1, "B": 2}).peak_activations == (4.0,) * 4


def test_zb_h2_peak_by_hand():
    # zb-h2, p=2, m=3, f = 1/2. Programs (the family's docstring): device 0 runs F0 F1 F2 before any
    # I, so it peaks at 3. Device 1 runs F0 I0 F1 I1 F2 ...: when F2 starts it holds 3 forwards
    # less two I's at 1/2: 3 - 1 = 2 (no W has run yet; later only I's and W's, memory falls).
    f = formula_for("zb-h2", 2, 3, {"F": 1, "I": 1, "W": 1, "freed_by_I": 0.5})
    assert f.peak_activations == (3.0, 2.0)


def test_freed_share_out_of_range_refused():
    with pytest.raises(ParameterError, match="freed_by_I"):
        formula_for("zb-h1", 4, 8, {"F": 1, "freed_by_I": 1.5})


@pytest.mark.parametrize("f", [0.25, 0.5, 1.0])
@pytest.mark.parametrize(("family", "p", "m"), SPLIT)
def test_formula_peak_agrees_with_table(family, p, m, f):
    # each family's claim (exact: equal, upper bound: not below) holds against the slot table when
    # the cost model frees f at I, for uniform stages (what the formulas assume)
    s = build(family, p, m)
    costs = CostModel.abstract(s.placement, F=1, I=1, W=1, freed_by_I=f)
    table = run(s, costs, semantics="slot").peak_memory().tolist()
    formula = formula_for(family, p, m, {"F": 1, "I": 1, "W": 1, "freed_by_I": f})
    for ours, theirs in zip(formula.peak_activations, table, strict=True):
        if formula.peak_kind == EXACT:
            assert ours == pytest.approx(theirs, abs=1e-9), (family, p, m, f, formula.peak_activations, table)
        else:
            assert theirs <= ours + 1e-9, (family, p, m, f, formula.peak_activations, table)


def _uniform(costs: CostModel) -> CostModel:
    """The preset's cost model with every stage's activation the mean and every stage freeing the
    weighted share at I (the formulas' uniform stages: the last stage's logits, which I does not
    free, make its own share smaller), keeping its durations."""
    mean = sum(costs.activation) / len(costs.activation)
    share = freed_share(costs)
    return replace(costs, activation=(mean,) * len(costs.activation), freed_by_I=(share,) * len(costs.activation))


@pytest.mark.parametrize(("family", "p", "m"), [("zb-h1", 4, 8), ("zb-h2", 4, 8), ("zbv", 4, 8), ("1f1b-split", 4, 8)])
def test_formula_peak_equals_engine_peak_under_a_preset(family, p, m):
    # under the dgx-h100 / gpt3-1.3b preset I frees about 72% of an activation; the formula level of
    # `compare` must give the engines' peaks (in bytes) for uniform stages
    s = build(family, p, m)
    preset = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s).costs
    assert 0 < freed_share(preset) < 1
    costs = _uniform(preset)
    table = run(s, costs, semantics="async").peak_memory().tolist()
    given = {**share_costs(costs, p), "freed_by_I": freed_share(costs)}
    formula = formula_for(family, p, m, given)
    assert formula.peak_kind == EXACT
    got = [x * activation_share(costs, p) for x in formula.peak_activations]
    assert got == pytest.approx(table, rel=1e-9)


def test_compare_formula_level_passes_the_presets_share():
    # the `compare` formula row (CSV/JSON) of zb-h1 under a preset: 4-d + d(1-f) activation shares
    # with the preset's f (before this fix every device read min(p, m) = 4 shares)
    cfg = Config(4, 8, "dgx-h100", "gpt3-1.3b")
    point = evaluate_point(ScheduleEntry("zb-h1", "zb-h1"), cfg, ("formula",), verify=False)
    (row,) = point.results
    s = build("zb-h1", 4, 8)
    preset = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s).costs
    f = Fraction(freed_share(preset)).limit_denominator(10**6)
    unit = activation_share(preset, 4)
    want = [float(4 - d + d * (1 - f)) * unit for d in range(4)]
    assert list(row.peak_activations) == pytest.approx(want, rel=1e-12)
    assert row.peak_activations[3] < row.peak_activations[0]
