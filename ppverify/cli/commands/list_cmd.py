"""``ppverify list``: the registered schedule families, their parameters and rules."""

from __future__ import annotations

import argparse

from tabulate import tabulate

from ...schedules import families
from .. import Command
from ..common import print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Only ``--json``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> parser.parse_args([]).json, parser.parse_args(["--json"]).json
        (False, True)
    """
    parser.add_argument("--json", action="store_true", help="print the families as JSON")


def run(args: argparse.Namespace) -> int:
    """Print one row per family.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_arguments(parser)
        >>> run(parser.parse_args([]))  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
        family  description  parameters  rules
        ...
        gpipe  GPipe: all forwards, then all backwards  -  p >= 1, m >= 1
        ...
        0
    """
    rows = []
    for fam in families():
        # a None default is computed from p, m...: its help says how ("default p/2"), not "default None"
        params = ", ".join(
            f"--{p.name.replace('_', '-')}{'' if p.default is None else f' (default {p.default})'}: {p.help}"
            for p in fam.params
        )
        rows.append(
            {
                "family": fam.name,
                "description": fam.description,
                "parameters": params or "-",
                "rules": fam.rules,
                "formula": "yes" if fam.formula else "no",
            }
        )
    if args.json:
        print_json(rows)
    else:
        print(
            tabulate(
                [[r["family"], r["description"], r["parameters"], r["rules"]] for r in rows],
                headers=["family", "description", "parameters", "rules"],
                tablefmt="simple",
                maxcolwidths=[None, 40, 40, 30],
            )
        )
    return 0


COMMAND = Command("list", "list the registered schedule families and their parameters", add_arguments, run)
