"""The audit of an imported schedule (a PyTorch pipelining CSV, or the action lists of one of
PyTorch's schedule classes): how it was read, its structure, its SEND/RECV, whether its ranks'
lists run to completion, the Z3 verifier's verdict (PyTorch's runtime rules included), what
PyTorch's runtime does with a file that breaks those rules, its timing, and the text
``ppverify import`` prints."""

from __future__ import annotations

from typing import Any

from ..core.comm import CommModel
from ..core.costs import CostModel
from ..core.errors import InvalidScheduleError, ParameterError
from ..core.lowering import runs_as_written
from ..core.ops import Comm, Marker, Op, Overlap
from ..core.schedule import Schedule

#: problems listed per check (the count says how many more)
MAX_LISTED = 10


def cell_counts(schedule: Schedule) -> dict[str, int]:
    """Cells of the ranks' lists by kind: compute ops (an overlapped cell counts each of its ops),
    overlapped cells, send/recv, markers and idle cells.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> cell_counts(parse_rows([["0F0", "", "0B0"], ["1F0", "1B0"]]))
        {'compute': 4, 'overlapped_cells': 0, 'comm': 0, 'marker': 0, 'idle': 1}
    """
    out = {"compute": 0, "overlapped_cells": 0, "comm": 0, "marker": 0, "idle": 0}
    for prog in schedule.programs:
        for a in prog:
            if a is None:
                out["idle"] += 1
            elif isinstance(a, Op):
                out["compute"] += 1
            elif isinstance(a, Overlap):
                out["overlapped_cells"] += 1
                out["compute"] += len(a.ops)
            elif isinstance(a, Comm):
                out["comm"] += 1
            elif isinstance(a, Marker):
                out["marker"] += 1
    return out


def audit(
    schedule: Schedule,
    costs: CostModel | None = None,
    with_torch: bool = False,
    comm_semantics: str = "buffered",
    pytorch: bool | None = None,
    comm: CommModel | None = None,
) -> tuple[dict[str, Any], Any]:
    """Every check ``ppverify import`` runs, as a dict (``valid`` is the verdict), and the slot
    timeline (``None`` when the schedule cannot be timed). ``costs`` times the table (unit slots
    when None); ``with_torch`` adds PyTorch's own ``_validate_schedule`` verdict (needs torch).
    ``pytorch``: the schedule is one PyTorch runs as it is (a CSV, one of its classes), so the
    rules of its runtime are part of the verdict (``pytorch_runtime``: what the runtime does
    with a file that breaks them); None: when the schedule was read as a CSV (its ``format``).
    ``comm``: charged per column in the slot table, as ``show --comm-delay`` does (None: none).

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rep, tl = audit(parse_rows([["0F0", "0F1", "", "0B0", "", "0B1"], ["", "1F0", "1B0", "1F1", "1B1"]]))
        >>> rep["valid"], rep["slot"]["makespan"], rep["torch_steps"], tl.makespan
        (True, 6.0, 11, 6.0)
    """
    from ..core.dag import structural_problems
    from ..core.lowering import comm_problems
    from ..engines import run
    from ..views.table_report import shown_peaks

    tl = None
    rep: dict[str, Any] = {
        "schedule": schedule.describe(),
        "format": schedule.params.get("format"),
        "ranks": schedule.p,
        "stages": schedule.num_stages,
        "microbatches": schedule.m,
        "placement": {
            "name": schedule.placement.name,
            "stage_to_rank": list(schedule.placement.maps[0]),
            # a bidirectional placement has one map per pipe: pipe 0's alone hides the others
            "maps": [list(m) for m in schedule.placement.maps],
        },
        "cells": cell_counts(schedule),
    }
    problems = structural_problems(schedule)
    rep["structure"] = {"ok": not problems, "problems": problems}
    comms = comm_problems(schedule) if not problems else []
    rep["comms"] = {
        "ok": not comms,
        "problems": comms,
        "explicit": runs_as_written(schedule),
    }
    order: dict[str, Any] = {"ok": None, "problem": None}
    slot = None
    if not problems:
        try:
            if comm is not None:  # charged per column, as show --comm-delay
                tl = run(schedule, costs, comm, semantics="slot", charge_comm=True)
            else:
                tl = run(schedule, costs, semantics="slot")
            order["ok"] = True
            slot = {
                "makespan": tl.makespan,
                "bubble_ratio": tl.bubble_ratio,
                # in the unit --memory-cap counts, as show and verify print them
                "peak_activations": shown_peaks(tl),
                "time_unit": tl.time_unit,
            }
        except InvalidScheduleError as exc:
            order = {"ok": False, "problem": str(exc)}
    rep["order"] = order
    rep["slot"] = slot
    if pytorch is None:
        from ..io.torch_csv import FLAVOURS

        pytorch = schedule.params.get("format") in FLAVOURS
    rep["pytorch_runtime"] = runtime_problems(schedule) if pytorch else None
    rep["verifier"] = _verifier(schedule, rep["comms"]["explicit"], bool(problems), comm_semantics, pytorch)
    rep["torch_steps"] = None
    if not problems and order["ok"]:
        try:
            from ..engines import torch_step_count

            rep["torch_steps"] = torch_step_count(schedule)
        except (InvalidScheduleError, ParameterError) as exc:
            rep["torch_steps_problem"] = str(exc)
    if with_torch:
        from ..io.torch_interop import torch_validate

        msg = torch_validate(schedule)
        rep["pytorch_validate"] = {"ok": msg is None, "message": msg}
    z3_valid = rep["verifier"] is None or rep["verifier"]["valid"]
    runs = not rep["pytorch_runtime"]  # also the verifier's verdict: said here on the file as written
    rep["valid"] = bool(not problems and order["ok"] and not comms and z3_valid and runs)
    return rep, tl


def runtime_problems(schedule: Schedule) -> list[dict[str, str]]:
    """What PyTorch's runtime, which loads and validates ``schedule`` as it is, then does with it
    where it breaks a rule of that runtime (:mod:`ppverify.io.torch_rules`): each problem as
    ``{"property", "outcome", "problem"}``; empty when it runs correctly.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> [p["outcome"] for p in runtime_problems(parse_rows([["0F0", "0F1", "0B0", "0B1"], ["1F1", "1F0", "1B0", "1B1"]]))]
        ['then fails the step']
    """
    from ..io.torch_rules import crossed_messages, loss_order_problem

    loss = loss_order_problem(schedule)
    out = [{"property": "pytorch-loss-order", "outcome": "then fails the step", "problem": loss}] if loss else []
    for c in crossed_messages(schedule, reordered_only=True):  # a missing SEND/RECV: send/recv says so
        out.append(
            {"property": "pytorch-message-order", "outcome": "then computes wrong gradients", "problem": c.to_text()}
        )
    return out


def source_kind(path: str | None) -> str | None:
    """What ``ppverify import`` reads in the file ``path`` when it is no PyTorch CSV, by its
    content as :func:`ppverify.io.load_torch_file` decides: ``"ppverify JSON"`` or ``"text table"``;
    None for a CSV, and for no file (one of PyTorch's classes).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "grid.txt")
        >>> _ = open(path, "w").write("        Rank 0\\nStep 0: 0F0\\nStep 1: 0B0\\n")
        >>> source_kind(path), source_kind(None)
        ('text table', None)
    """
    if path is None:
        return None
    from ..core.files import read_text
    from ..io import sniff_format

    return {"json": "ppverify JSON", "table": "text table"}.get(sniff_format(read_text(path)) or "")


def _verifier(
    schedule: Schedule, explicit: bool, refused: bool, comm_semantics: str, pytorch: bool
) -> dict[str, Any] | None:
    """The Z3 verifier's verdict on what PyTorch would run: a compute_only file with SEND/RECV
    where its lowering puts them (receives posted early), which matters under rendezvous
    semantics; with PyTorch's runtime rules when ``pytorch``. Nothing is lowered for a file with
    its own SEND/RECV (``explicit``) or with structure problems, which PyTorch refuses (``refused``)."""
    from . import verify
    from .comm_model import pytorch_lowering

    target, sendrecv = schedule, "from the file" if explicit else "derived"
    lowered = None if refused else pytorch_lowering(schedule)  # None for explicit ones; `verify` lowers alike
    if lowered is not None:  # else the lowering deadlocks or cannot apply: the file as written
        target, sendrecv = lowered, "placed by PyTorch's lowering"
    z3 = verify(target, None, comm_semantics=comm_semantics, pytorch=pytorch)
    return {
        "valid": z3.valid,
        "proved": [p for p, _ in z3.proved],
        "violations": [v.to_text() for v in z3.violations],
        "comm_semantics": comm_semantics,
        "send_recv": sendrecv,
    }


def _problems_text(label: str, problems: list[str]) -> list[str]:
    """A report line ``label  N problem(s):`` and the first ``MAX_LISTED`` problems."""
    out = [f"{label:<14}{len(problems)} problem(s):"]
    out += [f"  - {p}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        out.append(f"  ... and {len(problems) - MAX_LISTED} more")
    return out


def _maps_text(placement: dict[str, Any]) -> str:
    """Every pipe's stage -> rank map: one list for one pipe, ``pipe 0 [..], pipe 1 [..]`` for more."""
    maps = placement.get("maps") or [placement["stage_to_rank"]]
    if len(maps) == 1:
        return str(maps[0])
    return ", ".join(f"pipe {i} {m}" for i, m in enumerate(maps))


def audit_text(rep: dict[str, Any]) -> str:
    """The text ``ppverify import`` prints for :func:`audit`'s dict, ending with the verdict.

    Example:
        >>> from ppverify.io.torch_csv import parse_rows
        >>> rep, _ = audit(parse_rows([["0F0"], ["1F0", "1B0"]]))  # 0B0 is missing
        >>> print(audit_text(rep).splitlines()[-1])
        verdict       INVALID
    """
    c, pl = rep["cells"], rep["placement"]
    lines = [
        f"file          {rep['schedule']}",
        f"read as       {rep['format']}: {rep['ranks']} ranks, {rep['stages']} stages, {rep['microbatches']} microbatches",
        f"placement     {pl['name']}: stage -> rank {_maps_text(pl)}",
        f"cells         {c['compute']} compute ops ({c['overlapped_cells']} overlapped cells), "
        f"{c['comm']} send/recv, {c['marker']} markers, {c['idle']} idle",
    ]
    st = rep["structure"]
    if st["ok"]:
        lines.append("structure     ok: every F and B (or I+W) once, on its stage's rank")
    else:
        lines += _problems_text("structure", st["problems"])
    cm = rep["comms"]
    if cm["explicit"]:
        if cm["ok"]:
            lines.append("send/recv     ok: one SEND after each producer, one RECV before each consumer, across ranks")
        else:
            lines += _problems_text("send/recv", cm["problems"])
    od = rep["order"]
    if od["ok"] is True:
        lines.append(
            "order         ok: every rank's compute ops run to completion in order (SEND/RECV are "
            "send/recv's and Z3's to check)"
            if cm["explicit"]
            else "order         ok: every rank's list runs to completion in order"
        )
    elif od["ok"] is False:
        lines.append(f"order         {od['problem']}")
    else:
        lines.append("order         not checked (fix the structure first)")
    vr = rep.get("verifier")
    if vr is not None:
        head = "VALID" if vr["valid"] else f"INVALID, {len(vr['violations'])} violation(s)"
        lines.append(
            f"Z3 verifier   {head}; proved: {', '.join(vr['proved']) or 'nothing'} "
            f"({vr['comm_semantics']} semantics, SEND/RECV {vr['send_recv']})"
        )
        lines += [f"  - {v}" for v in vr["violations"][:MAX_LISTED]]
        if len(vr["violations"]) > MAX_LISTED:  # as the other lists say: the head's count, not 10, is all
            lines.append(f"  ... and {len(vr['violations']) - MAX_LISTED} more")
    for rp in rep.get("pytorch_runtime") or ():
        named = rp["problem"].split(": ", 1)[0]  # its first clause names the rank and the ops; the rest is above
        lines.append(f"runtime       PyTorch's runtime accepts the file, {rp['outcome']} ({rp['property']}: {named})")
    if "pytorch_validate" in rep:
        pv = rep["pytorch_validate"]
        lines.append(
            "PyTorch       _validate_schedule " + ("accepts it" if pv["ok"] else f"rejects it: {pv['message']}")
        )
    if rep["slot"]:
        if rep.get("costs"):  # which cost model timed the table: the file's, --costs' or the default
            lines.append(f"costs         {rep['costs']['text']}")
        s = rep["slot"]
        lines.append(
            f"slot table    makespan {s['makespan']:g} {s['time_unit']}, bubble {s['bubble_ratio']:.4f} (idle/total), "
            f"peak activations {[round(x, 4) for x in s['peak_activations']]}"
        )
    if rep["torch_steps"] is not None:
        note = (
            "; an overlapped cell counts as one step, PyTorch's simulator rejects them"
            if rep["cells"]["overlapped_cells"]
            else ""
        )
        lines.append(
            f"torch steps   {rep['torch_steps']} (PyTorch's _simulate_comms_compute: every action one step{note})"
        )
    elif rep.get("torch_steps_problem"):
        lines.append(f"torch steps   n/a: {rep['torch_steps_problem']}")
    lines.append("verdict       " + ("VALID" if rep["valid"] else "INVALID"))
    return "\n".join(lines)
