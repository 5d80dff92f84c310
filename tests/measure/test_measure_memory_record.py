"""Activation memory measured without worker processes: the stage block's saved tensors in this
process, under PyTorch's own backward functions (full, and the split I/W that its pipeline runtime
runs), against bytes derived by hand and against the timeline's memory model.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight

from ppverify.core.costs import CostModel
from ppverify.core.ops import Op
from ppverify.core.placement import linear
from ppverify.core.timeline import activation_peaks
from ppverify.measure.memory import FREED_BY_I, MeasuredMemory, byte_costs, stage_activation_bytes
from ppverify.measure.memrecord import MemEvent, SavedTensors
from ppverify.measure.stages import ModelSpec, build_stage_module, loss_fn

SLEEP, REAL = ModelSpec.for_compute("sleep"), ModelSpec.for_compute("real")


def test_stage_bytes_by_hand():
    # sleep block: r=2 rows, d=8, h=16, float64 (8 bytes). Saved, weights aside: LayerNorm's input
    # 2*8*8 = 128, its mean and rstd 2*8 = 16 each, its output (up's input) 128, GELU's input
    # 2*16*8 = 256, GELU's output (down's input) 256; the residual add saves nothing: 800 bytes
    assert stage_activation_bytes(SLEEP) == 128 + 16 + 16 + 128 + 256 + 256 == 800
    # real block: r=8, d=64, h=256: 4096 + 64 + 64 + 4096 + 16384 + 16384
    assert stage_activation_bytes(REAL) == 41_088


@pytest.mark.parametrize("spec", [SLEEP, REAL])
@pytest.mark.parametrize("first", [True, False])
def test_one_forward_saves_the_derived_bytes(spec, first):
    # the recorder sees, in this process, exactly the bytes derived by hand: for the first stage
    # (input without gradient, a view of the batch) and a later one (a received leaf with gradient)
    block = build_stage_module(spec, 0)
    batch = torch.randn(3 * spec.mb_size, spec.dim, dtype=torch.float64)
    x = batch[spec.mb_size : 2 * spec.mb_size]
    if not first:
        x = x.clone().requires_grad_(True)
    rec = SavedTensors()
    rec.events = []
    with rec.running("F"), rec.saving(0, 1, block.parameters()):
        out = block(x)
    assert sum(e.nbytes for e in rec.events) == stage_activation_bytes(spec)
    assert {(e.stage, e.mb, e.during) for e in rec.events} == {(0, 1, "F")}
    # the loss outside the block is not counted; a full backward frees everything, inside the B
    loss = loss_fn(out, torch.zeros_like(out))
    with rec.running("B"):
        loss.backward()
    freed = [e for e in rec.events if e.nbytes < 0]
    assert -sum(e.nbytes for e in freed) == stage_activation_bytes(spec)
    assert {e.during for e in freed} == {"B"}


def test_nothing_is_recorded_outside_a_measured_step():
    block = build_stage_module(SLEEP, 0)
    rec = SavedTensors()  # events None: warm-up steps
    with rec.saving(0, 0, block.parameters()):
        block(torch.randn(2, 8, dtype=torch.float64, requires_grad=True)).sum().backward()
    assert rec.take() == []


@st.composite
def _programs(draw):
    # one device's order of F, then B or I and W, for n microbatches: each mb's F before its
    # backward, I before W; otherwise any interleaving (what schedules of every family do)
    n = draw(st.integers(1, 4))
    split = draw(st.booleans())
    todo = {mb: ["F", "I", "W"] if split else ["F", "B"] for mb in range(n)}
    order = []
    while todo:
        mb = draw(st.sampled_from(sorted(todo)))
        order.append(Op(todo[mb].pop(0), 0, mb))
        if not todo[mb]:
            del todo[mb]
    return order


@settings(max_examples=25, deadline=None)
@given(_programs())
def test_measured_peak_equals_the_model_for_any_order(program):
    # run the program in this process with PyTorch's own backward functions (the split I/W are
    # stage_backward_input/stage_backward_weight, as in _PipelineScheduleRuntime); the measured
    # peak must be the timeline model's (F holds the stage's bytes until its B or W ends), and
    # the I must free nothing (FREED_BY_I = 0)
    block = build_stage_module(SLEEP, 0)
    rec = SavedTensors()
    rec.events = []
    state: dict[int, tuple] = {}
    for op in program:
        with rec.running(op.kind):
            if op.kind == "F":
                x = torch.randn(SLEEP.mb_size, SLEEP.dim, dtype=torch.float64, requires_grad=True)
                with rec.saving(0, op.mb, block.parameters()):
                    out = block(x)
                state[op.mb] = (x, out, torch.ones_like(out))
            elif op.kind == "B":
                x, out, grad = state.pop(op.mb)
                torch.autograd.backward(out, grad)
                del x, out, grad
            elif op.kind == "I":
                x, out, grad = state.pop(op.mb)
                _, groups = stage_backward_input([out], [grad], [x], block.parameters())
                state[op.mb] = (groups,)
                del x, out, grad
            else:
                (groups,) = state.pop(op.mb)
                stage_backward_weight(block.parameters(), groups)
                del groups
    measured = MeasuredMemory.from_events([rec.take()], 0, 800, None)
    k = len(program)
    costs = byte_costs(CostModel.abstract(linear(1)), 800)
    model = activation_peaks(program, np.zeros(k, int), np.arange(k, dtype=float), np.arange(k) + 1.0, costs, 1)
    assert measured.peaks == (int(model[0]),)
    assert measured.freed_by.get("I", 0) == FREED_BY_I * 800 == 0
    assert sum(measured.saved.values()) == 800 * len({op.mb for op in program})
    assert measured.held[0][-1] == 0  # everything saved was freed, inside a backward op
    assert "" not in measured.freed_by


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-1000, 1000).filter(bool), max_size=30))
def test_curve_is_the_running_sum_in_time_order(deltas):
    # events given out of order: the curve sorts them by time; the peak is the running sum's max
    events = [MemEvent(1000 * (len(deltas) - i), 0, i, d, "F") for i, d in enumerate(deltas)]
    mm = MeasuredMemory.from_events([events], 0, 800, None)
    levels = np.cumsum(deltas[::-1]).tolist()
    assert list(mm.held[0]) == levels
    assert mm.peaks == (max([0, *levels]),)
    assert list(mm.times[0]) == sorted(mm.times[0])


def test_a_runner_that_keeps_the_graph_shows_above_the_model():
    # a corrupted runner that back-propagates with retain_graph=True and keeps every output: no
    # saved tensor is ever freed, so the measured peak is m stages' worth while the model (1F1B
    # order, one microbatch in flight) predicts one: the measurement is not the model restated
    block = build_stage_module(SLEEP, 0)
    rec = SavedTensors()
    rec.events = []
    kept, program = [], []
    for mb in range(3):
        x = torch.randn(SLEEP.mb_size, SLEEP.dim, dtype=torch.float64, requires_grad=True)
        with rec.running("F"), rec.saving(0, mb, block.parameters()):
            out = block(x)
        with rec.running("B"):
            torch.autograd.backward(out, torch.ones_like(out), retain_graph=True)
        kept.append(out)
        program += [Op("F", 0, mb), Op("B", 0, mb)]
    k = len(program)
    costs = byte_costs(CostModel.abstract(linear(1)), 800)
    model = activation_peaks(program, np.zeros(k, int), np.arange(k, dtype=float), np.arange(k) + 1.0, costs, 1)
    mm = MeasuredMemory.from_events([rec.take()], 0, 800, [float(model[0])])
    assert model.tolist() == [800.0] and mm.peaks == (3 * 800,)
    assert mm.matches is False and mm.freed_by == {}


def test_printed_lines_say_when_measured_and_predicted_differ():
    from ppverify.engines import run
    from ppverify.measure import MeasureResult
    from ppverify.measure.gradcheck import GradCheck
    from ppverify.measure.summary import memory_lines
    from ppverify.schedules import build

    s = build("interleaved-1f1b", p=2, m=2)  # S = 4 stages on p = 2: one activation is 2 x 800 B
    costs = CostModel.abstract(s.placement)
    tl = run(s, costs)
    ev = [[MemEvent(0, 0, 0, 800, "F"), MemEvent(1, 0, 1, 800, "F"), MemEvent(2, 2, 0, 800, "F")], []]
    mm = MeasuredMemory.from_events(ev, 0, 800, [1600.0, 800.0])
    res = MeasureResult(s, costs, "sleep", [tl], tl, [0.0], GradCheck(True, None, None, 0.0, 1e-8), tl, memory=mm)
    first, second = memory_lines(res)
    assert first == "peak memory   measured 2,400, 0 B   predicted 1,600, 800 B   DIFFERENT"
    # the count is the predicted bytes over one activation's: 1,600 / 1,600 = 1 and 800 / 1,600 = 0.5,
    # so the line agrees with the bytes the first line prints
    assert second.endswith("predicted = 1, 0.5 activations x 1,600 B")


def test_plot_draws_the_measured_curve_not_the_model(tmp_path, monkeypatch):
    import matplotlib.axes

    from ppverify.engines import run
    from ppverify.report.plots import gantt
    from ppverify.schedules import build

    drawn = []
    real_step = matplotlib.axes.Axes.step
    monkeypatch.setattr(
        matplotlib.axes.Axes, "step", lambda ax, x, y, *a, **k: drawn.append(list(y)) or real_step(ax, x, y, *a, **k)
    )
    tl = run(build("gpipe", p=2, m=1))  # the model would draw 1 activation per device
    ev = [[MemEvent(0, 0, 0, 128, "F"), MemEvent(1, 0, 0, 672, "F"), MemEvent(5, 0, 0, -800, "B")], []]
    curves = MeasuredMemory.from_events(ev, 0, 800, None).curves
    out = gantt(tl, tmp_path / "g.png", measured_memory=curves)
    assert out.stat().st_size > 1000
    # device 0: from 0, up to 128 then 800 bytes, back to 0 (device 1 recorded nothing: no line)
    assert drawn == [[0.0, 128.0, 800.0, 0.0, 0.0]]


@pytest.mark.parametrize("spec", [SLEEP, REAL])
def test_the_allocator_agrees_through_torch_profiler(spec):
    # a second witness, PyTorch's allocator through torch.profiler's memory events: what a
    # forward leaves allocated is what it saved, less its input (allocated before it: the batch or
    # the received buffer), plus its output (held for the next stage and the backward's root)
    from torch.profiler import ProfilerActivity, profile

    block = build_stage_module(spec, 0)
    x = torch.randn(spec.mb_size, spec.dim, dtype=torch.float64, requires_grad=True)
    rec = SavedTensors()
    rec.events = []
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof, rec.saving(0, 0, block.parameters()):
        out = block(x)
    allocated = sum(e.self_cpu_memory_usage for e in prof.events())
    saved = sum(e.nbytes for e in rec.events)
    io = spec.mb_size * spec.dim * 8  # input and output: r x d float64
    assert saved == stage_activation_bytes(spec)
    assert allocated == saved - io + out.numel() * out.element_size() == saved
