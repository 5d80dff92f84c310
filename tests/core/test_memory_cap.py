"""One memory unit everywhere (issue 21): ``--memory-cap`` means the same in every command on every
placement, gaps are taken at the family's own memory with one definition, and the default costs
give a split backward what a full one costs.

Expected values are derived by hand: ppverify's unit counts one microbatch's activations on a
device's whole share of layers, so a stage holds ``1/v`` of one with ``v`` stages per device
(1F1B's first device peaks at ``min(p, m)``, Narayanan et al. SC'21, arXiv 2104.04473); the
zero-bubble paper's ZB-H1 (Qi et al. ICLR'24, arXiv 2401.10241) takes ``m(tF+tB+tW) +
(p-1)(tF+tB-tW)`` with its ``tB`` our ``tI``, against 1F1B's ``(m+p-1)(tF+tB)``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.memory_cap import cap_check, parse_memory_cap
from ppverify.core.ops import Op
from ppverify.core.placement import bidirectional, linear, loop, v_shape, wave
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings, resolve_presets

#: (family and its parameters, placement, stages per device by hand, the family's peak at p=2, m=4
#: in activations: 1F1B min(p, m) = 2; interleaved v=2: device 0 holds its 2 + 1 warm-up forwards of
#: half a share = 2.5; ZB-V 2; Hanayo one wave (4 stages of a quarter share on 2 devices) 4;
#: Chimera's two pipes 3 whole-share activations)
PLACEMENTS = [
    (["1f1b"], "linear", 1, 2.0),
    (["interleaved-1f1b", "--v", "2"], "loop", 2, 2.5),
    (["zbv"], "v", 2, 2.0),
    (["hanayo", "--waves", "1"], "wave", 2, 4.0),
    (["chimera"], "bidirectional", 1, 3.0),
]
SIZE = ["-p", "2", "-m", "4"]


def _json(capsys, argv: list[str], code: int = 0) -> dict:
    assert main([*argv, "--json"]) == code, capsys.readouterr().err
    out = capsys.readouterr().out
    return json.loads(out[out.index("{") :])


def _refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "memory-cap" in err, err
    return err


@pytest.mark.parametrize("family, placement, per_device, peak", PLACEMENTS)
def test_every_command_reads_the_same_cap(capsys, family, placement, per_device, peak):
    cap = str(peak)  # the family's own peak in activations: every command must take it as such
    sim = _json(capsys, ["simulate", *family, *SIZE, "--memory-cap", cap])
    assert sim["placement"]["name"] == placement and max(sim["peak_memory"]) == peak
    assert sim["memory_cap"]["value"] == peak and sim["over_memory_cap"] == []
    assert sim["memory_cap"]["stage_activations"] == peak * per_device
    shown = _json(capsys, ["show", *family, *SIZE, "--memory-cap", cap])
    assert shown["memory_cap"] == sim["memory_cap"] and max(shown["peak_activations"]) == peak
    ver = _json(capsys, ["verify", *family, *SIZE, "--memory-cap", cap])
    assert ver["verdict"] == "VALID" and ver["memory_cap"] == sim["memory_cap"]
    opt = _json(capsys, ["optimize", *family, *SIZE, "--memory-cap", cap, "--time-limit", "5", "--workers", "1"])
    assert opt["memory_cap_value"] == peak and opt["value"] is not None
    gap = _json(capsys, ["gap", *family, *SIZE, "--memory-cap", cap, "--time-limit", "5", "--workers", "1"])
    assert gap["memory_cap"] == peak and not gap["family_over_cap"]
    assert gap["optimum_peak"] is None or gap["optimum_peak"] <= peak + 1e-9
    # the default of gap is the same cap: the family's own peak
    assert _json(capsys, ["gap", *family, *SIZE, "--time-limit", "5", "--workers", "1"])["memory_cap"] == peak
    # half a stage activation less: every checker says over, in the same unit
    below = str(peak - 0.5 / per_device)
    assert _json(capsys, ["simulate", *family, *SIZE, "--memory-cap", below], code=1)["over_memory_cap"]
    assert _json(capsys, ["show", *family, *SIZE, "--memory-cap", below], code=1)["over_memory_cap"]
    assert _json(capsys, ["verify", *family, *SIZE, "--memory-cap", below], code=1)["verdict"] == "INVALID"
    assert _json(capsys, ["gap", *family, *SIZE, "--memory-cap", below, "--time-limit", "5"])["family_over_cap"]


@pytest.mark.parametrize("family, placement, per_device, peak", PLACEMENTS)
def test_compare_caps_each_optimum_at_the_same_unit(capsys, family, placement, per_device, peak):
    from ppverify.compare.outcome import outcome_json
    from ppverify.compare.request import compare_request, run_request

    label = {"interleaved-1f1b": "interleaved-v2", "hanayo": "hanayo-w1"}.get(family[0], family[0])
    m = "2" if family[0] == "hanayo" else "4"  # compare runs Hanayo in its regime m = p only
    peak = max(_json(capsys, ["simulate", *family, "-p", "2", "-m", m])["peak_memory"])
    base = dict(schedules=label, ps="2", ms=m, costs="F=1,B=2", levels="async,optimum", verify=False)
    for cap, want in ((None, peak), (str(peak + 1), peak + 1), ("none", None)):
        out = outcome_json(run_request(compare_request(**base, memory_cap=cap)))
        opt = next(r for r in out["rows"] if r["level"] == "optimum")
        asy = next(r for r in out["rows"] if r["level"] == "async")
        assert opt["memory_cap"] == want and asy["peak_activation"] == peak
        if want is not None and opt["peak_activation"] is not None:
            assert opt["peak_activation"] <= want + 1e-9 and asy["optimum_peak"] == opt["peak_activation"]


def test_zb_h1_beats_1f1b_at_default_costs_with_the_same_peak(capsys):
    # default costs F=1, B=2, I=W=1: 1F1B (m+p-1)(tF+tB) = 11 * 3 = 33; ZB-H1 m(tF+tI+tW) +
    # (p-1)(tF+tI-tW) = 8 * 3 + 3 * 1 = 27; both hold p = 4 activations on device 0
    one = _json(capsys, ["simulate", "1f1b", "-p", "4", "-m", "8"])
    zb = _json(capsys, ["simulate", "zb-h1", "-p", "4", "-m", "8"])
    assert (one["makespan"], zb["makespan"]) == (33, 27)
    assert max(one["peak_memory"]) == max(zb["peak_memory"]) == 4
    assert one["costs"] == zb["costs"] == "F=1,B=2,I=1,W=1"
    for fam, want in (("1f1b", 33), ("zb-h1", 27)):  # the slot table and the optimizer agree
        assert _json(capsys, ["show", fam, "-p", "4", "-m", "8"])["makespan"] == want


def test_gap_and_compare_give_one_gap(capsys):
    # 1F1B p=4, m=8, F=1, B=2, one unit per hop: 49 under async timing; with unlimited memory the
    # optimum is (m+p-1)(tF+tB) + 2(p-1)c = 33 + 6 = 39, so the gap to bound is (49 - 39) / 49
    from ppverify.compare.outcome import outcome_json
    from ppverify.compare.request import compare_request, run_request

    argv = ["gap", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--comm-delay", "1", "--time-limit", "10"]
    gap = _json(capsys, [*argv, "--memory-cap", "none"])
    assert gap["gap_to_bound"] == pytest.approx(10 / 49) and gap["memory_cap"] is None and gap["optimum_peak"] > 4
    given = dict(schedules="1f1b", ps="4", ms="8", costs="F=1,B=2", comm_delay="1", levels="async,optimum")
    req = compare_request(**given)
    rows = outcome_json(run_request(compare_request(**given, memory_cap="none")))["rows"]
    assert next(r for r in rows if r["level"] == "async")["gap_to_bound"] == pytest.approx(10 / 49)
    # like for like (the default): both at 1F1B's own peak p = 4, the same gap
    own = _json(capsys, argv)
    rows = outcome_json(run_request(req))["rows"]
    asy = next(r for r in rows if r["level"] == "async")
    assert own["memory_cap"] == 4 and asy["gap_to_bound"] == pytest.approx(own["gap_to_bound"])
    assert (49 - own["bound"]) / 49 == pytest.approx(own["gap_to_bound"]) and own["bound"] > 39


@pytest.mark.parametrize(
    "command",
    [["show"], ["simulate"], ["verify"], ["optimize", "--time-limit", "1"], ["gap", "--time-limit", "1"]],
)
@pytest.mark.parametrize(
    "cap, rule",
    [
        ("0.25", "below one stage activation"),
        ("64GiB", "a size needs presets"),
        ("none64GiB", "none (unlimited memory) takes no size"),
        ("4x", "the x suffix is gone"),
        ("-1", "must be > 0"),
        ("1e400", "must be at most 1e+15"),  # it overflowed a float: "a number is too large"
        ("1e300", "must be at most 1e+15"),  # it said "must be a finite number > 0"
        ("1e400GiB", "must be at most 1e+15 bytes"),
    ],
)
def test_bad_caps_are_refused_in_one_line(capsys, command, cap, rule):
    err = _refused(capsys, [command[0], "zbv", "-p", "2", "-m", "4", *command[1:], "--memory-cap", cap])
    assert rule in err and f"memory-cap={cap}" in err


def test_compare_refuses_a_bad_cap_before_running(capsys):
    assert "a size needs presets" in _refused(capsys, ["compare", "--costs", "F=1,B=2", "--memory-cap", "8GiB"])
    assert "takes no size" in _refused(capsys, ["compare", "--memory-cap", "none 8GiB"])


def test_a_plain_number_with_presets_counts_activations_not_bytes(capsys):
    preset = ["1f1b", "-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    err = _refused(capsys, ["verify", *preset, "--memory-cap", "40000000000"])
    assert "write 40000000000B for bytes" in err
    sim = _json(capsys, ["simulate", *preset, "--memory-cap", "4"])
    # one activation is the largest share's (the last stage, which holds the logits too): 1F1B's
    # first device holds p = 4 of its own smaller ones, within 4 and over 3 of the largest
    costs = resolve_presets(PresetSettings(system="dgx-h100", model="gpt3-1.3b"), build("1f1b", p=4, m=8)).costs
    assert sim["over_memory_cap"] == [] and sim["memory_cap"]["unit"] == "bytes"
    assert sim["memory_cap"]["value"] == pytest.approx(4 * max(costs.activation))
    assert 3 * max(costs.activation) < 4 * costs.activation[0] < 4 * max(costs.activation)
    assert _json(capsys, ["simulate", *preset, "--memory-cap", "3"], code=1)["over_memory_cap"] == [0]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([linear(4), loop(4, 2), loop(4, 3), v_shape(4), wave(4, 2), bidirectional(4)]),
    st.integers(min_value=1, max_value=64),
    st.sampled_from(["", "MF"]),
)
def test_the_two_units_differ_by_the_stages_per_device(pl, n, suffix):
    costs = CostModel.abstract(pl)
    cap = parse_memory_cap(f"{n}{suffix}", costs, pl)
    v = pl.num_stages / pl.p  # stages per device, by hand: one stage holds 1/v of a share
    assert cap.stage_activations == pytest.approx(cap.activations * v)
    assert cap.value == pytest.approx(n if not suffix else n / v)
    if not suffix and v != 1:
        word = "activation" if n == 1 else "activations"  # a count of one reads singular
        assert f"cap {n} {word} ({n * v:g} stage activations, {v:g} stages per device)" == cap.describe()
    # a device holding exactly the cap is within it; a hair more is over
    assert cap_check([cap.value], cap)["over"] == [] and cap_check([cap.value * 1.001], cap)["over"] == [0]


def test_none_is_unlimited_and_labelled_so():
    pl = v_shape(4)
    cap = parse_memory_cap("none", CostModel.abstract(pl), pl)
    assert cap.unlimited and cap.describe() == "unlimited memory" and cap.to_dict()["value"] is None
    with pytest.raises(ParameterError, match="below one stage activation"):
        parse_memory_cap("0.4", CostModel.abstract(pl), pl)  # one stage of ZB-V is half a share
    assert parse_memory_cap("0.5", CostModel.abstract(pl), pl).stage_activations == 1


def test_the_issue_commands_read_the_same_cap(capsys):
    # verify zbv -p 4 -m 8 --memory-cap 4 proves peaks 4; optimize reads the same 4 activations (8
    # stage activations), so ZB-V's own order fits and the optimum is at most its async makespan
    ver = _json(capsys, ["verify", "zbv", "-p", "4", "-m", "8", "--memory-cap", "4"])
    assert ver["verdict"] == "VALID" and ver["memory_cap"]["stage_activations"] == 8
    argv = ["zbv", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1"]
    opt = _json(capsys, ["optimize", *argv, "--memory-cap", "4", "--time-limit", "10"])
    own = _json(capsys, ["simulate", *argv])["makespan"]
    assert opt["memory_cap_value"] == ver["memory_cap"]["value"] == 4
    # each device's work: m microbatches x 2 stages x (F + I + W) of half a share = 8 * 2 * 1.5 = 24
    assert 24 <= opt["value"] <= own
    assert _json(capsys, ["optimize", *argv, "--memory-cap", "8MF", "--time-limit", "10"])["value"] == opt["value"]


def test_a_sweep_caps_its_optima_as_compare_does():
    from ppverify.core.errors import ScheduleFileError
    from ppverify.sweep import parse_sweep, pending_tasks, run_task

    base = {"schedules": ["zbv"], "p": 2, "m": 4, "costs": {"F": 1, "B": 2}, "levels": ["async", "optimum"]}
    rows = {}
    for cap in (None, "3", "none"):
        spec = parse_sweep({**base, **({} if cap is None else {"memory_cap": cap})})
        (task,) = pending_tasks(spec, set())
        rows[cap] = next(r for r in run_task(task) if r["level"] == "optimum")
    # ZB-V at p=2, m=4 peaks at 2 activations (test_every_command_reads_the_same_cap): its own cap
    assert (rows[None]["memory_cap"], rows["3"]["memory_cap"], rows["none"]["memory_cap"]) == (2.0, 3.0, None)
    assert len({r["point"] for r in rows.values()}) == 3  # each cap is its own stored point
    with pytest.raises(ScheduleFileError, match="memory_cap.*a size needs presets"):
        parse_sweep({**base, "memory_cap": "8GiB"})


def test_a_family_over_the_cap_gets_no_gap(capsys):
    # 1F1B at p = 4 holds min(p, m) = 4 activations on device 0, GPipe m = 8: a cap of 2 fits neither,
    # so the optimum at 2 bounds other schedules, and no gap to bound may be stated for them
    family = ["-p", "4", "-m", "8", "--costs", "F=1,B=2", "--time-limit", "5", "--workers", "1"]
    out = _json(capsys, ["gap", "1f1b", *family, "--memory-cap", "2"])
    assert out["family_over_cap"] and out["family_peak_memory"] == 4 and out["gap_to_bound"] is None
    assert main(["gap", "1f1b", *family, "--memory-cap", "2"]) == 0
    text = capsys.readouterr().out
    assert "gap to bound -  (the family's peak 4 activations is over the cap 2" in text
    assert "the family, over the cap, is" in text and "faster)" in text
    # at its own peak 1F1B is optimal with c = 0: device 0 works m(F+B) = 24 after (p-1)F = 3 of
    # fill and before (p-1)B = 6 of drain, 33 = (m+p-1)(F+B), its own makespan: a gap of 0
    assert _json(capsys, ["gap", "1f1b", *family, "--memory-cap", "4"])["gap_to_bound"] == 0


def test_compare_marks_a_family_over_the_cap(capsys):
    argv = ["compare", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--levels", "async,optimum"]
    argv += ["--schedules", "1f1b,gpipe", "--memory-cap", "4", "--no-progress", "--no-verify"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith(("1f1b ", "gpipe "))}
    assert rows["1f1b"].split()[-1] == "0.0%"  # within the cap (its own 4): optimal, as above
    assert rows["gpipe"].split()[-2:] == ["over", "cap"]  # GPipe holds m = 8 > 4
    assert "gpipe: its own peak 8 is over the cap 4" in text and "no gap to state" in text
    data = _json(capsys, argv)
    gaps = {r["schedule"]: r["gap_to_bound"] for r in data["rows"] if r["level"] == "async"}
    assert gaps == {"1f1b": 0.0, "gpipe": None}


def test_a_cap_on_a_file_without_activation_memory_says_so(capsys, tmp_path):
    # every activation 0: no cap can bind, and "must be a finite number > 0" named the wrong cause
    from ppverify.io.json_format import dumps

    s = build("1f1b", p=2, m=2)
    c = CostModel.abstract(s.placement)
    path = tmp_path / "nomem.json"
    path.write_text(dumps(s, CostModel(**{**c.__dict__, "activation": (0.0, 0.0)})))
    err = _refused(capsys, ["verify", str(path), "--memory-cap", "2"])
    assert "memory-cap=2: the cost model holds no activation memory (every stage's activation is 0)" in err


def test_simulate_and_verify_agree_on_a_cap_a_hair_under_the_peak(capsys):
    # 1F1B p = 4: device 0 holds p = 4 activations; a cap of 3.9999999999 is under that by 1e-10,
    # which a relative slack of 1e-9 let simulate call "within it" while verify said INVALID
    args = ["1f1b", "-p", "4", "-m", "8", "--memory-cap", "3.9999999999"]
    sim = _json(capsys, ["simulate", *args], code=1)
    assert sim["over_memory_cap"] == [0]
    assert main(["verify", *args]) == 1
    capsys.readouterr()
    assert _json(capsys, ["simulate", "1f1b", "-p", "4", "-m", "8", "--memory-cap", "4"])["over_memory_cap"] == []


def test_a_cap_of_three_activations_of_seven_tenths_holds_them():
    # three activations of 0.7 each: the float product 3 x 0.7 is 2.0999999999999996, under the
    # float sum of the three; the cap and the peak are both the float nearest 21/10
    from ppverify.core.timeline import activation_peaks

    pl = linear(1)
    c = CostModel(**{**CostModel.abstract(pl).__dict__, "activation": (0.7,)})
    cap = parse_memory_cap("3", c, pl)
    assert cap.value == 2.1
    ops = [Op("F", 0, j) for j in range(3)] + [Op("B", 0, j) for j in range(3)]
    peaks = activation_peaks(ops, np.zeros(6, int), np.arange(6.0), np.arange(1.0, 7.0), c, 1).tolist()
    assert peaks == [2.1] and cap_check(peaks, cap)["over"] == []


#: GPT-3 1.3B (Brown et al. 2020, Table 2.1, with Megatron-LM's 16 heads): one layer of one
#: microbatch (b = 1, s = 2048, h = 2048, a = 16, 2-byte elements) holds s*b*h*(34 + 5*a*s/h) =
#: 2048 * 2048 * (34 + 80) bytes (Korthikanti et al., MLSys'23, arXiv 2205.05198); the last stage
#: adds the fp32 logits, 4*s*b*V = 4 * 2048 * 50257 bytes
GPT3_LAYER = 2048 * 2048 * 114
GPT3_LOGITS = 4 * 2048 * 50257


@pytest.mark.parametrize(
    ("family", "extra", "device_layers"),
    [
        # 1F1B at p = 2: 12 layers a stage, the last device holds its 12 and the logits
        ("1f1b", [], 12),
        # interleaved at p = 2, v = 2: 6 layers a stage; device 1 holds stages 1 and 3 (the last)
        ("interleaved-1f1b", ["--v", "2"], 12),
        # ZB-V at p = 2: 6 layers a stage; device 0 holds stages 0 and 3 (the last)
        ("zbv", [], 12),
    ],
)
def test_a_plain_cap_with_presets_is_the_same_bytes_on_every_placement(capsys, family, extra, device_layers):
    # one activation is one microbatch on the device's stages where that is most, counted once:
    # v times the largest stage would count the logits v times (2 x (6 layers + logits) = 6.11 GiB
    # on the interleaved placement, 7 % more than 1F1B's 5.73 GiB at the same cap)
    cli = [family, "-p", "2", "-m", "4", *extra, "--system", "dgx-h100", "--model", "gpt3-1.3b"]
    sim = _json(capsys, ["simulate", *cli, "--memory-cap", "4"])
    assert sim["memory_cap"]["value"] == 4 * (device_layers * GPT3_LAYER + GPT3_LOGITS)
    assert sim["memory_cap"]["activations"] == 4
