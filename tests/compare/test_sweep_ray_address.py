"""``--executor ray`` with a ``RAY_ADDRESS`` where no cluster answers: refused in one line within
seconds (Ray itself retries such an address for about two minutes), before the store is made."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ppverify.core.errors import PPVerifyError
from ppverify.sweep.executor import check_ray_address


def test_an_address_nothing_listens_on_is_refused_at_once():
    # port 1 on the loopback: nothing listens there, so the connection is refused at once
    with pytest.raises(PPVerifyError, match=r"RAY_ADDRESS=ray://127\.0\.0\.1:1: no Ray cluster answers there"):
        check_ray_address("ray://127.0.0.1:1")
    check_ray_address("auto")  # Ray's own forms are left to Ray
    check_ray_address("local")


def test_sweep_refuses_it_before_making_its_store(tmp_path):
    cfg = tmp_path / "sw.yaml"
    cfg.write_text("schedules: [gpipe]\np: [2]\nm: [2]\ncosts: {F: 1, B: 2}\nlevels: [slot]\n")
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:1"}
    t0 = time.monotonic()
    # a process of its own: a Ray instance another test started here would be used as it is
    proc = subprocess.run(
        [sys.executable, "-m", "ppverify", "sweep", str(cfg), "--executor", "ray", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "RAY_ADDRESS=127.0.0.1:1: no Ray cluster answers there" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert time.monotonic() - t0 < 60  # seconds, not Ray's two minutes of retries
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sw.yaml"]  # no store, no lock
