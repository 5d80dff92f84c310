"""Benchmark of the measured level: predicted (uncalibrated and calibrated) against measured step
makespans of PyTorch's pipeline runtime, ops sleeping their cost.

Over gpipe, 1f1b, 1f1b-split, zb-h1, zb-h2, interleaved-1f1b (v=2), looped-bfs, interleaved-zb,
zbv, dualpipev, hanayo and chimera at p in {2, 3, 4}, m in {4, 8} (combinations a family refuses
are listed, not run), with sleep costs F=10 ms, B=20 ms (I = W = 10 ms where split), prints per
run: the async engine's makespan without overhead, ``simulate --semantics async --system PRESET``
(the calibrated preset's overheads folded into op times) and ``simulate --semantics runtime
--system PRESET`` (its hand-over model; what ``measure --system`` prints), the measured median
makespan over every step of every round (rounds alternate the grid's order) and its spread, the
error of both calibrated predictions, and the rank of each family within its (p, m) by prediction
and by measurement; then the mean/max errors, a same-session check (the overheads fitted on the other
(p, m) groups of this run), the order of every pair of schedules against the measured one (an
inverted pair whose measured medians differ by less than the stated noise, the median over runs
of the step-to-step spread within a round, is a tie within the noise), where the runtime's time goes op by op (:mod:`ppverify.measure.breakdown`: sleep
overshoot, gaps between a rank's ops against the SEND/RECV actions between them, waits for other
ranks, along the measured critical paths), and a recording-on vs recording-off comparison.
Then the held-out standard (:data:`HELD_OUT`): schedules, costs and sizes the calibration never ran
(other costs than its 5/10 ms and the grid's 10/20 ms, m = 6 and 12, p = 3, v = 3, two waves,
families it never ran), each predicted by ``measure --system PRESET`` and measured: their mean and
max error beside the in-sample figures (goal: 3 % mean, 5 % max on a quiet machine).

Benchmarks print, they never assert (the machine and its load set the figures).

    python scripts/bench_measured.py                       # calibrate, then the whole grid twice (~5 min)
    python scripts/bench_measured.py --quick               # p in {2, 4}, m = 4, fewer steps
    python scripts/bench_measured.py --preset my.yaml      # reuse a preset from ppverify calibrate
    python scripts/bench_measured.py --preset my.yaml --held-out-only                 # the held-out runs
    python scripts/bench_measured.py --preset my.yaml --held-out-only --same-session  # ... load matched
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

FAMILIES = [
    ("gpipe", {}),
    ("1f1b", {}),
    ("1f1b-split", {}),
    ("zb-h1", {}),
    ("zb-h2", {}),
    ("interleaved-1f1b", {"v": 2}),
    ("looped-bfs", {}),
    ("interleaved-zb", {}),
    ("zbv", {}),
    ("dualpipev", {}),
    ("hanayo", {}),
    ("chimera", {}),
]
COSTS = {"F": 0.010, "B": 0.020}
TWO_PIPE = {"chimera", "chimera-asym", "dualpipe"}
#: the held-out runs: (family, p, m, params, costs), none of them in the calibration's runs
HELD_OUT = [
    ("1f1b", 3, 6, {}, {"F": 0.007, "B": 0.013}),
    ("1f1b", 2, 12, {}, {"F": 0.012, "B": 0.018}),
    ("interleaved-1f1b", 2, 6, {"v": 3}, {"F": 0.008, "B": 0.016}),
    ("hanayo", 2, 4, {"waves": 2}, {"F": 0.010, "B": 0.020}),
    ("zb-h2", 3, 6, {}, {"F": 0.006, "I": 0.006, "W": 0.004}),
    ("looped-bfs", 3, 6, {}, {"F": 0.009, "B": 0.015}),
    ("dualpipev", 2, 6, {}, {"F": 0.010, "B": 0.020}),
    ("chimera", 2, 6, {}, {"F": 0.007, "B": 0.014}),
]


def ranks(values: list[float]) -> list[int]:
    """1-based rank of each value (ties share the lower rank)."""
    return [1 + sum(1 for w in values if w < v - 1e-12) for v in values]


def inversions(group: list[dict], key: str, noise: float) -> list[tuple[int, int, str]]:
    """Pairs of runs ordered one way by ``key`` (a prediction) and the other way by the measured
    median: ``(1, tie, label)`` each, ``tie`` when the two medians differ by less than ``noise``
    (relative) and ``label`` naming the pair otherwise."""
    out = []
    for i, a in enumerate(group):
        for b in group[i + 1 :]:
            if (a[key] - b[key]) * (a["med"] - b["med"]) < 0:
                tie = abs(a["med"] - b["med"]) <= noise * (a["med"] + b["med"]) / 2
                label = (
                    ""
                    if tie
                    else (
                        f"{a['fam']}/{b['fam']} p={a['p']} m={a['m']} ({(b['med'] - a['med']) / a['med'] * 100:+.1f} %)"
                    )
                )
                out.append((1, int(tie), label))
    return out


def main(argv: list[str] | None = None) -> int:
    """Calibrate (or load a preset), run the grid, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="p in {2, 4}, m = 4, 2 measured steps")
    ap.add_argument("--preset", default=None, help="a preset from ppverify calibrate (default: calibrate now)")
    ap.add_argument("--steps", type=int, default=None, help="measured steps per run and round (default 5, quick 2)")
    ap.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds over the grid, every other one in reverse order, steps pooled (default 2, quick 1): "
        "a drift of the machine's state during the run then weighs on every family alike",
    )
    ap.add_argument("--save-preset", default=None, metavar="FILE.yaml", help="keep the calibrated preset there")
    ap.add_argument("--held-out-only", action="store_true", help="only the held-out runs (with --preset)")
    ap.add_argument(
        "--same-session",
        action="store_true",
        help="with --held-out-only: run the calibration's schedules and the held-out runs interleaved in one "
        "batch, fit on the former as calibrate does, predict the latter (the same machine load for both)",
    )
    from ppverify.measure.machine_load import add_wait_quiet_argument

    add_wait_quiet_argument(ap, "before measuring")
    ap.add_argument(
        "--realtime",
        action="store_true",
        help="calibrate and measure with the workers at real-time priority (calibrate --realtime, measure --realtime)",
    )
    args = ap.parse_args(argv)

    from ppverify.core.comm import FixedDelay
    from ppverify.core.errors import ParameterError
    from ppverify.measure import measure_many, seconds_costs
    from ppverify.measure.breakdown import breakdown, critical_path
    from ppverify.measure.calibrate import DRAWS, calibrate, predict, predict_on, preset_text
    from ppverify.measure.handover import fit_by_ranks, for_ranks, handover_samples, predict_runtime
    from ppverify.schedules import build
    from ppverify.systems.system import load_system

    if args.wait_quiet > 0:
        from ppverify.measure.machine_load import wait_quiet

        w = wait_quiet(args.wait_quiet)
        print(f"waited for a quiet machine: {w.describe() if w else 'no /proc/stat'}")
    t_start = time.perf_counter()
    ps, ms = ((2, 4), (4,)) if args.quick else ((2, 3, 4), (4, 8))
    steps = args.steps or (2 if args.quick else 5)
    rounds = args.rounds or (1 if args.quick else 2)
    if args.preset:
        system = load_system(args.preset)
        two = system.two_pipe_overhead_s
        print(
            f"preset {args.preset}: "
            + ("hand-over model for one-pipe runs, " if system.handover_s else "")
            + f"{system.action_overhead_s * 1e6:.0f} us/action, "
            f"{system.transfer_overhead_s * 1e6:.0f} us/transfer"
            + (f", two-pipe runner {two[0] * 1e6:.0f} us/action, {two[1] * 1e6:.0f} us/transfer" if two else "")
            + f", link {system.inter.latency_s * 1e6:.0f} us"
        )
    else:
        import tempfile
        from pathlib import Path

        cal = calibrate(quick=args.quick, realtime=args.realtime)
        path = Path(args.save_preset) if args.save_preset else Path(tempfile.mkdtemp()) / "calibrated.yaml"
        path.write_text(preset_text(cal), encoding="utf-8")
        system = load_system(str(path))
        two = cal.two_pipe_overhead_s
        print(
            f"calibrated ({time.perf_counter() - t_start:.0f} s): {cal.action_overhead_s * 1e6:.0f} us/action, "
            f"{cal.transfer_overhead_s * 1e6:.0f} us/transfer"
            + (f", two-pipe runner {two[0] * 1e6:.0f} us/action" if two else "")
            + f", link {cal.latency_s * 1e6:.0f} us + bytes/{cal.bandwidth_Bps / 1e9:.2f} GB/s, "
            f"fit residual {cal.residual * 100:.2f} % rms ({path})"
        )
        if cal.handover is not None:
            print(
                "  hand-over model (one-pipe runs): "
                + ", ".join(f"{k[:-3]} {v:.0f} us" for k, v in cal.handover.as_us().items())
                + f" (op-by-op means, drawn from their deciles; rms {cal.extra['handover_residual'] * 100:.2f} % on its runs)"
            )
            for n, h in cal.handover_by_ranks:
                print(f"    with {n} ranks: " + ", ".join(f"{k[:-3]} {v:.0f} us" for k, v in h.as_us().items()))

    if args.held_out_only:
        if args.same_session:
            same_session(system, steps, args.realtime)
        else:
            held_out(system, steps, args.realtime)
        return 0
    items, skipped = [], []
    for p in ps:
        for m in ms:
            for fam, params in FAMILIES:
                try:
                    items.append((fam, p, m, build(fam, p=p, m=m, **params)))
                except ParameterError as exc:
                    skipped.append(f"{fam} p={p} m={m}: {str(exc).split(': ', 1)[-1]}")
    t0 = time.perf_counter()
    # per item, its result in each round (odd rounds run the grid backwards)
    per_round: list[list] = [[] for _ in items]
    for k in range(rounds):
        order = list(range(len(items)))[:: -1 if k % 2 else 1]
        got = measure_many(
            [(items[i][3], dict(COSTS)) for i in order], steps=steps, warmup=1, timeout=120, realtime=args.realtime
        )
        for i, res in zip(order, got):
            per_round[i].append(res)
    t_measure = time.perf_counter() - t0

    rows = []
    breakdowns = [r for (fam, *_), rs in zip(items, per_round) if fam not in TWO_PIPE for r in rs]
    # each one-pipe run's hand-over samples (every measured step of every round), for the
    # same-session check
    ho_samples = [
        [handover_samples(s, seconds_costs(s, dict(COSTS)), ev, t0) for r in rs for t0, ev in r.events]
        if fam not in TWO_PIPE
        else []
        for (fam, _, _, s), rs in zip(items, per_round)
    ]
    for (fam, p, m, s), rs in zip(items, per_round):
        r = rs[0]
        unc = predict(s, seconds_costs(s, dict(COSTS)), FixedDelay(0.0), 0.0, 0.0)
        cal_ = predict_on(s, dict(COSTS), system)
        # simulate --semantics async --system PRESET: the preset's overheads folded into op times
        asy = predict_on(s, dict(COSTS), system, semantics="async")
        spans = [x for res in rs for x in res.makespans]
        med = statistics.median(spans)
        # the median's own reproducibility: how far apart the rounds' medians are
        meds = [statistics.median(res.makespans) for res in rs]
        spread_in = statistics.median([(max(res.makespans) - min(res.makespans)) / med for res in rs])
        rows.append(
            dict(
                fam=fam,
                p=p,
                m=m,
                unc=unc,
                cal=cal_,
                asy=asy,
                asy_err=(asy - med) / med,
                med=med,
                rounds=(max(meds) - min(meds)) / med,
                spread_in=spread_in,
                lo=min(spans),
                hi=max(spans),
                err=(cal_ - med) / med,
                grads=all(res.grad_check.ok for res in rs),
            )
        )
    # same-session check: the overheads fitted (as calibrate does: both runners) on the other
    # (p, m) groups of this very run (leave one group out), so calibration and measurement see
    # the same machine load
    from ppverify.measure.calibrate import fit_runtime, op_ratio

    lat = system.inter.latency_s
    runs = [(s, seconds_costs(s, dict(COSTS)), r["med"]) for (_, _, _, s), r in zip(items, rows)]
    groups = sorted({(r["p"], r["m"]) for r in rows})
    ratio = op_ratio(
        breakdown(
            [tl for (fam, *_), rs in zip(items, per_round) if fam not in TWO_PIPE for r in rs for tl in r.timelines]
        )
    )
    # the fits compared: the one calibrate uses ("cv", the table's column) and the alternatives
    variants = {
        "cv": ("as calibrate: transfer/action from this run's op means, level fitted", {"ratio": ratio}),
        "free": ("action and transfer fitted freely", {}),
        "lat": ("as calibrate, and the hand-over latency fitted", {"ratio": ratio, "latency": True}),
        "free_lat": ("action, transfer and hand-over latency fitted freely", {"latency": True}),
    }
    for g in groups:
        train = [run for run, r in zip(runs, rows) if (r["p"], r["m"]) != g]
        fits = {key: fit_runtime(train, FixedDelay(lat), **kw) for key, (_, kw) in variants.items()}
        for key, fit in fits.items():
            link = FixedDelay(fit.latency if fit.latency is not None else lat)
            for (s, c, _), r in zip(runs, rows):
                if (r["p"], r["m"]) == g:
                    a, t = fit.two_pipe_or_one if s.placement.num_pipes > 1 else fit.one_pipe
                    r[key] = predict(s, c, link, a, t)
                    r[key + "_a"], r[key + "_t"], r[key + "_l"] = a, t, link.delay
                    r[key + "_err"] = (r[key] - r["med"]) / r["med"]
        # the hand-over model (one-pipe runs) fitted as calibrate does on the other groups: every term
        # op by op, drawn per action from its deciles; two-pipe runs keep the "cv" figure
        train_idx = [i for i, r in enumerate(rows) if (r["p"], r["m"]) != g and rows[i]["fam"] not in TWO_PIPE]
        pooled, by_ranks = fit_by_ranks([(rows[i]["p"], d) for i in train_idx for d in ho_samples[i]])
        for (s, c, _), r in zip(runs, rows):
            if (r["p"], r["m"]) == g:
                one_pipe = r["fam"] not in TWO_PIPE
                ho = for_ranks(pooled, by_ranks, s.p)
                r["ho"] = predict_runtime(s, c, ho, draws=DRAWS).makespan if one_pipe else r["cv"]
                r["ho_err"] = (r["ho"] - r["med"]) / r["med"]
                # the same terms at their means, one walk (what a constant per term gives)
                r["hop"] = predict_runtime(s, c, ho).makespan if one_pipe else r["cv"]
                r["hop_err"] = (r["hop"] - r["med"]) / r["med"]
    for p in ps:
        for m in ms:
            grp = [r for r in rows if r["p"] == p and r["m"] == m]
            for r, a, b in zip(grp, ranks([g["cal"] for g in grp]), ranks([g["med"] for g in grp])):
                r["rank_pred"], r["rank_meas"] = a, b

    head = (
        f"{'family':<17}{'p':>2}{'m':>3}  {'pred':>7}  {'async':>7}  {'err':>6}  {'runtime':>7}  {'err':>6}  "
        f"{'measured':>8}  {'spread (min-max)':>17}  {'rounds':>6}  {'rank':>4}  {'meas':>4}    {'ho cv':>7}  {'err':>6}  grads"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        mark = "" if r["rank_pred"] == r["rank_meas"] else " *"
        print(
            f"{r['fam']:<17}{r['p']:>2}{r['m']:>3}  {r['unc'] * 1e3:7.1f}  {r['asy'] * 1e3:7.1f}  "
            f"{r['asy_err'] * 100:+5.1f}%  {r['cal'] * 1e3:7.1f}  {r['err'] * 100:+5.1f}%  "
            f"{r['med'] * 1e3:8.1f}  {r['lo'] * 1e3:8.1f}-{r['hi'] * 1e3:<8.1f}  {r['rounds'] * 100:5.1f}%  "
            f"{r['rank_pred']:>4}  {r['rank_meas']:>4}{mark:<2}  {r['ho'] * 1e3:7.1f}  {r['ho_err'] * 100:+5.1f}%  "
            f"{'ok' if r['grads'] else 'MISMATCH'}"
        )
    errs = [abs(r["err"]) for r in rows]
    unc_errs = [abs(r["unc"] - r["med"]) / r["med"] for r in rows]
    same = sum(1 for r in rows if r["rank_pred"] == r["rank_meas"])
    asy_errs = [abs(r["asy_err"]) for r in rows]
    print(
        "(times in ms, measured = median over every step of every round; pred = async engine, no overhead; "
        "async = simulate --semantics async --system PRESET (the preset's overheads folded into op times); "
        "runtime = simulate --semantics runtime --system PRESET (the preset's hand-over model; two-pipe runs: "
        "async), what measure --system prints; err = (prediction - measured) / measured; rounds = the rounds' "
        "medians apart; rank and * = by runtime vs measured)"
    )
    print(
        f"calibrated error, runtime semantics: mean {statistics.mean(errs) * 100:.2f} %, max {max(errs) * 100:.2f} %, "
        f"median {statistics.median(errs) * 100:.2f} %; async semantics: mean {statistics.mean(asy_errs) * 100:.2f} %, "
        f"max {max(asy_errs) * 100:.2f} %, median {statistics.median(asy_errs) * 100:.2f} %  "
        f"(uncalibrated: mean {statistics.mean(unc_errs) * 100:.2f} %, max {max(unc_errs) * 100:.2f} %)"
    )
    one = [r for r in rows if r["fam"] not in TWO_PIPE]
    print(
        f"same-session error (overheads fitted on the other (p, m) groups of this run; op-mean transfer/action "
        f"{ratio if ratio is not None else float('nan'):.2f}):"
    )
    ho_errs = [abs(r["ho_err"]) for r in rows]
    print(
        f"  ho cv    as calibrate: the hand-over model on one-pipe runs (terms op by op and per rank count, drawn per action, "
        f"median of {DRAWS} walks), pred cv on two-pipe runs: "
        f"mean {statistics.mean(ho_errs) * 100:.2f} %, max {max(ho_errs) * 100:.2f} %, "
        f"median {statistics.median(ho_errs) * 100:.2f} %"
    )
    hop_errs = [abs(r["hop_err"]) for r in rows]
    print(
        f"  ho mean  the same terms at their means, one walk: mean {statistics.mean(hop_errs) * 100:.2f} %, "
        f"max {max(hop_errs) * 100:.2f} %, median {statistics.median(hop_errs) * 100:.2f} %"
    )
    for key, (how, _) in variants.items():
        cv_errs = [abs(r[key + "_err"]) for r in rows]
        print(
            f"  {'pred cv' if key == 'cv' else key:<8} {how}: mean {statistics.mean(cv_errs) * 100:.2f} %, "
            f"max {max(cv_errs) * 100:.2f} %, median {statistics.median(cv_errs) * 100:.2f} % (one-pipe "
            f"{min(r[key + '_a'] for r in one) * 1e3:.2f}-{max(r[key + '_a'] for r in one) * 1e3:.2f} ms/action, "
            f"{min(r[key + '_t'] for r in one) * 1e3:.2f}-{max(r[key + '_t'] for r in one) * 1e3:.2f} ms/transfer, "
            f"latency {min(r[key + '_l'] for r in one) * 1e3:.2f}-{max(r[key + '_l'] for r in one) * 1e3:.2f} ms)"
        )
    spread = [r["spread_in"] for r in rows]
    noise = statistics.median(spread)
    print(
        f"measurement spread (max - min) / median over the {steps} steps of a round: mean "
        f"{statistics.mean(spread) * 100:.1f} %, median {noise * 100:.1f} % (the stated noise), max {max(spread) * 100:.1f} %"
    )
    if rounds > 1:
        apart = [r["rounds"] for r in rows]
        print(
            f"the rounds' medians of a run apart: mean {statistics.mean(apart) * 100:.2f} %, median "
            f"{statistics.median(apart) * 100:.2f} %, max {max(apart) * 100:.2f} % (how far a median moves on a re-run)"
        )
    print(f"ranks: {same}/{len(rows)} runs rank the same by prediction (runtime) and by measurement")
    for key, label in (("cal", "runtime"), ("asy", "async"), ("cv", "pred cv"), ("ho", "ho cv"), ("hop", "ho mean")):
        bad = tie = total = 0
        worst = []
        for g in groups:
            grp = [r for r in rows if (r["p"], r["m"]) == g]
            total += len(grp) * (len(grp) - 1) // 2
            for b, n, pair in inversions(grp, key, noise):
                bad, tie = bad + b, tie + n
                if pair:
                    worst.append(pair)
        print(
            f"order ({label} vs measured): {bad} of {total} pairs inverted, {tie} of them ties within the "
            f"noise (measured medians closer than {noise * 100:.1f} %); beyond it: {', '.join(worst) or 'none'}"
        )
    if breakdowns:
        b = breakdown([tl for r in breakdowns for tl in r.timelines])
        print(
            f"op by op (one-pipe runs, medians over {b.samples} ops): sleep overshoot {b.overshoot * 1e6:.0f} us/op; "
            f"gap between a rank's ops {b.gap_base * 1e6:.0f} us + {b.gap_per_comm * 1e6:.0f} us per SEND/RECV action "
            f"between them; wait after another rank's op {b.wait * 1e6:.0f} us; step head {b.head * 1e6:.0f} us; "
            f"trimmed means: overshoot {b.means[0] * 1e6:.0f} us/op, gap {b.means[1] * 1e6:.0f} us + "
            f"{b.means[2] * 1e6:.0f} us per SEND/RECV action"
        )
        # the model with the op-level medians of this very run (no makespan fitted): one-pipe runs
        a_op, t_op = b.per_action, max(0.0, b.gap_per_comm)
        op_errs = [
            abs(predict(s, seconds_costs(s, dict(COSTS)), FixedDelay(system.inter.latency_s), a_op, t_op) - r["med"])
            / r["med"]
            for (fam, _, _, s), r in zip(items, rows)
            if fam not in TWO_PIPE
        ]
        print(
            f"  the model with these medians ({a_op * 1e6:.0f} us/action, {t_op * 1e6:.0f} us/transfer; one-pipe runs): "
            f"error mean {statistics.mean(op_errs) * 100:.2f} %, max {max(op_errs) * 100:.2f} %"
        )
        paths = [critical_path(r.timeline) for r in breakdowns]
        over = sum(pt.overhead for pt in paths)
        print(
            f"measured critical paths (median steps, one-pipe runs): overhead {over * 1e3:.1f} ms in all = "
            + ", ".join(
                f"{k} {sum(getattr(pt, k) for pt in paths) / over * 100:.0f} %"
                for k in ("overshoot", "gaps", "waits", "head")
            )
            + f"; per op {over / sum(pt.ops for pt in paths) * 1e6:.0f} us, "
            f"{sum(pt.comm for pt in paths) / sum(pt.ops for pt in paths):.2f} SEND/RECV per op"
        )
    two = [r for (fam, *_), rs in zip(items, per_round) if fam in TWO_PIPE for r in rs]
    if two:
        tails = [tl.makespan - float(tl.end.max()) for r in two for tl in r.timelines]
        paths = [critical_path(r.timeline) for r in two]
        print(
            f"two-pipe runner: replica all-reduce after the last op {statistics.median(tails) * 1e6:.0f} us "
            f"(median over steps; the model's: two link latencies), overhead on the critical paths "
            f"{sum(pt.overhead for pt in paths) / sum(pt.ops for pt in paths) * 1e6:.0f} us per op"
        )
    print(f"measured {len(rows)} runs x {steps} steps in {t_measure:.0f} s")
    if skipped:
        print("skipped (the family refuses these sizes):")
        for line in skipped:
            print(f"  {line}")

    # recording overhead: the same runs with and without event recording, step times compared
    probe = [s for fam, p, m, s in items if (fam, m) in (("1f1b", ms[-1]), ("zbv", ms[-1]))]
    pairs = []
    for record in (True, False, True, False):
        rs = measure_many(
            [(s, dict(COSTS)) for s in probe], steps=steps, warmup=1, timeout=120, record=record, realtime=args.realtime
        )
        pairs.append([statistics.median(r.step_times) for r in rs])
    on = [statistics.mean(x) for x in zip(pairs[0], pairs[2])]
    off = [statistics.mean(x) for x in zip(pairs[1], pairs[3])]
    print("recording on vs off (median step time, ms, two alternating rounds each):")
    for s, a, b in zip(probe, on, off):
        print(f"  {s.describe():<28} on {a * 1e3:8.1f}  off {b * 1e3:8.1f}  overhead {(a - b) / b * 100:+.2f} %")
    held_out(system, steps, args.realtime)
    print(f"total {time.perf_counter() - t_start:.0f} s")
    return 0


def held_out(system, steps: int, realtime: bool = False) -> None:
    """Measure :data:`HELD_OUT` (``realtime``: the workers at real-time priority) and print each
    run's calibrated prediction (``measure --system``), its measured median makespan and the
    error, then the mean and max error."""
    from ppverify.measure import measure_many
    from ppverify.measure.calibrate import predict_on, prediction_method
    from ppverify.measure.machine_load import cpu_share, cpu_ticks
    from ppverify.schedules import build

    runs = [(build(f, p=p, m=m, **params), costs) for f, p, m, params, costs in HELD_OUT]
    ticks = cpu_ticks()
    results = measure_many(runs, steps=steps, warmup=1, timeout=120, realtime=realtime)
    load = cpu_share(ticks, cpu_ticks())
    print("held-out (schedules, costs and sizes the calibration did not run):")
    if load is not None:
        print(f"  machine load while measuring: {load.describe()}")
    errs = []
    for (s, costs), r in zip(runs, results):
        pred = predict_on(s, costs, system)
        med = statistics.median(r.makespans)
        errs.append(abs(pred - med) / med)
        label = ",".join(f"{k}={v * 1e3:g}" for k, v in costs.items())
        print(
            f"  {s.describe():<40} {label + ' ms':<22} predicted {pred * 1e3:8.2f} ms ({prediction_method(s, system)})"
            f"  measured {med * 1e3:8.2f} ms  error {(pred - med) / med * 100:+6.2f} %"
        )
    print(
        f"held-out: mean |error| {statistics.mean(errs) * 100:.2f} %, max {max(errs) * 100:.2f} % over {len(errs)} runs"
    )


def same_session(system, steps: int, realtime: bool = False) -> None:
    """The held-out standard with the load matched: ``calibrate``'s overhead schedules
    (:data:`~ppverify.measure.calibration.OVERHEAD_SCHEDULES`, ops sleeping 5/10 ms) and
    :data:`HELD_OUT` measured interleaved in one batch, the preset's terms fitted on the former
    exactly as ``calibrate`` fits them (hand-over terms op by op per process count; the two-pipe
    runner's overhead by least squares), each held-out run predicted from them (the link latency
    from ``system``). Separates the model's error on unseen schedules from the drift of the
    machine's load between a calibration and a later measurement."""
    from ppverify.core.comm import FixedDelay
    from ppverify.engines.runtime import DRAWS
    from ppverify.measure import measure_many, seconds_costs
    from ppverify.measure.breakdown import breakdown
    from ppverify.measure.calibration import CALIBRATION_COSTS, OVERHEAD_SCHEDULES
    from ppverify.measure.fit import fit_runtime, op_ratio, predict
    from ppverify.measure.handover import fit_by_ranks, for_ranks, handover_samples, predict_runtime
    from ppverify.measure.machine_load import cpu_share, cpu_ticks
    from ppverify.schedules import build

    cal = [(build(f, p=p, m=m, **kw), dict(CALIBRATION_COSTS)) for f, p, m, kw in OVERHEAD_SCHEDULES]
    held = [(build(f, p=p, m=m, **kw), costs) for f, p, m, kw, costs in HELD_OUT]
    # interleaved (a calibration run, a held-out run, ...) so that both see the same load
    order = [x for pair in zip(cal, held) for x in pair] + cal[len(held) :] + held[len(cal) :]
    ticks = cpu_ticks()
    results = measure_many(order, steps=steps, warmup=1, timeout=120, realtime=realtime)
    load = cpu_share(ticks, cpu_ticks())
    res = {id(item): r for item, r in zip(order, results)}
    one = [(item[0], seconds_costs(*item), res[id(item)]) for item in cal]
    samples = [
        (s.p, handover_samples(s, c, ev, t0)) for s, c, r in one if s.placement.num_pipes == 1 for t0, ev in r.events
    ]
    ho, by = fit_by_ranks(samples)
    tls = [tl for s, _, r in one if s.placement.num_pipes == 1 for tl in r.timelines]
    lat = system.inter.latency_s
    fit = fit_runtime(
        [(s, c, statistics.median(r.makespans)) for s, c, r in one], FixedDelay(lat), ratio=op_ratio(breakdown(tls))
    )
    print("held-out, same session (calibrate's schedules and the held-out runs interleaved in one batch):")
    if load is not None:
        print(f"  machine load while measuring: {load.describe()}")
    print("  fitted on calibrate's runs: " + ", ".join(f"{k[:-3]} {v:.0f} us" for k, v in ho.as_us().items())
          + f"; two-pipe runner {fit.two_pipe_or_one[0] * 1e6:.0f} us/action")  # fmt: skip
    errs = []
    for item in held:
        s, costs = item
        r = res[id(item)]
        c = seconds_costs(s, costs)
        if s.placement.num_pipes == 1:
            pred, how = predict_runtime(s, c, for_ranks(ho, by, s.p), draws=DRAWS).makespan, "hand-over model"
        else:
            pred, how = predict(s, c, FixedDelay(lat), *fit.two_pipe_or_one), "async"
        med = statistics.median(r.makespans)
        errs.append(abs(pred - med) / med)
        label = ",".join(f"{k}={v * 1e3:g}" for k, v in costs.items())
        print(f"  {s.describe()[:40]:<40} {label + ' ms':<22} predicted {pred * 1e3:8.2f} ms ({how})  measured "
              f"{med * 1e3:8.2f} ms ({min(r.makespans) * 1e3:.1f}-{max(r.makespans) * 1e3:.1f})  error {(pred - med) / med * 100:+6.2f} %")  # fmt: skip
    print(
        f"held-out, same session: mean |error| {statistics.mean(errs) * 100:.2f} %, max {max(errs) * 100:.2f} % over {len(errs)} runs"
    )


if __name__ == "__main__":
    sys.exit(main())
