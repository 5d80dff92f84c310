"""Options kept under an old name for a while: they still work, and say once, after the output,
which name replaces them."""

from __future__ import annotations

import argparse
import sys
from typing import Any


class DeprecatedAlias(argparse.Action):
    """An old option name kept working: it stores into the new option's ``dest`` and notes which
    name to use instead; :func:`warn_deprecated` prints the note once the command has run, so a
    failing command still prints exactly one line.

    Example:
        >>> import contextlib, io
        >>> parser = argparse.ArgumentParser(prog="ppverify import")
        >>> _ = parser.add_argument("--style", choices=("paper", "torch"))
        >>> _ = parser.add_argument("--table", dest="style", choices=("paper", "torch"), action=DeprecatedAlias, new="--style")
        >>> args = parser.parse_args(["--table", "torch"])
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     args.style, warn_deprecated(args, "ppverify import")
        ('torch', None)
        >>> print(err.getvalue(), end="")
        ppverify import: warning: --table is deprecated, use --style (the same values)
    """

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option_string: Any = None) -> None:
        notes = [
            *getattr(namespace, "_deprecated", []),
            f"{option_string} is deprecated, use {self.new} (the same values)",
        ]
        namespace._deprecated = notes
        setattr(namespace, self.dest, values)


def warn_deprecated(args: argparse.Namespace, command: str) -> None:
    """Print on stderr each deprecation noted while parsing ``args`` (:class:`DeprecatedAlias`).

    Example:
        >>> import contextlib, io
        >>> args = argparse.Namespace(_deprecated=["--table is deprecated, use --style (the same values)"])
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     warn_deprecated(args, "ppverify import")
        ...     warn_deprecated(argparse.Namespace(), "ppverify import")  # nothing noted: nothing printed
        >>> print(err.getvalue(), end="")
        ppverify import: warning: --table is deprecated, use --style (the same values)
    """
    for note in getattr(args, "_deprecated", []):
        print(f"{command}: warning: {note}", file=sys.stderr)
