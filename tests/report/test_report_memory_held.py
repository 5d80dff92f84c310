"""The report's memory panel draws what each device holds against the device's capacity: its
activations on top of its weights, gradients and optimizer state (``simulate``'s *weights*), and
prints the highest curve's peak, not the axis's end. It once drew activations alone under an
80 GiB line and labelled the axis's end "peak 80 GiB" while device 0 (95.4 GiB held) was out of
memory. Opened in headless Chromium (``/usr/bin/chromium``), as ``test_report_browser.py`` does.
"""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.engines import run
from ppverify.report.payload import canonical_ops, timeline_payload
from ppverify.schedules import build

# GPT-3 13B (h = 5120, 40 layers, 40 heads, f = 4h, V = 50257, s = 2048, learned positions, biases,
# tied embeddings, b = 1; models/llms/gpt3-13b.yaml) on p = 4 stages of 10 layers, 16 B per
# parameter (mixed-precision Adam, docs/simulation.md), dgx-h100's 80 GiB per device:
#   layer parameters: QKV 3h^2 + 3h, output projection h^2 + h, MLP 4h^2 + 4h and 4h^2 + h, two
#   layer norms 2 x 2h: 12h^2 + 13h = 314,572,800 + 66,560 = 314,639,360; 10 layers 3,146,393,600
#   device 0: + embedding (50257 + 2048) * 5120 = 267,801,600 -> 3,414,195,200 * 16 = 54,627,123,200 B
#   devices 1, 2: 3,146,393,600 * 16 = 50,342,297,600 B
#   device 3: + final norm 2h = 10,240 and head V*h = 257,315,840 (the tied head is a second copy: the
#   last stage is not on device 0) -> 3,403,719,680 * 16 = 54,459,514,880 B
WEIGHTS = [54_627_123_200, 50_342_297_600, 50_342_297_600, 54_459_514_880]
# activations of one microbatch per stage (Korthikanti: s*b*h*(34 + 5as/h) per layer):
#   2048 * 5120 * (34 + 5 * 40 * 2048 / 5120 = 80) = 1,195,376,640 per layer; 10 layers 11,953,766,400 B;
#   the last stage adds the logits, 4*s*b*V = 411,705,344 B
# 1F1B p = 4 m = 4: stage d holds p - d microbatches at its peak (4, 3, 2, 1), so the devices hold
HELD = [
    54_627_123_200 + 4 * 11_953_766_400,  # 102,442,188,800 B = 95.41 GiB: over 80 GiB
    50_342_297_600 + 3 * 11_953_766_400,  # 86,203,596,800 B = 80.28 GiB: over 80 GiB
    50_342_297_600 + 2 * 11_953_766_400,  # 74,249,830,400 B = 69.15 GiB
    54_459_514_880 + 11_953_766_400 + 411_705_344,  # 66,824,986,624 B = 62.24 GiB
]


def test_each_curve_is_activations_on_weights_against_the_device_capacity(open_report, tmp_path):
    out = tmp_path / "r13.html"
    argv = ["report", "--schedules", "1f1b", "-p", "4", "-m", "4", "--systems", "dgx-h100", "--models", "gpt3-13b"]
    assert main([*argv, "--levels", "async", "--no-progress", "-o", str(out)]) == 0
    page, errors = open_report(out)
    panel = page.evaluate("window.ppverifyReport.memoryLabels('async')")
    assert panel["peaks"] == pytest.approx(HELD, rel=1e-9)
    # the real peak, 102,442,188,800 / 2^30 = 95.41 GiB (three digits: 95.4), not the axis's 80 GiB
    assert panel["peak"] == "peak 95.4 GiB"
    assert panel["capacity"] == "device capacity 80 GiB"
    assert "activations + weights/gradients/optimizer state" in panel["heading"]
    # 95.41 and 80.28 GiB are over 80 GiB, 69.15 and 62.24 are not: as simulate's fits column
    assert panel["keys"] == ["\u2014 dev 0 OOM", "\u2014 dev 1 OOM", "\u2014 dev 2", "\u2014 dev 3"]
    page.locator("#gantt").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "report-memory-held.png"))
    assert errors == []


def test_simulate_counts_the_same_weights_and_peaks(capsys):
    # the panel's numbers are simulate's: its JSON's weight_memory and peak_memory (weights + activations)
    argv = ["simulate", "1f1b", "-p", "4", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-13b"]
    assert main([*argv, "--semantics", "async", "--json"]) == 1  # 1: a device is out of memory
    doc = json.loads(capsys.readouterr().out)
    assert doc["weight_memory"] == pytest.approx(WEIGHTS, rel=1e-9)
    assert doc["peak_memory"] == pytest.approx(HELD, rel=1e-9)


def test_the_payload_has_no_weights_for_abstract_costs():
    # abstract costs hold no weights: nothing is added to the activation curves
    s = build("1f1b", p=2, m=2)
    assert timeline_payload(run(s, semantics="async"), canonical_ops(s))["weights"] == [0.0, 0.0]


def test_abstract_costs_keep_the_activation_panel(open_report, tmp_path):
    out = tmp_path / "a.html"
    argv = ["report", "--schedules", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2"]
    assert main([*argv, "--levels", "async", "--no-verify", "--no-progress", "-o", str(out)]) == 0
    page, errors = open_report(out)
    panel = page.evaluate("window.ppverifyReport.memoryLabels('async')")
    # 1F1B p=2 m=2: device 0 holds both microbatches' activations (1 each) before its first
    # backward, device 1 one at a time; no weights, no capacity line
    assert panel["peaks"] == [2, 1]
    assert panel["peak"] == "peak 2" and panel["capacity"] == ""
    assert panel["heading"] == "memory per device (async)"
    assert panel["keys"] == ["\u2014 dev 0", "\u2014 dev 1"]
    assert errors == []


def test_the_slot_level_draws_the_same_capacity_and_oom_keys(open_report, tmp_path):
    # the slot table holds the same ops per device in the same order, so the same microbatches at
    # once: the same HELD peaks against the same 80 GiB (the slot engine once left the capacity out:
    # no line and no OOM keys while the table marked the cells OOM)
    out = tmp_path / "slot.html"
    argv = ["report", "--schedules", "1f1b", "-p", "4", "-m", "4", "--systems", "dgx-h100", "--models", "gpt3-13b"]
    assert main([*argv, "--levels", "slot,async", "--no-progress", "-o", str(out)]) == 0
    page, errors = open_report(out)
    panel = page.evaluate("window.ppverifyReport.memoryLabels('slot')")
    assert panel["peaks"] == pytest.approx(HELD, rel=1e-9)
    assert panel["capacity"] == "device capacity 80 GiB"
    assert panel["keys"] == ["\u2014 dev 0 OOM", "\u2014 dev 1 OOM", "\u2014 dev 2", "\u2014 dev 3"]
    assert errors == []
