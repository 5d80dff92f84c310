"""Limits checked before work: how many ops a command may build, how large a file, a number or a
nesting may be. Each check raises :class:`LimitError` (a :class:`~ppverify.core.errors.PPVerifyError`:
one line, exit 2) naming the value and the rule *before* anything proportional to it is allocated,
so hostile input is refused in well under a second instead of exhausting memory or time.

The op limit is set per command (``ppverify --max-ops N``) with :func:`op_limit`; it is a context
variable rather than a parameter threaded through every builder and loader, scoped to one call.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from typing import Any

from .errors import PPVerifyError

#: default of ``--max-ops``: compute ops one command may build or load (F, B, I, W each count 1)
DEFAULT_MAX_OPS = 50_000_000
#: largest schedule, preset or config file read, in bytes
MAX_FILE_BYTES = 64 * 2**20
#: most digits of an integer in a file (stage, microbatch, rank, count): 10**12 is past any real size
MAX_INT_DIGITS = 12
#: deepest nesting of lists and objects in a JSON file (a schedule file needs 4)
MAX_JSON_DEPTH = 64
#: a file may imply at most this many times the ops it holds (plus the slack below): missing ops
#: are reported one by one, so a few are a verdict and a million are a refusal
SPARSE_FACTOR, SPARSE_SLACK = 4, 10_000
#: most points (rows) one sweep config may expand to
MAX_SWEEP_POINTS = 1_000_000
#: largest number an option or preset may give (seconds, bytes, units): beyond, sums overflow
MAX_NUMBER = 1e15
#: longest cell of a CSV or text table (an action is a few characters; an overlapped slot tens)
MAX_CELL_CHARS = 1024
#: default of ``--max-memory-gib``: memory a command may plan to use (estimated before it builds)
DEFAULT_MAX_MEMORY_GIB = 2.0
#: largest ``--max-memory-gib`` accepted (a mebibyte short of a pebibyte: past any machine)
MAX_MEMORY_GIB = 2.0**20
#: memory of a command that builds or loads ops (show, simulate, verify, export ...), estimated from
#: the ops before any is built: the interpreter with its libraries, plus per op (the op, its place in
#: the programs, its timeline entry and table cell). Measured peaks (RSS, 2-core machine, Python
#: 3.11): 180 MiB at 48 ops; about 420 B per op more at 3e5 to 9e5 ops (show of 1f1b and of
#: interleaved-1f1b --v 2000); the constants are above both. With the default 2 GiB the op limit
#: is about 3 million: ``show 1f1b -p 1000 -m 10000`` (3e7 ops, a MemoryError after 3.8 GB) and
#: ``show interleaved-1f1b -p 8 -m 8 --v 100000`` (1.9e7, 6.7 GB at 123 s) are refused at once
OPS_BASE_BYTES, BYTES_PER_OP = 192 * 2**20, 640
#: memory per op of a schedule read from a CSV file (a PyTorch CSV, a table), counted from its
#: non-empty cells as soon as the text is read: the cells, their parsed actions, the per-cell
#: checks and the schedule built from them. Measured peaks of ``verify`` of 1F1B's PyTorch CSV at
#: p = 4 (RSS, Python 3.11): 398 MiB at 1e5 ops, 640 MiB at 2e5, 1350 MiB at 5e5, about 2.5 KB
#: per op more (a JSON file of 2e5 ops: 253 MiB, within :data:`BYTES_PER_OP`); 3 KB keeps a margin
CSV_BYTES_PER_OP = 3072

_MAX_OPS: contextvars.ContextVar[int] = contextvars.ContextVar("ppverify_max_ops", default=DEFAULT_MAX_OPS)
_MAX_MEMORY: contextvars.ContextVar[float] = contextvars.ContextVar(
    "ppverify_max_memory_gib", default=DEFAULT_MAX_MEMORY_GIB
)
#: extra stages per device of families whose parameters do not say it (V-shaped placements)
_CHUNKS = {"zbv": 2, "dualpipev": 2, "v-min": 2, "v-half": 2}


class LimitError(PPVerifyError):
    """An input implies more work or memory than a documented limit allows.

    Example:
        >>> str(LimitError("-p 100000 -m 100000", "implies 3e+10 ops; the limit is 5e+07"))
        '-p 100000 -m 100000: implies 3e+10 ops; the limit is 5e+07'
    """

    def __init__(self, what: str, rule: str) -> None:
        self.what, self.rule = what, rule
        super().__init__(f"{what}: {rule}")


def max_ops() -> int:
    """The op limit in force (``--max-ops``; :data:`DEFAULT_MAX_OPS` unless set by :func:`op_limit`).

    Example:
        >>> max_ops() == DEFAULT_MAX_OPS
        True
    """
    return _MAX_OPS.get()


@contextlib.contextmanager
def op_limit(n: int) -> Iterator[None]:
    """Run a block with another op limit (what ``ppverify --max-ops N`` does for one command).

    Example:
        >>> with op_limit(10):
        ...     max_ops()
        10
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LimitError(f"--max-ops {n}", "must be an integer >= 1")
    token = _MAX_OPS.set(n)
    try:
        yield
    finally:
        _MAX_OPS.reset(token)


def check_ops(n: int, what: str, up_to: bool = False) -> None:
    """Refuse ``n`` ops (what ``what`` implies) when over the limit in force; ``up_to``: ``n`` is
    an upper bound (a family counted at F, I and W per stage and microbatch), and is said so.

    Example:
        >>> check_ops(10, "gpipe -p 1 -m 5")
        >>> with op_limit(8):
        ...     check_ops(10, "gpipe -p 1 -m 5")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: gpipe -p 1 -m 5: implies 10 ops, over the limit of 8 (raise it with ppverify --max-ops N)
    """
    limit = max_ops()
    if n > limit:
        shown = f"{n}" if n < 10**15 else f"{float(n):.3g}"
        raise LimitError(
            what,
            f"implies {'up to ' if up_to else ''}{shown} ops, over the limit of {limit} (raise it with ppverify --max-ops N)",
        )
    ops = f"up to {n} ops" if up_to else f"{n} ops"
    check_memory(ops_memory(n), what, f"{ops}: {OPS_BASE_BYTES // 2**20} MiB + {BYTES_PER_OP} B per op")


def ops_memory(n: int, per_op: int = BYTES_PER_OP) -> int:
    """Bytes a command that builds or loads ``n`` ops is estimated to need at its peak (see
    :data:`BYTES_PER_OP`; ``per_op`` :data:`CSV_BYTES_PER_OP` for ops read from a CSV file);
    :func:`check_ops` and :func:`check_csv_cells` refuse it over ``--max-memory-gib``.

    Example:
        >>> ops_memory(1_000_000) / 2**20
        802.3515625
        >>> ops_memory(500_000, CSV_BYTES_PER_OP) / 2**20  # 192 MiB + 500,000 x 3,072 B = 192 + 1464.84375 MiB
        1656.84375
    """
    return OPS_BASE_BYTES + n * per_op


def check_csv_cells(n: int, what: str) -> None:
    """Refuse a CSV schedule of ``n`` non-empty cells (about one op each) whose estimated memory
    (:func:`ops_memory` at :data:`CSV_BYTES_PER_OP`) is over ``--max-memory-gib``, before any cell
    is parsed.

    Example:
        >>> check_csv_cells(500_000, "s.csv")
        >>> with memory_limit(1):
        ...     check_csv_cells(500_000, "s.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: s.csv: needs about 1.618 GiB of memory (500000 ops of a CSV file: 192 MiB + 3072 B per op), over the limit of 1 GiB (raise it with ppverify --max-memory-gib X)
    """
    check_memory(
        ops_memory(n, CSV_BYTES_PER_OP),
        what,
        f"{n} ops of a CSV file: {OPS_BASE_BYTES // 2**20} MiB + {CSV_BYTES_PER_OP} B per op",
    )


def max_memory_gib() -> float:
    """The memory limit in force, in GiB (``--max-memory-gib``; :data:`DEFAULT_MAX_MEMORY_GIB`
    unless set by :func:`memory_limit`).

    Example:
        >>> max_memory_gib() == DEFAULT_MAX_MEMORY_GIB
        True
    """
    return _MAX_MEMORY.get()


@contextlib.contextmanager
def memory_limit(gib: float) -> Iterator[None]:
    """Run a block with another memory limit in GiB (what ``ppverify --max-memory-gib X`` does).

    Example:
        >>> with memory_limit(0.5):
        ...     max_memory_gib()
        0.5
    """
    import math

    if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not (math.isfinite(gib) and gib > 0):
        raise LimitError(f"--max-memory-gib {gib}", "must be a finite number of GiB > 0")
    if gib > MAX_MEMORY_GIB:
        raise LimitError(f"--max-memory-gib {gib}", f"must be at most {MAX_MEMORY_GIB:g}")
    token = _MAX_MEMORY.set(float(gib))
    try:
        yield
    finally:
        _MAX_MEMORY.reset(token)


def check_memory(needed_bytes: float, what: str, how: str = "") -> None:
    """Refuse a build that ``what`` implies when its estimated peak, ``needed_bytes`` (``how``:
    how it was estimated), is over the memory limit in force.

    Example:
        >>> check_memory(2**30, "optimize -p 4 -m 8")
        >>> check_memory(3 * 2**30, "optimize -p 4 -m 8", "1 KB per op")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: optimize -p 4 -m 8: needs about 3 GiB of memory (1 KB per op), over the limit of 2 GiB (raise it with ppverify --max-memory-gib X)
    """
    limit = max_memory_gib()
    if needed_bytes > limit * 2**30:
        shown = f"{needed_bytes / 2**30:.4g}"
        why = f" ({how})" if how else ""
        raise LimitError(
            what,
            f"needs about {shown} GiB of memory{why}, over the limit of {limit:g} GiB "
            "(raise it with ppverify --max-memory-gib X)",
        )


def family_ops(name: str, p: int, m: int, params: dict[str, Any]) -> int:
    """An upper bound on the compute ops of family ``name`` at ``(p, m, params)``: 3 per stage and
    microbatch (F, I, W), with ``v`` chunks, ``2 * waves`` or two V chunks per device.

    Example:
        >>> family_ops("1f1b", 4, 8, {}), family_ops("interleaved-1f1b", 4, 8, {"v": 3})
        (96, 288)
    """
    chunks = _CHUNKS.get(name, 1)
    for key, factor in (("v", 1), ("waves", 2)):
        val = params.get(key)
        if isinstance(val, int) and not isinstance(val, bool) and val > 0:
            chunks *= factor * val
    return 3 * max(p, 1) * max(m, 1) * chunks


def check_family(name: str, p: int, m: int, params: dict[str, Any]) -> None:
    """Refuse a family build over the op limit before generating anything.

    Example:
        >>> check_family("gpipe", 100000, 100000, {})
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: gpipe -p 100000 -m 100000: implies up to 30000000000 ops, over the limit of 50000000 (raise it with ppverify --max-ops N)
    """
    extra = "".join(f" --{k} {v}" for k, v in params.items() if isinstance(v, int) and not isinstance(v, bool))
    check_ops(family_ops(name, p, m, params), f"{name} -p {p} -m {m}{extra}", up_to=True)


def check_stages_mbs(num_stages: int, m: int, where: str, held: int | None = None) -> None:
    """Refuse a file whose stage and microbatch counts imply too many ops (a schedule holds at
    least an F and a B of every stage and microbatch), or, given the ``held`` compute ops, far more
    than it holds (:data:`SPARSE_FACTOR` times, plus :data:`SPARSE_SLACK`): one ``0F1000000`` in a
    small file is a typo or an attack, not a step of a million microbatches to check one by one.

    Example:
        >>> check_stages_mbs(1_000_000_000, 1, "s.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: s.csv: 1000000000 stages x 1 microbatches: implies 2000000000 ops, over the limit of 50000000 (raise it with ppverify --max-ops N)
        >>> check_stages_mbs(2, 100000, "s.csv", held=8)
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: s.csv: 2 stages x 100000 microbatches: imply 400000 ops but the file holds 8; at most 4 x 8 + 10000 are checked (is a stage or microbatch number mistyped?)
    """
    implied = 2 * max(num_stages, 1) * max(m, 1)
    what = f"{where}: {num_stages} stages x {m} microbatches"
    check_ops(implied, what)
    if held is not None and implied > SPARSE_FACTOR * held + SPARSE_SLACK:
        raise LimitError(
            what,
            f"imply {implied} ops but the file holds {held}; at most {SPARSE_FACTOR} x {held} + "
            f"{SPARSE_SLACK} are checked (is a stage or microbatch number mistyped?)",
        )


def int_text(text: str, where: str, digits: int = MAX_INT_DIGITS) -> int:
    """``int(text)`` for a decimal written in a file, refusing more than ``digits`` digits first
    (Python refuses over 4,300 with a ValueError, and far fewer already mean no real schedule).

    Example:
        >>> int_text("12", "row 1")
        12
        >>> int_text("9" * 20, "row 1")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: row 1: a number of 20 digits; at most 12 are allowed
    """
    s = text.strip()
    if len(s.lstrip("+-")) > digits:
        raise LimitError(where, f"a number of {len(s.lstrip('+-'))} digits; at most {digits} are allowed")
    return int(s)


def line_col(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of character ``index`` of ``text``.

    Example:
        >>> line_col("ab\\ncd", 4)
        (2, 2)
    """
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


# ASCII digits only, as every reader takes them: a str pattern's \d also matches other scripts'
# digits ("\u0663"), which no reader parses, so a long run of them is text, not a number
_LONG_DIGITS = re.compile(r"[0-9]{%d,}" % (MAX_INT_DIGITS + 1))
# an integer only: a float's integer part (digits followed by "." or an exponent) is left to the
# MAX_NUMBER range check (1401975668736.0 bytes, GPT-3 175B's weights on a device, is a fine float)
_LONG_INT = re.compile(r"(?<![\w.])-?[0-9]{%d,}(?![0-9.eE])" % (MAX_INT_DIGITS + 1))
_CONSTANT = re.compile(r"(?<![\w.])-?(?:NaN|Infinity)(?![\w.])")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_INNER = re.compile(r"\[[^\[\]{}]*\]|\{[^\[\]{}]*\}")


def check_digits(text: str, path: str) -> None:
    """Refuse a run of more than :data:`MAX_INT_DIGITS` digits anywhere in ``text`` (a table or
    YAML file), naming its line and column, before any ``int()`` sees it.

    Example:
        >>> check_digits("dev 0 0F0\\ndev 1 1F" + "9" * 20, "t.txt")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: t.txt:2:9: a number of 20 digits; at most 12 are allowed
    """
    hit = _LONG_DIGITS.search(text)
    if hit:
        line, col = line_col(text, hit.start())
        raise LimitError(
            f"{path}:{line}:{col}", f"a number of {len(hit.group())} digits; at most {MAX_INT_DIGITS} are allowed"
        )


def check_json_text(text: str, path: str) -> None:
    """Refuse JSON text that nests deeper than :data:`MAX_JSON_DEPTH` or writes an integer of more
    than :data:`MAX_INT_DIGITS` digits, naming the line and column; linear in the text (each of the
    at most ``MAX_JSON_DEPTH`` passes is one regular-expression scan).

    Example:
        >>> check_json_text('{"p": [1, 2]}', "s.json")
        >>> check_json_text('{"weight_bytes": 1401975668736.0}', "s.json")  # a float: range-checked
        >>> check_json_text('{"m": 1401975668736}', "s.json")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: s.json:1:7: a number of 13 digits; at most 12 are allowed
        >>> check_json_text("[" * 100 + "]" * 100, "s.json")
        Traceback (most recent call last):
        ...
        ppverify.core.limits.LimitError: s.json:1:1: lists and objects nested more than 64 deep
    """
    # the scan runs on the raw text (fast); text inside strings can only cause a false alarm, so a
    # problem found is confirmed on the text with its strings blanked out (offsets kept)
    problem = _json_problem(text)
    if problem is not None:
        problem = _json_problem(_STRING.sub(lambda mt: '"' + " " * (len(mt.group()) - 2) + '"', text))
    if problem is not None:
        index, rule = problem
        line, col = line_col(text, index)
        if rule.startswith(("NaN", "-NaN", "Infinity", "-Infinity")):  # not JSON at all, rather than too big
            from .errors import ScheduleFileError

            raise ScheduleFileError(path, f"{line}:{col}", rule)
        raise LimitError(f"{path}:{line}:{col}", rule)


def _json_problem(bare: str) -> tuple[int, str] | None:
    const = _CONSTANT.search(bare)
    if const:
        return const.start(), f"{const.group()} is not valid JSON (numbers must be finite)"
    hit = _LONG_INT.search(bare)
    if hit:
        return hit.start(), f"a number of {len(hit.group().lstrip('-'))} digits; at most {MAX_INT_DIGITS} are allowed"
    shrunk = bare
    for _ in range(MAX_JSON_DEPTH):
        shrunk, n = _INNER.subn("0", shrunk)
        if not n:
            return None
    if re.search(r"[\[{]", shrunk):
        first = re.search(r"[\[{]", bare)
        return (first.start() if first else 0), f"lists and objects nested more than {MAX_JSON_DEPTH} deep"
    return None


def rank_list(text: str, flag: str) -> list[int]:
    """``"0,1,1,0"`` as a list of ranks (one per stage); anything else is a one-line error.

    Example:
        >>> rank_list("0, 1,1,0", "--placement")
        [0, 1, 1, 0]
        >>> rank_list("a,b", "--placement")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --placement=a,b: expected linear, loop, v or one rank (an integer >= 0) per stage, comma-separated
    """
    from .errors import ParameterError

    parts = [x.strip() for x in str(text).split(",")]
    if not parts or any(not x.isdigit() or len(x) > MAX_INT_DIGITS for x in parts):
        raise ParameterError(
            flag, text, "expected linear, loop, v or one rank (an integer >= 0) per stage, comma-separated"
        )
    if len(parts) > max_ops():
        raise LimitError(f"{flag} {text[:20]}...", f"{len(parts)} stages, over the limit of {max_ops()}")
    return [int(x) for x in parts]
