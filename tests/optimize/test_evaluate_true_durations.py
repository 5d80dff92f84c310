"""``optimize --evaluate`` on preset costs (seconds, rounded to 0.1 us ticks for CP-SAT) reports the
order's makespan at the true durations, as ``optimize`` does: docs/optimization.md, ``--evaluate``
row, "it reproduces the async engine's makespan exactly"."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main

ARGS = ["1f1b", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--evaluate"]


def test_evaluate_reports_the_true_duration_makespan(tmp_path, capsys):
    out = tmp_path / "ev.json"
    assert main(["optimize", *ARGS, "--work-limit", "0.3", "--json", "--save", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["exact_ticks"] is False  # durations rounded down to ticks for the solver
    assert main(["simulate", str(out), "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    # the stage durations, from the family run with the same presets (their own ``stages``)
    assert main(["simulate", *ARGS[:-1], "--json"]) == 0
    st = json.loads(capsys.readouterr().out)["stages"]
    f0, f1, b0, b1 = st["F"][0], st["F"][1], st["B"][0], st["B"][1]
    # one NVLink 4 hop (docs/systems: 5 us, 450 GB/s) of gpt3-1.3b's boundary, 2048 tokens x 2048
    # hidden x 2 bytes = 8 MiB: 5e-6 + 8388608 / 450e9 = 2.36413e-5 s
    hop = 5e-6 + 8 * 2**20 / 450e9
    # device 1 starts after 0F0 and a hop, runs 4 (F1 + B1) back to back (its 1F1B order has no
    # gap: each 1Fi is there before 1B(i-1) ends), and the last 0B3 follows 1B3 and a hop:
    # F0 + hop + 4 (F1 + B1) + hop + B0 = 0.1222725244 s
    by_hand = f0 + hop + 4 * (f1 + b1) + hop + b0
    assert by_hand == pytest.approx(0.1222725244, abs=1e-10)
    assert res["value"] == pytest.approx(by_hand, rel=1e-12, abs=0)
    assert sim["makespan"] == pytest.approx(res["value"], rel=1e-12, abs=0)
    # the bound, on durations rounded down, stays below it (it was the printed value before)
    assert res["bound"] <= res["value"]
    comment = json.loads(out.read_text())["comment"]
    assert "OPTIMAL makespan 0.1222725244 s" in comment


def test_verify_holds_the_saved_file_to_the_printed_makespan(tmp_path, capsys):
    # Z3 refuted the 0.1222716 s printed before: "for reference the earliest finish is 0.122273"
    out = tmp_path / "ev.json"
    assert main(["optimize", *ARGS, "--work-limit", "0.3", "--no-chart", "--save", str(out)]) == 0
    text = capsys.readouterr().out
    assert "makespan   0.1222725244 s" in text  # F0 + 2 hops + 4 (F1 + B1) + B0, as worked above
    # 1e-12 relative: Z3 sums the durations exactly, simulate in floats (docs/verification.md)
    assert main(["verify", str(out), "--makespan-le", repr(0.1222725244 * (1 + 1e-9))]) == 0
    assert main(["verify", str(out), "--makespan-le", "0.1222716"]) == 1
    capsys.readouterr()
