"""Every option is parsed once, at its command's boundary, and each limit checked once per input:
the parsers and checks are wrapped with counters and whole commands run through
``ppverify.cli.main``. A text read twice (a library function re-parsing what the command already
read) shows as a count of 2 for that text."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppverify.cli.common
import ppverify.compare.request
import ppverify.core.costs
import ppverify.core.limits
import ppverify.core.memory_cap
import ppverify.optimize.footprint
import ppverify.optimize.memory
from ppverify.cli import main
from ppverify.cli.run_request import run_request

#: (defining module, function names) of every text parser and limit check a command may call
WATCHED = (
    (ppverify.core.costs, ("parse_costs",)),
    (ppverify.core.memory_cap, ("read_memory_cap", "resolve_memory_cap", "check_cap_mode")),
    (ppverify.compare.request, ("split_csv", "parse_ints", "parse_floats", "check_presets", "check_options")),
    (ppverify.optimize.memory, ("parse_memory_model",)),
    (ppverify.core.limits, ("check_stages_mbs", "check_family")),
    (ppverify.optimize.footprint, ("check_footprint",)),
)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    """Counts of ``(function, first argument as text)``: every binding of a watched function in a
    loaded ppverify module is wrapped, and modules loaded later import the wrapped one."""
    seen: Counter = Counter()

    def wrap(name, fn):
        def counted(*args, **kwargs):
            seen[(name, str(args[0]) if args else "")] += 1
            return fn(*args, **kwargs)

        counted.__wrapped__ = fn  # type: ignore[attr-defined]
        return counted

    for module, names in WATCHED:
        for name in names:
            orig = getattr(module, name)
            counted = wrap(name, orig)
            for mod in list(sys.modules.values()):
                bound = getattr(mod, name, None) if getattr(mod, "__name__", "").startswith("ppverify") else None
                # a module first imported during another test holds that test's wrapper: rewrap it
                if bound is orig or getattr(bound, "__wrapped__", None) is orig:
                    monkeypatch.setattr(mod, name, counted)
    yield seen


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _by_function(calls: Counter, name: str) -> Counter:
    return Counter({arg: n for (fn, arg), n in calls.items() if fn == name})


def test_compare_abstract_reads_each_option_once(calls, capsys):
    argv = ["compare", "--schedules", "gpipe,1f1b", "-p", "2", "-m", "2,4", "--costs", "F=1,B=2"]
    argv += ["--comm-delay", "0,1", "--levels", "async,optimum", "--memory-cap", "2", "--no-progress", "--no-verify"]
    out = _run([*argv, "--json"], capsys)
    # 2 schedules x 2 m x 2 delays x 2 levels; the cap 2 (activations) on every optimum row
    assert len(out["rows"]) == 16
    assert {r["memory_cap"] for r in out["rows"] if r["level"] == "optimum"} == {2.0}
    assert _by_function(calls, "parse_costs") == {"F=1,B=2": 1}
    assert _by_function(calls, "read_memory_cap") == {"2": 1}
    assert sum(_by_function(calls, "check_cap_mode").values()) == 1  # its mode (activations) checked once
    assert _by_function(calls, "parse_ints") == {"p": 1, "m": 1}
    assert _by_function(calls, "parse_floats") == {"comm-delay": 1}
    # split_csv once per comma-separated text (levels, schedules, p, m, delays)
    assert set(_by_function(calls, "split_csv").values()) == {1}
    # each point resolves the one CapSpec in its own cost model (never the text): 2 m x 2 delays
    # configurations, the two schedules sharing their placement's optimum in each
    assert sum(_by_function(calls, "resolve_memory_cap").values()) >= 4


def test_compare_presets_reads_and_checks_each_option_once(calls, capsys):
    argv = ["compare", "--schedules", "gpipe", "--systems", "dgx-h100", "--models", "gpt3-1.3b", "-p", "2"]
    # the cap is the optimum's: a run without that level refuses it (it would be ignored)
    argv += ["-m", "4", "--levels", "async,optimum", "--memory-cap", "40GiB", "--mfu", "0.5", "--no-progress"]
    out = _run([*argv, "--no-verify", "--time-limit", "0.2", "--json"], capsys)
    assert [r["schedule"] for r in out["rows"]] == ["gpipe", "gpipe"]
    assert _by_function(calls, "read_memory_cap") == {"40GiB": 1}
    assert sum(_by_function(calls, "check_cap_mode").values()) == 1
    assert _by_function(calls, "parse_ints") == {"p": 1, "m": 1}
    assert set(_by_function(calls, "split_csv").values()) == {1}
    # the preset names are checked once, one configuration resolved eagerly for the options
    assert sum(_by_function(calls, "check_presets").values()) == 1
    assert sum(_by_function(calls, "check_options").values()) == 1
    assert not _by_function(calls, "parse_costs")


def test_optimize_reads_costs_model_and_cap_once_and_checks_the_size_once(calls, capsys):
    argv = ["optimize", "--placement", "linear", "-p", "2", "-m", "3", "--costs", "F=1,I=1,W=1"]
    argv += ["--memory-model", "w-frees-all", "--memory-cap", "2", "--work-limit", "1", "--no-chart"]
    out = _run([*argv, "--json"], capsys)
    assert out["memory_cap"] == 2.0 and out["memory_cap_value"] == 2.0 and out["backward"] == "split"
    assert _by_function(calls, "parse_costs") == {"F=1,I=1,W=1": 1}
    assert _by_function(calls, "parse_memory_model") == {"w-frees-all": 1}
    assert _by_function(calls, "read_memory_cap") == {"2": 1}
    assert sum(_by_function(calls, "resolve_memory_cap").values()) == 1
    # p stages x m microbatches, checked once where the placement is read
    assert sum(_by_function(calls, "check_stages_mbs").values()) == 1


def test_gap_reads_costs_and_cap_once(calls, capsys):
    argv = ["gap", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--memory-cap", "none", "--work-limit", "1"]
    out = _run([*argv, "--json"], capsys)
    # 1F1B on 2 devices, 2 microbatches, F=1 B=2, no delay: (m + p - 1)(F + B) = 9, optimal too
    assert out["family_value"] == 9.0 and out["gap_to_bound"] == 0.0
    assert _by_function(calls, "parse_costs") == {"F=1,B=2": 1}
    assert _by_function(calls, "read_memory_cap") == {"none": 1}


@pytest.mark.parametrize("command", ["simulate", "verify", "show"])
def test_simulate_verify_show_read_costs_and_cap_once(calls, capsys, command):
    argv = [command, "1f1b", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--memory-cap", "2"]
    assert main(argv) == 0
    capsys.readouterr()
    assert _by_function(calls, "parse_costs") == {"F=1,B=2": 1}
    assert _by_function(calls, "read_memory_cap") == {"2": 1}
    assert sum(_by_function(calls, "resolve_memory_cap").values()) == 1


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("FBIW"), st.integers(1, 9)), min_size=1, max_size=4, unique_by=lambda kv: kv[0])
)
def test_run_request_reads_the_costs_into_pairs_and_leaves_the_namespace_as_parsed(pairs):
    text = ",".join(f"{k}={v}" for k, v in pairs)
    ns = argparse.Namespace(schedule="1f1b", p=2, m=None, costs=text, memory_cap="3MF", fam_v=None)
    before = dict(vars(ns))
    request = run_request(ns)
    assert vars(ns) == before  # nothing written back: the request holds what was read
    assert request.costs == tuple((k, float(v)) for k, v in pairs)
    assert (request.memory_cap.kind, request.memory_cap.amount) == ("stage_activations", 3)
    assert (request.source.name, request.source.p, request.source.m, request.source.params) == ("1f1b", 2, None, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.sync = "none"  # type: ignore[misc]


@pytest.mark.parametrize("command", ["simulate", "verify", "show"])
def test_simulate_verify_show_build_one_request_and_keep_the_namespace(monkeypatch, capsys, command):
    import ppverify.cli.run_request as rr

    seen: list[tuple[dict, rr.RunRequest]] = []
    real = rr.run_request

    def recorded(args):
        request = real(args)
        seen.append((dict(vars(args)), request))
        return request

    module = importlib.import_module(f"ppverify.cli.commands.{command}")
    monkeypatch.setattr(module, "run_request", recorded)
    argv = [command, "interleaved-1f1b", "-p", "2", "-m", "4", "--v", "2", "--costs", "F=1,B=2", "--memory-cap", "4"]
    assert main(argv) == 0
    capsys.readouterr()
    assert len(seen) == 1  # one request per command
    ((parsed, request),) = seen
    assert parsed["costs"] == "F=1,B=2"  # the Namespace still holds the text as given
    assert request.costs == (("F", 1.0), ("B", 2.0)) and request.source.params == (("v", 2),)


def test_plot_reads_the_costs_once(calls, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "g.png"
    assert main(["plot", "gpipe", "-p", "2", "-m", "2", "--costs", "F=1,B=3", "-o", str(out)]) == 0
    assert out.exists()
    assert _by_function(calls, "parse_costs") == {"F=1,B=3": 1}


def test_gap_checks_the_footprint_once(calls, capsys):
    argv = ["gap", "interleaved-1f1b", "-p", "2", "-m", "4", "--v", "2", "--costs", "F=1,B=2", "--work-limit", "1"]
    out = _run([*argv, "--json"], capsys)
    assert out["family_value"] > 0
    # each problem's footprint checked once: the one posed at the boundary (instance trusts it)
    # and the family's own, capped at its peak, which gap evaluates; the family's op limit is
    # counted at the boundary by the next test (the search builds every family as a seed, its own inputs)
    footprints = _by_function(calls, "check_footprint")
    assert len(footprints) == 2 and set(footprints.values()) == {1}


def test_optimize_boundary_checks_the_family_and_the_footprint_once(calls):
    from ppverify.cli.optimize_args import add_problem_arguments, problem_from_args
    from ppverify.optimize.problem import instance

    parser = argparse.ArgumentParser()
    add_problem_arguments(parser)
    ns = parser.parse_args(["interleaved-1f1b", "-p", "2", "-m", "4", "--v", "2", "--costs", "F=1,B=2"])
    pr, sched, _ = problem_from_args(ns)
    # interleaved, v=2: 2 devices x 2 chunks = 4 stages, 4 mbs, F and B each
    assert pr.num_ops == 32 and sched is not None
    assert _by_function(calls, "check_family") == {"interleaved-1f1b": 1}
    instance(pr)  # the problem the boundary checked: not checked again
    assert sum(_by_function(calls, "check_footprint").values()) == 1


def test_a_python_caller_gets_the_footprint_checked_once(calls):
    from ppverify.core.costs import CostModel
    from ppverify.core.placement import linear
    from ppverify.optimize.footprint import checked_footprint
    from ppverify.optimize.problem import Problem, instance

    pl = linear(2)
    pr = Problem(pl, 3, CostModel.abstract(pl, F=1, B=2), split=False)
    instance(pr)  # no boundary: instance checks it
    assert sum(_by_function(calls, "check_footprint").values()) == 1
    checked = checked_footprint(pr, workers=4)
    instance(checked)  # checked at the boundary: not again
    assert sum(_by_function(calls, "check_footprint").values()) == 2
    # a problem changed in its size is a new input: checked again (2 x 4 mbs x F and B = 16 ops)
    bigger = dataclasses.replace(checked, m=4)
    assert bigger.num_ops == 16
    instance(bigger)
    assert sum(_by_function(calls, "check_footprint").values()) == 3
