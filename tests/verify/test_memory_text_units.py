"""verify's memory text counts in the unit ``--memory-cap`` reads: ppverify's activations.

One activation is one microbatch on a device's whole share of layers (docs/memory.md, "The unit"):
for a cost model that does not count bytes, the largest stage activation times the stages per
device. A schedule file whose per-stage ``costs.activation`` is not 1/v (here [1, 3] on a linear
pipeline of p = 2) has one activation = max(1, 3) x 2 stages / 2 devices = 3 of its own units, so
``--memory-cap 2`` is 6 of them. The statement and the violations used to print those 6 units
labelled "activations" ("activation memory <= 6 (activations)", "holds 0.002 activations ... (cap
0.001)"); they print the cap as given and the levels in the same activations. Every expected value
below is worked out by hand from GPipe, whose device d holds all m forwards of its stage at once.
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear, loop
from ppverify.schedules import build
from ppverify.verify import verify
from ppverify.verify.memory import memory_statement

#: what the verifier is asked to hold the peaks to: GPipe p=2 m=2, two stages, one per device
PROGRAMS = [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1F1", "1B0", "1B1"]]


def _gpipe_file(path, activation: list[float]) -> str:
    """A ppverify schedule file of GPipe p=2 m=2 with the given per-stage activations."""
    doc = {
        "format": "ppverify-schedule",
        "version": 1,
        "family": "gpipe",
        "params": {"p": 2, "m": 2},
        "p": 2,
        "m": 2,
        "placement": {"name": "linear", "maps": [[0, 1]]},
        "pipe_of_mb": [0, 0],
        "programs": PROGRAMS,
        "costs": {
            "label": "custom",
            "time_unit": "units",
            "memory_unit": "activations",
            "overlap": 1.0,
            "duration": {"F": [1.0, 1.0], "B": [2.0, 2.0], "I": [1.0, 1.0], "W": [1.0, 1.0]},
            "activation": activation,
            "freed_by_I": [0.0, 0.0],
            "boundary_bytes": [0.0],
            "weight_bytes": [0.0, 0.0],
            "extra": {},
        },
    }
    out = path / "g.json"
    out.write_text(json.dumps(doc))
    return str(out)


def _messages(capsys, argv: list[str]) -> tuple[int, list[str]]:
    rc = main(["verify", *argv, "--json"])
    return rc, [v["message"] for v in json.loads(capsys.readouterr().out)["violations"]]


def test_a_violation_counts_the_activations_the_cap_counts(tmp_path, capsys):
    # [0.001, 0.001]: one activation = 0.001 x 2 / 2 = 0.001 units, so cap 1 is 0.001 units; each
    # device holds m = 2 forwards (0.002 units = 2 activations) when its second forward starts
    path = _gpipe_file(tmp_path, [0.001, 0.001])
    rc, msgs = _messages(capsys, [path, "--memory-cap", "1"])
    assert rc == 1
    assert msgs == [
        "device 0 holds 2 activations when 0F1 starts (cap 1)",
        "device 1 holds 2 activations when 1F1 starts (cap 1)",
    ]
    assert main(["verify", path, "--memory-cap", "2"]) == 0  # 2 activations: exactly the peak


def test_uneven_stages_count_in_the_largest_share(tmp_path, capsys):
    # [1, 3]: one activation = 3 units; cap 1 = 3 units. Device 0 holds 2 x 1 = 2 units (2/3
    # activation, within); device 1 holds 2 x 3 = 6 units = 2 activations, over
    path = _gpipe_file(tmp_path, [1.0, 3.0])
    assert _messages(capsys, [path, "--memory-cap", "1"]) == (
        1,
        ["device 1 holds 2 activations when 1F1 starts (cap 1)"],
    )
    # 1.5 activations = 4.5 units: device 1's 6 units are still over it
    assert _messages(capsys, [path, "--memory-cap", "1.5"])[1] == [
        "device 1 holds 2 activations when 1F1 starts (cap 1.5)"
    ]


def test_a_cap_a_hair_under_the_level_prints_apart_from_it(capsys):
    # 1F1B p=4: device 0 holds p = 4 activations when 0F3 starts; the cap 3.9999999999 used to
    # print as "(cap 4)", equal to the level it is under
    rc, msgs = _messages(capsys, ["1f1b", "-p", "4", "-m", "8", "--memory-cap", "3.9999999999"])
    assert rc == 1
    assert msgs == ["device 0 holds 4 activations when 0F3 starts (cap 3.9999999999)"]


def test_one_activation_is_singular():
    # interleaved p=2 v=2 (abstract): each stage is 1/2 activation, a cap of 0.75 is 1.5 stages;
    # device 0 holds 0F0 and 0F1 (stage 0, microbatches 0 and 1: 1 activation) when 0F1 starts
    s = build("interleaved-1f1b", p=2, m=4, v=2)
    r = verify(s, CostModel.abstract(s.placement), memory_cap=0.75)
    assert r.violations[0].message == "device 0 holds 1 activation when 0F1 starts (cap 0.75)"


def test_the_statement_counts_the_activations_the_cap_counts():
    # [1, 3] as above: cap 6 units = 2 activations; peaks 2 units = 2/3 and 6 units = 2. 2/3 at six
    # digits is 0.666667, above it, so the printed peak given back as a cap still holds device 0
    costs = dataclasses.replace(CostModel.unit(linear(2)), activation=(1.0, 3.0))
    assert memory_statement(6.0, [2.0, 6.0], costs, linear(2)) == (
        "activation memory <= 2 (activations) on every device at every instant (peaks 0.666667, 2)"
    )
    # no peaks read back (over MAX_PEAK_READ slots): the cap alone
    assert memory_statement(6.0, None, costs, linear(2)) == (
        "activation memory <= 2 (activations) on every device at every instant"
    )


def test_the_statement_of_abstract_costs_is_unchanged():
    # abstract costs: a stage is 1/v, so one activation is 1/v x v = 1 unit and the amounts print
    # as they are: interleaved p=2 v=2, cap 3 units = 3 activations, peaks of 5 and 4 half-share
    # stages = 2.5 and 2 activations
    pl = loop(2, 2)
    costs = CostModel.abstract(pl)
    assert memory_statement(3.0, [float(Fraction(5, 2)), 2.0], costs, pl) == (
        "activation memory <= 3 (activations) on every device at every instant (peaks 2.5, 2)"
    )


def test_verify_prints_the_cap_as_given(tmp_path, capsys):
    path = _gpipe_file(tmp_path, [1.0, 3.0])
    assert main(["verify", path, "--memory-cap", "2"]) == 0
    out = capsys.readouterr().out
    assert "activation memory <= 2 (activations) on every device at every instant (peaks 0.666667, 2)" in out
