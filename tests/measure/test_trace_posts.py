"""The SEND/RECV posts' lengths of a trace (ppverify.measure.trace_posts): each step's blocked
time recovered from generated post lengths (by hand: the extra time each rank was given), and
read from a trace ``measure --profile`` recorded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.measure.record import Event
from ppverify.measure.trace_posts import post_times

BASE = 80_000  # ns: a post that returns at once


@settings(max_examples=50, deadline=None)
@given(
    extra=st.lists(
        st.tuples(st.lists(st.integers(0, 5_000_000), min_size=1, max_size=4), st.integers(0, 3_000_000)),
        min_size=3,
        max_size=8,
    ),
    c=st.floats(0.05, 0.5),
)
def test_blocked_time_is_the_extra_of_the_slowest_rank(extra, c):
    """Each step: rank 0 has posts BASE + each of its extras, rank 1 one post BASE + its extra,
    and ten posts of BASE each on both ranks (so the median post is BASE); the step's makespan is
    c + its blocked time. The blocked time is the larger rank's sum of extras, the line's slope 1."""
    steps = []
    for n, (xs, y) in enumerate(extra):
        r0 = [Event("SEND_F", 0, k, 0, BASE + x) for k, x in enumerate(xs)] + [
            Event("RECV_B", 0, k, 0, BASE) for k in range(10)
        ]
        r1 = [Event("RECV_F", 1, 0, 0, BASE + y)] + [Event("SEND_B", 1, k, 0, BASE) for k in range(10)]
        r1.append(Event("F", 1, 0, 0, 10**9))  # a compute op is no post
        blocked = max(sum(xs), y) / 1e9
        steps.append((n + 1, c + blocked, [r0, r1]))
    pt = post_times(steps)
    want = [max(sum(xs), y) / 1e9 for xs, y in extra]
    assert pt is not None and pt.median == pytest.approx(BASE / 1e9)
    assert list(pt.blocked) == pytest.approx(want, abs=1e-12)
    if max(want) - min(want) > 1e-6:
        assert pt.slope == pytest.approx(1.0, rel=1e-6) and pt.r == pytest.approx(1.0, rel=1e-6)


def test_posts_without_lengths_say_nothing():
    # ppverify's own recorder (and device-side traces) mark a post as an instant
    ev = [[Event("SEND_F", 0, 0, 5, 5), Event("F", 0, 0, 0, 5)]]
    assert post_times([(1, 0.1, ev), (2, 0.1, ev), (3, 0.1, ev)]) is None
