"""``save_design`` writes a frontier schedule's PyTorch CSVs only if PyTorch's runtime can run
them (:func:`ppverify.io.torch_rules.check_runnable`). The optimizer's symmetry breaking orders each
stage's microbatches per kind, so the check never fires on a design: every CSV it saves keeps the
last stage's forwards in microbatch order and, lowered as PyTorch lowers it, its messages in one
order. The expected values are read from the written files' own cells."""

from __future__ import annotations

import re

import pytest

import ppverify.io.torch_rules as torch_rules
from ppverify.core.errors import ParameterError
from ppverify.design.output import save_design
from ppverify.design.run import DesignRequest, design
from ppverify.design.spec import Limits
from ppverify.io.torch_csv import load_csv
from ppverify.io.torch_rules import crossed_messages, loss_order_problem
from ppverify.systems.preset_models import PresetSettings
from ppverify.verify import verify


@pytest.fixture(scope="module")
def small_design():
    # split backward, two placements, three budgets: its frontier (V points: the last stage on rank 0)
    rq = DesignRequest(2, 4, "linear,v", "1,2,none", PresetSettings(costs="F=1,I=1,W=1"), Limits(1.0))
    return design(rq, progress=False)


def test_saved_csvs_keep_both_rules(small_design, tmp_path):
    written = save_design(small_design, tmp_path)
    csvs = [p for p in written if p.suffix == ".csv"]
    assert csvs and len(csvs) == 2 * sum(1 for p in written if p.suffix == ".json")  # both flavours of each
    for path in csvs:
        s = load_csv(path)
        last = s.num_stages - 1
        # the cells themselves: the last stage's forwards listed in microbatch order, each once
        mbs = [int(x) for x in re.findall(rf"(?<![0-9]){last}F(\d+)", path.read_text())]
        assert mbs == list(range(s.m)), path.name
        assert loss_order_problem(s) is None and crossed_messages(s) == [], path.name
        r = verify(s, pytorch=True)  # as `ppverify verify FILE.csv` reads it
        assert r.valid, (path.name, [v.to_text() for v in r.violations])
        assert "pytorch-loss-order" in [p for p, _ in r.proved]
        if "compute_comms" in path.name:
            assert "pytorch-message-order" in [p for p, _ in r.proved]


def test_every_one_pipe_point_is_checked_before_its_csvs(small_design, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(torch_rules, "check_runnable", lambda schedule, hint="": seen.append(hint))
    written = save_design(small_design, tmp_path)
    assert len(seen) == sum(1 for p in written if p.suffix == ".json")  # each point has one pipe
    assert all(h.endswith(".json is written, its CSVs are not") for h in seen)


def test_a_point_pytorch_cannot_run_is_refused(small_design, tmp_path, monkeypatch):
    # the control: were the check to fire, no CSV of that point is written and the error names it
    def refuse(schedule, hint=""):
        raise ParameterError(
            "schedule", schedule.describe(), "rank 1 runs the last stage's forwards out of order" + hint
        )

    monkeypatch.setattr(torch_rules, "check_runnable", refuse)
    with pytest.raises(ParameterError, match=r"frontier-00-.*\.json is written, its CSVs are not"):
        save_design(small_design, tmp_path)
    assert not list(tmp_path.glob("*.csv"))
