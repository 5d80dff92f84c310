"""A sweep config's solver budget is read as ``compare`` reads its options: ``time_limit`` must be
finite seconds > 0 (YAML's ``.inf`` and ``.nan`` are refused), and ``time_limit`` or
``max_opt_ops`` without the ``optimum`` level (the only one they budget) is refused rather than
ignored, each error naming the file and the key. ``--dry-run`` writes nothing: with ``--out`` it
says so on stderr (the table is checked, not written) and still exits 0."""

from __future__ import annotations

import pytest
import yaml

from ppverify.cli import main
from ppverify.core.errors import ScheduleFileError
from ppverify.sweep.config import load_sweep

GRID = {"schedules": ["gpipe"], "p": [2], "m": [2], "costs": {"F": 1, "B": 2}, "levels": ["slot", "optimum"]}


def _write(folder, text: str):
    path = folder / "s.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e300", "0", "-1"])
def test_time_limit_must_be_finite_seconds(tmp_path, value):
    path = _write(tmp_path, yaml.safe_dump(GRID) + f"time_limit: {value}\n")
    with pytest.raises(ScheduleFileError) as exc:
        load_sweep(path)
    assert exc.value.path == str(path) and exc.value.location == "time_limit"
    assert "expected finite seconds > 0" in exc.value.rule


@pytest.mark.parametrize("key,value", [("time_limit", 2), ("max_opt_ops", 64)])
def test_a_budget_without_the_optimum_is_refused(tmp_path, capsys, key, value):
    path = _write(tmp_path, yaml.safe_dump({**GRID, "levels": ["slot", "async"], key: value}))
    with pytest.raises(ScheduleFileError) as exc:
        load_sweep(path)
    assert exc.value.path == str(path) and exc.value.location == key
    assert exc.value.rule.startswith("budgets the CP-SAT optimum, a level this sweep leaves out")
    assert main(["sweep", str(path), "--dry-run"]) == 2  # one line on stderr, exit 2, as compare
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and key in err


def test_a_budget_with_the_optimum_is_read(tmp_path):
    spec = load_sweep(_write(tmp_path, yaml.safe_dump({**GRID, "time_limit": 2, "max_opt_ops": 64})))
    assert (spec.time_limit, spec.max_opt_ops) == (2.0, 64)


def test_dry_run_with_out_says_it_writes_nothing(tmp_path, capsys):
    path = _write(tmp_path, yaml.safe_dump({**GRID, "levels": ["slot"]}))
    out = tmp_path / "x.csv"
    assert main(["sweep", str(path), "--dry-run", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == f"ppverify sweep: --dry-run writes nothing: --out {out} was checked, not written"
    # gpipe x 1 configuration x 1 level = 1 row to run, none written
    assert captured.out.startswith("s: 1 rows = 1 schedules x 1 configurations x 1 levels")
    assert not out.exists() and not (tmp_path / "s.results.jsonl").exists()


def test_dry_run_still_checks_out(tmp_path, capsys):
    path = _write(tmp_path, yaml.safe_dump({**GRID, "levels": ["slot"]}))
    assert main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "x.xlsx")]) == 2
    assert "expected a .csv or .parquet file" in capsys.readouterr().err
