"""The verifier's property registry: one ordered list that ``verify``, the CLI and the HTML report
read. Adding a property is one entry (here: monkeypatched in), and it is then checked, reported
and listed everywhere; expected values are worked out by hand."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.ops import Op
from ppverify.report.page import page_data
from ppverify.report.study import Study
from ppverify.schedules import build
from ppverify.verify import Property, Violation, properties, verify
from ppverify.verify.checks import Outcome

#: the shipped properties, in the order the verifier documents them (module doc of ppverify.verify)
SHIPPED = (
    "completeness",
    "placement",
    "pytorch-loss-order",
    "pytorch-message-order",
    "dependencies",
    "exclusivity",
    "deadlock",
    "reduction",
    "sharding",
    "memory",
    "timing",
)


def at_most_three_ops(run) -> Outcome:
    """A small extra property: no device runs more than 3 compute ops."""
    bad = [(d, prog) for d, prog in enumerate(run.schedule.programs) if len(prog) > 3]
    if not bad:
        return Outcome("every device runs at most 3 ops")
    return Outcome(
        violations=tuple(
            Violation("short", "at most 3 ops per device", f"device {d} runs {len(prog)} ops", (str(prog[3]),))
            for d, prog in bad
        )
    )


SHORT = Property("short", "no device runs more than 3 compute ops", at_most_three_ops, "short")


@pytest.fixture
def with_short(monkeypatch):
    monkeypatch.setattr(properties, "REGISTRY", (*properties.REGISTRY, SHORT))


def test_registry_order_and_fields():
    reg = properties.REGISTRY
    assert tuple(p.name for p in reg) == SHIPPED == properties.names()
    assert all(p.rule == p.name and p.description and callable(p.check) for p in reg)
    assert len({p.name for p in reg}) == len(reg)
    # conditional properties say when they are checked; the rest make a bare VALID verdict
    assert {p.name: p.when for p in reg if p.when} == {
        "pytorch-loss-order": "PyTorch CSV files",
        "pytorch-message-order": "PyTorch compute_comms files",
        "reduction": "compute_comms files",
        "sharding": "compute_comms files",
        "memory": "--memory-cap",
        "timing": "--makespan-le",
    }


def test_verify_reports_in_registry_order():
    # 1F1B p=4 m=8, F=1 B=2: makespan (m + p - 1)(F + B) = 11 * 3 = 33 (1F1B's closed form);
    # peak activations per device p - d <= 4
    s = build("1f1b", p=4, m=8)
    r = verify(s, CostModel.abstract(s.placement, F=1, B=2), memory_cap=4, makespan_le=33)
    # a family is no PyTorch file and has no compute_comms actions: those four do not apply
    file_only = ("pytorch-loss-order", "pytorch-message-order", "reduction", "sharding")
    assert [p for p, _ in r.proved] == [n for n in SHIPPED if n not in file_only]
    assert r.unchecked == ()
    bare = verify(s)
    assert [p for p, _ in bare.unchecked] == ["memory", "timing"]


def test_added_property_is_checked_and_reported(with_short):
    ok = verify(build("gpipe", p=2, m=1))  # 2 ops per device: holds
    assert ok.valid and ok.proved[-1] == ("short", "every device runs at most 3 ops")
    bad = verify(build("gpipe", p=2, m=2))  # 4 ops per device (F0 F1 B0 B1): fails on both
    assert not bad.valid
    assert [v.to_text() for v in bad.violations] == [
        "short: device 0 runs 4 ops [at most 3 ops per device; core: 0B1]",
        "short: device 1 runs 4 ops [at most 3 ops per device; core: 1B1]",
    ]
    assert "short" not in [p for p, _ in bad.proved]
    # the shipped properties still hold and are still listed
    assert [p for p, _ in bad.proved] == ["completeness", "placement", "dependencies", "exclusivity", "deadlock"]


def test_added_property_in_the_cli(with_short, capsys):
    assert main(["verify", "--list-properties"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [*SHIPPED, "short"]
    assert main(["verify", "--help"]) == 0
    assert "no device runs more than 3 compute ops" in capsys.readouterr().out
    assert main(["verify", "gpipe", "-p", "2", "-m", "2"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATED short: device 0 runs 4 ops" in out
    assert main(["verify", "gpipe", "-p", "2", "-m", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["proved"][-1] == {"property": "short", "statement": "every device runs at most 3 ops"}


def test_added_property_in_the_report(with_short):
    import pandas as pd

    d = page_data(Study(pd.DataFrame(columns=["level", "semantics"]), ()))
    assert [p["name"] for p in d["verifier"]] == [
        "completeness",
        "placement",
        "dependencies",
        "exclusivity",
        "deadlock",
        "short",
    ]


def test_removed_property_is_not_checked(monkeypatch):
    monkeypatch.setattr(properties, "REGISTRY", tuple(p for p in properties.REGISTRY if p.name != "placement"))
    s = build("gpipe", p=2, m=1)
    # 1F0 moved to device 0: a placement fault (and, as the structural analysis reports each
    # fault once, its violation still appears, under its own rule)
    progs = ((Op("F", 0, 0), Op("F", 1, 0), Op("B", 0, 0)), (Op("B", 1, 0),))
    r = verify(s.with_programs(progs))
    assert "placement" not in [p for p, _ in r.proved] + [p for p, _ in r.unchecked]
    assert [v.prop for v in r.violations][:1] == ["placement"]
    ok = verify(s)
    assert [p for p, _ in ok.proved] == ["completeness", "dependencies", "exclusivity", "deadlock"]
