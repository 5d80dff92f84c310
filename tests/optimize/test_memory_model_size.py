"""A size as ``--memory-cap`` under an explicit ``--memory-model`` needs the layers of one stage
(docs/memory.md: "convert a size with an explicit --memory-model ...,layers=L"): without
``layers=`` the zero-bubble model read 1GiB as one layer's bytes, 5.2 activations."""

from __future__ import annotations

from ppverify.cli import main

ARGS = ["optimize", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--work-limit", "0.2"]


def test_without_layers_a_size_is_refused_as_without_a_memory_model(capsys):
    assert main([*ARGS, "--memory-model", "zero-bubble", "--memory-cap", "1GiB"]) == 2
    err = capsys.readouterr().err
    assert "(and no --memory-model with layers=L gives bytes)" in err


def test_with_layers_a_size_is_read_in_its_stage_bytes(capsys):
    # M_F = layers * s * (34h + 5as) = 6 * 1024 * (34 * 2304 + 5 * 24 * 1024) = 1,236,271,104 B;
    # 5 GiB over it is 5 * 2**30 / 1,236,271,104 = 4.34266 activations (one stage each on linear)
    assert main([*ARGS, "--memory-model", "zero-bubble:layers=6", "--memory-cap", "5GiB"]) == 0
    assert "cap 4.34266 activations" in capsys.readouterr().out
