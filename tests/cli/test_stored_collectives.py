"""A saved file's collectives (--sync, --dp-allreduce): an explicit 0 replaces a stored all-reduce,
and presets given beside the file keep the collectives they do not replace."""

from __future__ import annotations

import json

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.io.json_comm import CommSettings
from ppverify.io.json_format import save_json
from ppverify.schedules import build


def _makespan(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["makespan"]


def test_an_explicit_dp_allreduce_0_replaces_the_files(tmp_path, capsys):
    s = build("gpipe", p=2, m=2)
    f = save_json(
        s,
        tmp_path / "s.json",
        CostModel.abstract(s.placement, F=1, B=2),
        comm=CommSettings(FixedDelay(1.0), "eager", 2),
    )
    # the reference: the family itself with the same costs and delay and no all-reduce, no file
    plain = _makespan(capsys, ["simulate", "gpipe", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--comm-delay", "1"])
    assert _makespan(capsys, ["simulate", str(f), "--dp-allreduce", "0"]) == plain
    stored = _makespan(capsys, ["simulate", str(f)])
    assert stored > plain  # the stored all-reduce among 2 replicas is timed when nothing replaces it
    # verify's timing claim reads the same: the plain step holds without the all-reduce, not with it
    assert main(["verify", str(f), "--makespan-le", f"{plain:g}", "--dp-allreduce", "0"]) == 0
    assert main(["verify", str(f), "--makespan-le", f"{plain:g}"]) == 1
    capsys.readouterr()


def test_presets_beside_a_saved_file_keep_its_collectives(tmp_path, capsys):
    presets = ["--system", "ethernet-100g", "--model", "gpt3-1.3b"]
    out = tmp_path / "o.json"
    assert (
        main(
            [
                "optimize",
                "gpipe",
                "-p",
                "2",
                "-m",
                "2",
                *presets,
                "--dp-allreduce",
                "2",
                "--evaluate",
                "--save",
                str(out),
                "--no-chart",
            ]
        )
        == 0
    )
    capsys.readouterr()
    # the family timed with the same presets and all-reduce, no file involved: the reference
    family = _makespan(capsys, ["simulate", "gpipe", "-p", "2", "-m", "2", *presets, "--dp-allreduce", "2"])
    plain = _makespan(capsys, ["simulate", "gpipe", "-p", "2", "-m", "2", *presets])
    assert family > plain
    assert abs(_makespan(capsys, ["simulate", str(out), *presets]) - family) <= 1e-9 * family
    assert abs(_makespan(capsys, ["simulate", str(out), *presets, "--dp-allreduce", "0"]) - plain) <= 1e-9 * plain
