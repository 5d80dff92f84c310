"""The ``ppverify`` command.

Subcommands live one per module in :mod:`ppverify.cli.commands`; each module defines
``COMMAND = Command(name, help, add_arguments, run)`` and is discovered automatically. Errors from
bad input (:class:`~ppverify.core.errors.PPVerifyError`) print one line naming the file, location and
rule, and exit with code 2; ``run`` returns the exit code (0 success, 1 a negative verdict).
Anything unexpected is a bug of ppverify, never a verdict: one line and exit code 3 (``--debug``
prints the traceback); Ctrl-C, SIGTERM or SIGHUP stop with one line and exit code 130 / 143 / 129. A command
that keeps what it found on a signal (``design``, ``optimize``, ``gap``) prints it first and then
names the signal received in that line (:mod:`ppverify.cli.signals`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any


def _quiet_start_up() -> None:
    """In the ``ppverify`` process itself (the console script or ``python -m ppverify``), a Ctrl-C,
    SIGTERM or SIGHUP while the command's modules are still being imported ends it with one line
    and exit 130 / 143 / 129, not an import-time traceback: nothing is done yet, so nothing is
    lost. Installed with the C-level ``_signal`` module before anything heavier is imported;
    :func:`main` puts the command's own handlers in place. A program importing :mod:`ppverify.cli`
    keeps its handlers, and an ignored SIGHUP (``nohup``) stays ignored."""
    if os.name != "posix" or os.path.basename(sys.argv[0] if sys.argv else "") not in ("ppverify", "__main__.py"):
        return
    if TYPE_CHECKING:  # typeshed has no stub of _signal, the C module signal wraps: signal's types
        import signal as _signal
    else:
        import _signal

    name = _command_name(sys.argv[1:]).encode("utf-8", "replace")

    # each signal: its words and exit code (128 + its number)
    said: dict[int, tuple[bytes, int]] = {
        _signal.SIGINT: (b": interrupted\n", 130),
        _signal.SIGTERM: (b": terminated (SIGTERM)\n", 143),
    }
    hup = getattr(_signal, "SIGHUP", None)
    if hup is not None and _signal.getsignal(hup) != _signal.SIG_IGN:
        said[hup] = (b": terminated (SIGHUP)\n", 129)

    def stop(signum: int, frame: object) -> None:
        words, code = said[signum]
        try:
            os.write(2, name + words)
        except OSError:  # a standard error that cannot be written (2>/dev/full): the exit code says it
            pass
        os._exit(code)

    for signum in said:
        _signal.signal(signum, stop)


def _command_name(words: list[str]) -> str:
    """``ppverify COMMAND`` for messages before the command line is parsed: the first word that is
    not an option, when it looks like a command's name (else plain ``ppverify``)."""
    word = next((w for w in words if not w.startswith("-")), "")
    ok = 0 < len(word) <= 20 and word.replace("-", "").isalpha() and word.isascii() and word.islower()
    return f"ppverify {word}" if ok else "ppverify"


_quiet_start_up()

import argparse  # noqa: E402  (after the start-up handlers: the imports below take their time)
import importlib  # noqa: E402
import pkgutil  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from ..core.errors import ParameterError, PPVerifyError  # noqa: E402
from ..core.limits import DEFAULT_MAX_MEMORY_GIB, DEFAULT_MAX_OPS, int_text, memory_limit, op_limit  # noqa: E402
from .signals import (  # noqa: E402
    EXIT_HANGUP,
    EXIT_INTERRUPT,
    EXIT_TERM,
    GRACE_S,
    _in_main_thread,
    _sigterm_raises,
    ends_within,
    stop_code,
    stop_words,
)
from .signals import Hangup as Hangup  # noqa: E402  (what a signal raises, re-exported)
from .signals import Terminated as Terminated  # noqa: E402
from .streams import (  # noqa: E402
    EXIT_BROKEN_PIPE,
    PipeGuard,
    StderrGuard,
    open_missing_descriptors,
    reconfigure_streams,
    silence_stdout,
    write_failure,
)

#: exit codes: 2 bad input (or a limit), 3 an internal error, 130/143/129 interrupted (.signals)
EXIT_INPUT, EXIT_INTERNAL = 2, 3
#: exceptions that hostile input provokes deep inside Python itself: bad input, not a bug
_INPUT_FAILURES = {
    RecursionError: "input nested too deeply",
    MemoryError: "out of memory; the input is too large",
    OverflowError: "a number is too large",
    UnicodeError: "text that cannot be encoded or decoded",
}


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (usage is one ``--help`` away), and every ``type=int``
    option read in ASCII digits only (:func:`~ppverify.cli.common.ascii_int`: ``int()`` reads
    ``-p \u0664`` as 4, which ppverify's schedule text refuses)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from .common import ascii_int

        super().__init__(*args, **kwargs)
        self.register("type", int, ascii_int)  # argparse looks a type up here first; commands' parsers are _Parsers too

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_INPUT, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, with words no option takes refused by the command that was given (its name
        and its ``--help``), not by ``ppverify``: ``show 1f1b --system x`` is a ``show`` mistake."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            subs = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
            command = getattr(ns, "command", None)
            owner = next((a.choices[command] for a in subs if command in a.choices), self)
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns


def one_line(text: str) -> str:
    """``text`` on one printable line: line breaks, control characters and unencodable (surrogate)
    characters escaped, so a hostile name can neither crash printing nor split a message.

    Example:
        >>> one_line("a\\nb\\ud800")
        'a\\\\nb\\\\ud800'
    """
    out = []
    for ch in text:
        if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return "".join(out)


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, argument setup and action. ``ends_on_signal``: a
    command with nothing half-written to lose (``verify``, ``prove``) whose process ends within
    :data:`.signals.GRACE_S` seconds of a Ctrl-C, SIGTERM or SIGHUP, even inside a native call
    that polls no interrupt (:func:`.signals.ends_within`); off (the default), the command stops
    where it polls for the signal, keeping what it has done (``design``, ``sweep``, ``optimize``)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
    ends_on_signal: bool = False


def _commands() -> list[Command]:
    from . import commands

    out = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(mod, "COMMAND"):
            out.append(mod.COMMAND)
    return out


def package_version() -> str:
    """The installed package's version (its metadata, as pip installed it); the source tree's
    ``ppverify.__version__`` when the package is not installed.

    Example:
        >>> import ppverify
        >>> package_version() == ppverify.__version__
        True
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ppverify")
    except PackageNotFoundError:  # run from a checkout that pip never installed
        from .. import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every discovered subcommand.

    Example:
        >>> "show" in build_parser().format_help()
        True
    """
    parser = _Parser(
        prog="ppverify",
        description="Prove pipeline-parallel schedules correct, bound their speed, rank them with communication.",
    )
    add_global_options(parser)
    parser.add_argument(
        "--version",
        action="version",
        version=f"ppverify {package_version()}",
        help="print the installed version and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in _commands():
        sp = sub.add_parser(
            cmd.name,
            help=cmd.help,
            description=terminal_text(cmd.description or cmd.help),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        cmd.add_arguments(sp)
        add_global_options(sp, after_command=True)
        sp.set_defaults(_run=cmd.run, _ends_on_signal=cmd.ends_on_signal)
    return parser


#: a Sphinx role in a docstring (func, class, ...; a leading ~ too): its target is what a terminal shows
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`~?([^`]+)`")


def terminal_text(text: str) -> str:
    """A command module's docstring as ``--help`` prints it. The reST markup the manual renders (a
    Sphinx role naming a function or class, a literal in double backquotes) is noise in a terminal:
    a role becomes its target, a literal takes the single backquotes the options' help uses.

    Example:
        >>> terminal_text("the verifier (:func:`ppverify.verify.verify`), ``--comm-semantics``")
        'the verifier (ppverify.verify.verify), `--comm-semantics`'
    """
    return _ROLE.sub(r"\1", text).replace("``", "`")


def add_global_options(parser: argparse.ArgumentParser, after_command: bool = False) -> None:
    """``--debug`` and ``--max-ops N``, the options every command takes. They are declared on the
    main parser and (``after_command``) on each command's parser, so that they work before or after
    the command: there they neither show in the command's help nor reset what was given before it.

    Example:
        >>> build_parser().parse_args(["--max-ops", "7", "list", "--debug"]).max_ops
        7
    """
    hidden = after_command
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS if hidden else False,
        help=argparse.SUPPRESS
        if hidden
        else "print the traceback of an internal error (exit code 3) instead of one line",
    )
    parser.add_argument(
        "--max-ops",
        type=_max_ops,
        default=argparse.SUPPRESS if hidden else DEFAULT_MAX_OPS,
        metavar="N",
        help=argparse.SUPPRESS
        if hidden
        else f"refuse, before any work, input implying more than N compute ops (default {DEFAULT_MAX_OPS})",
    )
    parser.add_argument(
        "--max-memory-gib",
        type=_max_memory_gib,
        default=argparse.SUPPRESS if hidden else DEFAULT_MAX_MEMORY_GIB,
        metavar="X",
        help=argparse.SUPPRESS
        if hidden
        else f"refuse, before building it, work estimated to need more than X GiB (schedules: 192 MiB + 640 B "
        f"per op; optimize, gap: their model; "
        f"default {DEFAULT_MAX_MEMORY_GIB:g})",
    )


def _max_ops(text: str) -> int:
    # a signed integer is a number: -1 gets op_limit's rule (">= 1") as 0 does, not "invalid int"
    if not re.fullmatch(r"[+-]?[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}")
    return int_text(text, f"--max-ops {text}", 15)  # a LimitError: one line, exit code 2


def _max_memory_gib(text: str) -> float:
    try:
        gib = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of GiB: {text!r}") from None
    with memory_limit(gib):  # its checks (finite, > 0, at most a pebibyte): one line, exit code 2
        return gib


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ppverify`` console script; returns the exit code.

    Example:
        >>> main(["list", "--no-such-option"])
        2
    """
    # a standard stream closed from the start (``>&-``, ``2>&-``): /dev/null in its place, so that
    # no file ppverify opens takes its number and the output is lost, not a crash
    open_missing_descriptors()
    reconfigure_streams()
    # a standard error that cannot be written (``2>/dev/full``, a reader gone; None: ``2>&-`` in
    # a caller) drops its notes and messages, never the command's work or exit code
    saved_stderr = sys.stderr
    err_guard = StderrGuard(sys.stderr)
    sys.stderr = err_guard
    # (measure and calibrate start their worker processes only once their input is checked: bad
    # input never leaves a process importing torch behind)
    words = list(sys.argv[1:] if argv is None else argv)
    saved_stdout = sys.stdout
    guard = PipeGuard(sys.stdout)
    sys.stdout = guard
    try:
        # from start-up on: the commands' imports take seconds
        with _sigterm_raises(own_process=argv is None) as signals:
            code = _main(words, argv is None, signals)
            guard.flush()  # what is still buffered: a failure to write it is this command's
    except KeyboardInterrupt as exc:  # between the handlers' set-up and the command (a moment)
        code = _interrupted(exc, _command_name(words))
    finally:
        if sys.stdout is guard:
            sys.stdout = saved_stdout
        if saved_stdout is None:
            guard.stream.close()  # the /dev/null the guard opened in its place
    if guard.error is not None:
        # the output asked for was not delivered (``>/dev/full``): one line and exit 2, whatever
        # the verdict was (a reader that went away instead keeps it)
        print(f"{_command_name(words)}: error: {write_failure(guard.error)}", file=sys.stderr)
        if code in (0, 1):
            code = EXIT_INPUT
    if sys.stderr is err_guard:
        sys.stderr = saved_stderr
    if saved_stderr is None:
        err_guard.stream.close()  # the /dev/null the guard opened in its place
    if argv is None and code in (EXIT_INTERRUPT, EXIT_TERM, EXIT_HANGUP) and _in_main_thread():
        # the exit is decided: a further Ctrl-C, SIGTERM or SIGHUP while the interpreter shuts
        # down (the handlers then fall back to the default, exit -2 / -15 / -1, no message)
        # changes nothing
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if hasattr(signal, "SIGHUP"):
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if argv is None:
        _forget_caught_interrupts()
    return code


def _forget_caught_interrupts() -> None:
    # CPython marks a KeyboardInterrupt that leaves any string exec/eval (dataclasses and
    # namedtuple build their methods that way, in every import) as "unhandled", even when a caller
    # catches it, and under ``python -m`` then ends the process by SIGINT (exit -2) whatever code
    # sys.exit was given. Each string eval clears that mark as it starts: one empty eval forgets it
    exec("None", {})


def _main(words: list[str], own_process: bool, signals: _sigterm_raises | None = None) -> int:
    command, debug = "ppverify", False
    parser: argparse.ArgumentParser | None = None
    args: argparse.Namespace | None = None
    try:
        parser = build_parser()
        args = parser.parse_args(words)
        # the console script owns its process (it may end it at a hard time limit); a call of
        # main() from Python code (tests, scripts) never does
        args._own_process = own_process
        args._signals = signals  # which signal stopped it, for a command that keeps its result (stopped)
        debug = args.debug
        command = f"ppverify {args.command}" if getattr(args, "command", None) else command
        if not getattr(args, "_run", None):
            parser.print_help()
            print(f"{command}: error: a command is required (see {command} --help)", file=sys.stderr)
            return EXIT_INPUT
        from .empty import refuse_empty_command_values

        refuse_empty_command_values(parser, args)  # `--schedules ''` is refused, never the default
        grace = GRACE_S if getattr(args, "_ends_on_signal", False) else None
        with op_limit(args.max_ops), memory_limit(args.max_memory_gib), ends_within(args, command, grace):
            code = args._run(args)
    except SystemExit as exc:  # argparse already printed its one line (or --help its text)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_INPUT)
    except PPVerifyError as exc:
        text = str(exc)
        if isinstance(exc, ParameterError) and parser is not None and args is not None:
            text = as_typed(exc, _parsers(parser, args), args, words)
        print(f"{command}: error: {one_line(text)}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # a write the guard did not see (a binary stream): the verdict is lost
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt as exc:  # before the command line is parsed: the word that names it
        return _interrupted(exc, _named(command, words))
    except tuple(_INPUT_FAILURES) as exc:
        if signals is not None and signals.received and not debug:
            return _interrupted(signals.interrupt(), _named(command, words))
        if debug:
            traceback.print_exc()
        rule = next(v for k, v in _INPUT_FAILURES.items() if isinstance(exc, k))
        print(f"{command}: error: {rule} ({type(exc).__name__}: {one_line(str(exc))[:200]})", file=sys.stderr)
        return EXIT_INPUT
    except Exception as exc:
        # a Ctrl-C or SIGTERM raised inside an import or a library is often turned into another
        # exception there ("ImportError: initialization failed"): the signal's consequence, no bug
        if signals is not None and signals.received and not debug:
            return _interrupted(signals.interrupt(), _named(command, words))
        if debug:
            traceback.print_exc()
            return EXIT_INTERNAL
        print(
            f"{command}: internal error (a bug in ppverify; rerun with --debug for the traceback): "
            f"{type(exc).__name__}: {one_line(str(exc))[:300]}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return int(code or 0)


def as_typed(
    exc: ParameterError, parsers: Sequence[argparse.ArgumentParser], args: argparse.Namespace, words: Sequence[str]
) -> str:
    """The text of ``exc`` with the parameter named as the user typed it when it is one of the
    command's options: ``parameter --workers=0: ...``, ``parameter -p=3: ...``. The one place that
    applies the convention: a library raises with the bare name (``workers``), which Python
    callers see. The name matches an option by its ``dest`` (``-`` read as ``_``) or by one of its
    option strings, with or without its dashes (``p`` for ``-p``, whatever its ``dest``), and only when the option was given and holds the value the error names (a
    file's ``m`` is not the ``-m`` given beside it); anything else (``programs``) keeps its name.

    Example:
        >>> p = argparse.ArgumentParser(prog="ppverify sweep")
        >>> _ = p.add_argument("--workers", type=int); _ = p.add_argument("-p", type=int)
        >>> args = p.parse_args(["--workers", "0", "-p", "3"])
        >>> as_typed(ParameterError("workers", 0, "must be >= 1"), [p], args, ["--workers", "0"])
        'parameter --workers=0: must be >= 1'
        >>> as_typed(ParameterError("p", 3, "needs an even p"), [p], args, ["-p3"])
        'parameter -p=3: needs an even p'
        >>> as_typed(ParameterError("p", 5, "read from a file"), [p], args, ["-p", "3"])  # not the -p given
        'parameter p=5: read from a file'
    """
    text = str(exc)
    prefix = f"parameter {exc.name}="
    if not text.startswith(prefix):
        return text
    dest = str(exc.name).replace("-", "_")
    for parser in parsers:
        for action in parser._actions:  # argparse keeps no public list of a parser's arguments
            spelled = {*action.option_strings, *(o.lstrip("-") for o in action.option_strings)}
            if not action.option_strings or (exc.name not in spelled and action.dest != dest):
                continue
            value = getattr(args, action.dest, action.default)
            if value is action.default or not _holds(value, exc.value):
                continue
            typed = [o for o in action.option_strings if any(w == o or w.startswith(o + "=") for w in words)]
            if not typed:  # ``-p3``, or an abbreviation (``--work``): its full name
                typed = [max(action.option_strings, key=len)]
            return f"parameter {typed[0]}=" + text[len(prefix) :]
    return text


def _holds(parsed: object, value: object) -> bool:
    # the value an error names is the option's own: the same, or one of a list's items (a comma
    # list typed as one word too: --budgets 1,2 refused for its 1)
    items = list(parsed) if isinstance(parsed, (list, tuple)) else [parsed]
    if isinstance(parsed, str) and "," in parsed:
        items += [word.strip() for word in parsed.split(",")]
    for item in [parsed, *items]:
        try:
            # stripped too: a library reads "0.5 " as typed and names the value it read
            if item is value or str(item).strip() == str(value).strip() or bool(item == value):
                return True
        except (ValueError, TypeError):  # an array's ambiguous truth: not the same value
            continue
    return False


def _parsers(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[argparse.ArgumentParser]:
    # the running command's parser first (its options), then the main one (the global options)
    out = [
        action.choices[args.command]
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction) and getattr(args, "command", None) in action.choices
    ]
    return [*out, parser]


def _named(command: str, words: list[str]) -> str:
    # before the command line is parsed, the command is named by the word that names it
    return command if command != "ppverify" else _command_name(words)


def _interrupted(exc: KeyboardInterrupt, command: str) -> int:
    print(f"{command}: {stop_words(exc)}", file=sys.stderr)
    return stop_code(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
