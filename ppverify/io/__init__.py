"""Reading and writing schedules: ppverify JSON (``.json``), PyTorch pipelining CSV (``.csv``).

:func:`load_schedule` dispatches on the file extension; every reader raises
:class:`~ppverify.errors.ScheduleFileError` naming the file, the location and the rule broken.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ScheduleFileError
from ..schedule import Schedule

FORMATS = {".json": "ppverify JSON", ".csv": "PyTorch pipelining CSV"}


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
    raise ScheduleFileError(str(path), "", f"unknown schedule format {ext!r}; expected one of {', '.join(FORMATS)}")


def looks_like_file(text: str) -> bool:
    """True when a FAMILY-or-FILE argument names a file rather than a family.

    Example:
        >>> looks_like_file("1f1b"), looks_like_file("sched.json")
        (False, True)
    """
    return Path(text).suffix.lower() in FORMATS or "/" in text or Path(text).is_file()
