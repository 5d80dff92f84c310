"""One parser of placements given as text (``--placement``), used by ``show``, ``import`` and
``optimize``: maps derived by hand from each placement's definition."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.errors import ParameterError
from ppverify.core.placement import placement_from_map, placement_from_text
from ppverify.io.rows_placement import resolve_placement


@pytest.mark.parametrize(
    "text,p,kw,maps",
    [
        ("linear", 3, {}, ((0, 1, 2),)),
        (" LINEAR ", 2, {}, ((0, 1),)),
        ("loop", 2, {}, ((0, 1, 0, 1),)),  # two chunks per device when --v is not given
        ("loop", 2, {"v": 3}, ((0, 1, 0, 1, 0, 1),)),
        ("loop", 2, {"num_stages": 6}, ((0, 1, 0, 1, 0, 1),)),  # chunks from a file's stages
        ("v", 3, {}, ((0, 1, 2, 2, 1, 0),)),
        ("wave", 2, {}, ((0, 1, 1, 0),)),
        ("wave", 2, {"waves": 2}, ((0, 1, 1, 0, 0, 1, 1, 0),)),
        ("wave", 2, {"num_stages": 8}, ((0, 1, 1, 0, 0, 1, 1, 0),)),
        ("bidirectional", 3, {}, ((0, 1, 2), (2, 1, 0))),
        ("bidirectional", 3, {"offset": 1}, ((0, 1, 2), (0, 2, 1))),  # pipe 1: (p-1-s+1) mod p
        ("0,1,1,0", 2, {}, ((0, 1, 1, 0),)),
        ("1, 0", 2, {}, ((1, 0),)),
    ],
)
def test_named_and_explicit_placements(text, p, kw, maps):
    assert placement_from_text(text, p, **kw).maps == maps


def test_explicit_maps_take_the_name_they_match():
    assert placement_from_text("0,1,1,0", 2).name == "v"
    assert placement_from_text("0,1,0,1", 2).name == "loop"
    assert placement_from_text("0,1", 2).name == "linear"
    assert placement_from_text("1,0", 2).name == "custom"


@pytest.mark.parametrize(
    "text,p,kw,needle",
    [
        ("ring", 2, {}, "parameter placement=ring: expected one of linear, loop, v, wave, bidirectional"),
        ("loop", 2, {"num_stages": 3}, "loop needs the 3 stages to be a multiple of p=2"),
        ("wave", 2, {"num_stages": 6}, "wave needs the 6 stages to be a multiple of 2p=4"),
        ("0,x", 2, {}, "one rank (an integer >= 0) per stage"),
        ("0,5", 2, {}, "device must be in 0..1"),
        ("loop", 2, {"v": 0}, "v=0: must be >= 1"),
    ],
)
def test_bad_placements_are_one_line_errors(text, p, kw, needle):
    with pytest.raises(ParameterError) as exc:
        placement_from_text(text, p, **kw)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["linear", "loop", "v", "wave"]),
    p=st.integers(1, 6),
    k=st.integers(1, 3),
)
def test_a_placement_written_as_its_map_reads_back_the_same(name, p, k):
    pl = placement_from_text(name, p, v=k, waves=k)
    again = placement_from_text(",".join(map(str, pl.maps[0])), p)
    assert again.maps == pl.maps
    # the name a map takes describes it truly: building that name gives the map back
    if again.name != "custom":
        assert placement_from_text(again.name, p, num_stages=pl.num_stages).maps == pl.maps
    if p > 1 and (name in ("linear", "v") or (name == "loop" and k > 1)):  # on one device v is a loop
        assert again.name == name
    assert placement_from_map(p, list(pl.maps[0])).maps == pl.maps


@pytest.mark.parametrize("spec", ["linear", "loop", "v", "0,1,1,0"])
def test_the_csv_reader_uses_the_same_parser(spec):
    want = placement_from_text(spec, 2, num_stages=4 if spec != "linear" else 2)
    assert resolve_placement(spec, 2, want.num_stages, {}, "x.csv") == want
