"""Integer options take ASCII digits only: argparse's type=int calls int(), which reads
Arabic-Indic digits ("-p \u0664" as p=4), where ppverify's schedule text refuses them."""

from __future__ import annotations

import pytest

from ppverify.cli import main


@pytest.mark.parametrize("argv", [["-p", "\u0664"], ["-p", "2", "-m", "\u0668"], ["-p", "4", "--v", "\u0662"]])
def test_non_ascii_digits_are_refused_as_any_bad_int(capsys, argv):
    family = "interleaved-1f1b" if "--v" in argv else "1f1b"
    assert main(["simulate", family, *argv, "--no-table"]) == 2
    flag, value = argv[-2], argv[-1]
    # argparse's own message for -p x: "argument -p: invalid int value: 'x'"
    assert f"argument {flag}: invalid int value: {value!r}" in capsys.readouterr().err


def test_ascii_digits_still_read(capsys):
    assert main(["simulate", "1f1b", "-p", "2", "-m", "4", "--no-table"]) == 0
    assert "1f1b p=2 m=4" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["design", "-p", "\u0664", "-m", "8"],
        ["sweep", "--workers", "\u0662"],
        ["show", "1f1b", "--width", "\u0668\u0660"],
        ["verify", "1f1b", "--max-violations", "\u0663"],
        ["--max-ops", "\u0665", "list"],
    ],
)
def test_every_int_option_of_every_command_refuses_them(capsys, argv):
    # every command's parser reads type=int in ASCII digits (the parsers register ascii_int for int)
    flag, value = next((a, b) for a, b in zip(argv, argv[1:]) if not b.isascii())
    assert main(argv) == 2
    assert f"argument {flag}: invalid int value: {value!r}" in capsys.readouterr().err
