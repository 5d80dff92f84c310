"""Reading input files and writing output files safely.

:func:`read_text` reads every file ppverify parses (schedules, presets, sweep configs): it refuses
directories, files over :data:`~ppverify.core.limits.MAX_FILE_BYTES` and text that is not UTF-8 (naming
the line), and drops a UTF-8 byte-order mark, the same way for every format (:func:`starts_with_bom`
tells a reader that notes it). Only regular files are read: a FIFO, a device node or a socket is
refused before it is opened (reading one would block, or never end), by :func:`read_text`,
:func:`read_bytes` and :func:`check_input_file`. The text read is parsed, as CSV or YAML within
the same limits, by :mod:`ppverify.core.text_formats`.
:func:`atomic_write` / :func:`atomic_path` write every output file: to a temporary name in the
same directory, then :func:`os.replace`, so a reader never sees a half-written file, even after a
kill. A path that cannot be written is a one-line :class:`~ppverify.core.errors.ParameterError`.

Outputs follow symbolic links: the file a link points to is replaced and the link stays (a link
to a missing file creates that file). A target that is not a regular file (a FIFO, a device node
such as ``/dev/full``, a socket) is refused, never replaced. A new file gets the permissions the
umask gives (``0644`` under umask ``022``); a file written over keeps its permissions (and, when
the process may set them, its owner and group).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from .errors import ParameterError, ScheduleFileError
from .limits import MAX_FILE_BYTES, LimitError


def _kind(mode: int) -> str:
    """What a file that is not regular is, in words."""
    for test, what in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def check_input_file(path: str | Path) -> os.stat_result:
    """The status of an input file, refused in one line unless it is a regular file (symbolic links
    followed): missing, a directory, a FIFO, a device node or a socket. Nothing is opened, so a FIFO
    never blocks the command.

    Example:
        >>> import tempfile, os
        >>> fifo = os.path.join(tempfile.mkdtemp(), "in.json"); os.mkfifo(fifo)
        >>> check_input_file(fifo)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: ...in.json: is a FIFO (named pipe), not a regular file; only regular files are read
    """
    name = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ScheduleFileError(name, "", "file not found") from None
    except (OSError, ValueError) as exc:  # a loop of links, a name too long, a NUL byte
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, FileNotFoundError):  # the folder exists: a virtual one (/proc) makes no files
            why = "it takes no new files"
        raise ScheduleFileError(name, "", f"cannot read: {why}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ScheduleFileError(name, "", "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ScheduleFileError(name, "", f"is {_kind(st.st_mode)}, not a regular file; only regular files are read")
    return st


def read_bytes(path: str | Path, max_bytes: int | None = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, refused in one line when missing, not a regular file (a
    directory, a FIFO, a device node: never opened, so never blocked on), unreadable or larger
    than ``max_bytes`` (``None``: no limit, for a sweep's store).

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "a.bin")
        >>> _ = open(f, "wb").write(b"abc"); read_bytes(f)
        b'abc'
        >>> read_bytes(f, max_bytes=2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: ...a.bin: 3 bytes; files over 2 bytes are refused
    """
    name = str(path)
    st = check_input_file(path)
    if max_bytes is not None and st.st_size > max_bytes:
        raise LimitError(name, f"{st.st_size} bytes; files over {max_bytes} bytes are refused")
    try:
        # O_NONBLOCK: should the path have become a FIFO since it was checked, opening it returns
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ScheduleFileError(name, "", "file not found") from None
    except OSError as exc:
        raise ScheduleFileError(name, "", f"cannot read: {exc.strerror or exc}") from None
    with open(fd, "rb") as fh:
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise ScheduleFileError(name, "", f"is {_kind(mode)}, not a regular file; only regular files are read")
            raw = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        except OSError as exc:
            raise ScheduleFileError(name, "", f"cannot read: {exc.strerror or exc}") from None
    if max_bytes is not None and len(raw) > max_bytes:  # a growing file
        raise LimitError(name, f"over {max_bytes} bytes; larger files are refused")
    return raw


#: UTF-8's byte-order mark, which :func:`read_text` drops from the start of every file
BYTE_ORDER_MARK = b"\xef\xbb\xbf"


def starts_with_bom(path: str | Path) -> bool:
    """Whether the regular file at ``path`` starts with the UTF-8 byte-order mark :func:`read_text`
    drops, for a reader whose format's own tool keeps it (PyTorch's CSV loader); False for anything
    else (a missing file, a FIFO: never opened), which the reading itself reports.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "s.csv")
        >>> _ = open(f, "wb").write(BYTE_ORDER_MARK + b"0F0,0B0\\n")
        >>> starts_with_bom(f), starts_with_bom(f + ".missing")
        (True, False)
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as fh:
            return fh.read(len(BYTE_ORDER_MARK)) == BYTE_ORDER_MARK
    except (OSError, ValueError):  # gone since, unreadable, a NUL byte in the name
        return False


def read_text(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of a UTF-8 file (a leading byte-order mark dropped), refused in one line when
    missing, not a regular file (:func:`read_bytes`), unreadable, larger than ``max_bytes`` or not
    UTF-8.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> _ = open(f, "wb").write(b"\\xef\\xbb\\xbfok\\n\\xff")
        >>> read_text(f)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: ...a.txt:2:1: not UTF-8 text (byte 0xff)
    """
    name = str(path)
    raw = read_bytes(path, max_bytes)
    if raw.startswith(BYTE_ORDER_MARK):  # dropped the same way in every format (see starts_with_bom)
        raw = raw[len(BYTE_ORDER_MARK) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ScheduleFileError(name, f"{line}:{col}", f"not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None


def output_target(path: str | Path, flag: str = "-o") -> tuple[Path, os.stat_result | None]:
    """The file an output path writes (symbolic links followed) and its status (``None`` when it
    does not exist yet), refused in one line when the path is empty, ends in a separator (it names
    a folder), is a directory or is not a regular file (a FIFO, a device node, a socket): such a
    target is never replaced.

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp(); os.symlink("real.json", os.path.join(d, "link.json"))
        >>> output_target(os.path.join(d, "link.json"))[0].name
        'real.json'
        >>> output_target("c.yaml/", "--out")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --out=c.yaml/: ends in '/', which names a folder; give a file name
    """
    text = str(path)
    if not text.strip():
        raise ParameterError(flag, text, "give a file name")
    if text.endswith(("/", os.sep)) or (os.altsep and text.endswith(os.altsep)):
        raise ParameterError(flag, text, f"ends in {text[-1]!r}, which names a folder; give a file name")
    check_current_folder(text, flag)  # a relative name resolves against it
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError) as exc:  # a NUL byte; an error of the system's
        raise ParameterError(flag, text, f"cannot write there: {_why(exc)}") from None
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real, None
    except (OSError, ValueError) as exc:  # a loop of links, a name too long, a NUL byte
        raise ParameterError(flag, text, f"cannot write there: {_why(exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ParameterError(flag, text, "is a directory; give a file name")
    if not stat.S_ISREG(st.st_mode):
        shown = "" if str(real) == os.path.abspath(text) else f" ({real})"
        raise ParameterError(
            flag, text, f"is {_kind(st.st_mode)}{shown}, not a regular file; only regular files are written"
        )
    return real, st


#: the longest suffix a temporary name keeps (``.csv``, ``.parquet``, ``.gz``: what a writer
#: reads the format from); a longer "suffix" is part of the name, and would only lengthen it
_SUFFIX_KEPT = 16


def temporary_name(target: Path) -> str:
    """The name of a temporary file next to ``target``: short whatever the target's length (a
    legal name of up to 255 bytes must stay writable), random, and with the target's suffix, so a
    writer that picks its format by extension (pandas, matplotlib) still does.

    Example:
        >>> name = temporary_name(Path("d" * 251 + ".csv"))
        >>> name.startswith(".ppverify-") and name.endswith(".tmp.csv"), len(name)
        (True, 26)
    """
    suffix = target.suffix if len(os.fsencode(target.suffix)) <= _SUFFIX_KEPT else ""
    return f".ppverify-{secrets.token_hex(4)}.tmp{suffix}"


def _temporary(target: Path, flag: str, shown: str) -> tuple[Path, int]:
    """A new empty file next to ``target`` (the umask gives its permissions) and its descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = target.parent / temporary_name(target)
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        except FileNotFoundError:  # no such folder, or a virtual one (/proc) that makes no files
            why = f"its folder {target.parent} takes no new files"
            if not target.parent.is_dir():
                why = missing_folder(shown, target)
            raise ParameterError(flag, shown, f"cannot write there: {why}") from None
        except OSError as exc:
            raise ParameterError(flag, shown, f"cannot write there: {exc.strerror or exc}") from None
    raise ParameterError(flag, shown, "cannot write there: no free temporary name")


@contextlib.contextmanager
def atomic_path(path: str | Path, flag: str = "-o") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block ends normally it is renamed onto
    ``path`` (atomically), otherwise removed. For writers that want a file name (pandas,
    matplotlib); the temporary name keeps the suffix so format detection by extension works.
    A symbolic link is written through; a target that is not a regular file is refused
    (:func:`output_target`); the file keeps the permissions of the file it replaces, or gets the
    umask's.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "t.csv")
        >>> with atomic_path(f) as tmp:
        ...     _ = tmp.write_text("a,b\\n")
        >>> open(f).read()
        'a,b\\n'
    """
    shown = str(path)
    target, old = output_target(path, flag)
    tmp_path, fd = _temporary(target, flag, shown)
    try:
        try:
            if old is not None:  # written over: its permissions (and owner, where allowed) stay
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):
                        os.fchown(fd, old.st_uid, old.st_gid)
        finally:
            os.close(fd)
        yield tmp_path
        output_target(path, flag)  # still not a FIFO or a device: never replaced
        os.replace(tmp_path, target)
    except OSError as exc:
        raise ParameterError(flag, shown, f"cannot write there: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp_path.unlink()


def check_output_path(path: str | Path, flag: str = "-o", json_file: bool = False) -> None:
    """Refuse, before a long run, an output path that cannot be written: empty, ending in a
    separator, a directory, not a regular file (a FIFO, a device node), or in a folder that does
    not exist (the write itself still reports what only it can see). ``json_file``: the output is
    a ppverify JSON file, so a ``.csv`` name (which readers take for PyTorch's CSV) is refused.

    Example:
        >>> check_output_path("preset.yaml", "--out")
        >>> check_output_path("/nonexistent-dir/p.yaml", "--out")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --out=/nonexistent-dir/p.yaml: folder /nonexistent-dir does not exist
        >>> check_output_path("best.csv", "--save", json_file=True)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --save=best.csv: this writes ppverify JSON, and a .csv name tells every reader PyTorch's CSV: name it .json (ppverify export FILE.json -o OUT.csv writes the CSV)
    """
    if json_file and str(path).lower().endswith(".csv"):
        raise ParameterError(
            flag,
            str(path),
            "this writes ppverify JSON, and a .csv name tells every reader PyTorch's CSV: name it .json "
            "(ppverify export FILE.json -o OUT.csv writes the CSV)",
        )
    check_output_folder(path, flag)


def check_output_folder(path: str | Path, flag: str = "-o", probe: bool = True) -> Path:
    """The file an output path writes (:func:`output_target`), refused in one line when its
    folder does not exist (for a symbolic link, the folder the link points into:
    :func:`missing_folder`) or, with ``probe``, takes no new file (:func:`check_folder_takes_files`).

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp(); os.symlink("nowhere/x.json", os.path.join(d, "dang.json"))
        >>> check_output_folder(os.path.join(d, "dang.json"), "--save")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --save=...: the link points into .../nowhere, which does not exist
    """
    target, _ = output_target(path, flag)
    if not target.parent.is_dir():
        raise ParameterError(flag, str(path), missing_folder(path, target))
    if probe:
        check_folder_takes_files(target.parent, flag, str(path))
    return target


def missing_folder(path: str | Path, target: Path) -> str:
    """The words for an output ``path`` whose folder does not exist; ``target`` is the file it
    writes (:func:`output_target`). A symbolic link names the folder it points into (the folder
    the name is in may well exist); any other name, its folder as given.

    Example:
        >>> missing_folder("missing/rows.csv", Path("/w/missing/rows.csv"))
        'folder missing does not exist'
    """
    if os.path.islink(path):
        return f"the link points into {target.parent}, which does not exist"
    return f"folder {Path(path).parent} does not exist"


def check_current_folder(path: str | Path, flag: str) -> None:
    """Refuse a relative output ``path`` when the folder the command runs in was deleted (it has
    no name left to resolve the path against), in one line naming ``flag``; an absolute path
    needs no current folder.

    Example:
        >>> check_current_folder("out.csv", "-o")  # the current folder exists: nothing to say
    """
    if os.path.isabs(path):
        return
    try:
        os.getcwd()
    except FileNotFoundError:
        raise ParameterError(
            flag, str(path), "cannot write there: the current folder no longer exists (give an absolute path)"
        ) from None


def _why(exc: BaseException) -> str:
    # the system's words for a failed call (its strerror), else the exception's text
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def check_folder_takes_files(folder: str | Path, flag: str, text: str) -> None:
    """Refuse, in one line naming ``flag`` and the path ``text``, a folder that exists but takes no
    new file (``/proc``, a read-only mount, no write permission): the write would fail only after
    the run. A file is created there and removed, as the atomic write later does.

    Example:
        >>> import tempfile
        >>> check_folder_takes_files(tempfile.mkdtemp(), "-o", "out.json")
        >>> check_folder_takes_files("/proc", "--plot", "/proc/f.png")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --plot=/proc/f.png: cannot write in its folder /proc: it takes no new files
    """
    try:
        with open(Path(folder) / f".ppverify-probe-{secrets.token_hex(4)}", "xb") as fh:
            os.unlink(fh.name)  # written and gone: the folder takes files
    except (OSError, ValueError) as exc:  # read-only, no permission, a NUL byte in the name
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, FileNotFoundError):  # the folder exists: a virtual one (/proc) makes no files
            why = "it takes no new files"
        raise ParameterError(flag, text, f"cannot write in its folder {folder}: {why}") from None


def prepare_output_dir(path: str | Path, flag: str = "--save-dir") -> Path:
    """Create the folder ``path`` (and its parents) if need be and check that a file can be
    written in it, before a long run fills it; a path that is a file, or a folder that cannot be
    created or written, is a one-line :class:`~ppverify.core.errors.ParameterError`.

    Example:
        >>> import tempfile, os
        >>> d = os.path.join(tempfile.mkdtemp(), "out", "frontier")
        >>> prepare_output_dir(d).is_dir()
        True
        >>> prepare_output_dir("/dev/null")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --save-dir=/dev/null: exists and is not a folder
    """
    text = str(path)
    if not text.strip():
        raise ParameterError(flag, text, "give a folder name")
    check_current_folder(text, flag)  # `sd` in a deleted folder: no folder to make it in
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ParameterError(flag, text, "exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with open(out / f".ppverify-probe-{secrets.token_hex(4)}", "xb") as fh:
            os.unlink(fh.name)  # written and gone: the folder takes files
    except (OSError, ValueError) as exc:  # not creatable, read-only, a NUL byte in the name
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, FileNotFoundError):  # the folder exists: a virtual one (/proc) makes no files
            why = "it takes no new files"
        raise ParameterError(flag, text, f"cannot write there: {why}") from None
    return out


#: the characters ``surrogateescape`` makes of bytes it cannot decode (a file name's, in the C locale)
_ESCAPED_BYTES = re.compile("[\udc80-\udcff]")


def decoded_name(text: str) -> str:
    """``text`` (a file name, or text holding one) with the bytes Python could not decode in the
    locale's encoding decoded as UTF-8, for a file other programs read: in the C locale a name
    ``é`` arrives as ``"\\udcc3\\udca9"`` (``surrogateescape``), which UTF-8 cannot encode and
    JSON readers may refuse. Bytes that are not UTF-8 either are escaped with a backslash
    (``\\xe9``); text without such bytes is returned as it is.

    Example:
        >>> decoded_name("\\udcc3\\udca9t\\udce6\\udc97\\udca5.csv"), decoded_name("caf\\udce9.csv"), decoded_name("1f1b")
        ('ét日.csv', 'caf\\\\xe9.csv', '1f1b')
    """
    if not _ESCAPED_BYTES.search(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # another lone surrogate as well (U+D800): not a file's bytes
        return text


def atomic_write(path: str | Path, data: str | bytes, flag: str = "-o") -> Path:
    """Write ``data`` (text as UTF-8, the bytes of an undecoded file name in it as those bytes:
    :func:`decoded_name`) to ``path`` atomically; ``flag`` names the option in errors.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "s.json")
        >>> _ = atomic_write(f, "{}\\n"); open(f).read()
        '{}\\n'
        >>> atomic_write("/nonexistent-dir/x.json", "{}", "--save")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --save=/nonexistent-dir/x.json: cannot write there: folder /nonexistent-dir does not exist
    """
    raw = decoded_name(data).encode("utf-8", "backslashreplace") if isinstance(data, str) else data
    with atomic_path(path, flag) as tmp, open(tmp, "wb") as fh:
        fh.write(raw)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)
