"""The frozen graph IR: what the compiler passes, the engine and the profile read.

Building an Engine freezes the graph into one immutable :class:`GraphIR`: variables,
the user's tile mapping as intervals, vertices and edges in columns (edges as runs of
elements, grouped by compute set), functions, host handles, streams, initial values
and perf estimators. Later changes to the graph do not reach an IR already built.
``str(ir)`` prints it as text for debugging (``POPLAR_PY_DUMP_IR=file`` writes it when
an Engine is built).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .builder.field_store import FieldColumns
from .builder.variable_table import VariableTable
from .handles import DataStream, RemoteBuffer
from .program import Program
from .regions.interval_map import IntervalMap
from .regions.runs import Runs
from .target import Target
from .types import Type
from .vertex import Vertex

_I64 = np.int64
_NO_PAIRS = np.zeros((0, 2), _I64)
PerfEstimator = Callable[..., object]


@dataclass(frozen=True)
class VariablesIR:
    names: tuple[str, ...]
    types: tuple[Type, ...]
    shapes: tuple[tuple[int, ...], ...]
    sizes: np.ndarray
    bases: np.ndarray  # first global id of each variable
    constant: np.ndarray
    num_elements: int

    def __len__(self) -> int:
        return len(self.names)

    def var_of(self, gids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.bases, gids, side="right") - 1

    def element_sizes(self) -> np.ndarray:
        """Bytes per element of each variable."""
        return np.asarray([t.size for t in self.types], _I64)


@dataclass(frozen=True)
class VerticesIR:
    """Every vertex (one entry per id) and the compute sets they belong to."""

    classes: tuple[type[Vertex], ...]
    cls: np.ndarray  # index into classes
    compute_set: np.ndarray
    tile: np.ndarray  # -1: not mapped
    perf: np.ndarray  # setPerfEstimate cycles, -1: none
    source: np.ndarray  # index into sources
    sources: tuple[str, ...]
    by_cs: np.ndarray  # vertex ids grouped by compute set, in id order
    cs_bounds: np.ndarray  # compute set c holds by_cs[cs_bounds[c]:cs_bounds[c + 1]]
    store: FieldColumns  # list lengths, state vector sizes and state values
    num_edges: int

    def __len__(self) -> int:
        return int(self.cls.size)

    def in_compute_set(self, cs: int) -> np.ndarray:
        return self.by_cs[self.cs_bounds[cs]:self.cs_bounds[cs + 1]]

    def type_name(self, vid: int) -> str:
        return self.classes[int(self.cls[vid])].vertexName

    def describe(self, vid: int) -> str:
        source = self.sources[int(self.source[vid])]
        return f"vertex {vid} ({self.type_name(vid)}{', ' + source if source else ''})"


@dataclass(frozen=True)
class EdgesIR:
    """Connected fields as runs of elements (a run of count 0 stands for an empty tensor),
    sorted by compute set, vertex, field and row; a list row connected twice keeps the last."""

    vertex: np.ndarray
    field: np.ndarray
    row: np.ndarray  # -1 for fields that are not lists
    var: np.ndarray
    offset: np.ndarray
    count: np.ndarray
    stride: np.ndarray
    cs_bounds: np.ndarray  # compute set c holds rows cs_bounds[c]:cs_bounds[c + 1]

    def __len__(self) -> int:
        return int(self.vertex.size)

    def runs(self, rows: np.ndarray | slice) -> Runs:
        """The non-empty runs among ``rows``."""
        return Runs.make(self.var[rows], self.offset[rows], self.count[rows], self.stride[rows])


@dataclass(frozen=True)
class HostHandleIR:
    """A createHostWrite/createHostRead handle: the tensor's elements as runs."""

    name: str
    write: bool
    runs: Runs
    type: Type
    shape: tuple[int, ...]


@dataclass(frozen=True)
class GraphIR:
    target: Target
    tensors: VariableTable  # identity only: tensors of this graph refer to it
    variables: VariablesIR
    mapping: IntervalMap  # the user's mapping: gid intervals, each variable starting one
    mapping_tiles: np.ndarray  # tile of each interval, -1 where unmapped
    initial: tuple[tuple[int, np.ndarray], ...]  # (variable, values) for constants and initial values
    vertices: VerticesIR
    edges: EdgesIR
    compute_sets: tuple[str, ...]
    functions: tuple[Program, ...]
    host_handles: Mapping[str, HostHandleIR]
    streams: Mapping[str, DataStream]
    perf_estimators: Mapping[str, PerfEstimator]
    replication_factor: int = 1  # the graph is one replica, compiled once for all (compiler/replicas.py)
    device_target: Target | None = None  # the whole device, every replica's IPUs
    replica_index_constants: tuple[int, ...] = ()  # constants whose value on replica r is r
    # (constant, vertex) per field connected to a value: mapped to the vertex's tile (compiler/mapping.py)
    value_constants: np.ndarray = field(default_factory=lambda: _NO_PAIRS)
    remote_buffers: Mapping[str, RemoteBuffer] = field(default_factory=dict)  # Streaming Memory, by handle

    def __str__(self) -> str:
        return self.text()

    def without_edges(self) -> GraphIR:
        """The IR once its compute sets are planned: the plans hold what the edges said."""
        zero = np.zeros(0, _I64)
        edges = EdgesIR(*[zero] * 7, np.zeros(len(self.compute_sets) + 1, _I64))
        return dataclasses.replace(self, edges=edges)

    def compiled(self) -> GraphIR:
        """What a compiled graph's profile still reads: the IR without its edges and perf
        estimators (functions, already applied)."""
        return dataclasses.replace(self.without_edges(), perf_estimators={})

    def text(self, limit: int = 20) -> str:
        """The IR as text: up to ``limit`` entries of each list."""
        v = self.variables
        lines = [f"target: {self.target.getNumTiles()} tiles ({self.target.getTargetArchString()})",
                 f"variables: {len(v)} ({v.num_elements:,} elements)"]
        tiles = self.mapping_tiles
        ends = self.mapping.ends
        for i in range(min(len(v), limit)):
            base, size = int(v.bases[i]), int(v.sizes[i])
            k0, k1 = np.searchsorted(self.mapping.starts, [base, base + size])
            parts = [f"[{int(s) - base},{int(e) - base})->{int(t) if t >= 0 else '?'}"
                     for s, e, t in zip(self.mapping.starts[k0:k1][:6], ends[k0:k1][:6], tiles[k0:k1][:6])]
            more = " ..." if k1 - k0 > 6 else ""
            kind = "constant" if v.constant[i] else "variable"
            lines.append(f"  {i} {kind} '{v.names[i]}' {v.types[i]} {list(v.shapes[i])}: "
                         f"{' '.join(parts)}{more}")
        if len(v) > limit:
            lines.append(f"  ... {len(v) - limit} more")
        lines.append(f"compute sets: {len(self.compute_sets)}")
        for cs, name in enumerate(self.compute_sets[:limit]):
            members = self.vertices.in_compute_set(cs)
            lines.append(f"  {cs} '{name}': {members.size} vertices")
            for vid in members[:limit].tolist():
                lines.append(f"    {self.vertices.describe(vid)} on tile {int(self.vertices.tile[vid])}: "
                             + self._edges_text(cs, vid))
        handles, streams = ", ".join(self.host_handles) or "-", ", ".join(self.streams) or "-"
        remote = ", ".join(self.remote_buffers) or "-"
        lines.append(f"functions: {len(self.functions)}; host handles: {handles}; streams: {streams}; "
                     f"remote buffers: {remote}")
        return "\n".join(lines) + "\n"

    def _edges_text(self, cs: int, vid: int) -> str:
        e = self.edges
        lo, hi = int(e.cs_bounds[cs]), int(e.cs_bounds[cs + 1])
        a, b = lo + np.searchsorted(e.vertex[lo:hi], vid), lo + np.searchsorted(e.vertex[lo:hi], vid, "right")
        names = list(self.vertices.classes[int(self.vertices.cls[vid])].fields)
        out = []
        for k in range(a, min(b, a + 8)):
            row = f"[{int(e.row[k])}]" if e.row[k] >= 0 else ""
            out.append(f"{names[int(e.field[k])]}{row}=var{int(e.var[k])}@{int(e.offset[k])}"
                       f"x{int(e.count[k])}/{int(e.stride[k])}")
        return ", ".join(out) + (" ..." if b - a > 8 else "")


def freeze_vertices(classes: list[type[Vertex]], rows: np.ndarray, sources: list[str], num_cs: int,
                    store: FieldColumns, num_edges: int) -> VerticesIR:
    cs = rows[:, 1]
    by_cs = np.argsort(cs, kind="stable").astype(_I64)
    bounds = np.searchsorted(cs[by_cs], np.arange(num_cs + 1)).astype(_I64)
    return VerticesIR(tuple(classes), rows[:, 0].copy(), cs.copy(), rows[:, 2].copy(), rows[:, 3].copy(),
                      rows[:, 4].copy(), tuple(sources), by_cs, bounds, store, num_edges)


#: the edge columns (indices into ``vertex_table.EDGE_COLUMNS``) :func:`edge_order` reads: the
#: vertex and field, with the row and connection when rows may repeat; and those the IR keeps:
#: vertex, field, row, var, offset, count and stride
ORDER_COLUMNS = (0, 1)
REPEAT_COLUMNS = (2, 3)
IR_COLUMNS = (0, 1, 2, 4, 5, 6, 7)


def edge_order(vertex: np.ndarray, field: np.ndarray, vertex_cs: np.ndarray,
               repeats: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray | None:
    """The edge rows the IR keeps, in its order: sorted by (compute set, vertex, field, row), a
    list row (or a field) connected more than once keeping its last connection only; None when
    that is every row where it is. ``repeats``: the rows' list row and connection, when a field
    may have been connected again or a list's rows out of order (fields connected vertex by
    vertex); None when each vertex's rows came once, field by field and in order (built in bulk)."""
    if vertex.size < 2:
        return None
    fields = int(field.max()) + 1
    if (np.diff(vertex_cs) >= 0).all():  # compute sets in vertex order (vertices built set by set)
        key = vertex * fields + field
    else:  # each vertex's place in (compute set, vertex) order
        rank = np.empty(vertex_cs.size, _I64)
        rank[np.argsort(vertex_cs, kind="stable")] = np.arange(vertex_cs.size)
        key = rank[vertex]
        key *= fields
        key += field
    order = None
    if (key[1:] < key[:-1]).any():
        # A field's rows usually come in order (bulk-built vertices get theirs field by field over
        # many vertices): one stable sort by (compute set, vertex, field) then orders them all.
        order = np.argsort(key, kind="stable")
    if repeats is None:
        return order
    row, connection = repeats
    if order is not None:
        key, row = key[order], row[order]
    tie = np.diff(key) == 0
    rise = np.diff(row)
    if (rise[tie] < 0).any():  # a list's rows out of order: sort by row too
        by_row = np.lexsort((row, key))
        order = by_row if order is None else order[by_row]
        row = row[by_row]  # (the keys were in order already: they stay where they are)
        rise = np.diff(row)
    first = np.ones(key.size, dtype=bool)
    first[1:] = ~tie | (rise != 0)
    if first.all():
        return order
    if order is not None:
        connection = connection[order]
    last = np.maximum.reduceat(connection, np.flatnonzero(first))
    kept = np.flatnonzero(connection == last[np.cumsum(first) - 1])
    return kept if order is None else order[kept]


def freeze_edges(cols: list[np.ndarray], vertex_cs: np.ndarray, num_cs: int) -> EdgesIR:
    """The edges from their rows' :data:`IR_COLUMNS`, in the order :func:`edge_order` gives."""
    bounds = np.searchsorted(vertex_cs[cols[0]], np.arange(num_cs + 1)).astype(_I64)
    return EdgesIR(*cols, bounds)


def freeze_variables(table: VariableTable) -> VariablesIR:
    return VariablesIR(tuple(table.names), tuple(table.types), tuple(table.shapes),
                       np.asarray(table.sizes, _I64), table.bases.copy(), table.constant.copy(),
                       table.num_elements)


def freeze_initial(initial: dict[int, np.ndarray]) -> tuple[tuple[int, np.ndarray], ...]:
    items = tuple(sorted(initial.items()))
    for _, values in items:
        values.flags.writeable = False  # the graph's own arrays: it replaces them, never writes them
    return items
