"""Errors ppverify raises for bad input; the CLI turns them into one-line messages and exit code 2."""

from __future__ import annotations


class PPVerifyError(Exception):
    """Base class of every error caused by user input (parameters, files, presets).

    Example:
        >>> str(PPVerifyError("m must be >= 1"))
        'm must be >= 1'
    """


class ParameterError(PPVerifyError, ValueError):
    """A generator or command parameter breaks a rule.

    Example:
        >>> str(ParameterError("p", 3, "chimera needs an even p"))
        'parameter p=3: chimera needs an even p'
    """

    def __init__(self, name: str, value: object, rule: str) -> None:
        self.name, self.value, self.rule = name, value, rule
        shown = str(value)
        if len(shown) > 80:  # a pasted file or a 5,000-digit number: enough to recognise it
            shown = f"{shown[:60]}... ({len(shown)} characters)"
        super().__init__(f"parameter {name}={shown}: {rule}")


class ScheduleFileError(PPVerifyError):
    """A schedule, preset or config file is malformed: names the file, the location and the rule.

    Example:
        >>> str(ScheduleFileError("s.json", "programs[1][3]", "unknown op kind 'X'"))
        "s.json: programs[1][3]: unknown op kind 'X'"
    """

    def __init__(self, path: str, location: str, rule: str) -> None:
        self.path, self.location, self.rule = path, location, rule
        # a line (and column) joins the path as compilers write it: s.json:3:14: rule
        sep = ":" if location and location.replace(":", "").isdigit() else ": "
        where = f"{path}{sep}{location}" if location else str(path)
        super().__init__(f"{where}: {rule}")


class InvalidScheduleError(PPVerifyError):
    """A schedule is structurally invalid for an engine (missing/extra ops, deadlock ...).

    Example:
        >>> str(InvalidScheduleError("op 0F1 appears twice"))
        'op 0F1 appears twice'
    """


class DeadlockError(InvalidScheduleError):
    """Execution cannot complete: every remaining device waits on an op that never runs.

    ``waits`` lists ``(device, waiting_op_text, awaited_op_text)``.

    Example:
        >>> str(DeadlockError([(0, "0B0", "1B0")]))
        'deadlock: device 0 waits in 0B0 for 1B0'
    """

    def __init__(self, waits: list[tuple[int, str, str]]) -> None:
        self.waits = waits
        parts = [f"device {d} waits in {op} for {dep}" for d, op, dep in waits]
        super().__init__("deadlock: " + "; ".join(parts))
