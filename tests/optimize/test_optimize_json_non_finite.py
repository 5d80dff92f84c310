"""``optimize --json`` names an INFEASIBLE problem's nulled bound under ``non_finite_as_null``, as
every command's ``--json`` names the numbers it wrote as null (docs/optimization.md: "In `--json`
an `INFEASIBLE` problem's bound (infinite: no schedule) is `null`, named under
`non_finite_as_null`")."""

from __future__ import annotations

import json

from ppverify.cli import main


def test_an_infeasible_bound_is_named_where_it_is_nulled(capsys):
    # V, p = 2: device 0 holds stages 0 and 3 (0.5 activations each); a microbatch's forward
    # reaches stage 3 before a backward frees stage 0, so 2 x 0.5 = 1 activation is needed and a
    # cap of 0.75 holds no schedule: INFEASIBLE (exit 1), its bound infinite
    argv = ["optimize", "-p", "2", "-m", "2", "--placement", "v", "--memory-cap", "0.75", "--json"]
    assert main(argv) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "INFEASIBLE" and out["bound"] is None
    assert out["non_finite_as_null"] == {"bound": "inf"}
    # every key non_finite_as_null names is null in the output, and no other number was nulled
    assert all(out[k] is None for k in out["non_finite_as_null"])


def test_a_feasible_optimum_has_nothing_nulled(capsys):
    # 1F1B's order, p = 2, m = 2, F = 1, B = 2 with no delay: (m + p - 1)(tF + tB) = 3 x 3 = 9, a
    # finite bound and value: nothing nulled, nothing named
    assert main(["optimize", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--evaluate", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["value"], out["bound"]) == (9.0, 9.0) and "non_finite_as_null" not in out
