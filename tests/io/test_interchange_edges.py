"""Edges of the PyTorch CSV interchange: what ``export`` writes for PyTorch's compute-only loader
and what ``import`` says it read."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.io.torch_csv import csv_text, load_csv, parse_rows, to_rows
from ppverify.schedules import build


def test_compute_only_output_leaves_out_the_markers():
    # PyTorch's compute_only loader refuses any non-compute action ("Expected compute-only schedule
    # but found communication action '0UNSHARD'"), and its lowering adds UNSHARD/RESHARD and
    # REDUCE_GRAD itself: a p=1 lowered file (markers, no SEND/RECV) written as compute_only keeps
    # only its four compute ops, in order
    s = parse_rows([["0UNSHARD", "0F0", "0F1", "0B0", "0B1", "0REDUCE_GRAD", "0RESHARD"]])
    assert to_rows(s) == [["0F0", "0F1", "0B0", "0B1"]]


def test_compute_comms_file_converts_to_the_compute_only_file_it_was_lowered_from(tmp_path):
    # a compute_comms file is the compute_only one plus SEND/RECV and markers: converting back
    # must give exactly the compute_only export (same compute ops, same order)
    s = build("zbv", p=2, m=2)
    comms = tmp_path / "c.csv"
    comms.write_text(csv_text(s, "compute_comms"))
    assert "UNSHARD" in comms.read_text()
    assert csv_text(load_csv(comms)) == csv_text(s)
    out = tmp_path / "o.csv"
    assert main(["export", str(comms), "-o", str(out)]) == 0
    assert out.read_text() == csv_text(s)
    assert not any(word in out.read_text() for word in ("SEND", "RECV", "UNSHARD", "RESHARD", "REDUCE_GRAD"))


def test_compute_only_export_of_a_comms_file_loads_in_pytorch(tmp_path):
    pytest.importorskip("torch")
    from ppverify.io.torch_interop import torch_runtime_load

    comms = tmp_path / "c.csv"
    comms.write_text(csv_text(build("1f1b", p=2, m=2), "compute_comms"))
    out = tmp_path / "o.csv"
    assert main(["export", str(comms), "-o", str(out)]) == 0
    # PyTorch lowers it again; rank 1 of 1F1B p=2 m=2 sends the gradients of both microbatches
    lowered = torch_runtime_load(out, 2, 2, 2)
    assert [a for a in lowered[1] if "SEND" in a] == ["1SEND_B0", "1SEND_B1"]


@pytest.mark.parametrize(
    "name,text,kind",
    [
        (
            "g.txt",
            "        Rank 0 Rank 1\nStep 0: 0F0\nStep 1:        1F0\nStep 2:        1B0\nStep 3: 0B0\n",
            "text table",
        ),
        ("g.json", None, "ppverify JSON"),
    ],
)
def test_import_names_what_it_read_for_json_and_tables(tmp_path, capsys, name, text, kind):
    # a JSON schedule or a text table has no CSV flavour: 'read as' said 'None'
    path = tmp_path / name
    if text is None:
        assert main(["export", "gpipe", "-p", "2", "-m", "1", "-o", str(path)]) == 0
    else:
        path.write_text(text)
    capsys.readouterr()
    assert main(["import", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"read as       {kind}: 2 ranks, 2 stages, 1 microbatches" in out
    assert main(["import", str(path), "--json"]) == 0
    assert f'"format": "{kind}"' in capsys.readouterr().out


def test_a_v_table_without_a_placement_reads_the_rows_map():
    # ZB-V on 2 devices holds 4 stages in a V: device 0 stages 0 and 3, device 1 stages 1 and 2.
    # Linear over 2 rows would put stages 2 and 3 out of range; the rows say where each stage is.
    from ppverify.core.ops import compute_ops
    from ppverify.engines.table import format_schedule_table
    from ppverify.io.table_text import parse_table

    s = build("zbv", p=2, m=2)
    back = parse_table(format_schedule_table(s, style="torch"))
    assert back.placement.maps == ((0, 1, 1, 0),) and back.placement.name == "v"
    assert [list(compute_ops(p)) for p in back.programs] == [list(p) for p in s.programs]


def test_a_table_with_a_stage_in_no_row_names_it():
    # stages 0, 1 and 3 appear; stage 2 is in no row: one mistyped 3F0 is likelier than a stage
    # left out, so the 3F0 is named at its cell (line 3 is Step 1, the cell under Rank 0)
    from ppverify.core.errors import ScheduleFileError
    from ppverify.io.table_text import parse_table

    with pytest.raises(ScheduleFileError) as err:
        parse_table("        Rank 0 Rank 1\nStep 0: 0F0    1F0\nStep 1: 3F0\n", path="t.txt")
    assert err.value.location == "line 3 (rank 0)"
    assert err.value.rule.startswith("3F0 names stage 3, but no cell names stage 2: a typo?")


def test_import_torch_of_a_two_pipe_schedule_is_refused_naming_the_option(tmp_path, capsys):
    # Chimera p=2 has two pipes (stage 0 on device 0 for pipe 0, on device 1 for pipe 1): PyTorch's
    # validation has one rank per stage, so --torch cannot apply; it failed with the CSV writer's
    # "cannot be written", which names no option of import
    path = tmp_path / "chimera.json"
    assert main(["export", "chimera", "-p", "2", "-m", "2", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["import", str(path), "--torch"]) == 2
    err = capsys.readouterr().err
    assert "parameter --torch=True" in err and "has 2 pipes: leave --torch out" in err
    assert main(["import", str(path)]) == 0  # without --torch it is checked as any schedule


@pytest.mark.parametrize(
    "argv,option",
    [
        (["--v", "3"], "--v"),  # a file's stages per rank are its own: --v was dropped unread
        (["-p", "7"], "-p"),  # a file's ranks are its rows: -p 7 was dropped unread
    ],
)
def test_import_refuses_torch_class_sizes_beside_a_file(tmp_path, capsys, argv, option):
    path = tmp_path / "s.csv"
    path.write_text("0F0,0B0\n1F0,1B0\n")
    assert main(["import", str(path), *argv]) == 2
    assert f"parameter {option}=" in capsys.readouterr().err


@pytest.mark.parametrize("argv,option", [(["--placement", "v"], "--placement"), (["--stages", "3"], "--stages")])
def test_import_refuses_file_options_beside_torch_class(capsys, argv, option):
    # --placement and --stages describe a file; PyTorch's class builds its own lists and map
    assert main(["import", "--torch-class", "GPipe", "-p", "2", "-m", "2", *argv]) == 2
    assert f"parameter {option}=" in capsys.readouterr().err


def test_export_to_csv_says_the_files_costs_and_comm_stay_behind(tmp_path, capsys):
    # the JSON times 1F1B p=2 m=2 with F=1,B=3 and c=0.5: async (m+p-1)(tF+tB) + 2(p-1)c = 12 + 1 = 13;
    # its CSV holds the order only, so simulate of the CSV times it with the default F=1,B=2: 3*3 = 9
    src, out = tmp_path / "s.json", tmp_path / "s.csv"
    assert (
        main(
            ["show", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=3", "--comm-delay", "0.5"]
            + ["--save", str(src), "--no-table"]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["export", str(src), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "a PyTorch CSV holds the order only; the file's costs and communication stay behind" in err
    assert main(["export", str(src), "-o", str(tmp_path / "copy.json")]) == 0
    assert "stay behind" not in capsys.readouterr().err  # JSON keeps them
    for path, makespan in ((src, 13.0), (out, 9.0)):
        assert main(["simulate", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["makespan"] == makespan


def test_import_refuses_style_beside_json(tmp_path, capsys):
    # --json prints one object with no table, so --style would be dropped unread (show refuses it too)
    path = tmp_path / "s.csv"
    path.write_text("0F0,0B0\n1F0,1B0\n")
    assert main(["import", str(path), "--json", "--style", "torch"]) == 2
    assert "parameter --style=torch: --json prints no table" in capsys.readouterr().err


def test_a_lowered_one_rank_file_is_read_as_compute_comms(tmp_path, capsys):
    # PyTorch's lowering of GPipe p=1 m=2 has markers and no SEND/RECV (one rank sends nothing);
    # its compute-only loader refuses the markers, so the file only runs as compute_comms, where
    # the REDUCE_GRAD rules hold: without 0REDUCE_GRAD the gradients are never scaled by 1/m
    path = tmp_path / "p1.csv"
    path.write_text("0UNSHARD,0F0,0F1,0B0,0B1,0REDUCE_GRAD,0RESHARD\n")
    assert main(["import", str(path)]) == 0
    assert "read as       compute_comms: 1 ranks, 1 stages, 2 microbatches" in capsys.readouterr().out
    path.write_text("0UNSHARD,0F0,0F1,0B0,0B1,0RESHARD\n")
    assert main(["import", str(path)]) == 1
    assert "reduction: stage 0's gradients are never reduced" in capsys.readouterr().out


def test_a_mistyped_huge_stage_in_a_table_is_refused_before_inferring_its_map():
    # 999999999F0 on 2 rows would mean a billion stages to place one by one: the limit on implied
    # ops (2 x S x m) refuses it first, naming the counts
    from ppverify.core.limits import LimitError
    from ppverify.io.table_text import parse_table

    text = "        Rank 0      Rank 1\nStep 0: 0F0         1F0\nStep 1: 999999999F0 1B0\nStep 2: 0B0\n"
    with pytest.raises(LimitError, match="t.txt: 1000000000 stages x 1 microbatches"):
        parse_table(text, path="t.txt")


def test_export_of_a_table_read_with_a_larger_m_refuses_a_csv(tmp_path, capsys):
    # 1F1B p=2 m=2 as a grid: -m 3 reads it as a schedule of 3 microbatches whose third has no
    # ops; a CSV carries no m, so the file would hold m=2 while "wrote ... m=3" said otherwise
    grid = tmp_path / "g.txt"
    grid.write_text("tick   0   1   2   3\ndev 0 0F0 0F1 0B0 0B1\ndev 1   . 1F0 1B0 1F1\n", encoding="utf-8")
    assert main(["export", str(grid), "-m", "3", "-o", str(tmp_path / "g.csv")]) == 2
    assert "a PyTorch CSV does not carry m, and the schedule's ops name 2 microbatches" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()
    # JSON carries m: the 3 is written (and verify then names mb 2's missing ops)
    assert main(["export", str(grid), "-m", "3", "-o", str(tmp_path / "g.json")]) == 0
    assert '"m": 3' in (tmp_path / "g.json").read_text(encoding="utf-8")


def test_a_placement_name_that_contradicts_its_maps_is_refused(tmp_path, capsys):
    # device 0 holds stages 0 and 3 of p=2: a V; calling it "linear" would be printed as fact in
    # every report ("linear placement"), so the file is refused naming the key; a person's own
    # label, or one wave called "wave" (Hanayo's one wave is a V), reads as before
    base = {
        "format": "ppverify-schedule",
        "version": 1,
        "p": 2,
        "m": 1,
        "placement": {"name": "linear", "maps": [[0, 1, 1, 0]]},
        "programs": [["0F0", "3F0", "3B0", "0B0"], ["1F0", "2F0", "2B0", "1B0"]],
    }
    path = tmp_path / "named.json"
    path.write_text(json.dumps(base))
    capsys.readouterr()
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert "placement.name" in err and "'linear' disagrees with placement.maps [[0, 1, 1, 0]]" in err
    for name in ("v", "wave", "my-layout"):
        path.write_text(json.dumps({**base, "placement": {"name": name, "maps": [[0, 1, 1, 0]]}}))
        assert main(["verify", str(path)]) == 0, name
    capsys.readouterr()
