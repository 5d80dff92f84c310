"""Options of `compare --findings --map` that would be ignored or leave files behind are refused
before anything is written."""

from __future__ import annotations

import pytest

from ppverify.cli import main


def test_workers_beside_ray_is_refused_as_sweep_refuses_it(tmp_path, capsys, monkeypatch):
    # Ray places the batches on its own cluster: a --workers count would be dropped unread
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "--findings", "--map", "--quick", "--no-progress", "--executor", "ray", "--workers", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "parameter --workers=2: sizes the local pool; Ray places batches on its cluster: leave it out" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("store", ["d/", "d"])
def test_a_store_naming_a_folder_is_refused_before_plots_or_presets(tmp_path, capsys, monkeypatch, store):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    argv = ["compare", "--findings", "--map", "--quick", "--no-progress", "--store", store, "--plots", "maps"]
    assert main(argv) == 2
    assert f"parameter --store={store}:" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no maps/, no d.systems/


def test_markdown_links_plots_outside_its_folder_with_a_working_path(tmp_path, capsys, monkeypatch):
    # docs/map.md and plots/ side by side: the image is one folder up from the Markdown, so the link
    # must read ../plots/..., not plots/... (which would resolve to docs/plots/, a missing file)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    argv = ["compare", "--findings", "--map", "--quick", "--no-progress", "--store", "s.jsonl"]
    assert main([*argv, "--plots", "plots", "--markdown", "docs/map.md"]) == 0
    text = (tmp_path / "docs" / "map.md").read_text()
    assert "](../plots/findings-map-chimera.png)" in text
    assert (tmp_path / "docs" / "../plots/findings-map-chimera.png").resolve().is_file()
