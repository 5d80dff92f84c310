"""A word no option of the command takes is refused by that command (its name, its --help), as
every other error of the command is, not by ``ppverify`` as a whole."""

from __future__ import annotations

import pytest

from ppverify.cli import main


@pytest.mark.parametrize(
    "argv, extra",
    [
        (["show", "1f1b", "--system", "dgx-h100"], "--system dgx-h100"),  # simulate's option, not show's
        (["show", "1f1b", "gpipe"], "gpipe"),  # show takes one schedule
        (["verify", "1f1b", "--width", "50"], "--width 50"),
    ],
)
def test_the_command_given_refuses_the_words_it_does_not_take(argv, extra, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    cmd = argv[0]
    assert err == f"ppverify {cmd}: error: unrecognized arguments: {extra} (see ppverify {cmd} --help)"
