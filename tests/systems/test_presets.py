"""System and LLM presets: loading, validation, and the derived costs checked against published
numbers and hand-computed formulas (Narayanan et al. SC'21; Korthikanti et al. MLSys'23)."""

from __future__ import annotations

import argparse

import pytest

from ppverify.cli.presets_args import costs_and_comm_from_args, preset_context_from_args
from ppverify.core.comm import FixedDelay
from ppverify.core.errors import ParameterError, PPVerifyError, ScheduleFileError
from ppverify.schedules import build
from ppverify.systems.llm import LLM, Training, load_llm, split_layers, stage_costs
from ppverify.systems.presets import PresetError, available, parse_preset, read_preset
from ppverify.systems.system import GiB, LinkTier, allreduce_time, dp_allreduce_time, load_system

SYSTEMS = ["dgx-a100", "dgx-h100", "ethernet-100g", "ib-ndr-cluster", "ideal", "pcie-gen4"]
LLMS = ["gpt3-1.3b", "gpt3-13b", "gpt3-175b", "llama2-70b", "llama2-7b"]

GOOD_SYSTEM = """
device: {name: g, peak_TFLOPs: 100, memory_GiB: 16}
gpus_per_node: 2
intra_node: {latency_us: 1, bandwidth_GBps: 100}
inter_node: {latency_us: 10, bandwidth_GBps: 10}
"""


def test_shipped_presets_are_listed_and_load():
    assert set(SYSTEMS) <= set(available("systems"))
    assert set(LLMS) <= set(available("llms"))
    for name in available("systems"):
        s = load_system(name)
        assert s.peak_flops > 0 and s.memory_bytes > 0
    for name in available("llms"):
        assert load_llm(name).total_params() > 1e9


@pytest.mark.parametrize(
    "name, published, tol",
    [
        ("gpt3-1.3b", 1.3e9, 0.03),  # Brown et al. 2020 Table 2.1
        ("gpt3-13b", 13.0e9, 0.02),
        ("gpt3-175b", 175.0e9, 0.01),
        ("llama2-7b", 6.74e9, 0.005),  # Llama-2-7b-hf: 6,738,415,616 parameters
        ("llama2-70b", 68.98e9, 0.005),  # Llama-2-70b-hf: 68,976,648,192 parameters
    ],
)
def test_parameter_counts_match_published(name, published, tol):
    assert abs(load_llm(name).total_params() - published) / published < tol


def test_gpt3_layer_flops_formula():
    m = load_llm("gpt3-175b")
    b, s, h = 2, 2048, 12288
    mm, at = m.layer_flops(b, s)
    assert mm + at == 24 * b * s * h * h + 4 * b * s * s * h


def test_training_flops_are_about_6PT():
    # forward 2PT, backward 4PT (Narayanan et al. SC'21, arXiv 2104.04473); attention adds a few per cent at s=2048
    m = load_llm("gpt3-13b")
    sc = stage_costs(m, 989e12, 4, Training())
    tokens = 2048
    total = sum(sc.flops["F"]) + sum(sc.flops["B"])
    ratio = total / (6 * m.total_params() * tokens)
    assert 1.0 < ratio < 1.15


def test_backward_is_twice_forward_and_three_times_with_recompute():
    m = load_llm("llama2-7b")
    sc = stage_costs(m, 989e12, 4, Training())
    sr = stage_costs(m, 989e12, 4, Training(recompute=True))
    for s in range(4):
        assert sc.duration["B"][s] == pytest.approx(2 * sc.duration["F"][s])
        assert sc.duration["B"][s] == pytest.approx(sc.duration["I"][s] + sc.duration["W"][s])
        # recomputation reruns the layers, not the head (its logits are kept): 3 tF but on the last stage
        head = 2 * 4096 * 4096 * 32000 / (989e12 * 0.4) if s == 3 else 0.0
        assert sr.duration["B"][s] == pytest.approx(3 * sr.duration["F"][s] - head)


def test_durations_scale_with_peak_and_mfu():
    m = load_llm("gpt3-1.3b")
    a = stage_costs(m, 989e12, 8, Training(mfu=0.4))
    b = stage_costs(m, 312e12, 8, Training(mfu=0.2))
    assert b.duration["F"][3] / a.duration["F"][3] == pytest.approx(989 / 312 * 2)
    # one middle stage of 3 layers, by hand: 3 * (24 b s h^2 + 4 b s^2 h) / (989e12 * 0.4)
    h, s = 2048, 2048
    assert a.duration["F"][3] == pytest.approx(3 * (24 * s * h * h + 4 * s * s * h) / (989e12 * 0.4))


@pytest.mark.parametrize(
    "system, ratio",
    [
        ("dgx-h100", 0.013),  # NVLink 4
        ("ib-ndr-cluster", 0.095),  # IB NDR
        ("ethernet-100g", 0.37),  # 100 GbE
    ],
)
def test_comm_to_compute_ratio_matches_reference(system, ratio):
    # worked out by hand (alpha-beta over the link, FLOPs over peak x MFU): s=2048, b=1, p=8, H100 at 40% MFU, 1.3B model, per-hop comm / tF
    sysm = load_system(system)
    sc = stage_costs(load_llm("gpt3-1.3b"), 989e12, 8, Training(mfu=0.4))
    hop = sysm.transfer_time(0, 1, sc.boundary_bytes[0])
    assert hop / sc.duration["F"][3] == pytest.approx(ratio, rel=0.15)


def test_pcie_ratio_with_h100_compute():
    # the same hand figure for PCIe 4 (0.19) uses H100 compute; pcie-gen4 ships A100 cards
    link = load_system("pcie-gen4").intra
    sc = stage_costs(load_llm("gpt3-1.3b"), 989e12, 8, Training(mfu=0.4))
    assert link.time(sc.boundary_bytes[0]) / sc.duration["F"][3] == pytest.approx(0.19, rel=0.15)


def test_activation_bytes_korthikanti():
    m = load_llm("gpt3-175b")
    s, b, h, a = 2048, 1, 12288, 96
    sc = stage_costs(m, 989e12, 8, Training())
    per_layer = s * b * h * (34 + 5 * a * s / h)
    assert sc.activation[1] == pytest.approx(12 * per_layer)
    flash = stage_costs(m, 989e12, 8, Training(flash_attention=True))
    assert flash.activation[1] == pytest.approx(12 * s * b * h * 34)
    # the last stage also keeps fp32 logits
    assert sc.activation[-1] == pytest.approx(12 * per_layer + 4 * s * b * 50257)
    tp = stage_costs(m, 989e12, 8, Training(tp=8))
    assert tp.activation[1] == pytest.approx(sc.activation[1] / 8)
    # zero-bubble memory model: I frees (2h + 5as) / (34h + 5as)
    assert sc.freed_by_I[1] == pytest.approx((2 * h + 5 * a * s) / (34 * h + 5 * a * s))


def test_boundary_and_weight_bytes():
    m = load_llm("gpt3-13b")
    sc = stage_costs(m, 989e12, 4, Training(microbatch_size=2))
    assert sc.boundary_bytes == (2 * 2048 * 5120 * 2.0,) * 3
    # 16 bytes per parameter (mixed-precision Adam); embedding on the first stage, head on the last
    assert sc.weight_bytes[1] == 10 * m.layer_params() * 16
    assert sc.weight_bytes[0] == (10 * m.layer_params() + m.embedding_params()) * 16
    assert sc.weight_bytes[3] == (10 * m.layer_params() + 50257 * 5120 + 2 * 5120) * 16
    # one stage: a tied head is not a second copy
    one = stage_costs(m, 989e12, 1, Training())
    assert one.params[0] == m.total_params()


def test_uneven_splits():
    assert split_layers(24, 5) == (5, 5, 5, 5, 4)
    assert split_layers(40, 6) == (6, 7, 7, 7, 7, 6)
    assert sum(split_layers(80, 7)) == 80
    with pytest.raises(ParameterError):
        split_layers(24, 32)
    sc = stage_costs(load_llm("gpt3-1.3b"), 1e15, 4, Training(layers_per_stage=(9, 6, 6, 3)))
    assert sc.layers == (9, 6, 6, 3)
    assert sc.duration["F"][0] / sc.duration["F"][1] == pytest.approx(1.5)
    for bad in [(6, 6, 6), (6, 6, 6, 7), (-1, 9, 8, 8)]:
        with pytest.raises(ParameterError, match="layers-per-stage"):
            stage_costs(load_llm("gpt3-1.3b"), 1e15, 4, Training(layers_per_stage=bad))


def test_system_mapping_and_links():
    s = load_system("dgx-h100")
    assert [s.node_of(r) for r in (0, 7, 8, 15, 16)] == [0, 0, 1, 1, 2]
    assert s.transfer_time(3, 4, 450e6) == pytest.approx(5e-6 + 1e-3)
    assert s.transfer_time(7, 8, 50e6) == pytest.approx(10e-6 + 1e-3)
    assert s.transfer_time(5, 5, 1e9) == 0.0
    across = s.with_ranks_per_node(1)
    assert across.transfer_time(0, 1, 50e6) == pytest.approx(10e-6 + 1e-3)
    ideal = load_system("ideal")
    assert ideal.transfer_time(0, 9, 1e12) == 0.0
    # pcie-gen4: 2 NICs for 8 GPUs -> GPUs 0..3 share NIC 0
    pc = load_system("pcie-gen4")
    assert pc.resources(3, 8) == (("nic-tx", 0, 0), ("nic-rx", 1, 0))
    assert pc.resources(7, 8)[0] == ("nic-tx", 0, 1)
    with pytest.raises(ParameterError):
        load_system("ethernet-100g", ranks_per_node=2)


def test_ring_allreduce_formula():
    s = load_system("ib-ndr-cluster")
    alpha, beta = 10e-6, 50e9
    for n in (2, 4, 8):
        assert allreduce_time(s, list(range(n)), 1e9) == pytest.approx(
            2 * (n - 1) * alpha + 2 * (n - 1) / n * 1e9 / beta
        )
    # Chimera's replica pair: 2 alpha + bytes / beta
    assert allreduce_time(s, [0, 3], 4e8) == pytest.approx(2 * alpha + 4e8 / beta)
    assert dp_allreduce_time(s, 4, 1e9) == pytest.approx(6 * alpha + 1.5 * 1e9 / beta)
    assert allreduce_time(FixedDelay(1.0), [0, 1], 123) == 2.0
    assert allreduce_time(s, [0], 1e9) == 0.0
    assert LinkTier("x", 0, 1e9).time(0) == 0.0


# ---- bad input -------------------------------------------------------------------------------


def test_unknown_preset_lists_available():
    with pytest.raises(ParameterError) as e:
        load_system("dgx-b200")
    for name in SYSTEMS:
        assert name in str(e.value)
    with pytest.raises(ParameterError, match="gpt3-13b"):
        load_llm("gpt-4")


def test_missing_file(tmp_path):
    with pytest.raises(PresetError, match="file not found"):
        load_system(str(tmp_path / "none.yaml"))


@pytest.mark.parametrize(
    "text, where, rule",
    [
        ("gpus_per_node: [1,\n", "2:1", "not valid YAML"),  # FILE:LINE:COLUMN
        ("- a\n- b\n", "", "mapping"),
        (GOOD_SYSTEM.replace("gpus_per_node: 2\n", ""), "gpus_per_node", "missing key"),
        (GOOD_SYSTEM.replace("bandwidth_GBps: 10}", "bandwidth: 10}"), "inter_node.bandwidth", "no unit"),
        (GOOD_SYSTEM.replace("latency_us: 10,", "latency_ms: 10,"), "inter_node.latency_ms", "unknown unit"),
        (GOOD_SYSTEM.replace("memory_GiB: 16", "memory: 16"), "device.memory", "no unit"),
        (GOOD_SYSTEM.replace("bandwidth_GBps: 10}", "bandwidth_GBps: 0}"), "inter_node.bandwidth_GBps", "> 0"),
        (GOOD_SYSTEM.replace("bandwidth_GBps: 100", "bandwidth_GBps: -5"), "intra_node.bandwidth_GBps", "> 0"),
        (GOOD_SYSTEM.replace("latency_us: 1,", "latency_us: fast,"), "intra_node.latency_us", "number"),
        (GOOD_SYSTEM + "colour: red\n", "colour", "unknown key"),
        (
            GOOD_SYSTEM.replace("bandwidth_GBps: 100}", "bandwidth_GBps: 100, topology: ring}"),
            "intra_node.topology",
            "one of switch, mesh",
        ),
    ],
)
def test_bad_system_files_name_file_and_key(tmp_path, text, where, rule):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(PresetError) as e:
        load_system(str(f))
    assert isinstance(e.value, ScheduleFileError)
    assert e.value.path == str(f)
    assert e.value.location.startswith(where)
    assert rule in e.value.rule


def test_good_custom_system_file(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(GOOD_SYSTEM)
    s = load_system(str(f))
    assert s.name == "mine" and s.memory_bytes == 16 * GiB and s.transfer_time(1, 2, 1e9) == pytest.approx(0.10001)


def test_intra_tier_required_with_several_gpus(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text(GOOD_SYSTEM.replace("intra_node: {latency_us: 1, bandwidth_GBps: 100}\n", ""))
    with pytest.raises(PresetError, match="intra_node"):
        load_system(str(f))


def test_bad_llm_file(tmp_path):
    text = read_preset("llms", "gpt3-1.3b")[1]
    f = tmp_path / "m.yaml"
    f.write_text("layers: 2\nhidden_size: 64\nattention_heads: 5\nffn_hidden_size: 256\nvocab_size: 100\nseq_len: 16\n")
    with pytest.raises(PresetError, match="hidden_size"):
        load_llm(str(f))
    f.write_text("layers: 0\nhidden_size: 64\nattention_heads: 4\nffn_hidden_size: 256\nvocab_size: 100\nseq_len: 16\n")
    with pytest.raises(PresetError, match="layers"):
        load_llm(str(f))
    assert text["layers"] == 24
    with pytest.raises(PresetError, match="true or false"):
        parse_preset(
            "llms",
            "layers: 2\nhidden_size: 64\nattention_heads: 4\nffn_hidden_size: 256\n"
            "vocab_size: 100\nseq_len: 16\ngated_mlp: 3\n",
        )


# ---- CLI argument resolution ------------------------------------------------------------------


def ns(**kw):
    base = dict(
        system=None,
        model=None,
        costs=None,
        comm_delay=None,
        mfu=0.4,
        microbatch_size=1,
        seq_len=None,
        layers_per_stage=None,
        tp=1,
        recompute=False,
        flash_attention=False,
        ranks_per_node=None,
    )
    base.update(kw)
    return argparse.Namespace(**base)


def test_args_abstract_and_preset_modes():
    s = build("1f1b", p=4, m=4)
    c, comm = costs_and_comm_from_args(ns(), s)
    assert c.time_unit == "units" and comm.transfer_time(0, 1, 1e9) == 0.0
    c, comm = costs_and_comm_from_args(ns(costs="F=1,B=2", comm_delay=0.25), s)
    assert c.duration["F"] == (1.0,) * 4 and comm.transfer_time(0, 1, 0) == 0.25
    ctx = preset_context_from_args(ns(system="dgx-a100", model="gpt3-13b", seq_len=1024, microbatch_size=2), s)
    assert ctx.preset_mode and ctx.costs.time_unit == "s" and ctx.costs.memory_unit == "bytes"
    assert ctx.costs.boundary_bytes[0] == 2 * 1024 * 5120 * 2
    assert "dgx-a100" in ctx.costs.label


@pytest.mark.parametrize(
    "kw",
    [
        dict(system="dgx-h100"),
        dict(model="gpt3-13b"),
        dict(system="dgx-h100", model="gpt3-13b", costs="F=1"),
        dict(system="dgx-h100", model="gpt3-13b", comm_delay=0.5),
        dict(system="dgx-h100", model="gpt3-13b", mfu=1.5),
        dict(system="dgx-h100", model="gpt3-13b", layers_per_stage="a,b"),
        dict(comm_delay=-1.0),
    ],
)
def test_args_conflicts_are_rejected(kw):
    with pytest.raises(PPVerifyError):
        preset_context_from_args(ns(**kw), build("1f1b", p=4, m=4))


def test_llm_dataclass_without_preset():
    m = LLM("tiny", 2, 64, 4, 256, 100, 16)
    assert m.total_params() == 2 * m.layer_params() + 100 * 64 + 2 * 64
