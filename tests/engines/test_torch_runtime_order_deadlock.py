"""The ``runtime`` engine refuses an order that cannot complete, as ``slot``/``async`` do.

``printf '0B0,0F0\\n' > rev.csv`` (p=1 m=1, a backward before its own forward): ``simulate``
(slot, async, contention) exited 2 with ``deadlock: device 0 waits in 0B0 for 0F0 on device 0``,
while ``--semantics runtime`` timed it (30.5 ms on calibrated-2core): the hand-over walk waits
only for cross-rank data, never for an op's own device. The engine now runs the shared
program-order check (:mod:`ppverify.core.program_order`) first, with its wording.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.comm import NO_COMM
from ppverify.core.costs import CostModel
from ppverify.core.errors import DeadlockError
from ppverify.engines import run
from ppverify.engines.runtime import Handover
from ppverify.io.torch_csv import parse_rows
from ppverify.schedules import build

# by hand: device 0 holds 0B0 then 0F0; 0B0 needs its own forward 0F0, which comes after it on
# the same device, so device 0 stops at 0B0 waiting for 0F0 (DeadlockError's wording:
# "device D waits in OP for DEP", the dependency named with its device)
REV = [["0B0", "0F0"]]
REV_MSG = "deadlock: device 0 waits in 0B0 for 0F0 on device 0"
# by hand: device 0 runs 0F0, then 0B0 needs stage 1's gradient 1B0 (device 1); device 1 starts
# with 1B0, which needs its own forward 1F0, listed after it: each waits, neither runs
TWO = [["0F0", "0B0"], ["1B0", "1F0"]]
TWO_MSG = "deadlock: device 0 waits in 0B0 for 1B0 on device 1; device 1 waits in 1B0 for 1F0 on device 1"
# by hand: split backward, device 0 lists 0W0 before its 0I0 (W needs I): device 0 runs 0F0 and
# stops at 0W0; device 1 (1F0, 1I0, 1W0) completes
W_FIRST = [["0F0", "0W0", "0I0"], ["1F0", "1I0", "1W0"]]
W_MSG = "deadlock: device 0 waits in 0W0 for 0I0 on device 0"
PRESET = Path(__file__).resolve().parents[2] / "examples" / "systems" / "calibrated-2core.yaml"


@pytest.mark.parametrize(("rows", "msg"), [(REV, REV_MSG), (TWO, TWO_MSG), (W_FIRST, W_MSG)])
def test_runtime_refuses_an_order_deadlock_as_async_does(rows, msg):
    s = parse_rows(rows)
    with pytest.raises(DeadlockError) as runtime:
        run(s, semantics="runtime", model=Handover())
    assert str(runtime.value) == msg
    with pytest.raises(DeadlockError) as other:  # the same words as the async engine's
        run(s, semantics="async")
    assert str(runtime.value) == str(other.value)


def test_runtime_still_times_a_runnable_order():
    # gpipe p=2 m=1, F=1 B=2, each hand-over one wake (0.5): 0F0 [0,1], 1F0 [1.5,2.5],
    # 1B0 [2.5,4.5], 0B0 [5,7]: makespan 7 (runtime_timeline's docstring)
    s = build("gpipe", p=2, m=1)
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), NO_COMM, "runtime", model=Handover(wake=0.5))
    assert tl.makespan == 7.0


def test_simulate_semantics_runtime_exits_2_on_a_backward_before_its_forward(tmp_path, capsys):
    f = tmp_path / "rev.csv"
    f.write_text("0B0,0F0\n")
    args = ["--semantics", "runtime", "--costs", "F=0.01,B=0.02", "--system", str(PRESET)]
    assert main(["simulate", str(f), *args]) == 2
    assert REV_MSG in capsys.readouterr().err
