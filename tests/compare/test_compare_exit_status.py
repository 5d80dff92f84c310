"""`compare` and `sweep` exit codes (docs/comparison.md): 1 when a row has status error (a
deadlocking schedule file), 2 for costs or an op limit that every point would fail on, refused
before anything runs, as `simulate` refuses them."""

from __future__ import annotations

import pytest
import yaml

from ppverify.cli import main
from ppverify.core.ops import Op
from ppverify.io.json_format import save_json
from ppverify.schedules import build


def _deadlock(tmp_path):
    # device 1 runs both forwards before either backward while device 0 waits for B0: a deadlock
    s = build("1f1b", p=2, m=2)
    F0, B0, F1, B1 = (Op(k, 0, mb) for k, mb in (("F", 0), ("B", 0), ("F", 1), ("B", 1)))
    bad = s.with_programs(((F0, B0, F1, B1), tuple(o._replace(stage=1) for o in (F0, F1, B0, B1))))
    save_json(bad, tmp_path / "bad.json")
    return tmp_path / "bad.json"


def test_compare_exits_1_when_a_point_errors_and_says_how_many(tmp_path, capsys):
    bad = _deadlock(tmp_path)
    argv = ["compare", "--schedules", f"{bad},1f1b", "--costs", "F=1,B=2", "-p", "2", "-m", "2"]
    assert main([*argv, "--levels", "slot,async", "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert "bad" in out and "1f1b" in out  # the table is printed first
    # 2 schedules x 2 levels = 4 rows; the deadlocking file's 2 are errors
    assert err.strip().endswith("ppverify compare: 2 of 4 rows failed (status error; the notes say why)")


def test_compare_without_errors_exits_0_with_not_applicable_rows(capsys):
    # hanayo outside m = p is 'not applicable': an answer, not a failure
    argv = ["compare", "--schedules", "hanayo-w1,1f1b", "--costs", "F=1,B=2", "-p", "2", "-m", "4"]
    assert main([*argv, "--levels", "slot", "--no-progress", "--no-verify"]) == 0
    assert "rows failed" not in capsys.readouterr().err


def test_sweep_exits_1_when_a_point_errors(tmp_path, capsys):
    bad = _deadlock(tmp_path)
    config = tmp_path / "bad.yaml"
    grid = {"schedules": [{"file": str(bad)}, "1f1b"], "p": [2], "m": [2], "costs": {"F": 1, "B": 2}}
    config.write_text(yaml.safe_dump({**grid, "levels": ["slot", "async"]}))
    assert main(["sweep", str(config), "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert "status: error 2, ok 2" in out  # the summary first
    assert "ppverify sweep: 2 of 4 rows failed (status error; the notes say why)" in err
    assert main(["sweep", str(config), "--no-progress", "--json"]) == 1  # resumed: the same verdict


@pytest.mark.parametrize(
    ("costs", "rule"),
    [
        ("F=2,I=1", "parameter --costs=F=2,I=1: give both I and W, or B"),
        ("F=1,B=2,I=1,W=2", "parameter --costs=F=1,B=2,I=1,W=2: B must equal I + W"),  # 2 != 1 + 2
    ],
)
def test_incomplete_costs_are_refused_before_any_run(capsys, costs, rule):
    assert main(["compare", "--schedules", "1f1b", "-p", "2", "-m", "2", "--costs", costs, "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"ppverify compare: error: {rule}" in err
    # the same words simulate gives
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--costs", costs]) == 2
    assert rule in capsys.readouterr().err


def test_compare_over_max_ops_is_refused_naming_the_largest_point(capsys):
    # 1f1b p=4 m=4: at most F, I, W per stage and microbatch = 3 x 4 x 4 = 48 ops > 40
    argv = ["--max-ops", "40", "compare", "--schedules", "1f1b", "-p", "2,4", "-m", "2,4", "--costs", "F=1,B=2"]
    assert main([*argv, "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "1f1b -p 4 -m 4: implies up to 48 ops, over the limit of 40" in err
    # 48 is not over a limit of 48: every point runs
    assert main(["--max-ops", "48", *argv[2:], "--no-progress", "--levels", "slot"]) == 0


def test_sweep_over_max_ops_is_refused_before_the_store(tmp_path, capsys):
    config = tmp_path / "g.yaml"
    grid = {"schedules": ["gpipe", "1f1b"], "p": [2, 4], "m": [4], "costs": {"F": 1, "B": 2}, "levels": ["slot"]}
    config.write_text(yaml.safe_dump(grid))
    assert main(["--max-ops", "4", "sweep", str(config), "--no-progress"]) == 2
    # gpipe p=4 m=4, the first entry's largest point: 3 x 4 x 4 = 48 ops
    assert "g.yaml: gpipe -p 4 -m 4: implies up to 48 ops, over the limit of 4" in capsys.readouterr().err
    assert not (tmp_path / "g.results.jsonl").exists()
    assert main(["--max-ops", "4", "sweep", str(config), "--dry-run"]) == 2
