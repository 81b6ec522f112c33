"""Segments: the fields of a compute set's vertices as runs of elements.

Every connected field of every vertex (each row of a list field) is one *segment*: the
elements the vertex sees as one contiguous vector, given as runs of variable elements.
The planner decides per segment whether it is used in place or through an exchange
buffer; the lowering builds state tables and exchange plans from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import GraphIR
from ..regions.arrays import exclusive_cumsum, expand_ranges
from ..regions.runs import Runs
from ..vertex import Vertex

_I64 = np.int64


@dataclass(frozen=True)
class FieldTables:
    """Per vertex class (row) and field (column): what the planner needs, as arrays."""

    size: np.ndarray  # bytes per element
    reads: np.ndarray
    writes: np.ndarray

    @staticmethod
    def of(classes: tuple[type[Vertex], ...]) -> FieldTables:
        width = max([len(c.fields) for c in classes] + [1])
        size, reads, writes = (np.zeros((len(classes), width), dt) for dt in (_I64, bool, bool))
        for c, cls in enumerate(classes):
            for f, spec in enumerate(cls.fields.values()):
                size[c, f] = spec.type.size
                reads[c, f], writes[c, f] = spec.direction.reads, spec.direction.writes
        return FieldTables(size, reads, writes)


@dataclass
class Segments:
    """All segments of one compute set, in (vertex, field, row) order, as parallel arrays."""

    vertex: np.ndarray  # position of the vertex in the compute set
    field: np.ndarray
    row: np.ndarray  # row of a list field, else -1
    length: np.ndarray  # elements
    size: np.ndarray  # bytes per element
    reads: np.ndarray
    writes: np.ndarray
    buffer: np.ndarray  # exchange buffer number, -1: used in place (or empty)
    offset: np.ndarray  # where the vertex sees the data: an offset inside the vertex's tile

    def __len__(self) -> int:
        return int(self.length.size)


@dataclass(frozen=True)
class SegmentRuns:
    """The elements of every segment as runs (what planning reads; not kept after it)."""

    runs: Runs  # segment after segment
    segment: np.ndarray  # the segment of each run
    first: np.ndarray  # per segment: its first run
    count: np.ndarray  # per segment: how many runs it has (0 when empty)

    def rows(self, segments: np.ndarray) -> np.ndarray:
        """The runs of these segments, segment after segment."""
        return expand_ranges(self.first[segments], self.count[segments])[1]


def build_segments(graph: GraphIR, cs: int, vids: np.ndarray, tables: FieldTables
                   ) -> tuple[Segments, SegmentRuns]:
    e = graph.edges
    lo, hi = int(e.cs_bounds[cs]), int(e.cs_bounds[cs + 1])
    contiguous = vids.size and int(vids[-1]) - int(vids[0]) + 1 == vids.size
    vertex = e.vertex[lo:hi] - vids[0] if contiguous else np.searchsorted(vids, e.vertex[lo:hi])
    field, row, count = e.field[lo:hi], e.row[lo:hi], e.count[lo:hi]
    n = hi - lo
    first = np.ones(n, dtype=bool)
    if n > 1:
        first[1:] = (vertex[1:] != vertex[:-1]) | (field[1:] != field[:-1]) | (row[1:] != row[:-1])
    starts = np.flatnonzero(first)
    seg_vertex, seg_field = vertex[starts], field[starts]
    cls = graph.vertices.cls[vids[seg_vertex]]
    nonempty = count > 0
    rows = slice(lo, hi) if nonempty.all() else lo + np.flatnonzero(nonempty)  # a slice: views, no copies
    runs = Runs(e.var[rows], e.offset[rows], e.count[rows], e.stride[rows])
    segment = np.cumsum(first) - 1
    if not isinstance(rows, slice):
        segment = segment[nonempty]
    run_count = np.bincount(segment, minlength=starts.size).astype(_I64)
    z = np.zeros(starts.size, _I64)
    seg = Segments(seg_vertex, seg_field, row[starts], np.add.reduceat(count, starts) if n else z,
                   tables.size[cls, seg_field], tables.reads[cls, seg_field], tables.writes[cls, seg_field],
                   np.full(starts.size, -1, _I64), z.copy())
    return seg, SegmentRuns(runs, segment, exclusive_cumsum(run_count), run_count)
