"""The core model every level shares: ops and placements, schedules, costs and communication, the
step DAG, timelines and their text, the memory unit, limits and safe file access.

Nothing here imports a family, an engine, a solver or a preset; the floors inside (from
:mod:`~ppverify.core.errors` at the bottom to :mod:`~ppverify.core.timeline_text` at the top) are
checked by import-linter. The modules keep their old public paths (``ppverify.schedule``,
``ppverify.timeline``...) as aliases.

Example:
    >>> from ppverify.core.ops import Op
    >>> from ppverify.core.placement import linear
    >>> from ppverify.core.schedule import Schedule
    >>> Schedule(linear(1), 1, ((Op("F", 0, 0), Op("B", 0, 0)),), (0,)).num_ops
    2
"""
