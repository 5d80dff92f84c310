"""``verify --makespan-le`` times what ``simulate`` times: the least T it accepts is the ``async``
engine's makespan for every family and every sync mode, the replica all-reduce of the two-pipe
placements (chimera, chimera-asym, dualpipe) and the data-parallel all-reduce included.

Two abstractions checked against each other: Z3's difference-logic problem (verify/timing.py) and
the event-driven engine (engines/simulate.py); the issue's example is derived by hand.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.comm import SYNC_MODES, FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.schedules import build, families
from ppverify.systems.replica_sync import replica_groups
from ppverify.verify import verify

TWO_PIPES = ("chimera", "chimera-asym", "dualpipe")
SIZES = ((2, 2), (2, 4), (4, 4), (4, 8), (3, 6))


def _least_t_is_the_makespan(s, costs, comm, sync, dp):
    ms = run(s, costs, comm, semantics="async", sync=sync, dp_allreduce=dp).makespan
    assert verify(s, costs, comm, makespan_le=ms, sync=sync, dp_allreduce=dp).valid, (s.describe(), sync, dp, ms)
    r = verify(s, costs, comm, makespan_le=ms - 1e-3, sync=sync, dp_allreduce=dp)
    assert [v.prop for v in r.violations] == ["timing"], (s.describe(), sync, dp, ms)
    return ms


@pytest.mark.parametrize("sync", SYNC_MODES)
@pytest.mark.parametrize("family", TWO_PIPES)
def test_two_pipe_families_include_the_replica_all_reduce(family, sync):
    for p, m in SIZES:
        try:
            s = build(family, p=p, m=m)
        except ParameterError:
            continue
        c = CostModel.abstract(s.placement, F=1, B=2)
        with_sync = _least_t_is_the_makespan(s, c, FixedDelay(1), sync, 0)
        without = run(s, c, FixedDelay(1), semantics="async", sync="none").makespan
        # the all-reduce ends after the last backward of its stage: it can only lengthen the step
        assert with_sync >= without
        if sync == "after-flush" and p == 2 and replica_groups(s):
            # a replica group of both devices waits for every op of the step, then takes a ring
            # of 2: 2(n-1)c = 2 after the last op
            assert with_sync == without + 2
    # every two-pipe family has a size inside its rules above (else this test checked nothing)
    assert any(_buildable(family, p, m) for p, m in SIZES)


def _buildable(family: str, p: int, m: int) -> bool:
    try:
        build(family, p=p, m=m)
    except ParameterError:
        return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    family=st.sampled_from(sorted(f.name for f in families())),
    size=st.sampled_from(SIZES),
    F=st.sampled_from([0.5, 1, 2]),
    B=st.sampled_from([1, 2, 3]),
    delay=st.sampled_from([0, 0.25, 1, 2]),
    sync=st.sampled_from(SYNC_MODES),
    dp=st.sampled_from([0, 2, 4]),
)
def test_least_accepted_t_is_the_engines_makespan(family, size, F, B, delay, sync, dp):
    p, m = size
    try:
        s = build(family, p=p, m=m)
    except ParameterError:
        assume(False)
    _least_t_is_the_makespan(s, CostModel.abstract(s.placement, F=F, B=B), FixedDelay(delay), sync, dp)


def test_the_issue_example_by_hand(capsys):
    # chimera p=2 m=2, F=1, B=2, one unit per transfer: microbatch 0 down pipe 0 (stage 0 on device
    # 0), microbatch 1 up pipe 1 (stage 0 on device 1). Forwards end at 1 and 3 (one transfer
    # between), backwards at 5 and 8; stage 0's gradients are all-reduced over both devices once
    # its last backward ends (eager) or both devices are done (after-flush): a ring of 2 takes
    # 2(n-1) = 2 transfers, so the step ends at 10; without the all-reduce at 8.
    base = ["verify", "chimera", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--comm-delay", "1", "--json"]
    for sync, expected in (("eager", 10), ("after-flush", 10), ("none", 8)):
        flags = [] if sync == "eager" else ["--sync", sync]  # eager is the default, as in simulate
        assert main(base + flags + ["--makespan-le", str(expected)]) == 0
        data = json.loads(capsys.readouterr().out)
        proved = {x["property"]: x["statement"] for x in data["proved"]}
        assert f"witness finishes at {expected} units)" in proved["timing"]
        assert main(base + flags + ["--makespan-le", str(expected - 0.5)]) == 1
        data = json.loads(capsys.readouterr().out)
        assert [v["property"] for v in data["violations"]] == ["timing"]
        assert f"the earliest finish is {expected}" in data["violations"][0]["message"]
    assert main(["simulate", *base[1:-1], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan"] == 10


def test_a_saved_files_collectives_are_used(tmp_path, capsys):
    # a file saved with after-flush sync and a data-parallel all-reduce: verify times it as
    # simulate does (the file's settings), and the options replace them
    from ppverify.io.json_comm import CommSettings
    from ppverify.io.json_format import save_json

    s = build("chimera", p=2, m=2)
    f = tmp_path / "c.json"
    save_json(s, f, CostModel.abstract(s.placement, F=1, B=2), comm=CommSettings(FixedDelay(1), "none", 2))
    assert main(["simulate", str(f), "--json"]) == 0
    ms = json.loads(capsys.readouterr().out)["makespan"]
    # none: compute ends at 8 on both devices; a DP all-reduce of 2 replicas: 2(n-1)c = 2 more
    assert ms == 10
    assert main(["verify", str(f), "--makespan-le", "10"]) == 0
    assert main(["verify", str(f), "--makespan-le", "9.5"]) == 1
    # --costs replaces the file's cost model: F=1,B=1 ends compute at 6, the DP all-reduce at 8
    assert main(["verify", str(f), "--makespan-le", "8", "--costs", "F=1,B=1"]) == 0
    assert main(["verify", str(f), "--makespan-le", "7.5", "--costs", "F=1,B=1"]) == 1
    capsys.readouterr()


def test_a_bad_sync_is_refused():
    s = build("chimera", p=2, m=2)
    with pytest.raises(ParameterError, match="sync"):
        verify(s, makespan_le=1, sync="later")
    with pytest.raises(ParameterError, match="dp-allreduce"):
        verify(s, makespan_le=1, dp_allreduce=-1)
