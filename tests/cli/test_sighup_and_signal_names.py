"""SIGHUP (a closed terminal or ssh session) stops every command as SIGTERM does, with its own
name: ``terminated (SIGHUP)`` and exit code 129 (128 + SIGHUP's number 1), keeping what a search
found (``optimize``, ``design``) or a sweep finished; ``nohup``'s ignored SIGHUP stays ignored.
The sweep names the signal sent to it (``ppverify sweep: terminated (SIGTERM); N rows are safe``),
and optimize's status says which signal cut its search, never ``Ctrl-C`` after a SIGTERM.
Each subprocess test starts the real command, waits for its first stderr line and signals it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="SIGHUP: POSIX")

ROOT = Path(__file__).resolve().parents[2]
#: exit codes of a process that handled the signal: 128 + its number (SIGHUP 1, SIGINT 2, SIGTERM 15)
CODE = {signal.SIGHUP: 129, signal.SIGINT: 130, signal.SIGTERM: 143}
#: what the last line says of each signal
SAID = {
    signal.SIGHUP: "terminated (SIGHUP)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGINT: "interrupted (Ctrl-C)",
}

# the searches of tests/cli/test_signal_wording.py: far from done after their first progress line
DESIGN = ["design", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--work-limit", "2"]
DESIGN += ["--all-points", "--time-limit", "60", "--workers", "1"]
SEARCH = ["zbv", "-p", "4", "-m", "12", "--costs", "F=1,I=1,W=1", "--comm-delay", "0.5", "--workers", "1"]
SEARCH += ["--memory-cap", "8MF", "--time-limit", "60", "--progress", "--no-chart"]


def _popen(argv: list[str], cwd: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ppverify", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        **kw,
    )


def _finish(proc: subprocess.Popen, timeout: float = 60) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:  # a run that ignored the signal must not outlive the test
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.communicate()


def _signal_after_first_line(argv: list[str], sig: int, cwd: Path, **kw) -> tuple[int, str, str]:
    proc = _popen(argv, cwd, **kw)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    assert first and proc.poll() is None, f"ended before the signal: {first!r}"
    os.kill(proc.pid, sig)
    out, rest = _finish(proc)
    return proc.returncode, out, first + rest


def _last_line(err: str) -> str:
    return err.replace("\r", "\n").rstrip("\n").splitlines()[-1]


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_optimize_keeps_the_best_so_far_and_its_status_names_the_signal(sig, tmp_path) -> None:
    code, out, err = _signal_after_first_line(["optimize", *SEARCH], sig, tmp_path)
    assert code == CODE[sig], err
    assert _last_line(err).startswith(f"ppverify optimize: {SAID[sig]}; printed the "), err
    status = next(ln for ln in out.splitlines() if ln.startswith("status"))
    if sig != signal.SIGINT:
        assert "Ctrl-C" not in out
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.strip()}
    # zbv's own order is a schedule from the start; a proof may land as the signal does (a loaded
    # machine: then nothing was cut), else the stop event cut the search and the status names the
    # same signal as the last line
    assert lines["status"][1] in ("FEASIBLE", "OPTIMAL"), status
    if lines["status"][1] == "FEASIBLE":
        assert f"({SAID[sig]} in: " in status, status
    assert float(lines["bound"][1]) <= float(lines["makespan"][1])
    assert "Traceback" not in err


def test_design_keeps_the_points_done_on_sighup(tmp_path) -> None:
    code, out, err = _signal_after_first_line(DESIGN, signal.SIGHUP, tmp_path)
    assert code == 129, err
    assert _last_line(err) == "ppverify design: terminated (SIGHUP); printed the frontier of the points done"
    assert "(interrupted: the frontier of the points done)" in out  # what was done is printed
    assert "Traceback" not in err


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_sweep_names_the_signal_and_keeps_its_rows(sig, tmp_path) -> None:
    store = tmp_path / "s.jsonl"
    argv = ["sweep", str(ROOT / "examples" / "sweep.yaml"), "--store", str(store), "--workers", "2"]
    proc = _popen(argv, tmp_path)
    assert proc.stderr is not None
    proc.stderr.read(1)  # the progress bar's first draw: the sweep is under way
    os.kill(proc.pid, sig)
    t0 = time.monotonic()  # once sent: a test process held up before sending adds nothing
    _, err = _finish(proc)
    assert proc.returncode == CODE[sig], err[-500:]
    assert time.monotonic() - t0 < 20  # the whole grid takes longer
    kept = sum(1 for _ in store.open()) if store.exists() else 0
    resume = f"{kept} rows are safe in {store}; rerun the same command to resume"
    # Ctrl-C keeps its short word; a signal sent to the sweep is named with the command
    head = "interrupted:" if sig == signal.SIGINT else f"ppverify sweep: {SAID[sig]};"
    assert _last_line(err) == f"{head} {resume}"


def test_an_ignored_sighup_stays_ignored(tmp_path) -> None:
    # as under nohup: SIGHUP ignored before ppverify starts; the search then runs to its end (a
    # proof or its 4 s limit), its status uncut by a signal
    argv = ["optimize", *SEARCH[: SEARCH.index("--time-limit")], "--time-limit", "4", "--progress", "--no-chart"]
    code, out, err = _signal_after_first_line(
        argv, signal.SIGHUP, tmp_path, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)
    )
    assert code == 0, err
    status = next(ln for ln in out.splitlines() if ln.startswith("status"))
    assert status.split()[1] in ("OPTIMAL", "FEASIBLE") and "interrupted" not in status, status
    assert "SIGHUP" not in status
    assert "SIGHUP" not in err


def _catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (``SigCgt`` of ``/proc/PID/status``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (sig - 1) & 1)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_sighup_while_starting_is_one_line_and_129(tmp_path) -> None:
    proc = _popen(["optimize", *SEARCH], tmp_path)
    try:
        end = time.monotonic() + 60  # a hang guard
        while not _catches(proc.pid, signal.SIGHUP) and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGHUP)  # at start-up (or, on a fast machine, just after it)
        _, err = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 129, err
    assert _last_line(err).startswith("ppverify optimize: terminated (SIGHUP)")
    assert "Traceback" not in err


_IN_PROCESS = """
import os, signal, sys
from ppverify.cli.signals import Hangup, _sigterm_raises

before = signal.getsignal(signal.SIGHUP)
with _sigterm_raises() as watch:
    with watch.stopping() as stop:  # a search: the first SIGHUP ends it, a second is ignored
        signal.raise_signal(signal.SIGHUP)
        signal.raise_signal(signal.SIGHUP)
        print("stop set", stop.is_set())
    pid = os.fork()
    if pid == 0:  # a pool's worker: a hang-up ends it as before, without the command's handler
        os._exit(0 if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL else 1)
    print("child default", os.waitpid(pid, 0)[1] == 0)
with _sigterm_raises() as watch:
    try:  # outside a search, the watcher's Hangup comes through to the command
        signal.raise_signal(signal.SIGHUP)
        print("not raised")
    except Hangup:
        print("Hangup", watch.received == signal.SIGHUP)
print("restored", signal.getsignal(signal.SIGHUP) is before)
"""


def test_the_watcher_handles_sighup_once_and_restores_it() -> None:
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == [
        "stop set True",
        "child default True",
        "Hangup True",
        "restored True",
    ], done.stdout + done.stderr
    assert done.stderr == ""
