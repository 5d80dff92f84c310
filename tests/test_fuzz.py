"""Fuzzing with hostile input (``scripts/fuzz.py`` holds the generator; it runs 20,000 cases):
mutated files of every format ppverify reads (schedule JSON, PyTorch CSV in both flavours, text
tables, system and LLM presets, sweep configs and stores) and random command lines. Each case must
end with exit code 0, 1 or 2 (never 3, the internal-error code, nor a signal), with exactly one
stderr line on exit 2, no traceback, within 5 CPU seconds, and (in subprocesses) within 2 GB.

About 60-90 s on two cores: 2,000 cases in process, 8 in subprocesses.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("ppverify_fuzz", Path(__file__).parents[1] / "scripts" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_SPEC)
sys.modules["ppverify_fuzz"] = fuzz
_SPEC.loader.exec_module(fuzz)


def _failures(outcomes) -> list[str]:
    return [fuzz.describe(o) for o in outcomes if fuzz.check(o)]


def test_seed_files_are_valid(tmp_path):
    # the mutations start from files ppverify accepts: an unmutated seed never fails
    seeds = fuzz.seed_files()
    assert {Path(n).suffix for n in seeds} == {".json", ".csv", ".txt", ".yaml", ".jsonl"}
    cases = [fuzz.Case(["verify", n], {n: d}) for n, d in seeds.items() if n.endswith((".json", ".csv", ".txt"))]
    cases += [
        fuzz.Case(
            ["simulate", "1f1b", "-p", "2", "--system", "system.yaml", "--model", "llm.yaml", "--no-table"],
            {"system.yaml": seeds["system.yaml"], "llm.yaml": seeds["llm.yaml"]},
        ),
        fuzz.Case(
            ["sweep", "cfg.yaml", "--dry-run", "--store", "store.jsonl"],
            {"cfg.yaml": seeds["sweep.yaml"], "store.jsonl": seeds["store.jsonl"]},
        ),
    ]
    outcomes = fuzz.run_cases(cases, tmp_path)
    assert [o.code for o in outcomes] == [0] * len(cases), _failures(outcomes)


def test_2000_hostile_cases_in_process(tmp_path):
    outcomes = fuzz.run_cases(fuzz.make_cases(2000, seed=2026), tmp_path)
    assert not _failures(outcomes), "\n".join(_failures(outcomes)[:20])
    codes = Counter(o.code for o in outcomes)
    # the mix exercises every outcome: answers, negative verdicts and refusals
    assert codes[0] > 100 and codes[1] > 5 and codes[2] > 1000, codes
    kinds = Counter(o.case.kind for o in outcomes)
    assert {"cli", "system.yaml", "llm.yaml", "sweep.yaml", "store.jsonl"} <= set(kinds)
    assert any(k.endswith(".csv") for k in kinds) and any(k.endswith(".txt") for k in kinds)


@pytest.mark.parametrize("seed", [1, 2])
def test_hostile_cases_in_subprocesses_with_2_gb(tmp_path, seed):
    # the real console entry point: real exit codes and stderr, RLIMIT_AS of 2 GB
    outcomes = [fuzz.run_subprocess(c, tmp_path) for c in fuzz.make_cases(4, seed=seed)]
    assert not _failures(outcomes), "\n".join(_failures(outcomes))
