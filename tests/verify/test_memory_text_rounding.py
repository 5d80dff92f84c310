"""A proved memory cap in bytes prints as a size the program accepts back.

``verify zb-h2 -p 2 -m 4 --system dgx-h100 --model gpt3-1.3b --memory-cap 17213423616B`` proved
"activation memory <= 16 GiB ... (peaks 16 GiB, ...)", while ``--memory-cap 16GiB`` is INVALID:
the cap and device 0's peak are 17213423616 B = 16.03125 GiB. The amounts now print with the
fewest digits that keep unequal ones apart and make the cap read back as at least every peak.

Hand derivation (Korthikanti et al., MLSys'23, arXiv 2205.05198, as docs/memory.md counts it):
GPT-3 1.3B has h = 2048, a = 16, s = 2048, V = 50257, 24 layers, microbatch 1, so p = 2 gives 12
layers per stage. One layer keeps s*h*(34 + 5as/h) = 2048*2048*114 B; the input gradient I frees
s*h*(2 + 5as/h) = 2048*2048*82 B of it (dropout masks and attention scores), W the 32*s*h rest.
The last stage also keeps the fp32 logits, 4*s*V B.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear
from ppverify.core.sizes import GiB, format_apart, parse_size
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings, resolve_presets
from ppverify.verify.memory import memory_statement

S, H = 2048, 2048
LAYER = S * H * 114  # 478,150,656 B
STAGE0 = 12 * LAYER  # 5,737,807,872 B
LOGITS = 4 * S * 50257  # 411,705,344 B
STAGE1 = STAGE0 + LOGITS  # 6,149,513,216 B
KEPT_AFTER_I = STAGE1 - 12 * S * H * 82  # the 32sh part and the logits: 2,022,318,080 B
# ZB-H2 at p = 2: device 0 holds three forwards of stage 0 (its warm-up of 2p - 1) when its third
# starts; device 1's highest is a forward's whole activation plus two microbatches whose I ran and
# whose W is deferred
PEAK0 = 3 * STAGE0
PEAK1 = STAGE1 + 2 * KEPT_AFTER_I


def test_the_hand_derived_amounts():
    assert PEAK0 == 17213423616 and Fraction(PEAK0, GiB) == Fraction("16.03125")
    assert PEAK1 == 10194149376
    # device 1's peak to seven digits is 9.494041 GiB
    assert Fraction("9.4940405") * GiB <= PEAK1 < Fraction("9.4940415") * GiB


def _preset_costs():
    s = build("zb-h2", p=2, m=4)
    return s, resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s).costs


def test_the_preset_counts_as_derived():
    _, costs = _preset_costs()
    assert costs.activation == (STAGE0, STAGE1)


def test_a_tight_cap_prints_as_a_size_that_proves_again():
    # the cap equals device 0's peak: 16.03125 reads back below it at 3 to 6 digits (16, 16.03,
    # 16.031, 16.0312), so all three amounts print at 7 digits
    s, costs = _preset_costs()
    text = memory_statement(float(PEAK0), [float(PEAK0), float(PEAK1)], costs, s.placement)
    assert text == (
        "activation memory <= 16.03125 GiB on every device at every instant (peaks 16.03125 GiB, 9.494041 GiB)"
    )
    cap_txt = text.split("<= ")[1].split(" on")[0]
    assert parse_size(cap_txt).value >= PEAK0  # given back as --memory-cap, it proves again


def test_a_loose_cap_keeps_three_digits():
    # 20 GiB over both peaks: 3 digits tell 20, 16.0 and 9.49 apart, and 20 GiB is above 16.03125
    s, costs = _preset_costs()
    assert memory_statement(float(20 * GiB), [float(PEAK0), float(PEAK1)], costs, s.placement) == (
        "activation memory <= 20 GiB on every device at every instant (peaks 16 GiB, 9.49 GiB)"
    )


def test_a_cap_just_above_a_peak_prints_apart_from_it():
    # one byte over device 0's peak: 17213423617 / 2^30 = 16.031250000931..., the peak 16.03125.
    # At 3 to 5 digits both read 16, 16.03, 16.031; at 6 the cap rounds up to 16.0313 and the
    # peak, a tie, to even, 16.0312: apart, and the cap reads back above the peak
    s, costs = _preset_costs()
    text = memory_statement(float(PEAK0 + 1), [float(PEAK0), float(PEAK1)], costs, s.placement)
    assert text == (
        "activation memory <= 16.0313 GiB on every device at every instant (peaks 16.0312 GiB, 9.49404 GiB)"
    )


def test_one_byte_apart_prints_apart_and_in_order():
    # 4 x 11,953,766,400 B = 44.53125 GiB (GPT-3 13B's 1F1B peak at p = 4) and one byte less,
    # 47815065599 / 2^30 = 44.531249999068...: apart at 11 digits
    assert format_apart([47815065600, 47815065599], "bytes") == ["44.53125 GiB", "44.531249999 GiB"]


def test_a_cap_no_decimal_reaches_is_rounded_up():
    # a cap of 1/3 activation with a peak as high: every nearest decimal is below 1/3, so both
    # print rounded up at six digits, and the cap reads back above the peak
    assert format_apart([Fraction(1, 3), Fraction(1, 3), Fraction(1, 6)], "activations", cap_first=True) == [
        "0.333334",
        "0.333334",
        "0.166667",
    ]


def test_bytes_statement_without_presets_units():
    # a byte-counting cost model's amounts are not divided by an activation's bytes
    costs = dataclasses.replace(CostModel.unit(linear(2)), memory_unit="bytes", activation=(2.0**30, 2.0**30))
    assert memory_statement(float(4 * GiB), [float(2 * GiB), float(2 * GiB)], costs, linear(2)) == (
        "activation memory <= 4 GiB on every device at every instant (peaks 2 GiB, 2 GiB)"
    )


def test_the_violation_keeps_its_digits(capsys):
    # --memory-cap 16GiB: device 0's 16.03125 GiB is over it, printed apart from the cap
    argv = ["verify", "zb-h2", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main(argv + ["--memory-cap", "16GiB"]) == 1
    out = capsys.readouterr().out
    assert "device 0 holds 16.03 GiB when 0F2 starts (cap 16 GiB)" in out
    assert main(argv + ["--memory-cap", "16.03125GiB"]) == 0  # the peak given back proves


def test_verify_prints_a_tight_cap_that_proves_again(capsys):
    argv = ["verify", "zb-h2", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main(argv + ["--memory-cap", f"{PEAK0}B"]) == 0
    out = capsys.readouterr().out
    head = "activation memory <= 16.03125 GiB on every device at every instant (peaks 16.03125 GiB, "
    assert head in out
    # device 1's peak: the last stage's fraction freed at I is rounded down to a multiple of 2^-19
    # (docs/memory.md), so each of its two activations past their I holds at most 2^-19 of the stage
    # more than the hand count, never less: a peak is never under-stated
    peak1 = float(out.split(head, 1)[1].split(" GiB)", 1)[0])
    assert -0.5e-6 * GiB <= peak1 * GiB - PEAK1 <= 2 * STAGE1 * 2**-19 + 0.5e-6 * GiB  # and the printed digits
