"""Options a run would not read are refused, not ignored (the option hunt's A5 items;
docs/cli-notes.md "Options that would change nothing are refused"), and the help texts that
said less than the commands do."""

from __future__ import annotations

import pytest

from ppverify.cli import build_parser, main


def _refused(capsys, argv: list[str], *needles: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize(
    "extra, option",
    [
        (["--costs", "F=1,B=3"], "--costs=F=1,B=3"),
        (["--system", "dgx-h100", "--model", "gpt3-1.3b"], "--system=dgx-h100"),
    ],
)
def test_verify_refuses_costs_without_a_claim_or_a_cap(capsys, extra, option):
    # a verdict on order and deadlocks reads no durations: as --comm-delay, refused without --makespan-le
    _refused(capsys, ["verify", "1f1b", "-p", "2", "-m", "2", *extra], option, "only a timing claim or a memory cap")


def test_verify_keeps_costs_with_a_claim_or_a_cap(capsys):
    # 1F1B p=2 m=2, F=1, B=3: (m + p - 1)(F + B) = 3 * 4 = 12, so the claim <= 12 holds
    assert main(["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=3", "--makespan-le", "12"]) == 0
    # 1F1B's first device holds min(p, m) = 2 activations: a cap of 2 holds
    assert main(["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=3", "--memory-cap", "2"]) == 0
    capsys.readouterr()
    # a bad --costs is still named for its own rule first
    _refused(capsys, ["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "B=0"], "B must be > 0")


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "1f1b", "-p", "2", "-m", "2", "--sync", "none"],
        ["simulate", "zbv", "-p", "2", "-m", "4", "--sync", "after-flush"],  # a V: two stages per device, one pipe
        ["verify", "1f1b", "-p", "2", "-m", "2", "--sync", "after-flush", "--makespan-le", "100"],
        ["optimize", "-p", "2", "-m", "2", "--sync", "none", "--work-limit", "0.1", "--no-chart"],
        ["gap", "1f1b", "-p", "2", "-m", "2", "--sync", "none", "--work-limit", "0.1"],
    ],
)
def test_sync_on_a_schedule_without_replicas_refused(capsys, argv):
    _refused(capsys, argv, "--sync=", "stage replicas", "no stage here has one")


def test_sync_on_chimera_still_read(capsys):
    # Chimera p=2 holds each stage on both devices (its two pipes): the all-reduce is there to move
    assert main(["simulate", "chimera", "-p", "2", "-m", "2", "--sync", "none", "--no-table"]) == 0
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--sync", "eager", "--no-table"]) == 0  # the default
    capsys.readouterr()


@pytest.mark.parametrize("model", ["i-frees=0.5", "w-frees-all"])
def test_memory_model_of_i_and_w_refused_with_a_full_backward(capsys, model):
    base = ["optimize", "-p", "2", "-m", "2", "--memory-model", model, "--work-limit", "0.1", "--no-chart"]
    _refused(capsys, base, f"--memory-model={model}", "backward is full")
    assert main([*base, "--backward", "split"]) == 0  # an I to free part of it: read
    capsys.readouterr()


def test_help_names_what_the_options_take():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    show = " ".join(sub.choices["show"].format_help().split())
    # show of a file saved with presets takes a size (its costs count bytes)
    assert "a size such as 40GiB for a file saved with --system/--model costs" in show
    trace = " ".join(sub.choices["import-trace"].format_help().split())
    assert "op costs in seconds per device share, with --schedule" in trace


def test_optimize_table_is_cut_at_width(capsys):
    # 1F1B p=2 m=2 at F=1,B=2 takes (m+p-1)(F+B) = 9 ticks; --width 20 leaves room for 3 tick
    # columns of 4 characters beside the 5-character row labels, so the table comes in blocks,
    # every line within 20 columns; --no-chart beside --table keeps --width (the table uses it)
    from ppverify.cli import main

    argv = ["optimize", "1f1b", "-p", "2", "-m", "2", "--evaluate", "--table", "--no-chart", "--width", "20"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table = out[out.index("tick") :]
    assert table.count("tick") > 1 and all(len(line) <= 20 for line in table.splitlines())
