"""``ppverify.measure.workers`` split into start/stop (``workers``), the worker side (``worker_side``)
and the parent's collection of results (``worker_results``): every name callers import from
``workers`` is still there (the same object), and the start-up allowance is still
``workers.STARTUP_TIMEOUT``, read at each run, so patching it there takes effect. No worker starts."""

from __future__ import annotations

import queue
import time

import pytest

from ppverify.measure import worker_results, worker_side
from ppverify.measure import workers as w
from ppverify.measure.hang import MeasureTimeout
from ppverify.measure.status import blank_status


def test_names_imported_from_workers_are_the_split_modules_objects():
    # the names that ppverify/, tests/ and scripts/ import from ppverify.measure.workers
    for name in ("WorkerError", "death_message", "_collect", "_kill_all"):
        assert getattr(w, name) is getattr(worker_results, name), name
    for name in ("process_alive", "_watch_parent", "_worker_main", "PARENT_POLL_S"):
        assert getattr(w, name) is getattr(worker_side, name), name
    assert w.MeasureTimeout is MeasureTimeout
    for name in ("run_workers", "prestart", "check_world_size", "require_torch", "max_workers", "PRELOAD"):
        assert hasattr(w, name), name
    for name in ("_demo_allreduce", "_demo_hang", "_demo_die"):
        assert getattr(w, name).__module__ == "ppverify.measure.workers", name


class _Proc:
    """A worker process that never ends on its own (is_alive until killed)."""

    def __init__(self, *a, **k) -> None:
        self.alive, self.exitcode = False, None

    def start(self) -> None:
        self.alive = True

    def is_alive(self) -> bool:
        return self.alive

    def kill(self) -> None:
        self.alive, self.exitcode = False, -9

    def join(self, timeout=None) -> None:
        pass


class _Queue:
    """A results queue on which no worker ever reports."""

    def get(self, timeout=None):
        time.sleep(timeout or 0)
        raise queue.Empty

    def empty(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def cancel_join_thread(self) -> None:
        pass


class _Ctx:
    def get_start_method(self) -> str:
        return "spawn"  # no fork server to start

    def Queue(self) -> _Queue:
        return _Queue()

    def Process(self, *a, **k) -> _Proc:
        return _Proc()


def test_patched_startup_timeout_reaches_the_collector(monkeypatch):
    pytest.importorskip("torch")  # run_workers refuses to start without it
    seen = {}

    def collect(procs, results, status_paths, world_size, timeout, startup_timeout):
        seen.update(world_size=world_size, timeout=timeout, startup=startup_timeout, ranks=len(status_paths))
        return ["r0", "r1"]

    monkeypatch.setattr(w, "STARTUP_TIMEOUT", 7.5)
    monkeypatch.setattr(w, "_context", _Ctx)
    monkeypatch.setattr(w, "_collect", collect)
    assert w.run_workers(2, w._demo_allreduce, 0, timeout=3.0) == ["r0", "r1"]
    # the values given: p = 2 (one status file each), timeout 3 s, and the patched 7.5 s allowance
    assert seen == {"world_size": 2, "timeout": 3.0, "startup": 7.5, "ranks": 2}


def test_collector_stops_workers_still_starting_after_the_allowance(tmp_path):
    # two workers that never write their status (phase -1: still starting) and never report: after
    # the start-up allowance given (0.2 s, not the per-phase 60 s) every worker is killed and the
    # timeout names the allowance; a blank status file reads as "starting" (phase -1, empty text)
    paths = []
    for r in range(2):
        paths.append(tmp_path / f"status-{r}")
        paths[-1].write_bytes(blank_status())
    procs = [_Proc(), _Proc()]
    for pr in procs:
        pr.start()
    began = time.monotonic()
    with pytest.raises(MeasureTimeout) as info:
        worker_results._collect(procs, _Queue(), paths, 2, 60.0, 0.2)
    assert time.monotonic() - began >= 0.2
    assert info.value.timeout == 0.2
    assert info.value.blocked == {0: "starting", 1: "starting"}
    assert not any(pr.is_alive() for pr in procs)
