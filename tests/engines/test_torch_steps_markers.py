"""A ``compute_comms`` export can take more ``torch`` steps than its ``compute_only`` form: PyTorch's
runtime adds its markers before ``_add_send_recv``, and each marker takes one of its rounds.
Expected counts quoted from docs/pytorch.md ("`zbv -p 2 -m 4`: 46 steps, its `torch-csv-comms`
export 47, as PyTorch's own functions count them"; PyTorch 2.13's ``_add_send_recv`` and
``_simulate_comms_compute`` gave 46 and 47 on these lists)."""

from __future__ import annotations

from ppverify.core.lowering import add_send_recv
from ppverify.engines import run
from ppverify.io.torch_lowering import lower_like_pytorch
from ppverify.schedules import build


def test_zbv_compute_comms_export_takes_one_step_more():
    s = build("zbv", p=2, m=4)
    bare, runtime = add_send_recv(s), lower_like_pytorch(s)
    r0_bare = [str(a) for a in bare.programs[0]]
    r0_runtime = [str(a) for a in runtime.programs[0]]
    # the bare lowering posts 0RECV_B3 after 0I2; with rank 0's 3REDUCE_GRAD and 3RESHARD after
    # 3W3 (two rounds) it lands ahead of 0I2, and rank 0 waits there for 1SEND_B3
    assert r0_bare.index("0RECV_B3") == r0_bare.index("0I2") + 1
    assert r0_runtime[r0_runtime.index("3W3") :][:5] == ["3W3", "3REDUCE_GRAD", "0RECV_B3", "3RESHARD", "0I2"]
    assert run(s, semantics="torch").makespan == 46
    assert run(runtime, semantics="torch").makespan == 47
