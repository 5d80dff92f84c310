"""The multi-abstraction comparison: rows, ranks, rank changes, CLI options, outputs, bad input.

Expected values are derived by hand: under slot semantics with a per-hop charge c, GPipe and 1F1B
both take (m+p-1)(tF+tB+2c) (every column pays two hops); GPipe holds m activations on every device, 1F1B
min(p-d, m) on device d.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppverify.cli import main
from ppverify.compare import (
    COLUMNS,
    Config,
    ScheduleEntry,
    abstract_configs,
    default_configs,
    evaluate_point,
    format_config_table,
    run_comparison,
    select_schedules,
)
from ppverify.compare.ranks import add_ranks, rank_changes
from ppverify.compare.table import DERIVED
from ppverify.core.errors import ParameterError

GP, OF = ScheduleEntry("gpipe", "gpipe"), ScheduleEntry("1f1b", "1f1b")


@pytest.mark.parametrize("p,m,c", [(4, 4, 0.0), (4, 4, 0.5), (4, 8, 1.0), (2, 6, 0.25)])
def test_slot_level_gpipe_1f1b_by_hand(p, m, c):
    cfg = Config(p, m, costs=(("F", 1.0), ("B", 2.0)), comm_delay=c)
    df = run_comparison([cfg], (GP, OF), ("slot",))
    expected = (m + p - 1) * (1 + 2 + 2 * c)
    assert df["makespan"].tolist() == pytest.approx([expected, expected])
    peaks = [json.loads(x) for x in df["peak_activations"]]
    assert peaks[0] == [m] * p
    assert peaks[1] == [min(p - d, m) for d in range(p)]
    assert df["rank"].tolist() == [1, 1]  # a tie shares the rank


def test_rows_one_per_schedule_config_level():
    cfgs = abstract_configs({"F": 1, "B": 2}, (0.0, 1.0), (4,), (4, 8))
    df = run_comparison(cfgs, (GP, OF), ("formula", "slot", "async"))
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == 4 * 2 * 3
    assert not df.duplicated(["config", "schedule", "level"]).any()
    # every level row says which semantics produced it, and every row without a number says why
    assert df["semantics"].str.len().min() > 10
    assert (df[df["makespan"].isna()]["note"].str.len() > 0).all()


def test_regime_restricted_entry_is_not_applicable_outside_m_eq_p():
    e = ScheduleEntry("hanayo-w1", "hanayo", (("waves", 1),), only_m_eq_p=True)
    pr = evaluate_point(e, Config(4, 8, costs=(("F", 1.0),)), ("slot",))
    assert pr.results[0].status == "not applicable" and pr.results[0].makespan is None
    assert "m = p" in pr.results[0].note


def test_unknown_family_in_entry_is_reported_not_raised():
    pr = evaluate_point(ScheduleEntry("nosuch", "no-such-family"), Config(4, 4, costs=(("F", 1.0),)), ("slot",))
    assert pr.results[0].status == "unavailable" and "unknown schedule family" in pr.results[0].note


def _frame(rows):
    base = {c: None for c in COLUMNS if c not in DERIVED}
    return add_ranks(pd.DataFrame([{**base, **r} for r in rows]))


def test_rank_change_marked_between_levels():
    rows = []
    for lv, a, b in (("formula", 10.0, 12.0), ("slot", 10.0, 12.0), ("async", 13.0, 12.5)):
        rows += [
            {"config": "c", "schedule": "a", "level": lv, "makespan": a, "status": "ok"},
            {"config": "c", "schedule": "b", "level": lv, "makespan": b, "status": "ok"},
        ]
    df = _frame(rows)
    got = {(r.schedule, r.level): (r.rank, r.rank_change) for r in df.itertuples()}
    assert got[("a", "slot")] == (1, "") and got[("a", "async")] == (2, "1->2")
    assert got[("b", "async")] == (1, "2->1")
    assert rank_changes(df) == ["c: a 1->2 under async", "c: b 2->1 under async"]


def test_gap_to_bound_against_optimum_or_bound():
    rows = [
        {"config": "c", "schedule": "a", "level": "async", "makespan": 12.0, "status": "ok"},
        {
            "config": "c",
            "schedule": "a",
            "level": "optimum",
            "makespan": 10.0,
            "lower_bound": 10.0,
            "status": "optimal",
        },
        {"config": "c", "schedule": "b", "level": "async", "makespan": 12.0, "status": "ok"},
        {
            "config": "c",
            "schedule": "b",
            "level": "optimum",
            "makespan": 11.0,
            "lower_bound": 8.0,
            "status": "feasible",
        },
    ]
    df = _frame(rows).set_index(["schedule", "level"])
    # (value - bound) / value by hand: (12 - 10) / 12
    assert df.at[("a", "async"), "gap_to_bound"] == pytest.approx(2 / 12)
    # not proven optimal: the gap is measured against the proven bound (an upper bound on the true gap)
    assert df.at[("b", "async"), "gap_to_bound"] == pytest.approx((12 - 8) / 12)


def test_table_marks_rank_changes():
    rows = []
    for lv, a, b in (("slot", 10.0, 12.0), ("async", 13.0, 12.5)):
        rows += [
            {
                "config": "c",
                "schedule": "a",
                "level": lv,
                "makespan": a,
                "status": "ok",
                "time_unit": "units",
                "memory_unit": "activations",
            },
            {
                "config": "c",
                "schedule": "b",
                "level": lv,
                "makespan": b,
                "status": "ok",
                "time_unit": "units",
                "memory_unit": "activations",
            },
        ]
    text = format_config_table(_frame(rows), "c")
    assert "13 (2)*" in text and "12.5 (1)*" in text and "10 (1) " in text


def test_preset_options_change_the_costs():
    base = run_comparison([Config(4, 4, "dgx-h100", "gpt3-1.3b")], (GP,), ("slot",))
    half = run_comparison([Config(4, 4, "dgx-h100", "gpt3-1.3b", options=(("mfu", 0.2),))], (GP,), ("slot",))
    # half the MFU doubles compute; communication unchanged, so the step is a bit under 2x as long
    ratio = half["makespan"].iloc[0] / base["makespan"].iloc[0]
    assert 1.9 < ratio < 2.0
    assert half["config"].iloc[0].endswith("mfu=0.2")


def test_default_configs_cover_the_issue():
    cfgs = default_configs()
    systems = {c.system for c in cfgs}
    assert {"ideal", "dgx-h100", "pcie-gen4", "ethernet-100g"} <= systems
    assert any("ib" in s for s in systems)
    assert len({c.model for c in cfgs}) == 2 and len({c.m for c in cfgs}) >= 3
    labels = [e.label for e in select_schedules(None)]
    assert {"gpipe", "1f1b", "chimera", "chimera-asym", "1f1b-split"} <= set(labels)
    assert any(l.startswith("hanayo") for l in labels) and any(l.startswith("interleaved") for l in labels)


def test_select_schedules_unknown_name():
    with pytest.raises(ParameterError, match="unknown schedule family"):
        select_schedules(["nosuch"])


def test_cli_csv_and_parquet(tmp_path, capsys):
    out = tmp_path / "r.csv"
    code = main(
        [
            "compare",
            "--costs",
            "F=1,B=2",
            "--comm-delay",
            "0,0.5",
            "-m",
            "4",
            "--schedules",
            "gpipe,1f1b",
            "--levels",
            "slot",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    df = pd.read_csv(out)
    assert len(df) == 2 * 2 * 1
    assert sorted(df["makespan"].tolist()) == pytest.approx([21, 21, 28, 28])
    text = capsys.readouterr().out
    assert "== p=4 m=4 F=1,B=2 c=0.5 ==" in text and "slot table" in text
    pq = tmp_path / "r.parquet"
    assert (
        main(
            [
                "compare",
                "--costs",
                "F=1,B=2",
                "-m",
                "4",
                "--schedules",
                "gpipe",
                "--levels",
                "slot",
                "--out",
                str(pq),
                "--no-progress",
            ]
        )
        == 0
    )
    assert pd.read_parquet(pq)["makespan"].tolist() == [21.0]


def test_cli_json(capsys):
    assert (
        main(
            [
                "compare",
                "--costs",
                "F=1,B=1",
                "-p",
                "2",
                "-m",
                "2",
                "--schedules",
                "gpipe",
                "--levels",
                "slot",
                "--json",
                "--no-progress",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["makespan"] == 6.0 and rows[0]["level"] == "slot"  # (m+p-1)(tF+tB) = 3*2


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--levels", "bogus"], "unknown level"),
        (["--out", "x.txt"], ".csv or .parquet"),
        (["--schedules", "nosuch"], "unknown schedule family"),
        (["-m", "0"], "integers >= 1"),
        (["--time-limit", "0"], "must be > 0"),
        (["--costs", "F=1,X=2"], "unknown kind"),
        (["--systems", "nosuch"], "unknown preset"),
        (["--models", "gpt3-1.3b,nosuch"], "unknown preset"),
        (["--findings", "--systems", "dgx-h100,nosuch"], "unknown preset"),
        (["--mfu", "2"], "mfu"),
    ],
)
def test_cli_bad_input_one_line_exit_2(argv, needle, capsys):
    assert main(["compare", "--no-progress", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_default_compare_fills_every_level(tmp_path, capsys):

    out = tmp_path / "all.csv"
    assert main(["compare", "--no-progress", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert len(df) == 30 * 8 * 5
    for lv in ("formula", "slot", "async", "contention", "optimum"):
        assert df[df["level"] == lv]["makespan"].notna().sum() >= 150, lv
    assert set(df["system"]) == {"ideal", "dgx-h100", "pcie-gen4", "ib-ndr-cluster", "ethernet-100g"}
    # Hanayo only in its regime m = p
    h = df[df["schedule"].str.startswith("hanayo") & df["makespan"].notna()]
    assert (h["m"] == h["p"]).all()
    # the gap to optimal is never negative beyond the grid rounding (the optimum bounds every schedule)
    assert (df["gap_to_bound"].dropna() >= -1e-6).all()
    assert "produced no numbers" not in capsys.readouterr().out  # no level unavailable


def test_levels_cross_check_each_other():
    """formula == slot where the closed form is exact and nothing is communicated; slot == async
    without communication; contention >= async; the CP-SAT bound <= every schedule's async time."""
    cfgs = abstract_configs({"F": 1, "B": 2}, (0.0, 0.5), (4,), (4, 8))
    df = run_comparison(cfgs, select_schedules(None), time_limit=2.0)
    w = df.pivot_table(index=["config", "schedule"], columns="level", values="makespan", aggfunc="first")
    exact = df[df["level"] == "formula"].set_index(["config", "schedule"])["exact"]
    zero = w.index.get_level_values(0).str.endswith("c=0")
    compared = 0
    for (cfg, sched), row in w[zero].iterrows():
        assert row["slot"] == pytest.approx(row["async"]), (cfg, sched)
        if bool(exact.get((cfg, sched), False)):
            assert row["formula"] == pytest.approx(row["slot"]), (cfg, sched)
            compared += 1
    assert compared >= 8
    for (cfg, sched), row in w.iterrows():
        assert row["contention"] >= row["async"] - 1e-9, (cfg, sched)
    bounds = df[df["level"] == "optimum"].set_index(["config", "schedule"])["lower_bound"]
    for key, lb in bounds.dropna().items():
        assert lb <= w.loc[key, "async"] + 1e-9, key
    assert bounds.notna().sum() >= 20  # the solver level produced numbers for most points


def test_schedule_file_entry(tmp_path, capsys):
    from ppverify.io.json_format import save_json
    from ppverify.schedules import build

    path = tmp_path / "mine.json"
    save_json(build("1f1b", p=4, m=8), path)
    out = tmp_path / "r.csv"
    assert (
        main(
            [
                "compare",
                "--schedules",
                f"{path},gpipe",
                "--costs",
                "F=1,B=2",
                "-m",
                "4,8",
                "--levels",
                "formula,slot",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    df = pd.read_csv(out).set_index(["m", "schedule", "level"])
    assert df.at[(8, "mine", "slot"), "makespan"] == 33.0  # (m+p-1)(tF+tB) = 11 * 3
    assert df.at[(4, "mine", "slot"), "status"] == "not applicable"  # the file is p=4, m=8
    assert df.at[(8, "mine", "formula"), "status"] == "unavailable"


def test_z3_column_valid_and_invalid(tmp_path, capsys):
    from ppverify.core.ops import Op
    from ppverify.io.json_format import save_json
    from ppverify.schedules import build

    s = build("1f1b", p=2, m=2)
    F0, B0, F1, B1 = (Op(k, 0, mb) for k, mb in (("F", 0), ("B", 0), ("F", 1), ("B", 1)))
    # device 1 runs both forwards before either backward while device 0 waits for B0: a deadlock
    bad = s.with_programs(((F0, B0, F1, B1), tuple(o._replace(stage=1) for o in (F0, F1, B0, B1))))
    save_json(bad, tmp_path / "bad.json")
    out = tmp_path / "r.csv"
    assert (
        main(
            [
                "compare",
                "--schedules",
                f"{tmp_path / 'bad.json'},1f1b",
                "--costs",
                "F=1,B=2",
                "-p",
                "2",
                "-m",
                "2",
                "--levels",
                "slot,async",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 1  # the deadlocking file's rows have status error: exit 1 (docs/comparison.md)
    )
    df = pd.read_csv(out)
    good = df[df["schedule"] == "1f1b"]
    assert (good["verified"] == "valid").all()
    broken = df[df["schedule"] == "bad"]
    assert broken["verified"].str.startswith("INVALID: deadlock").all()
    assert (broken["status"] == "error").all() and broken["makespan"].isna().all()
    text = capsys.readouterr().out
    assert "INVALID" in text and "deadlock" in text
