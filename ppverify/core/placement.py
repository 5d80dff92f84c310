"""Placements: per pipe, which device holds each stage.

A placement is a tuple of maps, one per pipe; ``maps[pipe][stage] == device``. Named placements:
``linear``, ``loop`` (interleaved), ``v``, ``wave`` (Hanayo), ``bidirectional``
(Chimera); any other map is a user placement built with :func:`custom`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import ParameterError


@dataclass(frozen=True)
class Placement:
    """Stage -> device maps, one per pipe.

    Example:
        >>> pl = bidirectional(4)
        >>> pl.device(0, 1), pl.device(1, 1), pl.num_stages, pl.num_pipes
        (1, 2, 4, 2)
    """

    p: int
    maps: tuple[tuple[int, ...], ...]
    name: str = "custom"

    def __post_init__(self) -> None:
        if self.p < 1:
            raise ParameterError("p", self.p, "need at least one device")
        if not self.maps or any(len(mp) != len(self.maps[0]) or not mp for mp in self.maps):
            raise ParameterError("placement", self.maps, "every pipe must map the same, non-zero number of stages")
        for pipe, mp in enumerate(self.maps):
            for s, d in enumerate(mp):
                if not 0 <= d < self.p:
                    raise ParameterError(
                        "placement", f"pipe {pipe} stage {s} -> {d}", f"device must be in 0..{self.p - 1}"
                    )

    @property
    def num_stages(self) -> int:
        """Stages of one pipe (``S``)."""
        return len(self.maps[0])

    @property
    def num_pipes(self) -> int:
        """Number of pipes (2 for Chimera/DualPipe)."""
        return len(self.maps)

    def device(self, pipe: int, stage: int) -> int:
        """Device holding ``stage`` of ``pipe``."""
        return self.maps[pipe][stage]

    def stages_on(self, device: int) -> list[tuple[int, int]]:
        """``(pipe, stage)`` pairs held by ``device``, in pipe then stage order.

        Example:
            >>> v_shape(2).stages_on(1)
            [(0, 1), (0, 2)]
        """
        return [(pipe, s) for pipe, mp in enumerate(self.maps) for s, d in enumerate(mp) if d == device]

    @property
    def share_per_stage(self) -> float:
        """Fraction of one device's model share that one stage is: ``p / S``.

        Abstract costs (``F=1``) are per device share (ppverify's unit convention), so a stage op costs
        ``F * share_per_stage``: 1/v for interleaved, 1/(2W) for Hanayo, 1 for Chimera's
        whole-share replicas.
        """
        return self.p / self.num_stages

    def to_dict(self) -> dict:
        """JSON-ready form. Example: ``linear(2).to_dict() == {'name': 'linear', 'p': 2, 'maps': [[0, 1]]}``."""
        return {"name": self.name, "p": self.p, "maps": [list(mp) for mp in self.maps]}


def _check_p(p: int) -> None:
    if not isinstance(p, int) or p < 1:
        raise ParameterError("p", p, "must be an integer >= 1")


def linear(p: int) -> Placement:
    """Stage s on device s (GPipe, 1F1B).

    Example:
        >>> linear(3).maps
        ((0, 1, 2),)
    """
    _check_p(p)
    return Placement(p, (tuple(range(p)),), "linear")


def loop(p: int, v: int) -> Placement:
    """Interleaved: ``S = v*p`` stages, stage s on device ``s mod p``.

    Example:
        >>> loop(2, 2).maps
        ((0, 1, 0, 1),)
    """
    _check_p(p)
    if v < 1:
        raise ParameterError("v", v, "must be >= 1")
    return Placement(p, (tuple(s % p for s in range(v * p)),), "loop")


def v_shape(p: int) -> Placement:
    """V placement: stages 0..p-1 on devices 0..p-1, then p..2p-1 back on p-1..0.

    Example:
        >>> v_shape(3).maps
        ((0, 1, 2, 2, 1, 0),)
    """
    _check_p(p)
    return Placement(p, (tuple(range(p)) + tuple(range(p - 1, -1, -1)),), "v")


def wave(p: int, waves: int) -> Placement:
    """Hanayo's wave: ``S = 2*W*p`` stages; ``q = s mod 2p`` on ``q`` if ``q < p`` else ``2p-1-q``.

    Example:
        >>> wave(2, 2).maps
        ((0, 1, 1, 0, 0, 1, 1, 0),)
    """
    _check_p(p)
    if waves < 1:
        raise ParameterError("waves", waves, "must be >= 1")
    maps = []
    for s in range(2 * waves * p):
        q = s % (2 * p)
        maps.append(q if q < p else 2 * p - 1 - q)
    return Placement(p, (tuple(maps),), "wave")


def bidirectional(p: int, offset: int = 0) -> Placement:
    """Chimera: pipe 0 stage s on device s; pipe 1 stage s on ``(p-1-s+offset) mod p``.

    ``offset=0`` is Chimera's mirror; other offsets give the asymmetric Chimera-style placement.

    Example:
        >>> bidirectional(4).maps
        ((0, 1, 2, 3), (3, 2, 1, 0))
        >>> bidirectional(4, offset=1).maps[1]
        (0, 3, 2, 1)
    """
    _check_p(p)
    return Placement(
        p,
        (tuple(range(p)), tuple((p - 1 - s + offset) % p for s in range(p))),
        "bidirectional" if offset % p == 0 else f"bidirectional+{offset % p}",
    )


def custom(p: int, maps: list[list[int]] | tuple[tuple[int, ...], ...], name: str = "custom") -> Placement:
    """Any user placement.

    Example:
        >>> custom(2, [[1, 0]]).device(0, 0)
        1
    """
    return Placement(p, tuple(tuple(int(d) for d in mp) for mp in maps), name)


NAMED: dict[str, Callable[..., Placement]] = {
    "linear": linear,
    "loop": loop,
    "v": v_shape,
    "wave": wave,
    "bidirectional": bidirectional,
}


def name_fits(p: int, maps: tuple[tuple[int, ...], ...], name: str) -> bool:
    """Whether a placement's name says what its maps are, for the names ppverify gives
    (``linear``, ``loop``, ``v``, ``wave``, ``bidirectional``, ``bidirectional+k``); any other name is
    a person's own label and fits any maps. A file's name is echoed in every report, so one that
    contradicts the maps would state a wrong fact.

    Example:
        >>> name_fits(2, ((0, 1, 1, 0),), "v"), name_fits(2, ((0, 1, 1, 0),), "wave")  # one wave is a V
        (True, True)
        >>> name_fits(2, ((0, 1, 1, 0),), "linear"), name_fits(2, ((0, 1, 1, 0),), "my-layout")
        (False, True)
        >>> name_fits(4, ((0, 1, 2, 3), (0, 3, 2, 1)), "bidirectional+1")
        True
    """
    stages = len(maps[0]) if maps else 0
    lowered = name.strip().lower()
    if lowered.startswith("bidirectional"):
        offset = lowered[len("bidirectional") :]
        if offset and not (offset.startswith("+") and offset[1:].isdigit()):
            return True  # not a name ppverify gives
        return stages == p and maps == bidirectional(p, int(offset[1:]) if offset else 0).maps
    if lowered not in ("linear", "loop", "v", "wave"):
        return True
    if len(maps) != 1 or stages == 0:
        return False
    expected = {
        "linear": linear(p) if stages == p else None,
        "loop": loop(p, stages // p) if stages % p == 0 else None,
        "v": v_shape(p) if stages == 2 * p else None,
        "wave": wave(p, stages // (2 * p)) if stages % (2 * p) == 0 else None,
    }[lowered]
    return expected is not None and expected.maps == maps


def placement_from_map(p: int, stage_device: list[int] | tuple[int, ...]) -> Placement:
    """A one-pipe placement for ``stage -> device``, named ``linear``/``loop``/``v``/``wave`` when it
    is one of those (so a map read from a file prints as the family it matches; one wave is ``v``).

    Example:
        >>> placement_from_map(2, [0, 1, 1, 0]).name, placement_from_map(2, [0, 1, 0, 1]).name
        ('v', 'loop')
        >>> placement_from_map(2, [0, 1, 1, 0, 0, 1, 1, 0]).name  # Hanayo's two waves
        'wave'
        >>> placement_from_map(2, [1, 0]).name
        'custom'
    """
    maps = tuple(int(d) for d in stage_device)
    num_stages = len(maps)
    candidates = [linear(p)] if p == num_stages else []
    if num_stages % p == 0:
        candidates.append(loop(p, num_stages // p))
    if 2 * p == num_stages:
        candidates.append(v_shape(p))
    elif num_stages % (2 * p) == 0:  # two waves or more (one is the V above)
        candidates.append(wave(p, num_stages // (2 * p)))
    for cand in candidates:
        if cand.maps[0] == maps:
            return cand
    return custom(p, [list(maps)], "custom")


def placement_from_text(
    text: str,
    p: int,
    num_stages: int | None = None,
    *,
    v: int | None = None,
    waves: int | None = None,
    offset: int | None = None,
) -> Placement:
    """The placement a command-line text names: ``linear``, ``loop``, ``v``, ``wave``,
    ``bidirectional`` (case and surrounding blanks ignored) or one device per stage (``0,1,1,0``).

    ``loop`` takes ``v`` chunks per device and ``wave`` takes ``waves`` waves; when they are not
    given they follow from ``num_stages`` (the stages a file holds) or default to 2 and 1.
    ``bidirectional`` takes ``offset`` (default 0, Chimera's mirror).

    Example:
        >>> placement_from_text("loop", 2, v=3).maps
        ((0, 1, 0, 1, 0, 1),)
        >>> placement_from_text("loop", 2, num_stages=4).maps, placement_from_text(" V ", 2).name
        (((0, 1, 0, 1),), 'v')
        >>> placement_from_text("0,1,1,0", 2).name
        'v'
        >>> placement_from_text("ring", 2)
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter placement=ring: expected one of linear, loop, v, wave, bidirectional, or one device per stage (e.g. 0,1,1,0)
    """
    from .limits import check_ops, rank_list

    name = str(text).strip().lower()
    if "," in name or name.isdigit():  # a map; one stage is a map too
        return placement_from_map(p, rank_list(text, "--placement"))
    # refuse before allocating: a placement of S stages implies at least an F and a B per stage
    chunks = {"loop": v or 2, "v": 2, "wave": 2 * (waves or 1)}.get(name, 1)
    if isinstance(p, int) and isinstance(chunks, int):
        check_ops(2 * p * chunks, f"--placement {name} with p={p}")
    if name == "loop":
        if v is None and num_stages is not None:
            if num_stages % p:
                raise ParameterError("placement", text, f"loop needs the {num_stages} stages to be a multiple of p={p}")
            v = num_stages // p
        return loop(p, 2 if v is None else v)
    if name == "wave":
        if waves is None and num_stages is not None:
            if num_stages % (2 * p):
                raise ParameterError(
                    "placement", text, f"wave needs the {num_stages} stages to be a multiple of 2p={2 * p}"
                )
            waves = num_stages // (2 * p)
        return wave(p, 1 if waves is None else waves)
    if name == "bidirectional":
        return bidirectional(p, 0 if offset is None else offset)
    if name in ("linear", "v"):
        return NAMED[name](p)
    raise ParameterError(
        "placement", text, f"expected one of {', '.join(NAMED)}, or one device per stage (e.g. 0,1,1,0)"
    )
