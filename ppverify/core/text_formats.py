"""Parsing the text of CSV and YAML files (read by :func:`~ppverify.core.files.read_text`) within
ppverify's limits: every failure is one line naming the file, the line and (where known) the
column. :func:`csv_rows` refuses malformed CSV and over-long cells; :func:`load_yaml` reads presets
and configs with YAML 1.2's floats, refusing over-long integers, nesting too deep for the parser
and a key given twice in one mapping.
"""

from __future__ import annotations

import functools
from typing import Any

from .errors import ScheduleFileError
from .limits import LimitError


def csv_rows(text: str, path: str) -> list[list[str]]:
    """The cells of CSV text, refusing a malformed line or a cell over
    :data:`~ppverify.core.limits.MAX_CELL_CHARS` characters with its line and column.

    Example:
        >>> csv_rows("0F0,,0B0\\n1F0,1B0\\n", "s.csv")
        [['0F0', '', '0B0'], ['1F0', '1B0']]
        >>> csv_rows('0F0,"x\\n', "s.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.csv:1: malformed CSV: unexpected end of data
    """
    import csv
    import io

    from .limits import MAX_CELL_CHARS, check_csv_cells

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
    # the memory of what is built from the cells, before any is parsed (--max-memory-gib)
    check_csv_cells(sum(1 for row in rows for cell in row if cell.strip()), path)
    return rows


def _unique_keys(text: str, label: str) -> None:
    """Refuse YAML text (already known to parse) that gives a key twice in one mapping, naming
    the file, the line and column of the second: YAML's loader keeps the last one without a word,
    so ``gpus_per_node: 8`` followed by ``gpus_per_node: 1`` would silently time another system.

    Example:
        >>> _unique_keys("a: 1\\nb: {c: 2, d: 3}", "x.yaml")
        >>> _unique_keys("a: 1\\nb: 2\\na: 3", "x.yaml")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: x.yaml:3:1: key 'a' is given twice (first on line 1); keep one
    """
    import yaml

    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    seen_nodes: set[int] = set()  # an alias is the node it names: walk it once
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            first: dict[str, Any] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in first:
                        where = f"{key.start_mark.line + 1}:{key.start_mark.column + 1}"
                        line = first[key.value].start_mark.line + 1
                        raise ScheduleFileError(
                            label, where, f"key {key.value[:60]!r} is given twice (first on line {line}); keep one"
                        )
                    first[key.value] = key
                stack.extend((key, value))


@functools.cache  # one class, built on first use (yaml is imported lazily)
def _yaml_loader() -> Any:
    """PyYAML's safe loader with YAML 1.2's floats: an exponent without a dot (``1e-3``, ``5e-1``,
    ``1e15``) or without a sign (``1.0e15``) is a number, as in JSON and YAML 1.2, not the string
    YAML 1.1 makes of it.

    Example:
        >>> import yaml
        >>> yaml.load("[1e-3, 5.0e-1, 2E+2, 1.0e15, .5e1, 1_000, 0x10, '1e3', e3, 1e, 1.2.3e4]", Loader=_yaml_loader())
        [0.001, 0.5, 200.0, 1000000000000000.0, 5.0, 1000, 16, '1e3', 'e3', '1e', '1.2.3e4']
    """
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        """Safe loading, with YAML 1.2's exponent-only floats."""

    # checked after YAML 1.1's own float and int forms (the first match wins): only what
    # they leave a string, a number with an exponent, is read as a float here
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."),
    )
    return Loader


def load_yaml(text: str, path: str) -> object:
    """``yaml.safe_load`` of a preset or config (with YAML 1.2's floats: ``1e-3`` is a number, not
    a string), every failure one line naming the file, line and column: YAML syntax, an integer of more than :data:`~ppverify.core.limits.MAX_INT_DIGITS` digits
    (refused before ``int()``), nesting too deep for the parser, a key given twice in one mapping.

    Example:
        >>> load_yaml("a: [1, 2]", "c.yaml")
        {'a': [1, 2]}
        >>> load_yaml("costs: {F: 1e-3, B: 2e-3}", "c.yaml")
        {'costs': {'F': 0.001, 'B': 0.002}}
        >>> load_yaml("a: [1, 2\\nb: 3", "c.yaml")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: c.yaml:2:2: not valid YAML: expected ',' or ']', but got ':'
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
        data = yaml.load(text, Loader=_yaml_loader())  # the safe loader, with YAML 1.2 floats
        _unique_keys(text, path)  # YAML keeps the last of a key given twice without a word
        return data
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        raise ScheduleFileError(path, where, f"not valid YAML: {problem}") from None
    except RecursionError:
        raise LimitError(path, "lists and mappings nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # a value YAML's constructors cannot build
        raise ScheduleFileError(path, "", f"not valid YAML: {str(exc).splitlines()[0]}") from None
