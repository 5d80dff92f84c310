"""``compare --memory-cap N`` with presets caps every schedule's optimum at the same bytes, also
where the layers split unevenly over a placement's stages (docs/comparison.md)."""

from __future__ import annotations

import json

from ppverify.cli import main

# Llama 2 7B at s = 4096, b = 1, 2-byte elements, no dropout: one layer keeps 101.5 s*b*h bytes
# (docs/memory.md), 4096 * 4096 * 101.5 = 1,702,887,424 B. At p = 3 its 32 layers split 11, 11, 10
# on the linear pipeline, whose largest device holds 11 layers (the last holds 10 and the logits,
# 4 * 4096 * 32000 = 524,288,000 B, less). Two activations: 2 * 11 * 1,702,887,424 B.
TWO = 2 * 11 * 1_702_887_424


def test_a_plain_cap_is_the_same_bytes_for_every_schedule(capsys):
    argv = ["compare", "--schedules", "1f1b,interleaved-v2", "--systems", "dgx-h100", "--models", "llama2-7b"]
    argv += ["-p", "3", "-m", "6", "--levels", "optimum", "--time-limit", "0.2", "--memory-cap", "2"]
    assert main([*argv, "--no-progress", "--no-verify", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"] if isinstance(out, dict) else out
    caps = {r["schedule"]: r["memory_cap"] for r in rows if r["level"] == "optimum"}
    # before, interleaved-v2 read it as 2 x (device 2's 6 + 5 layers and the logits): 38,512,099,328 B
    assert caps == {"1f1b": TWO, "interleaved-v2": TWO}
