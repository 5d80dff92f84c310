"""The ping-pong link fit (``fit_link``) reads the lower envelope of the samples: a stalled size
cannot tilt the line into a negative slope, the latency never exceeds the smallest message's time,
and sizes whose times do not grow are refused (``calibrate``) rather than written as an infinite
bandwidth."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppverify.measure.calibrate as cal
from ppverify.cli import main
from ppverify.measure.fit import LinkFitError, fit_link

# the bug hunt's calibration (/work/scratch/hsweep/cal.yaml): the 4 B size stalled
STALLED = [(4, 5196.4e-6), (16384, 61.8e-6), (1048576, 356.2e-6)]


def test_a_stalled_small_size_does_not_tilt_the_line():
    # by hand from the two consistent sizes: slope (356.2 - 61.8) us / (1048576 - 16384) B
    # = 294.4e-6 / 1032192 = 2.8522e-10 s/B -> 3.506e9 B/s; latency 61.8 us - 16384 * 2.8522e-10 s
    # = 61.8 - 4.673 = 57.13 us (least squares gave a negative slope: "bytes / inf GB/s", 2667.6 us)
    lat, bw = fit_link(STALLED, strict=True)
    assert bw == pytest.approx(3.506e9, rel=1e-3)
    assert lat == pytest.approx(57.13e-6, rel=1e-3)


def test_each_size_keeps_its_least_time():
    # repeated sizes: the line through the least of each (1 us + 1 ns/B), the slower repeats above it
    lat, bw = fit_link([(0, 5e-6), (0, 1e-6), (1000, 2e-6), (1000, 9e-6), (2000, 3e-6)])
    assert (lat, bw) == pytest.approx((1e-6, 1e9))


@settings(max_examples=40, deadline=None)
@given(
    lat=st.floats(1e-6, 1e-3),
    bw=st.floats(1e8, 1e11),
    extra=st.lists(st.floats(0.0, 5e-3), min_size=5, max_size=5),
)
def test_latency_is_never_above_the_smallest_message_time(lat, bw, extra):
    # a loaded machine only adds time: whatever it adds, the fitted line stays under every sample
    sizes = (4, 1024, 1 << 16, 1 << 20, 1 << 22)
    samples = [(n, lat + n / bw + e) for n, e in zip(sizes, extra)]
    got_lat, got_bw = fit_link(samples)
    assert got_lat <= samples[0][1] + 1e-15
    if got_bw != float("inf"):
        assert all(got_lat + n / got_bw <= t * (1 + 1e-9) for n, t in samples)


def test_times_that_do_not_grow_are_refused_naming_the_sizes():
    falling = [(4, 200e-6), (1 << 20, 100e-6)]
    with pytest.raises(LinkFitError, match=r"\(4 B: 200\.0 us, 1048576 B: 100\.0 us\): no link bandwidth"):
        fit_link(falling, strict=True)
    # not strict (a trace's link, one size): the flat line at the least time
    assert fit_link(falling) == (100e-6, float("inf"))
    assert fit_link([(128, 3e-4), (128, 2e-4)]) == (2e-4, float("inf"))


def test_calibrate_refuses_a_link_without_bandwidth_before_the_overhead_runs(monkeypatch, capsys):
    monkeypatch.setattr(cal, "pingpong", lambda *a, **kw: [(4, 300e-6), (1 << 16, 250e-6), (1 << 20, 200e-6)])
    monkeypatch.setattr(cal, "overhead_runs", lambda **kw: pytest.fail("ran the overhead schedules"))
    assert main(["calibrate", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "the ping-pong samples do not grow with the message size (4 B: 300.0 us" in err
    assert "Traceback" not in err
