"""Durations in seconds (presets) share no common tick a slot table can draw: their gcd is a float
rounding's (10**22 ticks for a 0.15 s step). ``show`` and ``optimize --table`` say so instead of
"one table tick = 0 s" and a table of 17011751902705956683776 ticks."""

from __future__ import annotations

import json

from ppverify.cli import main
from ppverify.io.json_comm import CommSettings
from ppverify.io.json_format import save_json
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings, resolve_presets

PRESETS = ["--system", "dgx-h100", "--model", "gpt3-1.3b"]


def test_show_and_optimize_table_of_preset_costs(tmp_path, capsys):
    saved = str(tmp_path / "pre.json")
    argv = ["optimize", "1f1b", "-p", "4", "-m", "8", *PRESETS, "--work-limit", "1", "--no-chart", "--table"]
    assert main([*argv, "--save", saved]) == 0
    out = capsys.readouterr().out
    no_table = (
        "(no table: the durations share no common tick a table can draw; unit costs, e.g. --costs F=1,B=2, give one)"
    )
    assert no_table in out.splitlines()
    assert main(["show", saved]) == 0
    out = capsys.readouterr().out
    assert "the durations share no common tick a table can draw: timed exactly, not drawn" in out
    assert "one table tick = 0 s" not in out and "ticks)" not in out


def test_unit_costs_keep_their_tick(capsys):
    # gpipe p = 2, m = 2 at the default F = 1, B = 2: a tick of 1, (m + p - 1)(F + B) = 9 ticks
    assert main(["show", "gpipe", "-p", "2", "-m", "2"]) == 0
    out = capsys.readouterr().out
    assert "one table tick = 1 unit" in out and "makespan      9 units (9 ticks)" in out


def test_show_json_gives_no_tick_where_the_text_says_there_is_none(tmp_path, capsys):
    # docs/show-and-files.md: `tick` is the length of one table cell; preset seconds have none, so
    # both are null (they were 1e-18 s and 122461655196530711 ticks, past 2**53)
    s = build("1f1b", p=2, m=4)
    ctx = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), s)
    path = str(tmp_path / "pre.json")
    save_json(s, path, costs=ctx.costs, comm=CommSettings(ctx.comm))
    assert main(["show", path, "--no-table"]) == 0
    assert "share no common tick a table can draw" in capsys.readouterr().out
    assert main(["show", path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["tick"], out["ticks"], out["table"]) == (None, None, None)
    assert out["makespan"] > 0  # still timed exactly
