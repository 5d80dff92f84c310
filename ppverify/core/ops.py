"""Ops and actions, and their text form (PyTorch pipelining's ``0F1``, ``2I3``, ``3SEND_F1``).

An :class:`Op` is one unit of compute: ``(kind, stage, mb)``. Its device is not stored: it follows
from the placement of the microbatch's pipe (see :mod:`ppverify.core.placement`).

A program (one device's list) holds *actions*: an ``Op``; an :class:`Overlap` of ops run as one
fused slot (DualPipe's F&B); a :class:`Comm` (explicit SEND/RECV); a :class:`Marker`
(UNSHARD/RESHARD/REDUCE_GRAD, kept for round trips, free in time); or ``None`` (an idle slot).

Ops are NamedTuples rather than dataclasses because schedules hold millions of them and
tuple construction and hashing are several times cheaper.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple, Union

F, B, I, W = "F", "B", "I", "W"
#: compute kinds, PyTorch's names: forward, full backward, input-grad backward, weight-grad backward
KINDS: tuple[str, ...] = (F, B, I, W)
KIND_CODE: dict[str, int] = {k: n for n, k in enumerate(KINDS)}
#: kinds that produce the gradient flowing to the previous stage
GRAD_KINDS: frozenset[str] = frozenset((B, I))
COMM_KINDS: tuple[str, ...] = ("SEND_F", "RECV_F", "SEND_B", "RECV_B")
MARKER_KINDS: tuple[str, ...] = ("UNSHARD", "RESHARD", "REDUCE_GRAD")


class Op(NamedTuple):
    """One compute op of a training step.

    Example:
        >>> Op("F", 0, 1)
        Op(kind='F', stage=0, mb=1)
        >>> str(Op("I", 2, 3))
        '2I3'
    """

    kind: str
    stage: int
    mb: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.mb}"


@dataclass(frozen=True)
class Comm:
    """An explicit point-to-point action: ``SEND_F``/``RECV_F``/``SEND_B``/``RECV_B`` of a stage.

    ``3SEND_F1`` is stage 3 sending its forward output of microbatch 1 to stage 4;
    ``4RECV_F1`` is stage 4 receiving it; ``SEND_B``/``RECV_B`` go the other way.

    Example:
        >>> str(Comm("SEND_F", 3, 1))
        '3SEND_F1'
    """

    kind: str
    stage: int
    mb: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.mb}"


@dataclass(frozen=True)
class Overlap:
    """Ops fused into one slot on one device (DualPipe's overlapped F&B).

    Its text is PyTorch's (CSV files, the ``torch`` table layout); :attr:`compact` is the short
    form the paper layout shows, which :func:`parse_action` reads too.

    Example:
        >>> o = Overlap((Op("F", 0, 7), Op("B", 7, 3)))
        >>> str(o), o.compact
        ('(0F7;7B3)OVERLAP_F_B', '0F7&7B3')
    """

    ops: tuple[Op, ...]

    def __str__(self) -> str:
        return "(" + ";".join(str(o) for o in self.ops) + ")OVERLAP_F_B"

    @property
    def compact(self) -> str:
        """The ops joined by ``&`` (7 characters for two one-digit ops instead of 20)."""
        return "&".join(str(o) for o in self.ops)


@dataclass(frozen=True)
class Marker:
    """A non-compute action kept for round trips (``0UNSHARD``, ``0RESHARD``, ``0REDUCE_GRAD``).

    Example:
        >>> str(Marker("REDUCE_GRAD", 0))
        '0REDUCE_GRAD'
    """

    kind: str
    stage: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}"


Action = Union[Op, Comm, Overlap, Marker, None]  # noqa: UP007 (a runtime alias: | on classes needs 3.10 types)

# digits are ASCII [0-9]: a str pattern's \d also takes other scripts' digits ("\u0660F0", which
# int() reads as 0F0), which no runtime writes
_OP_RE = re.compile(r"([0-9]+)([FBIW])([0-9]+)")
_COMM_RE = re.compile(r"([0-9]+)(SEND_F|RECV_F|SEND_B|RECV_B)([0-9]+)")
_MARKER_RE = re.compile(r"([0-9]+)(UNSHARD|RESHARD|REDUCE_GRAD)")
_OVERLAP_RE = re.compile(r"\(([^()]*)\)OVERLAP_F_B")
_COMPACT_OVERLAP_RE = re.compile(r"[0-9]+[FBIW][0-9]+(?:&[0-9]+[FBIW][0-9]+)+")


MAX_ACTION_DIGITS = 12
_LONG_NUMBER = re.compile(r"[0-9]{%d,}" % (MAX_ACTION_DIGITS + 1))


def _shorten(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:40] + f"... ({len(text)} characters)"


class ActionSyntaxError(ValueError):
    """Text that is not a valid action; the message names the text and the expected forms."""


def _f_and_b(text: str, ops: tuple[Op, ...]) -> Overlap:
    """An overlapped slot of exactly one forward and one backward (``B``, ``I`` or ``W``), as
    PyTorch's ``OVERLAP_F_B`` and DualPipe's overlapped chunks are: the slot is timed as one
    (``CostModel.overlap``), so two forwards or two backwards written as one would be a
    concurrency no runtime provides."""
    kinds = sorted(o.kind == F for o in ops)
    if kinds != [False, True]:
        raise ActionSyntaxError(
            f"{_shorten(text)} is not an action: an overlapped slot holds exactly one forward (F) and one "
            f"backward (B, I or W), here {', '.join(str(o) for o in ops)}"
        )
    return Overlap(ops)


def parse_action(text: str, compact: bool = True) -> Action:
    """Parse one action in PyTorch's text form; the whole string must match (no trailing junk).

    Empty text (or ``.``) is an idle slot, returned as ``None``. ``compact=False`` (a PyTorch CSV,
    whose own parser reads ``0F7&7B3`` as ``0F7``) refuses the short form ``0F7&7B3`` and leaves it
    out of the forms the error names.

    Example:
        >>> parse_action("2I3")
        Op(kind='I', stage=2, mb=3)
        >>> parse_action("(0F7;7B3)OVERLAP_F_B").ops[1]
        Op(kind='B', stage=7, mb=3)
        >>> parse_action("0F7&7B3") == parse_action("(0F7;7B3)OVERLAP_F_B")
        True
        >>> parse_action("0F1xyz")
        Traceback (most recent call last):
        ...
        ppverify.core.ops.ActionSyntaxError: '0F1xyz' is not an action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, (0F7;7B3)OVERLAP_F_B or 0F7&7B3, or empty for idle)
        >>> parse_action("\\u0660F0")  # an Arabic-Indic zero: not a digit of the grammar
        Traceback (most recent call last):
        ...
        ppverify.core.ops.ActionSyntaxError: '\u0660F0' is not an action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, (0F7;7B3)OVERLAP_F_B or 0F7&7B3, or empty for idle)
        >>> parse_action("0F7&7B3", compact=False)
        Traceback (most recent call last):
        ...
        ppverify.core.ops.ActionSyntaxError: '0F7&7B3' is not an action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, (0F7;7B3)OVERLAP_F_B, or empty for idle)
    """
    s = text.strip()
    if s in ("", "."):
        return None
    long = _LONG_NUMBER.search(s)
    if long:  # refused before int(): no stage or microbatch has 13 digits, and int() of 4,301 raises
        raise ActionSyntaxError(
            f"{_shorten(s)} is not an action: a stage or microbatch number of "
            f"{len(long.group())} digits (at most {MAX_ACTION_DIGITS})"
        )
    m = _OP_RE.fullmatch(s)
    if m:
        return Op(m.group(2), int(m.group(1)), int(m.group(3)))
    m = _COMM_RE.fullmatch(s)
    if m:
        return Comm(m.group(2), int(m.group(1)), int(m.group(3)))
    m = _MARKER_RE.fullmatch(s)
    if m:
        return Marker(m.group(2), int(m.group(1)))
    if compact and _COMPACT_OVERLAP_RE.fullmatch(s):  # the paper layout's short form, 0F7&7B3
        return _f_and_b(text, tuple(Op(k, int(st), int(mb)) for st, k, mb in _OP_RE.findall(s)))
    m = _OVERLAP_RE.fullmatch(s)
    if m:
        parts = [p.strip() for p in m.group(1).split(";")]
        ops = []
        for part in parts:
            mm = _OP_RE.fullmatch(part)
            if not mm:
                break
            ops.append(Op(mm.group(2), int(mm.group(1)), int(mm.group(3))))
        else:
            if len(ops) >= 2:
                return _f_and_b(text, tuple(ops))
    forms = "(0F7;7B3)OVERLAP_F_B or 0F7&7B3" if compact else "(0F7;7B3)OVERLAP_F_B"
    raise ActionSyntaxError(
        f"{_shorten(text)} is not an action (expected e.g. 0F1, 2I3, 3SEND_F1, 0UNSHARD, {forms}, or empty for idle)"
    )


def format_action(action: Action) -> str:
    """Text form of an action; an idle slot is the empty string.

    Example:
        >>> format_action(Op("W", 0, 3)), format_action(None)
        ('0W3', '')
    """
    return "" if action is None else str(action)


def compute_ops(program: Iterable[Action]) -> Iterator[Op]:
    """The compute ops of a program in order, expanding overlapped slots, skipping the rest.

    Example:
        >>> list(compute_ops([Op("F", 0, 0), None, Overlap((Op("F", 0, 1), Op("B", 1, 0)))]))
        [Op(kind='F', stage=0, mb=0), Op(kind='F', stage=0, mb=1), Op(kind='B', stage=1, mb=0)]
    """
    for a in program:
        if type(a) is Op:
            yield a
        elif type(a) is Overlap:
            yield from a.ops
