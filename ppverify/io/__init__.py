"""Reading and writing schedules: ppverify JSON (``.json``), PyTorch pipelining CSV (``.csv``).

:func:`load_schedule` dispatches on the file extension; every reader raises
:class:`~ppverify.errors.ScheduleFileError` naming the file, the location and the rule broken.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ScheduleFileError
from ..schedule import Schedule

FORMATS = {".json": "ppverify JSON", ".csv": "PyTorch pipelining CSV",
           ".txt": "text table (paper layout or PyTorch's printed grid)", ".table": "text table"}


def load_schedule(path: str | Path, **options) -> Schedule:
    """Load a schedule file, choosing the reader by extension.

    Example:
        >>> load_schedule("missing.json")
        Traceback (most recent call last):
        ...
        ppverify.errors.ScheduleFileError: missing.json: file not found
    """
    path = Path(path)
    if not path.is_file():
        raise ScheduleFileError(str(path), "", "file not found")
    ext = path.suffix.lower()
    if ext == ".json":
        from .json_format import load_json

        return load_json(path, **options)
    if ext == ".csv":
        from .torch_csv import load_csv

        return load_csv(path, **options)
    if ext in (".txt", ".table"):
        from .table_text import load_table

        return load_table(path, **options)
    raise ScheduleFileError(str(path), "", f"unknown schedule format {ext!r}; expected one of {', '.join(FORMATS)}")


def looks_like_file(text: str) -> bool:
    """True when a FAMILY-or-FILE argument names a file rather than a family (family names have
    no dots or slashes, so ``sched.yaml`` is a file and gets a "unknown format" error).

    Example:
        >>> looks_like_file("1f1b"), looks_like_file("sched.json"), looks_like_file("sched.yaml")
        (False, True, True)
    """
    return bool(Path(text).suffix) or "/" in text or Path(text).is_file()
