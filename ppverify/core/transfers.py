"""The transfers of a timeline: point-to-point messages and collectives, stored as parallel
columns (one entry per transfer) that the engines append to while simulating and every view reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np


class Transfers:
    """Point-to-point transfers and collectives, one entry per transfer (parallel columns).

    ``kind`` is "activation", "gradient" or a collective name ("allreduce"); ``src_op``/``dst_op``
    are op positions in the timeline (-1 for collectives). Each column reads as a Python list
    (``tr.kind[n]``, ``tr.kind.count("gradient")``); engines that time millions of transfers
    hand numpy arrays in (:meth:`from_arrays`), and a column becomes a list only when first read
    that way, so a run whose transfers nobody lists never pays for a million Python floats.
    :meth:`column` reads any column as a numpy array without that conversion.

    Example:
        >>> tr = Transfers.from_arrays(("activation", "gradient"), np.array([0, 1]), np.array([0, 1]),
        ...                            np.array([1, 0]), np.array([0, 3]), np.array([1, 2]),
        ...                            np.array([1.0, 2.0]), np.array([1.5, 2.5]), np.array([8.0, 8.0]))
        >>> len(tr), tr.kind, float(tr.column("end").max())
        (2, ['activation', 'gradient'], 2.5)
        >>> tr.add("allreduce", 0, 1, -1, -1, 3.0, 4.0, 16.0)
        >>> tr.kind, tr.end
        (['activation', 'gradient', 'allreduce'], [1.5, 2.5, 4.0])
    """

    FIELDS: ClassVar[tuple[str, ...]] = ("kind", "src_dev", "dst_dev", "src_op", "dst_op", "start", "end", "nbytes")

    def __init__(
        self,
        kind: Sequence[str] = (),
        src_dev: Sequence[int] = (),
        dst_dev: Sequence[int] = (),
        src_op: Sequence[int] = (),
        dst_op: Sequence[int] = (),
        start: Sequence[float] = (),
        end: Sequence[float] = (),
        nbytes: Sequence[float] = (),
    ) -> None:
        cols = (kind, src_dev, dst_dev, src_op, dst_op, start, end, nbytes)
        # the columns as lists (made on first read for array columns) and as arrays (made on demand)
        self._lists: dict[str, list[Any]] = {f: list(c) for f, c in zip(self.FIELDS, cols)}
        self._arrays: dict[str, np.ndarray] = {}
        self._kind_names: tuple[str, ...] = ()
        self._kind_code: np.ndarray | None = None
        self._n = len(self._lists["kind"])

    @classmethod
    def from_arrays(
        cls,
        kind_names: Sequence[str],
        kind_code: np.ndarray,
        src_dev: np.ndarray,
        dst_dev: np.ndarray,
        src_op: np.ndarray,
        dst_op: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        nbytes: np.ndarray,
    ) -> Transfers:
        """Transfers given as arrays (``kind`` as codes into ``kind_names``), kept as arrays
        until a column is read as a list; the arrays are taken, not copied (engines pass
        arrays nobody else holds).

        Example:
            >>> one = np.array([1])
            >>> tr = Transfers.from_arrays(("activation",), np.array([0]), one, one * 2, one, one * 3, one * 0.5, one * 1.0, one * 4.0)
            >>> tr.kind, tr.dst_dev, tr.end
            (['activation'], [2], [1.0])
        """
        tr = cls()
        n = len(kind_code)
        tr._lists = {}
        tr._kind_names = tuple(kind_names)
        tr._kind_code = np.asarray(kind_code)
        ints, floats = (src_dev, dst_dev, src_op, dst_op), (start, end, nbytes)
        for f, c in zip(cls.FIELDS[1:5], ints):
            tr._arrays[f] = np.asarray(c, dtype=np.int64)
        for f, c in zip(cls.FIELDS[5:], floats):
            tr._arrays[f] = np.asarray(c, dtype=float)
        if any(len(a) != n for a in tr._arrays.values()):
            raise ValueError("Transfers.from_arrays: columns of different lengths")
        tr._n = n
        return tr

    def _list(self, name: str) -> list[Any]:
        got = self._lists.get(name)
        if got is None:
            if name == "kind":
                # index a list of the names: one shared str object per kind, not one per transfer
                got = list(map(list(self._kind_names).__getitem__, self._kind_code.tolist()))  # type: ignore[union-attr]
            else:
                got = self._arrays[name].tolist()
            self._lists[name] = got
        return got

    def column(self, name: str) -> np.ndarray:
        """Column ``name`` (one of :attr:`FIELDS`) as a numpy array (``kind`` as an object array
        of names), without making a Python list of it.

        Example:
            >>> Transfers(["gradient"], [1], [0], [3], [0], [2.0], [2.5], [8.0]).column("end").tolist()
            [2.5]
        """
        if name not in self.FIELDS:
            raise KeyError(name)
        got = self._arrays.get(name)
        if got is not None:
            return got
        if name == "kind":
            names: np.ndarray = np.array(self._kind_names, dtype=object)
            if "kind" not in self._lists and self._kind_code is not None:
                return names[self._kind_code]
            return np.array(self._lists["kind"], dtype=object)
        arr = np.asarray(self._lists[name], dtype=float if name in ("start", "end", "nbytes") else np.int64)
        self._arrays[name] = arr
        return arr

    @property
    def kind(self) -> list[str]:
        """Kind of each transfer."""
        return self._list("kind")

    @property
    def src_dev(self) -> list[int]:
        """Sending device of each transfer."""
        return self._list("src_dev")

    @property
    def dst_dev(self) -> list[int]:
        """Receiving device of each transfer."""
        return self._list("dst_dev")

    @property
    def src_op(self) -> list[int]:
        """Producer op position of each transfer (-1 for collectives)."""
        return self._list("src_op")

    @property
    def dst_op(self) -> list[int]:
        """Consumer op position of each transfer (-1 for collectives)."""
        return self._list("dst_op")

    @property
    def start(self) -> list[float]:
        """Start time of each transfer."""
        return self._list("start")

    @property
    def end(self) -> list[float]:
        """End time of each transfer."""
        return self._list("end")

    @property
    def nbytes(self) -> list[float]:
        """Bytes of each transfer."""
        return self._list("nbytes")

    def __len__(self) -> int:
        kinds = self._lists.get("kind")
        return self._n if kinds is None else len(kinds)

    def add(
        self, kind: str, src_dev: int, dst_dev: int, src_op: int, dst_op: int, start: float, end: float, nbytes: float
    ) -> None:
        """Append one transfer (engines build this while simulating)."""
        for name, value in zip(self.FIELDS, (kind, src_dev, dst_dev, src_op, dst_op, start, end, nbytes)):
            self._list(name).append(value)
        self._arrays.clear()  # the lists hold the columns from now on
        self._n += 1
