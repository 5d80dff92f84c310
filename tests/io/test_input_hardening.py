"""Inputs that were read silently wrong, now refused in one line (file, location, rule) or stated
honestly: each case is written by hand, with the reason the old reading was wrong.
"""

from __future__ import annotations

import json
import re

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.io.json_format import read_json, save_json
from ppverify.io.profiler_trace import read_traces
from ppverify.io.torch_csv import load_csv, parse_rows
from ppverify.schedules import build

COMMS_1F1B = [
    "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD",
    "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD",
]


def _saved(tmp_path, edit) -> str:
    s = build("1f1b", p=2, m=3)
    path = tmp_path / "s.json"
    save_json(s, path, CostModel.abstract(s.placement, F=1, B=2))
    d = json.loads(path.read_text())
    edit(d)
    path.write_text(json.dumps(d))
    return str(path)


def test_json_duration_beyond_the_number_limit_is_refused(tmp_path):
    # 1e308 per forward summed to inf: simulate printed inf/NaN and verify's reference finish "inf"
    path = _saved(tmp_path, lambda d: d["costs"]["duration"]["F"].__setitem__(0, 1e308))
    with pytest.raises(ScheduleFileError, match=r"s\.json: costs\.duration\.F\[0\]: 1e\+308 out of range"):
        read_json(path)


def test_json_label_contradicted_by_its_durations_is_not_printed_as_the_costs(tmp_path, capsys):
    # durations edited by hand (B = 0), label left at F=1,B=2,I=1,W=1: the proof said
    # "under costs F=1,B=2,I=1,W=1" for numbers that are not those
    def edit(d):
        d["costs"]["duration"]["B"] = [0.0, 0.0]

    path = _saved(tmp_path, edit)
    costs = read_json(path).costs
    assert costs is not None and costs.duration["B"] == (0.0, 0.0)
    assert costs.label == "the durations in s.json (not its label F=1,B=2,I=1,W=1: B of stage 0 is 0, not 2)"
    # 1F1B p=2 m=3 with F=1, B=0: device 1 runs its three F back to back after 1F0 arrives: 4
    assert main(["verify", path, "--makespan-le", "4"]) == 0
    out = capsys.readouterr().out
    assert "under costs F=1,B=2" not in out and "not its label F=1,B=2,I=1,W=1" in out


def test_json_label_that_matches_is_kept(tmp_path):
    assert read_json(_saved(tmp_path, lambda d: None)).costs.label == "F=1,B=2,I=1,W=1"


@pytest.mark.parametrize(
    "rows, where",
    [
        # an idle cell between two actions of rank 0 (column 4)
        ([COMMS_1F1B[0].replace("0F1,", ",0F1,"), COMMS_1F1B[1]], "row 1 (rank 0), column 4"),
        # a trailing comma on rank 1's row: an empty 12th cell
        ([COMMS_1F1B[0], COMMS_1F1B[1] + ","], "row 2 (rank 1), column 12"),
    ],
)
def test_compute_comms_csv_with_an_idle_cell_is_refused(tmp_path, capsys, rows, where):
    # PyTorch's runtime raises on an idle action in a compute_comms schedule: it never runs, yet
    # verify said VALID
    path = tmp_path / "c.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(ScheduleFileError, match=re.escape(f"c.csv: {where}: an empty cell")):
        load_csv(path)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "c.csv" in err and where in err and "Traceback" not in err


def test_compute_only_csv_keeps_its_idle_cells():
    s = parse_rows([["0F0", "", "0B0"], ["1F0", "1B0"]])
    assert s.programs[0][1] is None


def test_stages_below_one_names_the_option():
    with pytest.raises(ParameterError, match=r"parameter stages=0: must be >= 1"):
        parse_rows([["0F0", "0B0"]], num_stages=0)


def _trace(tmp_path, r0, r1):
    for r, events in enumerate((r0, r1)):
        evs = [
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": -1, "dur": 200, "pid": 1, "tid": 1}
        ]
        evs += [
            {"ph": "X", "cat": "user_annotation", "name": n, "ts": t, "dur": d, "pid": 1, "tid": 1}
            for n, t, d in events
        ]
        obj = {"distributedInfo": {"rank": r, "world_size": 2}, "host_name": "h", "traceEvents": evs}
        (tmp_path / f"rank{r}.json").write_text(json.dumps(obj))


# gpipe p=2 m=1, host side: rank 0 F [0, 10], B [40, 60]; rank 1 F [10, 20], B [20, 40]
R0 = [("PP:0F0", 0, 10), ("PP:0SEND_F0", 10, 1), ("PP:0RECV_B0", 11, 1), ("PP:0B0", 40, 20)]
R1 = [("PP:1RECV_F0", 0, 1), ("PP:1F0", 10, 10), ("PP:1B0", 20, 20), ("PP:1SEND_B0", 40, 1)]


def test_trace_reads_when_compute_ranges_do_not_overlap(tmp_path):
    _trace(tmp_path, R0, R1)
    assert [t.action_names() for t in read_traces([tmp_path])][1] == ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]


def test_trace_with_a_send_posted_inside_an_op_reads(tmp_path):
    # the two-pipe runner posts a SEND from inside the op's range: nested, not a second action
    _trace(tmp_path, [("PP:0F0", 0, 10), ("PP:0SEND_F0", 9, 1), ("PP:0RECV_B0", 11, 1), ("PP:0B0", 40, 20)], R1)
    assert len(read_traces([tmp_path])) == 2


@pytest.mark.parametrize(
    "r1, rule",
    [
        # 1B0 starts at 15 while 1F0 runs until 20: one thread runs one action at a time (times from
        # the first compute range, 1F0's at 10)
        (
            [("PP:1RECV_F0", 0, 1), ("PP:1F0", 10, 10), ("PP:1B0", 15, 20), ("PP:1SEND_B0", 40, 1)],
            r"traceEvents\[3\]: PP:1B0 starts at 5.000 us while PP:1F0 \(traceEvents\[2\], 0.000 to 10.000 us\) "
            r"still runs",
        ),
        # an op whose end is before its start was timed as 0 and fitted a cost of 0
        (
            [("PP:1RECV_F0", 0, 1), ("PP:1F0", 10, -10), ("PP:1B0", 20, 20), ("PP:1SEND_B0", 40, 1)],
            r"traceEvents\[2\]: event 'PP:1F0' has a negative duration \(-10 us\)",
        ),
        (
            [("PP:1RECV_F0", 0, 1), ("PP:1F0", float("nan"), 10), ("PP:1B0", 20, 20), ("PP:1SEND_B0", 40, 1)],
            r"traceEvents\[2\]: event 'PP:1F0' has a ts/dur that is not a finite number",
        ),
    ],
)
def test_trace_that_cannot_be_one_jobs_is_refused(tmp_path, capsys, r1, rule):
    _trace(tmp_path, R0, r1)
    with pytest.raises(ScheduleFileError, match=r"rank1\.json: " + rule):
        read_traces([tmp_path])
    assert main(["import-trace", str(tmp_path), "--no-table"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_timeline_without_rank_points_at_the_profiler_traces(tmp_path, capsys):
    # the Chrome timeline `simulate/measure --trace` writes has no rank: import-trace says which
    # traces it reads instead of only "no rank"
    from ppverify.cli import main

    path = tmp_path / "tr.json"
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--trace", str(path), "--no-table"]) == 0
    capsys.readouterr()
    assert main(["import-trace", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no rank" in err and "measure --profile DIR" in err and "Perfetto" in err
