"""Adding a family touches one file: a module written to a temporary folder registers a family with
its generator and its closed form, and the registry, ``verify``, ``formula_for`` and ``compare``'s
formula level all see it; ppverify's own families keep their formula in their own module.

The family is *LIFO GPipe*: GPipe's forwards, then the backwards newest first. Worked out by hand:
the last device ends its forwards at ``(m+p-1)tF`` and runs its m backwards back to back; device d
starts its backwards ``(p-1-d)tB`` later (each backward waits for the same microbatch's backward
downstream, and the order is the same on every device), so device 0 ends at
``(m+p-1)tF + (p-1)tB + m·tB = (m+p-1)(tF+tB)``, GPipe's makespan; every device holds all its m
activations before its first backward.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.engines.formulas import EXACT, formula_for
from ppverify.schedules import build, families, get_family, registry
from ppverify.verify import verify

MODULE = "lifo_gpipe_family"

SOURCE = textwrap.dedent('''
    """lifo-gpipe: GPipe with the backwards run newest microbatch first."""

    from collections.abc import Mapping

    from ppverify.core.closed_form import EXACT, Formula, exact_costs, make_formula
    from ppverify.core.ops import Op
    from ppverify.core.placement import linear
    from ppverify.core.schedule import Schedule
    from ppverify.schedules import Family, register


    def lifo_gpipe(p: int, m: int) -> Schedule:
        programs = tuple(
            tuple(Op("F", d, j) for j in range(m)) + tuple(Op("B", d, j) for j in reversed(range(m)))
            for d in range(p)
        )
        return Schedule(linear(p), m, programs, (0,) * m, "lifo-gpipe", {"p": p, "m": m})


    def lifo_gpipe_formula(p: int, m: int, costs: Mapping[str, float] | None = None) -> Formula:
        c = exact_costs(costs)
        t = c["F"] + c["B"]
        return make_formula("lifo-gpipe", m * t, (m + p - 1) * t, [m] * p, EXACT, EXACT, "any tF, tB", "by hand")


    register(Family("lifo-gpipe", lifo_gpipe, "GPipe, backwards newest first", formula=lifo_gpipe_formula))
''')


@pytest.fixture
def one_file_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The module above, written to one file and imported; the registry is process-wide, so the
    family goes into a copy of it that is dropped after the test (no other test sees it)."""
    families()  # ppverify's own families and the plugins first, as on any first use
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield importlib.import_module(MODULE)
    finally:
        sys.modules.pop(MODULE, None)


def test_a_family_with_its_formula_is_one_file(one_file_family) -> None:
    assert "lifo-gpipe" in [f.name for f in families()]
    fam = get_family("lifo-gpipe")
    assert fam.formula is one_file_family.lifo_gpipe_formula  # the family's own function, typed

    s = build("lifo-gpipe", p=2, m=3)
    assert [str(o) for o in s.programs[0]] == ["0F0", "0F1", "0F2", "0B2", "0B1", "0B0"]

    # valid, and its peak (m on every device, all forwards first) is what the verifier proves
    s = build("lifo-gpipe", p=3, m=4)
    report = verify(s, memory_cap=4)
    assert report.valid and [n for n, _ in report.proved][-1] == "memory"
    assert not verify(s, memory_cap=3).valid


@pytest.mark.parametrize("costs", [None, {"F": 1.0, "B": 2.0}, {"F": 3.0, "B": 1.0}])
def test_its_formula_is_evaluated_and_matches_the_hand_derivation_and_the_table(one_file_family, costs) -> None:
    tf, tb = (1, 1) if costs is None else (Fraction(costs["F"]), Fraction(costs["B"]))
    for p in range(1, 6):
        for m in range(1, 7):
            f = formula_for("lifo-gpipe", p, m, costs)
            want = (m + p - 1) * (tf + tb)
            assert f is not None and f.exact and f.makespan_kind == EXACT
            assert f.makespan == float(want)
            assert f.bubble_ratio == pytest.approx(float(Fraction(p - 1, m + p - 1)))
            assert f.peak_activations == (float(m),) * p
            s = build("lifo-gpipe", p, m)
            cm = CostModel.unit(s.placement) if costs is None else CostModel.abstract(s.placement, **costs)
            tl = run(s, cm, semantics="slot")
            assert tl.makespan == pytest.approx(float(want)) and tl.peak_memory().tolist() == [m] * p


def test_compare_lists_its_formula_level(one_file_family) -> None:
    from ppverify.compare import Config, run_comparison, select_schedules

    config = Config(3, 4, costs=(("F", 1.0), ("B", 2.0)))
    df = run_comparison([config], select_schedules(["lifo-gpipe"]), ("formula", "slot"))
    got = df.set_index("level")["makespan"]
    assert got["formula"] == got["slot"] == (4 + 3 - 1) * 3


def test_each_builtin_family_owns_its_formula_in_its_own_module() -> None:
    import ppverify.schedules as pkg

    for fam in families():
        if not fam.generator.__module__.startswith(pkg.__name__ + "."):
            continue  # a plugin's
        assert fam.formula is not None, fam.name
        assert fam.formula.__module__ == fam.generator.__module__, fam.name
