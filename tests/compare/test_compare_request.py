"""``ppverify compare`` as a library call (``ppverify.compare.request``): parsing of the selections,
the configurations of a request, makespans against the closed form worked out by hand, the CLI
printing exactly what the library returns, and the measured level classified by error type."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.compare.config import Config, ScheduleEntry, select_schedules
from ppverify.compare.evaluate import evaluate_point
from ppverify.compare.measured import fill_measured
from ppverify.compare.outcome import format_outcome, outcome_json
from ppverify.compare.request import (
    compare_request,
    parse_floats,
    parse_ints,
    request_configs,
    run_request,
    split_csv,
    write_rows,
)
from ppverify.core.errors import ParameterError
from ppverify.io.torch_interop import TorchUnavailableError


@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=8))
def test_parse_ints_keeps_first_occurrences_in_order(vals):
    text = " , ".join(map(str, vals))
    assert parse_ints("p", text, (4,)) == tuple(dict.fromkeys(vals))


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=6))
def test_parse_floats_reads_back_every_distinct_value(vals):
    text = ",".join(repr(v) for v in vals)
    assert parse_floats("comm-delay", text, (0.0,)) == tuple(dict.fromkeys(vals))


@pytest.mark.parametrize("text", ["0", "4,x", "", "-1"])
def test_parse_ints_refuses_with_the_option_named(text):
    with pytest.raises(ParameterError) as err:
        parse_ints("m", text, (4,))
    assert err.value.name == "m"


def test_split_csv_drops_blanks_and_repeats():
    assert split_csv(" a,, b ,a") == ["a", "b"] and split_csv(",") is None


def test_levels_of_a_request():
    assert compare_request().levels == ("formula", "slot", "async", "contention", "optimum")
    # the findings skip the solver unless levels are named
    assert "optimum" not in compare_request(findings=True).levels
    assert compare_request(findings=True, levels="optimum").levels == ("optimum",)
    for bad in (dict(levels="warp"), dict(time_limit=0), dict(out="rows.xlsx")):
        with pytest.raises(ParameterError):
            compare_request(**bad)


def test_configurations_of_a_request():
    _, cs = request_configs(compare_request(systems="ideal,dgx-h100", models="gpt3-1.3b", ps="4,8", ms="8"))
    assert [(c.system, c.p, c.m) for c in cs] == [
        ("ideal", 4, 8),
        ("ideal", 8, 8),
        ("dgx-h100", 4, 8),
        ("dgx-h100", 8, 8),
    ]
    setup, cs = request_configs(compare_request(findings=True, costs="F=1,B=2", comm_delay="0,2", ps="4"))
    # two delays x p = 4 x m in {p, 4p}
    assert [(c.comm_delay, c.m) for c in cs] == [(0.0, 4), (0.0, 16), (2.0, 4), (2.0, 16)]
    assert setup.model is None
    with pytest.raises(ParameterError):
        compare_request(findings=True, systems="ideal")  # the findings need two systems
    with pytest.raises(ParameterError):
        request_configs(compare_request(systems="no-such-system"))


@pytest.mark.parametrize("p,m", [(2, 2), (4, 8), (3, 7)])
def test_slot_makespans_match_the_closed_form(p, m):
    # GPipe and 1F1B on unit-slot tables without delays: (m + p - 1)(tF + tB) (GPipe paper, Huang et al. 2019)
    req = compare_request(schedules="gpipe,1f1b", ps=str(p), ms=str(m), costs="F=1,B=2", levels="slot", verify=False)
    o = run_request(req)
    assert o.rows["makespan"].tolist() == [(m + p - 1) * 3.0] * 2
    assert (o.num_configs, o.num_schedules, o.levels) == (1, 2, ("slot",))


def test_cli_prints_what_the_library_returns(tmp_path, capsys):
    argv = ["compare", "--schedules", "gpipe,chimera", "-p", "4", "-m", "4,8", "--costs", "F=1,B=2"]
    argv += ["--comm-delay", "0.5", "--levels", "formula,async", "--no-progress"]
    out = tmp_path / "rows.csv"
    assert main(argv + ["--json", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    got = json.loads(cap.out)
    assert cap.err.strip() == f"wrote 8 rows to {out}"
    lib = outcome_json(
        run_request(
            compare_request(
                "gpipe,chimera", ps="4", ms="4,8", costs="F=1,B=2", comm_delay="0.5", levels="formula,async"
            )
        )
    )
    key = ("config", "schedule", "level", "status", "makespan", "rank", "verified")
    assert [[r[k] for k in key] for r in got["rows"]] == [[r[k] for k in key] for r in lib["rows"]]
    assert got["levels"] == lib["levels"] and len(out.read_text().splitlines()) == 1 + 8
    assert main(argv) == 0
    text = capsys.readouterr().out
    o = run_request(
        compare_request("gpipe,chimera", ps="4", ms="4,8", costs="F=1,B=2", comm_delay="0.5", levels="formula,async")
    )
    # every line but the closing one's wall time
    assert text.splitlines()[:-1] == format_outcome(o, 0.0).splitlines()[:-1]


def test_write_rows_refuses_a_missing_folder(tmp_path):
    import pandas as pd

    with pytest.raises(ParameterError):
        write_rows(pd.DataFrame({"a": [1]}), str(tmp_path / "no" / "rows.csv"))


def _pending_point():
    cfg = Config(2, 2, costs=(("F", 1.0), ("B", 2.0)))
    pt = evaluate_point(ScheduleEntry("gpipe", "gpipe"), cfg, ("slot", "measured"))
    assert pt.level("measured").status == "pending"
    return pt


def test_measured_without_torch_is_unavailable_with_the_install_line(monkeypatch):
    import ppverify.measure as measure

    def no_torch(*_a, **_k):
        raise TorchUnavailableError()

    monkeypatch.setattr(measure, "measure_many", no_torch)
    r = fill_measured([_pending_point()])[0].level("measured")
    assert r.status == "unavailable" and "pip install 'ppverify[torch]'" in r.note and r.makespan is None


def test_a_failed_measurement_is_an_error_whatever_its_message(monkeypatch):
    import ppverify.measure as measure

    def broken(*_a, **_k):
        raise RuntimeError("unavailable: worker died")  # the wording must not make it "unavailable"

    monkeypatch.setattr(measure, "measure_many", broken)
    r = fill_measured([_pending_point()])[0].level("measured")
    assert r.status == "error" and "RuntimeError" in r.note


def test_compare_refuses_two_schedules_under_one_label(tmp_path, capsys):
    # a GPipe file named 1f1b.json is labelled "1f1b" like the 1F1B family: the table is keyed by
    # label, so the two would land in one row (it raised "truth value of a Series is ambiguous")
    path = tmp_path / "1f1b.json"
    assert main(["export", "gpipe", "-p", "4", "-m", "4", "-o", str(path)]) == 0
    capsys.readouterr()
    argv = ["compare", "-p", "4", "-m", "4", "--costs", "F=1,B=2", "--levels", "async", "--schedules", f"1f1b,{path}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "two different schedules are labelled '1f1b' (family 1f1b, file" in err and "Traceback" not in err
    # one entry named twice (hanayo selects hanayo-w1 too) is one row each, no error
    assert [e.label for e in select_schedules(["hanayo", "hanayo-w1", "gpipe"])] == ["hanayo-w1", "hanayo-w2", "gpipe"]
