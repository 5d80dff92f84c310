"""SIGHUP to ``measure`` (stopped like SIGTERM: one line, exit 129, workers stopped, no leaked
semaphore), PyTorch's slow schedule loader (refused up front above a size, never called a hang),
and small link delays printed with their digits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import ppverify.measure as measure_mod
from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.io.torch_csv import to_rows
from ppverify.measure.hang import LOADING, MeasureTimeout
from ppverify.measure.load_size import MAX_LOAD_WORK, check_load_size, load_work
from ppverify.measure.options import delay_text
from ppverify.schedules import build
from tests.measure.test_measure_signals import _measure, cleanup, session, wait_until, workers

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), TQDM_DISABLE="1")


@pytest.mark.slow
@pytest.mark.parametrize("to_group", [False, True])
def test_sighup_to_measure_is_129_terminated_in_one_line(tmp_path, to_group):
    # before: killed at once by SIGHUP's default action, no line, and the resource tracker warned
    # "There appear to be 3 leaked semaphore objects" (the run's queue: 2 locks and a semaphore)
    proc = _measure(tmp_path)  # a deadlocked run: its workers stay up until stopped
    try:
        assert wait_until(lambda: len(workers(proc.pid)) == 2)
        if to_group:  # a closed terminal: SIGHUP to the whole foreground group, workers included
            os.killpg(proc.pid, signal.SIGHUP)
        else:
            proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 129, err
        assert err.decode() == "ppverify measure: terminated (SIGHUP)\n"  # no leaked-semaphore warning
        assert wait_until(lambda: not session(proc.pid), 60)  # workers, fork server, tracker: all gone
    finally:
        cleanup(proc.pid)


def test_load_work_is_the_sum_of_squared_rows():
    # 1f1b p=2 m=3: each rank's row holds F and B of every microbatch, 6 cells: 6² + 6² = 72
    s = build("1f1b", p=2, m=3)
    assert [len(r) for r in to_rows(s)] == [6, 6]
    assert load_work(to_rows(s)) == 72


def test_the_loader_limit_in_microbatches():
    # 1f1b p=2: two rows of 2m cells, work 2 * (2m)² = 8m², limit 2^26 = 67,108,864:
    # 8 * 2896² = 67,094,528 fits, 8 * 2897² = 67,140,872 does not
    assert MAX_LOAD_WORK == 2**26
    ok, over = build("1f1b", p=2, m=2896), build("1f1b", p=2, m=2897)
    check_load_size(ok, to_rows(ok), "compute_only")
    with pytest.raises(ParameterError, match=r"give -m 2896 or less"):
        check_load_size(over, to_rows(over), "compute_only")
    check_load_size(over, to_rows(over, "compute_comms"), "compute_comms")  # no PyTorch lowering: no limit


def test_measure_refuses_a_load_too_slow_before_any_worker(monkeypatch, capsys):
    # PyTorch's loader, timed in measure's workers (p=2, a shared 2-core machine): 1f1b m=1000
    # 1.4 s, m=2000 3.8-5.3 s, m=4000 21 s, m=8000 91 s (x4 a doubling: quadratic); m=100000 would
    # take hours and was reported as a hang in "loading the schedule file" after --timeout.
    # 1f1b p=2 m=100000: 8 * 100000² = 8e10, 1,192 times 2^26; the largest m that fits is 2896
    def refuse(*a, **k):
        raise AssertionError("a worker process was started")

    monkeypatch.setattr(measure_mod, "run_workers", refuse)
    monkeypatch.setattr("ppverify.measure.workers.prestart", lambda: False)
    assert main(["measure", "1f1b", "-p", "2", "-m", "100000", "--costs", "F=1e-7"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ppverify measure: error: parameter -m=100000: ")
    assert "1,192 times the limit of 67,108,864" in err and "give -m 2896 or less" in err


def test_a_timeout_in_the_loader_is_a_slow_run_not_a_hang():
    # the loader only computes: a rank in it has made no change of action for seconds, yet is moving
    exc = MeasureTimeout(5.0, {0: LOADING, 1: "barrier before step 0"}, idle=4.9)
    assert exc.still_running
    assert not str(exc).startswith("hang") and "still in PyTorch's schedule loader" in str(exc)
    assert str(exc).endswith("raise --timeout or lower -m")
    assert not MeasureTimeout(5.0, {0: "0F1", 1: "1B0"}, idle=4.9).still_running  # a real hang stays one


@pytest.mark.parametrize(
    "seconds,text",
    [
        (1e-9, "1 ns"),  # was "0.0 us": one decimal of microseconds
        (2.5e-10, "0.25 ns"),
        (1.5e-6, "1.5 us"),
        (1.234e-5, "12.34 us"),  # 4 significant digits
        (0.05, "50.000 ms"),  # from a millisecond up: as every other time is printed
    ],
)
def test_delay_text_keeps_its_digits(seconds, text):
    assert delay_text(seconds) == text


@pytest.mark.slow
def test_measure_prints_a_nanosecond_link_delay(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ppverify", "measure", "1f1b", "-p", "2", "-m", "2", "--costs", "F=0.001"]
        + ["--link-delay", "1e-9", "--steps", "1", "--no-table"],
        env=ENV,
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "link          emulated delay 1 ns per cross-rank transfer" in proc.stdout.decode()
