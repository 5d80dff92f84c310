"""``report --from`` rebuilds each configuration from its label: a preset flag written as
``recompute=False`` was read back as the text 'False', which the presets take as true, so the
charts were drawn with recomputation on while the table showed the rows without it; and a sweep's
``layers_per_stage`` list gave a label with a space, so its configuration got no charts."""

from __future__ import annotations

import json
import re

import yaml

from ppverify.cli import main
from ppverify.report.study import config_of_row


def test_flag_options_read_back_as_flags():
    row = {
        "config": "p=2 m=2 dgx-h100 gpt3-1.3b flash-attention=False recompute=True",
        "p": 2,
        "m": 2,
        "system": "dgx-h100",
        "model": "gpt3-1.3b",
    }
    assert config_of_row(row).options == (("flash_attention", False), ("recompute", True))


def _page(path):
    text = path.read_text()
    return json.loads(re.search(r'<script id="ppverify-data" type="application/json">(.*?)</script>', text, re.S)[1])


def _sweep_and_report(tmp_path, options):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "schedules": ["gpipe"],
                "p": 2,
                "m": 2,
                "systems": ["dgx-h100"],
                "models": ["gpt3-1.3b"],
                "levels": ["slot", "async"],
                "options": options,
            }
        )
    )
    out, page = tmp_path / "s.csv", tmp_path / "s.html"
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    assert main(["report", "--from", str(out), "-o", str(page)]) == 0
    return _page(page)


def test_charts_drawn_with_the_rows_flags(tmp_path):
    # each chart is the timeline of its row: the same makespan at every level (before the fix the
    # slot chart took recompute on, about 30 % longer than its row)
    data = _sweep_and_report(tmp_path, {"recompute": False, "flash_attention": False})
    rows = {r["level"]: r["makespan"] for r in data["rows"]}
    (point,) = data["points"]
    assert set(point["levels"]) == {"slot", "async"}
    for level, tl in point["levels"].items():
        assert abs(tl["makespan"] - rows[level]) <= 1e-12 * rows[level]


def test_layers_per_stage_list_is_charted(tmp_path):
    data = _sweep_and_report(tmp_path, {"layers_per_stage": [10, 14]})  # gpt3-1.3b: 24 layers
    assert data["rows"][0]["config"] == "p=2 m=2 dgx-h100 gpt3-1.3b layers-per-stage=10,14"
    (point,) = data["points"]
    assert abs(point["levels"]["slot"]["makespan"] - data["rows"][0]["makespan"]) <= 1e-12


def test_null_option_read_back_as_default():
    # an older sweep wrote options given as null into the label ("mfu=None"): the report crashed
    # on mfu 'None' (exit 3); None is the option's default
    row = {"config": "p=2 m=2 dgx-h100 gpt3-1.3b mfu=None", "p": 2, "m": 2, "system": "dgx-h100", "model": "gpt3-1.3b"}
    assert config_of_row(row).options == (("mfu", None),)


def test_null_option_left_out_of_the_label(tmp_path):
    data = _sweep_and_report(tmp_path, {"mfu": None, "seq_len": None})
    assert data["rows"][0]["config"] == "p=2 m=2 dgx-h100 gpt3-1.3b"  # as with no options at all
    (point,) = data["points"]
    assert abs(point["levels"]["slot"]["makespan"] - data["rows"][0]["makespan"]) <= 1e-12
