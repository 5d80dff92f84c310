"""Every ```sh and ```python example of README.md and docs/*.md runs, so the manual cannot drift.

How a block is read (the rules are also stated in docs/development.md):

* ```sh with ``$ `` lines is a transcript: each ``$ cmd`` line is run with bash, and the lines up
  to the next ``$`` line are its expected output (stdout and stderr together). A line ``...`` in
  the expected output stands for any number of lines, ``...`` inside a line for any text; trailing
  blanks are ignored. A command shown without output must exit 0. ``$ cat > f <<'EOF'`` takes the
  lines up to ``EOF`` as its input, so examples can write the files they use.
* ```sh without ``$`` lines: every line is a command that must exit 0 (output not compared).
* ```python: run as a script with the virtualenv's Python; a block holding ``>>>`` lines is run
  as a doctest instead, so its shown results are compared.
* An HTML comment right before the fence changes that: ``<!-- no-test -->`` never runs the block
  (only for long runs, e.g. benchmarks and ``make``); ``<!-- slow -->`` runs it in the slow suite
  (solver-heavy examples); ``<!-- write: PATH -->`` saves the block (any language) as the file
  PATH for the blocks after it, so a page can show a module or a ``pyproject.toml`` it then uses.

Each page runs in its own temporary folder (blocks of a page in order, sharing files) in which the
repository's folders (``examples``, ``models``, ``tests``, ...) are linked, with the virtualenv's
``bin`` first on ``PATH`` so ``ppverify`` is the installed console script.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = ("examples", "models", "notebooks", "scripts", "tests", "docs", "ppverify")
MARKER = "@@ppverify-doc-rc"
FENCE = re.compile(r"^( *)```(\w*)\s*$")
#: a hang guard per block: the slowest block took 36 s on the shared 2-core machine at load 4
#: (optimization.md's loop v=2 search) and one cold `measure` 65-84 s at load 11, so 120 s was
#: within reach of a machine five times slower
TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    """One fenced example: its page, first line, language, text and mode (run, slow, no-test)."""

    page: Path
    line: int
    lang: str
    text: str
    mode: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def extract_blocks(text: str, page: Path = ROOT / "README.md") -> list[Block]:
    """The ```sh and ```python blocks of a Markdown text, with the marker comment before each.

    >>> text = "a\\n<!-- no-test -->\\n```sh\\nmake run\\n```\\n```python\\nx = 1\\n```\\n```\\nplain\\n```\\n"
    >>> [(b.line, b.lang, b.mode, b.text) for b in extract_blocks(text)]
    [(3, 'sh', 'no-test', 'make run\\n'), (6, 'python', 'run', 'x = 1\\n')]
    >>> [b.mode for b in extract_blocks("<!-- write: a/b.toml -->\\n```toml\\n[x]\\n```\\n")]
    ['write:a/b.toml']
    """
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j, indent = i + 1, len(m.group(1))
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        prev = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
        mode = {"<!-- no-test -->": "no-test", "<!-- slow -->": "slow"}.get(prev, "run")
        write = re.fullmatch(r"<!-- write: (\S+) -->", prev)
        if write:
            mode = "write:" + write.group(1)
        if m.group(2) in ("sh", "python") or write:
            body = "".join(ln[indent:] + "\n" for ln in lines[i + 1 : j])
            blocks.append(Block(page, i + 1, m.group(2), body, mode))
        i = j + 1
    return blocks


def parse_transcript(text: str) -> list[tuple[str, list[str] | None]]:
    """``(command, expected output lines)`` pairs of a sh block; ``None`` when no ``$`` lines.

    >>> parse_transcript("$ echo hi\\nhi\\n$ cat > f <<'EOF'\\nx\\nEOF\\n$ true\\n")
    [('echo hi', ['hi']), ("cat > f <<'EOF'\\nx\\nEOF", []), ('true', [])]
    >>> parse_transcript("ppverify list   # comment\\n")
    [('ppverify list   # comment', None)]
    """
    lines = text.splitlines()
    if not any(ln.startswith("$ ") for ln in lines):
        return [(ln, None) for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    pairs: list[tuple[str, list[str] | None]] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError(f"output line before any command: {lines[i]!r}")
        cmd = lines[i][2:]
        i += 1
        heredoc = re.search(r"<<\s*'?(\w+)'?", cmd)
        if heredoc:
            end = heredoc.group(1)
            body = []
            while i < len(lines) and lines[i] != end:
                body.append(lines[i])
                i += 1
            cmd = "\n".join([cmd, *body, end])
            i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        pairs.append((cmd, out))
    return pairs


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` fits ``expected``, ``...`` standing for lines or for text inside a line.

    >>> matches(["a", "...", "d"], ["a", "b", "c", "d"]), matches(["x ... z"], ["x y z"])
    (True, True)
    >>> matches(["a"], ["a", "b"]), matches(["...", "b"], ["a"])
    (False, False)
    """
    exp = [e.rstrip() for e in expected]
    act = [a.rstrip() for a in actual]
    while exp and not exp[-1]:
        exp.pop()
    while act and not act[-1]:
        act.pop()

    def line_ok(e: str, a: str) -> bool:
        if "..." not in e:
            return e == a
        return re.fullmatch(".*".join(re.escape(part) for part in e.split("...")), a) is not None

    memo: dict[tuple[int, int], bool] = {}

    def fit(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(exp):
                memo[i, j] = j == len(act)
            elif exp[i].strip() == "...":
                memo[i, j] = any(fit(i + 1, k) for k in range(j, len(act) + 1))
            else:
                memo[i, j] = j < len(act) and line_ok(exp[i], act[j]) and fit(i + 1, j + 1)
        return memo[i, j]

    return fit(0, 0)


def workdir(tmp: Path) -> Path:
    """A scratch folder with the repository's folders linked in."""
    for name in LINKED:
        if not (tmp / name).exists():
            (tmp / name).symlink_to(ROOT / name)
    return tmp


def environment() -> dict[str, str]:
    """The examples' environment: the virtualenv's commands first, no progress bars."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"
    env["TQDM_DISABLE"] = "1"  # progress bars go to stderr, which transcripts show
    env.pop("PYTHONPATH", None)
    return env


def run_sh(block: Block, cwd: Path) -> list[str]:
    """Run a sh block in ``cwd``; the list of problems (empty when it matches)."""
    pairs = parse_transcript(block.text)
    script = "".join(f"{cmd}\n__rc=$?; printf '\\n{MARKER} %d\\n' $__rc; (exit $__rc)\n" for cmd, _ in pairs)
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT_S,
    )
    chunks = re.split(rf"\n?{MARKER} (\d+)\n", proc.stdout)
    problems = []
    for k, (cmd, expected) in enumerate(pairs):
        if 2 * k + 1 >= len(chunks):
            problems.append(f"$ {cmd}\n  did not run (the block stopped before it)")
            break
        output, rc = chunks[2 * k], int(chunks[2 * k + 1])
        actual = output.split("\n") if output else []
        if expected is None or not expected:
            if rc != 0:
                problems.append(f"$ {cmd}\n  exit code {rc}:\n{output}")
        elif not matches(expected, actual):
            problems.append(f"$ {cmd}\n--- expected\n" + "\n".join(expected) + "\n--- actual\n" + output)
    return problems


def run_python(block: Block, cwd: Path) -> list[str]:
    """Run a python block (a script, or a doctest when it shows ``>>>``) in ``cwd``."""
    if ">>>" in block.text:
        code = (
            "import doctest, sys\n"
            f"t = doctest.DocTestParser().get_doctest({block.text!r}, {{}}, {block.id!r}, None, 0)\n"
            "r = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)\n"
            "r.run(t)\nsys.exit(1 if r.failures else 0)\n"
        )
    else:
        code = block.text
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT_S,
    )
    return [] if proc.returncode == 0 else [f"exit code {proc.returncode}:\n{proc.stdout}"]


def page_blocks(page: Path, mode: str) -> list[Block]:
    """The blocks of a page to run in ``mode``, with the files it writes (needed in every mode)."""
    return [b for b in extract_blocks(page.read_text(), page) if b.mode == mode or b.mode.startswith("write:")]


def check_page(page: Path, mode: str, tmp: Path) -> None:
    cwd = workdir(tmp)
    failures = []
    for block in page_blocks(page, mode):
        if block.mode.startswith("write:"):
            target = cwd / block.mode.split(":", 1)[1]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            continue
        problems = (run_sh if block.lang == "sh" else run_python)(block, cwd)
        failures += [f"{block.id}: {p}" for p in problems]
    assert not failures, "\n\n".join(failures)


def _ids(mode: str) -> list:
    return [
        pytest.param(p, id=str(p.relative_to(ROOT)))
        for p in PAGES
        if any(b.mode == mode for b in extract_blocks(p.read_text(), p))
    ]


@pytest.mark.parametrize("page", _ids("run"))
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    check_page(page, "run", tmp_path)


if _ids("slow"):  # defined only while some page marks a block slow, so nothing is ever skipped

    @pytest.mark.slow
    @pytest.mark.parametrize("page", _ids("slow"))
    def test_page_slow_examples_run(page: Path, tmp_path: Path) -> None:
        check_page(page, "slow", tmp_path)


def test_markers_that_skip_examples_stay_rare() -> None:
    # The markers are for long runs only: most blocks run in the fast suite.
    blocks = [b for p in PAGES for b in extract_blocks(p.read_text(), p)]
    skipped = [b for b in blocks if b.mode == "no-test"]
    assert len(blocks) >= 40 and len(skipped) <= len(blocks) // 10, [b.id for b in skipped]


def test_transcript_comparison_catches_drift(tmp_path: Path) -> None:
    # The harness itself: a wrong expected line fails, the right one passes (GPipe p=2, m=1 takes
    # (m+p-1)(tF+tB) = 2*3 = 6 slots at the default costs tF = 1, tB = 2).
    good = Block(
        ROOT / "README.md",
        1,
        "sh",
        "$ ppverify show gpipe -p 2 -m 1 --no-table | grep ticks\nmakespan      6 units (6 ticks)\n",
        "run",
    )
    bad = Block(good.page, 1, "sh", good.text.replace("6 units (6", "5 units (5"), "run")
    assert run_sh(good, workdir(tmp_path)) == []
    assert run_sh(bad, workdir(tmp_path))


def test_mkdocs_nav_lists_every_page() -> None:
    import yaml

    conf = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def files(nav) -> list[str]:
        out = []
        for item in nav:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            out += files(value) if isinstance(value, list) else [value]
        return out

    listed = set(files(conf["nav"]))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages <= listed, sorted(pages - listed)


def test_mkdocs_builds_strictly(tmp_path: Path) -> None:
    # what `make test` runs first: a broken link, a page left out of the nav, or an API page whose
    # module no longer imports fails the build
    env = dict(environment(), NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "api" / "index.html").is_file()
    # the docstrings' Sphinx roles (:class:`...`) are turned into links (scripts/griffe_roles.py):
    # none is left as text anywhere in the site, and the API page links its cross-references
    raw = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):(?:`|<code>)")
    left = {
        p.relative_to(tmp_path).as_posix() for p in (tmp_path / "site").rglob("*.html") if raw.search(p.read_text())
    }
    assert not left, f"raw Sphinx roles in {sorted(left)}"
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    # e.g. the docstrings naming :class:`~ppverify.core.errors.ParameterError` link to its entry
    assert (
        'href="#ppverify.core.errors.ParameterError"' in api and api.count('class="autorefs autorefs-internal"') > 100
    )


def test_readme_is_a_short_front_door_whose_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 250
    links = re.findall(r"\]\(((?:docs/|notebooks/)[^)#\s]*)", text)
    assert links and [link for link in links if not (ROOT / link).exists()] == []
