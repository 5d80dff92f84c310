"""``ppverify --max-ops N design``: refused before any work when a searched placement's schedules
imply more compute ops than N (defect A2 of the option hunt: 800 ops were solved under
``--max-ops 8``, exit 0), a family left out for the limit said so, and the JSON naming the costs
used (A5: ``"costs": null`` for the default)."""

from __future__ import annotations

import json
import time

from ppverify.cli import main

ARGS = ["design", "--work-limit", "0.2", "--budgets", "none", "--no-progress", "--search-work", "0"]


def test_placement_over_the_op_limit_refused_at_once(capsys):
    # linear, p = 4: 4 stages; m = 100; full backward (the default costs name no I or W): F and B,
    # 2 * 4 * 100 = 800 compute ops, over 8
    start = time.process_time()  # CPU, not wall time: a late scheduler stretches only the latter
    rc = main(["--max-ops", "8", *ARGS, "-p", "4", "-m", "100", "--placements", "linear", "--bound-work", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert "--placements linear" in err and "implies 800 ops, over the limit of 8" in err
    assert time.process_time() - start < 5  # before the search (0.2 s of CP-SAT work, the families' timing)


def test_split_backward_counts_three_kinds_and_loop_its_chunks(capsys):
    # loop:2 at p = 2 has 4 stages; F, I and W of each of 4 stages and 3 microbatches: 3 * 4 * 3 = 36
    argv = [*ARGS, "-p", "2", "-m", "3", "--costs", "F=1,I=1,W=1", "--placements", "linear,loop:2"]
    assert main(["--max-ops", "35", *argv]) == 2
    assert "--placements loop:2 (F, I, W): implies 36 ops, over the limit of 35" in capsys.readouterr().err


def test_families_left_out_are_named(capsys):
    # linear p = 2, m = 4, full backward: 2 * 2 * 4 = 16 ops, at the limit. Every family is counted
    # at up to 3 kinds per stage and microbatch (core/limits.family_ops): 1F1B 3 * 2 * 4 = 24 > 16,
    # so none is timed, and the text says why instead of dropping the section in silence
    argv = ["--max-ops", "16", *ARGS, "-p", "2", "-m", "4", "--placements", "linear"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("families   left out"))
    assert "op limit of 16" in line and "1f1b (up to 24 ops)" in line and "zb-h1 (up to 24 ops)" in line
    assert main([*argv, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["families"] == [] and {"family": "gpipe", "ops": 24} in rep["families_left_out"]
    # without the limit they are timed and none is left out
    assert main([*argv[2:], "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["families_left_out"] == [] and any(r["family"] == "1f1b" for r in rep["families"])


def test_json_names_the_default_costs(capsys):
    # no --costs: the abstract default of every command, F=1,B=2,I=1,W=1 (docs/cli-notes.md), as the text says
    assert main([*ARGS, "-p", "2", "-m", "2", "--placements", "linear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["design"]["costs"] == "F=1,B=2,I=1,W=1"
