"""PyTorch pipelining CSV: lossless both ways, strict cells, stage -> rank inference, markers."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ppverify.core.dag import structural_problems
from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.core.ops import Comm, Marker, Op, Overlap
from ppverify.engines import run
from ppverify.io import load_schedule
from ppverify.io.torch_csv import csv_text, load_csv, parse_rows, save_csv, to_rows
from ppverify.schedules import build

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"
FIXTURES = ["zb1p_2rank_2stagep_compute.csv", "zb1p_2rank_2stagep_comms.csv", "dualpipev_4rank_10mb.csv"]


def cells(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))


@pytest.mark.parametrize("name", FIXTURES)
def test_pytorch_fixtures_round_trip_cell_for_cell(name, tmp_path):
    s = load_csv(DATA / name)
    flavour = s.params["format"]
    out = tmp_path / name
    save_csv(s, out, flavour)
    assert cells(out) == cells(DATA / name)
    # and once more through the loader dispatch: still the same schedule
    again = load_schedule(out)
    assert [list(map(str, p)) for p in again.programs] == [list(map(str, p)) for p in s.programs]


def test_fixture_facts_read_by_hand():
    # zb1p: 2 rows, stages 0..3 with 0, 2 on row 0 and 1, 3 on row 1 (loop), microbatches 0..7
    s = load_csv(DATA / "zb1p_2rank_2stagep_compute.csv")
    assert (s.p, s.num_stages, s.m, s.placement.name) == (2, 4, 8, "loop")
    assert s.placement.maps == ((0, 1, 0, 1),)
    # row 0 cell 4 and row 1 cell 1 are empty: idle slots
    assert s.programs[0][3] is None and s.programs[1][0] is None
    assert s.programs[0][5] == Op("I", 2, 0)
    assert structural_problems(s) == []
    c = load_csv(DATA / "zb1p_2rank_2stagep_comms.csv")
    assert c.params["format"] == "compute_comms"
    assert c.programs[0][1] == Comm("SEND_F", 0, 0)
    # DualPipeV: stage s and 7-s share a rank (v placement); overlapped cells
    d = load_csv(DATA / "dualpipev_4rank_10mb.csv")
    assert (d.p, d.num_stages, d.m, d.placement.name) == (4, 8, 10, "v")
    assert d.programs[0][17] == Overlap((Op("F", 0, 7), Op("B", 7, 3)))
    assert structural_problems(d) == []


@pytest.mark.parametrize("bad", ["0F1xyz", "2BW0", "F1", "0X1", "0F", "(0F1)OVERLAP_F_B", "0F1;0B1"])
def test_invalid_cell_names_row_column_and_text(bad, tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text(f"0F0,0B0\n1F0,{bad},1B0\n")
    with pytest.raises(ScheduleFileError) as err:
        load_csv(f)
    msg = str(err.value)
    assert "row 2 (rank 1), column 2" in msg and repr(bad) in msg and str(f) in msg


def test_cli_style_error_for_missing_file():
    with pytest.raises(ScheduleFileError, match="file not found"):
        load_schedule("no/such/file.csv")


def test_stage_rank_inference_loop_v_and_arbitrary():
    loop_rows = [["0F0", "2F0", "2B0", "0B0"], ["1F0", "3F0", "3B0", "1B0"]]
    assert parse_rows(loop_rows).placement.name == "loop"
    v_rows = [["0F0", "3F0", "3B0", "0B0"], ["1F0", "2F0", "2B0", "1B0"]]
    assert parse_rows(v_rows).placement.maps == ((0, 1, 1, 0),)
    assert parse_rows(v_rows).placement.name == "v"
    odd = [["1F0", "1B0"], ["2F0", "2B0"], ["0F0", "0B0"]]  # stage 0 on rank 2, 1 on 0, 2 on 1
    s = parse_rows(odd)
    assert s.placement.name == "custom" and s.placement.maps == ((2, 0, 1),)
    assert structural_problems(s) == []
    # the timing follows the inferred map: F chain 2 -> 0 -> 1 then B back, 6 unit slots
    assert run(s, semantics="slot").makespan == 6.0


def test_explicit_placement_overrides_inference_and_exposes_misplaced_ops():
    rows = [["0F0", "3F0", "3B0", "0B0"], ["1F0", "2F0", "2B0", "1B0"]]
    s = parse_rows(rows, placement="loop")
    assert s.placement.maps == ((0, 1, 0, 1),)
    probs = structural_problems(s)
    assert any("3F0 is on device 0" in p for p in probs) and any("2F0 is on device 1" in p for p in probs)
    assert parse_rows(rows, placement="0,1,1,0").placement.name == "v"
    with pytest.raises(ParameterError):
        parse_rows(rows, placement="linear")  # 4 stages on 2 ranks is not linear


def test_stage_with_no_ops_needs_a_placement():
    rows = [["0F0", "0B0"], ["2F0", "2B0"]]
    with pytest.raises(ScheduleFileError, match="stage 1"):
        parse_rows(rows, "x.csv")
    s = parse_rows(rows, "x.csv", placement="0,1,1")
    assert "op 1F0 is missing (should run on device 1)" in structural_problems(s)


def test_given_m_reports_missing_microbatches_instead_of_shrinking():
    rows = [["0F0", "0B0"]]
    assert parse_rows(rows).m == 1
    s = parse_rows(rows, m=2)
    assert structural_problems(s) == [
        "op 0F1 is missing (should run on device 0)",
        "op 0B1 is missing (should run on device 0)",
    ]


def test_markers_are_kept_and_free_in_time(tmp_path):
    text = "0UNSHARD,0F0,0F1,0B0,0B1,0RESHARD,0REDUCE_GRAD\n1UNSHARD,1F0,1B0,1F1,1B1,1RESHARD,1REDUCE_GRAD\n"
    f = tmp_path / "m.csv"
    f.write_text(text)
    s = load_csv(f)
    # PyTorch's compute-only loader refuses markers: a file holding them is a compute_comms one
    assert s.programs[0][0] == Marker("UNSHARD", 0) and s.params["format"] == "compute_comms"
    # written back as compute_only, the markers go (PyTorch's lowering adds them back)
    assert csv_text(s) == "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"
    plain = parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]])
    a, b = run(s, semantics="slot"), run(plain, semantics="slot")
    assert a.makespan == b.makespan and a.start.tolist() == b.start.tolist()


def test_markers_beside_an_idle_cell_are_refused():
    # markers make the file compute_comms, whose runtime refuses idle cells: neither of PyTorch's
    # loaders takes it (compute_only refuses the marker, compute_comms the empty cell)
    with pytest.raises(ScheduleFileError, match="row 1 .rank 0., column 3: an empty cell in a compute_comms file"):
        parse_rows([["0UNSHARD", "0F0", "", "0B0", "0RESHARD"]], "m.csv")


def test_export_compute_comms_by_hand():
    # GPipe p=2 m=1 lowered as PyTorch does: each cross-rank F/B is followed by its SEND, the
    # matching RECV is put on the receiver when the sender places the op
    # after PyTorch's UNSHARD/RESHARD and REDUCE_GRAD passes (each marker takes a round: rank 1's
    # UNSHARD is placed before rank 0's F0 puts 1RECV_F0 on it)
    assert to_rows(build("gpipe", p=2, m=1), "compute_comms") == [
        ["0UNSHARD", "0F0", "0SEND_F0", "0RECV_B0", "0B0", "0REDUCE_GRAD", "0RESHARD"],
        ["1UNSHARD", "1RECV_F0", "1F0", "1B0", "1SEND_B0", "1REDUCE_GRAD", "1RESHARD"],
    ]
    # compute_comms drops idle cells (PyTorch's runtime rejects None there)
    s = parse_rows([["0F0", "", "0B0"], ["", "1F0", "1B0"]])
    assert all(c for row in to_rows(s, "compute_comms") for c in row)


def test_two_pipe_schedules_cannot_be_written():
    with pytest.raises(ParameterError, match="one pipe"):
        to_rows(build("chimera", p=4, m=4))


def test_unknown_flavour_is_rejected():
    with pytest.raises(ParameterError):
        to_rows(build("gpipe", p=2, m=1), "compute")


@pytest.mark.parametrize(
    "family,params", [("gpipe", {}), ("1f1b", {}), ("interleaved-1f1b", {"v": 2}), ("1f1b-split", {})]
)
def test_family_exports_reload_identically(family, params, tmp_path):
    s = build(family, p=4, m=8, **params)
    f = tmp_path / "s.csv"
    save_csv(s, f)
    t = load_csv(f)
    assert t.placement.maps == s.placement.maps
    assert [list(p) for p in t.programs] == [list(p) for p in s.programs]
    assert run(t, semantics="slot").makespan == run(s, semantics="slot").makespan


# --- properties --------------------------------------------------------------------------------

from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.errors import PPVerifyError

ONE_PIPE = [
    ("gpipe", {}),
    ("1f1b", {}),
    ("zb-h1", {}),
    ("zbv", {}),
    ("looped-bfs", {"v": 2}),
    ("interleaved-1f1b", {"v": 2}),
    ("dualpipev", {}),
]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(ONE_PIPE), st.integers(1, 4), st.integers(1, 3), st.data())
def test_round_trip_with_idle_slots_and_markers(fam, p, k, data):
    name, params = fam
    m = k * p if name != "dualpipev" else 2 * p + k
    s = build(name, p=p, m=m, **params)
    progs = []
    # idle cells (a compute_only file) or markers (a compute_comms one, which has no idle cell)
    noise = [None] if data.draw(st.booleans()) else ["UNSHARD", "RESHARD"]
    for d, prog in enumerate(s.programs):
        out = []
        for a in prog:
            extra = data.draw(st.lists(st.sampled_from(noise), max_size=2))
            for e in extra:
                out.append(None if e is None else Marker(e, s.placement.stages_on(d)[0][1]))
            out.append(a)
        progs.append(tuple(out))
    noisy = s.with_programs(tuple(progs))
    cells = [["" if a is None else str(a) for a in prog] for prog in noisy.programs]
    back = parse_rows(cells)
    assert back.programs == noisy.programs and back.placement.maps == s.placement.maps
    # written as compute_only, the markers go (PyTorch's compute-only loader refuses them) and
    # every idle slot stays where it was
    kept = [[c for c in row if not c.endswith(("UNSHARD", "RESHARD"))] for row in cells]
    assert csv_text(back) == "".join(",".join(row) + "\n" for row in kept)
    # idle slots and markers do not change which ops run, nor the order check
    assert structural_problems(back) == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.text(alphabet="0123456789FBIWSENDRCV_();OVERLAPUNSHAR x", max_size=12), max_size=5),
        min_size=1,
        max_size=4,
    )
)
def test_any_cells_parse_or_raise_a_located_error(rows):
    try:
        parse_rows(rows, "f.csv")
    except ScheduleFileError as exc:
        assert str(exc).startswith("f.csv")
    except PPVerifyError:
        pass  # e.g. a placement that cannot be built from the rows: still a one-line user error


def test_pytorch_dump_csv_line_endings(tmp_path):
    # PyTorch's _dump_csv uses csv.writer's default "\r\n"; both endings read the same
    f = tmp_path / "crlf.csv"
    f.write_bytes(b"0F0,0F1,,0B0,,0B1\r\n,1F0,1B0,1F1,1B1\r\n")
    s = load_csv(f)
    assert s.p == 2 and s.programs[0][2] is None and structural_problems(s) == []
    assert csv_text(s) == "0F0,0F1,,0B0,,0B1\n,1F0,1B0,1F1,1B1\n"
