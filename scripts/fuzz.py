"""Fuzz ppverify with hostile input: mutated files of every format and random command lines.

Every case must end with exit code 0, 1 or 2, exactly one line on stderr when the code is 2, no
traceback, within 5 CPU seconds (and, in subprocess cases, within 2 GB of address space). Cases run in
process (``ppverify.cli.main``, fast) and a share of them in subprocesses (real exit codes,
stderr and resource limits). ``tests/test_fuzz.py`` runs a few thousand; this script more::

    python scripts/fuzz.py --cases 20000 --seed 1 --subprocess-every 200

It prints the outcome counts and every failing case (command line and file head), and exits 1
when any case failed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import resources
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


@dataclass
class Outcome:
    case: Case
    code: int | None
    err: str
    seconds: float
    problem: str = ""


# ----------------------------------------------------------------------------- seeds


def seed_files() -> dict[str, bytes]:
    """Valid files of every format ppverify reads, by name (the extension says the format)."""
    from ppverify.io.json_format import dumps
    from ppverify.io.table_text import format_schedule_table
    from ppverify.io.torch_csv import csv_text
    from ppverify.schedules import build

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
    models = resources.files("ppverify.models")
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
    """``n`` cases from ``seed``: two thirds mutated files, one third random command lines."""
    rng = random.Random(seed)
    seeds = seed_files()
    return [file_case(seeds, rng) if rng.random() < 0.67 else cli_case(rng) for _ in range(n)]


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
    if outcome.code == 2 and len(outcome.err.strip("\n").split("\n")) != 1:
        return f"{len(outcome.err.splitlines())} stderr lines on exit 2"
    if outcome.seconds > CASE_SECONDS:
        return f"took {outcome.seconds:.1f} s"
    return ""


def _write_files(case: Case, workdir: Path) -> None:
    for name, data in case.files.items():
        (workdir / name).write_bytes(data)


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
    try:
        os.chdir(workdir)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(case.argv)
    except CaseTimeout:
        problem = f"hang (no answer in {HANG_SECONDS:g} s)"
    except BaseException as exc:
        problem = f"escaped main: {type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, prev)
        os.chdir(old)
        for name in list(case.files) + [
            "out.json",
            "out.csv",
            "out.png",
            "st.jsonl",
            "o.json",
            "o.csv",
            "o.png",
            "o.txt",
        ]:
            with contextlib.suppress(OSError):
                (workdir / name).unlink()
    outcome = Outcome(case, code, err.getvalue(), time.process_time() - t0, problem)
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
    try:
        proc = subprocess.run(
            cmd, cwd=workdir, capture_output=True, timeout=HANG_SECONDS + 5, preexec_fn=_limits, env=env
        )
    except subprocess.TimeoutExpired:
        return Outcome(case, None, "", time.perf_counter() - t0, "hang (subprocess timeout)")
    finally:
        for name in case.files:
            with contextlib.suppress(OSError):
                (workdir / name).unlink()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    outcome = Outcome(case, proc.returncode, proc.stderr.decode("utf-8", "replace"), cpu)
    if proc.returncode < 0:
        outcome.problem = f"killed by signal {-proc.returncode}"
    # a child pays interpreter start-up and imports (about a CPU second); allow for them
    outcome.seconds = max(0.0, cpu - 1.5)
    return outcome


def run_cases(cases: list[Case], workdir: Path, subprocess_every: int = 0, verbose: bool = False) -> list[Outcome]:
    """Run every case (each ``subprocess_every``-th in a subprocess)."""
    out = []
    for k, case in enumerate(cases):
        if verbose:
            print(k, case.kind, case.argv, file=sys.__stderr__, flush=True)
        sub = subprocess_every and k % subprocess_every == 0
        out.append(run_subprocess(case, workdir) if sub else run_in_process(case, workdir))
    return out


def describe(o: Outcome) -> str:
    files = "; ".join(f"{n}: {d[:80]!r}" for n, d in o.case.files.items())
    return (
        f"{check(o)} | ppverify {' '.join(map(repr, o.case.argv))}"[:400]
        + f" | {files}"[:300]
        + f" | stderr: {o.err.strip()[-300:]!r}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--subprocess-every", type=int, default=200, help="every N-th case in a subprocess (0: none)")
    ap.add_argument("--verbose", action="store_true", help="print each case before running it")
    args = ap.parse_args(argv)
    import tempfile

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        outcomes = run_cases(make_cases(args.cases, args.seed), Path(d), args.subprocess_every, args.verbose)
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


if __name__ == "__main__":
    sys.exit(main())
