"""Vertices and their edges, stored in columns.

A graph may hold millions of vertices, so a vertex is one row of a few integers and a
connected field one row per run of the tensor it is connected to, appended to flat
buffers (one packed row per edge). Vertex and field handles are just an id and a name.
"""

from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass

import numpy as np

from ..regions.runs import Runs
from ..types import Type
from ..vertex import Direction, FieldKind, FieldSpec, Vertex
from .field_store import FieldStore

#: the columns of a vertex row, and of an edge row (one per run of the connected tensor)
VERTEX_COLUMNS = ("class", "compute set", "tile", "perf estimate", "source")
EDGE_COLUMNS = ("vertex", "field", "row", "connection", "var", "offset", "count", "stride")
_NV, _NE = len(VERTEX_COLUMNS), len(EDGE_COLUMNS)
_BLOCK_ROWS = 1 << 16  # edge rows de-interleaved at a time (4 MiB: stays in cache)
TILE, PERF = 2, 3
NO_ROW = -1  # the row of a field that is not a list
_FIELD_SPACE = 1 << 16  # more fields than any class has
_EDGE_ROW = struct.Struct(f"{_NE}q").pack
_BITS_SET = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1).astype(np.int64)


@dataclass(frozen=True)
class FieldSlot:
    """One field of a vertex class as ``connect`` checks it (plain attributes, read per call)."""

    index: int
    spec: FieldSpec
    type: Type
    rank: int  # rank of the tensor it is connected to (a list field: 2, or rows of rank 1)
    state: bool
    writes: bool
    is_list: bool
    plain: bool  # an edge that is not a list: connected to one tensor

    def describe(self) -> str:
        return self.spec.describe()


def _slot(index: int, spec: FieldSpec) -> FieldSlot:
    state, is_list = spec.direction is Direction.STATE, spec.kind is FieldKind.VECTOR_LIST
    return FieldSlot(index, spec, spec.type, spec.kind.value, state, spec.direction.writes, is_list,  # type: ignore[arg-type]
                     not state and not is_list)


class VertexTable:
    """The vertices of a graph and their edges, in columns."""

    def __init__(self) -> None:
        self.rows = array("q")  # VERTEX_COLUMNS per vertex
        self.edges = bytearray()  # EDGE_COLUMNS per run, packed int64
        self.connected = array("q")  # per vertex, a bit per connected field (index < 63)
        self.classes: list[type[Vertex]] = []
        self.fields: list[dict[str, FieldSlot]] = []  # per class
        self._class_index: dict[type, int] = {}
        self.sources: list[str] = []
        self._source_index: dict[tuple[str, int], int] = {}
        self.store = FieldStore()  # list lengths, state vector sizes and state values
        # a field connected vertex by vertex: it may be connected again, or a list's rows out of order
        self.one_by_one = False
        self._wide: set[tuple[int, int]] = set()  # connected fields with index >= 63
        # (constant, vertex) per field connected to a value: the Engine maps the constant to the
        # tile its vertex finally runs on (a vertex removed again leaves vertex -1: tile 0)
        self.values = array("q")

    @property
    def num_vertices(self) -> int:
        return len(self.connected)

    def class_id(self, cls: type[Vertex]) -> int:
        cid = self._class_index.get(cls)
        if cid is None:
            cid = self._class_index[cls] = len(self.classes)
            self.classes.append(cls)
            self.fields.append({name: _slot(i, spec) for i, (name, spec) in enumerate(cls.fields.items())})
        return cid

    def _source_id(self, source: tuple[str, int]) -> int:
        sid = self._source_index.get(source)
        if sid is None:
            sid = self._source_index[source] = len(self.sources)
            self.sources.append(f"{source[0]}:{source[1]}" if source[0] else "")
        return sid

    def add(self, class_id: int, compute_set: int, source: tuple[str, int]) -> int:
        """A new vertex, created at ``source`` (file, line) of the user's program."""
        self.rows.extend((class_id, compute_set, -1, -1, self._source_id(source)))
        self.connected.append(0)
        return len(self.connected) - 1

    def add_many(self, class_id: int, compute_set: int, source: tuple[str, int], tiles: np.ndarray) -> int:
        """``len(tiles)`` new vertices on ``tiles`` (-1: not mapped yet); the first one's id."""
        first = self.num_vertices
        block = np.empty((tiles.size, _NV), np.int64)
        block[:] = (class_id, compute_set, -1, -1, self._source_id(source))
        block[:, TILE] = tiles
        self.rows.frombytes(block.tobytes())
        self.connected.frombytes(np.zeros(tiles.size, np.int64).tobytes())
        return first

    def add_edge_block(self, block: np.ndarray) -> None:
        """Append edge rows given as an ``(n, len(EDGE_COLUMNS))`` int64 array."""
        self.edges += np.ascontiguousarray(block, np.int64).tobytes()

    def size_lists(self, first: int, field: int, sizes: np.ndarray) -> None:
        """Mark list field ``field`` of the vertices ``first, first + 1, ...`` connected, with
        ``sizes`` rows each."""
        self.store.set_sizes(first, field, sizes)
        self.mark_many(first, sizes.size, field)

    def mark_many(self, first: int, n: int, field: int) -> None:
        """Mark ``field`` of the vertices ``first, ..., first + n - 1`` connected."""
        if field >= 63:
            self._wide.update((vid, field) for vid in range(first, first + n))
            return
        bits = np.frombuffer(self.connected, np.int64)
        bits[first:first + n] |= 1 << field
        del bits  # the buffer must not stay exported: appending resizes it

    def remove_last(self, vid: int, edge_bytes: int) -> None:
        """Undo ``add`` of the last vertices from ``vid`` on and their edges (from ``edge_bytes`` on):
        vertices whose connections failed leave the graph as it was."""
        del self.rows[_NV * vid:]
        del self.connected[vid:]
        del self.edges[edge_bytes:]
        self.store.truncate(vid)
        self._wide = {k for k in self._wide if k[0] < vid}
        k = len(self.values) - 1
        while k > 0 and self.values[k] >= vid:  # their value connections' constants go unused
            self.values[k] = -1
            k -= 2

    def add_value(self, constant: int, vid: int) -> None:
        """Record that ``constant`` holds the value a field of vertex ``vid`` is connected to."""
        self.values.extend((constant, vid))

    def get(self, vid: int, column: int) -> int:
        return self.rows[_NV * vid + column]

    def put(self, vid: int, column: int, value: int) -> None:
        self.rows[_NV * vid + column] = value

    def slots(self, vid: int) -> dict[str, FieldSlot]:
        return self.fields[self.rows[_NV * vid]]

    def vertex_class(self, vid: int) -> type[Vertex]:
        return self.classes[self.rows[_NV * vid]]

    def describe(self, vid: int) -> str:
        source = self.sources[self.rows[_NV * vid + 4]]
        return f"vertex {vid} ({self.vertex_class(vid).vertexName}{', ' + source if source else ''})"

    def is_connected(self, vid: int, field: int) -> bool:
        if field >= 63:
            return (vid, field) in self._wide
        return bool(self.connected[vid] >> field & 1)

    def mark_connected(self, vid: int, field: int) -> None:
        if field >= 63:
            self._wide.add((vid, field))
        else:
            self.connected[vid] |= 1 << field

    def connect_run(self, vid: int, field: int, run: tuple[int, int, int, int]) -> bool:
        """Connect a field that is not a list to one run, unless it is connected already (then
        return False and change nothing)."""
        bits = self.connected[vid]
        if field >= 63 or bits >> field & 1:
            if self.is_connected(vid, field):
                return False
            self.mark_connected(vid, field)
        else:
            self.connected[vid] = bits | 1 << field
        self.edges += _EDGE_ROW(vid, field, NO_ROW, 0, *run)  # (only list rows can be connected twice)
        return True

    def add_run(self, vid: int, field: int, row: int, run: tuple[int, int, int, int]) -> None:
        """Connect ``field`` (or one ``row`` of a list field) to one run ``(var, offset, count,
        stride)`` of elements. (A connection's id is where its rows start: later is larger.)"""
        self.one_by_one = True
        self.edges += _EDGE_ROW(vid, field, row, len(self.edges), *run)

    def add_runs(self, vid: int, field: int, row: int | np.ndarray, runs: Runs) -> None:
        """Connect ``field`` (or one ``row`` of a list field, or run ``k`` to row ``row[k]``) to a
        sequence of runs."""
        if len(runs) <= 1 and not isinstance(row, np.ndarray):
            self.add_run(vid, field, row, (int(runs.var[0]), int(runs.offset[0]), int(runs.count[0]),
                                           int(runs.stride[0])) if len(runs) else (0, 0, 0, 1))
            return
        self.one_by_one = True
        block = np.empty((len(runs), _NE), np.int64)
        block[:, 0], block[:, 1], block[:, 2], block[:, 3] = vid, field, row, len(self.edges)
        block[:, 4], block[:, 5], block[:, 6], block[:, 7] = runs.var, runs.offset, runs.count, runs.stride
        self.edges += block.tobytes()

    def add_rows(self, vid: int, field: int, var: int, offsets: np.ndarray, count: int, stride: int) -> None:
        """Connect the rows of a list field to runs of one variable, one run per row."""
        self.one_by_one = True
        n = offsets.size
        block = np.empty((n, _NE), np.int64)
        block[:, 0], block[:, 1], block[:, 2] = vid, field, np.arange(n)
        block[:, 3] = len(self.edges)
        block[:, 4], block[:, 5], block[:, 6], block[:, 7] = var, offsets, count, stride
        self.edges += block.tobytes()

    def vertex_columns(self) -> np.ndarray:
        """A copy of the vertex rows as an ``(n, len(VERTEX_COLUMNS))`` array."""
        return np.frombuffer(self.rows, np.int64).reshape(-1, _NV).copy() if self.rows else \
            np.zeros((0, _NV), np.int64)

    def edge_columns(self, which: tuple[int, ...], order: np.ndarray | None = None) -> list[np.ndarray]:
        """Copies of the edge rows' columns ``which`` (indices into EDGE_COLUMNS), their rows taken
        in ``order`` (all, as added, when None). Read in blocks of rows, each block once for every
        column (a column at a time would read all the rows once per column)."""
        rows = np.frombuffer(self.edges, np.int64).reshape(-1, _NE)
        n = rows.shape[0] if order is None else order.size
        out = [np.empty(n, np.int64) for _ in which]
        for lo in range(0, n, _BLOCK_ROWS):
            hi = min(n, lo + _BLOCK_ROWS)
            block = rows[lo:hi] if order is None else rows[order[lo:hi]]
            for column, k in zip(out, which):
                column[lo:hi] = block[:, k]
            del block
        del rows  # the buffer must not stay exported: appending resizes it
        return out

    def num_edges(self) -> int:
        """Connected fields (a list field counts once, once it has a size), as Poplar counts edges."""
        bits = np.frombuffer(self.connected, np.uint8) if self.connected else np.zeros(0, np.uint8)
        return int(_BITS_SET[bits].sum()) + len(self._wide)
