"""A two-pipe text table: each microbatch's pipe is inferred so that the verifier, not the reader,
reports what is wrong (docs/show-and-files.md: ops "on the wrong device ... the verifier reports
them"; "-m 10 reports their ops missing"); and a ``show`` placement line whose name contradicts its
map is refused, as a JSON file's is (core/placement.name_fits).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ppverify.core.errors import ScheduleFileError
from ppverify.core.placement import bidirectional
from ppverify.io.table_text import parse_table, programs_from_cells, schedule_from_programs

# chimera p=2 m=2 at F=B=1 as show prints it; bidirectional(2): pipe 0 maps stages 0,1 to devices
# 0,1, pipe 1 to devices 1,0
CHIMERA = """schedule      chimera p=2 m=2
placement     bidirectional, 2 pipes, 2 stages on 2 devices (device of each stage, pipe 0: 0 1; pipe 1: 1 0)
costs         F=1,B=1,I=0.5,W=0.5 (units; one table tick = 1 unit)

tick    0   1   2   3
dev 0 0F0 1F1 1B1 0B0
dev 1 0F1 1F0 1B0 0B1

makespan      4 units (4 ticks)
"""


def _verify(text: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "t.txt").write_text(text)
    cmd = [sys.executable, "-m", "ppverify", "verify", "t.txt", *args]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)


def test_swapped_ops_are_reported_by_the_placement_check(tmp_path: Path):
    # 0B0 and 0B1 swap devices. Microbatch 0 then has 0F0@0, 1F0@1, 1B0@1, 0B0@1: pipe 0
    # (0->0, 1->1) places 3 of its 4 ops, pipe 1 (0->1, 1->0) only 0B0: pipe 0, and 0B0 on
    # device 1 breaks it (stage 0 of pipe 0 lives on device 0); likewise 0B1 on device 0
    swapped = CHIMERA.replace("1B1 0B0\n", "1B1 0B1\n").replace("1B0 0B1\n", "1B0 0B0\n")
    out = _verify(swapped, tmp_path)
    assert out.returncode == 1, out.stderr
    assert out.stdout.startswith("INVALID")
    assert "op 0B0 is on device 1 but stage 0 of pipe 0 lives on device 0" in out.stdout
    assert "op 0B1 is on device 0 but stage 0 of pipe 1 lives on device 1" in out.stdout
    assert "pipe_of_mb" not in out.stdout + out.stderr


def test_an_absent_microbatch_is_reported_missing(tmp_path: Path):
    # -m 3 on a table of microbatches 0, 1: microbatch 2 has no ops, so fits both pipes; it takes
    # pipe 0, whose ops 0F2, 0B2 belong on device 0 and 1F2, 1B2 on device 1
    out = _verify(CHIMERA, tmp_path, "-m", "3")
    assert out.returncode == 1, out.stderr
    for op, dev in (("0F2", 0), ("0B2", 0), ("1F2", 1), ("1B2", 1)):
        assert f"op {op} is missing (should run on device {dev})" in out.stdout
    assert "pipe_of_mb" not in out.stdout + out.stderr


def test_pipe_inference_ties_take_the_lowest_pipe():
    # 0F0 and 1F0 both on device 0: pipe 0 places 0F0 (stage 0 -> device 0), pipe 1 places 1F0
    # (stage 1 -> device 0): one each, a tie -> pipe 0
    tie = schedule_from_programs(programs_from_cells([["0F0", "1F0"], []]), bidirectional(2))
    assert tie.pipe_of_mb == (0,)
    # 0F0@1, 1F0@0, 1B0@0 fit pipe 1 whole, pipe 0 not at all; 0B0@0 fits only pipe 0: 3 to 1 -> pipe 1
    most = schedule_from_programs(programs_from_cells([["1F0", "1B0", "0B0"], ["0F0"]]), bidirectional(2))
    assert most.pipe_of_mb == (1,)


@pytest.mark.parametrize(
    ("line", "fits"),
    [
        # loop(2, 2) puts stages 0..3 on 0 1 0 1; 0 1 1 0 is the V
        ("loop, 1 pipe, 4 stages on 2 devices (device of each stage, pipe 0: 0 1 1 0)", False),
        ("v, 1 pipe, 4 stages on 2 devices (device of each stage, pipe 0: 0 1 1 0)", True),
        # a name ppverify does not give is a person's own label
        ("my-layout, 1 pipe, 4 stages on 2 devices (device of each stage, pipe 0: 0 1 1 0)", True),
    ],
)
def test_a_placement_line_contradicting_its_map_is_refused(line: str, fits: bool):
    # ZB-V p=2 m=1 at unit costs, its stages on the V 0 1 1 0
    text = f"""schedule      zbv p=2 m=1
placement     {line}
costs         unit

tick    0   1   2   3   4   5
dev 0 0F0   .   . 3F0 3B0 0B0
dev 1   . 1F0 2F0 2B0 1B0   .
"""
    if fits:
        assert parse_table(text).placement.maps == ((0, 1, 1, 0),)
    else:
        with pytest.raises(ScheduleFileError, match=r"t\.txt: placement: 'loop' disagrees with its map"):
            parse_table(text, path="t.txt")


def test_a_contradicting_placement_line_exits_2_and_give_placement_reads_it(tmp_path: Path):
    text = """schedule      zbv p=2 m=1
placement     loop, 1 pipe, 4 stages on 2 devices (device of each stage, pipe 0: 0 1 1 0)
costs         unit

tick    0   1   2   3   4   5
dev 0 0F0   .   . 3F0 3B0 0B0
dev 1   . 1F0 2F0 2B0 1B0   .
"""
    out = _verify(text, tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "ppverify verify: error: t.txt: placement: 'loop' disagrees with its map (pipe 0: 0 1 1 0): "
        "correct the name, or give --placement"
    ]
    # the advice can be followed: the V this table is
    assert _verify(text, tmp_path, "--placement", "v").returncode == 0
