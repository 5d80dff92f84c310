"""Empty values are refused, never defaulted (issue 22, item 8): an empty option value, a list that
names nothing, a trailing separator on a file name, a NaN or infinite number in a CSV or Parquet
results file (as in JSON), and ``--max-ops`` checked by ``calibrate`` before its first worker.
Each refusal is one line naming the option (or file and row) and exit 2, and nothing runs first.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.compare.request import compare_request
from ppverify.core.errors import ParameterError


@pytest.fixture
def nothing_runs(monkeypatch):
    """Any comparison, sweep, report or measurement reached is a failure: the refusal comes first."""
    import ppverify.compare.request as request
    import ppverify.measure.calibrate as cal
    import ppverify.report.build as build
    import ppverify.sweep.executor as sweep_exec

    def ran(*a, **k):
        pytest.fail("the command ran instead of refusing the empty value")

    for mod, name in (
        (request, "run_comparison"),
        (sweep_exec, "run_sweep"),
        (build, "report_from_file"),
        (cal, "pingpong"),
    ):
        monkeypatch.setattr(mod, name, ran)


@pytest.fixture
def refused(refused_in_one_line):
    return lambda argv, capsys, needle: refused_in_one_line(argv, needle)


@pytest.mark.parametrize(
    "argv,option",
    [
        (["compare", "--schedules", ""], "--schedules"),
        (["compare", "--systems", ""], "--systems"),
        (["compare", "--models", ""], "--models"),
        (["compare", "--levels", ""], "--levels"),  # one option with --semantics: named as typed
        (["compare", "--costs", ""], "--costs"),
        (["report", "--from", ""], "--from"),
        (["report", "--from", "r.csv", "--findings-json", ""], "--findings-json"),
        (["sweep", "examples/sweep.yaml", "--store", ""], "--store"),
        (["compare", "--findings", "--map", "--store", ""], "--store"),
        (["show", "1f1b", "--costs", ""], "--costs"),
        (["show", "1f1b", "--costs", "  "], "--costs"),
        (["show", ""], "schedule"),
        (["export", "gpipe", "-p", "2", "-o", ""], "-o"),  # as typed
    ],
)
def test_an_empty_option_value_is_refused(argv, option, capsys, nothing_runs, refused):
    refused(argv, capsys, f"parameter {option}=")
    # the same with the value written as --option=VALUE
    if argv[-2].startswith("--"):
        refused([*argv[:-2], f"{argv[-2]}={argv[-1]}"], capsys, "an empty value")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    option=st.sampled_from(["schedules", "systems", "models", "levels"]),
    blank=st.lists(st.sampled_from([",", " ", "\t"]), min_size=1, max_size=5).map("".join).filter(lambda t: "," in t),
)
def test_a_list_that_names_nothing_is_refused(option, blank, capsys, nothing_runs, refused):
    # ' , ' splits into no name at all: refused, never read as the default selection
    with pytest.raises(ParameterError, match="names nothing"):
        compare_request(**{option: blank})
    refused(["compare", f"--{option}", blank], capsys, "names nothing")


@pytest.mark.parametrize("out", ["c.yaml/", "sub/c.yaml//"])
def test_calibrate_out_ending_in_a_separator_is_refused(tmp_path, capsys, monkeypatch, nothing_runs, out, refused):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    refused(["calibrate", "--out", out], capsys, "which names a folder")
    assert not (tmp_path / "c.yaml").exists() and not (tmp_path / "sub" / "c.yaml").exists()


def test_calibrate_checks_max_ops_before_any_worker(capsys, nothing_runs, refused):
    # its smallest schedule (gpipe -p 2 -m 4) has 3 x 2 x 4 = 24 ops by the family bound: over 10
    refused(["--max-ops", "10", "calibrate", "--quick"], capsys, "over the limit of 10")


def _results(tmp_path):
    code = main(
        ["compare", "--schedules", "gpipe,1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "slot"]
        + ["--no-verify", "--no-progress", "--out", str(tmp_path / "r.csv")]
    )
    assert code == 0
    return pd.read_csv(tmp_path / "r.csv")


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-inf", "Infinity"])
@pytest.mark.parametrize("column", ["makespan", "bubble_ratio", "lower_bound"])
def test_a_non_finite_number_in_a_csv_result_is_refused(tmp_path, capsys, bad, column, refused):
    df = _results(tmp_path)
    capsys.readouterr()
    df[column] = df[column].astype(object)
    df.loc[1, column] = bad  # the second row: line 3 of the file, after the header
    df.to_csv(tmp_path / "bad.csv", index=False)
    err = refused(["report", "--from", str(tmp_path / "bad.csv"), "-o", str(tmp_path / "x.html")], capsys, "row 3")
    assert f"{column}='{bad}' is not a finite number" in err
    assert not (tmp_path / "x.html").exists()


def test_a_nan_in_a_parquet_result_is_refused_and_a_null_is_not(tmp_path, capsys, refused):
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = _results(tmp_path)
    table = pa.Table.from_pandas(df, preserve_index=False)
    i = table.column_names.index("makespan")
    nulls = table.set_column(i, "makespan", pa.array([None] + df["makespan"].tolist()[1:], pa.float64()))
    pq.write_table(nulls, tmp_path / "null.parquet")  # a missing makespan: what pandas writes for None
    nans = table.set_column(i, "makespan", pa.array(df["makespan"].tolist()[:1] + [float("nan")], pa.float64()))
    pq.write_table(nans, tmp_path / "nan.parquet")
    capsys.readouterr()
    assert main(["report", "--from", str(tmp_path / "null.parquet"), "-o", str(tmp_path / "a.html")]) == 0
    refused(
        ["report", "--from", str(tmp_path / "nan.parquet"), "-o", str(tmp_path / "b.html")],
        capsys,
        "nan.parquet: row 3: makespan=nan is not a finite number",  # row 1 is the header
    )
