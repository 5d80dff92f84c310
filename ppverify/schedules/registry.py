"""The one registry of schedule families that the CLI, sweeps and tests enumerate.

A family is a pure generator ``(p, m, **params) -> Schedule`` plus its parameter specs, its
closed-form formula (a :class:`ppverify.core.closed_form.FormulaFn`, written in the same module) and its
rules. Each family lives in its own module under ``ppverify/schedules/`` and registers itself with
:func:`register`; a new schedule is one new file.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.closed_form import FormulaFn
from ..core.errors import ParameterError, PPVerifyError
from ..core.limits import check_family
from ..core.schedule import Schedule


@dataclass(frozen=True)
class Param:
    """A family parameter beyond ``p`` and ``m``: name, type, default and help text."""

    name: str
    type: type
    default: Any
    help: str


def _of_type(value: Any, kind: type) -> bool:
    """Whether ``value`` is a ``kind``: any integral number (numpy's included, never a bool) for
    ``int``, any real one for ``float``.

    Example:
        >>> import numpy as np
        >>> _of_type(np.int64(3), int), _of_type(True, int), _of_type(2, float), _of_type("2", int)
        (True, False, True, False)
    """
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    return isinstance(value, kind)


def _a(kind: type) -> str:
    """``an int``, ``a str``: a type's name with its article."""
    name = kind.__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def typed_value(param: Param, value: Any, family: str) -> Any:
    """``value`` for ``param`` as its declared type (an integral number as an ``int``, a real one
    as a ``float``), else :class:`ParameterError`.

    Example:
        >>> typed_value(Param("k", int, 1, "a count"), 2, "demo")
        2
        >>> typed_value(Param("k", int, 1, "a count"), "2", "demo")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter k='2': demo takes an int here, not a str
    """
    if not _of_type(value, param.type):
        raise ParameterError(
            param.name,
            repr(value) if isinstance(value, str) else value,
            f"{family} takes {_a(param.type)} here, not {_a(type(value))}",
        )
    if param.type is int:
        return int(value)
    if param.type is float:
        return float(value)
    return value


@dataclass(frozen=True)
class Family:
    """A registered schedule family.

    ``generator(p, m, **params)`` builds the schedule and raises :class:`ParameterError` on bad
    parameters. ``formula(p, m, costs, **params)`` (a :class:`ppverify.core.closed_form.FormulaFn`, or
    ``None`` when no closed form is known) returns a :class:`ppverify.core.closed_form.Formula`.
    ``rules`` states the parameter rules in words; ``notes(p, m, **params)`` (optional) the lines
    that say a parameter given has no effect at this size.
    """

    name: str
    generator: Callable[..., Schedule]
    description: str
    params: tuple[Param, ...] = ()
    rules: str = "p >= 1, m >= 1"
    formula: FormulaFn | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)
    #: ``notes(p, m, **params)``: lines saying a given parameter changes nothing at this size
    #: (printed by the CLI as notes), or ``None``
    notes: Callable[..., list[str]] | None = None

    def defaults(self) -> dict[str, Any]:
        """Default values of the extra parameters."""
        return {pr.name: pr.default for pr in self.params}

    def arguments(self, params: dict[str, Any]) -> dict[str, Any]:
        """The extra parameters to call ``generator``/``formula`` with: the defaults, overridden by
        ``params`` (``None`` values count as not given); a name the family does not know raises
        :class:`ParameterError`.

        Example:
            >>> fam = Family("x", lambda p, m, v=2: None, "demo", params=(Param("v", int, 2, "chunks"),))
            >>> fam.arguments({"v": None}), fam.arguments({"v": 3})
            ({'v': 2}, {'v': 3})
            >>> fam.arguments({"w": 1})
            Traceback (most recent call last):
            ...
            ppverify.core.errors.ParameterError: parameter w=1: x has no such parameter (its parameters: v)
            >>> get_family("chimera").arguments({"units": "CONCAT"})  # a built-in family's word: any case
            {'units': 'concat'}
        """
        args = self.defaults()
        words = {pr.name for pr in self.params if pr.type is str} if self._own() else set()
        for k, v in params.items():
            if v is None:
                continue
            if k not in args:
                known = ", ".join(args) or "none"
                raise ParameterError(k, v, f"{self.name} has no such parameter (its parameters: {known})")
            # a built-in family's words (units, order) are read in any case, as family names
            # are: --units CONCAT is concat, --order Megatron megatron
            args[k] = v.strip().lower() if k in words and isinstance(v, str) else v
        if not self._own():  # a plugin's generator gets values of its parameters' declared types
            for pr in self.params:
                if params.get(pr.name) is not None:  # given (None: not given)
                    args[pr.name] = typed_value(pr, args[pr.name], self.name)
        return args

    def _own(self) -> bool:
        """Whether this is one of ppverify's own families (not a plugin's)."""
        return getattr(self.generator, "__module__", "").startswith("ppverify.")


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add a family to the registry (done once, at import of its module).

    The built-in families are loaded first, so a name (or alias) already taken is refused here,
    at the call, with :class:`ParameterError`, and nothing of the family is registered. Names
    are looked up case-insensitively (``build("My-Sched")`` finds ``My-Sched``); an empty name,
    or one with blanks or commas (``compare --schedules`` splits on commas), a generator that is
    not callable or a :class:`Param` named ``p``, ``m`` or twice are refused too.

    Example:
        >>> fam = get_family("gpipe")
        >>> register(fam) is fam  # the same family again: nothing changes
        True
        >>> register(Family("GPipe", fam.generator, "another family under a taken name"))
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter family=gpipe: another family is registered under this name (registered twice); pick another name
    """
    from . import _load_all

    if not isinstance(family, Family):
        raise ParameterError("family", family, "register() takes a Family")
    _load_all()  # the built-in families first: a clash with one is refused now, not at their import
    keys = []
    for name in (family.name, *family.aliases):
        if not isinstance(name, str) or not name or any(c.isspace() or c == "," for c in name):
            raise ParameterError("family", name, "a family name must be non-empty, without blanks or commas")
        key = name.lower()
        if key in _FAMILIES and _FAMILIES[key] is not family:
            raise ParameterError(
                "family", key, "another family is registered under this name (registered twice); pick another name"
            )
        keys.append(key)
    if not callable(family.generator):
        raise ParameterError("generator", family.generator, f"family {family.name}: must be callable (p, m, **params)")
    if family.formula is not None and not callable(family.formula):
        raise ParameterError("formula", family.formula, f"family {family.name}: must be callable or None")
    names = [pr.name for pr in family.params]
    for n in names:
        if n in ("p", "m") or names.count(n) > 1:
            raise ParameterError("params", n, f"family {family.name}: a parameter name must be unique and not p or m")
    for pr in family.params:
        # Param("k", "int", ...) or Param("k", int, "one"): the CLI would build its option, and the
        # generator get values, of a type the family never meant
        if not isinstance(pr.type, type):
            raise ParameterError(
                f"{pr.name}.type",
                repr(pr.type),
                f"family {family.name}: a Param's type must be a type (int, not 'int')",
            )
        if pr.default is not None and not _of_type(pr.default, pr.type):
            raise ParameterError(
                f"{pr.name}.default",
                repr(pr.default),
                f"family {family.name}: the default must be {_a(pr.type)} (or None), not {_a(type(pr.default))}",
            )
    for key in keys:
        _FAMILIES[key] = family
    return family


#: the entry-point group through which other packages add families (``ppverify list`` shows them)
ENTRY_POINT_GROUP = "ppverify.families"
_plugins_loaded = False


def load_plugins(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Load the families that installed packages declare under the entry-point ``group``.

    An entry point names a module (importing it registers its families, as a module of this
    package does) or a :class:`Family` or list of them (registered here). One that fails to load
    costs one warning line on stderr, never a crash. Returns the names of the entry points loaded.

    Example:
        >>> load_plugins("ppverify.no-such-group")
        []
    """
    import sys
    from importlib.metadata import entry_points

    loaded = []
    for ep in entry_points(group=group):
        try:
            obj = ep.load()
            for fam in obj if isinstance(obj, (list, tuple)) else [obj]:
                if isinstance(fam, Family):
                    register(fam)
            loaded.append(ep.name)
        except Exception as exc:  # someone else's package: whatever breaks in it must not break ppverify
            msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")
            print(
                f"ppverify: warning: schedule family plugin {ep.name!r} ({ep.value}) not loaded: {msg}", file=sys.stderr
            )
    return loaded


def _load() -> None:
    """Import this package's family modules, then (once) the plugins' entry points."""
    global _plugins_loaded
    from . import _load_all

    _load_all()
    if not _plugins_loaded:
        _plugins_loaded = True
        load_plugins()


def families() -> list[Family]:
    """All registered families, each once, in name order.

    Example:
        >>> "1f1b" in [f.name for f in families()]
        True
    """
    _load()
    seen = {id(f): f for f in _FAMILIES.values()}
    return sorted(seen.values(), key=lambda f: f.name)


def get_family(name: str) -> Family:
    """Look a family up by name or alias; unknown names list the known ones.

    Example:
        >>> get_family("gpipe").name
        'gpipe'
    """
    if not isinstance(name, str):
        raise ParameterError("family", repr(name), f"a family's name is a str, not {type(name).__name__}")
    _load()
    key = name.strip().lower()
    if key not in _FAMILIES:
        known = ", ".join(f.name for f in families())
        from pathlib import Path

        # a folder of that name: said, as a file of that name would be read instead of refused
        try:
            here = Path(name).is_dir()
        except (OSError, ValueError):  # a name too long for a path, or holding NUL: no folder
            here = False
        folder = " (a folder of that name is here: a schedule file is .json, .csv or .txt)" if here else ""
        raise ParameterError("family", name, f"unknown schedule family{folder}; known families: {known}")
    return _FAMILIES[key]


def build(name: str, p: int, m: int, **params: Any) -> Schedule:
    """Build a schedule of a registered family; parameters not given take their defaults, ones
    the family does not know are rejected (``None`` values are treated as not given).

    Example:
        >>> build("1f1b", p=2, m=2).programs[1]
        (Op(kind='F', stage=1, mb=0), Op(kind='B', stage=1, mb=0), Op(kind='F', stage=1, mb=1), Op(kind='B', stage=1, mb=1))
    """
    fam = get_family(name)
    args = fam.arguments(params)
    p, m = check_int("p", p, 1), check_int("m", m, 1)
    check_family(fam.name, p, m, args)  # before generating: a huge p or m is refused at once
    own = fam._own()
    try:
        sched = fam.generator(p, m, **args)
    except PPVerifyError:
        raise
    except Exception as exc:
        if own:
            raise  # a bug in ppverify itself: the CLI reports it as an internal error
        raise ParameterError(
            "family", fam.name, f"its generator failed at p={p} m={m}: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(sched, Schedule):
        raise ParameterError(
            "family", fam.name, f"its generator returned {type(sched).__name__} {sched!r:.60}, not a Schedule"
        )
    if sched.p != p or sched.m != m:
        raise ParameterError(
            "family", fam.name, f"asked for p={p} m={m}, its generator built a schedule for p={sched.p} m={sched.m}"
        )
    return sched


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int`` when it is an integral number (numpy's included, not a bool) >=
    ``minimum``, else :class:`ParameterError` (a string shown quoted: ``p='4'`` is no integer).

    Example:
        >>> import numpy as np
        >>> check_int("m", np.int64(3), 1)
        3
        >>> check_int("m", 0, 1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter m=0: must be an integer >= 1
        >>> check_int("p", "4", 1)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter p='4': must be an integer >= 1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(name, repr(value) if isinstance(value, str) else value, f"must be an integer >= {minimum}")
    return int(value)
