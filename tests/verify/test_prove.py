"""Proofs for all sizes: the closed forms are proved by Z3, agree with hand-worked timelines, and a
wrong claim yields a counterexample that really violates it."""

from __future__ import annotations

import json

import pytest
import z3

from ppverify.cli import main
from ppverify.verify.closed_forms import (
    chimera_b,
    chimera_cont_b,
    chimera_cont_f,
    chimera_f,
    f1b1_b,
    f1b1_f,
    gpipe_b,
    ite,
    zmin,
)
from ppverify.verify.prove import D, J, M, P, Theorem, chimera_theorems, closed_form_starts, prove, prove_family


@pytest.mark.parametrize("family", ["gpipe", "1f1b", "chimera", "interleaved-1f1b"])
def test_every_theorem_proved(family):
    res = prove_family(family)
    assert res and all(r.status == "proved" for _, r in res), [r.to_text() for _, r in res if r.status != "proved"]
    names = {r.name for _, r in res}
    assert {"dep F<-F", "dep B<-F", "dep B<-B", "memory", "makespan", "agrees with generator"} <= names


def test_interleaved_m_equals_p_by_hand():
    # p=3, m=3, v=2, F=1, B=2 in chunk ticks (a chunk op is half a share): device 2 holds stages 2
    # and 5; its forwards 2F0..2F2 at 2..4, 5F0..5F2 at 5..7; 5B0 starts when they end, at 8;
    # backwards drain one stage per b = 2 ticks: 4B0 at 10, 3B0 at 12 ... 0B0 at 18, 0B2 at 22
    from ppverify.verify.closed_forms import interleaved_b, interleaved_f

    assert [interleaved_f(3, 2, 5, j, 1, 2) for j in range(3)] == [5, 6, 7]
    assert [interleaved_b(3, 2, s, 0, 1, 2) for s in (5, 4, 3, 0)] == [8, 10, 12, 18]
    # makespan in shares: (p + (p-1)/v)(tF + tB) = (3 + 1) * 3 = 12 = (22 + 2) / 2
    assert (interleaved_b(3, 2, 0, 2, 1, 2) + 2) / 2 == 12


def test_1f1b_closed_form_by_hand():
    # p=2, m=2, F=1, B=2, worked by hand: device 1 runs 1F0 [1,2) 1B0 [2,4) 1F1 [4,5) 1B1 [5,7);
    # device 0 runs 0F0 [0,1) 0F1 [1,2), waits for 1B0, 0B0 [4,6), waits for 1B1, 0B1 [7,9)
    cf = closed_form_starts("1f1b", 2, 2, 1, 2)
    assert cf == {"0F0": 0, "0F1": 1, "0B0": 4, "0B1": 7, "1F0": 1, "1B0": 2, "1F1": 4, "1B1": 5}


def test_gpipe_makespan_by_formula():
    # (m + p - 1)(tF + tB) = 7 * 3 = 21 at p = m = 4, F=1, B=2 (Huang et al., GPipe)
    assert gpipe_b(4, 4, 0, 3, 1, 2) + 2 == 21
    assert f1b1_b(4, 4, 0, 3, 1, 2) + 2 == 21


def test_chimera_unit_by_hand():
    # p=4 basic unit at F=B=1 (Chimera paper fig.: 10 slots); device 1 runs pipe 0 stage 1 and
    # pipe 1 stage 2: 1F0@1, 2F2@2, 1F1@3, 2F3@4, 2B2@5, 1B0@6, 2B3@7, 1B1@8
    assert [chimera_f(4, 1, i) for i in range(2)] == [1, 3]
    assert [chimera_f(4, 2, i) for i in range(2)] == [2, 4]
    assert [chimera_b(4, 2, i) for i in range(2)] == [5, 7]
    assert [chimera_b(4, 1, i) for i in range(2)] == [6, 8]
    assert chimera_b(4, 0, 1) + 1 == 10


def test_chimera_unit_f1_b2_by_hand():
    # p=4, F=1, B=2, worked by hand. Device 0 runs pipe 0's stage 0 (mbs 0, 1) and pipe 1's stage 3
    # (mbs 2, 3; same times as pipe 0's stage 3): 0F0 [0,1) 0F1 [1,2); 3F2 at 3 (after stages 0..2
    # at 0, 1, 2) [3,4), 3B2 [4,6), 3F3 [6,7) (its input ended at 5, the device is busy until 6),
    # 3B3 [7,9); backwards drain one stage per b = 2 from 3B at 4: 2B0 6, 1B0 8, 0B0 10 [10,12);
    # 0B1 waits for 1B1 (at 12, its device 1 alternating with pipe 1's stage 2), so [14,16).
    assert [chimera_f(4, 0, i, 2) for i in range(2)] == [0, 1]
    assert [chimera_f(4, 3, i, 2) for i in range(2)] == [3, 6]
    assert [chimera_b(4, 3, i, 2) for i in range(2)] == [4, 7]
    assert [chimera_b(4, s, 0, 2) for s in (2, 1, 0)] == [6, 8, 10]
    assert chimera_b(4, 1, 1, 2) == 12 and chimera_b(4, 0, 1, 2) == 14
    # makespan 16 = m(tF+tB) + (p-2)max(tF,tB) = 4*3 + 2*2 (Li & Hoefler SC'21 at m = p: p=4 -> 16)
    assert chimera_b(4, 0, 1, 2) + 2 == 16
    names = [t.name for t in chimera_theorems(2)]
    assert {"excl pipes F/B", "excl pipes B/B", "excl own pipe", "memory", "makespan"} <= set(names)


def test_chimera_wrong_closed_form_gives_a_real_overlap():
    # claim: the second-half stages keep forwarding every 2 slots (s + 2i) after their warm-up,
    # ignoring that 1F1B's steady forwards wait for the previous backward (at B = 2 they then
    # collide with that backward on the same device)
    b = 2

    def wrong_f(p, s, i):
        return ite(2 * s <= p - 2, chimera_f(p, s, i, b), s + 2 * i)

    def f_int(p, s, i):
        return chimera_f(p, s, i, b) if 2 * s <= p - 2 else s + 2 * i

    res = [prove(th) for th in chimera_theorems(b, F=wrong_f)]
    bad = [r for r in res if r.status == "counterexample"]
    assert bad and all(r.status in ("proved", "counterexample") for r in res)
    # every exclusivity counterexample is a real overlap of two ops on one device
    checked = 0
    for r in bad:
        if not r.name.startswith("excl"):
            continue
        c = r.counterexample
        p, d, i1, i2 = 2 * c["h"], c["d"], c["i1"], c["i2"]
        kinds = {"excl own pipe": ("F", d, "B", d)}
        kinds.update({f"excl pipes {k1}/{k2}": (k1, d, k2, p - 1 - d) for k1 in "FB" for k2 in "FB"})
        k1, s1, k2, s2 = kinds[r.name]
        x = f_int(p, s1, i1) if k1 == "F" else chimera_b(p, s1, i1, b)
        y = f_int(p, s2, i2) if k2 == "F" else chimera_b(p, s2, i2, b)
        dx, dy = (1 if k1 == "F" else b), (1 if k2 == "F" else b)
        assert 0 <= i1 < p // 2 and 0 <= i2 < p // 2 and 0 <= d < p
        assert x < y + dy and y < x + dx, (r.name, c)
        checked += 1
    assert checked >= 1


def test_chimera_continuous_by_hand():
    # p=2, m=4 (units=continuous, n=2 per pipe: pipe 0 takes mbs 0, 2, pipe 1 mbs 1, 3), F=B=1.
    # Each pipe's 1F1B slots merged per device (ties: lower index in its pipe, then pipe 0):
    # device 0 runs 0F0 1F1 0F2 1B1 0B0 1F3 1B3 0B2, device 1 the mirror 0F1 1F0 0F3 1B0 0B1 1F2
    # 1B2 0B3; ASAP one per slot: 0F0@0 1F1@1 0F2@2 1B1@3 0B0@4 1F3@5 1B3@6 0B2@7 (every input is
    # there one slot earlier, on the other device), 8 slots = 2m + p - 2.
    assert [chimera_cont_f(2, 2, 0, i) for i in range(2)] == [0, 2]
    assert [chimera_cont_f(2, 2, 1, i) for i in range(2)] == [1, 5]
    assert [chimera_cont_b(2, 2, 1, i) for i in range(2)] == [3, 6]
    assert [chimera_cont_b(2, 2, 0, i) for i in range(2)] == [4, 7]
    assert chimera_cont_b(2, 2, 0, 1) + 1 == 2 * 4 + 2 - 2
    # p=4, m=8: 18 slots (the chimera module's own figure; 2m + p - 2)
    assert chimera_cont_b(4, 4, 0, 3) + 1 == 18
    # F=1, B=2: m(tF+tB) + (p-2)max(tF,tB) (Li & Hoefler) = 8*3 + 2*2 = 28 at p=4, m=8; p=6, m=12: 48
    assert chimera_cont_b(4, 4, 0, 3, 2) + 2 == 28
    assert chimera_cont_b(6, 6, 0, 5, 2) + 2 == 12 * 3 + 4 * 2


def test_chimera_continuous_without_drain_is_refuted():
    # claim: backwards stay in the steady 4-slot rhythm to the end (no faster drain); the makespan
    # theorem must fail, and its counterexample must really end elsewhere than 2m + p - 2
    def no_drain(p, n, s, i):
        return ite(2 * i <= 2 * s - p, 2 * p - s + 2 * i, zmin(2 * p - s, 3 * p - 1 - 3 * s) + 4 * i)

    res = {th.name: prove(th) for th in chimera_theorems(1, B=no_drain, continuous=True)}
    r = res["makespan"]
    assert r.status == "counterexample"
    c = r.counterexample
    p, n = 2 * c["h"], c["n"]
    ends = [no_drain(p, n, s, i) + 1 for s in range(p) for i in range(n)]
    assert max(ends) != 4 * n + p - 2 or no_drain(p, n, 0, n - 1) + 1 != 4 * n + p - 2
    assert no_drain(4, 4, 0, 3) + 1 == 21  # vs the generator's 18


def test_wrong_memory_bound_gives_a_real_counterexample():
    # claim 1F1B device d holds at most min(p-d, m) - 1: false; the counterexample must violate it
    f, b = 1, 2
    I0 = z3.Int("i0")
    F = lambda d, j: f1b1_f(P, M, d, j, f, b)  # noqa: E731
    B = lambda d, j: f1b1_b(P, M, d, j, f, b)  # noqa: E731
    held = z3.And(
        P >= 2,
        M >= 1,
        D >= 0,
        D < P,
        I0 >= 0,
        I0 <= J,
        J < M,
        B(D, I0) + b > F(D, J),
        z3.Or(I0 == 0, B(D, I0 - 1) + b <= F(D, J)),
    )
    r = prove(Theorem("too tight", "...", held, zmin(P - D, M) - 1 >= J - I0 + 1))
    assert r.status == "counterexample"
    c = r.counterexample
    p, m, d, j, i0 = c["p"], c["m"], c["d"], c["j"], c["i0"]
    held_now = [
        i for i in range(m) if f1b1_f(p, m, d, i, f, b) <= f1b1_f(p, m, d, j, f, b) < f1b1_b(p, m, d, i, f, b) + b
    ]
    assert len(held_now) == j - i0 + 1 > min(p - d, m) - 1


def test_wrong_closed_form_is_caught_by_a_dependency(monkeypatch):
    # a GPipe variant whose forwards are not delayed by the stage index, F(d, j) = j f, runs every
    # stage of a microbatch at once: the family's own "dep F<-F" theorem must refute it, with a
    # counterexample where F(d, j) really starts before F(d-1, j) ends (the old version of this
    # test asserted x >= x + 1, false whatever the closed form)
    from ppverify.verify import family_theorems as ft

    def flat(p, m, d, j, f, b):
        return j * f

    monkeypatch.setattr(ft, "gpipe_f", flat)
    dep = next(th for th in ft.theorems("gpipe", 1, 1) if th.name == "dep F<-F")
    r = prove(dep)
    assert r.status == "counterexample"
    c = r.counterexample
    assert (
        c["d"] >= 1 and flat(c["p"], c["m"], c["d"], c["j"], 1, 1) < flat(c["p"], c["m"], c["d"] - 1, c["j"], 1, 1) + 1
    )


def test_cli_prove(capsys):
    assert main(["prove", "gpipe", "--costs", "F=1,B=2"]) == 0
    out = capsys.readouterr().out
    assert "== gpipe F=1,B=2" in out and out.count("... proved") == 11 and "11/11 proved" in out
    assert main(["prove", "chimera", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(x["status"] == "proved" for x in data)
    assert main(["prove", "chimera", "--costs", "F=1,B=2"]) == 0
    out = capsys.readouterr().out
    assert "== chimera F=1,B=2" in out and "every op ends by 5p - 4" in out and "26/26 proved" in out
    assert "== chimera F=1,B=2 units=continuous" in out and "every op ends by 6n + 2(p-2)" in out
    assert main(["prove", "chimera"]) == 0
    out = capsys.readouterr().out
    assert "== chimera F=1,B=1 units=continuous" in out and "every op ends by 4n + p - 2" in out
    assert "52/52 proved" in out
    assert main(["prove", "chimera", "--costs", "F=2,B=4"]) == 2
    assert main(["prove", "hanayo"]) == 2
    err = capsys.readouterr().err
    assert "no closed form to prove for all sizes" in err and "ppverify verify hanayo" in err


def test_cli_prove_unknown_family_is_named(capsys):
    # A misspelt family is unknown, not "without a closed form"; an alias or a capital resolves.
    assert main(["prove", "1f1bx"]) == 2
    assert "unknown schedule family" in capsys.readouterr().err
    assert main(["prove", "GPipe", "--costs", "F=1,B=1"]) == 0
    assert "11/11 proved" in capsys.readouterr().out


def test_chimera_memory_bounds_are_attained():
    # the proved bounds are the generator's exact peaks (counted from its programs, which fixes
    # them for any costs): unit h + 1 + min(d, p-1-d), continuous (m >= 2p) p + 1 on every device
    from ppverify.schedules.chimera import chimera
    from ppverify.schedules.chimera_concat import unit_peaks

    for p in (2, 4, 6, 8):
        h = p // 2
        assert unit_peaks(chimera(p, p)) == [h + 1 + min(d, p - 1 - d) for d in range(p)]
        for k in (2, 3):
            assert unit_peaks(chimera(p, k * p)) == [min(p - d, k * h) + min(d + 1, k * h) for d in range(p)]


def test_interleaved_groups_formulas():
    # v = 2, m = k p, F = B = 1: Narayanan et al.'s (m + (p-1)/v)(tF+tB) shares; in chunk ticks
    # (v per share) with tF = tB = 1 share: 2 (k p + (p-1)/2) * 2 = (4k + 2) p - 2. Peak chunk
    # activations = Megatron's warm-up count (p-d-1)*2 + (v-1)*p, plus the one in flight:
    # 3p - 1 - 2d (cross-checked with the generator's programs, which fix it for any costs)
    from ppverify.schedules import build
    from ppverify.schedules.chimera_concat import unit_peaks
    from ppverify.verify.closed_forms import interleaved_k_b, interleaved_k_f

    for k in (2, 3, 5):
        for p in (2, 3, 4, 7):
            assert interleaved_k_b(p, k, 0, k - 1, 0, p - 1) + 1 == 2 * (k * p + (p - 1) / 2) * (1 + 1)
            assert unit_peaks(build("interleaved-1f1b", p=p, m=k * p, v=2)) == [3 * p - 1 - 2 * d for d in range(p)]
    # the first block fills the pipeline one stage per tick: F of stage d, microbatch r at d + r
    assert [interleaved_k_f(4, 2, 0, 0, d, 1) for d in range(4)] == [1, 2, 3, 4]


def test_interleaved_groups_wrong_form_collides():
    # claim: group 0's chunk-1 backwards run one per 2 ticks without the jump; Z3 must find two ops
    # of one device starting in the same tick, and the counterexample must really collide
    from itertools import combinations

    from ppverify.verify.closed_forms import interleaved_k_b, interleaved_k_f
    from ppverify.verify.prove import grid_check
    from ppverify.verify.prove_interleaved import blocks, interleaved_k_theorems

    def wrong_b(p, k, c, g, d, r):
        return 2 * r + 3 * p - 1 - d if (c, g) == (1, 0) else interleaved_k_b(p, k, c, g, d, r)

    res = {th.name: prove(th) for th in interleaved_k_theorems(3, B=wrong_b)}
    r = res["excl"]
    assert r.status == "counterexample"
    c = r.counterexample
    p, d, r1, r2 = c["p"], c["d"], c["r"], c["r2"]

    def st(kind, ch, g, rr):
        return (interleaved_k_f if kind == "F" else wrong_b)(p, 3, ch, g, d, rr)

    assert 0 <= d < p and 0 <= r1 < p and 0 <= r2 < p
    assert any(st(*a, r1) == st(*b, r2) for a, b in combinations(blocks(3), 2))
    assert res["makespan"].status == "proved"  # the wrong form is not caught by the makespan alone
    # and the right form is the generator's
    assert grid_check("interleaved-1f1b", 1, 1, range(2, 7), units=range(3, 4), v=2) == (5, [])


def test_interleaved_pytorch_m_equals_p_by_hand():
    # p=2, m=2, v=2, F=B=1 chunk ticks, PyTorch's order, worked by hand: device 1 (stages 1, 3)
    # warms up with min((v-1)p + 2(p-1-d), v p) = 2 forwards: 1F0 0, 1F1 2, 3F0 3, 3B0 4, then
    # 3F1 waits for the device (3B0 ends at 5), 3B1 6, 1B0 7 (after 2B0 [5,6) and the device),
    # 1B1 8; device 0 runs every forward first, 2B0 5, 2B1 7, 0B0 8, 0B1 9, ending at 10 =
    # (v p + p - 1)(f + b), Megatron's makespan
    from ppverify.verify.prove_interleaved_pytorch import pytorch_b, pytorch_f

    assert [pytorch_f(2, 2, 1, 1, j, 1, 1) for j in range(2)] == [3, 5]
    assert [pytorch_b(2, 2, 1, d, j, 1, 1) for d in (1, 0) for j in range(2)] == [4, 6, 5, 7]
    assert [pytorch_b(2, 2, 0, d, j, 1, 1) for d in (1, 0) for j in range(2)] == [7, 8, 8, 9]
    assert pytorch_b(2, 2, 0, 0, 1, 1, 1) + 1 == 10


def test_interleaved_orders_never_share_a_closed_form(monkeypatch):
    # Megatron's m = p form does not describe PyTorch's order (and is only checked on its own);
    # claiming Megatron's last-chunk backwards for PyTorch's order puts a backward before the
    # forward it must follow on one device: Z3 finds it, and the counterexample is real
    import ppverify.verify.prove_interleaved_pytorch as pt
    from ppverify.core.costs import CostModel
    from ppverify.core.errors import ParameterError
    from ppverify.engines import run
    from ppverify.schedules import build
    from ppverify.verify.closed_forms import interleaved_b
    from ppverify.verify.prove import grid_check

    s = build("interleaved-1f1b", p=4, m=4, v=2)  # the default: PyTorch's order
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="slot")
    starts = {str(o): float(t) for o, t in zip(tl.ops, tl.start)}
    assert starts == closed_form_starts("interleaved-1f1b", 4, 4, 1, 2, 2, "pytorch")
    assert starts != closed_form_starts("interleaved-1f1b", 4, 4, 1, 2, 2, "megatron")
    with pytest.raises(ParameterError):
        closed_form_starts("interleaved-1f1b", 4, 4, 2, 1, 2, "pytorch")
    assert grid_check("interleaved-1f1b", 1, 2, range(2, 7), v=3, order="pytorch") == (5, [])

    def megatron_b(p, v, c, d, j, f, b):
        return interleaved_b(p, v, c * p + d, j, f, b)

    monkeypatch.setattr(pt, "pytorch_b", megatron_b)
    res = {th.name: prove(th) for th in pt.pytorch_theorems(2, 1, 2)}
    r = res["excl steady"]
    assert r.status == "counterexample"
    p, d, i = r.counterexample["p"], r.counterexample["d"], r.counterexample["i"]
    e = 2 * (p - 1 - d)
    assert 0 <= i < p - e
    f_next = pt.pytorch_f(p, 2, 1, d, e + i + 1, 1, 2) if e + i + 1 < p else None
    b_i = megatron_b(p, 2, 1, d, i, 1, 2)
    assert b_i < pt.pytorch_f(p, 2, 1, d, e + i, 1, 2) + 1 or (f_next is not None and f_next < b_i + 2)


def test_prove_says_which_order_it_leaves_out_when_f_exceeds_b(capsys):
    # F=3 > B=1: PyTorch's order has no closed form there, so only Megatron's is proved; the
    # output says so instead of printing fewer results without a word
    assert main(["prove", "interleaved-1f1b", "--costs", "F=3,B=1"]) == 0
    out = capsys.readouterr().out
    assert "order=pytorch" not in out and "order=megatron" in out
    assert "PyTorch's order: its m = p closed form is derived for F <= B, not proved here" in out
    assert main(["prove", "interleaved-1f1b", "--costs", "F=1,B=2"]) == 0
    assert "PyTorch's order: its m = p closed form" not in capsys.readouterr().out


def test_prove_says_the_m_kp_interleaved_theorems_are_left_out_at_other_costs(capsys):
    # the m = k p closed forms of interleaved 1F1B are derived at F=1,B=1 only: at F=1,B=2 the
    # command proved the m = p ones and printed "42/42 proved" without a word about the rest
    assert main(["prove", "interleaved-1f1b", "--costs", "F=1,B=2"]) == 0
    out = capsys.readouterr().out
    assert "m = k p: its closed form is derived at F=1,B=1 only, not proved here" in out
    assert main(["prove", "interleaved-1f1b", "--costs", "F=1,B=1"]) == 0
    assert "m = k p: its closed form" not in capsys.readouterr().out
