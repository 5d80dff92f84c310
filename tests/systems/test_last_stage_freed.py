"""With presets a split backward's ``I`` frees the layers' dropout masks and attention scores and
none of the logits on the last stage (docs/memory.md): it used to free the layers' fraction of the
whole stage, logits included (72 % of them for GPT-3), so the last device's peak was too low."""

from __future__ import annotations

import json

from ppverify.cli import main

S = H = 2048  # GPT-3 1.3B: sequence 2048, hidden 2048, 16 heads, 24 layers, vocabulary 50257
LAYER = S * H * (34 + 5 * 16 * S // H)  # 114 sbh bytes kept per layer (Korthikanti et al.)
KEPT_AFTER_I = S * H * 32  # I frees the 2 sbh of dropout masks and the 80 sbh of scores
LOGITS = 4 * S * 50257  # fp32 logits on the last stage
STAGE = 6 * LAYER + LOGITS  # p = 4: 6 layers per stage, 3,280,609,280 B on the last
AFTER_I = 6 * KEPT_AFTER_I + LOGITS  # 1,217,011,712 B


def test_zb_h1_last_device_holds_the_logits_until_w(capsys):
    # ZB-H1 at p = 4 peaks on device 3 at one whole activation and three past their I
    # (1 + 3(1 - f) in docs/schedule-families.md): 3,280,609,280 + 3 x 1,217,011,712 B
    argv = ["simulate", "zb-h1", "-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main([*argv, "--json"]) == 0
    peaks = json.loads(capsys.readouterr().out)["peak_activations"]
    by_hand = STAGE + 3 * AFTER_I
    assert by_hand == 6_931_644_416
    # the stage's fraction is a multiple of 2^-19: each of the three is within 2^-20 of a stage
    assert abs(peaks[3] - by_hand) <= 3 * STAGE * 2**-20
    # device 0's 4 whole activations of 6 layers (no logits there) are unchanged
    assert peaks[0] == 4 * 6 * LAYER
