"""Sizes of a profiler trace's transfers when it recorded none (a job run without
``record_shapes=True``): ``calibrate --from-trace --model NAME|FILE`` sizes each stage boundary
as the model's activation, ``--boundary-bytes SIZE`` gives one size for all
(:class:`TransferSizes`, checked by :func:`transfer_sizes`). Recorded shapes always win
(:func:`recorded_bytes`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import ParameterError


def recorded_bytes(traces: Sequence[Any], clock: str = "auto") -> bool:
    """Whether the traces' transfers carry their bytes (recorded with ``record_shapes=True``, or
    NCCL's message sizes): any transfer of the median step with a size.

    Example:
        >>> recorded_bytes(read_traces(["prof/"]))  # doctest: +SKIP
        True
    """
    from ..io.trace_step import recorded_step

    step = recorded_step(traces, None, clock)
    return any(t.span.nbytes > 0 for trs in step.transfers for t in trs)


def model_boundary_bytes(
    model: str, stages: int, microbatch_size: int | None = None, seq_len: int | None = None
) -> tuple[float, ...]:
    """Bytes of each stage boundary's activation (and gradient) of ``model`` (an LLM preset name
    or file) split into ``stages`` stages: ``microbatch_size x seq_len x hidden x dtype bytes``
    (:func:`ppverify.systems.llm.stage_costs`), what a trace without shapes is sized from.

    Example:
        >>> model_boundary_bytes("gpt3-1.3b", 2, seq_len=16)   # 16 tokens x 2048 hidden x 2 B
        (65536.0,)
    """
    from ..systems.llm import Training, load_llm, stage_costs

    training = Training(microbatch_size=microbatch_size or 1, seq_len=seq_len)
    return tuple(float(x) for x in stage_costs(load_llm(model), 1.0, stages, training).boundary_bytes)


@dataclass(frozen=True)
class TransferSizes:
    """Where ``calibrate --from-trace`` sizes transfers the trace recorded without bytes:
    ``each`` (bytes of every boundary, ``--boundary-bytes``) or an LLM preset
    (``model``, ``--model``, with ``microbatch_size`` and ``seq_len``). Recorded shapes win.

    Example:
        >>> TransferSizes(model="gpt3-1.3b", seq_len=16).boundary_bytes(3)
        ('the model gpt3-1.3b (microbatch 1, 16 tokens)', (65536.0, 65536.0))
        >>> TransferSizes(each=128.0).boundary_bytes(2)
        ('--boundary-bytes 128 B', (128.0,))
    """

    model: str | None = None
    microbatch_size: int | None = None
    seq_len: int | None = None
    #: bytes of every boundary (``--boundary-bytes``); wins over ``model``
    each: float | None = None

    @property
    def given(self) -> bool:
        """Whether any size was given."""
        return self.model is not None or self.each is not None

    def boundary_bytes(self, stages: int) -> tuple[str, tuple[float, ...]]:
        """``(description, bytes of each of the stages - 1 boundaries)``."""
        if self.each is not None:
            return f"--boundary-bytes {self.each:g} B", (float(self.each),) * max(stages - 1, 0)
        if self.model is None:
            return "none", ()
        from ..systems.llm import load_llm

        seq = self.seq_len if self.seq_len is not None else load_llm(self.model).seq_len
        desc = f"the model {self.model} (microbatch {self.microbatch_size or 1}, {seq} tokens)"
        return desc, model_boundary_bytes(self.model, stages, self.microbatch_size, self.seq_len)


def transfer_sizes(
    model: str | None = None,
    microbatch_size: int | None = None,
    seq_len: int | None = None,
    boundary_bytes: str | None = None,
    traces: Sequence[str] | None = ("given",),
) -> TransferSizes:
    """The :class:`TransferSizes` of ``calibrate --from-trace``'s options, checked: a size in
    bytes > 0, a model preset that loads, training sizes only with a model, and any of them only
    with ``traces``. One :class:`~ppverify.core.errors.ParameterError` line otherwise.

    Example:
        >>> transfer_sizes(boundary_bytes="4KiB").each
        4096.0
        >>> transfer_sizes(seq_len=16)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter seq-len=16: sizes a model's transfers: give --model too
    """
    from ..core.sizes import parse_size
    from ..systems.llm import Training, load_llm

    given = [(o, v) for o, v in (("model", model), ("microbatch-size", microbatch_size), ("seq-len", seq_len),
                                 ("boundary-bytes", boundary_bytes)) if v is not None]  # fmt: skip
    if given and not traces:
        raise ParameterError(given[0][0], given[0][1], "sizes the transfers of a profiler trace: give --from-trace DIR")
    each = None
    if boundary_bytes is not None:
        size = parse_size(boundary_bytes, "boundary-bytes")
        if not (size.is_bytes or str(boundary_bytes).strip()[-1:].isdigit()) or size.value <= 0:
            raise ParameterError("boundary-bytes", boundary_bytes, "expected a size in bytes > 0, e.g. 128B or 4MiB")
        each = float(size.value)
    if model is None:
        for name, value in (("microbatch-size", microbatch_size), ("seq-len", seq_len)):
            if value is not None:
                raise ParameterError(name, value, "sizes a model's transfers: give --model too")
    else:
        load_llm(model)  # a misspelt preset: one line, now
        Training(microbatch_size=microbatch_size or 1, seq_len=seq_len)
    return TransferSizes(model, microbatch_size, seq_len, each)


__all__ = ["TransferSizes", "model_boundary_bytes", "recorded_bytes", "transfer_sizes"]
