"""The ``ppverify`` command.

Subcommands live one per module in :mod:`ppverify.cli.commands`; each module defines
``COMMAND = Command(name, help, add_arguments, run)`` and is discovered automatically. Errors from
bad input (:class:`~ppverify.errors.PPVerifyError`) print one line naming the file, location and
rule, and exit with code 2; ``run`` returns the exit code (0 success, 1 a negative verdict).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import PPVerifyError


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, argument setup and action."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""


def _commands() -> list[Command]:
    from . import commands

    out = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(mod, "COMMAND"):
            out.append(mod.COMMAND)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every discovered subcommand.

    Example:
        >>> "show" in build_parser().format_help()
        True
    """
    parser = argparse.ArgumentParser(
        prog="ppverify",
        description="Prove pipeline-parallel schedules correct, bound their speed, rank them with communication.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in _commands():
        sp = sub.add_parser(cmd.name, help=cmd.help, description=cmd.description or cmd.help,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.add_arguments(sp)
        sp.set_defaults(_run=cmd.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ppverify`` console script; returns the exit code.

    Example:
        >>> main(["list", "--no-such-option"])
        2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its usage message
        return int(exc.code or 0)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        code = args._run(args)
    except PPVerifyError as exc:
        print(f"ppverify {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
