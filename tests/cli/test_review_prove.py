"""What ``ppverify prove`` proves, as the README, getting started and its help state it: the
interleaved 1F1B theorems cover m = p (v = 2, 3) and m = kp for k up to 8 only (v = 2, F = B),
which the README's "m = kp for Chimera and interleaved 1F1B" overstated; a kind left out of
``--costs`` takes F = 1 or B = 2F."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from ppverify.cli import main
from ppverify.cli.commands.prove import add_arguments

ROOT = Path(__file__).resolve().parents[2]


def test_interleaved_theorems_cover_the_sizes_the_docs_state(capsys):
    assert main(["prove", "interleaved-1f1b", "--costs", "F=1,B=1", "--json"]) == 0
    settings = {r["setting"] for r in json.loads(capsys.readouterr().out)}
    ks = sorted(int(k) for s in settings for k in re.findall(r"m=(\d+)p", s))
    assert ks == list(range(2, 9))  # m = kp for k = 2..8, and m = p: no k beyond 8
    assert {s for s in settings if "m=p," in s} == {
        f"interleaved-1f1b F=1,B=1 v={v}, m=p, order={o}" for v in (2, 3) for o in ("megatron", "pytorch")
    }
    assert all("v=2" in s for s in settings if "m=p," not in s)  # m = kp only at v = 2
    readme = " ".join((ROOT / "README.md").read_text().split())
    # m = p at v = 2 and 3 (the settings above), m = kp at v = 2 only
    assert "m = p with v = 2 or 3 (and kp, k ≤ 8, at v = 2, F = B) for interleaved 1F1B" in readme
    started = " ".join((ROOT / "docs" / "getting-started.md").read_text().split())
    assert "m = p with v = 2 or 3 (and m = kp with k ≤ 8, at v = 2 and F = B) for interleaved 1F1B" in started


def test_a_cost_left_out_takes_what_the_help_says(capsys):
    # --costs F=2 proves F=2,B=4 (B = 2F) and B=3 proves F=1,B=3, as --help now says
    assert main(["prove", "gpipe", "--costs", "F=2"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "== gpipe F=2,B=4"
    assert main(["prove", "gpipe", "--costs", "B=3"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "== gpipe F=1,B=3"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert "a kind left out is F=1 or B=2F" in " ".join(parser.format_help().split())
