"""``ppverify import`` and ``ppverify export``."""

from __future__ import annotations

import json
from pathlib import Path

from ppverify.cli import main
from ppverify.io import load_schedule
from ppverify.io.torch_csv import load_csv

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"


def test_import_valid_file(capsys):
    assert main(["import", str(DATA / "zb1p_2rank_2stagep_compute.csv")]) == 0
    out = capsys.readouterr().out
    assert "compute_only: 2 ranks, 4 stages, 8 microbatches" in out
    assert "loop: stage -> rank [0, 1, 0, 1]" in out
    # PyTorch's test merges adjacent I,W into B before lowering; unmerged it also takes 113 steps
    assert "torch steps   113" in out
    assert "verdict       VALID" in out


def test_import_json_report(capsys):
    # PyTorch's simulator fixture has SEND/RECV but no REDUCE_GRAD: run as written, it would train
    # with gradients m times too large, so it is INVALID (reduction) though it times fine
    assert main(["import", str(DATA / "zb1p_2rank_2stagep_comms.csv"), "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert not rep["valid"] and rep["format"] == "compute_comms" and rep["torch_steps"] == 113
    assert rep["structure"]["ok"] and rep["comms"]["ok"] and rep["order"]["ok"]
    assert sorted(v.split(":")[0] for v in rep["verifier"]["violations"]) == ["reduction"] * 4
    # loop placement on 2 ranks: all 3 stage boundaries cross ranks; per microbatch 3 forward and
    # 3 backward transfers, each a SEND and a RECV: 12 per microbatch, 8 microbatches
    assert rep["cells"]["comm"] == 12 * 8


def test_import_bad_cell_is_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "bad.csv"
    f.write_text("0F0,0B0\n1F0,1F1xyz\n")
    assert main(["import", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "row 2 (rank 1), column 2: '1F1xyz' is not an action" in err[0]


def test_import_deadlock_is_invalid_exit_1(tmp_path, capsys):
    f = tmp_path / "dl.csv"
    f.write_text("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n")
    assert main(["import", str(f)]) == 1
    out = capsys.readouterr().out
    assert "deadlock" in out and "verdict       INVALID" in out
    try:
        import ppverify.verify  # noqa: F401
    except ImportError:
        return
    # the Z3 verifier names the wait cycle and its minimal core
    assert "Z3 verifier   INVALID" in out and "core: 0B0 0F1 1F1 1B0" in out


def test_import_with_given_placement(tmp_path, capsys):
    f = tmp_path / "v.csv"
    f.write_text("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n")
    assert main(["import", str(f)]) == 0
    assert "v: stage -> rank [0, 1, 1, 0]" in capsys.readouterr().out
    assert main(["import", str(f), "--placement", "loop"]) == 1
    assert "is on device" in capsys.readouterr().out


def test_export_torch_csv_to_file(tmp_path, capsys):
    out = tmp_path / "zbv.csv"
    assert main(["export", "zbv", "-p", "2", "-m", "4", "-o", str(out)]) == 0
    s = load_csv(out)
    assert s.placement.name == "v" and s.m == 4
    # by hand from the ZB-V phases, device 0 (stages 0 and 3): 3 warm-up forwards of stage 0,
    # then stage 3's F, I, W, and the steady pattern
    assert out.read_text().splitlines()[0].startswith("0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3")


def test_export_comms_flavour_and_json(tmp_path, capsys):
    assert main(["export", "gpipe", "-p", "2", "-m", "1", "--format", "torch-csv-comms"]) == 0
    # PyTorch's runtime lowering by hand: UNSHARD before the first use, REDUCE_GRAD after the last
    # B, RESHARD at the end, then the SEND/RECV pass (each marker takes a round of it)
    assert capsys.readouterr().out == (
        "0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0RESHARD\n"
        "1UNSHARD,1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1RESHARD\n"
    )
    j = tmp_path / "s.json"
    assert main(["export", str(DATA / "dualpipev_4rank_10mb.csv"), "--format", "json", "-o", str(j)]) == 0
    back = load_schedule(j)
    ref = load_csv(DATA / "dualpipev_4rank_10mb.csv")
    assert [list(map(str, p)) for p in back.programs] == [list(map(str, p)) for p in ref.programs]


def test_export_takes_its_format_from_the_name_and_refuses_a_contradiction(tmp_path, capsys):
    j = tmp_path / "s.json"
    assert main(["export", "gpipe", "-p", "2", "-m", "2", "-o", str(j)]) == 0  # no --format: JSON
    assert json.loads(j.read_text())["format"] == "ppverify-schedule"
    c = tmp_path / "s.csv"
    assert main(["export", "gpipe", "-p", "2", "-m", "2", "-o", str(c)]) == 0  # GPipe by hand, p = m = 2
    assert c.read_text() == "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n"
    capsys.readouterr()
    for name, fmt, holds in (
        ("x.json", "torch-csv", "CSV"),
        ("x.json", "torch-csv-comms", "CSV"),
        ("x.csv", "json", "JSON"),
    ):
        out = tmp_path / name
        assert main(["export", "gpipe", "-p", "2", "-m", "2", "--format", fmt, "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"a .{name[2:]} name for --format {fmt} would hold {holds}" in err and not out.exists()


def test_export_name_without_a_format_is_refused(tmp_path, capsys):
    # x.yaml received CSV that no reader of ppverify takes back; with --format the name is free
    out = tmp_path / "x.yaml"
    assert main(["export", "gpipe", "-p", "2", "-m", "2", "-o", str(out)]) == 2
    assert "the format is read from the name" in capsys.readouterr().err and not out.exists()
    txt = tmp_path / "x.txt"
    assert main(["export", "gpipe", "-p", "2", "-m", "2", "--format", "torch-csv", "-o", str(txt)]) == 0
    assert txt.read_text() == "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n"  # GPipe by hand, p = m = 2


def test_export_two_pipes_refused(capsys):
    assert main(["export", "dualpipe", "-p", "4", "-m", "8"]) == 2
    assert "two-pipe" in capsys.readouterr().err


def test_import_torch_class_shows_1f1b_bug(capsys):
    assert main(["import", "--torch-class", "1F1B", "-p", "4", "-m", "8", "--torch"]) == 1
    out = capsys.readouterr().out
    assert "op 3F8 on device 3" in out and "op 3F0 is missing" in out
    assert "F1..Fm instead of F0..F(m-1)" in out
    assert main(["import", "--torch-class", "ZBVZeroBubble", "-p", "4", "-m", "8"]) == 0


def test_import_checks_send_recv_of_comms_files(tmp_path, capsys):
    text = (DATA / "zb1p_2rank_2stagep_comms.csv").read_text().replace("2RECV_B6,", "", 1)
    f = tmp_path / "broken.csv"
    f.write_text(text)
    assert main(["import", str(f)]) == 1
    out = capsys.readouterr().out
    assert "2RECV_B6 is missing (rank 0, before 2B6)" in out and "verdict       INVALID" in out


def test_import_prints_the_table(capsys):
    assert main(["import", str(DATA / "zb1p_2rank_2stagep_compute.csv"), "--style", "torch"]) == 0
    cap = capsys.readouterr()
    assert "Rank 0" in cap.out and "Step 00:" in cap.out and cap.err == ""
    # the layout option has one name in show and import; the old one still works and says so
    assert main(["import", str(DATA / "zb1p_2rank_2stagep_compute.csv"), "--table", "torch"]) == 0
    old = capsys.readouterr()
    assert old.out == cap.out
    assert old.err == "ppverify import: warning: --table is deprecated, use --style (the same values)\n"
    assert main(["show", "1f1b", "-p", "2", "-m", "2", "--style", "torch"]) == 0
    assert "Rank 0" in capsys.readouterr().out
