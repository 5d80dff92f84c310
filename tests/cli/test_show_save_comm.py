"""``show FILE --save OUT.json`` stores the communication the table was timed with: a file's system
(seconds) that ``show`` left uncharged beside ``--costs`` in units is saved as no delay, as
``optimize FILE --costs ... --save`` saves it (docs/show-and-files.md, ``--save`` row), so every
reader of OUT.json gives the makespan ``show`` printed."""

from __future__ import annotations

import json

from ppverify.cli import main
from ppverify.io.json_comm import CommSettings
from ppverify.io.json_format import save_json
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings, resolve_presets


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_system_left_uncharged_beside_costs_is_saved_as_no_delay(tmp_path, capsys):
    sys_file, out = tmp_path / "sys.json", tmp_path / "out.json"
    s = build("1f1b", p=2, m=4)  # a file timed by presets, as optimize --save writes one
    ctx = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s)
    save_json(s, str(sys_file), costs=ctx.costs, comm=CommSettings(ctx.comm))
    assert json.loads(sys_file.read_text())["comm"]["model"] == "system"
    assert main(["show", str(sys_file), "--costs", "F=1,B=3", "--save", str(out), "--no-table"]) == 0
    capsys.readouterr()
    # 1F1B at p = 2, m = 4 with F = 1, B = 3 and no communication: (m + p - 1)(F + B) = 5 * 4 = 20
    comm = json.loads(out.read_text())["comm"]
    assert comm == {"model": "fixed-delay", "delay": 0.0, "sync": "eager", "dp_allreduce": 0}
    sim = _json(capsys, ["simulate", str(out)])
    assert sim["makespan"] == 20.0 and sim["system"] is None  # it was 20.00002: 4 hops of 5 us as units
    shown = _json(capsys, ["show", str(out)])
    assert (shown["makespan"], shown["ticks"], shown["tick"]) == (20.0, 20, 1.0)  # not 4000010 ticks


def test_comm_delay_zero_saves_no_delay_over_the_files(tmp_path, capsys):
    d1, d0 = tmp_path / "d1.json", tmp_path / "d0.json"
    base = ["--no-table", "--save"]
    assert main(["show", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--comm-delay", "1", *base, str(d1)]) == 0
    assert main(["show", str(d1), "--comm-delay", "0", *base, str(d0)]) == 0
    capsys.readouterr()
    assert json.loads(d0.read_text())["comm"]["delay"] == 0.0
    # docs/show-and-files.md: "`--comm-delay 0`: the idealized table, 9" = (m+p-1)(tF+tB) = 3 * 3;
    # with the file's delay of 1 kept it read back as 15 = (m+p-1)(tF+tB+2c)
    assert _json(capsys, ["show", str(d0)])["makespan"] == 9.0
    assert _json(capsys, ["simulate", str(d0), "--semantics", "slot"])["makespan"] == 9.0
