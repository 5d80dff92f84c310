"""Worker side of the memory measurement: the tensors autograd saves, recorded as they come and go.

A stage's forward runs under ``torch.autograd.graph.saved_tensors_hooks``: every tensor autograd
saves for the backward passes through :meth:`SavedTensors.saving`'s pack hook, which wraps it in
a small handle that the graph then holds instead of the tensor. The handle's birth is a
:class:`MemEvent` with ``+bytes`` and its death (the moment the graph lets go of it: the backward
that frees it, the weight pass that ends it) one with ``-bytes``, attributed to the stage and
microbatch of the forward that saved it and to the op the rank was running then (``during``).
Nothing is recomputed from the schedule: what the curve shows is what the running program held.

What counts (the rule :mod:`.memory` derives its bytes from): each distinct saved tensor (same
address and size counted once) by its own bytes, ``numel * element_size``; tensors that are a
parameter of the stage (weights, ``weight.t()`` views) are not activations and are left out; the
loss's saved tensors are not counted (the loss is outside the stage's block).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

_now = time.monotonic_ns


class MemEvent(NamedTuple):
    """One change of a rank's saved activations: at ``t_ns`` (CLOCK_MONOTONIC), ``nbytes`` saved
    (> 0) or freed (< 0) for ``stage``'s forward of microbatch ``mb``, while the rank ran an op of
    kind ``during`` (F, B, I, W; "" between ops).

    Example:
        >>> MemEvent(1000, 0, 2, 800, "F").nbytes
        800
    """

    t_ns: int
    stage: int
    mb: int
    nbytes: int
    during: str


class _Saved:
    """What the graph holds instead of a saved tensor; its death is the tensor's free."""

    __slots__ = ("__weakref__", "key", "mb", "owner", "stage", "tensor")

    def __init__(self, tensor: Any, owner: SavedTensors, key: tuple[int, int], stage: int, mb: int) -> None:
        self.tensor, self.owner, self.key, self.stage, self.mb = tensor, owner, key, stage, mb

    def __del__(self) -> None:
        self.owner._release(self)


class SavedTensors:
    """One rank's recorder: ``events`` (a list while a measured step records, else None) and
    ``during`` (the op the rank is running, set by the runner).

    Example:
        >>> import torch
        >>> rec = SavedTensors(); rec.events = []
        >>> w = torch.ones(3, 3, dtype=torch.float64, requires_grad=True)
        >>> x = torch.ones(2, 3, dtype=torch.float64)
        >>> with rec.saving(0, 1, [w]):
        ...     y = torch.nn.functional.gelu(x @ w)
        >>> [(e.stage, e.mb, e.nbytes) for e in rec.events]  # x (48 bytes; w is a parameter), gelu's input
        [(0, 1, 48), (0, 1, 48)]
        >>> y.sum().backward(); del y
        >>> sum(e.nbytes for e in rec.events)
        0
    """

    def __init__(self) -> None:
        self.events: list[MemEvent] | None = None
        self.during = ""
        self._live: dict[tuple[int, int], list[Any]] = {}  # key -> [count, events list, stage, mb, bytes]

    @contextmanager
    def saving(self, stage: int, mb: int, params: Iterable[Any]) -> Iterator[None]:
        """Record what autograd saves inside the block (a forward of ``stage``, microbatch
        ``mb``); ``params`` are the stage's parameters, not counted. A no-op when not recording.

        Example:
            >>> import torch
            >>> rec = SavedTensors(); rec.events = []
            >>> x = torch.ones(4, dtype=torch.float64, requires_grad=True)
            >>> with rec.saving(3, 0, []):
            ...     y = x.exp()  # exp saves its result: 4 float64 = 32 bytes
            >>> [(e.stage, e.mb, e.nbytes) for e in rec.events]
            [(3, 0, 32)]
        """
        events = self.events
        if events is None:
            yield
            return
        import torch

        skip = {p.untyped_storage().data_ptr() for p in params}

        def pack(t: Any) -> Any:
            nbytes = t.numel() * t.element_size()
            if nbytes == 0 or t.untyped_storage().data_ptr() in skip:
                return t
            key = (t.data_ptr(), nbytes)
            live = self._live.get(key)
            if live is None:
                self._live[key] = [1, events, stage, mb, nbytes]
                events.append(MemEvent(_now(), stage, mb, nbytes, self.during))
            else:
                live[0] += 1
            return _Saved(t, self, key, stage, mb)

        def unpack(h: Any) -> Any:
            return h.tensor if isinstance(h, _Saved) else h

        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            yield

    @contextmanager
    def running(self, kind: str) -> Iterator[None]:
        """Mark the rank as running an op of ``kind`` (frees meanwhile are attributed to it).

        Example:
            >>> rec = SavedTensors()
            >>> with rec.running("W"):
            ...     rec.during
            'W'
            >>> rec.during
            ''
        """
        self.during = kind
        try:
            yield
        finally:
            self.during = ""

    def _release(self, h: _Saved) -> None:
        live = self._live.get(h.key)
        if live is None:
            return
        live[0] -= 1
        if live[0] == 0:
            del self._live[h.key]
            _, events, stage, mb, nbytes = live
            events.append(MemEvent(_now(), stage, mb, -nbytes, self.during))

    def take(self) -> list[MemEvent]:
        """The events recorded since the last take (and stop recording).

        Example:
            >>> rec = SavedTensors(); rec.events = [MemEvent(0, 0, 0, 8, "F")]
            >>> len(rec.take()), rec.events
            (1, None)
        """
        out, self.events = self.events or [], None
        return out
