"""A damaged or edited ``design.json`` (docs/design.md: "A malformed file is refused naming the file
and the field"): ``report --from`` refuses it in one line naming the file and the row, exit 2,
never an internal error and never a page whose table says what its charts do not.

The design used throughout: p = 2, m = 2, ``linear``, costs F = 1, B = 2, budgets 1 and 2. By hand
(docs/design.md's example): budget 1 runs one microbatch at a time, 2 microbatches x 2 stages x
(1 + 2) = 12 at a peak of 1 activation; budget 2 is 1F1B, (m + p - 1)(tF + tB) = 3 x 3 = 9 at a
peak of 2 (device 0 holds both microbatches before the first backward reaches it).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.errors import ScheduleFileError
from ppverify.design.output import load_design

ARGV = ["design", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--placements", "linear", "--budgets", "1,2"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """The design's ``design.json``, as ``--save-dir`` writes it."""
    out = tmp_path_factory.mktemp("design")
    assert main([*ARGV, "--work-limit", "2", "--no-progress", "--json", "--save-dir", str(out)]) == 0
    data = json.loads((out / "design.json").read_text())
    # what the hand derivation says, so that every edit below is one from a known value
    assert [(r["peak"], r["time"], r["bound"]) for r in data["frontier"]] == [(1.0, 12.0, 12.0), (2.0, 9.0, 9.0)]
    return data


def _report(tmp_path: Path, data: dict, capsys) -> tuple[int, str]:
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    capsys.readouterr()
    code = main(["report", "--from", str(path), "-o", str(tmp_path / "page.html")])
    return code, capsys.readouterr().err.strip()


def _refused(tmp_path: Path, data: dict, capsys, where: str, rule: str) -> None:
    code, err = _report(tmp_path, data, capsys)
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "internal error" not in err
    assert f"design.json: {where}: {rule}" in err, err
    assert not (tmp_path / "page.html").exists()


def test_the_untouched_file_still_loads(tmp_path, saved) -> None:
    # (tests/design/test_design.py draws its page: test_report_of_a_design_result)
    path = tmp_path / "design.json"
    path.write_text(json.dumps(saved))
    back = load_design(path)
    assert [(q.time, q.peak) for q in back.front] == [(12.0, 1.0), (9.0, 2.0)]
    assert back.to_dict()["frontier"] == saved["frontier"]


@pytest.mark.parametrize("value", [None, "x", True, [9.0]])
@pytest.mark.parametrize("key", ["time", "bound", "peak"])
def test_a_frontier_value_that_is_no_number_is_refused_naming_the_row(tmp_path, saved, capsys, key, value) -> None:
    # before: None and "x" reached value_at's min() after the load: TypeError, exit 3
    data = copy.deepcopy(saved)
    data["frontier"][0][key] = value
    _refused(tmp_path, data, capsys, "frontier[0]", f"{key}={value!r} is not a number")


def test_a_non_text_action_is_refused_naming_the_row(tmp_path, saved, capsys) -> None:
    # before: parse_action's text.strip() on an int: AttributeError, exit 3
    data = copy.deepcopy(saved)
    data["frontier"][1]["programs"][0][0] = 0
    _refused(tmp_path, data, capsys, "frontier[1]", "programs[0][0]=0 is not an action (text such as 0F1)")


def test_a_stage_the_placement_does_not_have_is_refused_naming_the_row(tmp_path, saved, capsys) -> None:
    # linear at p = 2 has stages 0 and 1: stage 9 is none of them
    data = copy.deepcopy(saved)
    data["frontier"][0]["programs"][0][0] = "9F0"
    _refused(tmp_path, data, capsys, "frontier[0]", "its programs are not a step of linear at m=2")
    assert "op 9F0 on device 0: stage must be in 0..1" in _report(tmp_path, data, capsys)[1]


def test_programs_of_another_request_are_refused_naming_the_row(tmp_path, saved, capsys) -> None:
    # m edited from 2 to 3: every saved schedule lacks microbatch 2 (op 0F2 first); before, the
    # page's chart failed with a line naming neither the file nor the point
    data = copy.deepcopy(saved)
    data["design"]["m"] = 3
    code, err = _report(tmp_path, data, capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert "design.json: points[0]: its programs are not a step of linear at m=3" in err
    assert "op 0F2 is missing" in err


def test_an_edited_time_is_refused(tmp_path, saved, capsys) -> None:
    # frontier[1] is 1F1B at p = 2, m = 2: (m + p - 1)(tF + tB) = 9, not 8
    data = copy.deepcopy(saved)
    data["frontier"][1].update(time=8.0, bound=8.0)
    _refused(tmp_path, data, capsys, "frontier[1]", "time 8 but its schedule runs in 9: edited or damaged")


def test_an_edited_peak_is_refused(tmp_path, saved, capsys) -> None:
    # 1F1B at p = 2: device 0 holds microbatches 0 and 1 before B0 frees one: a peak of 2, not 1.5
    data = copy.deepcopy(saved)
    data["frontier"][1]["peak"] = 1.5
    _refused(tmp_path, data, capsys, "frontier[1]", "peak 1.5 but its schedule peaks at 2: edited or damaged")


def test_a_bound_above_the_time_is_refused(tmp_path, saved, capsys) -> None:
    # a lower bound holds for every schedule within the budget, the point's own included: 10 > 9
    data = copy.deepcopy(saved)
    data["frontier"][1]["bound"] = 10.0
    _refused(tmp_path, data, capsys, "frontier[1]", "bound 10 is above its time 9")


def test_a_frontier_out_of_order_is_refused(tmp_path, saved, capsys) -> None:
    # peaks rise as times fall along a frontier: (2, 9) then (1, 12) is no frontier
    data = copy.deepcopy(saved)
    data["frontier"].reverse()
    _refused(tmp_path, data, capsys, "frontier[1]", "peak 1, time 12 is no improvement on frontier[0]")


def test_float_rounding_is_not_an_edit(tmp_path, saved) -> None:
    # one step summed in another order differs in its last bits: the same time (points.same_time)
    data = copy.deepcopy(saved)
    data["frontier"][1]["time"] = 9.000000000000002
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    assert load_design(path).front[1].time == 9.000000000000002


def test_each_frontier_schedule_is_timed_once(tmp_path, saved, monkeypatch) -> None:
    # the cost of the check: one simulation per frontier point (2 here), none per other point
    import ppverify.design.design_file as design_file

    calls = []
    real = design_file.held_and_time
    monkeypatch.setattr(design_file, "held_and_time", lambda s, st: calls.append(s) or real(s, st))
    path = tmp_path / "design.json"
    path.write_text(json.dumps(saved))
    load_design(path)
    assert len(calls) == len(saved["frontier"]) == 2


@pytest.mark.parametrize(
    "edit,where,rule",
    [
        (lambda d: d["points"][0].update(placement="zz"), "points[0]", "placement='zz' is not one of"),
        (lambda d: d["points"][0].update(budget="1"), "points[0]", "budget='1' is not a number > 0"),
        (lambda d: d["points"][0].update(status=3), "points[0]", "status=3 is not text"),
        (lambda d: d["frontier"][0].update(verified=None), "frontier[0]", "verified=None is not text"),
        (lambda d: d.update(frontier={"a": 1}), "frontier", "expected a list of point objects"),
    ],
)
def test_other_damaged_cells_are_refused_naming_the_row(tmp_path, saved, capsys, edit, where, rule) -> None:
    data = copy.deepcopy(saved)
    edit(data)
    _refused(tmp_path, data, capsys, where, rule)


def test_load_design_raises_the_file_error(tmp_path, saved) -> None:
    data = copy.deepcopy(saved)
    data["frontier"][0]["time"] = None
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScheduleFileError, match=r"design\.json: frontier\[0\]: time=None is not a number"):
        load_design(path)
