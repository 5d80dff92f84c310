"""Preset derivations checked against the published formulas, every expected value worked out by
hand from the model's shape (Brown et al. 2020, Table 2.1), the system's links and the papers'
formulas (Narayanan et al. SC'21, arXiv 2104.04473; Korthikanti et al. MLSys'23, arXiv 2205.05198;
Thakur et al. IJHPCA 2005), never copied from ppverify's output."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.dag import build_dag
from ppverify.core.errors import ParameterError
from ppverify.schedules import build
from ppverify.systems.llm import Training, load_llm, stage_costs
from ppverify.systems.preset_models import PresetSettings, resolve_presets
from ppverify.systems.presets import PresetError
from ppverify.systems.replica_sync import step_collectives
from ppverify.systems.system import load_system

# GPT-3 XL: 24 layers, d_model 2048, 16 heads of 128, context 2048, vocabulary 50257
L13, H13, A13, S, V = 24, 2048, 16, 2048, 50257
# per layer and sequence (b = 1): matmuls 24 s h^2, attention scores and values 4 s^2 h
MM = 24 * S * H13**2  # 206_158_430_208
AT = 4 * S**2 * H13  # 34_359_738_368
HEAD = 2 * S * H13 * V  # 421_586_272_256


def _simulate(capsys, *extra: str) -> dict:
    args = ["simulate", "1f1b", "-p", "4", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--json"]
    assert main([*args, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_recompute_reruns_the_layers_not_the_head(capsys):
    # --recompute keeps the fp32 logits (the last stage's activation counts them), so the head is
    # not run again. 4 stages of 6 layers, tp 2 at 989 TFLOP/s x 0.4 = 791.2e12 FLOP/s:
    # last stage B = I + W = [6(MM + 2AT) + 6(MM + AT) + HEAD] + [6 MM + HEAD]
    #              = 18 (MM + AT) + 2 HEAD = 4_329_327_034_368 + 843_172_544_512 = 5_172_499_578_880
    #              -> 6.53754 ms (it was 18 (MM + AT) + 3 HEAD -> 7.07038 ms, the head recomputed)
    out = _simulate(capsys, "--tp", "2", "--recompute")
    rate = 989e12 * 0.4 * 2
    assert out["stages"]["B"][3] == pytest.approx(5_172_499_578_880 / rate, rel=1e-12)
    assert out["stages"]["B"][3] == pytest.approx(6.53754e-3, rel=1e-5)
    # a stage without the head keeps tB = 3 tF: 3 x 6 (MM + AT) = 4_329_327_034_368 FLOPs
    assert out["stages"]["B"][1] == pytest.approx(4_329_327_034_368 / rate, rel=1e-12)
    assert out["stages"]["B"][1] == pytest.approx(3 * out["stages"]["F"][1], rel=1e-12)


def test_a_step_with_recompute_is_narayanans_F():
    # Narayanan et al. (SC'21) with recomputation: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per
    # iteration of B sequences: four passes over the layers, three over the logit layer
    # (175B, b = 1, s = 2048, l = 96, h = 12288, V = 50257)
    b, s, l, h = 1, 2048, 96, 12288
    narayanan = 96 * b * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    sc = stage_costs(load_llm("gpt3-175b"), 989e12, 8, Training(recompute=True))
    assert sum(sc.flops["F"]) + sum(sc.flops["B"]) == pytest.approx(narayanan, rel=1e-12)
    # without recomputation three passes: 72 B s l h^2 (1 + s/(6h) + V/(12 l h))
    plain = stage_costs(load_llm("gpt3-175b"), 989e12, 8, Training())
    assert sum(plain.flops["F"]) + sum(plain.flops["B"]) == pytest.approx(
        72 * b * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h)), rel=1e-12
    )


def test_activation_bytes_follow_the_element_width():
    # Korthikanti et al.: 34 s b h + 5 a s^2 b bytes per layer for 2-byte elements, of which the
    # dropout masks (2 s b h and a s^2 b) are 1 byte. GPT-3 13B (h 5120, a 40, s 2048), 4 stages of
    # 10 layers, b = 1:
    #   2 bytes: 34 * 2048 * 5120 + 5 * 40 * 2048^2 = 356_515_840 + 838_860_800 = 1_195_376_640
    #   4 bytes: 66 * 2048 * 5120 + 9 * 40 * 2048^2 = 692_060_160 + 1_509_949_440 = 2_202_009_600
    m = load_llm("gpt3-13b")
    two = stage_costs(m, 989e12, 4, Training())
    four = stage_costs(m, 989e12, 4, Training(dtype_bytes=4))
    assert two.activation[1] == 10 * 1_195_376_640
    assert four.activation[1] == 10 * 2_202_009_600
    # the boundary was already 4-byte: 2048 * 5120 * 4
    assert four.boundary_bytes[0] == 41_943_040
    # recomputation keeps the layer input, one 4-byte tensor: 10 * 4 * 2048 * 5120
    assert stage_costs(m, 989e12, 4, Training(dtype_bytes=4, recompute=True)).activation[1] == 419_430_400
    # I frees what only the input gradient reads: (2h + 5as)/(34h + 5as) at 2 bytes (Qi et al.),
    # here (2*5120 + 5*40*2048)/(34*5120 + 5*40*2048) = 419_840/583_680; the 2h are the two 1-byte
    # dropout masks, so at 4 bytes (2*5120 + 9*40*2048)/(66*5120 + 9*40*2048) = 747_520/1_075_200
    assert two.freed_by_I[1] == pytest.approx(419_840 / 583_680, rel=1e-12)
    assert four.freed_by_I[1] == pytest.approx(747_520 / 1_075_200, rel=1e-12)


def test_tensor_parallel_ranks_fill_nodes_by_their_width():
    # --tp 8 on a DGX H100 (8 GPUs per node): each pipeline rank is a whole node, so the hop 0 -> 1
    # crosses InfiniBand NDR: 10 us + (2048 * 5120 * 2 / 8 = 2_621_440 B) / 50 GB/s = 62.4288 us
    # (it was NVLink, 5 us + 2_621_440 / 450e9 = 10.825 us: 16 GPUs in one 8-GPU node)
    s = build("1f1b", p=2, m=2)
    ctx = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-13b", tp=8), s)
    nbytes = ctx.costs.boundary_bytes[0]
    assert nbytes == 2_621_440
    assert ctx.comm.transfer_time(0, 1, nbytes) == pytest.approx(62.4288e-6, rel=1e-12)
    # --tp 2: 8 // 2 = 4 ranks per node, so 3 -> 4 crosses nodes and 2 -> 3 does not
    s8 = build("1f1b", p=8, m=8)
    two = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-13b", tp=2), s8).comm
    assert (two.node_of(3), two.node_of(4)) == (0, 1)
    # an explicit count that fits is kept: 2 ranks of 4 GPUs on a node
    kept = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-13b", tp=4, ranks_per_node=2), s8).comm
    assert kept.per_node == 2
    # without --tp nothing changes: every GPU of a node
    assert resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-13b"), s8).comm.per_node == 8


def test_ranks_per_node_wider_than_a_node_is_refused(capsys):
    # 4 ranks of tp 4 = 16 GPUs on an 8-GPU node
    with pytest.raises(ParameterError, match="ranks-per-node=4: 4 pipeline ranks of --tp 4 GPUs each need 16"):
        resolve_presets(
            PresetSettings(system="dgx-h100", model="gpt3-13b", tp=4, ranks_per_node=4), build("1f1b", p=4, m=4)
        )
    args = ["simulate", "1f1b", "-p", "4", "--system", "dgx-h100", "--model", "gpt3-13b", "--tp", "4"]
    assert main([*args, "--ranks-per-node", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "give at most 2" in err


def test_training_longer_than_learned_positions_grows_the_table():
    # GPT-3 has a learned position table of its 2048-token context; at --seq-len 4096 it needs 4096
    # rows. First of 2 stages: 12 layers of 12h^2 + 13h plus (50257 + 4096) * 2048 embedding
    #   12 * (12 * 2048^2 + 13 * 2048) = 604_299_264;  54_353 * 2048 = 111_314_944
    sc = stage_costs(load_llm("gpt3-1.3b"), 989e12, 2, Training(seq_len=4096))
    assert sc.params[0] == 604_299_264 + 111_314_944
    # a shorter sequence keeps the model's table: (50257 + 2048) * 2048 = 107_120_640
    assert stage_costs(load_llm("gpt3-1.3b"), 989e12, 2, Training(seq_len=1024)).params[0] == 604_299_264 + 107_120_640


def test_chimera_replicas_all_reduce_their_stage_gradients_by_hand():
    # Chimera p = 4 on a DGX H100: stage 0 lives on devices 0 and 3 (one node, NVLink 4, 5 us,
    # 450 GB/s). Its gradients: (6 layers * 50_358_272 + 107_120_640 embedding) params * 2 bytes
    #   = 409_270_272 * 2 = 818_540_544 B
    # ring over 2 ranks: 2 (n - 1) steps of nbytes / n: 2 * (5 us + 409_270_272 / 450e9)
    s = build("chimera", p=4, m=4)
    ctx = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s)
    first = next(c for c in step_collectives(build_dag(s), ctx.costs, ctx.comm) if c.stage == 0)
    assert first.devices == (0, 3)
    assert first.nbytes == pytest.approx(818_540_544, rel=1e-12)
    assert first.duration == pytest.approx(2 * (5e-6 + 409_270_272 / 450e9), rel=1e-12)


def test_a_ranks_per_node_out_of_range_names_the_option(capsys):
    # the option is --ranks-per-node; the 8-GPU DGX H100 holds 1..8 ranks
    args = ["simulate", "1f1b", "-p", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--ranks-per-node", "9"]
    assert main(args) == 2
    assert "parameter --ranks-per-node=9: must be in 1..8" in capsys.readouterr().err


@pytest.mark.parametrize(
    "device, link, where",
    [
        ("peak_TFLOPs: .inf, memory_GiB: 80", "latency_us: 1, bandwidth_GBps: 10", "device.peak_TFLOPs"),
        ("peak_TFLOPs: 100, memory_GiB: .inf", "latency_us: 1, bandwidth_GBps: 10", "device.memory_GiB"),
        ("peak_TFLOPs: 100, memory_GiB: 80", "latency_us: .inf, bandwidth_GBps: 10", "inter_node.latency_us"),
    ],
)
def test_only_a_bandwidth_may_be_infinite(tmp_path, capsys, device, link, where):
    # an infinite latency made every transfer inf (an error naming no file); an infinite peak made
    # every op 0 s (100 % idle), an infinite memory wrote "Infinity" into --json (not JSON)
    path = tmp_path / "x.yaml"
    path.write_text(f"device: {{name: GPU, {device}}}\ngpus_per_node: 1\ninter_node: {{name: link, {link}}}\n")
    assert main(["simulate", "1f1b", "-p", "2", "--system", str(path), "--model", "gpt3-1.3b"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"x.yaml: {where}: must be finite" in err
    # .inf bandwidth stays an ideal link: 1 GB in 1 us
    path.write_text(
        "device: {name: GPU, peak_TFLOPs: 100, memory_GiB: 80}\ngpus_per_node: 1\n"
        "inter_node: {name: link, latency_us: 1, bandwidth_GBps: .inf}\n"
    )
    assert load_system(str(path)).transfer_time(0, 1, 1e9) == pytest.approx(1e-6)


@pytest.mark.parametrize("kv", [6, 128])
def test_key_value_heads_must_group_the_query_heads(tmp_path, kv):
    # grouped-query attention shares each key/value head among a whole group of query heads:
    # 64 / 6 is no whole group, and 128 key/value heads for 64 query heads is no grouping; both
    # were taken (kv_dim 768 and 16384, changing FLOPs and parameters silently)
    path = tmp_path / "gqa.yaml"
    path.write_text(
        "layers: 2\nhidden_size: 8192\nattention_heads: 64\n"
        f"kv_heads: {kv}\nffn_hidden_size: 28672\nvocab_size: 32000\nseq_len: 4096\n"
    )
    with pytest.raises(PresetError, match=f"gqa.yaml: kv_heads: must divide attention_heads \\(64\\), got {kv}"):
        load_llm(str(path))


def test_a_v_shape_keeps_one_tied_embedding_on_its_first_device(capsys):
    # ZB-V at p = 2 runs stages 0 and 3 on device 0. GPT-3 ties its output head to the input
    # embedding, so one device needs the matrix once: 2 stages of 6 layers (50_358_272 each),
    # embedding (50257 + 2048) * 2048 = 107_120_640, final norm 2 * 2048 = 4096
    #   (12 * 50_358_272 + 107_120_640 + 4096) * 16 B = 711_424_000 * 16 = 11_382_784_000 B
    # (it counted a second 50257 * 2048 head copy: + 1_646_821_376 B)
    args = ["simulate", "zbv", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["weight_memory"][0] == 11_382_784_000
    # 1F1B's last device (12 layers) still holds its own head copy of 50257 * 2048 = 102_926_336:
    #   (12 * 50_358_272 + 4096 + 102_926_336) * 16 B = 707_229_696 * 16 B
    assert main(["simulate", "1f1b", *args[2:]]) == 0
    assert json.loads(capsys.readouterr().out)["weight_memory"][1] == 707_229_696 * 16
