"""The worker entry point: run a list of :class:`~ppverify.measure.jobs.Job` on this rank.

One set of worker processes runs a whole list of jobs (all with the same p) one after the other,
because starting processes and importing torch costs seconds. Each job is one phase of
:func:`~ppverify.measure.workers.run_workers`, so the hang timeout applies per job. One-pipe
jobs run in PyTorch's runtime (:mod:`.runtime`), two-pipe jobs on ppverify's runner
(:mod:`.twopipe`).
"""

from __future__ import annotations

from .jobs import Job, RankResult


def run_jobs(rank: int, world_size: int, jobs: list[Job]) -> list[RankResult]:
    """Worker entry point (a :func:`~ppverify.measure.workers.run_workers` target): run every job
    in order, each as one phase; rank 0 also computes each job's reference gradients.

    Example:
        >>> from ppverify.measure.workers import run_workers
        >>> run_workers(2, run_jobs, [], timeout=30)  # doctest: +SKIP
        [[], []]
    """
    from .gradcheck import reference_grads
    from .status import set_status

    out = []
    for k, job in enumerate(jobs):
        set_status(f"starting {job.schedule.describe()}", phase=k)
        if job.two_pipe:
            from .twopipe import run_two_pipe

            res = run_two_pipe(rank, world_size, job)
        else:
            from .runtime import run_torch_runtime

            res = run_torch_runtime(rank, world_size, job)
        if rank == 0:
            set_status(f"reference forward/backward of {job.schedule.describe()}", phase=k)
            res = RankResult(
                res.events,
                res.begins,
                res.ends,
                res.grads,
                reference_grads(job.spec, job.schedule.num_stages, job.schedule.m),
                res.info,
            )
        out.append(res)
    return out
