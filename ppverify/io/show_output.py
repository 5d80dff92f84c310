"""What ``ppverify show`` prints around its table, recognised so that ``ppverify show ... > t.txt``
reads back as a table (:func:`table_of_show`), on the placement show printed
(:func:`shown_placement`)."""

from __future__ import annotations

import re

from ..core.errors import ScheduleFileError
from ..core.placement import Placement

#: the labels of the lines ``ppverify show`` prints above its table, in order (the last two only
#: for a file with a comment or its own communication), each padded to :data:`_SHOW_LABEL` columns
_SHOW_HEAD = ("schedule", "placement", "costs", "comment", "file's comm")
_SHOW_LABEL = 14


def show_line(line: str, label: str) -> bool:
    """Whether ``line`` is the one ``ppverify show`` prints under ``label`` (padded to its
    column, then the value).

    Example:
        >>> show_line("schedule      gpipe p=2 m=2", "schedule"), show_line("schedule,0F0", "schedule")
        (True, False)
    """
    return line.startswith(f"{label:<{_SHOW_LABEL}}") and line[_SHOW_LABEL : _SHOW_LABEL + 1] not in ("", " ")


def table_of_show(text: str) -> str:
    """``text`` with the lines ``ppverify show`` prints around its table left out, so that
    ``ppverify show ... > t.txt`` reads back as a table: its ``schedule``/``placement``/``costs``
    (``comment``, ``file's comm``) lines above become blank (line numbers stay the file's) and
    everything from its ``makespan`` line on is dropped. Only show's own layout is recognised,
    line by line; any other text is returned as it is.

    Example:
        >>> shown = "schedule      gpipe p=1 m=1\\nplacement     linear\\ncosts         unit\\n\\ntick 0 1\\ndev 0 0F0 0B0\\n\\nmakespan      2 units"
        >>> table_of_show(shown).splitlines()
        ['', '', '', '', 'tick 0 1', 'dev 0 0F0 0B0']
        >>> table_of_show("tick 0\\ndev 0 0F0") == "tick 0\\ndev 0 0F0"
        True
    """
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    if first >= len(lines) or not show_line(lines[first].lstrip("\ufeff"), "schedule"):
        return text
    end, want = first + 1, 1
    while end < len(lines) and lines[end].strip():
        label = next((x for x in _SHOW_HEAD[want:] if show_line(lines[end], x)), None)
        if label is None:
            return text
        want = _SHOW_HEAD.index(label) + 1
        end += 1
    if want < 3:  # schedule, placement and costs, at least: show's header
        return text
    tail = next((i for i in range(end, len(lines)) if show_line(lines[i], "makespan")), len(lines))
    return "\n".join([""] * end + lines[end:tail])


_SHOWN_PLACEMENT = re.compile(
    r"placement {5}(?P<name>[^,]+), (?P<pipes>[0-9]+) pipes?, (?P<stages>[0-9]+) stages? on "
    r"(?P<p>[0-9]+) devices? \(device of each stage, (?P<maps>pipe 0: [0-9 ;pie:]+)\)"
)


def shown_placement(text: str) -> Placement | None:
    """The placement ``ppverify show`` printed above its table (its ``placement`` line: name and
    the device of each stage, per pipe), or ``None`` when ``text`` is no show output or the line
    does not read whole; a two-pipe table saved from ``show`` reads back on its own placement.

    Example:
        >>> shown = "schedule      chimera p=2 m=2\\nplacement     bidirectional, 2 pipes, 2 stages on 2 devices (device of each stage, pipe 0: 0 1; pipe 1: 1 0)\\ncosts         unit\\n\\ntick 0\\ndev 0 0F0\\ndev 1 0F1"
        >>> pl = shown_placement(shown)
        >>> pl.name, pl.maps
        ('bidirectional', ((0, 1), (1, 0)))
        >>> shown_placement("tick 0\\ndev 0 0F0") is None
        True
    """
    if table_of_show(text) is text:
        return None
    line = next((x for x in text.splitlines() if show_line(x, "placement")), "")
    mt = _SHOWN_PLACEMENT.fullmatch(line.rstrip())
    if mt is None:
        return None
    maps: list[tuple[int, ...]] = []
    for k, part in enumerate(mt.group("maps").split("; ")):
        label, _, devices = part.partition(": ")
        if label != f"pipe {k}" or not devices:
            return None
        maps.append(tuple(int(d) for d in devices.split()))
    p, stages = int(mt.group("p")), int(mt.group("stages"))
    if len(maps) != int(mt.group("pipes")) or any(len(mp) != stages or max(mp) >= p for mp in maps):
        return None
    return Placement(p, tuple(maps), mt.group("name"))


def shown_table(text: str, path: str) -> str:
    """:func:`table_of_show` of ``text``, refusing show's output printed without its table.

    Example:
        >>> shown_table("tick 0\\ndev 0 0F0", "t.txt")
        'tick 0\\ndev 0 0F0'
        >>> shown_table("schedule      gpipe p=1 m=1\\nplacement     linear\\ncosts         unit\\n\\nmakespan      2 units", "t.txt")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: t.txt: line 1: ppverify show's output without its table (--no-table): no table to read
    """
    table = table_of_show(text)
    if table is not text and not table.strip():
        raise ScheduleFileError(
            path, "line 1", "ppverify show's output without its table (--no-table): no table to read"
        )
    return table
