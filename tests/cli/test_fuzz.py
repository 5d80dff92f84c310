"""Fuzzing with hostile input (``scripts/fuzz.py`` holds the generator; it runs 20,000 cases):
mutated files of every format ppverify reads (schedule JSON, PyTorch CSV in both flavours, text
tables, system and LLM presets, sweep configs and stores) and random command lines. Each case must
end with exit code 0, 1 or 2 (never 3, the internal-error code, nor a signal), with exactly one
stderr line on exit 2, no traceback, within 5 CPU seconds, and (in subprocesses) within 2 GB.

About 60-90 s on two cores: 2,000 cases in process, 8 in subprocesses. The inputs of ``measure``,
``report`` and ``calibrate`` (schedule files, presets, results files, findings, run options) are
fuzzed in process with every process start stubbed out (valid input would start worker
processes), and their refusals in subprocesses that must leave nothing running: about 30 s.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("ppverify_fuzz", Path(__file__).parents[2] / "scripts" / "fuzz.py")
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


def test_measure_report_calibrate_refuse_hostile_input_before_any_worker(tmp_path):
    # a worker process (or the fork server that starts them) reached with input known to be bad,
    # or left alive after a case, is a failure as much as a traceback
    outcomes = fuzz.run_cases(fuzz.make_measured_cases(500, seed=15), tmp_path)
    assert not _failures(outcomes), "\n".join(_failures(outcomes)[:20])
    codes = Counter((o.case.kind, o.code) for o in outcomes)
    # refusals dominate, and valid inputs of each command get through to the run
    assert codes[("measure", 2)] > 80 and codes[("report", 2)] > 80 and codes[("calibrate", 2)] > 40, codes
    assert codes[("measure", 0)] > 0 and codes[("report", 0)] > 5 and codes[("calibrate", 0)] > 20, codes
    assert sum(o.case.refuse for o in outcomes) > 100


BAD_MEASURED = [
    (["measure", "s.json", "--steps", "2"], {"s.json": b'{"format": "ppverify-schedule", "p": 2'}),
    (["measure", "1f1b", "-p", "2", "--timeout", "inf"], {}),
    (["calibrate", "--timeout", "1e400", "--quick"], {}),
    (["report", "--from", "r.csv", "-o", "out.html"], {"r.csv": b"config,p\n" + b"x" * 200_000 + b",2\n"}),
]


@pytest.mark.parametrize("argv, files", BAD_MEASURED, ids=[a[0] + "-" + a[-1] for a, _ in BAD_MEASURED])
def test_refused_measured_input_leaves_no_process_running(tmp_path, argv, files):
    # the real entry point in a session of its own: one line, exit 2, nothing left in the session
    # (a fork server started before the input was checked would still be importing torch)
    outcome = fuzz.run_subprocess(fuzz.Case(argv, files, argv[0], refuse=True), tmp_path)
    assert outcome.code == 2 and not fuzz.check(outcome), fuzz.describe(outcome)


def test_hostile_paths_resumes_and_empty_values(tmp_path):
    # inputs and outputs that are FIFOs, device nodes (scratch copies), sockets, links and loops of
    # links; preset and schedule files edited between a sweep and its resume (the rows to rerun are
    # counted from the grid by the generator); empty option values: each with its expected outcome
    cases = fuzz.make_hostfile_cases(200, seed=22)
    outcomes = fuzz.run_cases(cases, tmp_path)
    assert not _failures(outcomes), "\n".join(_failures(outcomes)[:20])
    kinds = Counter(o.case.kind for o in outcomes)
    assert {"path-input", "path-output", "resume", "empty"} <= set(kinds), kinds
    codes = Counter((o.case.kind, o.code) for o in outcomes)
    assert codes[("path-output", 0)] > 5 and codes[("path-output", 2)] > 5, codes  # written, refused
    assert codes[("resume", 0)] > 5 and codes[("path-input", 2)] == kinds["path-input"], codes
    assert list(tmp_path.iterdir()) == []  # every special file and output removed after its case
