"""A timing claim's statement, proved or refuted, names the model it was decided under: the costs,
the transfer times, the collectives where they apply and the engine. It said "makespan <= 49
under costs F=1,B=2,I=1,W=1" whether the run had --comm-delay 1 or none."""

from __future__ import annotations

import json

from ppverify.cli import main
from ppverify.core.comm import NO_COMM, FixedDelay
from ppverify.core.costs import CostModel
from ppverify.schedules import build
from ppverify.systems.system import load_system
from ppverify.verify.timing import timing_model

# 1F1B p=2 m=2, F=1 B=2, by hand. Device 0 runs F0 F1 B0 B1, device 1 F0 B0 F1 B1.
# No delay: 0F0 0-1, 0F1 1-2, 1F0 1-2, 1B0 2-4, 1F1 4-5, 1B1 5-7, 0B0 4-6, 0B1 7-9: 9.
# Delay 1 per transfer: 1F0 2-3, 1B0 3-5, 1F1 5-6 (0F1's output is there at 3), 1B1 6-8,
# 0B0 6-8, 0B1 needs 1B1's gradient at 8 + 1: 9-11: 11.
ARGS = ["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2"]


def _timing_line(argv, capsys):
    main(argv)
    return next(ln.strip() for ln in capsys.readouterr().out.splitlines() if "timing:" in ln)


def test_the_proof_names_the_delay(capsys):
    line = _timing_line([*ARGS, "--comm-delay", "1", "--makespan-le", "11"], capsys)
    assert line == (
        "proved  timing: makespan <= 11 units under costs F=1,B=2,I=1,W=1 with comm delay 1, async engine "
        "(witness finishes at 11 units)"
    )
    line = _timing_line([*ARGS, "--makespan-le", "9"], capsys)
    assert line.startswith(
        "proved  timing: makespan <= 9 units under costs F=1,B=2,I=1,W=1 with no comm delay, async engine"
    )


def test_the_refutation_names_it_too(capsys):
    line = _timing_line([*ARGS, "--comm-delay", "1", "--makespan-le", "10"], capsys)
    assert line.startswith(
        "VIOLATED timing: no execution of these programs finishes by 10 units under costs F=1,B=2,I=1,W=1 "
        "with comm delay 1, async engine (Z3: infeasible;"
    )
    assert "the earliest finish is 11 units)" in line


def test_json_statement_names_it(capsys):
    assert main([*ARGS, "--comm-delay", "0.5", "--makespan-le", "100", "--json"]) == 0
    proved = dict((p["property"], p["statement"]) for p in json.loads(capsys.readouterr().out)["proved"])
    assert "with comm delay 0.5, async engine" in proved["timing"]


def test_collectives_are_named_where_they_apply():
    chimera, one_pipe = build("chimera", p=2, m=2), build("1f1b", p=2, m=2)
    costs = CostModel.abstract(chimera.placement, F=1, B=2)
    # Chimera's stages have two replicas: the sync mode changes its step's end
    assert timing_model(costs, FixedDelay(1), chimera, "after-flush") == (
        "costs F=1,B=2,I=1,W=1 with comm delay 1, replica all-reduce (sync after-flush), async engine"
    )
    assert "no replica all-reduce (sync none)" in timing_model(costs, NO_COMM, chimera, "none")
    # one pipe: no replicas, so --sync changes nothing and is not named; --dp-allreduce 4 is
    text = timing_model(CostModel.unit(one_pipe.placement), NO_COMM, one_pipe, "after-flush", 4)
    assert text == "costs unit with no comm delay, data-parallel all-reduce over 4 replicas, async engine"


def test_a_delay_is_shown_as_the_number_it_is():
    s = build("1f1b", p=2, m=2)
    # %g would print 1.0000001 as 1: another model
    assert "comm delay 1.0000001," in timing_model(CostModel.unit(s.placement), FixedDelay(1.0000001), s)


def test_a_systems_links_are_named():
    s = build("1f1b", p=2, m=2)
    dgx = load_system("dgx-h100")
    assert "with dgx-h100 links, async engine" in timing_model(CostModel.unit(s.placement), dgx, s)
    # one rank per node: every transfer crosses nodes, a different model
    one = dgx.with_ranks_per_node(1)
    assert "with dgx-h100 links (1 rank per node), async engine" in timing_model(CostModel.unit(s.placement), one, s)
