"""``compare`` refuses what its mode would ignore (presets beside abstract costs ran in abstract
units with the presets dropped; ``--findings`` dropped ``-m`` and every model but the first), and
its legend explains only the columns it prints."""

from __future__ import annotations

import pytest

from ppverify.compare.outcome import format_outcome
from ppverify.compare.request import compare_request, run_request
from ppverify.core.errors import ParameterError

ABSTRACT = dict(costs="F=1,B=2", levels="slot", ps="2", ms="2", schedules="gpipe")


@pytest.mark.parametrize(
    "given, name, says",
    [
        (dict(ABSTRACT, systems="dgx-h100"), "systems", "presets and abstract --costs/--comm-delay do not mix"),
        (dict(comm_delay="1", models="gpt3-1.3b"), "models", "presets and abstract --costs/--comm-delay do not mix"),
        (dict(ABSTRACT, options=(("mfu", 0.5),)), "mfu", "shapes a model preset's durations"),
        (dict(ABSTRACT, options=(("ranks_per_node", 1),)), "ranks-per-node", "shapes a model preset's durations"),
        (dict(findings=True, ms="8"), "m", "--findings runs m = p and m = 4p"),
        (dict(findings=True, models="gpt3-1.3b,gpt3-13b"), "models", "--findings checks one model"),
        (dict(ABSTRACT, max_opt_ops=-5), "max-opt-ops", "must be an integer >= 0"),
        (dict(ABSTRACT, memory_cap="3"), "memory-cap", "caps the CP-SAT optimum, a level this run leaves out"),
        (dict(ABSTRACT, costs="F=1,F=2"), "costs", "F is given twice"),
    ],
)
def test_an_option_the_mode_ignores_is_refused(given, name, says):
    with pytest.raises(ParameterError) as err:
        compare_request(**given)
    assert err.value.name == name and says in str(err.value)


def test_what_the_mode_uses_is_still_accepted():
    assert compare_request(systems="dgx-h100", models="gpt3-1.3b", options=(("mfu", 0.5),)).options == (("mfu", 0.5),)
    assert compare_request(schedules="gpipe", levels="async,optimum", costs="F=1", memory_cap="3").memory_cap
    assert compare_request(findings=True, models="gpt3-13b").models == ("gpt3-13b",)


def test_the_legend_explains_only_the_columns_printed():
    # slot alone, no verifier: no optimum columns (peak act. (opt.), gap to bound, lb) and no Z3
    text = format_outcome(run_request(compare_request(**ABSTRACT, verify=False)), 0.1)
    legend = text[text.index("Columns:") :]
    for absent in ("gap to bound", "peak act. (opt.)", "  lb ", "  Z3 "):
        assert absent not in legend, absent
    assert "  slot " in legend
    # with the verifier the Z3 column and its line are back
    text = format_outcome(run_request(compare_request(**ABSTRACT, verify=True)), 0.1)
    assert "  Z3         the verifier proved" in text
