"""A pool stopped while a worker is sending its result must not leave the process hung (hunt s62/S1).

A worker ended in the middle of writing its pickled result (a findings-map batch is ~100 KB, more
than a pipe holds) left the pool's manager thread waiting in ``recv()`` for the rest of the
message. This process still held the write end of the result pipe, so no end of file came, and
the interpreter's exit joined that thread forever, with SIGINT, SIGTERM and SIGHUP already
ignored by the command's interrupt exit: 6 of 86 SIGTERMs to ``compare --findings --map`` hung.

The half-received message is made deterministic here: the worker writes a message header that
promises 1 MiB, then 1 byte of it, and sleeps. Once the parent's manager thread is seen blocked in
``_recv`` the driver prints ``mid-result``, and the test sends the signal. Each driver runs in a
subprocess with a timeout, so that a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: stop_pool's grace (1 s per step: terminate, kill, manager thread) plus a wide margin for a
#: loaded 2-core machine; before the fix the process never ended. 10 s was too close: with three
#: CPU burners and a solver-heavy pytest -n 2 beside it, the stop took 5.5 s
WITHIN_S = 20.0

_COMMON = r"""
import os, struct, sys, threading, time
import ppverify.sweep.executor as executor

MARK = os.environ["PPV_TEST_MARK"]

def half_result(tasks):  # in a worker: a result message cut off after its first byte
    try:
        os.close(os.open(MARK, os.O_CREAT | os.O_EXCL))  # the first worker only
    except FileExistsError:
        time.sleep(120)
    frame = sys._getframe(1)
    while "result_queue" not in frame.f_locals:  # concurrent.futures' _process_worker
        frame = frame.f_back
    fd = frame.f_locals["result_queue"]._writer.fileno()
    os.write(fd, struct.pack("!i", 1 << 20) + b"\x80")  # header: 1 MiB follows; then 1 byte of it
    time.sleep(120)

def manager_in_recv():
    for t in threading.enumerate():
        if type(t).__name__ == "_ExecutorManagerThread":
            f = sys._current_frames().get(t.ident)
            while f is not None:
                if f.f_code.co_name == "_recv":
                    return True
                f = f.f_back
    return False

def announce():  # tell the test the parent is reading the half message now
    deadline = time.monotonic() + 60
    while not manager_in_recv():
        if time.monotonic() > deadline:
            print("never in recv", flush=True)
            os._exit(3)
        time.sleep(0.005)
    print("mid-result", flush=True)

executor.run_batch = half_result  # workers are forked: they see the replaced function
threading.Thread(target=announce, daemon=True).start()
"""

# the pool loop itself (what sweep and the findings map run): Ctrl-C while the half message is read
_POOL = (
    _COMMON
    + r"""
try:
    executor._run_pool([["a"], ["b"]], lambda rows: None, workers=2)
except KeyboardInterrupt:
    print("stopped", flush=True)
"""
)

# the console script's own process (its signal handlers and its interrupt exit, which ignores
# further signals): SIGTERM to `ppverify sweep --workers 2`
_CLI = (
    _COMMON
    + r"""
executor.pool_size = lambda workers, batches, cores=None: 2  # a pool even on a 1-core machine
sys.argv = ["ppverify", "sweep", os.environ["PPV_TEST_SPEC"], "--store", os.environ["PPV_TEST_STORE"],
            "--workers", "2", "--batch", "1", "--no-progress"]
from ppverify.cli import main
sys.exit(main())
"""
)


def _stopped_mid_result(code: str, sig: int, tmp_path: Path, **env: str) -> tuple[int, float, str, str]:
    """Run ``code``; once it prints ``mid-result``, send it ``sig``: its exit code, the seconds
    from the signal to its end, its stdout and stderr. A process still alive after
    :data:`WITHIN_S` is killed and fails the test."""
    environ = {**os.environ, "PPV_TEST_MARK": str(tmp_path / "first"), **env}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
        env=environ,
        start_new_session=True,  # its workers are killed with it below, should it hang
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if first != "mid-result\n":
        proc.kill()
        raise AssertionError(first + proc.communicate(timeout=30)[1])
    proc.send_signal(sig)
    sent = time.monotonic()  # read once sent: a test process held up before sending adds nothing
    try:
        out, err = proc.communicate(timeout=WITHIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"still running {WITHIN_S} s after the signal: the stop left the process hung") from None
    return proc.returncode, time.monotonic() - sent, first + out, err


def test_a_pool_stopped_while_a_result_is_half_received_ends(tmp_path):
    rc, took, out, err = _stopped_mid_result(_POOL, signal.SIGINT, tmp_path)
    assert (rc, out) == (0, "mid-result\nstopped\n"), err
    assert took < WITHIN_S


def test_sweep_terminated_while_a_result_is_half_received_exits_143(tmp_path):
    spec = tmp_path / "s.yaml"
    # 2 schedules x 1 configuration: 2 tasks, one per batch (--batch 1), so both workers get one
    spec.write_text("name: s\nschedules: [gpipe, 1f1b]\np: 2\nm: 2\ncosts: {F: 1}\nlevels: [slot]\n")
    store = tmp_path / "s.jsonl"
    rc, took, _, err = _stopped_mid_result(
        _CLI, signal.SIGTERM, tmp_path, PPV_TEST_SPEC=str(spec), PPV_TEST_STORE=str(store)
    )
    # docs/limits.md: SIGTERM during `sweep` stops within about a second, exit 128 + 15 = 143
    assert rc == 143, err
    assert "terminated (SIGTERM)" in err and "Traceback" not in err, err
    assert took < WITHIN_S
