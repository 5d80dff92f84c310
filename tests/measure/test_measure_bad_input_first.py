"""``measure`` and ``calibrate`` refuse what cannot succeed before any worker starts, and name
the fix when a worker cannot start:

* a CSV whose ops are not one step's (a microbatch missing on one rank, B beside I/W) is refused
  naming the ops (it started workers and showed PyTorch's ``AssertionError ... expected 3`` or a
  bare ``KeyError: 0``);
* a script calling ``measure`` without ``if __name__ == "__main__":`` gets the guard named (it got
  "worker process exited with code 1 while in starting" after ~17 s);
* ``calibrate --out x.json`` is refused before measuring (it measured for a minute, then wrote YAML
  that ``--system x.json`` refused); ``--system FILE.YAML`` is read as ``.yaml`` is.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ppverify.measure as measure_pkg
import ppverify.measure.workers as workers_mod
from ppverify.cli import main
from ppverify.measure.worker_results import death_message
from ppverify.measure.worker_side import MAIN_REIMPORT_EXIT, refuse_main_reimport
from ppverify.systems.presets import preset_file, read_preset

GUARD = 'if __name__ == "__main__":'


@pytest.fixture
def no_workers(monkeypatch):
    """Fail the test if measure gets as far as starting the fork server or the workers."""

    def boom(*args, **kwargs):
        raise AssertionError("a worker process was started")

    monkeypatch.setattr(workers_mod, "prestart", boom)
    monkeypatch.setattr(measure_pkg, "run_workers", boom)


@pytest.mark.parametrize(
    "text, expected",
    [
        # rank 1 holds microbatches 0 and 1 of stage 1, the file 0..2 (rank 0): 1F2 and 1B2 missing
        (
            "0F0,0F1,0F2,0B0,0B1,0B2\n1F0,1F1,1B0,1B1\n",
            ["op 1F2 is missing (should run on device 1)", "op 1B2 is missing (should run on device 1)"],
        ),
        # microbatch 0 has B and I and W on both stages; microbatch 1 only its forward: B missing
        (
            "0F0,0F1,0B0,0I0,0W0\n1F0,1F1,1B0,1I0,1W0\n",
            ["stage 0 mb 0 has both a full backward B and a split I/W", "op 0B1 is missing (should run on device 0)"],
        ),
    ],
)
def test_a_structurally_broken_csv_is_refused_before_any_worker(tmp_path, capsys, no_workers, text, expected):
    path = tmp_path / "broken.csv"
    path.write_text(text)
    assert main(["measure", str(path), "--timeout", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for part in expected:
        assert part in err, err
    assert "`ppverify verify FILE -m" in err and "AssertionError" not in err and "KeyError" not in err


def test_refuse_main_reimport_does_nothing_in_an_ordinary_process():
    refuse_main_reimport()  # this test process is no worker re-importing a main module


def test_a_worker_that_reran_measure_is_named_with_the_guard():
    msg = death_message(MAIN_REIMPORT_EXIT, "starting")
    assert GUARD in msg and "exited with code" not in msg
    # any other death while starting points at the re-import and at the worker's own error
    other = death_message(1, "starting")
    assert "exited with code 1 while in starting" in other and "re-imports the main module" in other
    assert "re-imports" not in death_message(1, "1F0")  # not while running an op


@pytest.mark.slow
def test_an_unguarded_script_names_the_guard(tmp_path):
    # the docs' example as it was: measure at the top level of a script
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from ppverify.measure import measure, build\n"
        'r = measure(build("1f1b", p=2, m=2), {"F": 0.001, "B": 0.002}, steps=1, warmup=0)\n'
    )
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=150)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ppverify.measure.worker_results.WorkerError: rank ") and GUARD in last, proc.stderr


def test_calibrate_refuses_an_out_it_cannot_read_back_before_measuring(tmp_path, capsys, monkeypatch):
    import ppverify.measure.calibrate_run as calibrate_run

    def boom(*args, **kwargs):
        raise AssertionError("calibrate measured before checking --out")

    monkeypatch.setattr(calibrate_run, "measure_calibration", boom)
    out = tmp_path / "x.json"
    assert main(["calibrate", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--out" in err and ".yaml or .yml" in err and "x.yaml" in err, err
    assert not out.exists()


@pytest.mark.parametrize("name", ["lab.YAML", "lab.Yml"])
def test_system_takes_the_yaml_suffix_in_any_case(tmp_path, name):
    # the shipped dgx-h100 preset saved under an upper-case suffix reads as the same preset
    path = tmp_path / name
    shutil.copy(Path(str(preset_file("systems", "dgx-h100"))), path)
    assert read_preset("systems", str(path))[1] == read_preset("systems", "dgx-h100")[1]
