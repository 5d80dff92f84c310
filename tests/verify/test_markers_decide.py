"""PyTorch's rules for what its runtime runs as written (gradient reduction, sharding, every
transfer written) follow the programs' markers, not a file's labels."""

from __future__ import annotations

import json
import subprocess
import sys

from ppverify.io.json_format import loads_document
from ppverify.verify import verify

# ZB-V-like V schedule, p = 2, m = 1, written out by hand: stages 0 and 3 on rank 0, 1 and 2 on
# rank 1; 0REDUCE_GRAD comes before 0W0, so microbatch 0's weight gradient of stage 0 is
# accumulated after the reduction (docs/pytorch.md: REDUCE_GRAD after the stage's last B/W)
EARLY = [
    [
        "0F0",
        "0SEND_F0",
        "3RECV_F0",
        "3F0",
        "3I0",
        "3SEND_B0",
        "0RECV_B0",
        "0I0",
        "0REDUCE_GRAD",
        "0W0",
        "3W0",
        "3REDUCE_GRAD",
    ],
    [
        "1RECV_F0",
        "1F0",
        "2F0",
        "2SEND_F0",
        "2RECV_B0",
        "2I0",
        "1I0",
        "1SEND_B0",
        "1W0",
        "2W0",
        "1REDUCE_GRAD",
        "2REDUCE_GRAD",
    ],
]


def _doc(label: bool) -> dict:
    params = {"p": 2, "m": 1, **({"format": "compute_comms"} if label else {})}
    return {
        "format": "ppverify-schedule",
        "version": 1,
        "family": "hand",
        "params": params,
        "p": 2,
        "m": 1,
        "placement": {"name": "v", "maps": [[0, 1, 1, 0]]},
        "pipe_of_mb": [0],
        "programs": EARLY,
    }


def test_a_label_does_not_decide_the_reduction_verdict():
    for label in (True, False):
        s = loads_document(json.dumps(_doc(label))).schedule
        r = verify(s)
        assert not r.valid, label
        assert [v.prop for v in r.violations] == ["reduction"], (label, [v.prop for v in r.violations])


def test_markers_without_transfers_in_a_json_are_missing_transfers(tmp_path):
    # a ppverify JSON holding markers is PyTorch's runtime flavour, run as written: its 4 transfers
    # between ranks (activations 0->1 and 2->3, gradients 3->2 and 1->0) must be written; none is
    doc = _doc(False)
    doc["programs"] = [[a for a in prog if "SEND" not in a and "RECV" not in a] for prog in EARLY]
    f = tmp_path / "noxfer.json"
    f.write_text(json.dumps(doc))
    out = subprocess.run([sys.executable, "-m", "ppverify", "verify", str(f)], capture_output=True, text=True)
    assert out.returncode == 1 and "never received" in out.stdout
