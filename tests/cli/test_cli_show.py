"""``ppverify show``: tables and metrics against values derived by hand, files, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, replace

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.io.json_format import read_json, schedule_to_dict
from ppverify.schedules import build, families, get_family


def show_json(capsys, *args) -> dict:
    assert main(["show", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def error_of(capsys, *args) -> str:
    assert main(["show", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ppverify show: error: ")
    assert "Traceback" not in err
    return err


# GPipe/1F1B makespan (m+p-1)(tF+tB) and GPipe bubble (p-1)/(m+p-1) (Huang et al., GPipe, NeurIPS'19);
# 1F1B peak on device d = min(p-d, m); GPipe peak m everywhere. No --costs: the default F=1, B=2.
@pytest.mark.parametrize(
    "family,p,m,costs,makespan,peaks",
    [
        ("gpipe", 4, 4, None, 7 * 3, [4, 4, 4, 4]),
        ("1f1b", 4, 4, None, 7 * 3, [4, 3, 2, 1]),
        ("gpipe", 4, 4, "F=1,B=2", 7 * 3, [4, 4, 4, 4]),
        ("1f1b", 4, 4, "F=1,B=2", 7 * 3, [4, 3, 2, 1]),
        ("gpipe", 4, 8, None, 11 * 3, [8, 8, 8, 8]),
        ("1f1b", 4, 8, "F=1,B=2", 11 * 3, [4, 3, 2, 1]),
    ],
)
def test_json_metrics_match_hand_derived_values(capsys, family, p, m, costs, makespan, peaks):
    args = [family, "-p", str(p), "-m", str(m)] + (["--costs", costs] if costs else [])
    out = show_json(capsys, *args)
    assert out["makespan"] == makespan
    assert out["bubble_ratio"] == pytest.approx((p - 1) / (m + p - 1))
    assert out["peak_activations"] == peaks
    busy = m * 3
    assert out["busy"] == [busy] * p and out["idle"] == [makespan - busy] * p
    assert "idle/total" in out["bubble_convention"]
    assert len(out["table"]) == p and all(len(row) == makespan for row in out["table"])


def test_text_output_shows_table_metrics_and_convention(ppverify_cli):
    # --width 0: one block of ticks whatever the terminal's width (COLUMNS) where the test runs
    run = ppverify_cli("show", "gpipe", "-p", "4", "-m", "4", "--width", "0")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "schedule      gpipe p=4 m=4" in out
    # default costs F=1, B=2: device 3 idles 3 ticks, runs 4 forwards, then 4 backwards 2 ticks each,
    # and idles while the gradients travel back: (m+p-1)(tF+tB) = 7 * 3 = 21 ticks
    assert "dev 3   .   .   . 3F0 3F1 3F2 3F3 3B0 3B0 3B1 3B1 3B2 3B2 3B3 3B3   .   .   .   .   .   ." in out, out
    assert "makespan      21 units (21 ticks)" in out
    assert "bubble ratio  0.4286" in out and "idle/total" in out
    assert "peak activations" in out


def test_torch_style_and_no_table(capsys):
    assert main(["show", "1f1b", "-p", "2", "-m", "2", "--style", "torch"]) == 0
    out = capsys.readouterr().out
    assert "        Rank 0 Rank 1\nStep 0: 0F0\nStep 1: 0F1    1F0\n" in out
    assert main(["show", "1f1b", "-p", "2", "-m", "2", "--no-table"]) == 0
    assert "Rank 0" not in capsys.readouterr().out and "dev 0" not in capsys.readouterr().out


def test_family_parameters_reach_the_generator(capsys):
    out = show_json(capsys, "interleaved-1f1b", "-p", "4", "-m", "8", "--v", "2")
    assert out["params"]["v"] == 2 and len(out["placement"]["maps"][0]) == 8
    out = show_json(capsys, "hanayo", "-p", "4", "-m", "4", "--waves", "2")
    assert out["params"]["waves"] == 2 and len(out["placement"]["maps"][0]) == 16


def test_comm_delay_is_charged_per_column(capsys):
    # Chimera's per-column model: every op with a cross-device edge pays c; GPipe/1F1B at p=4, m=4
    # then take (m+p-1)(tF+tB+2c) = 7 * (3 + 1) = 28 with c = 0.5 at the default tF = 1, tB = 2
    out = show_json(capsys, "1f1b", "-p", "4", "-m", "4", "--comm-delay", "0.5")
    assert out["makespan"] == pytest.approx(28.0)
    assert out["comm_delay_per_column"] == 0.5


def test_save_and_show_the_file(capsys, tmp_path):
    path = tmp_path / "s.json"
    first = show_json(capsys, "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--save", str(path))
    doc = read_json(path)
    assert doc.costs is not None and doc.table is not None
    again = show_json(capsys, str(path))  # the file's own costs are used
    for k in ("makespan", "bubble_ratio", "peak_activations", "table"):
        assert again[k] == first[k]
    assert again["embedded_table"] == {"checked": True, "matches": True}
    # a different cost model on the command line: table not compared, metrics follow the new costs
    unit = show_json(capsys, str(path), "--costs", "F=1,B=1")
    assert unit["makespan"] == 22 and unit["embedded_table"]["checked"] is False


def test_save_keeps_the_files_communication(capsys, tmp_path):
    # show FILE --save dropped the transfers an optimized schedule was made for
    made, copy = tmp_path / "opt.json", tmp_path / "copy.json"
    argv = ["optimize", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "1", "--save", str(made)]
    assert main([*argv, "--no-chart"]) == 0
    assert main(["show", str(made), "--save", str(copy), "--no-table"]) == 0
    assert read_json(copy).comm == read_json(made).comm and read_json(copy).comm.comm.delay == 1.0
    capsys.readouterr()
    assert main(["simulate", str(copy), "--json"]) == 0
    # 1F1B-like optimum on two devices: (m + p - 1)(F + B) + 2(p - 1)c = 15 + 2
    assert json.loads(capsys.readouterr().out)["makespan"] == 17


def test_embedded_table_that_disagrees_is_reported(capsys, tmp_path):
    s = build("gpipe", p=2, m=1)
    d = schedule_to_dict(s)
    d["table"] = {"tick": 1, "grid": [["0F0", None, "0B0"], [None, "1F0", "1B0"]]}  # 0B0 one tick early
    path = tmp_path / "t.json"
    path.write_text(json.dumps(d))
    out = show_json(capsys, str(path))
    assert out["embedded_table"]["matches"] is False
    assert out["embedded_table"]["first_difference"] == {"device": 0, "tick": 2, "file": "0B0", "engine": None}
    assert main(["show", str(path)]) == 0
    assert "table in the file: DIFFERS" in capsys.readouterr().out


@dataclass(frozen=True)
class FakeFormula:
    """Shaped like ppverify.engines.formulas.Formula (values and per-metric kinds)."""

    makespan: float
    bubble_ratio: float
    peak_activations: tuple
    makespan_kind: str = "exact"
    peak_kind: str = "exact"
    conditions: str = "tF = tB"
    source: str = "by hand"

    @property
    def exact(self) -> bool:
        return self.makespan_kind == self.peak_kind == "exact"


# GPipe at p=4, m=4, F=1, B=2, written here independently of ppverify.engines.formulas: makespan 21,
# bubble 3/7, peak 4 on every device
GPIPE = FakeFormula(21.0, 3 / 7, (4, 4, 4, 4))


@pytest.mark.parametrize(
    "formula,agrees,words",
    [
        (GPIPE, [True, True, True], "equal (exact)"),
        (replace(GPIPE, makespan=20.0, bubble_ratio=0.4), [False, False, True], "DIFFERS (claimed exact)"),
        (
            replace(GPIPE, makespan=20.0, bubble_ratio=0.4, makespan_kind="lower bound"),
            [True, True, True],
            "lower bound holds",
        ),
        (
            replace(GPIPE, peak_activations=(3, 3, 3, 3), peak_kind="upper bound"),
            [True, True, False],
            "upper bound VIOLATED",
        ),
        (
            replace(GPIPE, peak_activations=(5, 4, 4, 4), peak_kind="upper bound"),
            [True, True, True],
            "upper bound holds",
        ),
    ],
)
def test_formula_values_and_agreement(capsys, monkeypatch, formula, agrees, words):
    """The report compares whatever formula the family has; here stand-ins with known values."""
    fam = replace(get_family("gpipe"), formula=lambda p, m, costs, **params: formula)
    monkeypatch.setattr("ppverify.schedules.get_family", lambda name: fam)
    out = show_json(capsys, "gpipe", "-p", "4", "-m", "4", "--costs", "F=1,B=2")
    assert out["formula"]["makespan"] == formula.makespan
    assert list(out["formula"]["agrees"].values()) == agrees
    assert main(["show", "gpipe", "-p", "4", "-m", "4", "--costs", "F=1,B=2"]) == 0
    captured = capsys.readouterr()
    assert words in captured.out
    assert ("contradicts" in captured.err) == (False in agrees)


def test_default_costs_reach_the_formula(capsys, monkeypatch):
    seen = []
    fam = replace(get_family("gpipe"), formula=lambda p, m, costs, **params: seen.append(costs) or GPIPE)
    monkeypatch.setattr("ppverify.schedules.get_family", lambda name: fam)
    show_json(capsys, "gpipe", "-p", "4", "-m", "4")
    show_json(capsys, "gpipe", "-p", "4", "-m", "4", "--costs", "F=1,B=2")
    # no --costs: the default abstract costs, the same as F=1,B=2
    assert seen == [{"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0}] * 2


def test_registered_formulas_agree_with_the_table_where_exact(capsys, buildable):
    """Cross-check of two abstraction levels through the command, for every family with a formula."""
    checked = 0
    for fam in families():
        if fam.formula is None:
            continue
        for p, m, _ in buildable(fam.name, ((4, 4), (4, 8), (2, 2))):
            out = show_json(capsys, fam.name, "-p", str(p), "-m", str(m))
            f = out["formula"]
            if f and "unavailable" not in f and f["exact"]:
                assert f["agrees"]["makespan"] is not False, (fam.name, p, m, f)
                checked += 1
    assert checked >= 1


# --------------------------------------------------------------------------- errors


def test_unknown_family_lists_known_ones(capsys):
    err = error_of(capsys, "nosuch", "-p", "2")
    assert "unknown schedule family" in err and "gpipe" in err and "1f1b" in err


@pytest.mark.parametrize(
    "args,words",
    [
        (["gpipe", "-p", "2", "-m", "0"], "parameter -m=0"),
        (["gpipe", "-p", "0"], "parameter -p=0"),
        (["gpipe", "--costs", "F=1,X=2"], "unknown kind 'X'"),
        (["gpipe", "--costs", "F=0"], "F must be > 0"),
        (["gpipe", "--comm-delay", "-1"], "comm-delay=-1.0"),
        (["chimera", "-p", "3", "-m", "3"], "parameter -p=3"),
        (["missing.json"], "missing.json: file not found"),
    ],
)
def test_bad_parameters_one_line_exit_2(capsys, args, words):
    assert words in error_of(capsys, *args)


def test_malformed_file_one_line_with_location(capsys, tmp_path):
    d = schedule_to_dict(build("1f1b", p=2, m=2))
    d["programs"][1][3] = "1B9x"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    err = error_of(capsys, str(path))
    assert f"{path}: programs[1][3]: '1B9x' is not an action" in err


def test_structurally_broken_file_is_an_error_not_a_traceback(capsys, tmp_path):
    d = schedule_to_dict(build("1f1b", p=2, m=2))
    d["programs"][1].pop()  # 1B1 missing
    path = tmp_path / "short.json"
    path.write_text(json.dumps(d))
    assert "op 1B1 is missing" in error_of(capsys, str(path))


def test_save_to_unwritable_place(capsys, tmp_path):
    err = error_of(capsys, "gpipe", "-p", "2", "--save", str(tmp_path / "no" / "dir" / "s.json"))
    assert "--save" in err and "does not exist" in err  # checked before the build (issue 22 item 6)


def test_installed_command_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text('{"format": "ppverify-schedule",, }')
    proc = subprocess.run(
        [sys.executable, "-m", "ppverify", "show", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert (
        proc.stderr
        == f"ppverify show: error: {bad}: line 1 column 32: invalid JSON: Expecting property name enclosed in double quotes\n"
    )


# --------------------------------------------------------------------------- text tables as input

# Chimera p=4, m=4 at unit slots as PyTorch would print it (issue 2: makespan 10, peaks 3,4,4,3)
CHIMERA_GRID = """\
        Rank 0 Rank 1 Rank 2 Rank 3
Step 0: 0F0                  0F2
Step 1: 0F1    1F0    1F2    0F3
Step 2:        2F2    2F0
Step 3: 3F2    1F1    1F3    3F0
Step 4: 3B2    2F3    2F1    3B0
Step 5: 3F3    2B2    2B0    3F1
Step 6: 3B3    1B0    1B2    3B1
Step 7: 0B0    2B3    2B1    0B2
Step 8:        1B1    1B3
Step 9: 0B1                  0B3
"""


def test_text_table_input(capsys, tmp_path):
    path = tmp_path / "chimera.txt"
    path.write_text(CHIMERA_GRID)
    out = show_json(capsys, str(path), "--placement", "bidirectional")
    assert out["makespan"] == 10 and out["peak_activations"] == [3, 4, 4, 3]
    assert out["bubble_ratio"] == pytest.approx(0.2)
    assert out["embedded_table"] == {"checked": True, "matches": True}
    # the same grid timed with B twice as long no longer matches the file's cells
    out = show_json(capsys, str(path), "--placement", "bidirectional", "--costs", "F=1,B=2")
    assert out["embedded_table"]["matches"] is False


def test_text_table_errors(capsys, tmp_path):
    path = tmp_path / "chimera.txt"
    path.write_text(CHIMERA_GRID)
    # with the default linear placement, pipe-1 ops sit on the wrong devices
    assert "op 3F2 is on device 0 but its stage lives on device 3" in error_of(capsys, str(path))
    assert "parameter --placement=ring" in error_of(capsys, str(path), "--placement", "ring")
    assert "only a text table (.txt) takes --placement" in error_of(capsys, "gpipe", "--placement", "v")
    path.write_text(CHIMERA_GRID.replace("3F3", "3Z3"))
    assert f"{path}: line 7 (rank 0): '3Z3' is not an action" in error_of(
        capsys, str(path), "--placement", "bidirectional"
    )
    assert "t.txt: file not found" in error_of(capsys, str(tmp_path / "t.txt"))


@pytest.mark.parametrize("fam", [f.name for f in families()])
def test_every_family_shows(capsys, fam):
    """Every registered family either shows (text and JSON agree) or is refused in one line."""
    for p, m in ((4, 8), (2, 4)):
        try:
            build(fam, p, m)
        except ParameterError:
            error_of(capsys, fam, "-p", str(p), "-m", str(m))
            continue
        out = show_json(capsys, fam, "-p", str(p), "-m", str(m), "--costs", "F=1,B=2")
        assert len(out["peak_activations"]) == p and out["makespan"] > 0
        assert main(["show", fam, "-p", str(p), "-m", str(m), "--costs", "F=1,B=2", "--style", "torch"]) == 0
        text = capsys.readouterr().out
        assert f"bubble ratio  {out['bubble_ratio']:.4f}" in text


def test_costs_in_seconds_with_a_tiny_tick(capsys, tmp_path):
    """A hand-written cost model (seconds, 6 decimals) makes the tick 1 us: the table is too wide
    to draw, the metrics still come out, and the formula is not applied to non-uniform costs."""
    s = build("gpipe", p=2, m=1)
    d = schedule_to_dict(s)
    a, b = 0.123457, 0.2
    d["costs"] = {
        "time_unit": "s",
        "duration": {"F": [a, a], "B": [b, b], "I": [b / 2, b / 2], "W": [b / 2, b / 2]},
        "activation": [1.0, 1.0],
    }
    path = tmp_path / "sec.json"
    path.write_text(json.dumps(d))
    out = show_json(capsys, str(path))
    # GPipe p=2, m=1: F0, F1, B1, B0 back to back
    assert out["makespan"] == pytest.approx(2 * a + 2 * b)
    assert out["table"] is None and out["ticks"] > 20_000
    assert out["formula"] == {"unavailable": "the costs are not uniform abstract costs per device share"}
    assert main(["show", str(path)]) == 0
    assert "not rendered" in capsys.readouterr().out


def test_show_reads_a_v_table_with_the_map_its_rows_show(tmp_path, capsys):
    # ZB-V at p = 2 as show --style torch prints it: stages 0 and 3 on rank 0, 1 and 2 on rank 1
    # (V: 0 1 1 0); read as linear over its two rows, stage 3 "must be in 0..1" and show failed,
    # while simulate and verify of the same file read it
    grid = tmp_path / "zbv.txt"
    grid.write_text(
        "         Rank 0 Rank 1\n"
        "Step 00: 0F0\n"
        "Step 01: 0F1    1F0\n"
        "Step 02:        2F0\n"
        "Step 03: 3F0    1F1\n"
        "Step 04: 3I0    2F1\n"
        "Step 05: 3W0    2I0\n"
        "Step 06: 3F1    2W0\n"
        "Step 07: 3I1    1I0\n"
        "Step 08: 3W1    1W0\n"
        "Step 09: 0I0    2I1\n"
        "Step 10: 0W0    2W1\n"
        "Step 11:        1I1\n"
        "Step 12: 0I1    1W1\n"
        "Step 13: 0W1\n",
        encoding="utf-8",
    )
    assert main(["show", str(grid), "--no-table"]) == 0
    assert (
        "placement     v, 1 pipe, 4 stages on 2 devices (device of each stage, pipe 0: 0 1 1 0)"
        in capsys.readouterr().out
    )
    # --v reads a loop table: beside no --placement (linear) it was dropped without a word
    assert main(["show", str(grid), "--v", "2"]) == 2
    assert "parameter --v=2: reads a loop table: give --placement loop with it" in capsys.readouterr().err
