"""Empty option values are refused, never read as "not given": ``--schedules ''`` would otherwise
run the default selection, ``report --from ''`` the whole default study, ``show --costs ''`` unit
costs. One check after parsing covers every option and positional argument of every command.
"""

from __future__ import annotations

import argparse

from ..core.errors import ParameterError


def refuse_empty_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, in one line naming the option, a value given as empty or blank text (an option's
    own default is left alone: only what was given on the command line is checked).

    Example:
        >>> p = argparse.ArgumentParser()
        >>> _ = p.add_argument("--store"); _ = p.add_argument("--title", default="")
        >>> refuse_empty_values(p, p.parse_args(["--store", "s.jsonl"]))
        >>> refuse_empty_values(p, p.parse_args([]))
        >>> refuse_empty_values(p, p.parse_args(["--store", " "]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --store= : an empty value; give one, or leave the option out for its default
        >>> _ = p.add_argument("-o", "--output", required=True)
        >>> refuse_empty_values(p, p.parse_args(["-o", "", "--store", "s"]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --output=: an empty value; give one (the option is required)
    """
    for action in parser._actions:  # argparse keeps no public list of a parser's arguments
        value = getattr(args, action.dest, None)
        if value is action.default or value == action.default:
            continue
        given = value if isinstance(value, list) else [value]
        for item in given:
            if isinstance(item, str) and not item.strip():
                name = max(action.option_strings, key=len, default=action.dest)
                # a required option has no default to fall back on (plot -o)
                fix = (
                    "give one (the option is required)"
                    if action.required
                    else "give one, or leave the option out for its default"
                )
                raise ParameterError(name, item, f"an empty value; {fix}")


def refuse_empty_command_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """:func:`refuse_empty_values` for the main parser and the parser of the command chosen.

    Example:
        >>> from ppverify.cli import build_parser
        >>> p = build_parser()
        >>> refuse_empty_command_values(p, p.parse_args(["compare", "--schedules", "gpipe"]))
        >>> refuse_empty_command_values(p, p.parse_args(["compare", "--schedules", ""]))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --schedules=: an empty value; give one, or leave the option out for its default
    """
    refuse_empty_values(parser, args)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and getattr(args, action.dest, None) in action.choices:
            refuse_empty_values(action.choices[getattr(args, action.dest)], args)
