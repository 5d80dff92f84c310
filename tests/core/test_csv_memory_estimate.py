"""``--max-memory-gib`` covers reading a CSV schedule: 192 MiB + 3 KB per op (docs/limits.md),
counted from the file's non-empty cells before any is parsed."""

from __future__ import annotations

from ppverify.cli import main
from ppverify.core.limits import CSV_BYTES_PER_OP, ops_memory


def test_the_csv_estimate_per_op():
    # docs/limits.md: 192 MiB + 3 KB per op; 500,000 ops: 192 x 2^20 + 500,000 x 3,072 bytes
    assert CSV_BYTES_PER_OP == 3072
    assert ops_memory(500_000, CSV_BYTES_PER_OP) == 192 * 2**20 + 1_536_000_000
    # above the 1,350 MiB measured for verify of a PyTorch CSV of 500,000 ops (docs/limits.md)
    assert ops_memory(500_000, CSV_BYTES_PER_OP) > 1350 * 2**20


def test_a_csv_over_the_budget_is_refused_where_its_json_is_not(tmp_path, capsys):
    # 1F1B p = 4, m = 2,500: 2 ops per stage and microbatch, 20,000 ops in 20,000 cells.
    # As a build: 192 MiB + 20,000 x 640 B = 204.2 MiB; read from a CSV: 192 MiB + 20,000 x
    # 3,072 B = 250.6 MiB = 0.2447 GiB. A limit of 0.22 GiB (225.3 MiB) lies between the two.
    assert ops_memory(20_000) < 0.22 * 2**30 < ops_memory(20_000, CSV_BYTES_PER_OP)
    csv, js = tmp_path / "s.csv", tmp_path / "s.json"
    assert main(["export", "1f1b", "-p", "4", "-m", "2500", "-o", str(csv)]) == 0
    assert main(["export", "1f1b", "-p", "4", "-m", "2500", "-o", str(js)]) == 0
    capsys.readouterr()
    assert main(["--max-memory-gib", "0.22", "verify", str(js)]) == 0
    assert main(["--max-memory-gib", "0.22", "verify", str(csv)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"ppverify verify: error: {csv}: needs about 0.2447 GiB of memory (20000 ops of a CSV file: "
        "192 MiB + 3072 B per op), over the limit of 0.22 GiB (raise it with ppverify --max-memory-gib X)"
    ]
