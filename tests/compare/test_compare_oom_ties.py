"""``ppverify compare``: schedules that do not fit device memory are marked and not ranked, float
noise is a tie, bad preset files, caps and time limits are refused up front, and an error status
says why (docs/comparison.md)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppverify.cli import main
from ppverify.compare.ranks import add_ranks, tie_ranks
from ppverify.compare.request import compare_request
from ppverify.compare.table import COLUMNS, DERIVED, format_config_table
from ppverify.core.errors import ParameterError

GiB = 2**30
# GPT-3 13B (h = 5120, 40 layers, 40 heads, vocabulary 50257, s = 2048, b = 1), 16 bytes of weight
# state per parameter; one layer holds 12 h^2 + 13 h = 314,639,360 parameters and keeps
# s*b*h*(34 + 5 a s / h) = 2048 * 5120 * (34 + 80) = 1,195,376,640 activation bytes per microbatch.
LAYER_W = 16 * (12 * 5120**2 + 13 * 5120)
LAYER_A = 2048 * 5120 * (34 + 5 * 40 * 2048 // 5120)
EMBED_W = 16 * (50257 + 2048) * 5120  # token and position embeddings, on the first device


def _json(capsys, argv: list[str]) -> list[dict]:
    assert main([*argv, "--no-progress", "--no-verify", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_out_of_memory_devices_are_those_simulate_names(capsys):
    # p = 4: 10 layers a device, 1F1B at m = 4 holds 4 - d microbatches on device d.
    #   device 0: 10 LAYER_W + EMBED_W + 4 * 10 LAYER_A = 95.41 GiB > 80
    #   device 1: 10 LAYER_W + 3 * 10 LAYER_A = 80.28 GiB > 80
    #   device 2: 10 LAYER_W + 2 * 10 LAYER_A = 69.15 GiB, fits
    #   device 3: 10 LAYER_W + the LM head (16 * 50257 * 5120) + 1 microbatch and its logits, ~62 GiB
    assert (10 * LAYER_W + EMBED_W + 40 * LAYER_A) / GiB == pytest.approx(95.41, abs=0.01)
    assert (10 * LAYER_W + 30 * LAYER_A) / GiB == pytest.approx(80.28, abs=0.01)
    argv = ["compare", "-p", "4", "-m", "4", "--systems", "dgx-h100", "--models", "gpt3-13b"]
    rows = _json(capsys, [*argv, "--schedules", "1f1b", "--levels", "formula,slot,async"])
    assert [(r["level"], r["oom_devices"], r["rank"]) for r in rows] == [  # JSON lists
        ("formula", [0, 1], None),
        ("slot", [0, 1], None),
        ("async", [0, 1], None),
    ]


def test_a_schedule_over_memory_is_marked_and_the_others_ranked_among_themselves(capsys):
    # p = 8: 5 layers a device. GPipe at m = 16 keeps all 16 microbatches on device 0:
    # 16 * 5 LAYER_A = 89.06 GiB of activations alone > 80. 1F1B keeps p = 8 there:
    # 5 LAYER_W + EMBED_W + 8 * 5 LAYER_A = 71.96 GiB < 80 (the other devices hold fewer).
    assert 80 * LAYER_A / GiB > 80 > (5 * LAYER_W + EMBED_W + 40 * LAYER_A) / GiB
    argv = ["compare", "-p", "8", "-m", "16", "--systems", "dgx-h100", "--models", "gpt3-13b"]
    argv += ["--schedules", "gpipe,1f1b", "--levels", "slot,async", "--no-progress", "--no-verify"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith(("gpipe ", "1f1b "))}
    assert lines["gpipe"].count("(-) OOM") == 2 and "OOM" not in lines["1f1b"]
    assert lines["1f1b"].split()[2] == "(1)"  # equal makespans, but GPipe is no contender
    assert "does not fit device memory" in text


def test_abstract_costs_know_no_capacity(capsys):
    rows = _json(
        capsys, ["compare", "-p", "4", "-m", "4", "--costs", "F=1,B=2", "--schedules", "gpipe", "--levels", "slot"]
    )
    assert rows[0]["oom_devices"] is None and rows[0]["rank"] == 1


def test_float_noise_is_a_tie():
    # 0.07297859948275805 and 0.07297859948832346 (interleaved-v2 and hanayo-w2, slot, p=4 m=4 ideal
    # gpt3-1.3b) differ by 5.6e-12 s, 7.6e-11 relative: under 1e-9, one rank; 0.08 comes third
    assert tie_ranks([0.07297859948275805, 0.07297859948832346, 0.08]) == [1.0, 1.0, 3.0]
    # a real difference of 1e-6 relative is an order
    assert tie_ranks([1.0, 1.000001]) == [1.0, 2.0]


def test_float_noise_moves_no_rank():
    # slot: a = 1, b = 1 + 2e-12 (tied); async: a = 1 + 2e-12, b = 1 (tied): no one moved, no '*'.
    # Rounded to 12 decimals they were 1.000000000002 vs 1.0: ranks 1, 2 then 2, 1, a rank change.
    rows = [("a", "slot", 1.0), ("b", "slot", 1.0 + 2e-12), ("a", "async", 1.0 + 2e-12), ("b", "async", 1.0)]
    base = {c: None for c in COLUMNS if c not in DERIVED}
    df = add_ranks(
        pd.DataFrame([{**base, "config": "k", "schedule": s, "level": lv, "makespan": t} for s, lv, t in rows])
    )
    assert df["rank"].tolist() == [1, 1, 1, 1] and df["rank_change"].tolist() == ["", "", "", ""]


def test_tied_schedules_share_their_rank_in_the_table(capsys):
    # interleaved-v2, hanayo-w1 and hanayo-w2 run the same slot table at m = p: equal to 1e-10
    argv = ["compare", "-p", "4", "-m", "4", "--systems", "ideal", "--models", "gpt3-1.3b", "--levels", "slot"]
    rows = _json(capsys, [*argv, "--schedules", "interleaved-v2,hanayo-w1,hanayo-w2"])
    times = [r["makespan"] for r in rows]
    assert max(times) - min(times) <= 1e-9 * max(times)
    assert [r["rank"] for r in rows] == [1, 1, 1]


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--systems", "/no/such/nope.yaml", "preset file: file not found"),
        ("--models", "missing.yaml", "preset file: file not found"),
    ],
)
def test_missing_preset_files_are_refused_up_front(ppverify_cli, tmp_path, option, value, says):
    argv = {"--systems": "dgx-h100", "--models": "gpt3-1.3b", option: value}
    run = ppverify_cli(
        "compare", *[x for kv in argv.items() for x in kv], "-m", "4", "--levels", "formula,async", cwd=tmp_path
    )
    assert run.returncode == 2 and says in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_a_preset_file_breaking_a_rule_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "gpus_per_node: 1\ndevice: {peak_TFLOPs: 1, memory_GiB: 1}\ninter_node: {latency_us: 1, bandwidth: 50}\n"
    )
    assert main(["compare", "--systems", str(bad), "--models", "gpt3-1.3b", "-m", "4", "--levels", "slot"]) == 2
    assert "inter_node.bandwidth: key has no unit" in capsys.readouterr().err


def test_a_cap_below_one_stage_activation_is_refused_up_front(capsys):
    # 10 bytes is below any stage's activation (hundreds of MB): no optimum could start
    argv = ["compare", "-p", "4", "-m", "4", "--systems", "dgx-h100", "--models", "gpt3-1.3b", "--schedules", "1f1b"]
    assert main([*argv, "--levels", "optimum", "--memory-cap", "10B", "--no-progress"]) == 2
    assert "below one stage activation" in capsys.readouterr().err


def test_nmf_is_one_byte_count_for_every_schedule(capsys):
    # GPT-3 1.3B (h = 2048, 24 layers, 16 heads, vocabulary 50257, s = 2048): one layer keeps
    # 2048 * 2048 * (34 + 5 * 16 * 2048 / 2048) = 478,150,656 B. The linear pipeline of 4 devices has
    # 6 layers a stage, the last one with the logits, 4 * 2048 * 50257 B: 1MF = 3,280,609,280 B.
    # Interleaved-v2's own stage (3 layers and the logits) was 1,846,157,312 B.
    one = 6 * 478_150_656 + 4 * 2048 * 50257
    argv = ["compare", "-p", "4", "-m", "4", "--systems", "dgx-h100", "--models", "gpt3-1.3b"]
    argv += ["--schedules", "1f1b,interleaved-v2", "--levels", "optimum", "--time-limit", "0.2", "--memory-cap", "1MF"]
    rows = _json(capsys, argv)
    assert {r["schedule"]: r["memory_cap"] for r in rows} == {"1f1b": one, "interleaved-v2": one}


def test_nmf_in_abstract_units_is_n_activations():
    # abstract linear(4): a stage is a device's share, one activation; interleaved's half a share
    from ppverify.compare.config import Config
    from ppverify.compare.evaluate import common_cap
    from ppverify.core.memory_cap import read_memory_cap

    assert common_cap(read_memory_cap("3MF"), Config(4, 4, costs=(("F", 1.0),))).amount == 3


@pytest.mark.parametrize("limit", [float("inf"), 1e300, float("nan"), 0.0])
def test_absurd_time_limits_are_refused(limit):
    with pytest.raises(ParameterError, match="must be > 0 and at most 1e9 seconds"):
        compare_request(levels="optimum", time_limit=limit)


def test_time_limit_inf_exits_2(ppverify_cli, tmp_path):
    run = ppverify_cli("compare", "--costs", "F=1,B=2", "--time-limit", "inf", cwd=tmp_path)
    assert run.returncode == 2 and "at most 1e9 seconds" in run.stderr


def test_an_error_status_prints_its_reason():
    base = {c: None for c in COLUMNS if c not in DERIVED}
    rows = [
        {**base, "config": "k", "schedule": "a", "level": "slot", "status": "ok", "makespan": 4.0},
        {**base, "config": "k", "schedule": "a", "level": "optimum", "status": "error", "note": "solver said no"},
        {**base, "config": "k", "schedule": "b", "level": "slot", "status": "ok", "makespan": 5.0},
        {**base, "config": "k", "schedule": "b", "level": "optimum", "status": "ok", "makespan": 5.0},
    ]
    df = add_ranks(pd.DataFrame(rows).assign(time_unit="units", memory_unit="activations"))
    text = format_config_table(df, "k")
    assert "optimum error for a: solver said no" in text.splitlines()[-1]
