"""Sweeps, resumed and shared: one sweep writes a store at a time, a store holds one sweep's rows,
``--dry-run`` counts without touching the store, the written table does not depend on the order
rows finished in, workers do not outlive a killed sweep, and the config's options and name are
checked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ppverify.cli import main
from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.sweep import load_sweep, parse_sweep, read_store, results_frame
from ppverify.sweep.executor import rows_to_run, run_sweep
from ppverify.sweep.store import store_lock
from tests.compare.test_sweep import ABSTRACT

# 2 schedules x (2 p x 2 m x 2 delays) configurations x 1 level = 16 points
GRID = ABSTRACT


def _write(tmp_path: Path, data: dict, name: str) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _lines(store: Path) -> list[dict]:
    return [json.loads(x) for x in store.read_text().splitlines()]


def test_a_second_sweep_on_a_store_in_use_is_refused(tmp_path, capsys):
    config, store = _write(tmp_path, GRID, "grid.yaml"), tmp_path / "s.jsonl"
    argv = ["sweep", str(config), "--store", str(store), "--workers", "1", "--no-progress"]
    with store_lock(store):  # another sweep is running on this store
        assert main(argv) == 2
        assert "another sweep" in capsys.readouterr().err
        with pytest.raises(ParameterError, match="another sweep"):
            run_sweep(parse_sweep(GRID), store, workers=1)
        assert not store.exists() or store.read_text() == ""  # nothing computed beside it
    assert main(argv) == 0  # once it is done, the store is free again
    points = [r["point"] for r in _lines(store)]
    assert len(points) == 16 and len(set(points)) == 16
    assert not Path(str(store) + ".lock").exists()


def test_two_sweeps_started_together_store_each_point_once(tmp_path):
    config, store = _write(tmp_path, {**GRID, "p": [2, 3, 4, 5], "m": [4, 8, 12]}, "grid.yaml"), tmp_path / "s.jsonl"
    cmd = [sys.executable, "-m", "ppverify", "sweep", str(config), "--store", str(store), "--workers", "1"]
    procs = [subprocess.Popen([*cmd, "--no-progress"], stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    # each ran alone (one after the other) or one was refused; never both computing every point
    assert sorted(rc for rc, _ in results) in ([0, 0], [0, 2])
    assert all("another sweep" in err for rc, err in results if rc == 2)
    points = [r["point"] for r in _lines(store)]
    assert len(points) == 2 * 4 * 3 * 2 and len(set(points)) == len(points)


def test_a_store_of_another_sweep_is_refused_not_mixed(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    first = _write(tmp_path, {**GRID, "p": [2], "m": [2], "comm_delays": [0]}, "first.yaml")  # 2 points
    second = _write(tmp_path, {**GRID, "schedules": ["zb-h1"], "costs": {"F": 1, "B": 3}}, "second.yaml")
    assert main(["sweep", str(first), "--store", str(store), "--workers", "1", "--no-progress"]) == 0
    before = store.read_text()
    assert [r["sweep"] for r in _lines(store)] == ["first", "first"]
    for extra in (["--dry-run"], ["--workers", "1", "--no-progress"]):
        assert main(["sweep", str(second), "--store", str(store), *extra]) == 2
        err = capsys.readouterr().err
        assert "holds 2 rows of sweep 'first', not of 'second'" in err and len(err.splitlines()) == 1
    assert store.read_text() == before
    # the same sweep, its grid grown, resumes: 1 schedule x 2 configurations new
    grown = _write(tmp_path, {**GRID, "name": "first", "p": [2], "m": [2, 4], "comm_delays": [0]}, "grown.yaml")
    assert rows_to_run(load_sweep(grown), store) == 4 - 2
    # rows written before rows carried their sweep's name are taken as this sweep's
    store.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "sweep"}) + "\n" for r in _lines(store)))
    assert rows_to_run(load_sweep(second), store) == 8  # 1 schedule x 8 configurations


def test_dry_run_counts_what_the_run_computes_and_leaves_a_torn_store_alone(tmp_path, capsys):
    config, store = _write(tmp_path, GRID, "grid.yaml"), tmp_path / "s.jsonl"
    run_sweep(load_sweep(config), store, workers=1)
    lines = store.read_text().splitlines(keepends=True)
    torn = "".join(lines[:5]) + lines[5][:30]  # killed while writing row 6
    store.write_text(torn)
    assert main(["sweep", str(config), "--store", str(store), "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert (dry["already_done"], dry["to_run"]) == (5, 16 - 5)
    assert store.read_text() == torn  # a dry run may run beside a sweep: it never rewrites the store
    assert main(["sweep", str(config), "--store", str(store), "--workers", "1", "--no-progress", "--json"]) == 0
    ran = json.loads(capsys.readouterr().out)
    assert (ran["already_done"], ran["to_run"], ran["rows"]) == (5, 11, 16)
    points = [r["point"] for r in _lines(store)]
    assert len(points) == 16 and len(set(points)) == 16


def test_the_table_is_in_grid_order_whatever_order_rows_finished_in(tmp_path):
    spec = parse_sweep(GRID)
    store = tmp_path / "s.jsonl"
    run_sweep(spec, store, workers=1)
    rows = read_store(store)
    forward = results_frame(rows, spec)
    backward = results_frame(list(reversed(rows)), spec)  # as a resumed sweep may have stored them
    assert forward.drop(columns="seconds").equals(backward.drop(columns="seconds"))
    # configurations (delay, then p, then m), then schedules in the config's order
    expected = [
        (f"p={p} m={m} F=1,B=2 c={c}", s) for c in (0, 0.5) for p in (2, 4) for m in (2, 4) for s in ("gpipe", "1f1b")
    ]
    assert list(zip(backward["config"], backward["schedule"])) == expected


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's children from /proc")
def test_workers_leave_when_the_sweep_is_killed_outright(tmp_path):
    grid = {**GRID, "p": [4, 6, 8], "m": [16, 24, 32, 48], "levels": ["slot", "async", "contention"]}
    config, store = _write(tmp_path, grid, "big.yaml"), tmp_path / "s.jsonl"
    cmd = [sys.executable, "-m", "ppverify", "sweep", str(config), "--store", str(store)]
    proc = subprocess.Popen(
        [*cmd, "--workers", "2", "--batch", "1", "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    children_file = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    children: list[int] = []
    deadline = time.time() + 60
    while time.time() < deadline and not (len(children) >= 2 and store.exists() and store.stat().st_size):
        children = [int(x) for x in children_file.read_text().split()] if children_file.exists() else []
        time.sleep(0.02)
    assert len(children) >= 2, "the pool's workers never started"
    os.kill(proc.pid, signal.SIGKILL)  # the parent only, as the OOM killer does
    proc.wait()

    def alive(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    deadline = time.time() + 10
    while time.time() < deadline and any(alive(c) for c in children):
        time.sleep(0.1)
    left = [c for c in children if alive(c)]
    for c in left:  # do not leave them behind if the check fails
        os.kill(c, signal.SIGKILL)
    assert not left, "workers outlived their sweep"


@pytest.mark.parametrize(
    "extra,key,rule",
    [
        ({"options": {"mfu": 0.5, "colour": 1}}, "options.colour", "unknown preset option"),  # was ignored
        ({"options": []}, "options", "expected a mapping"),
        ({"name": ["a"]}, "name", "expected the sweep's name"),
        ({"name": " "}, "name", "expected the sweep's name"),
    ],
)
def test_options_and_name_are_checked(tmp_path, extra, key, rule):
    data = {"schedules": ["gpipe"], "p": 2, "m": 2, "systems": ["ideal"], "models": ["gpt3-1.3b"], **extra}
    path = _write(tmp_path, data, "sw.yaml")
    with pytest.raises(ScheduleFileError) as exc:
        load_sweep(path)
    assert exc.value.location == key and rule in exc.value.rule


def test_known_options_and_duplicates_are_accepted():
    spec = parse_sweep(
        {
            "schedules": ["gpipe"],
            "p": [2, 2],
            "m": [4, 4],
            "systems": ["ideal", "ideal"],
            "models": ["gpt3-1.3b"],
            "levels": ["slot", "slot"],
            "options": {"mfu": 0.5, "microbatch_size": 2, "seq_len": 1024, "recompute": True},
            "name": 7,
        }
    )
    assert spec.num_points == 1 and spec.name == "7"  # a value given twice is one point
