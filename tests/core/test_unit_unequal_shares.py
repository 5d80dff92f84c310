"""One activation on a placement whose devices hold different numbers of stages is the most one
microbatch holds on one device, with abstract costs as with presets (docs/memory.md): the same
cap then gives one verdict on one file read either way."""

from __future__ import annotations

from ppverify.cli import main

# stage 0 on rank 0, stages 1 and 2 on rank 1, m = 3 (a GPipe-like order on rank 1)
UNEVEN = "0F0,0F1,0F2,0B0,0B1,0B2\n1F0,2F0,1F1,2F1,2B0,1B0,1F2,2F2,2B1,1B1,2B2,1B2\n"


def test_the_same_cap_means_the_same_on_unequal_shares(tmp_path, capsys):
    path = tmp_path / "uneven.csv"
    path.write_text(UNEVEN)
    # abstract costs: each stage holds p/S = 2/3 of an activation's worth. Rank 1 runs 1F0 2F0 1F1
    # 2F1 before its first backward: stages 1 and 2 of microbatches 0 and 1, 4 x 2/3 = 8/3 at most.
    # One activation is rank 1's share, 2 x 2/3 = 4/3, so its peak is 2 activations; rank 0 holds
    # three microbatches of 2/3 = 2, which is 1.5 activations
    assert main(["verify", str(path), "--memory-cap", "2"]) == 0
    out = capsys.readouterr().out
    assert "activation memory <= 2 (activations) on every device at every instant (peaks 1.5, 2)" in out
    assert main(["verify", str(path), "--memory-cap", "1.9"]) == 1
    capsys.readouterr()
    # presets: the same verdicts (rank 1 holds the most: 8 + 8 layers of GPT-3 1.3B and the logits)
    preset = ["--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main(["verify", str(path), "--memory-cap", "2", *preset]) == 0
    assert main(["verify", str(path), "--memory-cap", "1.9", *preset]) == 1
