"""The ``async`` engine: invariants against the slot table and closed forms, hand-derived async timings,
monotonicity in latency and bandwidth, collectives, memory, deadlock, and the ``simulate`` CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag_arrays
from ppverify.core.errors import DeadlockError, ParameterError
from ppverify.core.ops import Op
from ppverify.core.placement import linear
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.engines.simulate import memory_report, simulate_async
from ppverify.schedules import build, families
from ppverify.systems.llm import Training, llm_cost_model, load_llm, stage_costs
from ppverify.systems.replica_sync import replica_groups
from ppverify.systems.system import GiB, LinkTier, System, load_system


def abstract(s, **kw):
    return CostModel.abstract(s.placement, **kw)


def grid_schedules(buildable, ps=(2, 4, 6), ms=(1, 2, 4, 8)):
    """Every registered family (other engineers add families: enumerate, never list) over a grid;
    parameter combinations a family rejects are skipped (``buildable``, the conftest fixture)."""
    for fam in families():
        for _p, _m, s in buildable(fam.name, [(p, m) for p in ps for m in ms]):
            yield fam.name, s


# ---- invariants -------------------------------------------------------------------------------


def test_async_without_comm_equals_slot_table_for_every_family(buildable):
    checked = set()
    for name, s in grid_schedules(buildable):
        has_idle = bool(build_dag_arrays(s).idle_before.any())
        for costs in (CostModel.unit(s.placement), abstract(s, F=1, B=2)):
            slot = run(s, costs, semantics="slot")
            asy = run(s, costs, FixedDelay(0.0), semantics="async")
            if has_idle:
                # explicit idle slots are table ticks; the async engine does not wait for them
                assert asy.makespan <= slot.makespan + 1e-9
            else:
                np.testing.assert_allclose(asy.start, slot.start, atol=1e-9, err_msg=f"{name} p={s.p} m={s.m}")
                np.testing.assert_allclose(asy.end, slot.end, atol=1e-9)
        checked.add(name)
    # every family builds somewhere on the grid, so every family is checked
    assert checked == {f.name for f in families()}


@pytest.mark.parametrize("p", [2, 3, 4, 8])
@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("c", [0.0, 0.3, 1.0, 2.5])
def test_gpipe_async_closed_form(p, m, c):
    # uniform stages: (m + p - 1)(tF + tB) + 2 (p - 1) c
    tF, tB = 1.0, 2.0
    s = build("gpipe", p=p, m=m)
    tl = simulate_async(s, abstract(s, F=tF, B=tB), FixedDelay(c))
    assert tl.makespan == pytest.approx((m + p - 1) * (tF + tB) + 2 * (p - 1) * c)


@pytest.mark.parametrize("c, gpipe, ofob", [(0, 21, 21), (0.25, 22.5, 23.5), (0.5, 24, 26), (1, 27, 31)])
def test_reference_section_4_numbers(c, gpipe, ofob):
    # by hand: p=4, tF=1, tB=2, m=4; GPipe pays 2(p-1)c once, 1F1B round trips in its steady state
    for fam, want in (("gpipe", gpipe), ("1f1b", ofob)):
        s = build(fam, p=4, m=4)
        assert run(s, abstract(s, F=1, B=2), FixedDelay(c), semantics="async").makespan == pytest.approx(want)


def test_slot_charges_comm_per_column_and_ties():
    # under slot with comm per column, GPipe and 1F1B tie at (m+p-1)(tF+tB+2c)
    for fam in ("gpipe", "1f1b"):
        s = build(fam, p=4, m=4)
        assert run(s, abstract(s, F=1, B=2), FixedDelay(0.5), semantics="slot", charge_comm=True).makespan == 28


def toy_system(latency_us: float, bandwidth_GBps: float, gpus_per_node: int = 2) -> System:
    return System(
        "toy",
        "gpu",
        100e12,
        80 * GiB,
        gpus_per_node,
        1,
        LinkTier("fast", 1e-6, 300e9),
        LinkTier("net", latency_us / 1e6, bandwidth_GBps * 1e9),
    )


@pytest.mark.parametrize("fam", ["gpipe", "1f1b", "chimera"])
def test_makespan_monotone_in_latency_and_bandwidth(fam):
    s = build(fam, p=4, m=8)
    costs = llm_cost_model("gpt3-1.3b", 100e12, s.num_stages, Training(mfu=0.5))
    lat = [run(s, costs, toy_system(x, 25), semantics="async").makespan for x in (0, 10, 100, 1000, 10000)]
    assert all(a <= b + 1e-12 for a, b in zip(lat, lat[1:]))
    assert lat[-1] > lat[0]
    bw = [run(s, costs, toy_system(10, x), semantics="async").makespan for x in (1, 5, 25, 100, 1000)]
    assert all(a >= b - 1e-12 for a, b in zip(bw, bw[1:]))
    assert bw[0] > bw[-1]


def test_ideal_system_equals_compute_only_timing():
    s = build("1f1b", p=8, m=16)
    sysm = load_system("ideal")
    costs = llm_cost_model("gpt3-13b", sysm.peak_flops, 8)
    ideal = run(s, costs, sysm, semantics="async")
    slot = run(s, costs, semantics="async")
    assert ideal.makespan == pytest.approx(slot.makespan)
    assert run(s, costs, load_system("dgx-h100"), semantics="async").makespan > ideal.makespan
    assert max(ideal.info.exposed_comm) == 0


def test_transfers_recorded_with_bytes():
    s = build("1f1b", p=4, m=5)
    sysm = load_system("dgx-h100").with_ranks_per_node(2)
    sc = stage_costs(load_llm("gpt3-1.3b"), sysm.peak_flops, 4, Training())
    tl = run(s, sc.cost_model(), sysm, semantics="async")
    tr = tl.transfers
    # (p-1) boundaries, one activation and one gradient per microbatch each
    assert tr.kind.count("activation") == 3 * 5 and tr.kind.count("gradient") == 3 * 5
    assert set(tr.nbytes) == {2048 * 2048 * 2.0}
    for n in range(len(tr)):
        want = sysm.transfer_time(tr.src_dev[n], tr.dst_dev[n], tr.nbytes[n])
        assert tr.end[n] - tr.start[n] == pytest.approx(want)
        assert tr.start[n] == pytest.approx(tl.end[tr.src_op[n]])  # sent when the producer ends
        assert tl.start[tr.dst_op[n]] >= tr.end[n] - 1e-15  # consumed after arrival
    # hop 1 -> 2 crosses nodes (2 ranks per node): InfiniBand, slower than NVLink
    hop12 = [tr.end[n] - tr.start[n] for n in range(len(tr)) if (tr.src_dev[n], tr.dst_dev[n]) == (1, 2)]
    hop01 = [tr.end[n] - tr.start[n] for n in range(len(tr)) if (tr.src_dev[n], tr.dst_dev[n]) == (0, 1)]
    assert hop12[0] > 5 * hop01[0]
    frame = tl.to_frame()
    assert (frame["type"] == "transfer").sum() == 30 and (frame["type"] == "op").sum() == 40


def test_exposed_comm_by_hand():
    # GPipe p=4, F=1, B=2, c=0.5: every device waits 0.5 once per direction it receives in
    s = build("gpipe", p=4, m=4)
    tl = simulate_async(s, abstract(s, F=1, B=2), FixedDelay(0.5))
    assert tl.info.exposed_comm == [0.5, 1.0, 1.0, 0.5]


# ---- collectives ------------------------------------------------------------------------------


def test_chimera_replica_groups_and_reference_makespan():
    s = build("chimera", p=4, m=4)
    assert replica_groups(s) == [(0, (0, 3)), (1, (1, 2)), (2, (1, 2)), (3, (0, 3))]
    # Li & Hoefler SC'21 (arXiv 2107.06925): Chimera p=4, m=4, tB = 2 tF -> 16 units
    assert run(s, abstract(s, F=1, B=2), semantics="async").makespan == 16


def test_chimera_allreduce_eager_and_after_flush_by_hand():
    s = build("chimera", p=4, m=4)
    c = 0.5
    costs = abstract(s, F=1, B=2)
    base = run(s, costs, FixedDelay(c), semantics="async", sync="none")
    eager = run(s, costs, FixedDelay(c), semantics="async", sync="eager")
    flush = run(s, costs, FixedDelay(c), semantics="async", sync="after-flush")
    np.testing.assert_allclose(base.end, eager.end)  # collectives never delay compute
    tr = eager.transfers
    ar = [n for n in range(len(tr)) if tr.kind[n] == "allreduce"]
    assert len(ar) == 8  # 4 stages x 2 replicas
    for n in ar:
        # a pair all-reduce under a fixed delay c: 2(n-1) steps of c = 2c
        assert tr.end[n] - tr.start[n] == pytest.approx(2 * c)
    # eager: stage s's all-reduce starts when the last backward of stage s ends on both replicas
    for stage, devs in replica_groups(s):
        last = max(eager.end[i] for i, op in enumerate(eager.ops) if op.stage == stage and op.kind == "B")
        starts = {tr.start[n] for n in ar if tr.src_dev[n] in devs and abs(tr.start[n] - last) < 1e-9}
        assert starts == {last}
    assert eager.makespan == pytest.approx(max(base.makespan, max(tr.end[n] for n in ar)))
    # after-flush starts once both replica devices have finished everything: never earlier
    assert flush.makespan >= eager.makespan
    dev_end = [max(base.end[base.device == d]) for d in range(4)]
    assert flush.makespan == pytest.approx(max(max(dev_end[0], dev_end[3]), max(dev_end[1], dev_end[2])) + 2 * c)


def test_chimera_allreduce_bytes_from_presets():
    s = build("chimera", p=4, m=4)
    sysm = load_system("dgx-h100")
    sc = stage_costs(load_llm("gpt3-1.3b"), sysm.peak_flops, 4, Training())
    tl = run(s, sc.cost_model(), sysm, semantics="async")
    tr = tl.transfers
    ar = [n for n in range(len(tr)) if tr.kind[n] == "allreduce" and tr.src_dev[n] == 0]
    # stage 0 replicas on devices 0 and 3 (same node): 2 alpha + grad bytes / beta, grads in bf16
    n0 = ar[0]
    assert tr.nbytes[n0] == pytest.approx(sc.params[0] * 2.0)
    assert tr.end[n0] - tr.start[n0] == pytest.approx(2 * 5e-6 + tr.nbytes[n0] / 450e9)


def test_dp_allreduce_ends_the_step():
    s = build("1f1b", p=2, m=4)
    sysm = load_system("ib-ndr-cluster")
    sc = stage_costs(load_llm("gpt3-1.3b"), sysm.peak_flops, 2, Training())
    base = run(s, sc.cost_model(), sysm, semantics="async")
    dp = run(s, sc.cost_model(), sysm, semantics="async", dp_allreduce=4)
    ends = []
    for d in range(2):
        grad = sc.params[d] * 2.0
        t = 6 * 10e-6 + 1.5 * grad / 50e9  # ring over 4: 2(n-1) alpha + 2(n-1)/n bytes / beta
        ends.append(max(base.end[base.device == d]) + t)
    assert dp.makespan == pytest.approx(max(ends))
    assert dp.info.exposed_comm[0] >= ends[0] - max(base.end[base.device == 0]) - 1e-12


def test_bad_options():
    s = build("1f1b", p=2, m=2)
    with pytest.raises(ParameterError, match="sync"):
        simulate_async(s, abstract(s), FixedDelay(0), sync="lazy")
    with pytest.raises(ParameterError, match="dp-allreduce"):
        simulate_async(s, abstract(s), FixedDelay(0), dp_allreduce=-1)
    with pytest.raises(ParameterError, match="unknown option"):
        simulate_async(s, abstract(s), FixedDelay(0), colour="red")
    with pytest.raises(ParameterError, match="stages"):
        simulate_async(s, llm_cost_model("gpt3-1.3b", 1e15, 3), FixedDelay(0))


# ---- memory, deadlock -------------------------------------------------------------------------


def test_memory_peak_and_oom():
    s = build("1f1b", p=4, m=8)
    sysm = load_system("dgx-h100")
    sc = stage_costs(load_llm("gpt3-175b"), sysm.peak_flops, 4, Training())
    tl = run(s, sc.cost_model(), sysm, semantics="async")
    rep = memory_report(tl)
    # 175B x 16 bytes over 4 stages is ~650 GiB per device: every device is out of memory
    assert rep["oom"] == [0, 1, 2, 3] and rep["capacity"] == 80 * GiB
    # device 1 holds min(p - d, m) = 3 in-flight microbatches of activations at its peak
    assert rep["peak"][1] == pytest.approx(sc.weight_bytes[1] + 3 * sc.activation[1])
    small = run(s, llm_cost_model("gpt3-1.3b", sysm.peak_flops, 4), sysm, semantics="async")
    assert memory_report(small)["oom"] == []


def test_replicated_weights_count_twice():
    s = build("chimera", p=4, m=4)
    sysm = load_system("dgx-h100")
    sc = stage_costs(load_llm("gpt3-1.3b"), sysm.peak_flops, 4, Training())
    tl = run(s, sc.cost_model(), sysm, semantics="async")
    assert memory_report(tl)["weights"][0] == pytest.approx(sc.weight_bytes[0] + sc.weight_bytes[3])


def test_deadlock_reported_with_waiting_devices():
    s = Schedule(linear(2), 1, ((Op("F", 0, 0), Op("B", 0, 0)), (Op("B", 1, 0), Op("F", 1, 0))), (0,))
    with pytest.raises(DeadlockError) as exc:
        simulate_async(s, CostModel.unit(s.placement), FixedDelay(0.5))
    assert [w[0] for w in exc.value.waits] == [0, 1]
    assert exc.value.waits[0][1] == "0B0" and "1B0" in exc.value.waits[0][2]


# ---- CLI --------------------------------------------------------------------------------------


def test_cli_simulate_preset_text(capsys):
    assert main(["simulate", "1f1b", "-p", "8", "-m", "16", "--system", "dgx-h100", "--model", "gpt3-13b"]) == 0
    out = capsys.readouterr().out
    for word in ("makespan", "bubble ratio", "exposed comm", "peak memory", "dev 7", "dgx-h100"):
        assert word in out


def test_cli_simulate_json_matches_engine(capsys):
    code = main(["simulate", "gpipe", "-p", "4", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "0.5", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["makespan"] == 24 and data["semantics"] == "async"
    assert data["transfers"] == {"activation": 12, "gradient": 12}
    assert data["exposed_comm"] == [0.5, 1.0, 1.0, 0.5]


def test_cli_oom_exit_code_and_errors(capsys):
    assert main(["simulate", "1f1b", "-p", "4", "--system", "dgx-h100", "--model", "gpt3-175b", "--no-table"]) == 1
    assert "out of memory" in capsys.readouterr().out
    assert main(["simulate", "1f1b", "-p", "4", "--system", "nosuch", "--model", "gpt3-13b"]) == 2
    assert "available: " in capsys.readouterr().err
    assert main(["simulate", "1f1b", "-p", "4", "--semantics", "slot", "--sync", "after-flush"]) == 2
    assert (
        main(
            [
                "simulate",
                "chimera",
                "-p",
                "4",
                "--sync",
                "after-flush",
                "--dp-allreduce",
                "--json",
                "--costs",
                "F=1,B=2",
                "--comm-delay",
                "0.1",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["transfers"]["dp-allreduce"] == 4 and data["sync"] == "after-flush"


def test_cli_frame(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert (
        main(["simulate", "1f1b", "-p", "2", "-m", "2", "--comm-delay", "0.5", "--frame", str(out), "--no-table"]) == 0
    )
    import pandas as pd

    df = pd.read_csv(out)
    assert len(df) == 8 + 4 and set(df["type"]) == {"op", "transfer"}


def test_cli_deadlocked_file_is_reported(tmp_path, capsys):
    f = tmp_path / "dead.csv"
    f.write_text("0F0,0B0\n1B0,1F0\n")
    for sem in ("async", "contention", "slot"):
        assert main(["simulate", str(f), "--semantics", sem]) == 2
        err = capsys.readouterr().err
        assert "deadlock" in err and "device 0 waits in 0B0" in err and "device 1 waits in 1B0" in err


def test_cli_slot_with_presets_charts_instead_of_a_huge_table(capsys):
    assert (
        main(
            [
                "simulate",
                "1f1b",
                "-p",
                "4",
                "-m",
                "4",
                "--system",
                "dgx-h100",
                "--model",
                "gpt3-1.3b",
                "--semantics",
                "slot",
                "--width",
                "40",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "dev 3" in out and "not rendered" not in out


from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=40, deadline=None)
@given(
    fam=st.sampled_from(["gpipe", "1f1b", "interleaved-1f1b", "chimera"]),
    p=st.sampled_from([2, 4]),
    k=st.integers(1, 3),
    lat=st.lists(st.floats(0, 2), min_size=2, max_size=2),
)
def test_makespan_monotone_in_fixed_delay(fam, p, k, lat):
    s = build(fam, p=p, m=p * k)
    costs = abstract(s, F=1, B=2)
    lo, hi = sorted(lat)
    a = run(s, costs, FixedDelay(lo), semantics="async")
    b = run(s, costs, FixedDelay(hi), semantics="async")
    assert a.makespan <= b.makespan + 1e-9
    assert (a.start <= b.start + 1e-9).all()


@pytest.mark.parametrize("c", [0.1, 0.5, 2.0])
def test_async_never_slower_than_slot_with_comm_per_column(c, buildable):
    # cross-check of two abstractions: charging every op its slowest transfer (slot) is an upper
    # bound of overlapping transfers with compute (async), for every family on the grid
    for name, s in grid_schedules(buildable, ps=(2, 4), ms=(2, 4, 8)):
        costs = abstract(s, F=1, B=2)
        a = run(s, costs, FixedDelay(c), semantics="async", sync="none").makespan
        sl = run(s, costs, FixedDelay(c), semantics="slot", charge_comm=True).makespan
        assert a <= sl + 1e-9, f"{name} p={s.p} m={s.m}"


def test_gpipe_closed_form_on_a_preset_system():
    # uniform stages in seconds, one H100 per node on IB NDR: c = 10 us + bytes / 50 GB/s
    p, m, tF, tB, nbytes = 4, 6, 2e-3, 4e-3, 16e6
    s = build("gpipe", p=p, m=m)
    costs = CostModel(
        {"F": (tF,) * p, "B": (tB,) * p, "I": (tB / 2,) * p, "W": (tB / 2,) * p},
        (1.0,) * p,
        (0.0,) * p,
        (nbytes,) * (p - 1),
        (0.0,) * p,
        time_unit="s",
        memory_unit="bytes",
    )
    c = 10e-6 + nbytes / 50e9
    tl = run(s, costs, load_system("ib-ndr-cluster"), semantics="async")
    assert tl.makespan == pytest.approx((m + p - 1) * (tF + tB) + 2 * (p - 1) * c)
    # the same ranks packed 2 per node of a DGX: hops 0-1 and 2-3 on NVLink, 1-2 on InfiniBand
    dgx = load_system("dgx-h100").with_ranks_per_node(2)
    c_nv, c_ib = 5e-6 + nbytes / 450e9, 10e-6 + nbytes / 50e9
    tl2 = run(s, costs, dgx, semantics="async")
    assert tl2.makespan == pytest.approx((m + p - 1) * (tF + tB) + 2 * (2 * c_nv + c_ib))


def test_cli_ranks_per_node(capsys):
    args = ["simulate", "1f1b", "-p", "4", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--json"]
    assert main(args) == 0
    packed = json.loads(capsys.readouterr().out)
    assert main(args + ["--ranks-per-node", "1"]) == 0
    spread = json.loads(capsys.readouterr().out)
    assert spread["makespan"] > packed["makespan"]  # every hop on InfiniBand instead of NVLink
    # one pipeline rank on each 8-GPU node: the line named the ranks as if they were the GPUs
    assert "1 pipeline rank per node of 8 x H100" in spread["system"] and "8 x H100" in packed["system"]


def test_cli_uses_costs_saved_in_a_json_schedule(tmp_path, capsys):
    f = tmp_path / "g.json"
    assert main(["show", "gpipe", "-p", "4", "-m", "4", "--costs", "F=1,B=2", "--save", str(f)]) == 0
    capsys.readouterr()
    assert main(["simulate", str(f), "--comm-delay", "0.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan"] == 24  # (m+p-1)(tF+tB) + 2(p-1)c
    assert main(["simulate", str(f), "--costs", "F=1,B=1", "--json"]) == 0  # --costs wins
    assert json.loads(capsys.readouterr().out)["makespan"] == 14


def test_cli_stage_table(capsys):
    assert (
        main(
            [
                "simulate",
                "1f1b",
                "-p",
                "4",
                "--system",
                "dgx-h100",
                "--model",
                "gpt3-1.3b",
                "--stages",
                "--no-table",
                "--layers-per-stage",
                "9,6,6,3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    rows = [ln.split() for ln in out.splitlines() if ln.strip()[:1].isdigit() and "ms" in ln and "GiB" in ln]
    assert [r[1] for r in rows[:4]] == ["9", "6", "6", "3"]


def test_memory_gib_is_refused_where_it_cannot_mean_bytes(capsys):
    # abstract costs count activations: 1 GiB was read as 1 activation (1F1B p=2 m=2 holds 2 on
    # device 0, so it printed "OOM" and exit 1); inf printed "memory_capacity": Infinity, not JSON
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--memory-GiB", "1"]) == 2
    assert "parameter --memory-GiB=1.0: is a device's capacity in bytes" in capsys.readouterr().err
    presets = ["--system", "dgx-h100", "--model", "gpt3-1.3b"]
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", *presets, "--memory-GiB", "inf"]) == 2
    assert "must be a finite number of GiB > 0" in capsys.readouterr().err
