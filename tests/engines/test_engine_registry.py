"""The engine registry: the built-in semantics in their order, ``engines.run`` dispatching through
it, and a semantics added by one registry entry reaching ``run`` and the CLI without other edits."""

from __future__ import annotations

import numpy as np
import pytest

from ppverify.cli import build_parser, main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.ops import compute_ops
from ppverify.core.timeline import Timeline
from ppverify.engines import registry, run
from ppverify.engines.contention import simulate_contention
from ppverify.engines.simulate import simulate_async
from ppverify.engines.table import slot_timeline
from ppverify.engines.torch_steps import torch_timeline
from ppverify.schedules import build


def no_deps(schedule, costs, comm, **options):
    """A toy semantics: every device runs its ops back to back, ignoring its inputs."""
    ops, dev, start, end = [], [], [], []
    for d, prog in enumerate(schedule.programs):
        t = 0.0
        for op in compute_ops(prog):
            ops.append(op)
            dev.append(d)
            start.append(t)
            t += costs.op_duration(op)
            end.append(t)
    return Timeline(schedule, costs, "no-deps", ops, np.asarray(dev), np.asarray(start), np.asarray(end))


def register(monkeypatch, compare_level=False):
    extra = registry.Engine("no-deps", no_deps, "devices ignore their inputs", compare_level=compare_level)
    monkeypatch.setattr(registry, "ENGINES", {**registry.ENGINES, "no-deps": extra})


def semantics_choices(command):
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return next(a for a in sub.choices[command]._actions if a.dest == "semantics").choices


def test_builtin_engines_in_order():
    assert registry.names() == ("slot", "async", "contention", "torch", "runtime")
    # compare's abstraction levels: the engines timing seconds with communication
    assert registry.names(levels_only=True) == ("slot", "async", "contention")
    assert tuple(semantics_choices("simulate")) == ("slot", "async", "contention", "torch", "runtime")
    assert tuple(semantics_choices("plot")) == ("slot", "async", "contention", "runtime")


@pytest.mark.parametrize(
    "name, direct",
    [
        ("slot", lambda s, c, d: slot_timeline(s, c, d)),
        ("async", lambda s, c, d: simulate_async(s, c, d)),
        ("contention", lambda s, c, d: simulate_contention(s, c, d)),
        ("torch", lambda s, c, d: torch_timeline(s, c)),
    ],
)
def test_run_dispatches_to_each_engine(name, direct):
    s = build("1f1b", p=3, m=4)
    c = CostModel.abstract(s.placement, F=1, B=2)
    got, want = run(s, c, FixedDelay(0.5), name), direct(s, c, FixedDelay(0.5))
    assert got.semantics == name
    assert got.start.tolist() == want.start.tolist() and got.end.tolist() == want.end.tolist()


def test_unknown_semantics_names_the_registered_ones():
    with pytest.raises(ParameterError, match="expected one of slot, async, contention, torch, runtime$"):
        run(build("gpipe", p=2, m=1), semantics="fast")


def test_one_registry_entry_adds_a_semantics(monkeypatch, capsys):
    register(monkeypatch)
    s = build("gpipe", p=2, m=1)
    c = CostModel.abstract(s.placement, F=1, B=2)
    # by hand: each device runs F (1) then B (2) without waiting for the other: makespan 3
    tl = run(s, c, semantics="no-deps")
    assert tl.semantics == "no-deps" and tl.makespan == 3.0
    with pytest.raises(ParameterError, match="expected one of slot, async, contention, torch, runtime, no-deps$"):
        run(s, semantics="fast")
    # the CLI offers it, with its help, and runs it
    assert "no-deps" in semantics_choices("simulate")
    assert "no-deps" in semantics_choices("plot")  # it times ops in the cost model's time: plot draws it
    assert main(["simulate", "gpipe", "-p", "2", "-m", "1", "--costs", "F=1,B=2", "--semantics", "no-deps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "semantics     no-deps (devices ignore their inputs)" in lines
    assert "makespan      3" in lines


def test_a_compare_level_engine_is_offered_where_levels_are(monkeypatch):
    register(monkeypatch, compare_level=True)
    assert registry.names(levels_only=True) == ("slot", "async", "contention", "no-deps")
    assert "no-deps" in semantics_choices("plot")
