"""Synthetic GPU-style profiler traces of a known timeline (for tests and benchmarks; no GPU here).

:func:`synthetic_traces` writes, for every rank of a timeline (any engine's), the Chrome trace a
CUDA job recording with ``torch.profiler`` (``activities=[CPU, CUDA]``) would export, in the
shape PyTorch's exporter gives it: ``distributedInfo`` (backend ``nccl``), ``host_name``, per step a
``ProfilerStep#N`` host range, an NCCL ``AllReduce`` kernel (the step's barrier) just before the
step, and per action:

* a host-side ``PP:<action>`` range (``cat: user_annotation``) at launch time, ahead of the GPU,
  holding a ``cudaLaunchKernel`` (``cat: cuda_runtime``) with a ``correlation`` id; an overlapped
  F&B cell of ``dualpipe`` / ``dualpipev`` is one action, ``PP:(a;b)OVERLAP_F_B``, as PyTorch's
  runtime records it;
* its kernel (``cat: kernel``) and the device-side copy of the range (``cat:
  gpu_user_annotation``) at the op's own start and end on the GPU;
* for every transfer, ``SEND_F/SEND_B`` on the sender and ``RECV_F/RECV_B`` on the receiver with
  an ``ncclDevKernel_SendRecv`` kernel spanning the transfer (``In msg nelems``, ``dtype``);
* for a two-pipe timeline's all-reduce of a stage's two replicas, ``PP:<s>REDUCE_GRAD`` with an
  NCCL ``AllReduce`` kernel (as ppverify's two-pipe runner records it);

then filler ``aten::`` host ops up to ``events`` per rank. Ranks may sit on different hosts whose
clocks differ by ``offsets_us`` (each rank's timestamps shifted), which is what alignment on the
barrier undoes. Steps repeat the timeline, each ``jitter`` times longer than the one before
(step k lasts ``(1 + k * jitter)`` times the timeline), so the median step is known.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.ops import Overlap
from ..core.timeline import Timeline

#: microseconds between the end of one step and the next step's barrier
STEP_GAP_US = 500.0


def _comm_name(kind: str, side: str, stage: int, mb: int) -> str:
    return f"{stage}{side}_{'F' if kind == 'activation' else 'B'}{mb}"


def synthetic_traces(
    timeline: Timeline,
    steps: int = 3,
    *,
    jitter: float = 0.0,
    hosts: Sequence[str] | None = None,
    offsets_us: Sequence[float] | None = None,
    events: int = 0,
    first_step: int = 1,
) -> list[dict[str, Any]]:
    """One Chrome-trace object per rank of ``timeline`` (seconds), ``steps`` steps numbered from
    ``first_step`` (see the module docstring).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> tr = synthetic_traces(run(build("1f1b", p=2, m=2)), steps=1)
        >>> tr[1]["distributedInfo"]["rank"], sorted({e["cat"] for e in tr[1]["traceEvents"]})
        (1, ['cuda_runtime', 'gpu_user_annotation', 'kernel', 'user_annotation'])
    """
    p = timeline.schedule.p
    hosts = list(hosts) if hosts is not None else ["node0"] * p
    offsets = list(offsets_us) if offsets_us is not None else [0.0] * p
    span_us = timeline.makespan * 1e6
    tr = timeline.transfers
    # each op of an overlapped slot (DualPipe's F&B) -> the slot's action, ``(a;b)OVERLAP_F_B``
    cells = {
        str(o): str(a) for prog in timeline.schedule.programs for a in prog if isinstance(a, Overlap) for o in a.ops
    }
    reduced = _reduced_stages(timeline)
    out = []
    for rank in range(p):
        evs: list[dict[str, Any]] = []
        corr = 0
        base = 1_000_000.0 + offsets[rank]
        for k in range(steps):
            scale = 1.0 + k * jitter
            step_len = span_us * scale

            def t(sec: float, scale: float = scale, base: float = base) -> float:
                return base + sec * 1e6 * scale

            # (device start, device end, action, stream, kernel name, bytes)
            acts: list[tuple[float, float, str, int, str, float]] = []
            done: set[str] = set()
            for op, s, e, d in zip(timeline.ops, timeline.start, timeline.end, timeline.device):
                if int(d) == rank and str(op) not in done:
                    # an overlapped F&B cell is one action, as PyTorch's runtime records it
                    name = cells.get(str(op), str(op))
                    done.update(name[1 : name.index(")")].split(";") if name != str(op) else [name])
                    acts.append((t(float(s)), t(float(e)), name, 7, f"void gemm_{op.kind}_kernel", 0.0))
            for i in range(len(tr)):
                kind = tr.kind[i]
                if kind == "allreduce" and int(tr.src_dev[i]) == rank and reduced[i] is not None:
                    name = f"{reduced[i]}REDUCE_GRAD"  # the two replicas' gradients, as the runner records it
                    s, e = t(float(tr.start[i])), t(float(tr.end[i]))
                    acts.append((s, e, name, 24, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", float(tr.nbytes[i])))
                if kind not in ("activation", "gradient"):
                    continue
                s, e, nb = t(float(tr.start[i])), t(float(tr.end[i])), float(tr.nbytes[i])
                src_op, dst_op = timeline.ops[int(tr.src_op[i])], timeline.ops[int(tr.dst_op[i])]
                if int(tr.src_dev[i]) == rank:
                    acts.append(
                        (s, e, _comm_name(kind, "SEND", src_op.stage, src_op.mb), 20, "ncclDevKernel_SendRecv", nb)
                    )
                if int(tr.dst_dev[i]) == rank:
                    acts.append(
                        (s, e, _comm_name(kind, "RECV", dst_op.stage, dst_op.mb), 24, "ncclDevKernel_SendRecv", nb)
                    )
            # at equal times in PyTorch's issue order: a SEND of the op before, then the RECV of
            # the op's input, then the op (by name, a consumer sorted before its RECV: INVALID)
            acts.sort(key=lambda a: (a[0], _issue_rank(a[2]), a[2]))
            step_start = base - 40.0
            evs.append(
                _x("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", base - 30.0, 25.0, 24, {"correlation": -1 - k})
            )
            host = step_start
            for ds, de, name, stream, kname, nb in acts:
                h = max(host + 1.0, ds - 30.0)
                corr += 1
                evs.append(_x("PP:" + name, "user_annotation", h, 4.0, 1))
                evs.append(_x("cudaLaunchKernel", "cuda_runtime", h + 1.0, 2.0, 1, {"correlation": corr}))
                args: dict[str, Any] = {"correlation": corr}
                if nb:
                    args.update({"In msg nelems": int(nb // 4), "dtype": "Float"})
                evs.append(_x(kname, "kernel", ds, de - ds, stream, args))
                evs.append(_x("PP:" + name, "gpu_user_annotation", ds, de - ds, stream))
                host = h + 4.0
            evs.append(
                _x(
                    f"ProfilerStep#{first_step + k}",
                    "user_annotation",
                    step_start,
                    max(host, base + step_len) - step_start + 1.0,
                    1,
                )
            )
            base += step_len + STEP_GAP_US
        filler = max(0, events - len(evs))
        for j in range(filler):
            evs.append(_x("aten::mm", "cpu_op", 1_000_000.0 + offsets[rank] + j * 0.01, 0.005, 1))
        evs.sort(key=lambda e: e["ts"])
        out.append(
            {
                "schemaVersion": 1,
                "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": p},
                "host_name": hosts[rank],
                "deviceProperties": [{"id": 0, "name": "synthetic GPU"}],
                "traceEvents": evs,
            }
        )
    return out


def _issue_rank(action: str) -> int:
    """Where an action stands among those of one time in PyTorch's issue order: sends, then
    receives, then the rest (the ops, whose inputs the receives bring).

    Example:
        >>> sorted(["0F1", "0RECV_F1", "0SEND_F0"], key=lambda a: (_issue_rank(a), a))
        ['0SEND_F0', '0RECV_F1', '0F1']
    """
    return 0 if "SEND_" in action else 1 if "RECV_" in action else 2


def _reduced_stages(timeline: Timeline) -> list[int | None]:
    """The stage each ``allreduce`` transfer of a two-pipe timeline reduces (None for any other
    transfer): of the stages held on both its devices, the one whose last gradient op (B or W)
    on them ended last at or before the all-reduce's start (it starts once both replicas are done).

    Example:
        >>> from ppverify.schedules import build
        >>> from ppverify.engines import run
        >>> tl = run(build("chimera", p=2, m=2))
        >>> sorted((round(float(tl.transfers.start[i]), 3), s) for i, s in enumerate(_reduced_stages(tl)) if s is not None)
        [(3.0, 1), (3.0, 1), (4.0, 0), (4.0, 0)]
    """
    tr = timeline.transfers
    last: dict[tuple[int, int], float] = {}  # (stage, device) -> end of its last gradient op there
    for op, e, d in zip(timeline.ops, timeline.end, timeline.device):
        if op.kind in ("B", "W"):
            last[(op.stage, int(d))] = max(last.get((op.stage, int(d)), 0.0), float(e))
    out: list[int | None] = []
    for i in range(len(tr)):
        if tr.kind[i] != "allreduce":
            out.append(None)
            continue
        a, b, t0 = int(tr.src_dev[i]), int(tr.dst_dev[i]), float(tr.start[i])
        done = [
            (max(last[(st, a)], last[(st, b)]), st)
            for st in sorted({st for st, _ in last})
            if (st, a) in last and (st, b) in last and max(last[(st, a)], last[(st, b)]) <= t0 + 1e-12
        ]
        out.append(max(done)[1] if done else None)
    return out


def _x(name: str, cat: str, ts: float, dur: float, tid: int, args: dict[str, Any] | None = None) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def write_synthetic(traces: Sequence[dict[str, Any]], directory: str | Path, gz: bool = False) -> list[Path]:
    """Write :func:`synthetic_traces` as ``rank<r>.pt.trace.json`` (``gz``: ``.json.gz``) files.

    Example:
        >>> write_synthetic([], "/tmp")
        []
    """
    import gzip

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, obj in enumerate(traces):
        text = json.dumps(obj).encode()
        path = d / f"rank{r}.pt.trace.json{'.gz' if gz else ''}"
        path.write_bytes(gzip.compress(text) if gz else text)
        paths.append(path)
    return paths
