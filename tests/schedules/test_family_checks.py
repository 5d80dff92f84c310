"""A family's formula takes the generator's parameter rules, a file's schedule is checked against
its family's build before the formula applies, the default m = p is named when a family refuses
it, and the forward order schedule-families.md states for interleaved-1f1b holds."""

from __future__ import annotations

import dataclasses

import pytest

from ppverify.core.errors import ParameterError
from ppverify.engines.formulas import formula_for
from ppverify.io.json_format import dumps, loads_document
from ppverify.schedules import build, families
from ppverify.schedules.family_checks import default_m_refused, family_mismatch, suggest_m


@pytest.mark.parametrize(
    "params,name",
    [({"offset": 1.5}, "offset"), ({"down": 2.0}, "down"), ({"down": 4}, "down"), ({"units": "zz"}, "units")],
)
def test_chimera_asym_formula_refuses_what_build_refuses(params, name):
    with pytest.raises(ParameterError) as built:
        build("chimera-asym", 4, 8, **params)
    with pytest.raises(ParameterError) as formula:
        formula_for("chimera-asym", 4, 8, {"F": 1, "B": 2}, **params)
    assert built.value.name == formula.value.name == name
    assert str(built.value) == str(formula.value)


def test_chimera_asym_down_states_its_rule():
    # down must be an integer in 1..p-1 (p = 4: 1..3); "an integer >= 0" was not the rule
    with pytest.raises(ParameterError) as exc:
        build("chimera-asym", 4, 8, down=2.0)
    assert "an integer down with 1 <= down <= p-1 = 3" in str(exc.value)
    assert ">= 0" not in str(exc.value)


def _forward_rule(p: int, m: int, v: int, d: int, k: int) -> tuple[int, int]:
    """schedule-families.md: rounds of n = m div max(1, m div p); the k-th forward runs chunk
    (k div n) mod v (stage chunk*p + d in the loop placement) of microbatch (k div n*v)*n + k mod n."""
    n = m // max(1, m // p)
    return ((k // n) % v) * p + d, (k // (n * v)) * n + k % n


def test_interleaved_forward_order_as_documented():
    # by hand at p=4, m=6, v=2: one round of n = 6, so device 0 runs 0F0..0F5 then 4F0..4F5
    # (the old text's (k div p*v)*p + k mod p made k=4 the chunk-1 op 4F0)
    s = build("interleaved-1f1b", 4, 6, v=2)
    forwards = [str(op) for op in s.programs[0] if op.kind == "F"]
    assert forwards == [f"0F{i}" for i in range(6)] + [f"4F{i}" for i in range(6)]
    for p, m, v in [(4, 6, 2), (5, 6, 2), (4, 8, 2), (3, 4, 3), (7, 9, 3), (4, 3, 2), (2, 6, 2)]:
        s = build("interleaved-1f1b", p, m, v=v)
        for d in range(p):
            fw = [(op.stage, op.mb) for op in s.programs[d] if op.kind == "F"]
            assert fw == [_forward_rule(p, m, v, d, k) for k in range(m * v)], (p, m, v, d)


def _round_trip(s):
    return loads_document(dumps(s)).schedule


def test_every_family_matches_its_own_build_after_a_json_round_trip():
    # a file saved from a family, not edited: its formula applies
    for fam in families():
        for p, m in [(4, 8), (2, 4)]:
            try:
                s = build(fam.name, p, m)
            except ParameterError:
                continue
            assert family_mismatch(_round_trip(s)) is None, fam.name
    s = build("chimera-asym", 4, 8, offset=5, down=3, units="concat")  # offset 5 is stored as 1 (mod p)
    assert family_mismatch(_round_trip(s)) is None


def test_an_edited_file_is_not_its_family():
    # GPipe's programs under 1F1B's name. 1F1B's device d runs min(p-d, m) forwards before its
    # first backward: device 0 three (as GPipe), device 1 two, so its action 2 is 1B0 where GPipe
    # runs 1F2
    s = dataclasses.replace(build("gpipe", 3, 3), family="1f1b", params={"p": 3, "m": 3})
    why = family_mismatch(_round_trip(s))
    assert why is not None and "not 1f1b's at p=3 m=3" in why and "device 1, action 2: 1F2 where 1f1b runs 1B0" in why
    # a family's name with no registered family: nothing to compare
    assert family_mismatch(dataclasses.replace(s, family="custom")) is None


def test_suggest_m_is_the_smallest_m_the_family_takes():
    # dualpipe: an even m >= 2p; dualpipev: m >= 2p; 1f1b takes m = p + 1 already
    assert suggest_m("dualpipe", 4, {}) == 8
    assert suggest_m("dualpipe", 2, {}) == 4
    assert suggest_m("dualpipev", 5, {}) == 10
    assert suggest_m("1f1b", 3, {}) == 4


def test_default_m_refused_names_the_default_and_the_fix():
    with pytest.raises(ParameterError) as exc:
        build("dualpipe", 4, 4)
    text = str(default_m_refused(exc.value, "dualpipe", 4, {}))
    assert text.startswith("parameter m=4: -m was not given, so m = p = 4 (the default)")
    assert "needs an even m >= 2p = 8" in text and text.endswith("give -m 8")
    # an error about another parameter (chimera's odd p) is left as it is
    with pytest.raises(ParameterError) as odd:
        build("chimera", 3, 3)
    assert default_m_refused(odd.value, "chimera", 3, {}) is odd.value
