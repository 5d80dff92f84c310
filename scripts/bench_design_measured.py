"""Benchmark of issue 25's measured goal: at 1F1B's memory budget (p activations), the frontier
schedule of ``ppverify design`` against every registered family that fits that budget, run in
PyTorch's pipeline runtime with sleep compute and a calibrated preset's communication.

Runs the design (``--budgets P``, the given placements, deterministic work per point), takes the
fastest frontier point within the budget, then measures it and every family whose peak fits the
budget for several rounds (each round alternates the order; every round's median step over
``--steps`` steps is kept). Prints, per schedule: predicted step (the async engine with the
preset), measured median over the rounds and the spread of the round medians, the ratio to the
frontier's, the predicted and measured peaks against the budget, and the gradient check; then
whether the frontier is faster than each family beyond the run-to-run noise, with the date and
the load average before and after. Two tests of "beyond the noise": **separated** (the frontier's
slowest round faster than the family's fastest), and **paired** (faster in every round: the two
ran minutes apart under the same load, and every round faster has probability 2^-R when the two
are equally fast, 3 % for R = 5: a sign test); the goal asks for the paired one.

``--link-delay S`` emulates a slower link (``measure --link-delay``): the preset's
``runtime.link_delay_us`` is set to S, so the design searches with it and every run waits it.

Benchmarks print, they never assert (the machine and its load set the figures).

    python scripts/bench_design_measured.py --p 4 --m 8 --costs F=0.004,I=0.004,W=0.004 \\
        --system examples/systems/calibrated-2core.yaml --rounds 5
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=4)
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--costs", default="F=0.004,I=0.004,W=0.004", help="seconds slept per op")
    ap.add_argument("--system", default="examples/systems/calibrated-2core.yaml", help="a calibrated preset")
    ap.add_argument("--placements", default="linear,v,loop:2")
    ap.add_argument("--work-limit", type=float, default=5.0, help="CP-SAT deterministic work per point")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=5, help="measured steps per round (after one warm-up step)")
    ap.add_argument(
        "--link-delay",
        type=float,
        default=0.0,
        metavar="S",
        help="emulate a slower link (measure --link-delay): the preset's runtime.link_delay_us is set to S, so "
        "the design and every prediction add S to each transfer, and the runs wait for it",
    )
    args = ap.parse_args()
    if args.link_delay > 0:
        args.system = _with_link_delay(args.system, args.link_delay)

    from ppverify.design import DesignRequest, Limits, design, value_at
    from ppverify.measure import measure_many
    from ppverify.measure.calibrate import predict_on
    from ppverify.systems.preset_models import PresetSettings, resolve_presets
    from ppverify.systems.system import load_system

    load0 = os.getloadavg()
    start = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    budget = float(args.p)  # 1F1B's peak: p activations of one microbatch on a device's share
    settings = PresetSettings(costs=args.costs, system=args.system)
    t0 = time.process_time()
    d = design(
        DesignRequest(args.p, args.m, args.placements, f"{budget:g}", settings, Limits(args.work_limit)), progress=False
    )
    cpu = time.process_time() - t0
    best = value_at(d.front, budget)
    if best is None or best.schedule is None:
        print("no frontier schedule within the budget")
        return
    verdict = dict(zip(d.front, d.verified))[best]
    by_label = {s.label: s for s in d.setups}
    st = by_label[best.placement]
    # the ops sleep their own costs (the preset's overhead folded into design's durations is what
    # the runtime adds by itself)
    own = resolve_presets(settings, best.schedule).costs_for(True)
    items = [("frontier", best.placement, best.schedule, own, st.unit, float(best.peak or 0), best.time)]
    for f in d.families:
        if f.schedule is None or f.peak > budget + 1e-9:
            continue
        ctx = resolve_presets(settings, f.schedule)
        unit = max(ctx.costs.activation) / f.schedule.placement.share_per_stage
        items.append((f.family, f.placement, f.schedule, ctx.costs_for(True), unit, f.peak, f.time))
    print(
        f"{start}; p={args.p} m={args.m} costs {args.costs} system {args.system}; link delay "
        f"{1e3 * args.link_delay:g} ms; budget {budget:g} (1F1B's peak)"
    )
    system = load_system(args.system)
    # the hand-over model (PyTorch's runtime action by action), beside design's async prediction
    handover = {it[0]: predict_on(it[2], it[3], system) for it in items}
    print(
        f"frontier at the budget: {best.placement}, predicted {1e3 * (best.time or 0):.3f} ms, bound "
        f"{1e3 * best.bound:.3f} ms ({best.status}, start {best.start}), Z3 {verdict}; design {cpu:.0f} s CPU"
    )
    rounds: dict[str, list[float]] = {it[0]: [] for it in items}
    grads: dict[str, bool] = {it[0]: True for it in items}
    peaks: dict[str, float] = {it[0]: 0.0 for it in items}
    for r in range(args.rounds):
        order = items if r % 2 == 0 else items[::-1]
        results = measure_many(
            [(it[2], it[3]) for it in order],
            compute="sleep",
            steps=args.steps,
            timeout=300.0,
            link_delay=args.link_delay,
        )
        for it, res in zip(order, results):
            rounds[it[0]].append(statistics.median(res.makespans))
            grads[it[0]] = grads[it[0]] and bool(res.grad_check.ok)
            peaks[it[0]] = max(peaks[it[0]], float(max(res.timeline.peak_memory())) / it[4])
    load1 = os.getloadavg()
    front_med = statistics.median(rounds["frontier"])
    print(f"load average before {load0[0]:.2f}, after {load1[0]:.2f}; {args.rounds} rounds x {args.steps} steps")
    head = (
        f"{'schedule':<18} {'placement':<10} {'peak':>5} {'meas.':>6} {'predicted':>10} {'hand-over':>10} "
        f"{'median':>9} {'spread':>17} {'ratio':>6}  grads  separated  paired"
    )
    print(head)
    for name, label, _, _, _, peak, pred in items:
        ms = rounds[name]
        med = statistics.median(ms)
        spread = f"{1e3 * min(ms):.2f}-{1e3 * max(ms):.2f}"
        beyond = "-" if name == "frontier" else ("yes" if max(rounds["frontier"]) < min(ms) else "NO")
        wins = sum(f < x for f, x in zip(rounds["frontier"], ms))
        paired = "-" if name == "frontier" else f"{wins}/{len(ms)}"
        print(
            f"{name:<18} {label:<10} {peak:>5g} {peaks[name]:>6g} {1e3 * (pred or 0):>10.3f} "
            f"{1e3 * handover[name]:>10.3f} {1e3 * med:>9.3f} "
            f"{spread:>17} {med / front_med:>6.3f}  {'ok' if grads[name] else 'WRONG':<5}  {beyond:<9}  {paired}"
        )
    apart = [n for n in rounds if n != "frontier" and not max(rounds["frontier"]) < min(rounds[n])]
    slower = [n for n in rounds if n != "frontier" and not all(f < x for f, x in zip(rounds["frontier"], rounds[n]))]
    within = peaks["frontier"] <= budget + 1e-9
    print(
        "goal: "
        + ("met" if not slower and within and grads["frontier"] else "not met")
        + f" (frontier measured peak {peaks['frontier']:g} within {budget:g}: {'yes' if within else 'no'}; "
        + f"not faster in every round: {', '.join(slower) or 'none'}; rounds not separated: "
        + f"{', '.join(apart) or 'none'})"
    )


def _with_link_delay(system: str, delay: float) -> str:
    """A copy of the preset ``system`` (a file) whose ``runtime.link_delay_us`` is ``delay``."""
    import tempfile

    import yaml

    with open(system) as fh:
        preset = yaml.safe_load(fh)
    preset.setdefault("runtime", {})["link_delay_us"] = delay * 1e6
    fd, path = tempfile.mkstemp(prefix="ppverify-link-delay-", suffix=".yaml")
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(preset, fh, sort_keys=False)
    return path


if __name__ == "__main__":
    main()
