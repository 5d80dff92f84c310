"""A Hanayo schedule of two waves written as a PyTorch CSV reads back with its placement named
``wave`` (it read ``custom``: only linear, loop and v maps were recognised)."""

from __future__ import annotations

from ppverify.core.placement import placement_from_map
from ppverify.io.torch_csv import csv_text, parse_rows
from ppverify.schedules import build


def test_two_waves_round_trip_as_wave():
    # Hanayo p=2, 2 waves: S = 2*W*p = 8 stages; stage s on q = s mod 4 if q < 2 else 3 - q,
    # i.e. 0 1 1 0 | 0 1 1 0
    text = csv_text(build("hanayo", p=2, m=4, waves=2))
    back = parse_rows([line.split(",") for line in text.splitlines()], "h.csv")
    assert back.placement.maps == ((0, 1, 1, 0, 0, 1, 1, 0),)
    assert back.placement.name == "wave" and back.params["placement"] == "wave"


def test_wave_maps_are_named_and_others_stay_custom():
    # p=3, 3 waves: 0 1 2 2 1 0 repeated three times
    assert placement_from_map(3, [0, 1, 2, 2, 1, 0] * 3).name == "wave"
    # one wave is the V, and a loop stays a loop
    assert placement_from_map(2, [0, 1, 1, 0]).name == "v"
    assert placement_from_map(2, [0, 1, 0, 1, 0, 1, 0, 1]).name == "loop"
    # a V followed by a loop-like half is neither
    assert placement_from_map(2, [0, 1, 1, 0, 0, 1, 0, 1]).name == "custom"
