"""Every internal error the hostile-input campaign of issue 22 (item 7) found is a one-line refusal
naming the option or the file and the rule, exit 2: never exit 3, never a traceback. The inputs
are the campaign's; the expected lines are written from the rules (p, m and v of a schedule are
integers >= 1; a text table's cells sit under their rank's header; a sweep config's strings must
be writable), not copied from ppverify's output."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.io.torch_interop import MAX_REPLAY_STEPS, MAX_TORCH_STEPS, torch_order_steps


def refused(argv, capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    "argv,needle",
    [
        # PyTorch's helpers: a KeyError (p = 0, p < 0, v = 0) and a modulo by zero (ZBVZeroBubble)
        (["import", "--torch-class", "GPipe", "-p", "0"], "parameter -p=0: must be an integer >= 1"),
        (["import", "--torch-class", "GPipe", "-p", "-1"], "parameter -p=-1: must be an integer >= 1"),
        (["import", "--torch-class", "Interleaved1F1B", "--v", "0"], "parameter --v=0: must be an integer >= 1"),
        (["import", "--torch-class", "ZBVZeroBubble", "-p", "0"], "parameter -p=0: must be an integer >= 1"),
        (["import", "--torch-class", "DualPipeV", "-p", "2", "-m", "0"], "parameter -m=0: must be an integer >= 1"),
        # bounded in p before PyTorch is imported: p = m = 500 ran for minutes within the op limit
        (["import", "--torch-class", "Interleaved1F1B", "-p", "500", "-m", "500"], "over the limit of 4e+06"),
        (["import", "--torch-class", "GPipe", "-p", "4000", "-m", "1"], "steps, over the limit"),
        (["import", "--torch-class", "GPipe", "-p", "800", "-m", "1"], "rank-steps, over the limit"),
    ],
)
def test_torch_class_parameters_are_refused_before_pytorch_runs(argv, needle, capsys):
    line = refused(argv, capsys)
    assert line.startswith("ppverify import: error: ") and needle in line, line


@settings(max_examples=200, deadline=None)
@given(p=st.integers(1, 10**4), m=st.integers(1, 10**4), v=st.integers(1, 8))
def test_the_torch_estimates_are_the_quadratic_passes(p, m, v):
    # by hand: the generators walk p*v stages' lists of m microbatches once per (stage, step) of a
    # step count p*v + m; the replay looks at p ranks in each of its p*v + 2*v*m steps
    steps, replay = torch_order_steps(p, m, v)
    assert steps == (p * v) * m * (p * v + m) and replay == p * (p * v + 2 * v * m)
    # doubling p at least doubles both (the bound is not linear in p)
    steps2, replay2 = torch_order_steps(2 * p, m, v)
    assert steps2 >= 2 * steps and replay2 >= 2 * replay


def test_the_torch_limits_admit_the_sizes_tested_elsewhere():
    # tests/io/test_torch_interop.py compares p <= 8, m <= 16, v <= 2 with PyTorch: all admitted
    steps, replay = torch_order_steps(8, 16, 2)
    assert steps <= MAX_TORCH_STEPS and replay <= MAX_REPLAY_STEPS


def test_calibrate_with_a_timeout_too_short_is_one_line(monkeypatch, capsys):
    # the calibration runs known-good schedules: a hang within --timeout means the limit is too
    # short on this machine (MeasureTimeout was exit 3); stubbed so that no worker starts here
    import ppverify.measure.calibrate as cal
    from ppverify.measure import MeasureTimeout

    def hang(quick: bool = False, timeout: float = 120.0, realtime: bool = False):
        raise MeasureTimeout(timeout, {0: "0B0", 1: "1B0"})

    monkeypatch.setattr(cal, "calibrate", hang)
    line = refused(["calibrate", "--timeout", "0.5"], capsys)
    assert line.startswith("ppverify calibrate: error: parameter --timeout=0.5: a calibration run needs longer")
    assert "rank 0 blocked in 0B0" in line and line.endswith("give more seconds")


HEADER = "         Rank 0    Rank 1\n"


@pytest.mark.parametrize(
    "row",
    ["Step 0:\t\t\t0F0", "Step 0:  \t", "Step 0:\x0b\x0b1F0", "Step 0:  0F0\t\t\t\t1F0 9"],
)
def test_a_ragged_positional_row_is_one_line_naming_the_file(row, tmp_path, capsys):
    # tabs and other whitespace where a cell should begin (an AttributeError in _split_positional)
    f = tmp_path / "t.txt"
    f.write_text(HEADER + row + "\n")
    code = main(["show", str(f)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().split("\n")) == 1 and "internal error" not in err, err
    assert "t.txt" in err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cells=st.lists(
        st.lists(st.sampled_from([" ", "\t", "\x0b", "\x0c", "0F0", "1F0", "0B0", "1B0", "x"]), max_size=12).map(
            "".join
        ),
        min_size=1,
        max_size=3,
    )
)
def test_any_whitespace_in_a_step_row_is_a_result_or_one_line(cells, tmp_path_factory, capsys):
    f = tmp_path_factory.mktemp("t") / "t.txt"
    f.write_text(HEADER + "".join(f"Step {i}: {c}\n" for i, c in enumerate(cells)))
    code = main(["show", str(f), "--no-table"])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    if code == 2:
        assert len(err.strip().split("\n")) == 1 and "internal error" not in err, err


@pytest.mark.parametrize("where", ["label", "name", "system"])
def test_a_surrogate_in_a_sweep_config_names_the_file_and_line(where, tmp_path, capsys):
    # "\ud800" is valid YAML but no output (store row, label, report) can encode it
    label = 'label: "a\\ud800"' if where == "label" else "label: fine"
    lines = [
        "p: [2]",
        "m: [2]",
        "costs: {F: 1, B: 2}",
        "levels: [slot]",
        f"schedules: [gpipe, {{family: 1f1b, {label}}}]",
    ]
    if where == "name":
        lines.append('name: "\\udcff"')
    if where == "system":
        lines[2] = 'systems: ["dgx\\ud800"]\nmodels: [gpt3-1.3b]'
    cfg = tmp_path / "c.yaml"
    cfg.write_text("\n".join(lines) + "\n")
    text = cfg.read_text()
    line_no = next(i for i, x in enumerate(text.splitlines(), 1) if "\\ud" in x)
    line = refused(["sweep", str(cfg), "--store", str(tmp_path / "s.jsonl"), "--no-progress"], capsys)
    assert f"c.yaml:{line_no}:" in line and "lone surrogate" in line, line
    assert not (tmp_path / "s.jsonl").exists() or (tmp_path / "s.jsonl").read_text() == ""
