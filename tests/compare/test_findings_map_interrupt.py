"""An interrupted findings map says what `sweep` says (docs/findings-map.md: the map is a sweep):
how many rows are safe in its store, and that rerunning the same command resumes."""

from __future__ import annotations

import ppverify.findings_map as fm
from ppverify.cli import main

MAP = ["compare", "--findings", "--map", "--quick", "--no-progress", "--store", "fm.jsonl"]


def test_ctrl_c_names_the_rows_kept_and_the_resume(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(MAP) == 0  # the whole quick map, stored
    stored = sum(1 for _ in (tmp_path / "fm.jsonl").open())  # every row of the store is this grid's
    capsys.readouterr()

    def stop(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(fm, "run_map", stop)
    assert main(MAP) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"interrupted: {stored} rows are safe in fm.jsonl; rerun the same command to resume"


def test_an_interrupt_before_any_row_counts_none(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def stop(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(fm, "run_map", stop)
    assert main(MAP) == 130
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("interrupted: 0 rows are safe in fm.jsonl; rerun the same command to resume")
    )


def test_sigterm_on_a_running_map_names_the_signal_and_the_rows(tmp_path, sigterm_on_first_output):
    argv = ["compare", "--findings", "--map", "--quick", "--store", "fm.jsonl", "--workers", "1"]
    code, rest, _ = sigterm_on_first_output(argv, tmp_path)
    assert code == 143, rest[-500:]
    last = rest.strip().splitlines()[-1]
    store = tmp_path / "fm.jsonl"
    kept = sum(1 for _ in store.open()) if store.exists() else 0
    assert (
        last
        == f"ppverify compare: terminated (SIGTERM); {kept} rows are safe in fm.jsonl; rerun the same command to resume"
    )
