"""``design --bound-work``, ``--pair-work`` and ``--search-work``: one rule, ``Limits``' own (>= 0
and at most 1e9 deterministic seconds, as ``--work-limit``), and its one message for every bad
value. A separate check said "<= 1e+15" for -1, inf and nan, then refused 1e12, within that range,
with the real limit."""

from __future__ import annotations

import argparse

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.design.options import check_works

ARGV = ["design", "-p", "2", "-m", "2", "--costs", "F=1,I=1,W=1", "--placements", "linear", "--work-limit", "0.1"]
#: design.spec.Limits' rule as it states it (docs/limits.md: ">= 0, at most 1e9 (`0`: none)")
RULE = "must be >= 0 and at most 1e9 deterministic seconds (0: none)"


@pytest.mark.parametrize("flag", ["--bound-work", "--pair-work", "--search-work"])
@pytest.mark.parametrize(
    "value, shown",
    [("-1", "-1.0"), ("inf", "inf"), ("nan", "nan"), ("1e12", "1000000000000.0"), ("2e15", "2000000000000000.0")],
)
def test_every_bad_work_states_the_real_limit(capsys, tmp_path, flag, value, shown):
    # the values as argparse's float reads them: -1.0, inf, nan, 1e12 and 2e15 (past the old 1e15)
    out = tmp_path / "saved"
    assert main([*ARGV, f"{flag}={value}", "--save-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"ppverify design: error: parameter {flag}={shown}: {RULE}\n"
    assert not out.exists()  # refused before the save folder is made (and before any search)


@pytest.mark.parametrize("name", ["bound_work", "pair_work", "search_work"])
@pytest.mark.parametrize("value", [0.0, 1e9])
def test_the_ends_of_the_rule_are_allowed(name, value):
    # 0 (none) and 1e9, the largest the rule allows
    ns = argparse.Namespace(bound_work=None, pair_work=None, search_work=30.0)
    setattr(ns, name, value)
    check_works(ns)


def test_just_above_the_limit_is_refused():
    ns = argparse.Namespace(bound_work=None, pair_work=1e9 * (1 + 1e-15), search_work=30.0)
    with pytest.raises(ParameterError, match=r"pair_work=.*at most 1e9"):
        check_works(ns)
