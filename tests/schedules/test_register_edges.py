"""Registering a family at its edges: a taken name, a mixed-case name, bad parameters, and a
generator that builds the wrong thing are refused in one line (ParameterError), never registered
half-way nor silently run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ppverify.core.errors import ParameterError
from ppverify.schedules import Family, Param, build, families, get_family, register, registry


@pytest.fixture(autouse=True)
def private_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    families()  # load the built-ins, then work on a copy the test may spoil
    monkeypatch.setattr(registry, "_FAMILIES", dict(registry._FAMILIES))


def one_f_one_b(p: int, m: int) -> object:
    return build("1f1b", p=p, m=m)


def test_taken_name_or_alias_is_refused_and_nothing_registered() -> None:
    with pytest.raises(ParameterError, match="family=gpipe: another family is registered under this name"):
        register(Family("GPipe", one_f_one_b, "not GPipe"))
    # the alias clashes: the new name must not be left behind either
    with pytest.raises(ParameterError, match="family=1f1b: another family"):
        register(Family("fresh-name", one_f_one_b, "x", aliases=("1f1b",)))
    with pytest.raises(ParameterError, match="unknown schedule family"):
        get_family("fresh-name")
    assert get_family("gpipe").description != "not GPipe"


def test_taken_name_refused_at_register_even_before_the_registry_loads() -> None:
    # a user module registering '1f1b' first used to win, then break the built-ins' import
    code = (
        "from ppverify.schedules import Family, register, build\n"
        "try:\n"
        "    register(Family('1f1b', lambda p, m: None, 'mine'))\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n"
        "print(len(build('gpipe', p=2, m=2).programs), build('1f1b', p=2, m=1).family)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "refused: parameter family=1f1b: another family is registered under this name (registered twice); "
        "pick another name",
        "2 1f1b",
    ]


def test_mixed_case_name_is_found() -> None:
    # build() lower-cases the name it is given: a family registered as My-Sched was unreachable
    register(Family("My-Sched", one_f_one_b, "1F1B again"))
    assert build("My-Sched", p=2, m=3).m == 3 and build("my-sched", p=2, m=3).p == 2


@pytest.mark.parametrize("name", ["", "my sched", "a,b"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ParameterError, match="non-empty, without blanks or commas"):
        register(Family(name, one_f_one_b, "x"))


def test_bad_generator_and_params_are_refused() -> None:
    with pytest.raises(ParameterError, match="generator=3: family nc: must be callable"):
        register(Family("nc", 3, "x"))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="params=m: family pm: a parameter name must be unique and not p or m"):
        register(Family("pm", one_f_one_b, "x", params=(Param("m", int, 1, "clashes with m"),)))


def test_generator_building_the_wrong_schedule_is_refused() -> None:
    register(Family("ignores-m", lambda p, m: build("1f1b", p=p, m=m + 1), "one microbatch too many"))
    with pytest.raises(ParameterError, match="asked for p=2 m=2, its generator built a schedule for p=2 m=3"):
        build("ignores-m", p=2, m=2)
    register(Family("not-a-schedule", lambda p, m: "hello", "returns a string"))
    with pytest.raises(ParameterError, match="its generator returned str 'hello', not a Schedule"):
        build("not-a-schedule", p=2, m=2)

    def broken(p: int, m: int) -> object:
        raise KeyError("boom")

    register(Family("broken", broken, "raises"))
    with pytest.raises(ParameterError, match="family=broken: its generator failed at p=2 m=2: KeyError: 'boom'"):
        build("broken", p=2, m=2)
