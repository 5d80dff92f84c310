"""Edges of ``ppverify plot --crossover`` (options the sweep would have dropped) and ``ppverify list``."""

from __future__ import annotations

import argparse
import json

import pytest

from ppverify.cli import main
from ppverify.cli.commands.plot import add_arguments
from ppverify.cli.plot_modes import crossover_config
from ppverify.compare.config import ScheduleEntry
from ppverify.compare.crossover import makespan_curves


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--crossover", "latency", "-p", "2", "-m", "2", "-o", "c.png", *argv])


PRESETS = ("--system", "dgx-h100", "--model", "gpt3-1.3b")


@pytest.mark.parametrize(
    "argv,option",
    [
        ((*PRESETS, "--costs", "F=1,B=3"), "costs"),  # the presets give the durations
        (("--mfu", "0.5"), "mfu"),  # abstract costs: nothing for --mfu to shape
        (("--recompute",), "recompute"),
        (("--ranks-per-node", "1"), "ranks-per-node"),  # no system: no nodes
    ],
)
def test_crossover_refuses_an_option_it_would_ignore(tmp_path, capsys, argv, option):
    out = tmp_path / "c.png"
    code = main(["plot", "--crossover", "latency", "-p", "2", "--schedules", "gpipe", "-o", str(out), *argv])
    assert code == 2 and not out.exists()
    assert f"parameter --{option}=" in capsys.readouterr().err  # the option as typed


def test_crossover_carries_recompute_and_flash_attention():
    cfg = crossover_config(_args(*PRESETS, "--recompute", "--flash-attention"))
    assert dict(cfg.options)["recompute"] is True and dict(cfg.options)["flash_attention"] is True
    # full recomputation adds a forward to every backward (tB = 3 tF instead of 2 tF), so GPipe's
    # makespan at the same latency must grow
    plain = crossover_config(_args(*PRESETS))
    entry = [ScheduleEntry("gpipe", "gpipe")]
    a = makespan_curves(entry, plain, "latency", [1e-6], note=None)["makespan"].iloc[0]
    b = makespan_curves(entry, cfg, "latency", [1e-6], note=None)["makespan"].iloc[0]
    assert b > a


def test_list_has_no_default_none(capsys):
    # chimera-asym's --down defaults to p/2 (computed): its help says so; "(default None)" did not
    assert main(["list", "--json"]) == 0
    rows = {r["family"]: r for r in json.loads(capsys.readouterr().out)}
    assert (
        "--down: microbatches of each basic unit of p sent down pipe 0 (default p/2)"
        in rows["chimera-asym"]["parameters"]
    )
    assert main(["list"]) == 0
    assert "default None" not in capsys.readouterr().out
