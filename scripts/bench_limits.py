"""How fast hostile input is refused, and how parsing and lowering scale with the file size.

Prints, for each refusal of the hostile-input report, the median time ``ppverify.cli.main`` takes
to answer (exit 2), and for parsing a CSV, checking a JSON text and adding SEND/RECV, the median
time at 10x and 100x the size with the ratio to the smallest size (about 10 and 100 when linear)::

    python scripts/bench_limits.py
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def median_seconds(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def quiet_main(argv: list[str]) -> int:
    from ppverify.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def refusals(d: Path) -> None:
    files = {
        "big.csv": "999999999F0\n",
        "sparse.csv": "0F0,0F1000000\n",
        "deep.json": "[" * 100_000,
        "digits.json": '{"p": ' + "9" * 5000 + "}",
        "idle.csv": "0F0," + "," * 100_000 + "0B0\n1F0,1B0\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    cases = [
        ["show", "gpipe", "-p", "100000", "-m", "100000"],
        ["verify", "gpipe", "-p", "2147483648"],
        ["verify", str(d / "big.csv")],
        ["verify", str(d / "sparse.csv")],
        ["verify", str(d / "deep.json")],
        ["verify", str(d / "digits.json")],
        ["export", str(d / "idle.csv"), "--format", "torch-csv-comms"],
    ]
    quiet_main(["list"])  # imports paid once
    print("refusal / answer                                             code  median s")
    for argv in cases:
        code = quiet_main(argv)
        shown = " ".join(a.replace(str(d) + "/", "") for a in argv)
        print(f"{shown[:60]:60s} {code:4d}  {median_seconds(lambda: quiet_main(argv)):.3f}")


def scaling() -> None:
    from ppverify.core.limits import check_json_text
    from ppverify.core.text_formats import csv_rows
    from ppverify.engines.torch_steps import add_send_recv
    from ppverify.io.torch_csv import parse_rows

    def csv_text(n: int) -> str:
        return "0F0," + "," * n + "0B0\n1F0,1B0\n"

    def lower(n: int) -> None:
        add_send_recv(parse_rows(csv_rows(csv_text(n), "x.csv"), "x.csv"))

    def json_check(n: int) -> None:
        check_json_text(json.dumps({"programs": [["0F0"] * n for _ in range(4)]}), "x.json")

    print("\nscaling                     n=10^4 s   x10 ratio  x100 ratio")
    for name, fn in (("CSV parse + SEND/RECV", lower), ("JSON nesting/digit scan", json_check)):
        base = median_seconds(lambda: fn(10_000))
        r1 = median_seconds(lambda: fn(100_000)) / base
        r2 = median_seconds(lambda: fn(1_000_000), 1) / base
        print(f"{name:27s} {base:9.4f} {r1:10.1f} {r2:11.1f}")


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        refusals(Path(d))
    scaling()
    return 0


if __name__ == "__main__":
    sys.exit(main())
