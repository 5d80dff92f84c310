"""Signals to ``measure`` and its workers (issue 22 item 9): SIGTERM is exit 143 "terminated" with
one line, Ctrl-C to the whole process group (at start-up, while the fork server imports torch, or
while the workers run) is exit 130 with one line and no worker traceback, and after a SIGKILL of
the measuring process no process it started survives (its workers hold no pipe that keeps the fork
server alive, and each watches the process that started it).

Each run starts in a session of its own, so "no process survives" means the session is empty. The
waits below only guard against a hang; nothing asserts how long a step took."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from ppverify.measure.workers import process_alive

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT), TQDM_DISABLE="1")


def session(sid: int) -> list[psutil.Process]:
    """Every live process of session ``sid`` (zombies excluded)."""
    out = []
    for pr in psutil.process_iter():
        try:
            if os.getsid(pr.pid) == sid and pr.status() != psutil.STATUS_ZOMBIE:
                out.append(pr)
        except (psutil.Error, ProcessLookupError, PermissionError):
            pass
    return out


def workers(sid: int) -> list[psutil.Process]:
    """The worker processes of a session: children of the fork server, which is itself forked."""
    procs = session(sid)
    servers = {pr.pid for pr in procs if "forkserver import main" in " ".join(_cmd(pr)) and pr.ppid() == sid}
    return [pr for pr in procs if pr.ppid() in servers]


def _cmd(pr: psutil.Process) -> list[str]:
    try:
        return pr.cmdline()
    except psutil.Error:
        return []


def wait_until(cond, guard_s: float = 180.0) -> bool:
    end = time.monotonic() + guard_s  # a hang guard, not a timing claim
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


def cleanup(sid: int) -> None:
    for pr in session(sid):
        pr.kill()


def test_a_zombie_or_a_gone_process_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert wait_until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, 60)
    assert not process_alive(child.pid)  # exited, not yet reaped: a zombie
    child.wait()
    assert not process_alive(child.pid)  # reaped (a pid this fresh is not reused this soon)
    assert process_alive(os.getpid())


def test_a_worker_ends_when_the_process_that_started_it_is_gone():
    # the parent-pid watchdog alone (no fork server, no PR_SET_PDEATHSIG): a watcher of a sleeper
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    code = f"from ppverify.measure.workers import _watch_parent\n_watch_parent({sleeper.pid})\n"
    watcher = subprocess.Popen([sys.executable, "-c", code], env=ENV)
    try:
        time.sleep(1.0)
        assert watcher.poll() is None  # the sleeper runs: the watcher waits
        sleeper.kill()
        sleeper.wait()
        assert watcher.wait(timeout=60) == 1
    finally:
        for pr in (sleeper, watcher):
            if pr.poll() is None:
                pr.kill()
                pr.wait()


HANG = textwrap.dedent("""
    from ppverify.measure.workers import run_workers, _demo_hang
    if __name__ == "__main__":
        run_workers(2, _demo_hang, 0, timeout=600)
""")


@pytest.mark.slow
def test_after_a_sigkill_of_the_measuring_process_no_worker_survives():
    # before: the fork server and both workers slept on for good (every worker held the server's
    # "alive" pipe, so the server never saw its client die, and the workers' parent is the server)
    proc = subprocess.Popen(
        [sys.executable, "-c", HANG], env=ENV, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert wait_until(lambda: len(workers(proc.pid)) == 2), [_cmd(p) for p in session(proc.pid)]
        time.sleep(1.0)  # the workers are past their start-up
        proc.kill()
        proc.wait()
        assert wait_until(lambda: not session(proc.pid), 60), [(p.pid, _cmd(p)[-1:]) for p in session(proc.pid)]
    finally:
        cleanup(proc.pid)


DEADLOCK = "0F0,0RECV_B0,0B0,0SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0\n"


def _catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (``SigCgt`` of ``/proc/PID/status``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (sig - 1) & 1)


def _measure(tmp_path: Path) -> subprocess.Popen:
    (tmp_path / "dead.csv").write_text(DEADLOCK)  # blocks until --timeout: the workers stay up
    return subprocess.Popen(
        [sys.executable, "-m", "ppverify", "measure", "dead.csv", "--timeout", "600", "--costs", "F=0.002,B=0.004"],
        cwd=tmp_path,
        env=ENV,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.slow
def test_sigterm_to_measure_is_143_terminated_in_one_line(tmp_path):
    proc = _measure(tmp_path)
    try:
        assert wait_until(lambda: len(workers(proc.pid)) == 2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143
        assert err.decode() == "ppverify measure: terminated (SIGTERM)\n"
        assert wait_until(lambda: not session(proc.pid), 60)
    finally:
        cleanup(proc.pid)


@pytest.mark.slow
@pytest.mark.parametrize("when", ["start-up", "fork server importing torch", "workers running"])
def test_ctrl_c_to_the_process_group_is_130_in_one_line(when, tmp_path):
    proc = _measure(tmp_path)
    try:
        if when == "start-up":
            # from ppverify's start-up handlers on (its first SIGTERM handler): before them a signal
            # meets Python's own start-up, which no program controls (exit -2, no message)
            assert wait_until(lambda: _catches(proc.pid, signal.SIGTERM))
            time.sleep(0.5)
        elif when == "fork server importing torch":
            assert wait_until(lambda: any("forkserver import main" in " ".join(_cmd(p)) for p in session(proc.pid)))
            time.sleep(0.5)
        else:
            assert wait_until(lambda: len(workers(proc.pid)) == 2)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        text = err.decode()
        assert proc.returncode == 130, text
        assert text in ("ppverify: interrupted\n", "ppverify measure: interrupted\n"), text
        assert wait_until(lambda: not session(proc.pid), 60)
    finally:
        cleanup(proc.pid)


def test_a_worker_whose_run_is_gone_leaves_quietly(tmp_path):
    # Ctrl-C to the group as a worker starts: the measuring process removes the run's directory,
    # status files included, before the worker opens its own; the worker then exits 1, silently
    code = textwrap.dedent(
        f"""
        from ppverify.measure.workers import _worker_main
        _worker_main(1, 2, {str(tmp_path / "store")!r}, {str(tmp_path / "status-1")!r}, None, None, None, 1.0)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, b"", b"")
