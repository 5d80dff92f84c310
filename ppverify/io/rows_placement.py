"""Which placement a file of rows (a PyTorch CSV, a text table) holds: the rank of each stage
read from the rows that hold its actions, or the placement a person gives beside the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..core.errors import ParameterError, ScheduleFileError
from ..core.ops import Action
from ..core.placement import Placement, placement_from_map, placement_from_text
from .cell_checks import stages_of


def implied_stages(spec: str | Sequence[int] | Placement | None, p: int) -> tuple[int, str] | None:
    """The stage count a placement names by itself and its name; None for none, and for
    ``loop`` and ``wave``, whose chunks per rank follow from the file's stages.

    Example:
        >>> implied_stages("v", 2), implied_stages("loop", 2), implied_stages([0, 1, 0], 2)
        ((4, 'v'), None, (3, 'custom'))
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("loop", "wave", "bidirectional")):
        return None  # bidirectional has two pipes: refused by resolve_placement
    if isinstance(spec, Placement):
        pl = spec
    elif isinstance(spec, str):
        pl = placement_from_text(spec, p)
    else:
        pl = placement_from_map(p, list(spec))
    return pl.num_stages, pl.name


def infer_stage_ranks(programs: Sequence[Sequence[Action]], num_stages: int) -> dict[int, int]:
    """Rank of each stage, read from the rows: the rank whose row holds most of the stage's
    actions (ties to the lowest rank). A stage held by several rows is then reported by the
    structural check as ops on the wrong device; a stage in no row is absent from the result.

    A ``RECV_F``/``RECV_B`` of stage s is on the row of stage s (PyTorch names the receiving
    stage), so comm actions vote too.

    Example:
        >>> from ppverify.core.ops import parse_action
        >>> rows = [[parse_action("0F0"), parse_action("3F0")], [parse_action("1F0"), parse_action("2F0")]]
        >>> infer_stage_ranks(rows, 4)
        {0: 0, 1: 1, 2: 1, 3: 0}
    """
    votes: dict[int, Counter] = {}
    for rank, prog in enumerate(programs):
        for a in prog:
            for s in stages_of(a):
                votes.setdefault(s, Counter())[rank] += 1
    out = {}
    for s in range(num_stages):
        if s in votes:
            best = max(votes[s].values())
            out[s] = min(r for r, n in votes[s].items() if n == best)
    return out


def resolve_placement(
    spec: str | Sequence[int] | Placement | None, p: int, num_stages: int, inferred: dict[int, int], source: str
) -> Placement:
    """Placement from an explicit spec (``"loop"``, ``"v"``, ``"linear"``, a list of ranks per
    stage, a :class:`Placement`) or, when ``spec`` is None, from the inferred ranks.

    Example:
        >>> resolve_placement("v", 2, 4, {}, "x.csv").maps
        ((0, 1, 1, 0),)
        >>> resolve_placement(None, 2, 3, {0: 0, 1: 1}, "x.csv")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: x.csv: stage 2: no row holds an action of stage 2, so its rank cannot be inferred; give the placement (loop, v, linear or one rank per stage)
    """
    if isinstance(spec, Placement):
        pl = spec
    elif spec is None:
        for s in range(num_stages):
            if s not in inferred:
                raise ScheduleFileError(
                    source,
                    f"stage {s}",
                    f"no row holds an action of stage {s}, so its rank cannot be inferred; "
                    "give the placement (loop, v, linear or one rank per stage)",
                )
        return placement_from_map(p, [inferred[s] for s in range(num_stages)])
    elif isinstance(spec, str):
        pl = placement_from_text(spec, p, num_stages)
    else:
        pl = placement_from_map(p, list(spec))
    if pl.num_pipes != 1 or pl.num_stages != num_stages or pl.p != p:
        raise ParameterError(
            "placement",
            getattr(spec, "name", spec),
            f"must map the file's {num_stages} stages onto its {p} ranks in one pipe",
        )
    return pl
