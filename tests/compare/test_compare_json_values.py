"""``compare --json`` rows give ``params``, ``peak_activations`` and ``oom_devices`` as JSON values
(docs/comparison.md: "`oom_devices` (`--json`, `--out`: a JSON list ...)"), as ``simulate --json``
gives its peaks; ``--out`` keeps each as JSON text in one CSV cell, and ``row_cells`` turns the
``--json`` form back into that text for a reader of either."""

from __future__ import annotations

import csv
import json

from ppverify.cli import main
from ppverify.compare.outcome import row_cells

ABSTRACT = ["-p", "2", "-m", "4", "--costs", "F=1,B=2", "--levels", "async", "--no-progress", "--no-verify"]


def test_json_rows_hold_lists_and_objects_and_the_csv_keeps_text(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["compare", "--schedules", "1f1b,interleaved-v2", *ABSTRACT, "--json", "--out", str(out)]) == 0
    rows = {r["schedule"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    # 1F1B at p = 2: device d holds p - d microbatches at its peak, [2, 1] activations
    assert rows["1f1b"]["peak_activations"] == [2.0, 1.0] and rows["1f1b"]["params"] == {}
    assert rows["interleaved-v2"]["params"]["v"] == 2  # an object: row["params"]["v"], not '{"v": 2, ...}'
    # abstract units know no capacity: null (the CSV's empty cell), never the text "[]"
    assert rows["1f1b"]["oom_devices"] is None
    with out.open() as fh:
        cells = {r["schedule"]: r for r in csv.DictReader(fh)}
    assert cells["1f1b"]["peak_activations"] == "[2.0, 1.0]" and cells["1f1b"]["params"] == "{}"
    assert cells["1f1b"]["oom_devices"] == ""
    # the --json form turned back into the frame's cells is the CSV's text
    back = row_cells(rows["interleaved-v2"])
    for c in ("params", "peak_activations"):
        assert back[c] == cells["interleaved-v2"][c]


def test_oom_devices_is_a_list_with_presets(capsys):
    # test_compare_oom_ties.py works it by hand: GPT-3 13B, 1F1B at p = m = 4 on dgx-h100 holds
    # 95.41 GiB on device 0 and 80.28 GiB on device 1, over 80 GiB; devices 2 and 3 fit
    argv = ["compare", "--schedules", "1f1b", "--systems", "dgx-h100", "--models", "gpt3-13b", "-p", "4", "-m", "4"]
    assert main([*argv, "--levels", "slot", "--no-progress", "--no-verify", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["oom_devices"] == [0, 1] and row["oom_devices"][0] == 0  # was the text "[0, 1]": "["
    assert isinstance(row["peak_activations"], list) and len(row["peak_activations"]) == 4
