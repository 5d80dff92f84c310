"""Every exportable family trains correctly in PyTorch's runtime in BOTH CSV flavours.

One :func:`ppverify.measure.measure_many` call (one set of worker processes): each family at
p=2, m=4 written as ``compute_only`` (PyTorch lowers it) and as ppverify's ``compute_comms``
export (run as written); the gradients must equal a plain forward/backward. The control: the
comms file without its REDUCE_GRAD actions trains with gradients m=4 times too large, as the
verifier's reduction rule predicts. Run time: one process start-up plus 23 one-step runs.
"""

from __future__ import annotations

from ppverify.io.torch_csv import parse_rows, to_rows
from ppverify.measure import measure_many
from ppverify.schedules import build, families

TWO_PIPE = ("chimera", "chimera-asym", "dualpipe")
COSTS = {"F": 0.001, "B": 0.002}


def test_every_exportable_family_trains_in_both_flavours():
    names = sorted(f.name for f in families() if f.name not in TWO_PIPE)
    items = []
    for name in names:
        s = build(name, p=2, m=4)
        comms = parse_rows(to_rows(s, "compute_comms"), f"{name}-comms.csv")
        assert comms.params["format"] == "compute_comms"
        items += [(s, COSTS), (comms, COSTS)]
    rows = to_rows(build("1f1b", p=2, m=4), "compute_comms")
    no_reduce = parse_rows([[c for c in row if not c.endswith("REDUCE_GRAD")] for row in rows], "no-reduce.csv")
    items.append((no_reduce, COSTS))
    results = measure_many(items, steps=1, warmup=0, timeout=60)
    for k, name in enumerate(names):
        for flavour, r in (("compute_only", results[2 * k]), ("compute_comms", results[2 * k + 1])):
            assert r.grad_check.ok, (name, flavour, r.grad_check.to_dict())
    bad = results[-1].grad_check
    # REDUCE_GRAD divides the accumulated gradients by m: without it they are m times too large
    assert not bad.ok and bad.max_abs_diff > 1e3 * bad.tolerance and bad.stage in (0, 1)
