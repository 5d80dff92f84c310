"""``--json`` output is strict JSON: an infinite or NaN number is written ``null`` and named under
``non_finite_as_null`` (Python's default wrote ``Infinity``/``NaN``, which jq and JavaScript refuse)."""

from __future__ import annotations

import json

import ppverify.measure.calibrate as cal
from ppverify.cli import main
from ppverify.cli.common import print_json


def _strict(text: str) -> dict:
    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_infinite_and_nan_numbers_become_null_and_are_named(capsys):
    print_json({"bw": float("inf"), "lat": 1e-5, "rows": [{"x": float("nan")}, {"x": -float("inf")}]})
    data = _strict(capsys.readouterr().out)
    assert data["bw"] is None and data["lat"] == 1e-5 and [r["x"] for r in data["rows"]] == [None, None]
    assert data["non_finite_as_null"] == {"bw": "inf", "rows[0].x": "nan", "rows[1].x": "-inf"}


def test_finite_output_gains_no_key(capsys):
    print_json({"a": 1.5, "b": [1, 2]})
    assert _strict(capsys.readouterr().out) == {"a": 1.5, "b": [1, 2]}


def test_at_most_twenty_paths_are_named(capsys):
    print_json({"v": [float("inf")] * 25})
    named = _strict(capsys.readouterr().out)["non_finite_as_null"]
    assert len(named) == 21 and named["..."] == "5 more"  # 20 paths, then the 25 - 20 = 5 left


def test_calibrate_json_with_an_infinite_bandwidth_is_strict_json(monkeypatch, capsys):
    # the bug hunt's `calibrate --json` printed "bandwidth_Bps": Infinity
    fake = cal.Calibration(0.0015, 0.0005, 6e-5, float("inf"))
    monkeypatch.setattr(cal, "calibrate", lambda quick=False, timeout=120.0, realtime=False: fake)
    assert main(["calibrate", "--json"]) == 0
    data = _strict(capsys.readouterr().out)
    assert data["bandwidth_Bps"] is None and data["non_finite_as_null"]["bandwidth_Bps"] == "inf"
