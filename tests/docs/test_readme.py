"""The README's counts come from the code, and its pictures (also on the manual's index) are what
``scripts/readme_pictures.py`` makes today."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from ppverify.compare.config import DEFAULT_M, DEFAULT_MODELS, DEFAULT_SCHEDULES, DEFAULT_SYSTEMS, LEVELS

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = {
    w: n
    for n, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
    )
}


def _script():
    spec = importlib.util.spec_from_file_location("readme_pictures", ROOT / "scripts" / "readme_pictures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["readme_pictures"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_make_run_counts_in_the_readme_are_the_default_comparison():
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    m = re.search(
        r"`make run` evaluates (\w+) schedules on (\d+) configurations \((\w+) systems, (\w+) GPT-3 models, "
        r"m = ([\d, ]+)\) at all (\w+) levels",
        text,
    )
    assert m, "the README's `make run` sentence changed: keep its counts checked here"
    schedules, configs, systems, models, ms, levels = m.groups()
    assert NUMBERS[schedules] == len(DEFAULT_SCHEDULES)
    assert NUMBERS[systems] == len(DEFAULT_SYSTEMS) and NUMBERS[models] == len(DEFAULT_MODELS)
    assert tuple(int(x) for x in ms.split(",")) == tuple(DEFAULT_M)
    assert int(configs) == len(DEFAULT_SYSTEMS) * len(DEFAULT_MODELS) * len(DEFAULT_M)
    assert NUMBERS[levels] == len(LEVELS)


def test_the_pictures_are_shown_and_made_by_the_script_as_it_is_today():
    pictures = _script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for picture in (pictures.GANTT, pictures.REPORT):
        assert f"]({picture})" in readme and f"]({picture.removeprefix('docs/')})" in index
        # the command stored in the PNG is the script's: a changed command means a stale picture
        assert pictures.description(ROOT / picture) == pictures.command_text(picture), (
            f"{picture} is stale: run python scripts/readme_pictures.py"
        )


def test_the_gantt_picture_is_remade_the_same_size(tmp_path):
    from PIL import Image

    pictures = _script()
    out = pictures.make_gantt(tmp_path / "g.png")
    with Image.open(out) as new, Image.open(ROOT / pictures.GANTT) as old:
        assert new.size == old.size and new.info["Description"] == old.info["Description"]
