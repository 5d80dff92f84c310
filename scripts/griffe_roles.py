"""A griffe extension for the API reference (``mkdocs.yml``): ppverify's docstrings cross-reference
with Sphinx roles (``:func:`~ppverify.optimize.optimize```, ``:mod:`.relax```, ``:data:`UNLIKE```),
which mkdocstrings would print as raw text. Once the package is loaded, each role becomes an
``<autoref>`` to the fully qualified name: a link wherever the API reference documents the target,
plain code where it does not (a private helper, a module left out of the reference). The
docstrings stay as they are, so ``help()`` and the doctests read the same.

``tests/docs/test_docs.py`` builds the site and fails on any raw role left in it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: a Sphinx cross-reference role: ``:kind:`target``` (``~``: show the last name; ``!``: no link)
ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|data|attr|exc|obj|const|type):`([~!]?)([^`<>]+?)`")


def qualified(obj: griffe.Object, target: str) -> str:
    """The fully qualified name ``target`` means inside ``obj``'s docstring: relative names
    (``.relax``, ``..errors``) from the module's package, bare names through the scope of the
    object (its module's names and imports), anything else as written.

    Example:
        >>> pkg = griffe.load("ppverify", search_paths=["."])
        >>> mod = pkg["optimize.solve"]
        >>> qualified(mod, ".relax"), qualified(mod, "..errors.ParameterError"), qualified(mod, "relative_gap")
        ('ppverify.optimize.relax', 'ppverify.core.errors.ParameterError', 'ppverify.optimize.result.relative_gap')
        >>> qualified(pkg["engines"], ".torch_steps")  # a package's __init__
        'ppverify.engines.torch_steps'

    """
    if target.startswith("."):
        module = obj if obj.is_module else obj.module
        package = module if (module.is_package or module.is_init_module) else module.parent
        dots = len(target) - len(target.lstrip("."))
        for _ in range(dots - 1):
            package = package.parent if package is not None and package.parent is not None else package
        base = package.path if package is not None else ""
        rest = target.lstrip(".")
        return f"{base}.{rest}" if rest else base
    if target.startswith("ppverify"):
        return target
    head, _, tail = target.partition(".")
    try:
        resolved = obj.resolve(head)
    except (griffe.NameResolutionError, AttributeError, KeyError, ValueError):
        scope = obj if obj.is_module or obj.is_class else obj.parent
        if scope is not None and head in getattr(scope, "members", {}):
            resolved = f"{scope.path}.{head}"
        else:
            return target
    return f"{resolved}.{tail}" if tail else resolved


def convert(obj: griffe.Object, text: str) -> str:
    """``text`` with every role replaced by an optional autoref (link text as Sphinx shows it).

    Example:
        >>> mod = griffe.load("ppverify", search_paths=["."])["optimize.solve"]
        >>> convert(mod, "see :func:`~ppverify.optimize.relative_gap` and :mod:`.relax`")
        'see <autoref identifier="ppverify.optimize.relative_gap" optional><code>relative_gap()</code></autoref> and <autoref identifier="ppverify.optimize.relax" optional><code>.relax</code></autoref>'
    """

    def one(m: re.Match[str]) -> str:
        kind, flag, target = m.group(1), m.group(2), m.group(3).strip()
        shown = target.rsplit(".", 1)[-1] if flag == "~" else target
        if kind in ("func", "meth") and not shown.endswith(")"):
            shown += "()" if flag == "~" else ""
        if flag == "!":
            return f"<code>{shown}</code>"
        return f'<autoref identifier="{qualified(obj, target)}" optional><code>{shown}</code></autoref>'

    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Replace Sphinx roles in every docstring of the package once it is loaded (names resolve
    only then)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg, set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = convert(obj, obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, seen)
