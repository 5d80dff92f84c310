"""``compare``'s formula level with presets gives its peaks in bytes, as every level's row says
(``memory_unit`` "bytes"): the closed form's peaks count activations of one *mean* device share
(docs/comparison.md: "the family's closed form ... on uniform stages of one mean device share"),
so they are multiplied by that share's bytes. Found by mutation testing: with the factor dropped,
the formula row read ``[4, 3, 2, 1]`` "bytes" and no test failed (the text table shows only the
async level's peak).

By hand, GPT-3 13B (models/llms/gpt3-13b.yaml: 40 layers, s=2048, h=5120, a=40, V=50257), b=1, no
tensor parallelism, 1F1B at p = m = 4:
- 1F1B's closed form holds min(p-d, m) = 4, 3, 2, 1 microbatches on devices 0..3
  (docs/schedule-families.md);
- one microbatch on one layer keeps s·b·h·(34 + 5·a·s/h) bytes (docs/simulation.md, Korthikanti's
  GPT formula) = 2048·5120·(34 + 5·40·2048/5120) = 2048·5120·114 = 1,195,376,640 B; 40 layers
  hold 47,815,065,600 B, and the last stage adds 4·s·b·V fp32 logits = 4·2048·50257 = 411,705,344 B;
- one mean device share: (47,815,065,600 + 411,705,344) / 4 = 12,056,692,736 B;
- formula peaks: (4, 3, 2, 1)·12,056,692,736 = 48,226,770,944; 36,170,078,208; 24,113,385,472;
  12,056,692,736 B.
The async engine counts each device's own share: device 0 holds 4 microbatches on its 10 layers,
4·10·1,195,376,640 = 47,815,065,600 B (formula 0.9 % above), device 3 one microbatch on its 10
layers and the logits, 11,953,766,400 + 411,705,344 = 12,365,471,744 B (formula 2.5 % below).
"""

from __future__ import annotations

import csv
import json

import pytest

from ppverify.cli import main

LAYER = 2048 * 5120 * (34 + 5 * 40 * 2048 // 5120)  # 1,195,376,640 B
LOGITS = 4 * 2048 * 50257  # 411,705,344 B
SHARE = (40 * LAYER + LOGITS) // 4  # 12,056,692,736 B, one mean device share
ARGV = ["compare", "--schedules", "1f1b", "--systems", "dgx-h100", "--models", "gpt3-13b", "-p", "4", "-m", "4"]


def test_formula_peaks_are_bytes_with_presets(tmp_path, capsys) -> None:
    assert SHARE == 12_056_692_736
    out = tmp_path / "r.csv"
    argv = [*ARGV, "--levels", "formula,async", "--no-verify", "--no-progress", "--json", "--out", str(out)]
    assert main(argv) == 0
    rows = {r["level"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    formula, asy = rows["formula"], rows["async"]
    assert formula["status"] == "ok" and formula["memory_unit"] == asy["memory_unit"] == "bytes"
    want = [float(k * SHARE) for k in (4, 3, 2, 1)]
    assert formula["peak_activations"] == want
    assert formula["peak_activation"] == want[0] == 48_226_770_944
    # the engine's own shares, by hand: 4 microbatches on device 0's 10 layers; 1 on device 3's and the logits
    assert asy["peak_activations"][0] == 4 * 10 * LAYER and asy["peak_activations"][3] == 10 * LAYER + LOGITS
    for f, a in zip(formula["peak_activations"], asy["peak_activations"]):
        assert f == pytest.approx(a, rel=0.03)
    # the table written with --out holds the same bytes
    with out.open() as fh:
        cells = {r["level"]: r for r in csv.DictReader(fh)}
    assert json.loads(cells["formula"]["peak_activations"]) == want
    assert float(cells["formula"]["peak_activation"]) == want[0]
