"""`compare --findings --map` sweeps its own grid (docs/findings-map.md): every compare option that
shapes the systems, models or levels it would not read is refused with exit 2, nothing written."""

from __future__ import annotations

import pytest

from ppverify.cli import main

MAP = ["compare", "--findings", "--map", "--quick", "--no-progress", "--store", "fm.jsonl"]


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        (["--mfu", "0.9"], "--mfu=0.9"),
        (["--mfu", "7"], "--mfu=7.0"),  # out of (0, 1] too: refused for being ignored, before any check
        (["--mfu", "0"], "--mfu=0.0"),  # 0 is falsy, but given
        (["--microbatch-size", "2"], "--microbatch-size=2"),
        (["--seq-len", "512"], "--seq-len=512"),
        (["--tp", "2"], "--tp=2"),
        (["--ranks-per-node", "1"], "--ranks-per-node=1"),
        (["--measured"], "--measured=True"),
        (["--measured-trace", "tr"], "--measured-trace=tr"),
    ],
)
def test_options_the_map_ignores_are_refused(tmp_path, capsys, monkeypatch, extra, shown):
    monkeypatch.chdir(tmp_path)
    assert main([*MAP, *extra]) == 2
    err = capsys.readouterr().err
    assert f"parameter {shown}: the findings map sweeps its own grid" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # refused before the store is started
