"""A PyTorch compute_comms file runs as written: PyTorch's runtime places no SEND/RECV for it, so
a file with markers (REDUCE_GRAD, UNSHARD/RESHARD) but no SEND/RECV is INVALID, not lowered.

p = 2, m = 1 on a linear placement: one activation crosses 0 -> 1 (0SEND_F0 on rank 0 after 0F0,
1RECV_F0 on rank 1 before 1F0) and one gradient crosses 1 -> 0 (1SEND_B0, 0RECV_B0): four actions
missing, by docs/pytorch.md's send/recv rule. PyTorch's runtime stops on rank 1 with
"Computing action=1F0 before receiving input".
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from ppverify.core.lowering import comm_problems
from ppverify.io.torch_csv import load_csv
from ppverify.verify import verify

FILES = {
    "mk.csv": "0F0,0B0,0REDUCE_GRAD\n1F0,1B0,1REDUCE_GRAD\n",
    "mk2.csv": "0UNSHARD,0F0,0B0,0RESHARD,0REDUCE_GRAD\n1UNSHARD,1F0,1B0,1RESHARD,1REDUCE_GRAD\n",
}
MISSING = {
    "0SEND_F0 is missing (rank 0, after 0F0)",
    "1RECV_F0 is missing (rank 1, before 1F0)",
    "1SEND_B0 is missing (rank 1, after 1B0)",
    "0RECV_B0 is missing (rank 0, before 0B0)",
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_markers_without_send_recv_are_invalid(tmp_path, name):
    path = tmp_path / name
    path.write_text(FILES[name])
    s = load_csv(path)
    assert s.params["format"] == "compute_comms"
    assert set(comm_problems(s)) == MISSING
    assert not verify(s).valid
    out = subprocess.run([sys.executable, "-m", "ppverify", "verify", str(path)], capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout.startswith("INVALID")
    assert "1F0" in out.stdout and "never received" in out.stdout


def test_import_names_the_missing_transfers(tmp_path):
    path = tmp_path / "mk.csv"
    path.write_text(FILES["mk.csv"])
    out = subprocess.run([sys.executable, "-m", "ppverify", "import", str(path)], capture_output=True, text=True)
    assert out.returncode == 1
    assert "verdict       INVALID" in out.stdout
    for line in MISSING:
        assert line in out.stdout


def test_measure_refuses_it_before_any_worker(tmp_path):
    path = tmp_path / "mk.csv"
    path.write_text(FILES["mk.csv"])
    out = subprocess.run(
        [sys.executable, "-m", "ppverify", "measure", str(path), "--steps", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert "0SEND_F0 is missing" in out.stderr and "runs a compute_comms file as written" in out.stderr
