"""The seed paper's findings as checks over computed comparison results.

Each finding is evaluated separately under every abstraction level that produced numbers, and
reports *reproduced*, *not reproduced* (with the numbers that contradict it) or *no data*. Nothing
here tunes a model until a finding agrees: a finding that fails under some semantics is reported
as such.

The findings of the seed paper ("A Tabular Schedule Abstraction for Communication-Aware Evaluation
of Pipeline-Parallel LLM Training", arXiv 2605.24006), in ppverify's words:

1. ``abstraction``: rankings are not abstraction-invariant — some configuration orders the schedules
   differently by (closed-form) bubble ratio than by simulated makespan;
2. ``gpipe-1f1b``: GPipe and 1F1B take equal time, and 1F1B's peak activation memory is strictly lower;
3. ``chimera``: Chimera beats 1F1B at m = p on a fast interconnect and loses that advantage at large
   m or on a slow network;
4. ``hanayo``: Hanayo in its regime (m = p, W in {1, 2}) beats 1F1B on a fast interconnect and falls
   behind it on a bottlenecked network;
5. ``chimera-asym``: the asymmetric Chimera-style placement has the same global peak memory as
   Chimera and at most a small runtime gain (<= :data:`SMALL_GAIN`), only for shallow pipelines (p <= 4).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .config import DEFAULT_SCHEDULES, LEVELS, NOT_IN_PAPER, Config, ScheduleEntry

#: "at most a small runtime gain": the asymmetric placement gains at most this fraction
SMALL_GAIN = 0.05
#: relative tolerance for "equal" makespans and memory peaks
REL_TOL = 1e-9
#: an order inversion counts for the abstraction finding only when the makespans differ by this much
MATERIAL = 0.01

#: the seed paper's seven schedules, on which the findings are checked: compare's default list
#: (defined once, in :mod:`.config`) less its one addition
FINDINGS_SCHEDULES: tuple[ScheduleEntry, ...] = tuple(e for e in DEFAULT_SCHEDULES if e.label not in NOT_IN_PAPER)


@dataclass(frozen=True)
class Setup:
    """Where the findings are checked: a fast and a slow system (``system`` column values), one
    model, shallow and deep pipelines, and ``m = p`` against a large ``m = large_m_factor * p``."""

    fast: str = "dgx-h100"
    slow: str = "ethernet-100g"
    model: str | None = "gpt3-1.3b"
    ps: tuple[int, ...] = (4, 8)
    large_m_factor: int = 4
    options: tuple[tuple[str, Any], ...] = ()

    def configs(self) -> list[Config]:
        """Preset configurations the findings need."""
        return [
            Config(p, m, sysname, self.model, options=self.options)
            for sysname in (self.fast, self.slow)
            for p in self.ps
            for m in (p, self.large_m_factor * p)
        ]


def abstract_setup(
    fast_delay: float = 0.0,
    slow_delay: float = 1.0,
    costs: tuple[tuple[str, float], ...] = (("F", 1.0), ("B", 2.0)),
    ps: tuple[int, ...] = (4, 8),
    large_m_factor: int = 4,
) -> tuple[Setup, list[Config]]:
    """The same checks in abstract units: ``fast``/``slow`` are fixed per-hop delays.

    Example:
        >>> setup, cfgs = abstract_setup(0.0, 1.0, ps=(4,))
        >>> setup.fast, [c.label for c in cfgs][:2]
        ('comm-delay=0', ['p=4 m=4 F=1,B=2 c=0', 'p=4 m=16 F=1,B=2 c=0'])
    """
    cfgs = [
        Config(p, m, costs=costs, comm_delay=d)
        for d in (fast_delay, slow_delay)
        for p in ps
        for m in (p, large_m_factor * p)
    ]
    return Setup(cfgs[0].key()["system"], cfgs[-1].key()["system"], None, ps, large_m_factor), cfgs


@dataclass(frozen=True)
class Verdict:
    """A finding under one level: reproduced (True/False, None = no data) and the evidence."""

    level: str
    reproduced: bool | None
    evidence: str


@dataclass(frozen=True)
class Finding:
    """One finding with its verdict under every level."""

    key: str
    claim: str
    verdicts: tuple[Verdict, ...]

    def levels(self, reproduced: bool | None) -> list[str]:
        """Levels where the verdict is ``reproduced``."""
        return [v.level for v in self.verdicts if v.reproduced is reproduced]

    def verdict(self, level: str) -> Verdict:
        """The verdict under one level."""
        return next(v for v in self.verdicts if v.level == level)

    @property
    def summary(self) -> str:
        """``reproduced under slot, async; NOT reproduced under contention``."""
        parts = []
        if self.levels(True):
            parts.append("reproduced under " + ", ".join(self.levels(True)))
        if self.levels(False):
            parts.append("NOT reproduced under " + ", ".join(self.levels(False)))
        if self.levels(None) and not parts:
            parts.append("no data")
        return "; ".join(parts)


def _val(
    df: pd.DataFrame, level: str, system: str, p: int, m: int, schedule: str, col: str = "makespan"
) -> float | None:
    sel = df[
        (df["level"] == level)
        & (df["system"] == system)
        & (df["p"] == p)
        & (df["m"] == m)
        & (df["schedule"] == schedule)
    ]
    if not len(sel) or pd.isna(sel[col].iloc[0]):
        return None
    return float(sel[col].iloc[0])


def _eq(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1.0)


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _unit(df: pd.DataFrame) -> str:
    return str(df["time_unit"].dropna().iloc[0]) if "time_unit" in df and df["time_unit"].notna().any() else "units"


def _t(x: float, unit: str) -> str:
    return f"{x * 1e3:.4g} ms" if unit == "s" else f"{x:.4g}"


def _mem(x: float, unit: str) -> str:
    return f"{x / 2**30:.3g} GiB" if unit == "bytes" else f"{x:.4g}"


def finding_abstraction(df: pd.DataFrame, setup: Setup, level: str) -> Verdict:
    """Some configuration where the bubble-ratio order (the formula's, or the slot table's where
    no exact formula exists) of two schedules is the opposite of ``level``'s makespan order, with
    the makespans at least :data:`MATERIAL` apart. The evidence is the largest such inversion.

    Example:
        >>> df = pd.DataFrame({"config": "c", "level": ["formula"] * 2 + ["async"] * 2, "schedule": ["x", "y"] * 2,
        ...                    "bubble_ratio": [0.2, 0.3, None, None], "makespan": [None, None, 12.0, 10.0]})
        >>> v = finding_abstraction(df, Setup(), "async")
        >>> v.reproduced, v.evidence
        (True, '1 of 1 configurations invert some pair; largest: c: x has the lower bubble ratio (0.200 [formula] vs 0.300 [formula] for y) but a 20.0% longer async makespan (12 vs 10)')
    """
    if level == "formula":
        return Verdict(level, None, "the bubble-ratio order is the formula's own; compared against the other levels")
    unit = _unit(df)
    seen_any, best, count = False, None, 0
    for cfg, grp in df.groupby("config", sort=False):
        ratios: dict[str, tuple[float, str]] = {}  # schedule -> (bubble ratio, the level that gave it)
        for src in ("formula", "slot"):
            r = grp[grp["level"] == src].set_index("schedule")["bubble_ratio"].dropna()
            for sname, v in r.items():
                ratios.setdefault(sname, (float(v), src))
        sim = grp[grp["level"] == level].set_index("schedule")["makespan"].dropna()
        common = [x for x in ratios if x in sim.index]
        seen_any |= len(common) >= 2
        inverted = False
        for i, a in enumerate(common):
            for b in common[i + 1 :]:
                db, dm = ratios[a][0] - ratios[b][0], sim[a] - sim[b]
                rel = abs(dm) / min(sim[a], sim[b])
                if abs(db) > REL_TOL and rel >= MATERIAL and (db > 0) != (dm > 0):
                    inverted = True
                    if best is None or rel > best[0]:
                        lo, hi = (a, b) if db < 0 else (b, a)
                        best = (
                            rel,
                            f"{cfg}: {lo} has the lower bubble ratio ({ratios[lo][0]:.3f} [{ratios[lo][1]}] vs "
                            f"{ratios[hi][0]:.3f} [{ratios[hi][1]}] for {hi}) but a {100 * rel:.1f}% longer {level} "
                            f"makespan ({_t(sim[lo], unit)} vs {_t(sim[hi], unit)})",
                        )
        count += inverted
    if not seen_any:
        has_ratios = df["level"].isin(("formula", "slot")) & df["bubble_ratio"].notna()
        hint = "" if has_ratios.any() else " (no formula or slot level ran: add formula to --levels)"
        return Verdict(level, None, f"needs bubble ratios and makespans of two schedules in one configuration{hint}")
    if best is None:
        return Verdict(
            level,
            False,
            f"in every configuration the bubble-ratio order agrees with the {level} order (to within {MATERIAL:.0%})",
        )
    n_cfg = df["config"].nunique()
    return Verdict(level, True, f"{count} of {n_cfg} configurations invert some pair; largest: {best[1]}")


def _peaks(row: pd.Series) -> list[float] | None:
    txt = row["peak_activations"]
    return None if txt is None or (isinstance(txt, float) and pd.isna(txt)) else json.loads(txt)


def finding_gpipe_1f1b(df: pd.DataFrame, setup: Setup, level: str) -> Verdict:
    """GPipe and 1F1B equal makespan; 1F1B's peak activation memory no higher than GPipe's on every
    device and strictly lower in total (at m <= p both peak at m on device 0, so the *global* peak
    only drops once m > p: min(p, m) against m).

    Example:
        >>> from ppverify.compare.evaluate import evaluate_point
        >>> from ppverify.compare.table import to_frame
        >>> cfg = Config(4, 4, costs=(("F", 1.0), ("B", 2.0)), comm_delay=1.0)
        >>> df = to_frame([evaluate_point(ScheduleEntry(n, n), cfg, ("slot", "async")) for n in ("gpipe", "1f1b")])
        >>> finding_gpipe_1f1b(df, Setup(), "slot").reproduced
        True
        >>> finding_gpipe_1f1b(df, Setup(), "async").evidence
        'differs in 1 of 1 configurations, e.g. p=4 m=4 F=1,B=2 c=1: GPipe 27 vs 1F1B 31'
    """
    bad, good = [], 0
    for cfg, grp in df[df["level"] == level].groupby("config", sort=False):
        g = grp.set_index("schedule")
        if (
            "gpipe" not in g.index
            or "1f1b" not in g.index
            or pd.isna(g.at["gpipe", "makespan"])
            or pd.isna(g.at["1f1b", "makespan"])
        ):
            continue
        tg, t1 = g.at["gpipe", "makespan"], g.at["1f1b", "makespan"]
        pg, p1 = _peaks(g.loc["gpipe"]), _peaks(g.loc["1f1b"])
        if not _eq(tg, t1):
            bad.append(f"{cfg}: GPipe {_t(tg, _unit(grp))} vs 1F1B {_t(t1, _unit(grp))}")
        elif pg is None or p1 is None:
            bad.append(f"{cfg}: equal time, no per-device peaks at this level")
        elif not (all(a <= b * (1 + REL_TOL) for a, b in zip(p1, pg)) and sum(p1) < sum(pg) * (1 - REL_TOL)):
            mu = str(grp["memory_unit"].iloc[0]) if "memory_unit" in grp else "activations"
            shown = [", ".join(_mem(x, mu) for x in peaks) for peaks in (p1, pg)]
            bad.append(f"{cfg}: equal time but 1F1B peaks [{shown[0]}] not below GPipe [{shown[1]}]")
        else:
            good += 1
    if not bad and not good:
        return Verdict(level, None, "no configuration with both GPipe and 1F1B")
    if bad:
        return Verdict(
            level, False, f"differs in {len(bad)} of {len(bad) + good} configurations, e.g. " + "; ".join(bad[:2])
        )
    return Verdict(level, True, f"equal makespan, and 1F1B's per-device peaks lower, in all {good} configurations")


def _advantage(
    df: pd.DataFrame, level: str, system: str, p: int, m: int, sched: str, ref: str = "1f1b"
) -> float | None:
    a, b = _val(df, level, system, p, m, sched), _val(df, level, system, p, m, ref)
    return None if a is None or b is None else 1.0 - a / b


def finding_chimera(df: pd.DataFrame, setup: Setup, level: str) -> Verdict:
    """At m = p on ``fast`` Chimera is faster than 1F1B; at m = large*p on ``fast``, or at m = p on
    ``slow``, its advantage is gone (Chimera no faster than 1F1B).

    Example:
        >>> df = pd.DataFrame({"level": "async", "p": 4, "m": 4, "system": ["fast", "fast", "slow", "slow"],
        ...                    "schedule": ["chimera", "1f1b"] * 2, "makespan": [8.0, 10.0, 12.0, 11.0]})
        >>> v = finding_chimera(df, Setup("fast", "slow", ps=(4,)), "async")
        >>> v.reproduced, v.evidence
        (True, 'p=4: Chimera vs 1F1B +20.0% at m=p on fast, -9.1% on slow (+ = Chimera faster)')
    """
    ev, ok, missing = [], True, True
    for p in setup.ps:
        base = _advantage(df, level, setup.fast, p, p, "chimera")
        big = _advantage(df, level, setup.fast, p, setup.large_m_factor * p, "chimera")
        slow = _advantage(df, level, setup.slow, p, p, "chimera")
        if base is None or (big is None and slow is None):
            continue
        missing = False
        lost = [x for x in (big, slow) if x is not None and x <= REL_TOL]
        ok &= base > 0 and bool(lost)
        ev.append(
            f"p={p}: Chimera vs 1F1B {_pct(base)} at m=p on {setup.fast}, "
            + (f"{_pct(big)} at m={setup.large_m_factor * p}, " if big is not None else "")
            + (f"{_pct(slow)} on {setup.slow}" if slow is not None else "")
        )
    if missing:
        return Verdict(level, None, "needs Chimera and 1F1B on the fast and slow systems")
    why = " (the closed form ignores communication)" if level == "formula" and not ok else ""
    return Verdict(level, ok, "; ".join(ev) + " (+ = Chimera faster)" + why)


def finding_hanayo(df: pd.DataFrame, setup: Setup, level: str) -> Verdict:
    """At m = p, Hanayo (W = 1 and W = 2) is faster than 1F1B on ``fast`` and slower on ``slow``.

    Example:
        >>> df = pd.DataFrame({"level": "async", "p": 4, "m": 4, "system": ["fast", "fast", "slow", "slow"],
        ...                    "schedule": ["hanayo-w1", "1f1b"] * 2, "makespan": [8.0, 10.0, 12.0, 10.0]})
        >>> v = finding_hanayo(df, Setup("fast", "slow", ps=(4,)), "async")
        >>> v.reproduced, v.evidence
        (True, 'p=4 W=1: +20.0% on fast, -20.0% on slow (Hanayo vs 1F1B, + = Hanayo faster)')
    """
    ev, ok, missing = [], True, True
    for p in setup.ps:
        for w in (1, 2):
            fast = _advantage(df, level, setup.fast, p, p, f"hanayo-w{w}")
            slow = _advantage(df, level, setup.slow, p, p, f"hanayo-w{w}")
            if fast is None or slow is None:
                continue
            missing = False
            ok &= fast > 0 and slow < 0
            ev.append(f"p={p} W={w}: {_pct(fast)} on {setup.fast}, {_pct(slow)} on {setup.slow}")
    if missing:
        return Verdict(level, None, "needs Hanayo and 1F1B at m = p on the fast and slow systems")
    why = " (the closed form ignores communication)" if level == "formula" and not ok else ""
    return Verdict(level, ok, "; ".join(ev) + " (Hanayo vs 1F1B, + = Hanayo faster)" + why)


def finding_chimera_asym(df: pd.DataFrame, setup: Setup, level: str) -> Verdict:
    """Asymmetric vs symmetric Chimera: equal global peak activation memory everywhere; runtime gain
    at most SMALL_GAIN, and positive only where p <= 4. The evidence counts each part separately.

    Example:
        >>> df = pd.DataFrame({"config": "c", "p": 4, "level": "async", "schedule": ["chimera", "chimera-asym"],
        ...                    "makespan": [10.0, 9.75], "peak_activation": 4.0, "memory_unit": "activations"})
        >>> finding_chimera_asym(df, Setup(), "async").evidence
        "global peak equal to Chimera's in 1 of 1 configurations; largest runtime gain +2.5% (c)"
        >>> df.loc[1, "makespan"] = 9.0  # a 10% gain is more than SMALL_GAIN
        >>> finding_chimera_asym(df, Setup(), "async").reproduced
        False
    """
    n = 0
    mem_bad: list[str] = []
    big_gain: list[str] = []
    deep_gain: list[str] = []
    best_gain = None
    for (cfg, p), grp in df[df["level"] == level].groupby(["config", "p"], sort=False):
        g = grp.set_index("schedule")
        if "chimera" not in g.index or "chimera-asym" not in g.index:
            continue
        ts, ta = g.at["chimera", "makespan"], g.at["chimera-asym", "makespan"]
        ms, ma = g.at["chimera", "peak_activation"], g.at["chimera-asym", "peak_activation"]
        if pd.isna(ts) or pd.isna(ta):
            continue
        n += 1
        mu = str(g["memory_unit"].iloc[0])
        gain = 1.0 - ta / ts
        if best_gain is None or gain > best_gain[0]:
            best_gain = (gain, cfg)
        if not (pd.isna(ms) or pd.isna(ma) or _eq(ms, ma)):
            mem_bad.append(f"{cfg}: {_mem(ma, mu)} vs Chimera {_mem(ms, mu)}")
        if gain > SMALL_GAIN:
            big_gain.append(f"{cfg}: {_pct(gain)}")
        if gain > REL_TOL and p > 4:
            deep_gain.append(f"{cfg}: {_pct(gain)}")
    if best_gain is None:  # set by every counted configuration: None when n == 0
        return Verdict(level, None, "needs Chimera and asymmetric Chimera")
    parts = [
        f"global peak equal to Chimera's in {n - len(mem_bad)} of {n} configurations"
        + (f" (differs: {'; '.join(mem_bad[:2])})" if mem_bad else ""),
        f"largest runtime gain {_pct(best_gain[0])} ({best_gain[1]})",
    ]
    if big_gain:
        parts.append(f"gain above {SMALL_GAIN:.0%} in {len(big_gain)}: {'; '.join(big_gain[:2])}")
    if deep_gain:
        parts.append(f"positive gain with p > 4 in {len(deep_gain)}: {'; '.join(deep_gain[:2])}")
    return Verdict(level, not (mem_bad or big_gain or deep_gain), "; ".join(parts))


FINDINGS: tuple[tuple[str, str, Callable[[pd.DataFrame, Setup, str], Verdict]], ...] = (
    (
        "abstraction",
        "rankings are not abstraction-invariant (bubble-ratio order != simulated order somewhere)",
        finding_abstraction,
    ),
    (
        "gpipe-1f1b",
        "GPipe and 1F1B have equal runtime; 1F1B's peak activation memory is strictly lower",
        finding_gpipe_1f1b,
    ),
    (
        "chimera",
        "Chimera beats 1F1B at m = p on a fast interconnect, loses that advantage at large m or on a slow network",
        finding_chimera,
    ),
    (
        "hanayo",
        "Hanayo (m = p, W in {1,2}) beats 1F1B on a fast interconnect, falls behind on a bottlenecked network",
        finding_hanayo,
    ),
    (
        "chimera-asym",
        f"asymmetric Chimera: same global peak memory as Chimera, runtime gain <= {SMALL_GAIN:.0%} and only for p <= 4",
        finding_chimera_asym,
    ),
)


def evaluate_findings(df: pd.DataFrame, setup: Setup, levels: tuple[str, ...] = LEVELS) -> list[Finding]:
    """Check every finding under every level present in ``df``.

    A closed form that is only a bound for some family (``exact`` False) is not a prediction of
    its makespan, so those formula rows are left out rather than compared as if exact.

    Example:
        >>> from ppverify.compare import run_comparison
        >>> setup, cfgs = abstract_setup(0.0, 1.0, ps=(4,), large_m_factor=2)
        >>> df = run_comparison(cfgs, FINDINGS_SCHEDULES, ("slot", "async"))
        >>> for f in evaluate_findings(df, setup):
        ...     print(f.key, "|", f.summary)
        abstraction | reproduced under slot, async
        gpipe-1f1b | reproduced under slot; NOT reproduced under async
        chimera | NOT reproduced under slot, async
        hanayo | reproduced under slot, async
        chimera-asym | NOT reproduced under slot, async
    """
    df = df.copy()
    inexact = (df["level"] == "formula") & (df["exact"] == False)  # noqa: E712 (object column)
    df.loc[inexact, ["makespan", "bubble_ratio", "peak_activation", "peak_activations"]] = None
    present = [lv for lv in levels if lv in set(df["level"]) and df[df["level"] == lv]["makespan"].notna().any()]
    return [Finding(key, claim, tuple(fn(df, setup, lv) for lv in present)) for key, claim, fn in FINDINGS]


def format_findings(findings: list[Finding]) -> str:
    """Each finding, its overall summary and the evidence under each level.

    Example:
        >>> f = Finding("gpipe-1f1b", "GPipe and 1F1B take equal time",
        ...             (Verdict("slot", True, "equal in 2 configurations"), Verdict("async", False, "GPipe 27 vs 1F1B 31")))
        >>> print(format_findings([f]))
        1. [gpipe-1f1b] GPipe and 1F1B take equal time
           => reproduced under slot; NOT reproduced under async
           - slot       reproduced: equal in 2 configurations
           - async      NOT reproduced: GPipe 27 vs 1F1B 31
    """
    out = []
    for n, f in enumerate(findings, 1):
        out.append(f"{n}. [{f.key}] {f.claim}")
        out.append(f"   => {f.summary}")
        for v in f.verdicts:
            tag = {True: "reproduced", False: "NOT reproduced", None: "no data"}[v.reproduced]
            out.append(f"   - {v.level:<10} {tag}: {v.evidence}")
    return "\n".join(out)
