"""Preset resolution in the core (``ppverify.systems.preset_models``): durations and transfer times worked
out by hand from the model's published shape and the link's numbers, the three modes, the refused
mixes, and the command-line wrapper and compare's configurations resolving through it."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli.presets_args import preset_context_from_args
from ppverify.compare.config import Config
from ppverify.compare.resolve import preset_settings, resolve
from ppverify.core.errors import ParameterError
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings, resolve_presets, settings_from

#: GPT-3 XL (Brown et al. 2020, arXiv 2005.14165, Table 2.1): 24 layers, d_model 2048, context 2048
LAYERS, HIDDEN, SEQ = 24, 2048, 2048


def _link_system(tmp_path, bandwidth_GBps: float, latency_us: float, peak_TFLOPs: float) -> str:
    path = tmp_path / "link.yaml"
    path.write_text(
        "description: one GPU per node, one link\nsource: test\n"
        f"device: {{name: GPU, peak_TFLOPs: {peak_TFLOPs}, memory_GiB: 80}}\n"
        "gpus_per_node: 1\nnics_per_node: 1\n"
        f"inter_node: {{name: link, latency_us: {latency_us}, bandwidth_GBps: {bandwidth_GBps}}}\n"
    )
    return str(path)


def test_preset_durations_and_transfers_by_hand(tmp_path):
    system = _link_system(tmp_path, 25, 10, 1000)
    s = build("1f1b", p=4, m=4)
    ctx = resolve_presets(PresetSettings(system=system, model="gpt3-1.3b", mfu=0.5), s)
    # a middle stage holds 24/4 = 6 layers of 24 b s h^2 + 4 b s^2 h forward FLOPs (b = 1), at
    # 1000 TFLOP/s x MFU 0.5 (Narayanan et al., SC'21)
    flops = 6 * (24 * SEQ * HIDDEN**2 + 4 * SEQ**2 * HIDDEN)
    assert ctx.costs.duration["F"][1] == pytest.approx(flops / (1000e12 * 0.5), rel=1e-12)
    # 1 GB over one 25 GB/s hop with 10 us latency
    assert ctx.comm.transfer_time(0, 1, 1e9) == pytest.approx(10e-6 + 1e9 / 25e9, rel=1e-12)
    assert ctx.preset_mode and ctx.costs.time_unit == "s" and ctx.model.layers == LAYERS


def test_duration_scales_with_one_over_mfu_and_tp(tmp_path):
    system = _link_system(tmp_path, 25, 10, 1000)
    s = build("gpipe", p=2, m=2)
    base = resolve_presets(PresetSettings(system=system, model="gpt3-1.3b", mfu=0.4), s).costs.duration["F"]
    half = resolve_presets(PresetSettings(system=system, model="gpt3-1.3b", mfu=0.2), s).costs.duration["F"]
    tp2 = resolve_presets(PresetSettings(system=system, model="gpt3-1.3b", mfu=0.4, tp=2), s).costs.duration["F"]
    assert half == pytest.approx(tuple(2 * x for x in base), rel=1e-12)
    assert tp2 == pytest.approx(tuple(x / 2 for x in base), rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    f=st.floats(0.01, 100),
    b=st.floats(0.01, 100),
    delay=st.floats(0, 100),
)
def test_abstract_mode_keeps_the_given_numbers(f, b, delay):
    s = build("1f1b", p=3, m=3)
    ctx = resolve_presets(PresetSettings(costs=f"F={f!r},B={b!r}", comm_delay=delay), s)
    assert ctx.costs.duration["F"] == (f,) * 3 and ctx.costs.duration["B"] == (b,) * 3
    assert ctx.comm.transfer_time(0, 2, 1e9) == delay and not ctx.preset_mode


def test_layers_given_as_text_or_counts_are_the_same_split():
    s = build("gpipe", p=2, m=2)
    a = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b", layers_per_stage="20,4"), s)
    b = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b", layers_per_stage=(20, 4)), s)
    assert a.costs == b.costs
    # the first stage (no output head) runs 20 layers here, 4 in the reverse split: 5x the time
    c = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b", layers_per_stage="4,20"), s)
    assert a.costs.duration["F"][0] == pytest.approx(5 * c.costs.duration["F"][0], rel=1e-12)


@pytest.mark.parametrize(
    "kw,name",
    [
        # one of the pair: named by the one typed ("model=None" would name nothing the user wrote),
        # the message says which is missing
        (dict(system="dgx-h100"), "system"),
        (dict(model="gpt3-13b"), "model"),
        (dict(system="dgx-h100", model="gpt3-13b", costs="F=1"), "costs"),
        (dict(system="dgx-h100", model="gpt3-13b", comm_delay=0.5), "comm-delay"),
        (dict(system="dgx-h100", model="gpt3-13b", layers_per_stage="a,b"), "layers-per-stage"),
        (dict(comm_delay=-1.0), "comm-delay"),
        (dict(comm_delay=float("inf")), "comm-delay"),
    ],
)
def test_mixes_and_bad_values_are_refused_naming_the_setting(kw, name):
    with pytest.raises(ParameterError) as err:
        resolve_presets(PresetSettings(**kw), build("1f1b", p=4, m=4))
    assert err.value.name == name


def test_cli_wrapper_and_compare_resolve_through_the_core():
    s = build("interleaved-1f1b", p=4, m=8, v=2)
    ns = argparse.Namespace(system="pcie-gen4", model="gpt3-13b", mfu=0.3, tp=2, json=True)
    core = resolve_presets(PresetSettings(system="pcie-gen4", model="gpt3-13b", mfu=0.3, tp=2), s)
    assert preset_context_from_args(ns, s).costs == core.costs
    cfg = Config(4, 8, "pcie-gen4", "gpt3-13b", options=(("mfu", 0.3), ("tp", 2), ("not_a_setting", 1)))
    assert preset_settings(cfg) == PresetSettings(system="pcie-gen4", model="gpt3-13b", mfu=0.3, tp=2)
    assert resolve(cfg, s).costs == core.costs


def test_settings_from_treats_absent_as_not_given():
    st_ = settings_from({"system": "dgx-h100", "model": "gpt3-1.3b", "extra": 1})
    assert (st_.mfu, st_.microbatch_size, st_.tp, st_.recompute) == (None, None, None, False)
    s = build("gpipe", p=2, m=2)
    # None falls back to the same defaults as the dataclass' own
    assert resolve_presets(st_, s).costs == resolve_presets(PresetSettings("dgx-h100", "gpt3-1.3b"), s).costs


@pytest.mark.parametrize(
    "extra",
    [
        ["--mfu", "0.5"],
        ["--microbatch-size", "2"],
        ["--seq-len", "1024"],
        ["--tp", "2"],
        ["--recompute"],
        ["--flash-attention"],
        ["--layers-per-stage", "1,1,1,1"],
        ["--ranks-per-node", "2"],
    ],
)
def test_a_model_option_without_presets_is_refused(capsys, extra):
    # abstract --costs are taken as given: these changed nothing and were silently ignored
    from ppverify.cli import main

    # (verify reads costs only for a claim or a cap: --costs alone is refused before the model option)
    for command in (["simulate"], ["verify", "--memory-cap", "4"]):
        assert main([*command, "1f1b", "-p", "4", "--costs", "F=1,B=2", *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"parameter {extra[0]}=" in err and "leave it out" in err


def test_a_calibrated_system_with_costs_refuses_model_options_but_takes_ranks_per_node(capsys):
    from pathlib import Path

    from ppverify.cli import main

    preset = str(Path(__file__).resolve().parents[2] / "examples" / "systems" / "calibrated-2core.yaml")
    base = ["simulate", "1f1b", "-p", "4", "--costs", "F=0.01,B=0.02", "--system", preset]
    assert main([*base, "--tp", "2"]) == 2
    assert "parameter --tp=2" in capsys.readouterr().err
    assert main([*base, "--ranks-per-node", "2"]) == 0


def test_a_model_option_beside_a_file_says_its_stored_costs_are_taken(capsys, tmp_path):
    # a saved file holds its own costs (seconds, from presets here): --mfu would change nothing,
    # and the reason is not "abstract --costs", which were never typed
    from ppverify.cli import main

    saved = tmp_path / "pre.json"
    argv = ["optimize", "1f1b", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main([*argv, "--evaluate", "--no-chart", "--save", str(saved)]) == 0
    capsys.readouterr()
    assert main(["simulate", str(saved), "--mfu", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "a file's stored costs" in err and "--costs" not in err.split("parameter --mfu=0.1:", 1)[1]
