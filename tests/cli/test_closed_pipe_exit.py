"""A reader that goes away (``| head -1``) never turns a verdict into a success."""

from __future__ import annotations

import subprocess
import sys

import pytest

PPV = [sys.executable, "-m", "ppverify"]


def _exit_with_closed_stdout(args: list[str]) -> int:
    # the pipe's reader is closed before ppverify writes a byte: every write meets EPIPE
    proc = subprocess.Popen([*PPV, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.close()
    return proc.wait(timeout=300)


@pytest.mark.parametrize(
    "args,code",
    [
        # 1F1B's device 0 holds p = 8 activations: a cap of 1 is broken (exit 1, docs/limits.md)
        (["verify", "1f1b", "-p", "8", "-m", "16", "--memory-cap", "1"], 1),
        (["verify", "1f1b", "-p", "8", "-m", "16", "--memory-cap", "1", "--json"], 1),
        # a valid schedule stays a success
        (["verify", "1f1b", "-p", "4", "-m", "4"], 0),
        (["show", "gpipe", "-p", "4", "-m", "32"], 0),
    ],
)
def test_closed_stdout_keeps_the_commands_exit_code(args, code):
    assert _exit_with_closed_stdout(args) == code


def test_the_guard_drops_output_after_the_pipe_breaks_and_keeps_the_code(monkeypatch):
    from ppverify import cli

    class Closed:
        def write(self, text):
            raise BrokenPipeError

        def flush(self):
            raise BrokenPipeError

        def fileno(self):
            raise OSError("no descriptor")  # the guard's dup2 to /dev/null is skipped, not fatal

    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["verify", "1f1b", "-p", "8", "-m", "16", "--memory-cap", "1"]) == 1
    assert cli.main(["verify", "1f1b", "-p", "4", "-m", "4"]) == 0
