"""The signal that stopped a command is the one its last line names: SIGTERM ``terminated (SIGTERM)``
and exit 143, Ctrl-C ``interrupted (Ctrl-C)`` and exit 130, also for the commands that catch it to
keep what they found (``design`` its finished points, ``optimize`` and ``gap`` the best so far).
Each test starts the real command, waits for its first progress line, sends the signal with
``os.kill`` and reads the last line of stderr and the exit code. A few seconds each."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGTERM to a process: POSIX")

#: the exit codes of a process ended by a signal it handled: 128 + the signal's number (SIGINT 2,
#: SIGTERM 15), as a shell reports a process the signal killed
CODE = {signal.SIGINT: 128 + 2, signal.SIGTERM: 128 + 15}

# every point of a 4-device design with split backward and delays searched (--all-points), 2
# deterministic seconds each: seconds per point, so the run is far from done after the first
DESIGN = ["design", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--work-limit", "2"]
DESIGN += ["--all-points", "--time-limit", "60"]
# zbv at m = 12 with delays under a cap of 8 stage activations (zbv's own order holds: a schedule
# from the start): CP-SAT proves no optimum within its limit (4.5 % gap after 55 s: the search runs
# to the end). Without the cap a starting schedule met the bound and the run ended OPTIMAL about
# 1.5 s after its first line: a test process scheduled 3 s late signalled a run that had ended
# (exit 0, measured)
SEARCH = ["zbv", "-p", "4", "-m", "12", "--costs", "F=1,I=1,W=1", "--comm-delay", "0.5", "--workers", "1"]
SEARCH += ["--memory-cap", "8MF", "--time-limit", "60", "--progress"]


def _stop_after_first_line(argv: list[str], sig: int, cwd: Path) -> tuple[int, str, str]:
    """Run ``ppverify argv``, send ``sig`` once its first stderr line is out; exit code, stdout,
    the whole stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppverify", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    assert proc.stderr is not None
    try:
        first = proc.stderr.readline()
        assert first and proc.poll() is None, f"ended before the signal: {first!r}"
        os.kill(proc.pid, sig)
        out, rest = proc.communicate(timeout=60)
    finally:  # a run that ignored the signal must not outlive the test
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, first + rest


def _last_line(err: str) -> str:
    return err.replace("\r", "\n").rstrip("\n").splitlines()[-1]


@pytest.mark.parametrize("workers", ["1", "2"])  # in this process, and a pool that forks its workers
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_design_keeps_the_points_done_and_names_the_signal(sig, workers, tmp_path) -> None:
    code, out, err = _stop_after_first_line([*DESIGN, "--workers", workers], sig, tmp_path)
    said = "terminated (SIGTERM)" if sig == signal.SIGTERM else "interrupted (Ctrl-C)"
    assert code == CODE[sig], err
    assert _last_line(err) == f"ppverify design: {said}; printed the frontier of the points done"
    assert err.startswith("design [1/30]")  # 3 default placements x 10 budgets, the first one done
    assert "(interrupted: the frontier of the points done)" in out  # what was done is printed
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_optimize_prints_the_best_so_far_and_names_the_signal(sig, tmp_path) -> None:
    code, out, err = _stop_after_first_line(["optimize", *SEARCH, "--no-chart"], sig, tmp_path)
    said = "terminated (SIGTERM)" if sig == signal.SIGTERM else "interrupted (Ctrl-C)"
    assert code == CODE[sig], err
    assert _last_line(err).startswith(f"ppverify optimize: {said}; printed the ")
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.strip()}
    # the search starts from zbv's own order: a schedule is there from the start, and the bound
    # printed is a lower bound on it
    assert lines["status"][1] == "FEASIBLE"
    assert float(lines["bound"][1]) <= float(lines["makespan"][1])


def test_gap_prints_the_bound_so_far_and_names_sigterm(tmp_path) -> None:
    code, out, err = _stop_after_first_line(["gap", *SEARCH], signal.SIGTERM, tmp_path)
    assert code == 143, err
    assert _last_line(err) == "ppverify gap: terminated (SIGTERM); printed the bound and gap found so far"
    family = next(ln for ln in out.splitlines() if ln.startswith("family"))
    assert "zbv p=4 m=12" in family
    assert out.splitlines()[2].startswith("bound ")
    # the search was cut by the signal, not by its 60 s: the best found says so
    best = [ln for ln in out.splitlines() if ln.startswith("best found")]
    assert all("when stopped" in ln and "within 60 s" not in ln for ln in best)


def test_sweep_stops_on_sigterm_with_its_rows_kept(tmp_path, sigterm_on_first_output) -> None:
    # the progress bar's first draw is its first output, just before the pool forks its workers:
    # a SIGTERM there landed in an at-fork callback, where Python could only report it, and the
    # sweep ran to its end (exit 0); the bar, left open, was drawn again after the last line
    config = Path(__file__).resolve().parents[2] / "examples" / "sweep.yaml"
    store = tmp_path / "s.jsonl"
    argv = ["sweep", str(config), "--store", str(store), "--workers", "2"]
    for _ in range(3):  # the race's window is narrow: a few tries
        store.unlink(missing_ok=True)
        code, rest, seconds = sigterm_on_first_output(argv, tmp_path)
        assert code == 143, rest[-500:]
        assert seconds < 20  # the whole grid takes longer
        last = _last_line(rest)
        assert "rows are safe in" in last and last.endswith("rerun the same command to resume"), last
        kept = sum(1 for _ in store.open()) if store.exists() else 0
        assert last.startswith(f"ppverify sweep: terminated (SIGTERM); {kept} rows are safe"), last


_LOST_AT_FORK = """
import os, signal, sys, time
from ppverify.cli import Terminated, _sigterm_raises


def send_in_callback():  # as a process pool's fork: the handler runs inside the at-fork callback
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(10**6):
        pass


os.register_at_fork(after_in_parent=send_in_callback)
try:
    with _sigterm_raises(own_process=True):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        for _ in range(500):  # the command goes on: the signal must still stop it
            time.sleep(0.01)
        print("lost")
except Terminated:
    print("caught Terminated")
"""


def test_a_signal_raised_in_an_at_fork_callback_is_delivered_again() -> None:
    done = subprocess.run([sys.executable, "-c", _LOST_AT_FORK], capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n")[0] == "caught Terminated", done.stdout + done.stderr
    assert done.stderr == ""
