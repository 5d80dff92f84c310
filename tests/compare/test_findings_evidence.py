"""The evidence `compare --findings` prints: memory in readable units, and what to add when a
finding has no data because a level did not run."""

from __future__ import annotations

import pandas as pd

from ppverify.cli import main
from ppverify.compare.findings import Setup, finding_abstraction, finding_gpipe_1f1b


def test_equal_peaks_are_shown_in_gib_not_raw_bytes():
    # p=1 m=1: one microbatch on one device, so GPipe and 1F1B hold the same peak (2**31 B = 2 GiB)
    # and take the same time; the rule asks 1F1B's total to be lower, so the finding fails there
    df = pd.DataFrame(
        {
            "config": "c",
            "level": "async",
            "schedule": ["gpipe", "1f1b"],
            "makespan": [10.0, 10.0],
            "peak_activations": ["[2147483648]", "[2147483648]"],
            "memory_unit": "bytes",
        }
    )
    v = finding_gpipe_1f1b(df, Setup(), "async")
    assert v.reproduced is False
    assert "c: equal time but 1F1B peaks [2 GiB] not below GPipe [2 GiB]" in v.evidence


def test_abstraction_without_any_bubble_ratio_says_which_level_to_add(capsys):
    df = pd.DataFrame(
        {"config": "c", "level": "async", "schedule": ["x", "y"], "bubble_ratio": None, "makespan": [1.0, 2.0]}
    )
    v = finding_abstraction(df, Setup(), "async")
    assert v.reproduced is None and v.evidence.endswith("add formula to --levels)")
    # the command line: --levels async alone computes no closed-form bubble ratio
    argv = ["compare", "--findings", "--levels", "async", "-p", "4", "--costs", "F=1,B=2", "--comm-delay", "0,1"]
    assert main([*argv, "--no-progress"]) == 0
    assert "add formula to --levels" in capsys.readouterr().out
