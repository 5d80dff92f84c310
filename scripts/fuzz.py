"""Fuzz ppverify with hostile input: mutated files of every format and random command lines.

Every case must end with exit code 0, 1 or 2, exactly one line on stderr when the code is 2, no
traceback, within 5 CPU seconds (and, in subprocess cases, within 2 GB of address space). Cases run in
process (``ppverify.cli.main``, fast) and a share of them in subprocesses (real exit codes,
stderr and resource limits). ``tests/cli/test_fuzz.py`` runs a few thousand; this script more::

    python scripts/fuzz.py --cases 20000 --seed 1 --subprocess-every 200

``measure``, ``report`` and ``calibrate`` get ``--measured-cases`` more (default 2,000): their
input files and options, with every process start replaced by a stub in process (reaching it means
the input was accepted; reaching it with a value no run accepts is a failure), and in subprocesses
only input that must be refused, each in a session of its own that must be empty once the command
has ended (no worker or fork server left behind).

It prints the outcome counts and every failing case (command line and file head), and exits 1
when any case failed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import random
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: CPU seconds a case may take (CPU, not wall-clock: the machine running the suite may be shared)
CASE_SECONDS = 5.0
#: wall-clock seconds after which a case counts as hung
HANG_SECONDS = 30.0
MEMORY_BYTES = 2 * 2**30

HOSTILE = [
    "9" * 5000,
    "9" * 40,
    "999999999",
    "2147483648",
    "4294967296",
    "-1",
    "0",
    "-0",
    "1e400",
    "1e308",
    "NaN",
    "nan",
    "Infinity",
    "-inf",
    "inf",
    ".inf",
    "1.5",
    "0x10",
    "1_0",
    "",
    " ",
    "\\ud800",
    "\ud800",
    "\x00",
    "\u2028",
    "{",
    "}",
    "[",
    "]",
    '"',
    ",",
    ";",
    ":",
    "\n",
    "\r\n",
    "\t",
    "null",
    "true",
    "~",
    "0F1000000",
    "999999999F0",
    "(0F0;1B0)OVERLAP_F_B",
    "0SEND_F0",
    "1RECV_B9",
    "0UNSHARD",
    "0REDUCE_GRAD",
    "&a",
    "*a",
    "!!python/object:os.system",
    "? x",
    "- - -",
    "%YAML 1.2",
    "\ufeff",
    "é",
    "x" * 300,
    "'",
    "\\",
    "0F",
    "F0",
    "0Z0",
    "..",
    "Rank 0",
    "Step 0:",
    "tick",
    "dev 0",
]
NUMBERS = [
    "0",
    "1",
    "2",
    "3",
    "4",
    "-1",
    "999999999",
    "2147483648",
    "9" * 30,
    "1e400",
    "nan",
    "inf",
    "0.5",
    "1e308",
    "abc",
    "",
    "9" * 5000,
]
SMALL = ["1", "2", "3", "4"]
#: options that ask for minutes of legitimate work (a fixed grid of findings, an HTML report)
SLOW_FLAGS = ("--findings", "--report", "--measured", "--map")


@dataclass
class Case:
    """One fuzz case: a command line and the files it needs (name -> bytes)."""

    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    kind: str = ""
    #: the input is certainly bad (a value no command accepts): it must be refused, never run
    refuse: bool = False
    #: special files by name (see :func:`make_node`: FIFOs, device nodes, sockets, links, folders)
    nodes: dict[str, str] = field(default_factory=dict)
    #: the exit code the case must end with, text stderr must hold, text stdout must hold (in process)
    expect_code: int | None = None
    expect_err: tuple[str, ...] = ()
    expect_out: str = ""
    #: the exit code the case must end with (None: any of 0, 1, 2), e.g. 1 for a file known INVALID
    expect: int | None = None


@dataclass
class Outcome:
    case: Case
    code: int | None
    err: str
    seconds: float
    problem: str = ""
    out: str | None = None  # stdout, when the case ran in process


# ----------------------------------------------------------------------------- seeds


def seed_files() -> dict[str, bytes]:
    """Valid files of every format ppverify reads, by name (the extension says the format)."""
    from ppverify.engines.table import format_schedule_table
    from ppverify.io.json_format import dumps
    from ppverify.io.torch_csv import csv_text
    from ppverify.schedules import build
    from ppverify.systems.presets import shipped_presets

    out: dict[str, bytes] = {}
    for fam, kw in (
        ("gpipe", {}),
        ("1f1b", {}),
        ("zb-h1", {}),
        ("interleaved-1f1b", {"v": 2}),
        ("zbv", {}),
        ("chimera", {}),
        ("dualpipev", {}),
    ):
        p, m = 2, 4
        s = build(fam, p, m, **kw)
        out[f"{fam}.json"] = dumps(s).encode()
        if fam not in ("chimera",):
            out[f"{fam}.csv"] = csv_text(s).encode()
            out[f"{fam}-comms.csv"] = csv_text(s, "compute_comms").encode()
        if s.placement.name == "linear":  # a table does not say its placement: linear is assumed
            out[f"{fam}.txt"] = format_schedule_table(s).encode()
    models = shipped_presets()
    out["system.yaml"] = models.joinpath("systems", "dgx-h100.yaml").read_bytes()
    out["llm.yaml"] = models.joinpath("llms", "gpt3-1.3b.yaml").read_bytes()
    out["sweep.yaml"] = (
        b"name: fz\nschedules: [gpipe, {family: interleaved-1f1b, v: 2, label: i2}]\n"
        b"p: [2]\nm: [2, 4]\ncosts: {F: 1, B: 2}\ncomm_delays: [0, 0.5]\nlevels: [formula, slot]\n"
    )
    out["store.jsonl"] = (
        b'{"point": "0123456789abcdef", "schedule": "gpipe", "makespan": 6.0}\n'
        b'{"point": "fedcba9876543210", "schedule": "1f1b", "makespan": 6.0}\n'
    )
    return out


# ----------------------------------------------------------------------------- mutations


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three random edits of ``data``: spans deleted, duplicated or swapped, hostile tokens
    inserted or put in place of numbers, bytes flipped, deep nesting, huge fields, many cells."""
    text = data.decode("utf-8", "surrogatepass")
    for _ in range(rng.randint(1, 3)):
        n = len(text)
        a, b = sorted(rng.randrange(n + 1) for _ in range(2)) if n else (0, 0)
        op = rng.randrange(13)
        if op == 0:
            text = text[:a] + text[b:]
        elif op == 1:
            text = text[:b] + text[a:b] + text[b:]
        elif op == 2:
            text = text[:a] + rng.choice(HOSTILE) + text[a:]
        elif op == 3:
            nums = list(re.finditer(r"\d+(\.\d+)?", text))
            if nums:
                mt = rng.choice(nums)
                text = text[: mt.start()] + rng.choice(NUMBERS + HOSTILE[:12]) + text[mt.end() :]
        elif op == 4:
            lines = text.split("\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif op == 5:
            text = text[:a]
        elif op == 6:
            text = text[:a] + rng.choice("[{") * rng.choice([70, 1000, 100000]) + text[a:]
        elif op == 7:
            text = text[:a] + rng.choice("x,9 ") * rng.choice([1100, 140000]) + text[a:]
        elif op == 8:
            text = text[:a] + "\n" + "," * rng.choice([10**3, 10**4, 10**5]) + "\n" + text[a:]
        elif op == 9:
            text = "\ufeff" + text
        elif op == 10:
            acts = list(re.finditer(r"(?<!\d)\d{1,9}[FBIW]\d{1,9}", text))
            if acts:
                mt = rng.choice(acts)
                text = (
                    text[: mt.start()]
                    + rng.choice(
                        ["999999999F0", "0F1000000", "0B99999", "3W0", "0X0", "12345678901234F0", "0F" + "9" * 5000]
                    )
                    + text[mt.end() :]
                )
        elif op == 11:
            words = list(re.finditer(r"[A-Za-z_]+", text))
            if words:
                mt = rng.choice(words)
                text = (
                    text[: mt.start()]
                    + rng.choice(["x", mt.group().upper(), mt.group() + "_x", "\ud800"])
                    + text[mt.end() :]
                )
        else:
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
    raw = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.05:  # a byte that is not UTF-8
        k = rng.randrange(len(raw) + 1)
        raw = raw[:k] + bytes([rng.choice([0xFF, 0xC3, 0x80, 0x00])]) + raw[k:]
    return raw


def file_case(seeds: dict[str, bytes], rng: random.Random) -> Case:
    """A command reading one mutated seed file (sometimes under another format's extension)."""
    name = rng.choice(sorted(seeds))
    data = mutate(seeds[name], rng) if rng.random() < 0.95 else seeds[name]
    ext = Path(name).suffix
    if ext in (".json", ".csv", ".txt") and rng.random() < 0.1:
        ext = rng.choice([".json", ".csv", ".txt", ".table"])
    f = "in" + ext
    if name == "system.yaml":
        argv = ["simulate", "1f1b", "-p", "2", "--system", f, "--model", "gpt3-1.3b", "--no-table"]
    elif name == "llm.yaml":
        argv = ["simulate", "1f1b", "-p", "2", "--system", "dgx-h100", "--model", f, "--no-table"]
    elif name == "sweep.yaml":
        argv = ["sweep", f, "--dry-run", "--store", "st.jsonl"]
    elif name == "store.jsonl":
        return Case(["sweep", "cfg.yaml", "--dry-run", "--store", f], {f: data, "cfg.yaml": seeds["sweep.yaml"]}, name)
    else:
        cmd = rng.choice(["verify", "verify", "show", "simulate", "export", "import", "plot"])
        argv = [cmd, f]
        if cmd == "export":
            argv += ["-o", rng.choice(["out.json", "out.csv"])]
        elif cmd == "verify":
            argv += ["--time-limit", "3"]
        elif cmd == "simulate":
            argv += ["--no-table"]
        elif cmd == "plot":
            argv += ["-o", "out.png"]
        if cmd == "import" and rng.random() < 0.3:
            argv += ["--placement", rng.choice(["loop", "v", "wave", "0,1", "a,b", "0,9", "", "9" * 5000])]
    return Case(argv, {f: data}, name)


def _options(command: str) -> list[tuple[str, object]]:
    from ppverify.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for act in sub.choices[command]._actions:
        if act.option_strings and act.dest != "help":
            out.append((act.option_strings[-1], act))
    return out


_OPTION_CACHE: dict[str, list] = {}


def cli_case(rng: random.Random) -> Case:
    """A random command line: a command, a family or junk, and random options with small, hostile
    or malformed values."""
    cmd = rng.choice(
        [
            "show",
            "verify",
            "simulate",
            "export",
            "list",
            "gap",
            "optimize",
            "plot",
            "import",
            "compare",
            "sweep",
            rng.choice(HOSTILE),
        ]
    )
    if cmd not in _OPTION_CACHE:
        try:
            _OPTION_CACHE[cmd] = _options(cmd)
        except (StopIteration, KeyError):
            _OPTION_CACHE[cmd] = []
    argv = [cmd]
    fam = rng.choice(
        [
            "gpipe",
            "1f1b",
            "1f1b-split",
            "zb-h1",
            "zbv",
            "interleaved-1f1b",
            "hanayo",
            "chimera",
            "dualpipev",
            "looped-bfs",
            "nosuch",
            "x.json",
            rng.choice(HOSTILE),
        ]
    )
    if cmd not in ("list", "sweep", "import", "compare"):
        argv.append(fam)
    argv += (
        ["-p", rng.choice(SMALL + NUMBERS[:9]), "-m", rng.choice(SMALL + NUMBERS[:9])]
        if cmd not in ("list", "sweep", "import", "compare", "prove") and rng.random() < 0.8
        else []
    )
    opts = _OPTION_CACHE.get(cmd, [])
    for _ in range(rng.randint(0, 3)):
        if not opts:
            break
        flag, act = rng.choice(opts)
        if flag in SLOW_FLAGS:
            continue
        if flag in ("--trace", "--frame", "--save", "-o", "--output", "--out", "--store"):
            argv += [flag, rng.choice(["o.json", "o.csv", "/nonexistent/o.json", ".", "o.png", "o.txt"])]
        elif act.nargs == 0:
            argv.append(flag)
        elif getattr(act, "choices", None):
            argv += [flag, rng.choice(list(act.choices) + ["bogus"])]
        elif act.type in (int, float):
            argv += [flag, rng.choice(NUMBERS)]
        else:
            argv += [
                flag,
                rng.choice(
                    [
                        "F=1,B=2",
                        "F=inf",
                        "F=1e400",
                        "F=0",
                        "X=1",
                        "F",
                        "4",
                        "loop",
                        "v",
                        "0,1",
                        "dgx-h100",
                        "gpt3-1.3b",
                        "1,1",
                        "64GiB",
                        "-1",
                        "",
                        rng.choice(HOSTILE),
                    ]
                ),
            ]
    if cmd in ("optimize", "gap", "compare"):
        argv += ["--time-limit", "0.5"]
    if cmd == "verify":  # a file may imply 10**5 ops legitimately: bounded by the time limit
        argv += ["--time-limit", "3"]
    if cmd == "compare":  # the default grid is minutes of work: a small one, random options after it
        argv[1:1] = [
            "--schedules",
            "gpipe,1f1b",
            "--systems",
            "ideal",
            "--models",
            "gpt3-1.3b",
            "-p",
            "2",
            "-m",
            "2",
            "--levels",
            "formula,slot",
            "--no-progress",
        ]
    return Case(argv, {}, "cli")


def make_cases(n: int, seed: int) -> list[Case]:
    """``n`` cases from ``seed``: two thirds mutated files, one third random command lines; every
    20th case instead an exported comms file with an action moved between ranks."""
    rng = random.Random(seed)
    seeds = seed_files()
    cases = [file_case(seeds, rng) if rng.random() < 0.67 else cli_case(rng) for _ in range(n)]
    cases[::20] = moved_action_cases(len(cases[::20]), seed)
    return cases


# ----------------------------------------------------------------------------- actions moved between ranks

_STAGE_OF = re.compile(r"^(\d+)(SEND_F|RECV_F|SEND_B|RECV_B|UNSHARD|RESHARD|REDUCE_GRAD)")


@functools.cache
def comms_exports() -> tuple[tuple[str, str, tuple[tuple[str, ...], ...], str], ...]:
    """``(name, format, rows, file text)`` of exported files with SEND/RECV, one family per
    placement: the ``compute_comms`` CSV (PyTorch's lowering: SEND/RECV, UNSHARD/RESHARD,
    REDUCE_GRAD) and a ppverify JSON schedule with explicit SEND/RECV."""
    from ppverify.io.json_format import dumps
    from ppverify.io.torch_csv import to_rows
    from ppverify.schedules import build
    from ppverify.verify.comm_model import insert_comms

    out = []
    one_pipe = (("1f1b", 3, 2), ("zb-h1", 3, 4), ("interleaved-1f1b", 2, 4), ("zbv", 2, 4), ("dualpipev", 2, 4))
    for fam, p, m in one_pipe + (("chimera", 4, 4), ("hanayo", 2, 2)):
        s = build(fam, p, m)
        if s.placement.num_pipes == 1:  # PyTorch's CSV has one pipe
            out.append((fam, "csv", tuple(map(tuple, to_rows(s, "compute_comms"))), ""))
        c = insert_comms(s)
        out.append((fam, "json", tuple(tuple(str(a) for a in prog) for prog in c.programs), dumps(c)))
    return tuple(out)


def moved_action_case(rng: random.Random) -> Case:
    """An exported comms file with one SEND, RECV, UNSHARD, RESHARD or REDUCE_GRAD moved (or
    copied) into the list of a rank that does not hold its stage: ``verify`` and ``import`` must
    answer INVALID (exit 1), under either point-to-point semantics."""
    import json

    name, fmt, rows, text = rng.choice(comms_exports())
    held = [{int(x) for x in re.findall(r"(\d+)[FBIW]\d+", ",".join(row))} for row in rows]
    moves = [
        (r, k, r2)
        for r, row in enumerate(rows)
        for k, cell in enumerate(row)
        if (mt := _STAGE_OF.match(cell))
        for r2 in range(len(rows))
        if int(mt.group(1)) not in held[r2]
    ]
    r, k, r2 = rng.choice(moves)
    progs = [list(row) for row in rows]
    cell = progs[r][k] if rng.random() < 0.3 else progs[r].pop(k)
    progs[r2].insert(rng.randrange(len(progs[r2]) + 1), cell)
    if fmt == "csv":
        f, data = "moved.csv", "\n".join(",".join(row) for row in progs) + "\n"
    else:
        doc = json.loads(text)
        doc["programs"] = progs
        f, data = "moved.json", json.dumps(doc)
    argv = [rng.choice(["verify", "import"]), f, "--comm-semantics", rng.choice(["buffered", "rendezvous"])]
    return Case(argv, {f: data.encode()}, f"moved-action-{name}.{fmt}", expect=1)


def moved_action_cases(n: int, seed: int) -> list[Case]:
    """``n`` cases of :func:`moved_action_case` from ``seed``."""
    rng = random.Random(seed)
    return [moved_action_case(rng) for _ in range(n)]


# ----------------------------------------------------------------------------- measure, report, calibrate

#: commands that start worker processes (measure, calibrate) or read results files (report)
MEASURED_COMMANDS = ("measure", "report", "calibrate")
#: values of the run options that no run accepts (steps, timeouts, seeds, counts)
BAD_RUN_VALUES = ["0", "-1", "-0", "nan", "inf", "-inf", "1e400", "abc", "", "9" * 5000, "1e308", "0x10"]


@functools.lru_cache(maxsize=1)
def measured_seed_files() -> dict[str, bytes]:
    """Valid inputs of ``report`` (results of ``compare --out``/``--json``, a sweep store, findings,
    a PNG) made by ppverify itself; with :func:`seed_files` for schedules and presets."""
    import json
    import tempfile

    from ppverify.compare import ScheduleEntry, abstract_configs, run_comparison

    df = run_comparison(
        abstract_configs({"F": 1, "B": 2}, (0.0,), (2,), (2, 4)),
        (ScheduleEntry("gpipe", "gpipe"), ScheduleEntry("1f1b", "1f1b")),
        ("formula", "slot"),
    )
    out: dict[str, bytes] = {"results.csv": df.to_csv(index=False).encode()}
    out["results.json"] = json.dumps({"rows": json.loads(df.to_json(orient="records"))}).encode()
    out["results.jsonl"] = "".join(json.dumps(r) + "\n" for r in json.loads(df.to_json(orient="records"))).encode()
    out["findings.json"] = json.dumps(
        {
            "findings": [
                {
                    "key": "k1",
                    "claim": "1F1B holds fewer activations than GPipe",
                    "summary": "reproduced",
                    "verdicts": [{"level": "slot", "reproduced": True, "evidence": "peak 2 < 4"}],
                }
            ]
        }
    ).encode()
    out["map.png"] = b"\x89PNG\r\n\x1a\n" + bytes(24)
    with tempfile.TemporaryDirectory() as d:  # a report from the CSV must be accepted as it is
        from ppverify.report.build import report_from_file

        (Path(d) / "r.csv").write_bytes(out["results.csv"])
        report_from_file(str(Path(d) / "r.csv"), str(Path(d) / "r.html"))
    return out


def _run_option_value(rng: random.Random, good: list[str]) -> tuple[str, bool]:
    """A value for a numeric run option: a good one, or one no run accepts (then True)."""
    if rng.random() < 0.5:
        return rng.choice(good), False
    return rng.choice(BAD_RUN_VALUES), True


def measured_case(seeds: dict[str, bytes], rng: random.Random) -> Case:
    """A ``measure``, ``report`` or ``calibrate`` command line with mutated input files (from
    ``seeds``: :func:`seed_files` and :func:`measured_seed_files`) and hostile options. Valid ones
    would start worker processes: :func:`run_in_process` stops them at the first process start
    (that counts as accepted input)."""
    cmd = rng.choice(MEASURED_COMMANDS)
    files: dict[str, bytes] = {}
    refuse = False

    def maybe_mutated(name: str) -> bytes:
        return mutate(seeds[name], rng) if rng.random() < 0.9 else seeds[name]

    if cmd == "measure":
        argv = ["measure"]
        if rng.random() < 0.5:
            name = rng.choice([n for n in seeds if n.endswith((".json", ".csv", ".txt")) and "results" not in n])
            name = name if "findings" not in name else "1f1b.json"
            f = "in" + (Path(name).suffix if rng.random() < 0.9 else rng.choice([".json", ".csv", ".txt"]))
            files[f] = maybe_mutated(name)
            argv.append(f)
        else:
            argv += [rng.choice(["gpipe", "1f1b", "zbv", "chimera", "nosuch", rng.choice(HOSTILE)])]
            argv += ["-p", rng.choice(SMALL + NUMBERS[:9]), "-m", rng.choice(SMALL + NUMBERS[:9])]
        options = ["--steps", "--warmup", "--timeout", "--seed", "--costs", "--compute", "--format", "--system", "out"]
        for opt in rng.sample(options, rng.randint(1, 4)):  # each once: a repeated option's last value wins
            if opt in ("--steps", "--warmup", "--timeout", "--seed"):
                value, bad = _run_option_value(rng, ["1", "2", "5"])
                bad = bad and not (opt in ("--warmup", "--seed") and value in ("0", "-0"))
                refuse |= bad
                argv += [opt, value]
            elif opt == "--costs":
                argv += [opt, rng.choice(["F=0.01,B=0.02", "F=inf", "F=1e400", "F=0", "X=1", "F", "", "F=-1"])]
            elif opt in ("--compute", "--format"):
                argv += [opt, rng.choice(["sleep", "real", "compute_only", "compute_comms", "bogus", ""])]
            elif opt == "--system":
                files["sys.yaml"] = maybe_mutated("system.yaml")
                argv += [opt, rng.choice(["sys.yaml", "sys.yaml", "dgx-h100", "nosuch", "/nonexistent/s.yaml"])]
            else:
                argv += [rng.choice(["--trace", "--frame", "--plot"]), rng.choice(["o.json", ".", "/nonexistent/o"])]
    elif cmd == "report":
        name = rng.choice(["results.csv", "results.json", "results.jsonl", "store.jsonl"])
        f = "in" + (Path(name).suffix if rng.random() < 0.9 else rng.choice([".csv", ".json", ".jsonl", ".txt"]))
        files[f] = maybe_mutated(name)
        argv = ["report", "--from", f, "-o", rng.choice(["out.html"] * 6 + ["out.pdf", ".", "/nonexistent/r.html"])]
        if rng.random() < 0.3:
            files["fj.json"] = maybe_mutated("findings.json")
            argv += ["--findings-json", rng.choice(["fj.json", "fj.json", "nosuch.json", "."])]
        if rng.random() < 0.2:
            png = seeds["map.png"]
            files["m.png"] = rng.choice([png, png[: rng.randrange(len(png))], b"GIF89a", png + bytes(10**5)])
            argv += ["--findings-map", rng.choice(["m.png", ".", "nosuch.png"])]
        if rng.random() < 0.3:
            argv += ["--max-chart-ops", rng.choice(NUMBERS)]
        if rng.random() < 0.2:
            argv += ["--title", rng.choice(HOSTILE)]
        if rng.random() < 0.2:
            argv += [rng.choice(["--time-limit", "--max-opt-ops"]), rng.choice(NUMBERS)]
    else:
        argv = ["calibrate"]
        value, refuse = _run_option_value(rng, ["1", "30"])
        argv += ["--timeout", value] if rng.random() < 0.8 else []
        refuse = refuse and "--timeout" in argv
        if rng.random() < 0.5:
            out = rng.choice(["c.yaml", ".", "/nonexistent/c.yaml", "c.json", ""])
            argv += ["--out", out]
            refuse |= out in (".", "/nonexistent/c.yaml", "")
        argv += [flag for flag in ("--quick", "--json") if rng.random() < 0.5]
    return Case(argv, files, cmd, refuse)


def make_measured_cases(n: int, seed: int) -> list[Case]:
    """``n`` cases of :func:`measured_case` from ``seed``."""
    rng = random.Random(seed)
    seeds = {**seed_files(), **measured_seed_files()}
    return [measured_case(seeds, rng) for _ in range(n)]


class WorkersReached(BaseException):
    """A fuzz case got past input validation to the first worker process (BaseException:
    ppverify's handlers must not turn it into an exit code)."""


@contextlib.contextmanager
def no_processes() -> Iterator[None]:
    """Any process start (multiprocessing, its fork server, subprocess) raises
    :class:`WorkersReached` instead: the input was accepted, and nothing is left running."""
    import multiprocessing.forkserver
    import multiprocessing.process

    def refuse(*args: object, **kwargs: object) -> None:
        raise WorkersReached()

    saved = [
        (multiprocessing.process.BaseProcess, "start"),
        (multiprocessing.forkserver, "ensure_running"),
        (multiprocessing.forkserver.ForkServer, "ensure_running"),
        (subprocess.Popen, "__init__"),
    ]
    old = [getattr(obj, name) for obj, name in saved]
    for obj, name in saved:
        setattr(obj, name, refuse)
    try:
        yield
    finally:
        for (obj, name), fn in zip(saved, old):
            setattr(obj, name, fn)


# ----------------------------------------------------------------------------- running


class CaseTimeout(BaseException):
    """A case ran past its time (BaseException: ppverify's handler must not swallow it)."""


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout()


def check(outcome: Outcome) -> str:
    """What is wrong with an outcome ('' when nothing)."""
    if outcome.problem:
        return outcome.problem
    if outcome.code not in (0, 1, 2):
        return f"exit code {outcome.code}"
    if "Traceback" in outcome.err:
        return "traceback"
    # an error is one line; a note printed on reading (a CSV's byte-order mark) may precede it
    errors = [line for line in outcome.err.strip("\n").split("\n") if not line.startswith("ppverify: note:")]
    if outcome.code == 2 and len(errors) != 1:
        return f"{len(errors)} stderr lines on exit 2"
    if outcome.seconds > CASE_SECONDS:
        return f"took {outcome.seconds:.1f} s"
    expected = check_expectations(outcome)
    if expected:
        return expected
    if outcome.case.expect is not None and outcome.code != outcome.case.expect:
        return f"exit {outcome.code}, expected {outcome.case.expect} (a wrong verdict)"
    return ""


def _write_files(case: Case, workdir: Path) -> None:
    for name, data in case.files.items():
        (workdir / name).write_bytes(data)
    for name, kind in case.nodes.items():
        make_node(workdir / name, kind)


def run_in_process(case: Case, workdir: Path) -> Outcome:
    """Run ``ppverify.cli.main`` in this process, in ``workdir``, with a 5 s alarm."""
    from ppverify.cli import main

    _write_files(case, workdir)
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    t0 = time.process_time()
    code, problem = None, ""
    prev = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    measured = case.kind in MEASURED_COMMANDS
    try:
        os.chdir(workdir)
        stub = no_processes() if measured else contextlib.nullcontext()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), stub:
            code = main(case.argv)
    except CaseTimeout:
        problem = f"hang (no answer in {HANG_SECONDS:g} s)"
    except WorkersReached:
        code = 0  # accepted: the run would start here
        problem = "bad input reached the worker processes" if case.refuse else ""
    except BaseException as exc:
        problem = f"escaped main: {type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, prev)
        os.chdir(old)
        problem = problem or nodes_problem(case, workdir)
        remove_nodes(case, workdir)
        for name in list(case.files) + [
            "out.json",
            "out.csv",
            "out.png",
            "st.jsonl",
            "o.json",
            "o.csv",
            "o.png",
            "o.txt",
            "out.html",
            "c.yaml",
            "c.json",
        ]:
            with contextlib.suppress(OSError):
                (workdir / name).unlink()
    if measured and not problem:
        import multiprocessing

        if multiprocessing.active_children():
            problem = "a worker process was left behind"
        elif case.refuse and code != 2:
            problem = f"bad input accepted (exit {code})"
    outcome = Outcome(case, code, err.getvalue(), time.process_time() - t0, problem)
    outcome.out = out.getvalue()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if rss > MEMORY_BYTES and not _MEMORY_FLAGGED:  # the first case to push the process past 2 GB
        _MEMORY_FLAGGED.append(case)
        outcome.problem = outcome.problem or f"peak memory {rss / 2**30:.1f} GiB"
    return outcome


_MEMORY_FLAGGED: list = []


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def run_subprocess(case: Case, workdir: Path) -> Outcome:
    """Run the real ``ppverify`` in a child with 2 GB of address space and a 10 s timeout."""
    _write_files(case, workdir)
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "ppverify", *case.argv]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    # a session of its own: whatever the child starts (workers, a fork server) can be found after it
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_limits,
        env=env,
        start_new_session=True,
    )
    try:
        _, stderr = proc.communicate(timeout=HANG_SECONDS + 5)
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid)
        proc.communicate()
        return Outcome(case, None, "", time.perf_counter() - t0, "hang (subprocess timeout)")
    finally:
        for name in case.files:
            with contextlib.suppress(OSError):
                (workdir / name).unlink()
        node_problem = nodes_problem(case, workdir)
        remove_nodes(case, workdir)
    left = session_processes(proc.pid)
    _kill_session(proc.pid)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    outcome = Outcome(case, proc.returncode, stderr.decode("utf-8", "replace"), cpu)
    if proc.returncode < 0:
        outcome.problem = f"killed by signal {-proc.returncode}"
    elif left:
        outcome.problem = f"{len(left)} process(es) left running after the command ended"
    elif node_problem:
        outcome.problem = node_problem
    # a child pays interpreter start-up and imports (about a CPU second); allow for them
    outcome.seconds = max(0.0, cpu - 1.5)
    return outcome


def session_processes(sid: int) -> list[int]:
    """Processes (other than zombies) still in session ``sid`` (Linux ``/proc``; none elsewhere)."""
    out = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":  # fields: state, ppid, pgrp, session
                out.append(int(entry.name))
    return out


def _kill_session(sid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(sid, signal.SIGKILL)


def run_cases(cases: list[Case], workdir: Path, subprocess_every: int = 0, verbose: bool = False) -> list[Outcome]:
    """Run every case (each ``subprocess_every``-th in a subprocess; ``measure`` and ``calibrate``
    only when their input must be refused, since valid input would really start workers)."""
    out = []
    current: list[Case] = []
    stop = _watch_memory(current)
    for k, case in enumerate(cases):
        current[:] = [case]
        if verbose:
            print(k, case.kind, case.argv, file=sys.__stderr__, flush=True)
        sub = subprocess_every and k % subprocess_every == 0
        sub = sub and (case.refuse or case.kind not in ("measure", "calibrate"))
        sub = sub and not any("\x00" in a for a in case.argv)  # exec takes no NUL byte: run it in process
        out.append(run_subprocess(case, workdir) if sub else run_in_process(case, workdir))
    stop.set()  # this run's watcher ends with it (a later run starts its own)
    return out


def _rss_bytes() -> int:
    # resident set of this process now (Linux /proc; 0 elsewhere)
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _watch_memory(current: list[Case]) -> threading.Event:
    """A case run in this process that grows it past twice the 2 GB rule is a failure the
    operating system would otherwise report by killing the whole run: name the case and stop."""
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.2):
            if _rss_bytes() > 2 * MEMORY_BYTES and current:
                case = current[0]
                print(
                    f"FAIL memory past {2 * MEMORY_BYTES / 2**30:.0f} GiB | ppverify {' '.join(map(repr, case.argv))}",
                    file=sys.__stderr__,
                    flush=True,
                )
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    return stop


def describe(o: Outcome) -> str:
    files = "; ".join(f"{n}: {d[:80]!r}" for n, d in o.case.files.items())
    return (
        f"{check(o)} | ppverify {' '.join(map(repr, o.case.argv))}"[:400]
        + f" | {files}"[:300]
        + f" | stderr: {o.err.strip()[-300:]!r}"
    )


# ----------------------------------------------------------------------------- time limits and signals (issue 22)

#: runs whose verify takes from a fraction of a second to a few seconds: a ``--time-limit`` drawn
#: near a run's length falls at every point of it (loading, a Z3 parse, a search, a core)
ALARM_RUNS = [("1f1b", 8, 64), ("1f1b", 16, 128), ("interleaved-1f1b", 4, 32), ("zb-h1", 8, 32), ("gpipe", 16, 64)]


def alarm_case(rng: random.Random) -> Case:
    """``verify`` with a ``--time-limit`` near the run's length: the answer is the verdict (exit 0
    or 1) or the time-out's one line (exit 2), never a traceback, an ``ArgumentError`` from ctypes,
    a ``KeyError`` or "Exception ignored in Solver.__del__"."""
    family, p, m = rng.choice(ALARM_RUNS)
    limit = round(rng.uniform(0.02, 3.0), 3)
    argv = ["verify", family, "-p", str(p), "-m", str(m), "--time-limit", f"{limit:g}"]
    if rng.random() < 0.5:
        argv += ["--makespan-le", str(rng.randint(1, 100_000))]
    if rng.random() < 0.3:
        argv += ["--memory-cap", str(rng.randint(1, 8))]
    return Case(argv, {}, "alarm")


def make_alarm_cases(n: int, seed: int) -> list[Case]:
    """``n`` time-limit cases from ``seed``."""
    rng = random.Random(seed * 7919 + 22)
    return [alarm_case(rng) for _ in range(n)]


#: (signal, sent to the main process or its whole group, the exit code it must give)
SIGNALS_TO_MEASURE = (
    ("SIGINT", "group", 130),
    ("SIGTERM", "main", 143),
    ("SIGTERM", "group", 143),
    ("SIGKILL", "main", -9),
)
#: a schedule whose ranks wait for each other: measure's workers stay up until --timeout
DEADLOCK_CSV = b"0F0,0RECV_B0,0B0,0SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0\n"


def signal_case(rng: random.Random) -> Case:
    """``measure`` sent a signal after a random delay (at start-up, while the fork server imports
    torch, while the workers run). The kind carries the signal, its target and the delay."""
    name, target, _ = rng.choice(SIGNALS_TO_MEASURE)
    delay = round(rng.uniform(0.0, 6.0), 2)
    argv = rng.choice(
        [
            ["measure", "dead.csv", "--timeout", "600", "--costs", "F=0.002,B=0.004"],
            ["measure", "1f1b", "-p", "2", "-m", "4", "--steps", "50", "--costs", "F=0.002,B=0.004"],
        ]
    )
    return Case(argv, {"dead.csv": DEADLOCK_CSV}, f"signal {name} {target} {delay}")


def make_signal_cases(n: int, seed: int) -> list[Case]:
    """``n`` signal cases from ``seed`` (each starts torch workers: seconds apiece)."""
    rng = random.Random(seed * 104729 + 9)
    return [signal_case(rng) for _ in range(n)]


def _wait_until_started(pid: int, limit: float = 30.0) -> None:
    """Wait until process ``pid`` has ppverify's start-up handlers in place (``_quiet_start_up`` in
    :mod:`ppverify.cli`, the first thing its command line runs), so that a case's delay counts from
    then. It is the first handler for SIGTERM the process installs (``SigCgt`` in ``/proc``;
    Python itself catches only SIGINT). Before it, a signal meets Python's own start-up, which no
    program controls: the default action (exit -2, no output), "Fatal Python error:
    init_import_site", or a KeyboardInterrupt traceback from ``runpy`` (each seen here within the
    first 20 ms, and on a loaded machine that window can last half a second)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:  # ended already, or no /proc: send at once
            return
        caught = re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M)
        if caught is None or int(caught.group(1), 16) >> (signal.SIGTERM - 1) & 1:
            return
        time.sleep(0.005)


def run_signal_case(case: Case, workdir: Path) -> Outcome:
    """Run ``measure`` in a session of its own, send the case's signal (its delay counted from when
    ppverify's start-up handlers are in place), and check: SIGINT exit 130
    and SIGTERM exit 143 with one line and no traceback (a run that ended first: exit 0); after any
    signal, no process of the session survives (SIGKILL of the main process included)."""
    _, name, target, delay = case.kind.split()
    expected = {n: c for n, _, c in SIGNALS_TO_MEASURE if n == name}[name]
    _write_files(case, workdir)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    cmd = [sys.executable, "-m", "ppverify", *case.argv]
    proc = subprocess.Popen(
        cmd, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    sig = getattr(signal, name)
    _wait_until_started(proc.pid)
    time.sleep(float(delay))
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, sig) if target == "group" else proc.send_signal(sig)
    problem = ""
    try:
        _, raw = proc.communicate(timeout=HANG_SECONDS + 90)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, raw = proc.communicate()
        problem = "stderr held open: a process of the run outlived it"
    err = raw.decode("utf-8", "replace")
    end = time.monotonic() + 30  # workers notice a dead parent within a second; a loaded machine
    while session_processes(proc.pid) and time.monotonic() < end:
        time.sleep(0.2)
    left = session_processes(proc.pid)
    _kill_session(proc.pid)
    code = proc.returncode
    if left:
        problem = problem or f"{len(left)} process(es) survived {name} to the {target}"
    elif "Traceback" in err:
        problem = "traceback"
    elif code not in (expected, 0) or (code == 0 and name == "SIGKILL" and target == "main" and float(delay) > 30):
        problem = f"exit code {code} after {name} (expected {expected})"
    elif code in (130, 143) and len(err.strip().splitlines()) != 1:
        problem = f"{len(err.strip().splitlines())} stderr lines after {name}"
    return Outcome(case, 0 if not problem else code, err, 0.0, problem)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--subprocess-every", type=int, default=200, help="every N-th case in a subprocess (0: none)")
    ap.add_argument("--verbose", action="store_true", help="print each case before running it")
    ap.add_argument(
        "--measured-cases",
        type=int,
        default=2000,
        help="cases for measure, report and calibrate on top (process starts stubbed out in process)",
    )
    ap.add_argument(
        "--hostfile-cases",
        type=int,
        default=2000,
        help="cases on top: inputs and outputs that are FIFOs, devices, sockets or links; preset and "
        "schedule files edited between a sweep and its resume; empty option values",
    )
    ap.add_argument("--alarm-cases", type=int, default=100, help="verify runs with a --time-limit near their length")
    ap.add_argument("--signal-cases", type=int, default=0, help="measure runs sent SIGINT, SIGTERM or SIGKILL (torch)")
    args = ap.parse_args(argv)
    import tempfile

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        cases = make_cases(args.cases, args.seed) + make_measured_cases(args.measured_cases, args.seed)
        cases += make_hostfile_cases(args.hostfile_cases, args.seed)
        outcomes = run_cases(cases, Path(d), args.subprocess_every, args.verbose)
        outcomes += run_cases(make_alarm_cases(args.alarm_cases, args.seed), Path(d), 10, args.verbose)
        outcomes += [run_signal_case(c, Path(d)) for c in make_signal_cases(args.signal_cases, args.seed)]
    bad = [o for o in outcomes if check(o)]
    codes: dict[object, int] = {}
    for o in outcomes:
        codes[o.code] = codes.get(o.code, 0) + 1
    slow = sorted(outcomes, key=lambda o: -o.seconds)[:3]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"{len(outcomes)} cases in {time.perf_counter() - t0:.0f} s; exit codes {dict(sorted(codes.items(), key=str))}; "
        f"{len(bad)} failed; slowest {', '.join(f'{o.seconds:.2f} s' for o in slow)}; peak RSS {rss:.2f} GiB"
    )
    for o in bad[:50]:
        print("FAIL", describe(o))
    for o in slow:
        print(f"slow {o.seconds:.2f} s: ppverify {' '.join(o.case.argv)[:200]}")
    return 1 if bad else 0


# ----------------------------------------------------------------------------- paths, resumes, empty values
# (issue 22, items 3, 4 and 8) inputs and outputs that are FIFOs, device nodes, sockets or links; preset
# and schedule files edited between a sweep and its resume; empty option values. Device nodes are
# scratch copies made in the case's folder (as root; a FIFO otherwise), never the system's.

#: what ppverify says of a path that is not a regular file, an empty value, a list naming nothing
NOT_REGULAR = ("not a regular file", "is a directory", "Too many levels of symbolic links", "names a folder")
EMPTY = ("an empty value", "names nothing", "invalid")  # invalid: argparse's own refusal of a typed option


def make_node(path: Path, kind: str) -> None:
    """Create a special file: ``fifo``, ``full``/``null`` (character devices with the numbers of
    /dev/full and /dev/null; a FIFO without root), ``socket``, ``dir``, ``link:TARGET`` (a symbolic
    link), ``file:MODE`` (a regular file with that octal mode, holding ``old``)."""
    import socket
    import stat

    if kind == "fifo":
        os.mkfifo(path)
    elif kind in ("full", "null"):
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7 if kind == "full" else 3))
        except PermissionError:
            os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
    elif kind == "dir":
        path.mkdir()
    elif kind.startswith("link:"):
        os.symlink(kind[5:], path)
    elif kind.startswith("file:"):
        path.write_text("old\n")
        os.chmod(path, int(kind[5:], 8))


def node_kind(path: Path) -> str:
    """``fifo``, ``chr``, ``socket``, ``dir``, ``link``, ``file:MODE`` or ``missing`` (not followed)."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return "missing"
    for test, name in ((stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "chr"), (stat.S_ISSOCK, "socket")):
        if test(st.st_mode):
            return name
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISLNK(st.st_mode):
        return "link"
    return f"file:{stat.S_IMODE(st.st_mode):o}"


def _node_after(kind: str) -> str:
    """What a special file must still be after any command: the same thing."""
    if kind in ("full", "null"):
        return "chr" if os.geteuid() == 0 else "fifo"
    if kind.startswith("link:"):
        return "link"
    return kind


def nodes_problem(case: Case, workdir: Path) -> str:
    """A special file a command replaced or removed (every one must be left as it was), or a link's
    target that a successful write did not leave a regular file with the old file's permissions."""
    for name, kind in case.nodes.items():
        now = node_kind(workdir / name)
        if now != _node_after(kind):
            return f"{name}: {kind} became {now}"
    return ""


def remove_nodes(case: Case, workdir: Path) -> None:
    import shutil

    for name in list(case.nodes) + ["real.json", "real.csv", "o.csv", "o.json", "o.html", "o.yaml", "st.jsonl"]:
        path = workdir / name
        with contextlib.suppress(OSError):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def check_expectations(outcome: Outcome) -> str:
    """What a case with expectations (exit code, stderr, stdout) got wrong ('' when nothing)."""
    case = outcome.case
    if case.expect_code is not None and outcome.code != case.expect_code:
        return f"exit {outcome.code}, expected {case.expect_code}"
    if case.expect_err and not any(e in outcome.err for e in case.expect_err):
        return f"stderr without any of {case.expect_err}"
    if case.expect_out and outcome.out is not None and case.expect_out not in outcome.out:
        return f"stdout without {case.expect_out!r}"
    return ""


#: commands reading a file, with the extension it gets ({f} is the file)
INPUT_ARGV = [
    (["verify", "{f}", "--time-limit", "3"], ".json"),
    (["show", "{f}", "-p", "2"], ".csv"),
    (["simulate", "{f}", "--no-table"], ".txt"),
    (["import", "{f}"], ".csv"),
    (["export", "{f}", "-o", "o.json"], ".json"),
    (["simulate", "1f1b", "-p", "2", "--system", "{f}", "--model", "gpt3-1.3b", "--no-table"], ".yaml"),
    (["simulate", "1f1b", "-p", "2", "--system", "dgx-h100", "--model", "{f}", "--no-table"], ".yaml"),
    (["sweep", "{f}", "--dry-run", "--store", "st.jsonl"], ".yaml"),
    (["sweep", "cfg.yaml", "--dry-run", "--store", "{f}"], ".jsonl"),
    (["report", "--from", "{f}", "-o", "out.html"], ".csv"),
    (["report", "--from", "results.csv", "--findings-json", "{f}", "-o", "out.html"], ".json"),
    (["report", "--from", "results.csv", "--findings-map", "{f}", "-o", "out.html"], ".png"),
]
#: commands writing a file ({f}), with the extension it gets; calibrate only with targets it must refuse
OUTPUT_ARGV = [
    (["export", "gpipe", "-p", "2", "-m", "2", "-o", "{f}"], ".csv"),
    (["show", "1f1b", "-p", "2", "-m", "2", "--save", "{f}", "--no-table"], ".json"),
    (["simulate", "gpipe", "-p", "2", "-m", "2", "--trace", "{f}", "--no-table"], ".json"),
    (
        ["compare", "--schedules", "gpipe", "-p", "2", "-m", "2", "--costs", "F=1", "--levels", "slot"]
        + ["--no-verify", "--no-progress", "--out", "{f}"],
        ".csv",
    ),
    (["sweep", "cfg.yaml", "--store", "st.jsonl", "--out", "{f}", "--no-progress", "--workers", "1"], ".csv"),
    (["report", "--from", "results.csv", "-o", "{f}"], ".html"),
    (["calibrate", "--quick", "--out", "{f}"], ".yaml"),
]
#: (command line before the option, option, whether ',' names nothing there)
EMPTY_ARGV = [
    (["compare"], "--schedules", True),
    (["compare"], "--systems", True),
    (["compare"], "--models", True),
    (["compare"], "--levels", True),
    (["compare"], "--semantics", True),
    (["compare", "--costs", "F=1"], "--comm-delay", True),
    (["compare"], "--costs", True),
    (["report"], "--from", False),
    (["report", "--from", "results.csv"], "--findings-json", False),
    (["report", "--from", "results.csv"], "--findings-map", False),
    (["report", "--from", "results.csv"], "--title", False),
    (["sweep", "cfg.yaml"], "--store", False),
    (["sweep", "cfg.yaml"], "--out", False),
    (["show", "1f1b"], "--costs", False),
    (["show", "1f1b"], "--save", False),
    (["simulate", "1f1b"], "--costs", False),
    (["simulate", "1f1b"], "--system", False),
    (["simulate", "1f1b", "--system", "dgx-h100"], "--model", False),
    (["export", "gpipe", "-p", "2"], "-o", False),
    (["verify", "1f1b"], "--makespan-le", False),
    (["plot", "--crossover", "latency", "-o", "o.png"], "--schedules", True),
    (["calibrate"], "--out", False),
    (["measure", "1f1b", "-p", "2"], "--costs", False),
]


def _input_case(rng: random.Random, extra: dict[str, bytes]) -> Case:
    argv, ext = rng.choice(INPUT_ARGV)
    kind = rng.choice(["fifo", "fifo", "full", "null", "socket", "dir", "link-fifo", "link-null", "loop"])
    f = "in" + ext
    nodes = {"fifo": {f: "fifo"}, "full": {f: "full"}, "null": {f: "null"}, "socket": {f: "socket"}}.get(kind, {})
    if kind == "dir":
        nodes = {f: "dir"}
    elif kind in ("link-fifo", "link-null"):
        nodes = {"target": "fifo" if kind == "link-fifo" else "null", f: "link:target"}
    elif kind == "loop":
        nodes = {f: "link:loop2", "loop2": f"link:{f}"}
    files = {k: v for k, v in extra.items() if k in ("cfg.yaml", "results.csv")}
    argv = [a.replace("{f}", f) for a in argv]
    found = NOT_REGULAR + ("file not found", "no .png image")  # a loop reads as missing to some checks
    cmd = argv[0]
    return Case(argv, files, cmd if cmd in ("measure", "calibrate") else "path-input", True, nodes, 2, found)


def _output_case(rng: random.Random, extra: dict[str, bytes]) -> Case:
    argv, ext = rng.choice(OUTPUT_ARGV)
    refused = ["fifo", "full", "socket", "dir", "link-fifo", "link-full", "slash", "loop"]
    kind = rng.choice(refused + ([] if argv[0] == "calibrate" else ["plain", "link", "dangling", "mode"] * 2))
    f = "o" + ext
    real = "real" + (ext if ext in (".json", ".csv") else ".json")
    nodes = {
        "fifo": {f: "fifo"},
        "full": {f: "full"},
        "socket": {f: "socket"},
        "dir": {f: "dir"},
        "link-fifo": {"target": "fifo", f: "link:target"},
        "link-full": {"target": "full", f: "link:target"},
        "loop": {f: "link:loop2", "loop2": f"link:{f}"},
        "link": {real: "file:640", f: f"link:{real}"},
        "dangling": {f: f"link:{real}"},
        "mode": {f: f"file:{rng.choice(['604', '640', '600', '444', '755'])}"},
    }.get(kind, {})
    name = f + "/" if kind == "slash" else f
    files = {k: v for k, v in extra.items() if k in ("cfg.yaml", "results.csv")}
    argv = [a.replace("{f}", name) for a in argv]
    ok = kind in ("plain", "link", "dangling", "mode")
    if kind == "dangling":
        nodes = {f: f"link:{real}"}  # the link stays; its target is created (and removed after)
    cmd = argv[0]
    return Case(
        argv,
        files,
        "calibrate" if cmd == "calibrate" else "path-output",
        not ok,
        nodes,
        0 if ok else 2,
        () if ok else NOT_REGULAR,
    )


@functools.lru_cache(maxsize=1)
def resume_base() -> dict[str, bytes]:
    """A finished sweep's files (config, presets, schedule file, store): two schedules (a family
    and a schedule file) x two systems x two models (a preset file and a shipped preset each) x
    two levels, 16 rows, run once in a temporary folder (names relative to it)."""
    import tempfile

    from ppverify.cli import main as ppverify_main
    from ppverify.io.json_format import dumps
    from ppverify.schedules import build
    from ppverify.systems.presets import shipped_presets

    models = shipped_presets()
    out = {
        "sys.yaml": models.joinpath("systems", "dgx-h100.yaml").read_bytes(),
        "llm.yaml": models.joinpath("llms", "gpt3-1.3b.yaml").read_bytes(),
        "s.json": dumps(build("1f1b", p=2, m=2)).encode(),
        "grid.yaml": b"schedules: [gpipe, {file: s.json, label: mine}]\np: 2\nm: 2\n"
        b"systems: [sys.yaml, dgx-h100]\nmodels: [llm.yaml, gpt3-1.3b]\nlevels: [formula, slot]\n",
    }
    old = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        try:
            os.chdir(d)
            for name, data in out.items():
                Path(name).write_bytes(data)
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = ppverify_main(["sweep", "grid.yaml", "--store", "grid.jsonl", "--no-progress", "--workers", "1"])
            assert code == 0, f"the resume cases' base sweep failed: {err.getvalue().strip()}"
            out["grid.jsonl"] = Path("grid.jsonl").read_bytes()
        finally:
            os.chdir(old)
    return out


def _resume_case(rng: random.Random, seeds: dict[str, bytes]) -> Case:
    """The base sweep's files with some edited, then ``sweep --dry-run --json``: exactly the rows that
    read a file whose bytes changed are to run; a FIFO, or a schedule or preset file gone, is refused
    (a preset's name is a path relative to the config: a typo would make every row not applicable)."""
    base = resume_base()
    files = dict(base)
    nodes: dict[str, str] = {}
    changed, refused = set(), False
    for name in ("sys.yaml", "llm.yaml", "s.json"):
        edit = rng.choice(["none", "none", "same", "comment", "mutate", "layers", "gone", "fifo"])
        if edit == "comment":
            files[name] = base[name] + (b"\n" if name == "s.json" else b"# edited\n")
        elif edit == "mutate":
            files[name] = mutate(base[name], rng)
        elif edit == "layers" and name == "llm.yaml":
            files[name] = base[name].replace(b"layers: 24", b"layers: 96")
        elif edit in ("gone", "fifo"):
            del files[name]
            if edit == "fifo":
                nodes[name] = "fifo"
            refused = True  # a FIFO, or a schedule or preset file gone, is refused naming it
        if files.get(name) != base[name]:
            changed.add(name)
    readers = {"sys.yaml": "sys.yaml", "llm.yaml": "llm.yaml", "s.json": "mine"}
    reading = {readers[n] for n in changed}
    to_run = sum(
        2
        for e in ("gpipe", "mine")
        for s in ("sys.yaml", "dgx-h100")
        for m in ("llm.yaml", "gpt3-1.3b")
        if reading & {e, s, m}
    )
    argv = ["sweep", "grid.yaml", "--store", "grid.jsonl", "--dry-run", "--json"]
    if refused:
        return Case(argv, files, "resume", True, nodes, 2, NOT_REGULAR + ("file not found",))
    return Case(argv, files, "resume", False, nodes, 0, (), f'"to_run": {to_run},')


def _empty_case(rng: random.Random, extra: dict[str, bytes]) -> Case:
    before, option, lists = rng.choice(EMPTY_ARGV)
    value = rng.choice(["", " ", "\t", "  "] + ([",", " , ", ",,", ", \t,"] if lists else []))
    argv = before + ([f"{option}={value}"] if rng.random() < 0.3 else [option, value])
    files = {k: v for k, v in extra.items() if k in ("cfg.yaml", "results.csv")}
    kind = before[0] if before[0] in ("measure", "calibrate") else "empty"
    return Case(argv, files, kind, True, {}, 2, EMPTY)


def make_hostfile_cases(n: int, seed: int) -> list[Case]:
    """``n`` cases from ``seed``: a third special inputs, a third special outputs, a sixth resumed
    sweeps with edited files, a sixth empty option values."""
    rng = random.Random(seed)
    extra = {"cfg.yaml": seed_files()["sweep.yaml"], "results.csv": measured_seed_files()["results.csv"]}
    out = []
    for _ in range(n):
        r = rng.random()
        gen = _input_case if r < 0.33 else _output_case if r < 0.67 else _resume_case if r < 0.83 else _empty_case
        out.append(gen(rng, extra))
    return out


if __name__ == "__main__":
    sys.exit(main())
