"""Mistakes a newcomer makes with files get a message that says what the file is and what takes
it: a profiler trace given as a schedule, a folder given as one, a schedule file given to prove."""

from __future__ import annotations

from ppverify.cli import main


def test_a_profiler_trace_given_as_a_schedule_names_import_trace(tmp_path, capsys):
    # a torch.profiler trace is JSON with traceEvents; its 19-digit baseTimeNanoseconds made the
    # schedule reader refuse "a number of 19 digits", which did not say what the file was
    trace = tmp_path / "rank0.pt.trace.json"
    trace.write_text('{"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": []}')
    assert main(["show", str(trace)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"ppverify show: error: {trace}: a PyTorch profiler trace (it holds traceEvents), not a schedule: "
        "read it with ppverify import-trace"
    )


def test_a_folder_given_as_a_schedule_is_named_a_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert main(["show", "runs"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ppverify show: error: parameter family=runs: unknown schedule family (a folder of that name")


def test_prove_says_it_takes_families_and_names_verify(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("0F0,0B0\n")
    assert main(["prove", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"ppverify prove: error: parameter family={path}: prove takes a family (its closed form, for all p and m), "
        f"not a schedule file: ppverify verify {path} proves one schedule"
    )


def test_a_chrome_trace_is_not_written_under_a_schedule_name(tmp_path, capsys):
    # --trace writes JSON; a .csv name is what every reader takes for a PyTorch schedule
    out = tmp_path / "out.csv"
    assert main(["simulate", "1f1b", "--trace", str(out), "--no-table"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"ppverify simulate: error: parameter --trace={out}: this writes a Chrome/Perfetto trace (JSON): name it .json"
    )
    assert not out.exists()
