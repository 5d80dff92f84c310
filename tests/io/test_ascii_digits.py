"""Actions and trace names are numbered in ASCII digits 0-9 only, as ppverify's action text
(core/ops.py) reads them: a str pattern's ``\\d`` also takes other scripts' digits, which ``int()``
reads (Arabic-Indic ``\\u0663`` is 3), so ``\\u0660F\\u0663`` would have been read as 0F3 and
``ProfilerStep#\\u0663`` as step 3 from text no runtime writes."""

from __future__ import annotations

import json

import pytest

from ppverify.core.errors import ScheduleFileError
from ppverify.io.profiler_trace import read_traces
from ppverify.io.torch_csv import load_csv, torch_reading

ZERO, THREE = "\u0660", "\u0663"  # ARABIC-INDIC DIGIT ZERO and THREE: int() reads them as 0 and 3


def test_a_csv_cell_in_other_digits_is_refused_at_its_cell(tmp_path):
    path = tmp_path / "ar.csv"
    path.write_text(f"0F0,0B0\n1F0,{ZERO}F{THREE}\n", encoding="utf-8")
    # PyTorch's own regex (\d) reads the cell as 0F3, which is the fix the error names
    assert torch_reading(f"{ZERO}F{THREE}") == "0F3"
    with pytest.raises(ScheduleFileError) as exc:
        load_csv(path)
    # the file, the cell (row 2 is rank 1, column 2) and the rule
    assert str(exc.value) == (
        f"{path}: row 2 (rank 1), column 2: '{ZERO}F{THREE}' is numbered in digits other than ASCII 0-9 "
        f"('{ZERO}' is U+0660 ARABIC-INDIC DIGIT ZERO), which PyTorch reads as 0F3: write 0F3"
    )


def _trace(tmp_path, step_name):
    events = [
        {"ph": "X", "cat": "user_annotation", "name": step_name, "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "user_annotation", "name": "PP:0F0", "ts": 1, "dur": 10, "pid": 1, "tid": 1},
    ]
    doc = {"distributedInfo": {"rank": 0, "world_size": 1}, "host_name": "h", "traceEvents": events}
    (tmp_path / "rank0.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("name", [f"ProfilerStep#{THREE}", f"Forward {THREE}", f"Backward 1{ZERO}"])
def test_a_trace_step_or_range_in_other_digits_is_refused(tmp_path, name):
    _trace(tmp_path, name)
    with pytest.raises(ScheduleFileError) as exc:
        read_traces([tmp_path])
    # the file, the event (traceEvents[0], the first written) and the rule
    assert str(exc.value).startswith(
        f"{tmp_path / 'rank0.json'}: traceEvents[0]: {name!r} is numbered in digits other than ASCII 0-9"
    ), exc.value


def test_an_ascii_step_still_reads(tmp_path):
    _trace(tmp_path, "ProfilerStep#3")
    (trace,) = read_traces([tmp_path])
    assert [n for n, _, _ in trace.steps] == [3]  # the step written, ProfilerStep#3
