"""``ppverify design`` where a user pushes it: budgets no device can fill, steps that tie in their
last bits, families left beside the frontier, ``--layers-per-stage``, a JSON read back under its
own model options, progress of the long phases, and the plot's labels."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.design.families import adopt_families, family_points
from ppverify.design.output import family_labels, load_design
from ppverify.design.points import NOT_RUN, FamilyPoint, Point, point_problem
from ppverify.design.rework import rework_front
from ppverify.design.run import Design, DesignRequest
from ppverify.design.spec import Limits, Task, setups
from ppverify.systems.preset_models import PresetSettings

FAST = ["--work-limit", "0.3", "--search-work", "0", "--bound-work", "0", "--no-progress"]
PRESETS = ["-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
F1B2 = PresetSettings(costs="F=1,B=2")


def _json(capsys, argv: list[str], code: int = 0) -> dict:
    capsys.readouterr()
    assert main(argv) == code
    return json.loads(capsys.readouterr().out)


# --- budgets above anything a device can hold ------------------------------------------------


def test_a_budget_no_device_can_fill_is_no_cap() -> None:
    # linear, p = 2, m = 4: device 0 holds stage 0 of at most the 4 microbatches, 4 activations;
    # V: stages 0 and 3 of 0.5 each per microbatch, 4 again. Above that a cap never binds.
    for label in ("linear", "v"):
        s = setups(label, 2, 4, F1B2)[0]
        assert s.most_held() == 4.0
        assert point_problem(s, 4.0, 4).memory_cap is None
        assert point_problem(s, 3.5, 4).memory_cap == pytest.approx(3.5 * s.unit)
        assert point_problem(s, 1e12, 4).memory_cap is None


def test_a_huge_budget_gives_the_unconstrained_step(capsys) -> None:
    # before: the energy bound looped over the cap, and --budgets 1e7 ran out of memory (1e9: killed)
    argv = ["design", "-p", "2", "-m", "4", "--placements", "linear", "--budgets", "1e12", "--json", *FAST]
    d = _json(capsys, argv)
    # 1F1B with F = 1, B = 2: (m + p - 1)(F + B) = 5 * 3 = 15, the device work plus the fill
    assert [(q["time"], q["budget"]) for q in d["frontier"]] == [(15.0, 1e12)]


# --- equal steps: the smaller peak wins --------------------------------------------------------


def test_an_equal_step_in_its_last_bits_takes_the_smaller_peak() -> None:
    skipped = Point("linear", math.inf, "UNKNOWN", None, 1.5, None, None, None, "skipped: ...", skipped=True)
    fams = [
        FamilyPoint("1f1b", "linear", 2.0, 1.5000000000000002, None),  # 0.1 + 0.2 summed one way
        FamilyPoint("gpipe", "linear", 4.0, 1.4999999999999998, None),  # and another
    ]
    (q,) = adopt_families([skipped], fams)
    assert (q.start, q.peak, q.gap) == ("1f1b", 2.0, 0.0)
    # a search's own schedule as fast as a family's at a larger peak gives way to the family
    searched = Point("linear", math.inf, "OPTIMAL", 15.0, 15.0, 4.0, "greedy", None)
    (r,) = adopt_families([searched], [FamilyPoint("1f1b", "linear", 2.0, 15.0, None)])
    assert (r.start, r.peak) == ("1f1b", 2.0) and "at a smaller peak" in r.note


def test_one_f_one_b_is_on_the_frontier_with_decimal_costs(capsys) -> None:
    # F = 0.1, B = 0.2, p = 2, m = 4: 1F1B is (m + p - 1)(F + B) = 1.5 at peak p = 2, and no step is
    # faster (device 0's work m(F + B) = 1.2 plus the fill (p - 1)(F + B) = 0.3). Before, GPipe's
    # 1.4999999999999998 at peak 4 held the point, and 1F1B's row said "faster than the frontier"
    argv = ["design", "-p", "2", "-m", "4", "--costs", "F=0.1,B=0.2", "--placements", "linear"]
    d = _json(capsys, [*argv, "--budgets", "1,none", "--json", *FAST])
    assert [(q["peak"], q["time"]) for q in d["frontier"]][-1] == (2.0, pytest.approx(1.5))
    one = next(r for r in d["families"] if r["family"] == "1f1b")
    assert one["difference"] == 0.0 and "note" not in one


# --- the families' notes --------------------------------------------------------------------


def test_a_family_beside_the_frontier_is_told_why(capsys) -> None:
    rq = DesignRequest(4, 12, "linear", "100", F1B2)
    sets = setups("linear", 4, 12, F1B2)
    wide = Point("linear", 100.0, "OPTIMAL", 45.0, 45.0, 4.0, "1f1b", None)
    vmin = FamilyPoint("v-min", "v", 2.0, 41.5, None)
    d = Design(rq, sets, (wide,), (vmin,), (wide,), 1, 1, False)
    (row,) = d.family_rows()
    # no frontier point fits peak 2: the family is better than nothing there, which was unsaid
    assert row["frontier"] is None
    assert row["note"] == "fits below every frontier point (its least peak is 4): its placement was not searched"


def test_the_note_names_the_missing_budget_and_adding_it_clears_it(capsys) -> None:
    # V's unconstrained point runs at a peak above V-Min's 2; with budgets 1 and none no point of V
    # holds a schedule of peak 2 or less but the one at budget 1, far slower. V-Min is then the
    # frontier at peak 2 itself (a valid schedule of a searched placement), under the unconstrained
    # bound, and its row says that no point searched its peak. Before, the row read "the search
    # could not show otherwise within its limit", and later "faster than the frontier"
    argv = ["design", "-p", "4", "--costs", "F=1,I=1,W=1", "--placements", "linear,v", "--json", *FAST]
    d = _json(capsys, [*argv, "--budgets", "1,none"])
    vmin = next(r for r in d["families"] if r["family"] == "v-min")
    assert vmin["difference"] == 0.0
    assert vmin["note"].startswith("on the frontier as itself: no budget was searched between its peak 2 and none")
    assert vmin["note"].endswith("add 2 to --budgets")
    (on_front,) = [q for q in d["frontier"] if q["start"] == "v-min"]
    assert on_front["peak"] == 2 and on_front["budget"] is None and on_front["verified"] == "valid"
    # with that budget, V-Min starts the point at 2: the frontier there is at least as fast
    again = _json(capsys, [*argv, "--budgets", "1,2,none"])
    vmin = next(r for r in again["families"] if r["family"] == "v-min")
    assert vmin["difference"] <= 0 and "note" not in vmin


def test_a_cut_point_that_takes_a_family_says_it_was_not_run() -> None:
    late = Point("linear", 2.0, "UNKNOWN", None, 12.0, None, None, None, NOT_RUN, cut=True)
    (q,) = adopt_families([late], [FamilyPoint("1f1b", "linear", 2.0, 15.0, None)])
    # no search ran: "faster than what the search found" was wrong
    assert q.note == f"{NOT_RUN}; the family 1f1b kept"


# --- --layers-per-stage ---------------------------------------------------------------------


def test_layers_per_stage_runs_with_the_families_of_as_many_stages(capsys) -> None:
    # before, every run was refused: a family of another stage count (or the unit's linear
    # carrier) asked for another number of counts than the one given
    argv = ["design", *PRESETS, "--placements", "linear", "--budgets", "none", "--json", *FAST]
    plain = _json(capsys, argv)
    split = _json(capsys, [*argv, "--layers-per-stage", "5,6,6,7"])
    # the unit is the model's layers split evenly: the same bytes with or without the split
    assert split["design"]["activation_bytes"] == plain["design"]["activation_bytes"]
    names = {r["family"] for r in split["families"]}
    assert {"1f1b", "gpipe"} <= names and not names & {"zbv", "v-min", "interleaved-1f1b"}  # 8 stages at p = 4
    assert split["design"]["model_options"] == {"layers_per_stage": "5,6,6,7"}


def test_layers_per_stage_that_a_placement_cannot_take_is_refused_in_one_line(capsys) -> None:
    argv = ["design", *PRESETS, "--placements", "linear,v", "--layers-per-stage", "6,6,6,6", *FAST]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "layers-per-stage=6,6,6,6" in err[0] and "v has 8" in err[0]


# --- the JSON holds what the costs need -------------------------------------------------------


def test_design_json_is_read_back_under_its_own_model_options(tmp_path: Path, capsys) -> None:
    argv = ["design", "-p", "2", "-m", "2", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--mfu", "0.2"]
    out = tmp_path / "d"
    d = _json(
        capsys,
        [*argv, "--placements", "linear", "--budgets", "none", "--seed", "3", "--json", *FAST, "--save-dir", str(out)],
    )
    assert d["design"]["model_options"] == {"mfu": 0.2} and d["design"]["seed"] == 3
    back = load_design(out / "design.json")
    # before, the families were timed again at the default MFU of 0.4: twice as fast as in the run
    assert [r["time"] for r in back.family_rows()] == [r["time"] for r in d["families"]]
    assert back.request.limits.seed == 3


# --- progress ----------------------------------------------------------------------------------


def test_points_the_ceiling_left_unstarted_say_so_in_their_progress_line(capsys) -> None:
    argv = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--placements", "linear,v", "--budgets", "1,2"]
    assert main([*argv, "--time-limit", "0.001"]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("design [")]
    assert len(lines) == 4 and all("not run: the run's --time-limit had passed" in ln for ln in lines)


def test_a_second_search_is_reported_as_each_is_done() -> None:
    s = setups("linear", 2, 4, F1B2)[0]
    pts = [Point("linear", b, "FEASIBLE", 23.0 - b, 12.0, b, None, None) for b in (2.0, 3.0)]  # both on the frontier
    events: list[str] = []

    def run_tasks(tasks, each):  # as a pool that finishes one task, then the other
        done = []
        for t in tasks:
            events.append(f"ran {t.budget:g}")
            done.append(Point("linear", t.budget, "OPTIMAL", 15.0, 15.0, 2.0, None, None))
            each(done[-1])
        return done, False

    out, stopped = rework_front(
        pts,
        lambda q: True,
        lambda q: Task(0, s, q.budget, 4, Limits(1.0)),
        lambda q, found: found,
        run_tasks,
        lambda done, total, before, after: events.append(f"report {done}/{total}"),
    )
    # the largest budget first, each reported before the next runs; before, every line came at
    # the end, after all the (minutes of) work
    assert events == ["ran 3", "report 1/2", "ran 2", "report 2/2"] and not stopped
    assert [q.time for q in out] == [15.0, 15.0]


# --- the plot ----------------------------------------------------------------------------------


def test_families_on_one_point_share_one_label() -> None:
    fams = family_points(setups("linear", 2, 4, F1B2), 2, 4, F1B2)
    labels = family_labels(fams)
    names = [n for text in labels.values() for n in text.split(", ")]
    assert sorted(names) == sorted(f.family for f in fams)  # each family once
    points = list(labels)
    assert len(points) == len({(round(x, 6), round(y, 6)) for x, y in points})  # no two labels drawn on one point


# --- the ceiling and the families ------------------------------------------------------------


def test_families_timed_past_the_ceiling_are_said_to_be_cut() -> None:
    from ppverify.design.families import families_until
    from ppverify.design.output import design_text

    sets = setups("linear", 2, 4, F1B2)
    # a ceiling already passed times no family (at m = 5000 they took 12 s past a ceiling of 2 s)
    assert families_until(sets, 2, 4, F1B2, until=0.0) == ([], True)
    fams, cut = families_until(sets, 2, 4, F1B2, until=None)
    assert not cut and {f.family for f in fams} >= {"1f1b", "gpipe"}
    rq = DesignRequest(2, 4, "linear", "none", F1B2)
    d = Design(rq, sets, (), tuple(fams[:1]), (), 0, 1, False, families_cut=True)
    assert "families   the run's --time-limit passed while they were timed: 1 of them listed" in design_text(d)
    assert d.to_dict()["families_cut"] is True
    assert "families_cut" not in Design(rq, sets, (), tuple(fams), (), 0, 1, False).to_dict()
