"""The library behind ``simulate``'s output (:mod:`ppverify.core.timeline_text`,
:mod:`ppverify.views.run_report`): charts, numbers and metrics against values derived by hand."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import PPVerifyError
from ppverify.core.timeline_text import fmt_mem, fmt_number, fmt_time, gantt
from ppverify.engines import run
from ppverify.schedules import build
from ppverify.views.run_report import report_text, run_timed, timeline_report, write_frame


@pytest.mark.parametrize(
    "x,unit,text",
    [
        (1.0, "s", "1.0000 s"),
        (1e-3, "s", "1.000 ms"),
        (9.99e-4, "s", "999.0 us"),
        (3.0, "units", "3"),
        (-2e-3, "s", "-2.000 ms"),
    ],
)
def test_fmt_time_picks_the_unit(x, unit, text):
    assert fmt_time(x, unit) == text


def test_fmt_mem_and_fmt_number():
    assert fmt_mem(2**31, "bytes") == "2.00 GiB"
    assert fmt_mem(float("inf"), "bytes") == "inf"
    assert fmt_mem(3.0, "activations") == "3"
    assert [fmt_number(x) for x in (7.0, 0.125, 0.10000, 12.345678, None)] == ["7", "0.125", "0.1", "12.35", "-"]


def test_gantt_of_gpipe_by_hand():
    # unit slots, p=2 m=2: device 0 runs F0 F1, waits for device 1's F0 F1 B0, then B0 B1
    chart = gantt(run(build("gpipe", p=2, m=2)), width=6).splitlines()
    assert chart == ["time    0 .. 6 units, 1 per column", "dev 0  FF..BB", "dev 1  .FFBB."]


@settings(max_examples=25, deadline=None)
@given(family=st.sampled_from(["gpipe", "1f1b"]), p=st.integers(1, 4), m=st.integers(1, 4))
def test_gantt_with_one_column_per_slot_shows_every_busy_slot(family, p, m):
    tl = run(build(family, p=p, m=m))
    width = int(tl.makespan)  # unit slots: one column per slot, each column's middle inside one op
    rows = gantt(tl, width).splitlines()[1:]
    assert len(rows) == p
    busy = tl.metrics()["busy"]
    for d, row in enumerate(rows):
        cells = row[7:]
        assert len(cells) == width
        assert sum(c != "." for c in cells) == busy[d]
        assert cells.count("F") == m  # one forward slot per microbatch on every device


def test_timeline_report_counts_transfers_and_memory():
    # 1F1B, p=2 m=2: two activations forward, two gradients back; device 0 holds two microbatches
    rep = timeline_report(run(build("1f1b", p=2, m=2)), capacity=1.5)
    assert rep["transfers"] == {"activation": 2, "gradient": 2}
    assert rep["peak_memory"] == [2.0, 1.0] and rep["oom_devices"] == [0]
    assert rep["family"] == "1f1b" and rep["p"] == 2 and rep["m"] == 2
    text = report_text(run(build("1f1b", p=2, m=2)), rep, chart=False)
    assert "out of memory: device(s) 0 exceed 1.5" in text
    assert "fits 1.5" in text


def test_run_timed_charges_communication_by_semantics():
    s = build("gpipe", p=2, m=1)
    unit, delay = CostModel.unit(s.placement), FixedDelay(0.5)
    # async: 4 unit ops in a chain and 2 transfers of 0.5 between them
    assert run_timed(s, unit, delay, "async").makespan == pytest.approx(5.0)
    # slot: every op has a cross-device input or output, so each column costs 1 + 0.5
    assert run_timed(s, unit, delay, "slot").makespan == pytest.approx(6.0)
    assert run_timed(s, unit, FixedDelay(0), "slot").makespan == pytest.approx(4.0)


def test_report_text_of_a_slot_run_prints_the_table():
    s = build("gpipe", p=2, m=1)
    tl = run_timed(s, CostModel.unit(s.placement), FixedDelay(0), "slot")
    text = report_text(tl, timeline_report(tl), FixedDelay(0))
    assert "dev 0 0F0" in text and "makespan      4" in text


def test_write_frame_and_its_errors(tmp_path):
    tl = run(build("gpipe", p=2, m=1))
    path = tmp_path / "rows.csv"
    write_frame(tl, str(path))
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + len(tl.ops) + len(tl.transfers)  # a header, then one row each
    with pytest.raises(PPVerifyError, match="cannot write"):  # bad input, one line naming the file
        write_frame(tl, os.path.join(str(tmp_path), "missing-dir", "rows.csv"))


def test_write_frame_leaves_a_collectives_stage_and_mb_empty(tmp_path):
    # docs/simulation.md: "a collective's rows (`allreduce`, `dp-allreduce`) leave `stage` and `mb`
    # empty". chimera p=4 holds each of its 4 stages on two devices: 4 replica all-reduces of 2
    # devices, one row per device, 8 rows; ops keep their stage (4 stages, 0..3) as whole numbers
    import pandas as pd

    path = tmp_path / "rows.csv"
    write_frame(run(build("chimera", p=4, m=8)), str(path))
    df = pd.read_csv(path)
    coll = df[df["kind"] == "allreduce"]
    assert len(coll) == 8 and coll["stage"].isna().all() and coll["mb"].isna().all()
    assert sorted(set(df[df["type"] == "op"]["stage"])) == [0, 1, 2, 3]
    assert "\ntransfer,allreduce,,,0,0,3," in path.read_text()  # empty cells, not -1 (device 0 -> 3)
    assert "\nop,F,0,0,0," in path.read_text()  # an op's stage stays a whole number
