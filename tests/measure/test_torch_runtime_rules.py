"""What PyTorch's pipeline runtime needs beyond ppverify's rules (``ppverify.io.torch_rules``):
the last stage's forwards in microbatch order (``export`` and ``measure`` refuse a file that breaks
it, before any worker starts, instead of PyTorch's autograd error from inside a worker), and the
messages between two ranks posted in one order (a ``compute_comms`` file that breaks it trains with
crossed tensors and no error: ``measure`` names the cause next to the gradient mismatch, ``export``
refuses to write it)."""

from __future__ import annotations

import json
import re

import pytest

import ppverify.measure as measure_mod
from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.io.torch_csv import csv_text, load_csv, parse_rows
from ppverify.io.torch_lowering import lower_like_pytorch
from ppverify.io.torch_rules import loss_order_problem, message_order_problem
from ppverify.measure import WorkerError, measure
from ppverify.schedules import build

# rank 1 (the last stage) runs F1 before F0: every dependency holds (verify of it as a CSV: pytorch-loss-order)
LAST_OUT_OF_ORDER = "0F0,0F1,0B0,0B1\n1F1,1F0,1B0,1B1\n"
# GPipe p=2 m=2 lowered by hand, rank 1 posting its gradients B1 first while rank 0 receives B0 first
CROSSED = (
    "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
    "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1F1,1B0,1B1,1SEND_B1,1SEND_B0,1REDUCE_GRAD,1RESHARD\n"
)
COSTS = ["--costs", "F=0.002,B=0.004", "--steps", "1", "--no-table"]


def one_line_error(argv, capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err, err
    return err


def no_workers(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a worker process was started")

    monkeypatch.setattr(measure_mod, "run_workers", refuse)


def test_the_rule_names_the_last_stage_and_its_order():
    s = parse_rows([r.split(",") for r in LAST_OUT_OF_ORDER.split()])
    assert "rank 1 runs the last stage's forwards in the order 1F1, 1F0" in loss_order_problem(s)
    # B out of order is fine (losses are read by microbatch), and a single stage receives nothing
    assert loss_order_problem(parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F0", "1F1", "1B1", "1B0"]])) is None
    assert loss_order_problem(parse_rows([["0F1", "0F0", "0B0", "0B1"]])) is None


FAMILIES = [
    ("gpipe", {}),
    ("1f1b", {}),
    ("1f1b-split", {}),
    ("zb-h1", {}),
    ("zb-h2", {}),
    ("zbv", {}),
    ("dualpipev", {}),
    ("interleaved-1f1b", {"v": 2}),
    ("interleaved-zb", {"v": 3}),
    ("looped-bfs", {"v": 2}),
    ("hanayo", {"waves": 2}),
]


@pytest.mark.parametrize("family,params", FAMILIES)
def test_no_registered_family_breaks_either_rule(family, params):
    # independent of the Schedule objects: the exported CSV text itself lists the last stage's
    # forwards in microbatch order (every family runs in PyTorch's runtime with correct
    # gradients, tests/measure), and PyTorch's lowering (the comms export) keeps messages in order
    built = 0
    for p, m in [(2, 4), (3, 6), (4, 8)]:
        try:
            s = build(family, p=p, m=m, **params)
        except ParameterError:
            continue  # a size the family does not take; any other error fails
        built += 1
        last = s.num_stages - 1
        text = csv_text(s)
        mbs = [int(x) for x in re.findall(rf"(?<![0-9]){last}F(\d+)", text)]
        assert mbs == sorted(mbs) and len(mbs) == m, (family, p, m)
        assert loss_order_problem(s) is None
        assert message_order_problem(lower_like_pytorch(s)) is None
    assert built, f"{family}: built at no size"


def test_measure_refuses_it_before_any_worker(tmp_path, capsys, monkeypatch):
    f = tmp_path / "late.csv"
    f.write_text(LAST_OUT_OF_ORDER)
    no_workers(monkeypatch)
    err = one_line_error(["measure", str(f), *COSTS], capsys)
    assert err.startswith("ppverify measure: error: parameter schedule=late.csv p=2 m=2")
    assert "1F1, 1F0" in err and err.endswith("run stage 1's forwards in microbatch order")


def test_without_the_check_pytorchs_runtime_fails_on_it(tmp_path, monkeypatch):
    # the control: the same file handed to PyTorch's runtime fails inside rank 1 (the backward of
    # microbatch 0 gets microbatch 1's loss), with an autograd message that names neither cause
    import ppverify.io.torch_rules as rules

    monkeypatch.setattr(rules, "check_runnable", lambda schedule, hint="": None)
    s = parse_rows([r.split(",") for r in LAST_OUT_OF_ORDER.split()])
    with pytest.raises(WorkerError, match="rank 1 failed: RuntimeError"):
        measure(s, {"F": 0.002, "B": 0.004}, steps=1, timeout=30)


def test_export_refuses_it_in_both_csv_flavours_and_keeps_it_as_json(tmp_path, capsys):
    f = tmp_path / "late.csv"
    f.write_text(LAST_OUT_OF_ORDER)
    for fmt in ("torch-csv", "torch-csv-comms"):
        err = one_line_error(["export", str(f), "--format", fmt, "-o", str(tmp_path / "x.csv")], capsys)
        assert "1F1, 1F0" in err and err.endswith("--format json keeps it as it is")
        assert not (tmp_path / "x.csv").exists()
    assert main(["export", str(f), "-o", str(tmp_path / "x.json")]) == 0


def test_crossed_messages_are_named(tmp_path):
    f = tmp_path / "crossed.csv"
    f.write_text(CROSSED)
    problem = message_order_problem(load_csv(str(f)))
    assert problem.startswith("rank 1's first message to rank 0 is 1SEND_B1, which rank 0 receives as 0RECV_B0")
    assert "0RECV_B0 gets microbatch 1's gradient" in problem
    # the compute-only form of the same order, lowered as PyTorch lowers it, is in order
    compute_only = parse_rows([r.split(",") for r in csv_text(load_csv(str(f))).split()])
    assert message_order_problem(lower_like_pytorch(compute_only)) is None


def test_measure_names_the_crossed_messages_beside_the_gradient_mismatch(tmp_path, capsys):
    f = tmp_path / "crossed.csv"
    f.write_text(CROSSED)
    assert main(["measure", str(f), *COSTS, "--json"]) == 1  # the run itself shows the damage
    rep = json.loads(capsys.readouterr().out)
    assert rep["grad_check"]["ok"] is False
    assert rep["message_order"].startswith("rank 1's first message to rank 0 is 1SEND_B1")
    assert main(["measure", str(f), *COSTS]) == 1
    out = capsys.readouterr().out
    assert "\nmessages      rank 1's first message to rank 0 is 1SEND_B1" in out and "gradient MISMATCH" in out


def test_export_refuses_crossed_messages_as_comms_and_converts_them_compute_only(tmp_path, capsys):
    f = tmp_path / "crossed.csv"
    f.write_text(CROSSED)
    err = one_line_error(["export", str(f), "--format", "torch-csv-comms"], capsys)
    assert "1SEND_B1, which rank 0 receives as 0RECV_B0" in err
    assert main(["export", str(f), "--format", "torch-csv"]) == 0
    assert capsys.readouterr().out == "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n"
