"""Shared by the design tests: a design's result on a process pool or a local Ray cluster, checked
to equal the result of the same request in one process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ppverify.design.run import DesignRequest, design


def _same_result_on(executor: str, rq: DesignRequest) -> dict[str, Any]:
    alone = design(rq, progress=False).to_dict()
    if executor == "pool":
        assert design(rq, workers=2, progress=False).to_dict() == alone
    else:
        ray = pytest.importorskip("ray")  # the ray extra, which `make test` installs
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            assert design(rq, executor="ray", progress=False).to_dict() == alone
        finally:
            ray.shutdown()
    return alone


@pytest.fixture
def same_result_on() -> Callable[[str, DesignRequest], dict[str, Any]]:
    """``same_result_on("pool" | "ray", request)``: asserts the executor's result equals one
    process's and returns that result (JSON form)."""
    return _same_result_on
