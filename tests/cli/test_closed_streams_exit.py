"""Standard streams closed from the start (``>&-``, ``2>&-``) or that cannot be written
(``>/dev/full``), in real processes. docs/limits.md: "A reader that goes away ... loses the rest of
the output, never the exit code", "A crash is never exit 1", and a standard output that cannot be
written is one line on stderr and exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PPV = [sys.executable, "-m", "ppverify"]

# 1F1B's device 0 holds p = 8 activations at once: a cap of 1 is broken, an INVALID verdict (exit 1)
INVALID = ["verify", "1f1b", "-p", "8", "-m", "16", "--memory-cap", "1"]
VALID = ["verify", "1f1b", "-p", "4", "-m", "8"]

pytestmark = pytest.mark.skipif(os.name != "posix", reason="shell redirections of a POSIX system")


def _run(args: list[str], redirect: str) -> subprocess.CompletedProcess[str]:
    # the shell closes (or points) the descriptors before ppverify starts: sys.stdout is None there
    cmd = 'exec "$@" ' + redirect
    return subprocess.run(["sh", "-c", cmd, "sh", *PPV, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "args,code",
    [
        (VALID, 0),
        (INVALID, 1),
        ([*VALID, "--json"], 0),
        (["show", "1f1b", "-p", "4", "-m", "8"], 0),
        (["export", "1f1b", "-p", "4", "-m", "8"], 0),
        (["list"], 0),
    ],
)
def test_stdout_closed_from_the_start_keeps_the_verdict(args, code):
    r = _run(args, ">&-")
    assert (r.returncode, r.stderr) == (code, "")


@pytest.mark.parametrize("args,code", [(VALID, 0), (INVALID, 1)])
def test_stdout_and_stderr_closed_keep_the_verdict(args, code):
    assert _run(args, ">&- 2>&-").returncode == code


def test_a_bad_input_with_stdout_closed_is_still_exit_2():
    r = _run(["verify", "1f1b", "-p", "0", "-m", "8"], ">&-")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1


def test_an_output_file_does_not_take_the_closed_descriptor(tmp_path):
    # with descriptor 1 closed, the next file opened would get number 1: /dev/null takes it first
    out = tmp_path / "s.json"
    r = _run(["export", "1f1b", "-p", "2", "-m", "2", "-o", str(out)], ">&-")
    assert r.returncode == 0
    programs = json.loads(out.read_text())["programs"]
    # 1F1B at p = 2, m = 2, device 0: p - 1 = 1 warm-up forward (F0), one forward one backward (F1 B0),
    # the drain (B1)
    assert programs[0] == ["0F0", "0F1", "0B0", "0B1"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [VALID, INVALID, ["show", "1f1b", "-p", "4", "-m", "8"], ["list"]])
def test_stdout_that_cannot_be_written_is_one_line_and_exit_2(args):
    r = _run(args, ">/dev/full")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"ppverify {args[0]}: error: cannot write standard output: No space left on device"
    ]
