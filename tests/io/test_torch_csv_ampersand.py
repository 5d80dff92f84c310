"""A PyTorch CSV cell must read the same in PyTorch's grammar as in ppverify's.

``0F2&0B0`` (the short form of ppverify's text tables) was read by ppverify as an overlapped slot,
so ``verify`` said VALID and ``measure`` (which runs ppverify's re-serialised rows) matched the
gradients, while PyTorch's ``_Action.from_str`` matches a prefix and reads ``0F2``, dropping
``0B0``: PyTorch's own loader fails on the file. Such cells are now refused at the cell.
"""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.errors import ScheduleFileError
from ppverify.core.ops import Overlap, parse_action
from ppverify.io.table_text import read_text_table
from ppverify.io.torch_csv import parse_rows, torch_reading
from ppverify.io.torch_interop import torch_available

# the hunter's file: p = 2, m = 3, lowered; rank 0's seventh cell fuses 0F2 with 0B0
AMPC = (
    "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0F2&0B0,0SEND_F2,0RECV_B1,0B1,0RECV_B2,0B2,0REDUCE_GRAD,0RESHARD\n"
    "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1RECV_F2,1F1,1B1,1SEND_B1,1F2,1B2,1SEND_B2,1REDUCE_GRAD,1RESHARD\n"
)
# counted by hand: 0UNSHARD(1) 0F0(2) 0SEND_F0(3) 0F1(4) 0SEND_F1(5) 0RECV_B0(6) 0F2&0B0(7)
AMPC_LINE = "row 1 (rank 0), column 7: PyTorch reads 0F2&0B0 as 0F2; write (0F2;0B0)OVERLAP_F_B"


@pytest.mark.parametrize("command", [["verify"], ["import", "--torch"], ["measure"], ["simulate"], ["export"]])
def test_an_ampersand_cell_is_refused_at_its_cell_by_every_command(tmp_path, capsys, command):
    path = tmp_path / "ampc.csv"
    path.write_text(AMPC)
    argv = [command[0], str(path), *command[1:]]
    if command[0] == "export":
        argv += ["-o", str(tmp_path / "out.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.endswith(f"{path}: {AMPC_LINE}"), err


def test_the_fix_it_names_reads_as_intended(tmp_path, capsys):
    # the file written as the message says: its seventh cell is one overlapped slot of 0F2 and
    # 0B0 in both grammars, and the file verifies (the order the hunter's file meant)
    fixed = AMPC.replace("0F2&0B0", "(0F2;0B0)OVERLAP_F_B")
    slot = parse_rows([row.split(",") for row in fixed.splitlines()], "x.csv").programs[0][6]
    assert isinstance(slot, Overlap) and [str(o) for o in slot.ops] == ["0F2", "0B0"]
    assert torch_reading("(0F2;0B0)OVERLAP_F_B") == "(0F2;0B0)OVERLAP_F_B"
    path = tmp_path / "fixed.csv"
    path.write_text(fixed)
    assert main(["verify", str(path)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize(
    "cell, rule",
    [
        # a pair that is no F and B: PyTorch still reads its prefix, and no overlap is offered
        ("0F1&0F2", "PyTorch reads 0F1&0F2 as 0F1; write one action per cell, an overlapped F and B as"),
        # idle in ppverify's tables, refused by PyTorch ("Invalid action string: .")
        (".", "PyTorch refuses '.'; leave the cell empty for an idle slot"),
        # an ampersand PyTorch's regex cannot start on at all
        ("&0F1", "PyTorch refuses &0F1; write"),
    ],
)
def test_cells_pytorch_reads_otherwise_are_refused(cell, rule):
    with pytest.raises(ScheduleFileError) as exc:
        parse_rows([["0F0", cell, "0B0"]], "c.csv")
    assert exc.value.location == "row 1 (rank 0), column 2"
    assert exc.value.rule.startswith(rule), exc.value.rule


def test_no_csv_message_offers_the_ampersand_form():
    # a cell that is no action: the forms listed are the ones PyTorch reads
    with pytest.raises(ScheduleFileError) as exc:
        parse_rows([["0F0", "0X1"]], "c.csv")
    assert "&" not in exc.value.rule and "(0F7;7B3)OVERLAP_F_B" in exc.value.rule


def test_text_tables_keep_the_short_form():
    # ppverify's own table layout still reads 0F1&0B0 as one overlapped slot
    _, cells = read_text_table("tick 0\ndev 0 0F1&0B0")
    assert parse_action("0F1&0B0") == parse_action("(0F1;0B0)OVERLAP_F_B")
    assert cells.cells  # read without error


@pytest.mark.skipif(not torch_available(), reason="needs torch")
@pytest.mark.parametrize(
    "cell",
    [
        "0F1",
        " 2I3 ",
        "00F1",
        "3SEND_F1",
        "0UNSHARD",
        "(0F7;7B3)OVERLAP_F_B",
        "( 0F7 ; 7B3 )OVERLAP_F_B",
        "0F2&0B0",
        "0F1xyz",
        "2BW0",
        ".",
        "",
    ],
)
def test_torch_reading_is_pytorchs_own(cell):
    # the oracle: PyTorch 2.13's _Action.from_str on the same text ("" where it raises)
    from torch.distributed.pipelining.schedules import _Action

    try:
        action = _Action.from_str(cell)
        expected = None if action is None else str(action)
    except RuntimeError:
        expected = ""
    assert torch_reading(cell) == expected
