"""Presets and sweep configs that YAML would read wrong without a word: a key given twice (the
last one won), and a tensor-parallel size that splits no whole attention head."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.systems.llm import Training, load_llm, stage_costs

SYSTEM = """device: {name: H100, peak_TFLOPs: 989, memory_GiB: 80}
gpus_per_node: 8
gpus_per_node: 1
inter_node: {name: IB NDR, latency_us: 10, bandwidth_GBps: 50}
"""


def _error(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_a_system_preset_key_given_twice_is_refused_with_its_line(capsys, tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(SYSTEM)
    err = _error(capsys, ["simulate", "1f1b", "--system", str(path), "--model", "gpt3-1.3b"])
    # the second gpus_per_node is on line 3, column 1; the first on line 2
    assert f"{path}:3:1: key 'gpus_per_node' is given twice (first on line 2)" in err


def test_a_nested_key_given_twice_is_refused_too(capsys, tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(
        SYSTEM.replace("gpus_per_node: 1\n", "").replace("latency_us: 10,", "latency_us: 10, latency_us: 5,")
    )
    assert "key 'latency_us' is given twice" in _error(
        capsys, ["simulate", "1f1b", "--system", str(path), "--model", "gpt3-1.3b"]
    )


def test_a_sweep_config_key_given_twice_is_refused(capsys, tmp_path):
    cfg = tmp_path / "sw.yaml"
    cfg.write_text("schedules: [gpipe]\np: [2]\nm: [2]\np: [4]\ncosts: {F: 1, B: 2}\nlevels: [slot]\n")
    assert f"{cfg}:4:1: key 'p' is given twice (first on line 2)" in _error(capsys, ["sweep", str(cfg), "--dry-run"])


def test_a_merge_key_and_one_anchor_used_twice_are_no_duplicates(capsys, tmp_path):
    cfg = tmp_path / "sw.yaml"
    cfg.write_text("costs: &c {F: 1, B: 2}\nschedules: [gpipe]\np: [2]\nm: [2]\nlevels: [slot]\n")
    capsys.readouterr()
    assert main(["sweep", str(cfg), "--dry-run"]) == 0
    assert "1 rows" in capsys.readouterr().out


@pytest.mark.parametrize("model, tp", [("gpt3-1.3b", 3), ("gpt3-1.3b", 32), ("llama2-70b", 16)])
def test_tp_must_split_whole_heads(model, tp):
    # GPT-3 1.3B has 16 heads (3 and 32 split none evenly); Llama 2 70B 64 heads in 8 key/value groups
    with pytest.raises(ParameterError) as err:
        stage_costs(load_llm(model), 989e12, 4, Training(tp=tp))
    assert err.value.name == "tp" and "must divide the model's" in err.value.rule


def test_tp_that_divides_the_heads_divides_the_compute():
    # tp = 8 divides 64 heads and 8 groups: every stage's forward takes 1/8 of the tp = 1 time
    one = stage_costs(load_llm("llama2-70b"), 989e12, 4, Training(tp=1)).duration["F"]
    eight = stage_costs(load_llm("llama2-70b"), 989e12, 4, Training(tp=8)).duration["F"]
    assert [a / 8 for a in one] == pytest.approx(list(eight))


def test_shipped_preset_names_are_read_in_any_case(capsys, tmp_path):
    # family names are read in any case; so are shipped preset names: the same step as typed in
    # lower case (the whole table printed, both in the same unit)
    tables = []
    for system, model in (("dgx-h100", "gpt3-1.3b"), ("DGX-H100", "GPT3-1.3B")):
        capsys.readouterr()
        assert main(["simulate", "1f1b", "-p", "4", "-m", "8", "--system", system, "--model", model]) == 0
        tables.append(capsys.readouterr().out)
    assert tables[0] == tables[1]
    # sweep configs and compare's lists too
    cfg = tmp_path / "grid.yaml"
    cfg.write_text("schedules: [1f1b]\np: [4]\nm: [8]\nsystems: [DGX-H100]\nmodels: [Gpt3-1.3b]\nlevels: [formula]\n")
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "out.csv")]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                "-p",
                "4",
                "-m",
                "8",
                "--systems",
                "DGX-H100",
                "--models",
                "GPT3-1.3B",
                "--schedules",
                "1f1b",
                "--levels",
                "formula",
            ]
        )
        == 0
    )
    assert "dgx-h100" in capsys.readouterr().out
    # an unknown name is still refused, with the list
    assert "available: " in _error(capsys, ["simulate", "1f1b", "--system", "DGX-H1000", "--model", "gpt3-1.3b"])
