"""Chrome/Perfetto trace structure: microsecond times, one process per device, separate compute
and per-direction communication tracks, flow events from send to receive, a memory counter."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from ppverify.cli import main
from ppverify.comm import FixedDelay
from ppverify.costs import CostModel
from ppverify.engines import run
from ppverify.errors import ScheduleFileError
from ppverify.llm import llm_cost_model
from ppverify.schedules import build
from ppverify.system import load_system
from ppverify.trace import chrome_trace, write_trace


@pytest.fixture(scope="module")
def preset_trace():
    s = build("1f1b", p=4, m=4)
    sysm = load_system("dgx-h100")
    costs = llm_cost_model("gpt3-1.3b", sysm.peak_flops, 4)
    tl = run(s, costs, sysm, semantics="async")
    return tl, chrome_trace(tl)


def by_ph(trace, ph):
    return [e for e in trace["traceEvents"] if e["ph"] == ph]


def test_processes_and_tracks(preset_trace):
    tl, tr = preset_trace
    meta = by_ph(tr, "M")
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert procs == {d: f"device {d}" for d in range(4)}
    threads = defaultdict(dict)
    for e in meta:
        if e["name"] == "thread_name":
            threads[e["pid"]][e["tid"]] = e["args"]["name"]
    assert all(threads[d][0] == "compute" for d in range(4))
    # one track per communication direction: inner devices send both ways
    assert set(threads[1].values()) == {"compute", "send -> device 0", "send -> device 2"}
    assert set(threads[0].values()) == {"compute", "send -> device 1"}
    assert set(threads[3].values()) == {"compute", "send -> device 2"}


def test_op_slices_in_microseconds(preset_trace):
    tl, tr = preset_trace
    ops = [e for e in by_ph(tr, "X") if e["tid"] == 0]
    assert len(ops) == len(tl.ops)
    for e, i in zip(ops, range(len(tl.ops))):
        assert e["name"] == str(tl.ops[i]) and e["pid"] == int(tl.device[i])
        assert e["ts"] == pytest.approx(tl.start[i] * 1e6)
        assert e["dur"] == pytest.approx((tl.end[i] - tl.start[i]) * 1e6)
    # a 1.3B stage forward of 6 layers at 40% of 989 TFLOP/s is a few milliseconds
    assert 1000 < ops[0]["dur"] < 10000
    assert tr["otherData"]["us_per_time_unit"] == 1e6


def test_transfer_slices_and_flows(preset_trace):
    tl, tr = preset_trace
    sends = [e for e in by_ph(tr, "X") if e["tid"] != 0]
    assert len(sends) == len(tl.transfers) == 2 * 3 * 4
    # NVLink 4: 5 us + 8.39 MB / 450 GB/s = 23.6 us
    assert all(e["dur"] == pytest.approx(5 + 2048 * 2048 * 2 / 450e9 * 1e6) for e in sends)
    starts = {e["id"]: e for e in by_ph(tr, "s")}
    ends = {e["id"]: e for e in by_ph(tr, "f")}
    assert set(starts) == set(ends) and len(starts) == len(sends)
    for n, s in starts.items():
        f = ends[n]
        assert s["pid"] == tl.transfers.src_dev[n] and f["pid"] == tl.transfers.dst_dev[n]
        assert f["tid"] == 0 and f["bp"] == "e"
        assert f["ts"] >= s["ts"] + (tl.transfers.end[n] - tl.transfers.start[n]) * 1e6 - 1e-6  # after arrival
        assert f["ts"] == pytest.approx(tl.start[tl.transfers.dst_op[n]] * 1e6)


def test_memory_counter(preset_trace):
    tl, tr = preset_trace
    counters = by_ph(tr, "C")
    assert {e["pid"] for e in counters} == {0, 1, 2, 3}
    peak = {d: max(e["args"]["bytes"] for e in counters if e["pid"] == d) for d in range(4)}
    want = tl.peak_memory(include_weights=True)
    for d in range(4):
        assert peak[d] == pytest.approx(want[d])
    # starts at the weights alone
    first = [e for e in counters if e["pid"] == 0][0]
    assert first["ts"] == 0 and first["args"]["bytes"] == pytest.approx(tl.static_memory()[0])


def test_abstract_units_scale_and_collectives():
    s = build("chimera", p=4, m=4)
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5), semantics="contention")
    tr = chrome_trace(tl)
    assert tr["otherData"]["us_per_time_unit"] == 1000
    ar = [e for e in by_ph(tr, "X") if e["cat"] == "allreduce"]
    assert len(ar) == 8 and all(e["dur"] == pytest.approx(1000) for e in ar)
    names = {e["args"]["name"] for e in by_ph(tr, "M") if e["name"] == "thread_name"}
    assert "allreduce" in names


def test_cli_writes_trace(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["simulate", "gpipe", "-p", "2", "-m", "2", "--system", "ethernet-100g", "--model", "gpt3-1.3b",
                 "--trace", str(out), "--no-table"]) == 0
    data = json.loads(out.read_text())
    assert data["otherData"]["semantics"] == "async" and data["traceEvents"]
    assert "trace written" in capsys.readouterr().out


def test_unwritable_trace_path(tmp_path):
    tl = run(build("1f1b", p=2, m=2))
    with pytest.raises(ScheduleFileError, match="cannot write"):
        write_trace(tl, tmp_path / "missing-dir" / "t.json")
