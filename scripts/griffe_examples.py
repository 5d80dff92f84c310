"""A griffe extension for the API reference (``mkdocs.yml``): ppverify's docstrings head their
doctests ``Example:``, which the Google-style parser reads as a plain admonition; this reads them as
an ``Examples:`` section, so mkdocstrings renders the doctests as code."""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADER = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(griffe.Extension):
    """Rename each docstring's ``Example:`` header to ``Examples:`` before it is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _HEADER.sub(r"\1Examples:", obj.docstring.value)
