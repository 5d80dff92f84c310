"""Memory units in ``optimize``'s words (bug hunt of memory units across commands): an
INFEASIBLE reason and an ``--evaluate`` breach count as ``--memory-cap`` does (activations of a
device's share, GiB with presets) with digits that tell the amounts apart; a stage of 0 layers
constrains nothing (it divided by zero); ``layers=L`` is documented per stage; ``--gap-limit``'s
default names the work limit. Expected values derived by hand in the comments."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear
from ppverify.optimize.problem import Problem, instance
from ppverify.optimize.solve import optimize
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings, resolve_presets

#: a hand schedule on the custom placement 0,1,1 (device 1 holds stages 1 and 2), 2 microbatches
UNEVEN = json.loads((Path(__file__).parents[1] / "data" / "uneven-0-1-1.json").read_text())


def _status(capsys, argv: list[str], code: int) -> str:
    capsys.readouterr()
    assert main(argv) == code
    out = capsys.readouterr().out
    return next(ln for ln in out.splitlines() if ln.startswith("status"))


def test_infeasible_reason_counts_activations_not_the_solver_unit(tmp_path, capsys):
    path = tmp_path / "uneven.json"
    path.write_text(json.dumps(UNEVEN))
    # by hand: 3 stages on p = 2, each holds p/S = 2/3 of the cost model's unit; one activation is
    # the largest device's sum, device 1's two stages, 4/3. Cap 0.75 activations = 1 unit < 4/3,
    # which device 1 holds at once (its forward reaches stage 2 before stage 1's backward): 1
    # activation of 0.75. It printed "memory cap 1 ... (1.33333: stages 1, 2)".
    line = _status(capsys, ["optimize", str(path), "--memory-cap", "0.75", "--work-limit", "1", "--no-chart"], 1)
    assert "memory cap 0.75 activations is below one microbatch's activations on device 1 " in line
    assert "(1 activation: stages 1, 2)" in line


def test_infeasible_reason_with_presets_is_in_gib(capsys):
    # by hand: ZB-V at p = 2 puts stages 0 and 3 on device 0; one activation is that device's two
    # stages of one microbatch (the logits on stage 3), and cap 0.9 of it is below the whole; both
    # print in GiB at 3 significant digits (already apart), never as raw bytes (5.53456e+09)
    s = build("zbv", p=2, m=4)
    acts = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s).costs.activation
    need = acts[0] + acts[3]
    argv = ["optimize", "zbv", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    line = _status(capsys, [*argv, "--memory-cap", "0.9", "--work-limit", "1", "--no-chart"], 1)
    assert f"memory cap {0.9 * need / 2**30:.3g} GiB is below" in line
    assert f"({need / 2**30:.3g} GiB: stages 0, 3)" in line
    assert "e+09" not in line


def test_evaluate_breach_tells_the_peak_and_the_cap_apart(capsys):
    # by hand: interleaved 1F1B, v = 3, p = 2: device 0 runs (v-1)p + 2(p-1) = 6 warm-up forwards
    # and holds a 7th at its first steady forward: 7 stage activations of 1/3 share = 7/3 =
    # 2.333333333...; the cap 6.9999999MF is 2.33333330. docs/memory.md: the fewest digits that
    # read back apart: 9 significant digits (2.33333333 against 2.3333333; at 8 both 2.3333333)
    argv = ["optimize", "interleaved-1f1b", "--v", "3", "-p", "2", "-m", "4", "--evaluate"]
    line = _status(capsys, [*argv, "--memory-cap", "6.9999999MF", "--work-limit", "0.5", "--no-chart"], 1)
    assert line.endswith("device 0 holds 2.33333333 activations at its peak, over the cap 2.3333333 activations)")


def test_a_stage_of_no_layers_constrains_no_memory():
    # by hand: linear p = 2, F = 1, B = 2 per stage, stage 0 holds no activation, cap 1 activation
    # (stage 1's one). Device 1 holds one activation at a time: F, B, F, B ... back to back, 4 x 3
    # = 12, after 0F0 (1) and before the last 0B (2): 1 + 12 + 2 = 15, which its work forces
    # anyway. It raised ZeroDivisionError in the memory-window bound (cap // 0).
    pl = linear(2)
    costs = dataclasses.replace(CostModel.abstract(pl, F=1, B=2), activation=(0.0, 1.0))
    pr = Problem(pl, 4, costs, split=False, memory_cap=1.0)
    assert instance(pr).cap is not None
    result = optimize(pr, workers=1, work_limit=1)
    assert result.status == "OPTIMAL" and result.objective == pytest.approx(15)


@pytest.mark.parametrize(
    "argv",
    [
        ["--placement", "linear", "--layers-per-stage", "0,24", "--memory-cap", "40GiB"],
        # V with its middle stages empty: the periodic starts placed an op before its input (KeyError)
        ["--placement", "v", "--layers-per-stage", "12,0,0,12", "--memory-cap", "1"],
    ],
)
def test_zero_layer_stages_run_instead_of_an_internal_error(capsys, argv):
    base = ["optimize", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--work-limit", "1"]
    assert main([*base, *argv, "--no-chart"]) == 0
    io = capsys.readouterr()
    assert "internal error" not in io.err and "status     OPTIMAL" in io.out


def test_linear_zero_layer_stage_makespan_is_the_busy_device_and_two_transfers(capsys):
    # by hand: stage 0 has 0 layers (F = B = 0), so device 1 runs all 4 (F + B) back to back; the
    # step adds mb 0's activation sent to it and the last gradient sent back: 4(F1 + B1) + 2 t
    s = build("1f1b", p=2, m=4)
    ctx = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b", layers_per_stage="0,24"), s)
    d = ctx.costs.duration
    t = ctx.comm.transfer_time(0, 1, ctx.costs.boundary_bytes[0])
    argv = ["optimize", "--placement", "linear", "-p", "2", "-m", "4", "--system", "dgx-h100"]
    argv += ["--model", "gpt3-1.3b", "--layers-per-stage", "0,24", "--memory-cap", "40GiB", "--work-limit", "1"]
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # durations are rounded to the 1e-7 s tick (not exact with presets): a few ticks either way
    assert out["value"] == pytest.approx(4 * (d["F"][1] + d["B"][1]) + 2 * t, abs=2e-6)


def test_design_with_a_zero_layer_stage_runs(capsys):
    argv = ["design", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main([*argv, "--placements", "linear", "--layers-per-stage", "0,24"]) == 0
    assert "internal error" not in capsys.readouterr().err


def test_help_says_layers_count_one_stage_and_the_gap_limit_default_is_the_work_limit(capsys):
    main(["optimize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "layers=L counts the layers of ONE STAGE" in text
    assert "search until --work-limit" in text and "search to the time limit" not in text


def test_layers_per_stage_gives_v_placements_half_the_activations(capsys):
    # by hand (docs/memory.md): layers=6 at the default h=2304, a=24, s=1024 is M_F = 6 x 1024 x
    # (34h + 5as) = 6 x 1024 x 201216 = 1236271104 bytes per stage; 10GiB is 10737418240 / that
    # = 8.68533 stage activations: 8.68533 activations on 1F1B (one stage per device), half on ZB-V
    mf = 6 * 1024 * (34 * 2304 + 5 * 24 * 1024)
    caps = []
    for fam in ("1f1b", "zbv"):
        argv = ["optimize", fam, "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1"]
        argv += ["--memory-model", "zero-bubble:layers=6", "--memory-cap", "10GiB", "--work-limit", "0.3", "--json"]
        capsys.readouterr()
        assert main(argv) in (0, 2)
        caps.append(json.loads(capsys.readouterr().out)["memory_cap_value"])
    assert caps[0] == pytest.approx(10 * 2**30 / mf) and caps[1] == pytest.approx(10 * 2**30 / mf / 2)
