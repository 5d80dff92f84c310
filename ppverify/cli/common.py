"""Arguments and helpers shared by subcommands: where the schedule comes from (a family and its
parameters, or a file), the cost model, and output (text or ``--json``)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import InvalidScheduleError, ParameterError, ScheduleFileError
from ..core.schedule import Schedule
from ..io.json_format import ScheduleDocument
from .cost_args import (  # re-exported (X as X): the commands import them from here
    add_cost_arguments as add_cost_arguments,
)
from .cost_args import check_costs_first as check_costs_first
from .cost_args import check_nonnegative as check_nonnegative
from .cost_args import costs_from_args as costs_from_args
from .cost_args import parsed_costs as parsed_costs
from .deprecated import DeprecatedAlias as DeprecatedAlias  # re-exported: commands import them from here
from .deprecated import warn_deprecated as warn_deprecated
from .json_output import print_json as print_json  # re-exported: commands import it from here


class _Given(argparse.Action):
    """Store the value and note that it was given (``p_given``): ``-p`` has a default, and a
    schedule file refuses a ``-p`` it would ignore but not the default."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def ascii_int(text: str) -> int:
    """An integer option's value, in ASCII digits only: ``int()`` also reads other scripts' digits
    (``-p \u0664`` as 4), which ppverify's schedule text refuses; refused with argparse's usual message.

    Example:
        >>> ascii_int("4"), ascii_int(" -2 ")
        (4, -2)
        >>> ascii_int("\u0664")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: invalid int value: '٤'
    """
    try:
        if not text.isascii():  # argparse's message for any text int() refuses
            raise ValueError(text)
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None


#: ``--placement``'s help, declared once for every command that reads a schedule file
PLACEMENT_HELP = (
    "for a text table (.txt): where its stages live: linear (default), loop (with --v), v, wave (with --waves), "
    "bidirectional (with --offset)"
)


def add_schedule_arguments(
    parser: argparse.ArgumentParser,
    optional: bool = False,
    help: str | None = None,
    as_option: bool = False,
    placement: bool = False,
    p_help: str = "pipeline devices (default 4)",
    m_help: str = "microbatches per step (default: p)",
) -> None:
    """``SCHEDULE`` (a family name or a schedule file; ``optional``: may be left out; ``as_option``:
    the option ``--schedule`` instead of a positional), ``-p``, ``-m`` (``p_help``, ``m_help``:
    their help, for a command that sizes them otherwise), every family parameter known to the
    registry (``--v``, ``--waves`` ...) and, with ``placement``, ``--placement`` (a text table's,
    read by :func:`load_document`).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_schedule_arguments(parser, optional=True, placement=True)
        >>> ns = parser.parse_args(["-p", "2", "--v", "3"])
        >>> ns.schedule, ns.p, ns.m, ns.fam_v, ns.placement
        (None, 2, None, 3, None)
    """
    from ..schedules import families

    nargs: dict[str, Any] = {} if as_option else {"nargs": "?" if optional else None}  # an option may be left out
    parser.add_argument(
        *(("--schedule",) if as_option else ("schedule",)),
        metavar="FAMILY|FILE",
        **nargs,
        default=None,
        help=help or "a registered family (see `ppverify list`) or a schedule file (.json, .csv, .txt)",
    )
    parser.add_argument("-p", type=int, default=4, action=_Given, help=p_help)
    parser.add_argument("-m", type=int, default=None, help=m_help)
    taking: dict[str, list[Any]] = {}  # each option once, with every family that takes it
    for fam in families():
        for pr in fam.params:
            taking.setdefault(pr.name, []).append((fam, pr))
    for name, users in taking.items():
        fam, pr = users[0]
        defaults = {str(q.default) for _, q in users}
        shown = "" if pr.default is None or len(defaults) > 1 else f"; default {pr.default}"
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"fam_{name}",
            type=pr.type,
            default=None,
            metavar=name.upper(),
            help=f"{pr.help} ({', '.join(f.name for f, _ in users)}{shown})",
        )
    if placement:  # after --v, --waves and --offset, which go with it
        parser.add_argument("--placement", default=None, metavar="NAME", help=PLACEMENT_HELP)


@dataclass(frozen=True)
class ScheduleSource:
    """Where a command's schedule comes from, as typed values: ``name`` (a family or a file;
    ``None`` when not given), ``p``, ``m`` (``None``: ``p``), the family parameters given
    (``(name, value)`` pairs, each option ``--v``, ``--waves`` ...) and ``--placement`` (a text
    table's). Read from the arguments once by :func:`schedule_source`.

    Example:
        >>> ScheduleSource("1f1b", 2, None).params
        ()
    """

    name: str | None
    p: int
    m: int | None
    params: tuple[tuple[str, Any], ...] = ()
    placement: str | None = None
    #: whether ``-p`` was given (it has a default): a schedule file refuses one it would ignore
    p_given: bool = False

    def param(self, name: str) -> Any:
        """The family parameter ``name`` as given, ``None`` when not given.

        Example:
            >>> ScheduleSource("interleaved-1f1b", 2, 4, (("v", 3),)).param("v")
            3
        """
        return dict(self.params).get(name)


def schedule_source(args: argparse.Namespace) -> ScheduleSource:
    """The schedule options of ``args`` (:func:`add_schedule_arguments`, ``--placement``) as a
    :class:`ScheduleSource`.

    Example:
        >>> schedule_source(argparse.Namespace(schedule="1f1b", p=2, m=None, fam_v=3, fam_waves=None))
        ScheduleSource(name='1f1b', p=2, m=None, params=(('v', 3),), placement=None, p_given=False)
    """
    params = tuple((k[4:], v) for k, v in sorted(vars(args).items()) if k.startswith("fam_") and v is not None)
    return ScheduleSource(
        getattr(args, "schedule", None),
        args.p,
        args.m,
        params,
        getattr(args, "placement", None),
        bool(getattr(args, "p_given", False)),
    )


def schedule_name(source: ScheduleSource) -> str:
    """The family or file ``source`` names; refused when none was given (a command whose schedule
    is optional checks that before it builds one).

    Example:
        >>> schedule_name(ScheduleSource("1f1b", 2, None))
        '1f1b'
        >>> schedule_name(ScheduleSource(None, 2, None))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter schedule=None: a registered family or a schedule file is required
    """
    if source.name is None:
        raise ParameterError("schedule", None, "a registered family or a schedule file is required")
    return source.name


def build_schedule(source: ScheduleSource) -> Schedule:
    """Build (family) or load (file, by :func:`read_document`) the schedule ``source`` names.

    Example:
        >>> build_schedule(ScheduleSource("1f1b", 2, None)).describe()
        '1f1b p=2 m=2'
    """
    return read_document(source)[0].schedule


@contextmanager
def file_faults(source: ScheduleSource, schedule: Schedule) -> Iterator[None]:
    """Run a block that times the schedule ``source`` names; a structural fault or a deadlock the
    engines find in a schedule *file* is re-raised naming the file, as bad input is
    (``s.json: programs: op 0B0 is missing (should run on device 0)``). A family's is left as is.

    Example:
        >>> from ppverify.core.errors import InvalidScheduleError
        >>> from ppverify.schedules import build
        >>> s = build("1f1b", p=2, m=2)
        >>> with file_faults(ScheduleSource("s.json", 2, None), s):
        ...     raise InvalidScheduleError("1f1b p=2 m=2: op 0B0 is missing (should run on device 0)")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.json: programs: op 0B0 is missing (should run on device 0)
    """
    from ..io import looks_like_file

    try:
        yield
    except InvalidScheduleError as exc:
        name = source.name
        if name is None or not looks_like_file(name):
            raise
        # the engines name the schedule as it describes itself (a JSON file's family): the file instead
        rule = str(exc).removeprefix(f"{schedule.describe()}: ")
        raise ScheduleFileError(name, "programs", rule) from exc


def _build_family(source: ScheduleSource) -> Schedule:
    """The family ``source`` names, built with its parameters (each checked to be the family's)."""
    from ..schedules import build, get_family

    fam = get_family(schedule_name(source))
    check_family_options(fam.name, tuple(pr.name for pr in fam.params), source.params)
    params = {pr.name: source.param(pr.name) for pr in fam.params}
    m = source.m if source.m is not None else source.p
    try:
        schedule = build(fam.name, source.p, m, **params)
    except ParameterError as exc:
        if source.m is not None:
            raise
        from ..schedules.family_checks import default_m_refused

        # -m left out: say that m = p was the default, and which -m the family takes
        raise default_m_refused(exc, fam.name, source.p, params) from None
    if fam.notes is not None:  # a parameter given that changes nothing here: said, not ignored
        from .file_settings import print_notes

        # the values as the build read them (a word in any case: --units CONCAT is concat)
        print_notes(fam.notes(source.p, m, **fam.arguments(params)))
    return schedule


def check_family_options(family: str, declared: tuple[str, ...], given: tuple[tuple[str, Any], ...]) -> None:
    """Refuse a family option (``--v``, ``--waves`` ...) that ``family`` does not declare: the
    build would ignore it, and ``1f1b --v 2`` would print plain 1F1B as if it were interleaved.

    Example:
        >>> check_family_options("interleaved-1f1b", ("v", "order"), (("v", 3),))
        >>> check_family_options("1f1b", (), (("v", 2),))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter v=2: 1f1b has no parameter --v (it takes none; see ppverify list): leave it out
    """
    takes = ", ".join(f"--{d.replace('_', '-')}" for d in declared) or "none"
    for pname, value in given:
        if pname not in declared:
            raise ParameterError(
                pname,
                value,
                f"{family} has no parameter --{pname.replace('_', '-')} (it takes {takes}; see ppverify list): "
                "leave it out",
            )


def check_file_options(source: ScheduleSource, schedule: Schedule, taken: tuple[str, ...] = ()) -> Schedule:
    """Refuse what a schedule file would ignore: a family option (a file carries its schedule)
    and a ``-p`` or ``-m`` other than the file's; ``taken``: the options a text table reads.
    Returns ``schedule``.

    Example:
        >>> from ppverify.schedules import build
        >>> check_file_options(ScheduleSource("s.json", 4, 8, (("v", 2),)), build("1f1b", 4, 8))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter v=2: --v shapes a family; s.json is a schedule file, which carries its own schedule: leave it out
        >>> check_file_options(ScheduleSource("s.json", 8, None, p_given=True), build("1f1b", 4, 8))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter p=8: s.json holds a schedule of p=4: leave -p out (the file decides), or give -p 4
    """
    for name, value in source.params:
        if name not in taken:
            raise ParameterError(
                name,
                value,
                f"--{name.replace('_', '-')} shapes a family; {source.name} is a schedule file, which carries its "
                "own schedule: leave it out",
            )
    for flag, given, held in (("p", source.p if source.p_given else None, schedule.p), ("m", source.m, schedule.m)):
        if given is not None and given != held and flag not in taken:
            raise ParameterError(
                flag,
                given,
                f"{source.name} holds a schedule of {flag}={held}: leave -{flag} out (the file decides), "
                f"or give -{flag} {held}",
            )
    return schedule


def schedule_from_args(args: argparse.Namespace) -> Schedule:
    """Build (family) or load (file) the schedule the arguments name (``--costs`` checked first).

    Example:
        >>> ns = argparse.Namespace(schedule="1f1b", p=2, m=None)
        >>> schedule_from_args(ns).describe()
        '1f1b p=2 m=2'
    """
    check_costs_first(args)
    return build_schedule(schedule_source(args))


#: names that say "a text table" (paper layout or PyTorch's printed grid): a file whose content
#: does not say what it holds is read as one (:func:`read_document`), and ``show --save`` refuses them
TABLE_SUFFIXES = (".txt", ".table")


def document_from_args(args: argparse.Namespace) -> ScheduleDocument:
    """:func:`load_document` of the arguments' :func:`schedule_source` (``--costs`` checked first).

    Example:
        >>> ns = argparse.Namespace(schedule="gpipe", p=2, m=None, placement=None)
        >>> doc = document_from_args(ns)
        >>> doc.schedule.describe(), doc.table is None
        ('gpipe p=2 m=2', True)
    """
    check_costs_first(args)
    return load_document(schedule_source(args))


def load_document(source: ScheduleSource) -> ScheduleDocument:
    """The schedule ``source`` names with what its file carries (:func:`read_document`): the one
    loader of every command that reads a schedule file, so that each reads a file by its content
    and a text table with ``--placement`` alike.

    Example:
        >>> doc = load_document(ScheduleSource("gpipe", 2, None))
        >>> doc.schedule.describe(), doc.table is None
        ('gpipe p=2 m=2', True)
    """
    return read_document(source)[0]


def read_document(source: ScheduleSource) -> tuple[ScheduleDocument, str]:
    """The schedule ``source`` names with what its file carries, and what it was read as:
    ``"family"``, or what the file holds by its content (``"json"``, ``"csv"``, ``"table"``; by
    its extension when the content does not say, as :func:`~ppverify.io.load_schedule` decides).
    A ppverify JSON file brings its costs and table; a text table brings its grid and is read
    with ``--placement`` (``loop`` takes ``--v``, ``wave`` ``--waves``, ``bidirectional``
    ``--offset``; without it linear over its rows, or the one-pipe map its rows show when it
    names more stages, as :func:`~ppverify.io.table_text.schedule_from_programs` reads it) and
    ``-m``. Anything else refuses ``--placement``: it carries its own.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")  # a PyTorch CSV, whatever its name says
        >>> with open(path, "w") as f:
        ...     print("0F0,0F1,0B0,0B1", file=f)
        ...     print("1F0,1F1,1B0,1B1", file=f)
        >>> doc, kind = read_document(ScheduleSource(path, 4, None))
        >>> kind, doc.schedule.p, doc.schedule.m
        ('csv', 2, 2)
        >>> read_document(ScheduleSource(path, 4, None, placement="v"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter placement=v: only a text table (.txt) takes --placement; ...run.txt holds a PyTorch pipelining CSV, placed as its rows show (`ppverify import ...run.txt --placement v` reads it otherwise)
    """
    from ..core.files import read_text
    from ..core.text_formats import csv_rows
    from ..io import FORMATS, content_kind, load_schedule, looks_like_file
    from ..io.torch_csv import parse_file_rows

    name = schedule_name(source)
    if not looks_like_file(name):
        _refuse_placement(source, f"{name} is a family, which carries its own")  # before a build of minutes
        return ScheduleDocument(_build_family(source)), "family"
    suffix = Path(name).suffix.lower()
    if suffix not in FORMATS:  # not found, or an unknown format: refused as every reader refuses it
        return ScheduleDocument(check_file_options(source, load_schedule(name))), "file"
    text = read_text(name)  # once, for every format: size, encoding and byte-order mark alike
    kind = content_kind(text, name)
    if kind == "table":
        return _table_document(source, text), kind
    if kind == "json":
        from ..io.json_format import loads_document

        _refuse_placement(source, f"{name} holds a ppverify JSON schedule, which carries its own")
        doc = loads_document(text, name)
        check_file_options(source, doc.schedule)
        return doc, kind
    why = f"{name} holds a PyTorch pipelining CSV, placed as its rows show"
    _refuse_placement(source, f"{why} (`ppverify import {name} --placement {source.placement}` reads it otherwise)")
    # io's own reader, on the text read above, with -m looked at before any gap (as a table's)
    schedule = parse_file_rows(csv_rows(text, name), name, source.m)
    return ScheduleDocument(check_file_options(source, schedule)), kind


def _refuse_placement(source: ScheduleSource, why: str) -> None:
    """Refuse ``--placement`` beside a schedule that is not a text table: it would be ignored."""
    if source.placement:
        raise ParameterError("placement", source.placement, f"only a text table (.txt) takes --placement; {why}")


def _table_document(source: ScheduleSource, text: str) -> ScheduleDocument:
    """A text table's schedule, read with ``source``'s ``--placement`` (with its ``--v``,
    ``--waves`` or ``--offset``) and ``-m``, and its grid."""
    from ..core.placement import placement_from_text
    from ..io.table_text import read_text_table, schedule_from_programs, shown_placement

    path = Path(schedule_name(source))
    programs, cells = read_text_table(text, str(path))
    placement, pl = source.placement, None
    extra = {k: source.param(k) for k in ("v", "waves", "offset")}
    reads = {"v": "loop", "waves": "wave", "offset": "bidirectional"}
    for k, value in extra.items():  # linear or another placement would drop it without a word
        if value is not None and str(placement or "").strip().lower() != reads[k]:
            raise ParameterError(
                k, value, f"reads a {reads[k]} table: give --placement {reads[k]} with it, or leave it out"
            )
    if programs and placement:  # else show's own placement line, linear, or the one-pipe map the rows show
        pl = placement_from_text(placement, len(programs), **extra)
    elif programs and (shown := shown_placement(text)) is not None and shown.p == len(programs):
        pl = shown  # a table saved from show (show ... > t.txt): on the placement show printed
    schedule = schedule_from_programs(programs, pl, source.m, None, "table", {"file": path.name}, str(path))
    check_file_options(source, schedule, taken=("m", "v", "waves", "offset"))
    return ScheduleDocument(schedule, table=cells)


def given_or(value: Any, default: Any) -> Any:
    """``value`` unless the option was not given (``None``): a given 0 stays 0, so that the
    validation downstream refuses it instead of silently using the default.

    Example:
        >>> given_or(None, 1), given_or(0, 1)
        (1, 0)
    """
    return default if value is None else value


def measured_from_trace(paths: list[str] | None, predicted: Any) -> dict[str, Any]:
    """``{"measured": ...}``: the step of the profiler traces at ``paths`` beside the timeline
    ``predicted`` (``simulate --measured-trace``; :func:`ppverify.compare.trace_check.measured_beside`),
    or ``{}`` without traces.

    Example:
        >>> measured_from_trace(None, None)
        {}
    """
    if not paths:
        return {}
    from ..compare.trace_check import measured_beside

    return {"measured": measured_beside(paths, predicted)}
