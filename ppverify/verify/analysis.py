"""The analyses several properties share, run once per :func:`ppverify.verify.verify` call.

Completeness and placement are read off one structural analysis (:mod:`.structure`, or its
numpy certificate); dependencies, exclusivity and deadlock off one order problem
(:mod:`.order`, :mod:`.comm_model`, or a checked witness). A :class:`Run` holds one call's inputs
and computes each analysis on first use, so a property's check asks for what it needs and pays
for it once, in whatever order the registry (:mod:`.properties`) lists the properties.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.dag import DagArrays, StepDAG, build_dag, build_dag_arrays
from ..core.lowering import runs_as_written
from ..core.ops import Action, Op, Overlap
from ..core.schedule import Schedule
from ..core.time_limit import TimeLimitError
from ..io.torch_rules import Crossing, crossed_messages
from . import certify
from .action_placement import Misplaced, check_action_placement
from .comm_model import build_problem, pytorch_lowering
from .order import check_order, core_budget
from .report import Violation
from .structure import check_structure, occurrences


def clean_schedule(
    schedule: Schedule, bad: set[int] | frozenset[int], drop: frozenset[tuple[int, int]] = frozenset()
) -> Schedule:
    """The schedule without the occurrences numbered in ``bad`` (numbering of
    :func:`.structure.occurrences`) and the other actions at the positions ``(rank, index)`` in
    ``drop``; an overlapped slot left with one op becomes that op.

    Example:
        >>> from ppverify.schedules import build
        >>> s = build("gpipe", p=2, m=1)
        >>> [str(a) for a in clean_schedule(s, {0}).programs[0]]
        ['0B0']
    """
    k = 0
    programs = []
    for r, prog in enumerate(schedule.programs):
        out: list[Action] = []
        for n, a in enumerate(prog):
            if type(a) is Op:
                if k not in bad:
                    out.append(a)
                k += 1
            elif type(a) is Overlap:
                keep = tuple(o for j, o in enumerate(a.ops) if k + j not in bad)
                k += len(a.ops)
                if len(keep) > 1:
                    out.append(Overlap(keep))
                elif keep:
                    out.append(keep[0])
            elif (r, n) not in drop:
                out.append(a)
        programs.append(tuple(out))
    return schedule.with_programs(tuple(programs))


@dataclass(frozen=True)
class Structure:
    """The structural analysis: its violations, the occurrences set aside (``bad``), the ops
    checked, the ground rules decided, the schedule left for the order checks (``clean``) and
    the SEND/RECV and markers set aside (``misplaced``: their transfers and stages are excused
    in the later checks)."""

    violations: tuple[Violation, ...]
    bad: frozenset[int]
    num_ops: int
    num_rules: int
    clean: Schedule
    misplaced: Misplaced


@dataclass(frozen=True)
class Order:
    """The order analysis: violations (dependencies, deadlock, or a SEND matching no transfer),
    whether the search for them was complete, the problem's size, whether the SEND/RECV were
    explicit in the programs, and whether PyTorch's lowering placed them (a compute_only PyTorch
    file: :meth:`Run.lowered`)."""

    violations: tuple[Violation, ...]
    complete: bool
    num_actions: int
    num_constraints: int
    explicit_comms: bool
    lowered: bool = False


@dataclass
class Run:
    """One verification call: its inputs, the shared analyses (computed on first use), and what
    the checks record on the way (timings, properties settled by a certificate, notes printed
    after the properties' own). Not a value: it lives for one call."""

    schedule: Schedule
    costs: CostModel
    comm: CommModel
    memory_cap: float | None = None
    makespan_le: float | None = None
    comm_semantics: str = "buffered"
    group: bool = True
    max_violations: int = 20
    certificates: bool = True
    #: the collectives a timing claim includes (as the engines take them)
    sync: str = "eager"
    dp_allreduce: int = 0
    #: the schedule was read from a PyTorch pipelining CSV: PyTorch's runtime rules apply
    #: (:mod:`.runtime_rules`), and its messages are matched as that runtime matches them
    pytorch: bool = False
    t0: float = field(default_factory=time.perf_counter)
    timings: dict[str, float] = field(default_factory=dict)
    #: properties settled by a checked certificate, not by Z3
    certified: list[str] = field(default_factory=list)
    #: ``(property, reason)`` notes listed after every property's own (an order search cut short)
    notes: list[tuple[str, str]] = field(default_factory=list)
    _cache: dict[str, Any] = field(default_factory=dict)
    _reported: set[str] = field(default_factory=set)

    def once(self, analysis: str, violations: tuple[Violation, ...]) -> tuple[Violation, ...]:
        """The violations of ``analysis`` the first time a property asks, none after: an analysis
        that decides several properties reports each fault once, in the order it found them."""
        if analysis in self._reported:
            return ()
        self._reported.add(analysis)
        return violations

    @property
    def arrays(self) -> DagArrays | None:
        """The DAG arrays of the clean schedule (certificate paths), when built."""
        self.structure()
        return self._cache.get("arrays")

    def dag(self) -> StepDAG:
        """The list-based DAG of the clean schedule (the Z3 paths), built on first use."""
        if self._cache.get("dag") is None:
            self._cache["dag"] = build_dag(self.structure().clean, check=False)
        dag: StepDAG = self._cache["dag"]
        return dag

    def structure(self) -> Structure:
        """Completeness and placement: every ground rule, by certificate or by Z3 (cached)."""
        if "structure" in self._cache:
            st: Structure = self._cache["structure"]
            return st
        schedule = self.schedule
        arrays = certify.structure_holds(schedule) if self.certificates else None
        struct_v: list[Violation]
        bad: set[int]
        if arrays is not None:  # every ground rule holds (3 per op), checked with numpy
            n_occ, struct_v, bad, nrules = arrays.num_ops, [], set(), 3 * arrays.num_ops
            self.certified += ["completeness", "placement"]
        else:
            occs = occurrences(schedule)
            n_occ = len(occs)
            struct_v, bad, nrules = check_structure(schedule, occs)
        action_v, misplaced = check_action_placement(schedule)
        struct_v = [*struct_v, *action_v]
        self.timings["structure_s"] = time.perf_counter() - self.t0
        clean = clean_schedule(schedule, bad, misplaced.positions) if bad or misplaced.positions else schedule
        if self.certificates and arrays is None:
            arrays = build_dag_arrays(clean, check=False)
        elif not self.certificates:
            self._cache["dag"] = build_dag(clean, check=False)
        self._cache["arrays"] = arrays
        st = Structure(tuple(struct_v), frozenset(bad), n_occ, nrules, clean, misplaced)
        self._cache["structure"] = st
        return st

    def crossings(self) -> list[Crossing]:
        """A PyTorch file's messages that its runtime delivers to another RECV than the one named
        for them (:func:`~ppverify.io.torch_rules.crossed_messages` of the clean schedule, between
        ranks whose SENDs and RECVs name the same messages: a missing or extra one is reported by
        name, as the cause; cached); none for any other schedule."""
        if "crossings" not in self._cache:
            clean = self.structure().clean
            self._cache["crossings"] = crossed_messages(clean, reordered_only=True) if self.pytorch else []
        crossings: list[Crossing] = self._cache["crossings"]
        return crossings

    def posting_order(self) -> bool:
        """Whether the order problem matches SEND/RECV in posting order, as PyTorch's runtime
        does: for a PyTorch file whose messages cross (else matching by name decides the same),
        unless actions were set aside (a placement fault: the runtime's pairing is then moot)."""
        return bool(self.crossings()) and not self.structure().misplaced.positions

    def lowered(self) -> Schedule | None:
        """A compute_only PyTorch file's clean schedule with SEND/RECV where PyTorch's runtime
        places them when it lowers the file (:func:`.comm_model.pytorch_lowering`): the order
        problem decides what that runtime runs, as ``ppverify import`` does. None for any other
        schedule (a family, a JSON file or a table keeps the derived policy), for a file with its
        own SEND/RECV, where the lowering cannot place them, or for a file that breaks a structural
        rule (PyTorch's validation refuses it, and the SEND/RECV of a missing op would be reported
        again; cached)."""
        if "lowered" not in self._cache:
            st = self.structure()
            self._cache["lowered"] = pytorch_lowering(st.clean) if self.pytorch and not st.violations else None
        lowered: Schedule | None = self._cache["lowered"]
        return lowered

    def order(self) -> Order:
        """Dependencies, exclusivity and deadlock freedom: one order problem, settled by a checked
        witness or decided by Z3 (cached)."""
        if "order" in self._cache:
            od: Order = self._cache["order"]
            return od
        self.structure()
        arrays = self.arrays
        t1 = time.perf_counter()
        explicit = runs_as_written(self.structure().clean)
        lowered = self.lowered()
        order_v: list[Violation]
        budget = core_budget()  # the order check's seconds (more under a --time-limit)
        if (
            arrays is not None
            and self.comm_semantics == "buffered"
            and not explicit
            and lowered is None
            and certify.derived_order_witness(arrays) is not None
        ):
            order_v, complete, n_actions, n_constraints = [], True, arrays.num_ops, certify.num_edges(arrays)
            self.certified += ["dependencies", "exclusivity", "deadlock"]
        else:
            excused = self.structure().misplaced.transfers
            dag = self.dag() if lowered is None else build_dag(lowered, check=False)
            pb, _ = build_problem(dag, self.comm_semantics, self.group, excused, self.posting_order())
            if self.certificates and certify.order_witness(pb) is not None:
                order_v, complete = [], True
                self.certified += ["dependencies", "exclusivity", "deadlock"]
            else:
                order_v, complete = check_order(pb, self.max_violations, budget, self.comm_semantics)
                if not complete and not order_v:
                    # an unfinished search that found nothing is no proof that an execution
                    # exists: no verdict, as a --time-limit reached (check_order never gives it)
                    raise TimeLimitError("the order check", f"no answer within {budget:g} s")
            n_actions, n_constraints = len(pb.text), len(pb.edges)
        self.timings["order_s"] = time.perf_counter() - t1
        if not complete:
            n = len(order_v)
            cut = (
                f"--max-violations {self.max_violations}"
                if n >= self.max_violations
                else f"the {budget:g} s budget of the order check; a --time-limit T gives it half of what is left of T"
            )
            self.notes.append(
                (
                    "dependencies/deadlock",
                    f"stopped after {n} order violation{'s' if n != 1 else ''} ({cut}); there may be more",
                )
            )
        od = Order(tuple(order_v), complete, n_actions, n_constraints, explicit, lowered is not None)
        self._cache["order"] = od
        return od

    def scope(self) -> str:
        """`` (for the N ops that pass the structural rules)`` when some were set aside."""
        st = self.structure()
        if not st.violations:
            return ""
        aside = len(st.misplaced.positions)
        other = f", {aside} other action{'s' if aside > 1 else ''} set aside" if aside else ""
        return f" (for the {st.num_ops - len(st.bad)} ops that pass the structural rules{other})"

    def stats(self, proved: list[tuple[str, str]]) -> dict[str, Any]:
        """The report's statistics (sizes, seconds per analysis, properties certified)."""
        st, od = self.structure(), self.order()
        return {
            "seconds": time.perf_counter() - self.t0,
            "ops": st.num_ops,
            "actions": od.num_actions,
            "structural_rules": st.num_rules,
            "order_constraints": od.num_constraints,
            **self.timings,
            "certified": [p for p, _ in proved if p in self.certified],
        }
