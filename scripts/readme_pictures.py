"""Regenerate the two pictures the README and the manual's index show: a Gantt chart (``ppverify
plot``) and a screenshot of the study report (``ppverify report`` in headless Chromium).

Each picture is made by one ``ppverify`` command, written into the PNG's ``Description`` text
chunk, so ``tests/docs/test_readme.py`` can check that a committed picture is what this script
makes today (a changed command means a stale picture: rerun the script).

    python scripts/readme_pictures.py            # both (the screenshot needs chromium)
    python scripts/readme_pictures.py --only gantt
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ppverify.cli import main

#: picture -> the ppverify command that makes it ({out}: the file it writes)
GANTT = "docs/images/readme-gantt.png"
REPORT = "docs/images/readme-report.png"
COMMANDS: dict[str, list[str]] = {
    GANTT: shlex.split("plot chimera -p 4 -m 8 --system ethernet-100g --model gpt3-1.3b -o {out}"),
    REPORT: shlex.split(
        "report --schedules 1f1b,zb-h1,chimera,dualpipe -p 4 -m 8 --costs F=1,I=1,W=1 --comm-delay 0.5 --no-progress -o {out}"
    ),
}


def command_text(picture: str) -> str:
    """The command line that makes ``picture`` (the text stored in the PNG).

    Example:
        >>> command_text(GANTT).split()[:3]
        ['ppverify', 'plot', 'chimera']
    """
    name = Path(picture).name if picture == GANTT else "report.html"
    return "ppverify " + " ".join(name if a == "{out}" else a for a in COMMANDS[picture])


def stamp(png: Path, picture: str) -> None:
    """Write ``picture``'s command into the PNG's ``Description`` chunk."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Description", command_text(picture))
    with Image.open(png) as img:
        img.load()
        img.save(png, pnginfo=info)


def description(png: Path) -> str:
    """The command stored in a picture ('' when none)."""
    from PIL import Image

    with Image.open(png) as img:
        return str(img.info.get("Description", ""))


def make_gantt(out: Path) -> Path:
    """The README's Gantt chart, written to ``out``."""
    argv = [out.as_posix() if a == "{out}" else a for a in COMMANDS[GANTT]]
    if main(argv) != 0:
        raise SystemExit(f"ppverify {' '.join(argv)} failed")
    stamp(out, GANTT)
    return out


def make_report(out: Path, chromium: str | None = None) -> Path:
    """The README's report screenshot (the schedule timelines of Chimera), written to ``out``."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="ppverify-pictures-") as tmp:
        html = Path(tmp) / "report.html"
        argv = [html.as_posix() if a == "{out}" else a for a in COMMANDS[REPORT]]
        if main(argv) != 0:
            raise SystemExit(f"ppverify {' '.join(argv)} failed")
        exe = chromium or shutil.which("chromium") or "/usr/bin/chromium"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(html.as_uri())
            page.wait_for_function("window.ppverifyReport && window.ppverifyReport.ready", timeout=30_000)
            page.evaluate("window.ppverifyReport.select('chimera')")
            page.locator("#schedule").screenshot(path=str(out))
            browser.close()
    stamp(out, REPORT)
    return out


def run(argv: list[str] | None = None) -> int:
    """Make the pictures asked for (both by default) in the repository's docs/images."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("gantt", "report"), default=None)
    args = parser.parse_args(argv)
    if args.only in (None, "gantt"):
        print(f"wrote {make_gantt(ROOT / GANTT)}")
    if args.only in (None, "report"):
        print(f"wrote {make_report(ROOT / REPORT)}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
