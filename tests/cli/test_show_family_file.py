"""``ppverify show``: sub-microsecond costs, a family's file edited into another order, and a
family that refuses the default m = p."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main


def show_json(capsys, *args) -> dict:
    assert main(["show", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_tiny_costs_are_timed_at_their_size(capsys):
    # GPipe: (m+p-1)(tF+tB) = 7 x 1.2e-6 = 8.4e-6 in 7 x 3 = 21 ticks of 4e-7 (7e-06 before)
    out = show_json(capsys, "gpipe", "-p", "4", "-m", "4", "--costs", "F=0.0000004,B=0.0000008")
    assert out["makespan"] == pytest.approx(8.4e-6, rel=1e-12) and out["ticks"] == 21
    assert out["formula"]["makespan"] == pytest.approx(8.4e-6, rel=1e-12)
    assert out["formula"]["agrees"]["makespan"] is True


def test_costs_that_rounded_to_zero_no_longer_crash(capsys):
    # 1F1B: (m+p-1)(tF+tB) = 3 x 4e-7 = 1.2e-6, 12 ticks of 1e-7 (a ZeroDivisionError before)
    out = show_json(capsys, "1f1b", "-p", "2", "-m", "2", "--costs", "F=1e-7,B=3e-7")
    assert out["makespan"] == pytest.approx(1.2e-6, rel=1e-12) and out["ticks"] == 12


def _saved(capsys, tmp_path, *args) -> tuple[str, dict]:
    path = tmp_path / "s.json"
    assert main(["show", *args, "--save", str(path), "--no-table"]) == 0
    capsys.readouterr()
    return str(path), json.loads(path.read_text())


def test_a_saved_family_file_keeps_its_formula(capsys, tmp_path):
    # not edited: 1F1B's (m+p-1)(tF+tB) = 5 x 3 = 15 and peaks min(p-d, m) = 3 2 1 hold
    path, _ = _saved(capsys, tmp_path, "1f1b", "-p", "3", "-m", "3")
    out = show_json(capsys, path)
    assert out["formula"]["makespan"] == 15 and out["formula"]["agrees"]["peak_activations"] is True


def test_an_edited_family_file_is_not_compared_with_the_formula(capsys, tmp_path):
    path, data = _saved(capsys, tmp_path, "1f1b", "-p", "3", "-m", "3")
    # every forward first (GPipe's order) under 1F1B's name: GPipe's peak m = 3 everywhere, where
    # 1F1B's formula claims min(p-d, m) = 3 2 1; that is no contradiction of the formula
    data["programs"] = [[f"{d}F{i}" for i in range(3)] + [f"{d}B{i}" for i in range(3)] for d in range(3)]
    del data["table"]  # the saved table is the old order's (show checks a file's table against it)
    with open(path, "w") as f:
        json.dump(data, f)
    assert main(["show", path, "--no-table"]) == 0
    captured = capsys.readouterr()
    assert "DIFFERS" not in captured.out and "contradicts" not in captured.err
    assert "formula       not evaluated: the file's schedule is not 1f1b's: its programs are not 1f1b's" in captured.out
    assert "the family's formula does not apply" in captured.out
    out = show_json(capsys, path)
    assert out["peak_activations"] == [3, 3, 3] and "unavailable" in out["formula"]


@pytest.mark.parametrize(
    "family,p,hint",
    [
        # dualpipe needs an even m >= 2p, dualpipev m >= 2p (PyTorch's rule): at p = 4 both 8
        ("dualpipe", "4", "needs an even m >= 2p = 8"),
        ("dualpipev", "4", "needs m >= 2p = 8"),
        ("dualpipev", "3", "needs m >= 2p = 6"),  # odd p: 6 = 2p
    ],
)
def test_default_m_refused_says_it_was_the_default(capsys, family, p, hint):
    assert main(["show", family, "-p", p]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"parameter m={p}: -m was not given, so m = p = {p} (the default)" in err
    assert hint in err and err.rstrip().endswith(f"give -m {2 * int(p)}")


def test_m_given_keeps_its_own_message(capsys):
    assert main(["show", "dualpipe", "-p", "4", "-m", "4"]) == 2
    err = capsys.readouterr().err
    assert "parameter -m=4: dualpipe needs an even m >= 2p = 8" in err and "default" not in err
