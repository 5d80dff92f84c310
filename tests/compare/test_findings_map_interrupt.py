"""An interrupted findings map says what `sweep` says (docs/findings-map.md: the map is a sweep):
how many rows are safe in its store, and that rerunning the same command resumes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

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


def test_sigterm_on_a_running_map_names_the_signal_and_the_rows(tmp_path):
    argv = ["compare", "--findings", "--map", "--quick", "--store", "fm.jsonl", "--workers", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppverify", *argv], stderr=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path
    )
    assert proc.stderr is not None
    try:
        proc.stderr.read(1)  # the progress bar's first draw: the map is running
        os.kill(proc.pid, signal.SIGTERM)
        _, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.communicate()
    assert proc.returncode == 143, rest.decode()[-500:]
    last = rest.decode().strip().splitlines()[-1]
    store = tmp_path / "fm.jsonl"
    kept = sum(1 for _ in store.open()) if store.exists() else 0
    assert (
        last
        == f"ppverify compare: terminated (SIGTERM); {kept} rows are safe in fm.jsonl; rerun the same command to resume"
    )
