"""What every command's ``--json`` prints: strict JSON (no ``Infinity`` or ``NaN``, which strict
parsers refuse), indented, with lists of plain values on one line so per-device arrays and table
rows stay readable.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON (numpy values converted); lists of plain values stay on one
    line so per-device arrays and table rows remain readable. Strict JSON: an infinite or NaN
    number is ``null``, and (``data`` a dict) the key ``non_finite_as_null`` maps each one's path
    to its value (at most 20).

    Example:
        >>> print_json({"makespan": 14.0, "peak_activations": [4.0, 3.0], "rows": [{"a": 1}]})
        {
          "makespan": 14.0,
          "peak_activations": [4.0, 3.0],
          "rows": [
            {
              "a": 1
            }
          ]
        }
    """

    def default(o: Any) -> Any:
        if hasattr(o, "tolist"):
            return o.tolist()
        if hasattr(o, "item"):
            return o.item()
        return str(o)

    plain = json.loads(json.dumps(data, default=default))  # numpy and friends -> JSON types once
    found: dict[str, str] = {}
    plain = _finite(plain, "", found)
    if found and isinstance(plain, dict):  # say which numbers were not numbers, rather than hide them
        plain["non_finite_as_null"] = dict(list(found.items())[:20])
        plain["non_finite_as_null"].update({"...": f"{len(found) - 20} more"} if len(found) > 20 else {})
    sys.stdout.write(_compact_json(plain) + "\n")


def _finite(obj: Any, path: str, found: dict[str, str]) -> Any:
    """``obj`` with inf, -inf and NaN as ``None`` (JSON has none: Python writes ``Infinity``,
    which strict parsers refuse), each one's path and value in ``found``.

    Example:
        >>> found = {}
        >>> _finite({"a": float("inf"), "b": [1.0, float("nan")]}, "", found), found
        ({'a': None, 'b': [1.0, None]}, {'a': 'inf', 'b[1]': 'nan'})
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        found[path or "(value)"] = repr(obj)
        return None
    if isinstance(obj, dict):
        return {k: _finite(v, f"{path}.{k}" if path else str(k), found) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v, f"{path}[{i}]", found) for i, v in enumerate(obj)]
    return obj


def _compact_json(obj: Any, indent: int = 0) -> str:
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(obj, dict) and obj:
        items = [f"{inner}{json.dumps(k)}: {_compact_json(v, indent + 2)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        items = [inner + _compact_json(v, indent + 2) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj, allow_nan=False)  # never Infinity or NaN: print_json made them null
