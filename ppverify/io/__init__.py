"""Reading and writing schedules: ppverify JSON (``.json``), PyTorch pipelining CSV (``.csv``).

:func:`load_schedule` dispatches on the file extension; every reader raises
:class:`~ppverify.core.errors.ScheduleFileError` naming the file, the location and the rule broken.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import ScheduleFileError
from ..core.schedule import Schedule
from .show_output import show_line

FORMATS = {
    ".json": "ppverify JSON",
    ".csv": "PyTorch pipelining CSV",
    ".txt": "text table (paper layout or PyTorch's printed grid)",
    ".table": "text table",
}


def load_schedule(path: str | Path, **options) -> Schedule:
    """Load a schedule file, choosing the reader by content first (a JSON object, a text table's
    ``tick``/``Rank`` header, else CSV cells) and by extension when the content does not say.

    Example:
        >>> load_schedule("missing.json")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: missing.json: file not found
        >>> load_schedule("/dev/null")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: /dev/null: is a character device, not a regular file; only regular files are read
    """
    from ..core.files import check_input_file, read_text

    path = Path(path)
    ext = path.suffix.lower()
    if ext not in FORMATS:
        if _is_dir(path):  # not "not found": it is there, and is no file
            raise ScheduleFileError(str(path), "", "a folder, not a schedule file; give a .json, .csv or .txt file")
        check_input_file(path)  # missing, a device node (/dev/null), a FIFO: named as every input is
        raise ScheduleFileError(str(path), "", f"unknown schedule format {ext!r}; expected one of {', '.join(FORMATS)}")
    text = read_text(path)  # one reading for every format: size, encoding and BOM checked alike
    kind = content_kind(text, path)
    if kind == "json" and options:
        raise ScheduleFileError(str(path), "", f"a JSON schedule takes no options ({', '.join(options)})")
    return parse_text(kind, text, str(path), options)


def load_torch_file(path: str | Path, **options) -> Schedule:
    """What ``ppverify import`` reads: a PyTorch CSV (``options`` as :func:`~.torch_csv.load_csv`
    takes them), or a JSON schedule or text table recognised by its content, whatever the extension.

    Example:
        >>> load_torch_file("missing.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: missing.csv: file not found
    """
    from ..core.files import read_text

    text = read_text(path)
    kind = content_kind(text, path, "csv")
    if kind in ("json", "table"):
        given = [k for k, v in options.items() if v is not None]
        if given:
            raise ScheduleFileError(
                str(path),
                "",
                f"holds a {FORMATS['.json' if kind == 'json' else '.txt']}, "
                f"which takes no --{given[0].replace('_', '-')}",
            )
        return parse_text(kind, text, str(path), {})
    return parse_text("csv", text, str(path), options)


def parse_text(kind: str, text: str, path: str, options: dict) -> Schedule:
    """The schedule in ``text`` read as ``kind`` ("json", "csv" or "table"), errors naming ``path``:
    what :func:`load_schedule` does once it has read the file, for a caller that holds its text.

    Example:
        >>> parse_text("csv", "0F0,0B0", "x.csv", {}).describe()
        'x.csv p=1 m=1 format=compute_only placement=linear'
    """
    if kind == "json":
        from .json_format import loads_document

        return loads_document(text, path).schedule
    if kind == "csv":
        from ..core.text_formats import csv_rows
        from .torch_csv import parse_rows

        return parse_rows(csv_rows(text, path), path, strict=True, **options)  # a file: typos named at their cell
    from .table_text import parse_table

    return parse_table(text, path=path, **options)


def content_kind(text: str, path: str | Path, unsniffed: str | None = None) -> str:
    """What a schedule file holds, as every reader decides it: what its content says
    (:func:`sniff_format`), else ``unsniffed`` when given (``import`` reads such a file as a CSV),
    else its name (``.json`` JSON, ``.csv`` CSV, anything else a text table).

    Example:
        >>> content_kind('{"format": 1}', "s.txt"), content_kind("", "s.json"), content_kind("", "s.txt", "csv")
        ('json', 'json', 'csv')
    """
    return sniff_format(text) or unsniffed or {".json": "json", ".csv": "csv"}.get(Path(path).suffix.lower(), "table")


def sniff_format(text: str) -> str | None:
    """``"json"``, ``"table"`` or ``"csv"`` when the text says which it is, else None.

    Example:
        >>> sniff_format(' {"format": 1}'), sniff_format("tick 0 1"), sniff_format("0F0,0B0"), sniff_format("")
        ('json', 'table', 'csv', None)
        >>> sniff_format("schedule      gpipe p=2 m=2")  # what `ppverify show` prints first
        'table'
    """
    head = text.lstrip("\ufeff \t\r\n")[:4096]
    if not head:
        return None
    if head[0] in "{[":
        return "json"
    first = head.split("\n", 1)[0].strip()
    if first.startswith(("tick", "dev ", "Rank", "Step")) or "Rank 0" in first:
        return "table"
    if show_line(first, "schedule"):  # show's output saved whole (its header, then the table)
        return "table"
    if "," in first:
        return "csv"
    return None


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def looks_like_file(text: str) -> bool:
    """True when a FAMILY-or-FILE argument names a file rather than a family (family names have
    no dots or slashes, so ``sched.yaml`` is a file and gets a "unknown format" error).

    Example:
        >>> looks_like_file("1f1b"), looks_like_file("sched.json"), looks_like_file("sched.yaml")
        (False, True, True)
    """
    try:
        return bool(Path(text).suffix) or "/" in text or _is_file(Path(text))
    except ValueError:
        return False
