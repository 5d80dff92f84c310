"""The runtime overhead of a system preset (``runtime:`` section), folded into op durations, seen
alike by every engine, the optimizer and the formulas; values derived by hand."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.overhead import comm_actions, formula_share_costs, system_overhead, with_overhead
from ppverify.core.placement import linear, loop, v_shape
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.systems.presets import PresetError, parse_preset
from ppverify.systems.system import load_system

A, T = 0.1, 0.05  # action and transfer overhead of the hand-check system, seconds

SYSTEM = f"""description: hand-check system (zero-latency links, runtime overhead only)
device: {{name: cpu, peak_TFLOPs: 1, memory_GiB: 1}}
gpus_per_node: 8
intra_node: {{name: loop, latency_us: 0, bandwidth_GBps: 1000}}
inter_node: {{name: x, latency_us: 0, bandwidth_GBps: 1}}
runtime: {{action_overhead_us: {A * 1e6:g}, transfer_overhead_us: {T * 1e6:g}}}
"""


@pytest.fixture()
def system_file(tmp_path):
    f = tmp_path / "hand.yaml"
    f.write_text(SYSTEM)
    return str(f)


def test_comm_actions_by_placement():
    # linear p=4: F of stage 0 only sends, of stage 1 receives and sends, of stage 3 only receives;
    # B the other way round; W posts nothing
    assert [comm_actions(linear(4), "F", s) for s in range(4)] == [1, 2, 2, 1]
    assert [comm_actions(linear(4), "B", s) for s in range(4)] == [1, 2, 2, 1]
    assert [comm_actions(linear(4), "W", s) for s in range(4)] == [0, 0, 0, 0]
    # V on 2 devices (stages 0,1,1,0): the 1 -> 2 boundary stays on device 1
    assert [comm_actions(v_shape(2), "F", s) for s in range(4)] == [1, 1, 1, 1]
    # loop on 2 devices (0,1,0,1): every boundary crosses
    assert [comm_actions(loop(2, 2), "I", s) for s in range(4)] == [1, 2, 2, 1]


def test_overhead_folded_by_hand():
    c = with_overhead(CostModel.abstract(linear(3), F=1, I=1, W=1), linear(3), A, T)
    assert c.duration["F"] == pytest.approx((1 + A + T, 1 + A + 2 * T, 1 + A + T))
    assert c.duration["W"] == pytest.approx((1 + A,) * 3)
    assert c.duration["I"] == pytest.approx((1 + A + T, 1 + A + 2 * T, 1 + A + T))
    # zero overhead: the very same cost model (every existing number unchanged)
    base = CostModel.abstract(linear(3))
    assert with_overhead(base, linear(3)) is base
    assert system_overhead(base, linear(3), load_system("dgx-h100")) is base


def test_shipped_presets_have_zero_overhead():
    # no shipped preset states a runtime overhead, so it defaults to 0 and every number stays
    from pathlib import Path

    import yaml

    files = sorted((Path(__file__).resolve().parents[2] / "models" / "systems").glob("*.yaml"))
    assert files and all("runtime" not in (yaml.safe_load(f.read_text()) or {}) for f in files)
    s = load_system("dgx-h100")
    assert (s.action_overhead_s, s.transfer_overhead_s) == (0.0, 0.0)


def test_preset_runtime_section_is_validated():
    d = parse_preset("systems", SYSTEM)
    assert d["runtime"]["action_overhead_us"] == pytest.approx(A * 1e6)
    with pytest.raises(PresetError, match="runtime.action_overhead_us: must be >= 0"):
        parse_preset("systems", SYSTEM.replace(f"action_overhead_us: {A * 1e6:g}", "action_overhead_us: -1"))
    with pytest.raises(PresetError, match="runtime.overhead: unknown key"):
        parse_preset("systems", SYSTEM.replace("runtime: {", "runtime: {overhead: 1, "))


def test_every_level_sees_the_same_durations(system_file, capsys):
    # gpipe p=2 m=2, F=1, B=2: with no overhead 3F + 3B = 9 (F0 F1 on device 0 then device 1,
    # B0 B1 on device 1 then device 0). Each op gains A and one SEND or RECV (T): 9 + 6(A + T)
    want = 9 + 6 * (A + T)
    for sem in ("async", "contention", "slot"):
        assert (
            main(
                [
                    "simulate",
                    "gpipe",
                    "-p",
                    "2",
                    "-m",
                    "2",
                    "--costs",
                    "F=1,B=2",
                    "--system",
                    system_file,
                    "--semantics",
                    sem,
                    "--json",
                ]
            )
            == 0
        )
        assert json.loads(capsys.readouterr().out)["makespan"] == pytest.approx(want), sem
    # the optimizer with the family's order fixed: the same durations, the same makespan
    assert (
        main(
            [
                "optimize",
                "gpipe",
                "-p",
                "2",
                "-m",
                "2",
                "--costs",
                "F=1,B=2",
                "--system",
                system_file,
                "--evaluate",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["value"] == pytest.approx(want)


def test_formula_gets_the_overhead_through_share_costs():
    # 1F1B's closed form (m + p - 1)(F + B) with F, B per share including the overhead
    from ppverify.compare.evaluate import share_costs
    from ppverify.engines.formulas import one_f_one_b_formula as one_f_one_b

    s = build("1f1b", p=2, m=4)
    c = with_overhead(CostModel.abstract(s.placement, F=1, B=2), s.placement, A, 0.0)
    sc = formula_share_costs(share_costs(c, 2), s)  # B = 2 + A is one action, I + W two
    assert sc == pytest.approx({"F": 1 + A, "B": 2 + A})
    assert one_f_one_b(2, 4, sc).makespan == pytest.approx(5 * (3 + 2 * A))
    assert run(s, c, FixedDelay(0), semantics="async").makespan == pytest.approx(5 * (3 + 2 * A))


def test_system_without_model_needs_costs(system_file, capsys):
    assert main(["simulate", "gpipe", "-p", "2", "-m", "2", "--system", system_file]) == 2
    assert "--system and --model go together" in capsys.readouterr().err
