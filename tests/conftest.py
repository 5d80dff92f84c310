"""Shared test helpers: the repository root, the installed ``ppverify`` command, small grids, the
sizes a family accepts (``buildable``), and the example family of the manual
(``docs/your-own-schedule.md``), read from the page itself so the tests and the manual show the
same code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ppverify.core.errors import ParameterError
from ppverify.core.schedule import Schedule
from ppverify.schedules import build

ROOT = Path(__file__).resolve().parents[1]
#: the virtualenv's console script (what ``pip install`` puts on PATH)
PPVERIFY = Path(sys.executable).parent / "ppverify"
#: small (p, m) sizes, cheap enough to sweep in the fast suite
SMALL_GRID = tuple((p, m) for p in range(1, 7) for m in range(1, 9))


def doc_file_block(page: str, path: str) -> str:
    """The text of the block a manual page writes to ``path`` (``<!-- write: path -->``)."""
    text = (ROOT / "docs" / page).read_text()
    hit = re.search(rf"<!-- write: {re.escape(path)} -->\n```\w*\n(.*?)\n```", text, re.S)
    if not hit:
        raise LookupError(f"docs/{page} has no block written to {path}")
    return hit.group(1) + "\n"


@pytest.fixture(scope="session")
def small_grid() -> tuple[tuple[int, int], ...]:
    """Small (p, m) sizes, cheap enough to sweep in the fast suite."""
    return SMALL_GRID


def accepted_sizes(family: str, sizes: Iterable[tuple[int, int]], **params: Any) -> Iterator[tuple[int, int, Schedule]]:
    """``(p, m, schedule)`` for each size in ``sizes`` that ``family`` builds at (with ``params``);
    a size the family refuses (:class:`ParameterError`: outside its rules) is skipped."""
    for p, m in sizes:
        try:
            s = build(family, p=p, m=m, **params)
        except ParameterError:
            continue
        yield p, m, s


@pytest.fixture(scope="session")
def buildable() -> Callable[..., Iterator[tuple[int, int, Schedule]]]:
    """:func:`accepted_sizes`: ``for p, m, s in buildable("chimera", GRID): ...`` skips the sizes
    the family refuses."""
    return accepted_sizes


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def eager_family_source() -> str:
    """The ``eager-1f1b`` module of docs/your-own-schedule.md."""
    return doc_file_block("your-own-schedule.md", "my_schedules.py")


@pytest.fixture
def ppverify_cli() -> Callable[..., subprocess.CompletedProcess]:
    """Run the installed ``ppverify`` command: ``ppverify_cli(*args, cwd=..., pythonpath=...)``."""

    def run(
        *args: str, cwd: Path | None = None, pythonpath: Path | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        env = dict(os.environ, TQDM_DISABLE="1")
        env.pop("PYTHONPATH", None)
        if pythonpath is not None:
            env["PYTHONPATH"] = str(pythonpath)
        return subprocess.run([str(PPVERIFY), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)

    return run


def _execute_notebook(path: Path, workdir: Path) -> tuple[list[dict], str]:
    """Run a notebook top to bottom in ``workdir`` (nbclient); return its outputs and their text.

    Fails the test on any error output, so a notebook cannot rot.
    """
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    return outputs, text


@pytest.fixture
def execute_notebook() -> Callable[[Path, Path], tuple[list[dict], str]]:
    """The notebook runner shared by the notebook tests (see :func:`_execute_notebook`)."""
    return _execute_notebook


def _printed(outputs: list[dict]) -> str:
    """Everything printed on stdout, with the seconds a run took masked (they vary run to run);
    one text, as a run may cut it into stream outputs at other points."""
    import re

    text = "".join(o["text"] for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stdout")
    return re.sub(r"\b\d+(\.\d+)? s\b", "<t> s", text)


def _prints_as_saved(path: Path, outputs: list[dict]) -> None:
    import nbformat

    saved = [o for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert _printed(outputs) == _printed(saved), f"{path.name}: its saved output is stale; re-run and save it"


@pytest.fixture
def prints_as_saved() -> Callable[[Path, list[dict]], None]:
    """``check(notebook, outputs)``: what a run of the notebook printed on stdout equals what the
    file shows saved (the seconds it took aside), so the saved pages a reader sees cannot rot."""
    return _prints_as_saved


@pytest.fixture
def refused_in_one_line(capsys) -> Callable[[list[str], str], str]:
    """``refused(argv, needle)``: ``ppverify.cli.main(argv)`` run in process must exit 2 with one
    stderr line, no traceback, holding ``needle``; returns stderr."""
    from ppverify.cli import main

    def refused(argv: list[str], needle: str) -> str:
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2, err
        assert len(err.strip("\n").split("\n")) == 1 and "Traceback" not in err, err
        assert needle in err, err
        return err

    return refused


@pytest.fixture()
def sigterm_on_first_output() -> Callable[[list[str], Path], tuple[int, str, float]]:
    """``run(argv, cwd)``: ``python -m ppverify ARGV`` in a real process, sent SIGTERM as soon as it
    writes its first byte to stderr (the progress bar's first draw: the work is running); returns
    its exit code, the rest of its stderr and the seconds it took to end after the signal (the clock
    read once the signal is sent)."""
    import contextlib
    import signal
    import time

    def run(argv: list[str], cwd: Path) -> tuple[int, str, float]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ppverify", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd
        )
        assert proc.stderr is not None
        try:
            proc.stderr.read(1)
            os.kill(proc.pid, signal.SIGTERM)
            t0 = time.monotonic()  # once sent: a test process held up before sending adds nothing
            _, rest = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.communicate()
        return proc.returncode, rest.decode(), time.monotonic() - t0

    return run


@pytest.fixture()
def loopback_preset(tmp_path: Path) -> Callable[..., str]:
    """A writer of system presets for this machine's worker processes (every rank on one node,
    one loopback link tier): ``write(runtime, gpus=..., latency_us=..., ...)`` writes the preset
    with that ``runtime:`` section and returns its path."""

    def write(
        runtime: dict[str, Any] | None = None,
        *,
        gpus: int = 2,
        latency_us: float = 50.0,
        bandwidth_GBps: float = 2.0,
        peak_TFLOPs: float = 1.0,
        memory_GiB: float = 8.0,
        name: str = "preset",
    ) -> str:
        link = {"name": "loopback", "latency_us": latency_us, "bandwidth_GBps": bandwidth_GBps}
        doc: dict[str, Any] = {
            "description": "a hand-written preset of this machine's worker processes",
            "device": {"name": "cpu", "peak_TFLOPs": peak_TFLOPs, "memory_GiB": memory_GiB},
            "gpus_per_node": gpus,
            "intra_node": dict(link),
            "inter_node": dict(link),
        }
        if runtime is not None:
            doc["runtime"] = runtime
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return str(path)

    return write
