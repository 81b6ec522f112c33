"""Per (vertex, field) data that is not an edge, stored in columns: the size of a list field (its
rows) or of a state vector, and the values of a state field.

A library operation sets these for thousands of vertices at once, so the builder keeps, per field
index, ranges of consecutive vertices set in bulk (as arrays) and the few vertices set one by one
(which win: bulk data is only set as vertices are created). Values are stored as bytes in one
heap, each vertex's as (start, bytes): vertices given the same values share them. Freezing turns
each field's entries into sorted columns that the compiler reads for many vertices at a time.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..regions.arrays import expand_ranges

_I64 = np.int64
_ALIGN = 8  # values start 8-byte aligned in the heap


class _Column:
    """One field's entries, each a row of ints: ranges of vertices in increasing order, then
    single vertices set later."""

    def __init__(self) -> None:
        self.firsts: list[int] = []
        self.blocks: list[np.ndarray] = []  # (n, width) rows of vertices first, first + 1, ...
        self.singles: dict[int, tuple[int, ...]] = {}

    def set_range(self, first: int, rows: np.ndarray) -> None:
        self.firsts.append(first)
        self.blocks.append(rows)

    def get(self, vid: int) -> tuple[int, ...] | None:
        row = self.singles.get(vid)
        if row is not None:
            return row
        k = bisect_right(self.firsts, vid) - 1
        if k >= 0 and vid - self.firsts[k] < len(self.blocks[k]):
            return tuple(self.blocks[k][vid - self.firsts[k]].tolist())
        return None

    def truncate(self, vid: int) -> None:
        """Forget the vertices from ``vid`` on."""
        k = bisect_right(self.firsts, vid - 1) if self.firsts else 0
        del self.firsts[k:], self.blocks[k:]
        if self.blocks and self.firsts[-1] + len(self.blocks[-1]) > vid:
            self.blocks[-1] = self.blocks[-1][:vid - self.firsts[-1]]
        self.singles = {v: row for v, row in self.singles.items() if v < vid}

    def freeze(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        """(vertex ids in increasing order, their rows), the last entry of a vertex winning."""
        vids = [np.arange(f, f + len(b), dtype=_I64) for f, b in zip(self.firsts, self.blocks)]
        rows = [b.reshape(-1, width) for b in self.blocks]
        if self.singles:
            vids.append(np.fromiter(self.singles, _I64, len(self.singles)))
            rows.append(np.asarray(list(self.singles.values()), _I64).reshape(-1, width))
        vid = np.concatenate(vids) if vids else np.zeros(0, _I64)
        row = np.concatenate(rows).astype(_I64) if rows else np.zeros((0, width), _I64)
        order = np.argsort(vid, kind="stable")
        vid, row = vid[order], row[order]
        last = np.ones(vid.size, dtype=bool)
        last[:-1] = vid[1:] != vid[:-1]
        return vid[last], row[last]


class FieldStore:
    """Sizes and state values of a graph's vertices while it is built."""

    def __init__(self) -> None:
        self._sizes: defaultdict[int, _Column] = defaultdict(_Column)
        self._values: defaultdict[int, _Column] = defaultdict(_Column)  # rows (heap start, bytes)
        self._heap = bytearray()

    def set_sizes(self, first: int, field: int, sizes: np.ndarray) -> None:
        """Sizes of ``field`` of the vertices ``first, first + 1, ...``."""
        self._sizes[field].set_range(first, np.asarray(sizes, _I64).reshape(-1, 1))

    def set_size(self, vid: int, field: int, size: int) -> None:
        self._sizes[field].singles[vid] = (size,)

    def size(self, vid: int, field: int) -> int | None:
        row = self._sizes[field].get(vid) if field in self._sizes else None
        return None if row is None else row[0]

    def _store(self, values: np.ndarray) -> int:
        self._heap += bytes(-len(self._heap) % _ALIGN)
        start = len(self._heap)
        self._heap += np.ascontiguousarray(values).tobytes()
        return start

    def share_values(self, first: int, n: int, field: int, values: np.ndarray) -> None:
        """The same ``values`` (flat) for ``field`` of the vertices ``first, ..., first + n - 1``."""
        row = np.asarray([self._store(values), values.nbytes], _I64)
        self._values[field].set_range(first, np.broadcast_to(row, (n, 2)))

    def set_values(self, first: int, field: int, values: np.ndarray, per_vertex: np.ndarray) -> None:
        """``field`` of the vertices ``first, ...``: vertex ``v`` takes the next ``per_vertex[v]``
        of ``values`` (flat)."""
        start = self._store(values)
        nbytes = np.asarray(per_vertex, _I64) * values.itemsize
        rows = np.stack([start + np.cumsum(nbytes) - nbytes, nbytes], axis=1)
        self._values[field].set_range(first, rows)

    def set_value(self, vid: int, field: int, values: np.ndarray) -> None:
        self._values[field].singles[vid] = (self._store(values), values.nbytes)

    def truncate(self, vid: int) -> None:
        """Forget the vertices from ``vid`` on."""
        for columns in (self._sizes, self._values):
            for column in columns.values():
                column.truncate(vid)

    def freeze(self) -> FieldColumns:
        sizes = {f: frozen for f, c in self._sizes.items() if (frozen := c.freeze(1))[0].size}
        values = {f: frozen for f, c in self._values.items() if (frozen := c.freeze(2))[0].size}
        return FieldColumns({f: v for f, (v, _) in sizes.items()},
                            {f: r[:, 0] for f, (_, r) in sizes.items()},
                            {f: v for f, (v, _) in values.items()},
                            {f: r for f, (_, r) in values.items()}, bytes(self._heap))


def _positions(column: np.ndarray, vids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``vids`` is in the sorted ``column`` (not empty), and whether it is there."""
    at = np.minimum(np.searchsorted(column, vids), column.size - 1)
    return at, column[at] == vids


@dataclass(frozen=True)
class FieldColumns:
    """Sizes and state values of a frozen graph's vertices, by field index: the vertices that have
    one (sorted, never none) and their sizes, or their values' (heap start, bytes)."""

    size_vids: dict[int, np.ndarray]
    size_of: dict[int, np.ndarray]
    value_vids: dict[int, np.ndarray]
    value_rows: dict[int, np.ndarray]
    heap: bytes

    def sizes(self, field: int, vids: np.ndarray) -> np.ndarray:
        """The size of ``field`` of each of ``vids``, -1 where none was given."""
        column = self.size_vids.get(field)
        if column is None:
            return np.full(vids.size, -1, _I64)
        at, present = _positions(column, vids)
        return np.where(present, self.size_of[field][at], -1)

    def value_bytes(self, field: int, vids: np.ndarray) -> np.ndarray:
        """The bytes of the values of ``field`` of each of ``vids``, -1 where it has none."""
        column = self.value_vids.get(field)
        if column is None:
            return np.full(vids.size, -1, _I64)
        at, present = _positions(column, vids)
        return np.where(present, self.value_rows[field][at, 1], -1)

    def values(self, field: int, vids: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """The values of ``field`` of ``vids`` (every one must have them) back to back, and how many
        each has."""
        rows = self.value_rows[field][_positions(self.value_vids[field], vids)[0]]
        heap = np.frombuffer(self.heap, np.uint8)
        data = heap[expand_ranges(rows[:, 0], rows[:, 1])[1]] if rows.size else heap[:0]
        return data.view(dtype), rows[:, 1] // np.dtype(dtype).itemsize

    def value(self, vid: int, field: int, dtype: np.dtype) -> np.ndarray | None:
        """The values of ``field`` of vertex ``vid`` (flat, read-only), None if it has none."""
        column = self.value_vids.get(field)
        if column is None:
            return None
        at, present = _positions(column, np.asarray([vid], _I64))
        if not present[0]:
            return None
        start, nbytes = self.value_rows[field][int(at[0])].tolist()
        return np.frombuffer(self.heap, dtype, nbytes // np.dtype(dtype).itemsize, start)

    def raw(self, field: int, vids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The bytes of the values of ``field`` of ``vids`` back to back (uint8), and how many each
        has (-1: no values)."""
        column = self.value_vids.get(field)
        if column is None:
            return np.zeros(0, np.uint8), np.full(vids.size, -1, _I64)
        at, present = _positions(column, vids)
        rows = self.value_rows[field][at]
        nbytes = np.where(present, rows[:, 1], -1)
        heap = np.frombuffer(self.heap, np.uint8)
        return heap[expand_ranges(rows[:, 0], np.maximum(nbytes, 0))[1]], nbytes

    def items(self) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(field, vertex ids, their (heap start, bytes) rows) for every field with values."""
        for field in sorted(self.value_vids):
            yield field, self.value_vids[field], self.value_rows[field]
