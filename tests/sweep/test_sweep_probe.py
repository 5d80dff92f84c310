"""``ppverify sweep`` probed as a demanding user: rows checked against values derived by hand and
against the same point computed alone, the same rows whatever the executor and worker count, and
the store's edge cases (blank lines, a store named through a symbolic link, rows written by an
older ppverify)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppverify.cli import main
from ppverify.compare.config import LEVEL_SEMANTICS
from ppverify.core.errors import ParameterError
from ppverify.sweep import executor as ex
from ppverify.sweep import parse_sweep, read_store
from ppverify.sweep.executor import rows_to_run, run_sweep
from ppverify.sweep.store import store_lock

GRID = {
    "name": "probe",
    "schedules": ["gpipe", "1f1b", "zb-h1"],
    "p": [2, 4],
    "m": [4, 8],
    "costs": {"F": 1, "B": 2},
    "comm_delays": [0, 1],
    "levels": ["formula", "slot", "async", "contention"],
}


def _rows(df: pd.DataFrame) -> list[dict]:
    """The table without its timing column (wall seconds differ run to run)."""
    return df.drop(columns=["seconds"]).astype(object).where(df.notna(), None).to_dict(orient="records")


def _at(df: pd.DataFrame, config: str, schedule: str, level: str) -> float:
    hit = df[(df["config"] == config) & (df["schedule"] == schedule) & (df["level"] == level)]
    assert len(hit) == 1
    return float(hit["makespan"].iloc[0])


def test_rows_match_hand_derived_makespans_and_simulate_alone(tmp_path, capsys):
    df = run_sweep(parse_sweep(GRID), tmp_path / "s.jsonl", workers=1)
    # GPipe (and 1F1B), p=2, m=4, F=1, B=2, no communication: (m+p-1)(F+B) = 5 * 3 = 15 at every level
    for level in GRID["levels"]:
        assert _at(df, "p=2 m=4 F=1,B=2 c=0", "gpipe", level) == 15.0
        assert _at(df, "p=2 m=4 F=1,B=2 c=0", "1f1b", level) == 15.0
    # one unit per hop (async): forwards reach device 1 one unit late (F3 ends there at 6), its four
    # backwards run 6..14, the first reaches device 0 at 9 and device 0's four backwards end at 17:
    # 15 + 2(p-1)c = 17
    assert _at(df, "p=2 m=4 F=1,B=2 c=1", "gpipe", "async") == 17.0
    # GPipe p=4 m=8 without communication: (8+3)*3 = 33
    assert _at(df, "p=4 m=8 F=1,B=2 c=0", "gpipe", "slot") == 33.0
    # the same points computed alone agree with the sweep's rows
    for sem, delay in (("async", "1"), ("contention", "1"), ("async", "0")):
        assert main(["simulate", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--comm-delay", delay,
                     "--semantics", sem, "--json"]) == 0  # fmt: skip
        alone = json.loads(capsys.readouterr().out)["makespan"]
        assert _at(df, f"p=4 m=8 F=1,B=2 c={delay}", "1f1b", sem) == pytest.approx(alone, rel=1e-12)


def test_same_rows_with_one_and_two_workers_and_smaller_batches(tmp_path):
    spec = parse_sweep(GRID)
    one = run_sweep(spec, tmp_path / "one.jsonl", workers=1)
    two = run_sweep(spec, tmp_path / "two.jsonl", workers=2, batch=4)
    tiny = run_sweep(spec, tmp_path / "tiny.jsonl", workers=2, batch=1)
    assert len(one) == spec.num_points == 3 * 8 * 4
    assert _rows(one) == _rows(two) == _rows(tiny)


def test_same_rows_on_a_local_ray_cluster(tmp_path):
    ray = pytest.importorskip("ray")  # the ray extra, which `make test` installs
    spec = parse_sweep({**GRID, "p": [2], "comm_delays": [1]})
    alone = run_sweep(spec, tmp_path / "alone.jsonl", workers=1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = run_sweep(spec, tmp_path / "ray.jsonl", executor="ray")
    finally:
        ray.shutdown()
    assert _rows(on_ray) == _rows(alone)


def test_few_tasks_are_spread_over_every_worker(tmp_path, monkeypatch):
    # 8 configurations (2 p x 2 m x 2 delays) are 8 tasks; with --batch 4 they were 2 batches, so
    # --workers 4 ran on 2 processes. Spread over 4 workers: ceil(8 / 4) = 2 tasks a batch, 4 batches.
    seen: dict = {}

    def fake_pool(batches, sink, workers, retries=1):
        seen["batches"], seen["workers"] = [len(b) for b in batches], workers
        for b in batches:
            sink(ex.run_batch(b))

    monkeypatch.setattr(ex, "_run_pool", fake_pool)
    monkeypatch.setattr(ex.os, "cpu_count", lambda: 8)
    df = run_sweep(parse_sweep(GRID), tmp_path / "s.jsonl", workers=4, batch=4)
    assert seen == {"batches": [2, 2, 2, 2], "workers": 4}
    assert len(df) == 96


def test_blank_lines_in_a_store_are_no_damage(tmp_path):
    spec = parse_sweep({**GRID, "p": [2], "m": [4], "comm_delays": [0]})  # 3 schedules x 4 levels
    store = tmp_path / "s.jsonl"
    first = run_sweep(spec, store, workers=1)
    lines = store.read_text().splitlines()
    # an editor's final newline, and a blank line in the middle: no row is damaged
    store.write_text("\n".join(lines[:5]) + "\n\n" + "\n".join(lines[5:]) + "\n\n")
    assert len(read_store(store)) == 12 and rows_to_run(spec, store) == 0
    again = run_sweep(spec, store, workers=1)
    assert _rows(again) == _rows(first)


def test_a_store_named_through_a_symbolic_link_shares_its_lock(tmp_path):
    store = tmp_path / "s.jsonl"
    store.touch()
    (tmp_path / "link.jsonl").symlink_to(store)
    (tmp_path / "dir").symlink_to(tmp_path, target_is_directory=True)
    spec = parse_sweep({**GRID, "p": [2], "m": [4], "comm_delays": [0]})
    with store_lock(store):
        # the same file by another name: refused as the same store is, not run beside it
        for other in (tmp_path / "link.jsonl", tmp_path / "dir" / "s.jsonl"):
            with pytest.raises(ParameterError, match="another sweep .* is writing this store"):
                run_sweep(spec, other, workers=1)
    assert store.read_text() == ""  # nothing appended by the refused runs
    assert not (tmp_path / "s.jsonl.lock").exists()


def test_rows_of_an_older_ppverify_are_computed_again(tmp_path):
    spec = parse_sweep({**GRID, "p": [2], "m": [4], "comm_delays": [0]})
    store = tmp_path / "s.jsonl"
    fresh = run_sweep(spec, store, workers=1)
    rows = [json.loads(x) for x in store.read_text().splitlines()]
    # a row as ppverify wrote it before the Z3 column: the same point hash, no 'verified' key; and a
    # row whose level description has since been reworded
    del rows[0]["verified"]
    rows[1]["semantics"] = "an older wording of the level"
    store.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert rows_to_run(spec, store) == 1  # what --dry-run reports is what the run computes
    again = run_sweep(spec, store, workers=1)
    assert _rows(again) == _rows(fresh)
    assert again["verified"].tolist() == ["valid"] * 12
    assert again["semantics"].iloc[1] == LEVEL_SEMANTICS[again["level"].iloc[1]]
    stored = [json.loads(x) for x in store.read_text().splitlines()]
    assert len(stored) == 12 and len({r["point"] for r in stored}) == 12  # no row twice
    assert all("verified" in r for r in stored)


def test_cli_resume_counts_and_exit_codes(tmp_path, capsys):
    import yaml

    cfg = tmp_path / "g.yaml"
    cfg.write_text(yaml.safe_dump({**GRID, "p": [2], "m": [4], "comm_delays": [0]}))
    store = tmp_path / "g.results.jsonl"
    assert main(["sweep", str(cfg), "--no-progress", "--workers", "1", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["to_run"], first["already_done"], first["rows"]) == (12, 0, 12)
    rows = [json.loads(x) for x in store.read_text().splitlines()]
    del rows[3]["verified"]
    store.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["sweep", str(cfg), "--no-progress", "--workers", "1", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert (second["to_run"], second["already_done"], second["rows"]) == (1, 11, 12)
    # a damaged line in the middle: one line naming the store and the line, exit 2
    lines = store.read_text().splitlines()
    lines[4] = '{"point": garbage'
    store.write_text("\n".join(lines) + "\n")
    assert main(["sweep", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{store}:5: damaged store line (not JSON)" in err and "Traceback" not in err


def test_a_file_opening_with_a_blank_line_is_still_named_no_store(tmp_path):
    # a config given as --store by mistake, opening with a blank line: its first text line (2) is
    # not JSON, so the file is another kind of file, and it is left as it was
    other = tmp_path / "notes.txt"
    other.write_text("\nschedules: [gpipe]\n")
    with pytest.raises(Exception, match=r"notes\.txt:2: not a sweep store \(line 2 is not JSON"):
        read_store(other)
    assert other.read_text() == "\nschedules: [gpipe]\n"
