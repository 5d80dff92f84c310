"""Reading input files and writing output files safely.

:func:`read_text` reads every file ppverify parses (schedules, presets, sweep configs): it refuses
directories, files over :data:`~ppverify.limits.MAX_FILE_BYTES` and text that is not UTF-8 (naming
the line), and drops a UTF-8 byte-order mark, the same way for every format.
:func:`atomic_write` / :func:`atomic_path` write every output file: to a temporary name in the
same directory, then :func:`os.replace`, so a reader never sees a half-written file, even after a
kill. A path that cannot be written is a one-line :class:`~ppverify.errors.ParameterError`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import ParameterError, ScheduleFileError
from .limits import MAX_FILE_BYTES, LimitError


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of a UTF-8 file (a leading byte-order mark dropped), refused in one line when
    missing, a directory, unreadable, larger than ``max_bytes`` or not UTF-8.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(f, "wb").write(b"\\xef\\xbb\\xbfok\\n\\xff")
        >>> read_text(f)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.errors.ScheduleFileError: ...a.txt:2:1: not UTF-8 text (byte 0xff)
    """
    name = str(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise ScheduleFileError(name, "", "is a directory, not a file")
        size = p.stat().st_size
        if size > max_bytes:
            raise LimitError(name, f"{size} bytes; files over {max_bytes} bytes are refused")
        with p.open("rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise ScheduleFileError(name, "", "file not found") from None
    except OSError as exc:
        raise ScheduleFileError(name, "", f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:  # a pipe or a growing file
        raise LimitError(name, f"over {max_bytes} bytes; larger files are refused")
    if raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark: dropped the same way in every format
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ScheduleFileError(name, f"{line}:{col}", f"not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None


@contextlib.contextmanager
def atomic_path(path: str | Path, flag: str = "-o") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block ends normally it is renamed onto
    ``path`` (atomically), otherwise removed. For writers that want a file name (pandas,
    matplotlib); the temporary name keeps the suffix so format detection by extension works.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "t.csv")
        >>> with atomic_path(f) as tmp:
        ...     _ = tmp.write_text("a,b\\n")
        >>> open(f).read()
        'a,b\\n'
    """
    target = Path(path)
    if target.is_dir():
        raise ParameterError(flag, str(path), "is a directory; give a file name")
    parent = target.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp" + target.suffix, dir=parent)
        os.close(fd)
    except OSError as exc:
        raise ParameterError(flag, str(path), f"cannot write there: {exc.strerror or exc}") from None
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except OSError as exc:
        raise ParameterError(flag, str(path), f"cannot write there: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp_path.unlink()


def check_output_path(path: str | Path, flag: str = "-o") -> None:
    """Refuse, before a long run, an output path that cannot be written: empty, a directory, or
    in a folder that does not exist (the write itself still reports what only it can see).

    Example:
        >>> check_output_path("preset.yaml", "--out")
        >>> check_output_path("/nonexistent-dir/p.yaml", "--out")
        Traceback (most recent call last):
        ...
        ppverify.errors.ParameterError: parameter --out=/nonexistent-dir/p.yaml: folder /nonexistent-dir does not exist
    """
    target = Path(path)
    if not str(path).strip():
        raise ParameterError(flag, str(path), "give a file name")
    if target.is_dir():
        raise ParameterError(flag, str(path), "is a directory; give a file name")
    if not target.parent.is_dir():
        raise ParameterError(flag, str(path), f"folder {target.parent} does not exist")


def atomic_write(path: str | Path, data: str | bytes, flag: str = "-o") -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; ``flag`` names the option in errors.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "s.json")
        >>> _ = atomic_write(f, "{}\\n"); open(f).read()
        '{}\\n'
        >>> atomic_write("/nonexistent-dir/x.json", "{}", "--save")
        Traceback (most recent call last):
        ...
        ppverify.errors.ParameterError: parameter --save=/nonexistent-dir/x.json: cannot write there: No such file or directory
    """
    raw = data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data
    with atomic_path(path, flag) as tmp, open(tmp, "wb") as fh:
        fh.write(raw)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


def csv_rows(text: str, path: str) -> list[list[str]]:
    """The cells of CSV text, refusing a malformed line or a cell over
    :data:`~ppverify.limits.MAX_CELL_CHARS` characters with its line and column.

    Example:
        >>> csv_rows("0F0,,0B0\\n1F0,1B0\\n", "s.csv")
        [['0F0', '', '0B0'], ['1F0', '1B0']]
        >>> csv_rows('0F0,"x\\n', "s.csv")
        Traceback (most recent call last):
        ...
        ppverify.errors.ScheduleFileError: s.csv:1: malformed CSV: unexpected end of data
    """
    import csv
    import io

    from .limits import MAX_CELL_CHARS

    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows = []
    try:
        for row in reader:
            for c, cell in enumerate(row):
                if len(cell) > MAX_CELL_CHARS:
                    raise LimitError(
                        f"{path}:{reader.line_num}:{c + 1}",
                        f"a cell of {len(cell)} characters; at most {MAX_CELL_CHARS} are allowed",
                    )
            rows.append(row)
    except csv.Error as exc:
        raise ScheduleFileError(path, str(reader.line_num), f"malformed CSV: {exc}") from None
    return rows


def load_yaml(text: str, path: str) -> object:
    """``yaml.safe_load`` of a preset or config, every failure one line naming the file, line and
    column: YAML syntax, an integer of more than :data:`~ppverify.limits.MAX_INT_DIGITS` digits
    (refused before ``int()``), nesting too deep for the parser.

    Example:
        >>> load_yaml("a: [1, 2]", "c.yaml")
        {'a': [1, 2]}
        >>> load_yaml("a: [1, 2\\nb: 3", "c.yaml")
        Traceback (most recent call last):
        ...
        ppverify.errors.ScheduleFileError: c.yaml:2:2: not valid YAML: expected ',' or ']', but got ':'
    """
    import re

    import yaml

    from .limits import MAX_JSON_DEPTH, check_digits, line_col

    check_digits(text, path)
    deep = re.search(r"(?:[\[{]\s*){%d,}" % (MAX_JSON_DEPTH + 1), text)  # the parser recurses per level
    if deep:
        line, col = line_col(text, deep.start())
        raise LimitError(f"{path}:{line}:{col}", f"lists and mappings nested more than {MAX_JSON_DEPTH} deep")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        raise ScheduleFileError(path, where, f"not valid YAML: {problem}") from None
    except RecursionError:
        raise LimitError(path, "lists and mappings nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # a value YAML's constructors cannot build
        raise ScheduleFileError(path, "", f"not valid YAML: {str(exc).splitlines()[0]}") from None
