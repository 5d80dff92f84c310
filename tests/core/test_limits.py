"""Hostile input, case by case (the examples of the hostile-input report): limits checked before
work, one line and exit 2 for every bad input, exit 3 (never 1) for a bug, interruption, atomic
outputs, damaged stores. About 25 s on two cores (two subprocesses that are signalled).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.core.files import atomic_write, read_text
from ppverify.core.limits import (
    BYTES_PER_OP,
    DEFAULT_MAX_OPS,
    OPS_BASE_BYTES,
    LimitError,
    check_json_text,
    check_ops,
    family_ops,
    memory_limit,
    op_limit,
    ops_memory,
)
from ppverify.core.time_limit import check_time, time_limit
from ppverify.io.json_format import dumps
from ppverify.io.torch_csv import csv_text
from ppverify.schedules import build
from ppverify.sweep.executor import pool_size

#: Python memory a refusal may allocate: refused before anything proportional to the input (a
#: measure that load cannot break, unlike a time; the inputs here imply gigabytes; a file read
#: reserves its 64 MiB cap, limits.MAX_FILE_BYTES, for a moment)
REFUSAL_BYTES = 128 * 2**20


def one_line_exit_2(argv, capsys, needle, max_bytes=REFUSAL_BYTES):
    import tracemalloc

    tracemalloc.start()
    try:
        code = main(argv)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip("\n").split("\n")) == 1 and "Traceback" not in err, err
    assert needle in err, err
    assert peak < max_bytes, f"refused after allocating {peak / 2**20:.0f} MiB"
    return err


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            ["show", "gpipe", "-p", "100000", "-m", "100000"],
            "implies up to 30000000000 ops, over the limit of 50000000",
        ),
        (["verify", "gpipe", "-p", "2147483648"], "over the limit of 50000000"),
        (["simulate", "interleaved-1f1b", "-p", "4", "-m", "4", "--v", "10000000"], "over the limit"),
        (["--max-ops", "10", "show", "1f1b"], "1f1b -p 4 -m 4: implies up to 48 ops, over the limit of 10"),
        (["show", "1f1b", "--max-ops", "0"], "--max-ops 0: must be an integer >= 1"),
        (["show", "1f1b", "--costs", "F=inf"], "F must be > 0, finite"),
        (["show", "1f1b", "--costs", "F=1e400"], "F must be > 0, finite"),
        (["simulate", "1f1b", "--comm-delay", "1e308"], "comm-delay=1e+308: must be a finite number >= 0 and <= 1e+15"),
        (
            ["simulate", "1f1b", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--mfu", "0"],
            "mfu=0.0: must be a fraction",
        ),
        (
            ["simulate", "1f1b", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--tp", "0"],
            "tp=0: must be an integer >= 1",
        ),
        (
            ["simulate", "1f1b", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--microbatch-size", "0"],
            "microbatch-size=0: must be an integer >= 1",
        ),
        (["export", "1f1b", "-o", "/nonexistent-dir/s.json"], "cannot write there"),
        (["gap", ""], "an empty value"),
        (["show", "9" * 5000], "... (5000 characters): unknown schedule family"),
        (["nosuch-command"], "invalid choice"),
        # unknown names, values outside a parameter's rules, missing files
        (["show", "nosuch"], "known families: 1f1b"),
        (["show", "chimera", "-p", "3"], "parameter -p=3"),
        (["show", "1f1b", "-p", "0"], "parameter -p=0: must be an integer >= 1"),
        (["show", "1f1b", "-m", "0"], "parameter -m=0"),
        (["show", "interleaved-1f1b", "-p", "4", "-m", "9", "--v", "2"], "number of rounds max(1, m // p) = 2"),
        (["show", "1f1b", "--costs", "F=1,X=2"], "unknown kind 'X'"),
        (["simulate", "1f1b", "--system", "nosuch"], "unknown systems preset; available: dgx-a100"),
        (["simulate", "1f1b", "--model", "nosuch"], "unknown llms preset; available: gpt3-1.3b"),
        (["simulate", "1f1b", "--system", "dgx-h100"], "--system and --model go together"),
        (["simulate", "1f1b", "--comm-delay", "-1"], "comm-delay=-1.0"),
        (["verify", "/nonexistent/schedule.json"], "file not found"),
        (["verify", "schedule.yaml"], "schedule.yaml: file not found"),
        # a placement problem (no family) is sized before its placement or pipes are allocated
        # (found by scripts/fuzz.py: 23 GB before the check); 2 x 999999999 stages, 2 x 4 x 999999999
        (["optimize", "-p", "999999999", "-m", "4"], "--placement linear with p=999999999: implies 1999999998 ops"),
        (["optimize", "-p", "4", "-m", "999999999"], "4 stages x 999999999 microbatches: implies 7999999992 ops"),
        (
            ["optimize", "-p", "4", "--placement", "loop", "--v", "999999999"],
            "--placement loop with p=4: implies 7999999992 ops",
        ),
    ],
)
def test_bad_command_lines_are_refused_at_once(argv, needle, capsys):
    one_line_exit_2(argv, capsys, needle)


def _write(tmp_path, name, data):
    f = tmp_path / name
    f.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return str(f)


GOOD_JSON = dumps(build("1f1b", p=2, m=2))


@pytest.mark.parametrize(
    "name,data,needle",
    [
        ("big.csv", "999999999F0\n", "1000000000 stages x 1 microbatches: implies 2000000000 ops"),
        ("sparse.csv", "0F0,0F1000000\n", "imply 2000002 ops but the file holds 2"),
        ("digits.csv", "0F0,0F" + "9" * 500 + "\n", "a stage or microbatch number of 500 digits (at most 12)"),
        ("cell.csv", "0F0,0F" + "9" * 5000 + "\n", "cell.csv:1:2: a cell of 5002 characters; at most 1024"),
        ("field.csv", "0F0," + "x" * 200_000 + "\n", "field.csv:1: malformed CSV: field larger than field limit"),
        ("rank.csv", "0F0\n" * 3 + "0F" + "1" * 19 + "\n", "19 digits"),
        ("deep.json", "[" * 1000 + "]" * 1000, "deep.json:1:1: lists and objects nested more than 64 deep"),
        ("digits.json", GOOD_JSON.replace('"m": 2', '"m": ' + "9" * 5000), "a number of 5000 digits"),
        ("huge-m.json", GOOD_JSON.replace('"m": 2', '"m": 100000000000'), "implies 400000000000 ops"),
        ("nan.json", GOOD_JSON.replace('"m": 2', '"m": NaN'), ":1"),
        ("latin1.json", GOOD_JSON.encode().replace(b"1f1b", b"\xe91f1b", 1), "not UTF-8 text (byte 0xe9)"),
        ("table.txt", "tick 0 1\ndev 0 0F0 0F2147483648\n", "x 2147483649 microbatches: implies 4294967298 ops"),
        ("sparse.txt", "tick 0 1\ndev 0 0F0 0F99999\n", "imply 200000 ops but the file holds 2"),
        ("dir.json", None, "is a directory"),
    ],
)
def test_bad_files_are_one_line_naming_the_file(tmp_path, capsys, name, data, needle):
    if data is None:
        path = str(tmp_path / name)
        os.mkdir(path)
    else:
        path = _write(tmp_path, name, data)
    err = one_line_exit_2(["verify", path], capsys, needle)
    assert name in err


def test_nan_in_json_names_line_and_column(tmp_path, capsys):
    path = _write(tmp_path, "n.json", '{"format": "ppverify-schedule",\n  "version": 1, "p": NaN}')
    one_line_exit_2(["verify", path], capsys, "n.json:2:22: NaN is not valid JSON")


def test_formats_are_recognised_by_content(tmp_path, capsys):
    # a JSON schedule named .csv (or given to import), a CSV named .txt: read as what they hold
    s = build("1f1b", p=2, m=2)
    for name, text in (("x.csv", GOOD_JSON), ("y.txt", csv_text(s)), ("z.json", csv_text(s))):
        path = _write(tmp_path, name, text)
        assert main(["verify", path]) == 0, capsys.readouterr().err
    assert main(["import", _write(tmp_path, "x.json", GOOD_JSON)]) == 0
    assert "VALID" in capsys.readouterr().out


def test_a_byte_order_mark_is_accepted_in_every_format(tmp_path, capsys):
    s = build("1f1b", p=2, m=2)
    for name, text in (
        ("s.json", GOOD_JSON),
        ("s.csv", csv_text(s)),
        ("s.txt", "tick 0 1 2 3\ndev 0 0F0 0F1 0B0 0B1\n"),
    ):
        path = _write(tmp_path, name, b"\xef\xbb\xbf" + text.encode())
        assert main(["show", path]) in (0, 1), capsys.readouterr().err


def test_yaml_errors_are_one_line(tmp_path, capsys):
    bad = {
        "sys.yaml": b"gpus_per_node: [1\ndevice: 2\n",
        "nonutf8.yaml": b"gpus_per_node: \xff\n",
        "digits.yaml": ("gpus_per_node: " + "9" * 5000 + "\n").encode(),
        "deep.yaml": b"a: " + b"[" * 5000,
    }
    for name, data in bad.items():
        path = _write(tmp_path, name, data)
        one_line_exit_2(["simulate", "1f1b", "--system", path, "--model", "gpt3-1.3b"], capsys, name)
        one_line_exit_2(["sweep", path, "--dry-run"], capsys, name)


def test_unprintable_names_are_escaped_not_a_crash(tmp_path, capsys):
    doc = json.loads(GOOD_JSON)
    doc["family"] = "\ud800\n2nd line"
    path = _write(tmp_path, "u.json", json.dumps(doc))  # ASCII: "\ud800" as an escape
    assert main(["show", path]) == 0
    out = capsys.readouterr().out
    assert "\\ud800" in out and "Traceback" not in out
    doc["programs"][0][0] = "\ud800"
    err = one_line_exit_2(["verify", _write(tmp_path, "v.json", json.dumps(doc))], capsys, "is not an action")
    assert "\\ud800" in err


def test_an_unexpected_exception_is_exit_3_never_a_verdict(monkeypatch, capsys):
    import ppverify.cli.commands.verify as verify_cmd

    def boom(schedule, *a, **k):
        raise RuntimeError("a bug\nwith two lines")

    monkeypatch.setattr(verify_cmd, "verify", boom)
    assert main(["verify", "1f1b"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" in err and "RuntimeError: a bug\\nwith two lines" in err
    assert main(["--debug", "verify", "1f1b"]) == 3
    assert "Traceback" in capsys.readouterr().err

    def interrupted(schedule, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(verify_cmd, "verify", interrupted)
    assert main(["verify", "1f1b"]) == 130
    assert capsys.readouterr().err == "ppverify verify: interrupted\n"


@pytest.mark.parametrize(
    "exc,code",
    [
        (RecursionError, 2),
        (MemoryError, 2),
        (OverflowError, 2),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), 2),
        (ValueError, 3),
    ],
)
def test_python_failures_caused_by_input_are_exit_2(monkeypatch, capsys, exc, code):
    import ppverify.cli.commands.verify as verify_cmd

    def fail(schedule, *a, **k):
        raise exc

    monkeypatch.setattr(verify_cmd, "verify", fail)
    assert main(["verify", "1f1b"]) == code
    assert capsys.readouterr().err.count("\n") == 1


def test_the_op_estimate_bounds_every_family():
    from ppverify.schedules import families

    for fam in families():
        built = 0
        for p, m in ((2, 4), (4, 8)):
            try:
                s = build(fam.name, p, m)
            except ParameterError:
                continue  # a size the family refuses; any other error fails
            built += 1
            assert s.num_ops <= family_ops(fam.name, p, m, fam.defaults()) <= 3 * s.num_ops, fam.name
        assert built, f"{fam.name}: built at no size"
    assert DEFAULT_MAX_OPS == 50_000_000
    with op_limit(100), pytest.raises(LimitError):
        build("1f1b", p=8, m=8)


def test_json_checks_are_linear_in_the_text():
    # the nesting and digit scan is a handful of regular-expression passes: ten times the text,
    # about ten times the time (a quadratic scan would be a hundred). CPU time of this process:
    # wall time also counts the seconds a loaded machine gives other processes, which need not
    # be the same for both sizes
    def seconds(n):
        text = json.dumps({"programs": [["0F0"] * n for _ in range(8)]})
        t0 = time.process_time()
        check_json_text(text, "big.json")
        return time.process_time() - t0

    small, large = min(seconds(20_000) for _ in range(3)), min(seconds(200_000) for _ in range(2))
    assert large < 30 * small, (small, large)


def test_adding_send_recv_is_linear_in_empty_cells(tmp_path, capsys):
    # 10**5 idle cells used to make the SEND/RECV lowering quadratic (minutes): ten times the cells
    # must cost about ten times the time (a ratio of two runs, not a wall-clock threshold; CPU time
    # of this process, which a test process descheduled during one run does not stretch)
    def seconds(cells: int) -> float:
        small = _write(tmp_path, f"idle{cells}.csv", "0F0," + "," * cells + "0B0\n1F0,1B0\n")
        t0 = time.process_time()
        assert main(["export", small, "--format", "torch-csv-comms"]) == 0
        return time.process_time() - t0

    ratio = seconds(100_000) / min(seconds(10_000) for _ in range(2))
    assert ratio < 40, ratio  # quadratic would be about 100
    path = _write(tmp_path, "idle.csv", "0F0," + "," * 100_000 + "0B0\n1F0,1B0\n")
    capsys.readouterr()
    assert main(["export", path, "--format", "torch-csv-comms"]) == 0
    rows = [
        [c for c in line.split(",") if c[1:] not in ("UNSHARD", "RESHARD", "REDUCE_GRAD")]
        for line in capsys.readouterr().out.splitlines()
    ]
    assert rows == [["0F0", "0SEND_F0", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]]


def test_time_limit_stops_a_block_at_its_first_check_after_the_deadline():
    # a clock read 0 three times, then far past: entry, two checks that pass, the third stops
    reads = iter([0.0, 0.0, 0.0] + [1e12] * 10)
    passed = 0
    with pytest.raises(LimitError, match="no answer within 0.3 s"), time_limit(0.3, clock=lambda: next(reads)):
        while True:
            check_time()
            passed += 1
    assert passed == 2


def test_an_answer_after_the_limit_is_no_answer():
    # a block that checks nothing and ends after its deadline: the time-out, not its result
    reads = iter([0.0, 5.0])
    with pytest.raises(LimitError, match="no answer within 1 s"), time_limit(1, clock=lambda: next(reads)):
        pass


def test_atomic_write_leaves_no_partial_file(tmp_path):
    f = tmp_path / "out.json"
    atomic_write(f, "{}\n")
    assert f.read_text() == "{}\n" and [p.name for p in tmp_path.iterdir()] == ["out.json"]
    with pytest.raises(Exception, match="is a directory"):
        atomic_write(tmp_path, "x")
    assert read_text(f) == "{}\n"


def test_damaged_store_lines_are_named_and_grid_duplicates_stored_once(tmp_path, capsys):
    cfg = _write(tmp_path, "c.yaml", "schedules: [gpipe, gpipe]\np: [2, 2]\nm: [2]\ncosts: {F: 1}\nlevels: [slot]\n")
    one_line_exit_2(["sweep", cfg, "--dry-run"], capsys, "label 'gpipe' used twice")
    cfg = _write(
        tmp_path,
        "c.yaml",
        "schedules: [gpipe]\np: [2, 2]\nm: [2, 2]\ncosts: {F: 1}\ncomm_delays: [0, 0.0]\nlevels: [slot]\n",
    )
    store = tmp_path / "s.jsonl"
    assert main(["sweep", cfg, "--store", str(store), "--workers", "1", "--no-progress"]) == 0
    assert len(store.read_text().splitlines()) == 1  # p, m and delay given twice: one point
    good = store.read_bytes()
    for line, why in (
        (b"5\n", "a JSON number"),
        (b"[]\n", "a JSON list"),
        (b"\xff\n", "not UTF-8"),
        (b'{"x": 1}\n', "a row without its point"),
    ):
        store.write_bytes(good + line)
        one_line_exit_2(
            ["sweep", cfg, "--store", str(store), "--dry-run"], capsys, f"s.jsonl:2: damaged store line ({why}"
        )
    one_line_exit_2(["sweep", cfg, "--store", str(tmp_path), "--dry-run"], capsys, "is a directory")


def _start(args, tmp_path):
    return subprocess.Popen(
        [sys.executable, "-m", "ppverify", *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_a_sweep_stops_it_promptly_and_keeps_the_rows(tmp_path, sig, code):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "schedules: [gpipe, 1f1b, zb-h1]\np: [2, 3, 4, 5, 6, 7, 8]\nm: [8, 9, 10, 11, 12, 13, 14, 15, 16]\n"
        "costs: {F: 1, B: 2}\ncomm_delays: [0, 0.5]\nlevels: [slot, async]\n"
    )
    store = tmp_path / "s.jsonl"
    proc = _start(
        ["sweep", str(cfg), "--store", str(store), "--workers", "2", "--batch", "1", "--no-progress"], tmp_path
    )
    deadline = time.time() + 60
    while time.time() < deadline and not (store.exists() and store.read_text().count("\n") >= 5):
        time.sleep(0.05)
    proc.send_signal(sig)
    t0 = time.perf_counter()  # once sent: a test process held up before sending adds nothing
    _, err = proc.communicate(timeout=20)
    assert time.perf_counter() - t0 < 10.0  # promptly, not at the end of the work (a loaded machine's margin)
    assert proc.returncode == code, err
    assert b"Traceback" not in err and b"rows are safe in" in err
    rows = [json.loads(x) for x in store.read_text().splitlines()]
    assert len(rows) >= 5 and len({r["point"] for r in rows}) == len(rows)


def _cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (user + system, from /proc): how far into its work it
    is, whatever the machine's load or speed."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # it has ended
        return float("inf")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sigterm_during_verify_stops_it_promptly(tmp_path):
    text = [r.split(",") for r in csv_text(build("1f1b", p=32, m=4096)).splitlines()]
    text[5][10], text[5][11] = text[5][11], text[5][10]
    # invalid: the verifier minimizes cores (about 25 CPU s here, 6 at m = 1024, which a fast
    # machine finished before a fixed 3 s wait was up)
    text[7][100], text[7][300] = text[7][300], text[7][100]
    (tmp_path / "bad.csv").write_text("\n".join(",".join(r) for r in text) + "\n")
    proc = _start(["verify", "bad.csv"], tmp_path)
    deadline = time.time() + 60
    # signal once it is well into the work (imports and parsing take about 1.5 CPU s)
    while proc.poll() is None and time.time() < deadline and _cpu_seconds(proc.pid) < 4.0:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    t0 = time.perf_counter()  # once sent, as above
    _, err = proc.communicate(timeout=20)
    if proc.returncode in (0, 1):
        pytest.fail("the verdict came before the signal: make the schedule larger")
    assert time.perf_counter() - t0 < 10.0  # promptly, not at the end of the work (a loaded machine's margin)
    assert proc.returncode == 143 and err == b"ppverify verify: terminated (SIGTERM)\n"


def _without_clock(value):
    # wall-clock fields (``wall_s``, ``order_s``, ``seconds`` ...) vary by run; everything else may not
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if not (k.endswith("_s") or k in ("seconds", "wall"))}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "zbv", "-p", "3", "-m", "6", "--json"],
        ["simulate", "1f1b", "-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--json"],
        ["verify", "interleaved-1f1b", "-p", "2", "-m", "4", "--memory-cap", "1", "--json"],
        [
            "optimize",
            "1f1b",
            "-p",
            "3",
            "-m",
            "6",
            "--comm-delay",
            "0.5",
            "--time-limit",
            "1",
            "--workers",
            "1",
            "--seed",
            "3",
            "--json",
        ],
        [
            "compare",
            "--schedules",
            "gpipe,1f1b",
            "--costs",
            "F=1,B=2",
            "-p",
            "2",
            "-m",
            "2,4",
            "--levels",
            "formula,slot",
            "--no-progress",
            "--json",
        ],
    ],
)
def test_identical_inputs_give_identical_json(argv, capsys):
    outs = []
    for _ in range(2):
        assert main(argv) in (0, 1)
        text = capsys.readouterr().out
        outs.append(_without_clock(json.loads(text[text.index("{") :])))
    assert outs[0] == outs[1]


def _dies_once(tasks):
    # the first worker to run a batch dies as if killed (out of memory, SIGKILL); later ones work
    marker = os.environ["PPVERIFY_TEST_MARKER"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(9)
    return [{"point": str(t)} for t in tasks]


def _always_dies(tasks):
    os._exit(9)


def test_a_killed_pool_worker_is_retried_then_reported(tmp_path, monkeypatch):
    import ppverify.sweep.executor as ex
    from ppverify.core.errors import PPVerifyError

    monkeypatch.setenv("PPVERIFY_TEST_MARKER", str(tmp_path / "died"))
    monkeypatch.setattr(ex, "run_batch", _dies_once)  # forked workers inherit the patch
    rows: list = []
    ex._run_pool([[1], [2], [3]], rows.extend, workers=2)
    assert sorted(r["point"] for r in rows) == ["1", "2", "3"]
    monkeypatch.setattr(ex, "run_batch", _always_dies)
    with pytest.raises(PPVerifyError, match="a sweep worker process died 2 times"):
        ex._run_pool([[1]], rows.extend, workers=1)


# ----------------------------------------------------------------------------- work bounded before it starts
# (issue 22 item 6): the op limit is a memory estimate that holds on a 2-core, 24 GB machine,
# options are checked before the build, and a sweep starts no more processes than its batches and
# the cores allow


@pytest.mark.parametrize(
    "argv,ops",
    [
        # the campaign's two: 3.8 GB then a MemoryError; 6.7 GB and still running at 123 s
        (["show", "1f1b", "-p", "1000", "-m", "10000"], 3 * 1000 * 10000),
        (["show", "interleaved-1f1b", "-p", "8", "-m", "8", "--v", "100000"], 3 * 8 * 8 * 100000),
        (["simulate", "gpipe", "-p", "100", "-m", "20000"], 3 * 100 * 20000),
        (["verify", "1f1b", "-p", "64", "-m", "40000"], 3 * 64 * 40000),
    ],
)
def test_builds_that_do_not_fit_are_refused_by_their_memory(argv, ops, capsys):
    line = one_line_exit_2(argv, capsys, "").strip()
    # by hand: 192 MiB + 640 B per op (up to 3 per stage and microbatch: F, I, W), in GiB, to four digits
    gib = (192 * 2**20 + 640 * ops) / 2**30
    assert f"needs about {gib:.4g} GiB of memory (up to {ops} ops" in line, line
    assert "over the limit of 2 GiB (raise it with ppverify --max-memory-gib X)" in line


@given(n=st.integers(1, 10**8), gib=st.floats(0.25, 64))
def test_an_op_count_is_refused_exactly_when_its_estimate_is_over_the_budget(n, gib):
    fits = 192 * 2**20 + 640 * n <= gib * 2**30
    assert ops_memory(n) == OPS_BASE_BYTES + BYTES_PER_OP * n
    with memory_limit(gib):
        try:
            check_ops(n, "x")
        except LimitError as exc:
            assert (not fits and "GiB of memory" in str(exc)) or n > 50_000_000
        else:
            assert fits


def test_the_estimate_admits_what_the_suite_builds():
    # the largest family builds the fast suite runs (verify p=32 m=1024, a 786,432-op optimize
    # instance) stay under the default 2 GiB
    for n in (3 * 32 * 1024, 786_432):
        check_ops(n, "x")


@pytest.mark.parametrize(
    "argv,needle",
    [
        # a build of about 9e5 ops (a minute on this machine) never starts for a bad option
        (["show", "1f1b", "-p", "300", "-m", "1000", "--costs", "F=-1"], "parameter --costs=F=-1: F must be > 0"),
        (["verify", "1f1b", "-p", "300", "-m", "1000", "--costs", "B=0"], "parameter --costs=B=0: B must be > 0"),
        (["show", "1f1b", "-p", "300", "-m", "1000", "--save", "nodir/o.json"], "folder nodir does not exist"),
        (
            ["optimize", "1f1b", "-p", "4", "-m", "64", "--save", "nodir/o.json", "--time-limit", "60"],
            "parameter --save=nodir/o.json: folder nodir does not exist",
        ),
    ],
)
def test_options_are_checked_before_the_build(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = one_line_exit_2(argv, capsys, "").strip()
    assert needle in line, line


@given(workers=st.one_of(st.none(), st.integers(1, 10_000)), batches=st.integers(1, 10_000), cores=st.integers(1, 256))
def test_a_sweep_starts_no_more_processes_than_batches_and_cores(workers, batches, cores):
    n = pool_size(workers, batches, cores)
    assert 1 <= n <= min(batches, cores)
    assert n == min(workers or cores, batches, cores)


def test_report_bounds_a_huge_row_before_building_it(tmp_path, capsys, monkeypatch):
    # a results row with p = 8,000,000 (136 s, then out of memory, in the issue): kept in the
    # table, no chart, a note naming the row and the budget; nothing of its size is allocated
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "--schedules", "1f1b", "--costs", "F=1,B=2", "-p", "2", "-m", "2"]
    assert main([*argv, "--levels", "formula,slot", "--no-progress", "--out", "r.csv"]) == 0
    text = (tmp_path / "r.csv").read_text()
    (tmp_path / "big.csv").write_text(
        text.replace('"p=2 m=2 F=1,B=2 c=0",2,2,', '"p=8000000 m=2 F=1,B=2 c=0",8000000,2,')
    )
    capsys.readouterr()
    import tracemalloc

    tracemalloc.start()
    try:
        code = main(["report", "--from", "big.csv", "-o", "out.html"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0 and "0 charted points" in capsys.readouterr().out
    # by hand: 3 x 8,000,000 x 2 ops implied, over the default budget of 400,000 chart ops
    assert "48000000 ops implied, over the 400000 chart-op budget" in (tmp_path / "out.html").read_text()
    assert peak < REFUSAL_BYTES
