"""Many vertices of one class at once, with their vector and list fields connected from arrays.

A library operation adds one vertex per tile (or a few) whose ``VectorList`` fields hold that
tile's regions of its operands. Made one ``addVertex`` at a time, every region costs a view, a
concatenation and a Python call; here the regions are flat ranges of the operands in numpy
arrays, cut into runs of variable elements with one ``take_ranges`` per operand, and the
vertices and edge rows are appended to the vertex table as blocks. ``Graph.add_vertices`` is
the entry point; it checks fields as ``connect`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import GraphConnectionError, PoplarTypeError, UnknownFieldError
from ..regions.arrays import exclusive_cumsum
from ..regions.runs import arithmetic_groups
from ..tensor import Tensor
from ..vertex import FieldKind
from .vertex_table import EDGE_COLUMNS, NO_ROW, PERF, VERTEX_COLUMNS, FieldSlot, VertexTable

_I64 = np.int64


@dataclass(frozen=True)
class Rows:
    """The rows of the list fields of new vertices, as flat ranges of the tensors they connect to.

    Vertex ``v`` has ``per_vertex[v]`` rows, in order; row ``k`` (counting over all vertices) is
    the concatenation of the ranges ``[begin[j], end[j])`` whose ``row[j] == k`` (``row`` does not
    decrease).
    """

    per_vertex: np.ndarray
    begin: np.ndarray
    end: np.ndarray
    row: np.ndarray

    @property
    def num_rows(self) -> int:
        return int(self.per_vertex.sum())


def list_edges(t: Tensor, rows: Rows, first_vertex: int, field: int, connection: int,
               list_row: bool = True) -> np.ndarray:
    """The edge rows connecting list field ``field`` of vertices ``first_vertex, ...`` to the rows
    of ``t`` (flattened): one per run, runs that go on in one arithmetic sequence joined; an empty
    row one empty run, as ``connect`` makes for an empty tensor. A field that is not a list
    (``list_row`` False) has one row per vertex."""
    runs, owner = t.runs().take_ranges(rows.begin, rows.end)
    row = rows.row[owner]
    same = (runs.var[1:] == runs.var[:-1]) & (row[1:] == row[:-1])
    first, count, stride = arithmetic_groups(runs.offset, runs.count, runs.stride, same)
    var, offset, row = runs.var[first], runs.offset[first], row[first]
    present = np.zeros(rows.num_rows, bool)
    present[row] = True
    if not present.all():
        empty = np.flatnonzero(~present)
        none, one = np.zeros(empty.size, _I64), np.ones(empty.size, _I64)
        row, var, offset, count, stride = (np.concatenate(pair) for pair in (
            (row, empty), (var, none), (offset, none), (count, none), (stride, one)))
    vertex_of_row = np.repeat(np.arange(rows.per_vertex.size, dtype=_I64), rows.per_vertex)[row]
    block = np.empty((row.size, len(EDGE_COLUMNS)), _I64)
    block[:, 0] = first_vertex + vertex_of_row
    block[:, 1] = field
    block[:, 2] = row - exclusive_cumsum(rows.per_vertex)[vertex_of_row] if list_row else NO_ROW
    block[:, 3] = connection
    block[:, 4], block[:, 5], block[:, 6], block[:, 7] = var, offset, count, stride
    return block


def check_list_field(slots: dict[str, FieldSlot], name: str, t: Tensor,
                     where: Callable[[], str]) -> FieldSlot:
    """The slot of vector or list field ``name``, checked against tensor ``t`` as ``connect`` checks
    an edge."""
    slot = slots.get(name)
    if slot is None:
        raise UnknownFieldError(f"{where()} has no field '{name}' (fields: {', '.join(slots)})")
    if slot.state or (slot.rank != 1 and not slot.is_list):
        raise GraphConnectionError(f"{where()} field '{name}' ({slot.describe()}) is not a vector or a list")
    if t.elementType() != slot.type:
        raise PoplarTypeError(f"{where()} field '{name}' ({slot.describe()}) cannot be connected to tensor "
                              f"'{t.name}' of type {t.elementType()}")
    if slot.writes and (t.containsConstant() or t.containsAliases()):
        raise GraphConnectionError(f"{where()} field '{name}' ({slot.describe()}) writes, but tensor "
                                   f"'{t.name}' contains constants or aliased elements")
    return slot


def add_list_vertices(table: VertexTable, class_id: int, compute_set: int, source: tuple[str, int],
                      tiles: np.ndarray, lists: Mapping[str, tuple[Tensor, Rows]],
                      where: Callable[[], str]) -> int:
    """Add ``len(tiles)`` vertices of class ``class_id`` (vertex ``v`` on ``tiles[v]``) whose list
    fields ``lists`` connect to rows of those tensors; the first vertex's id. ``where`` names
    the vertices for error messages."""
    slots = table.fields[class_id]
    checked = [(check_list_field(slots, name, t, where), t, rows) for name, (t, rows) in lists.items()]
    for slot, _, rows in checked:
        if rows.per_vertex.size != tiles.size or not (slot.is_list or (rows.per_vertex == 1).all()):
            raise GraphConnectionError(f"{where()} field '{slot.spec.name}': rows for {rows.per_vertex.size} "
                                       f"vertices ({tiles.size} vertices, one row each for a vector)")
    first = table.add_many(class_id, compute_set, source, tiles)
    connection = len(table.edges)
    blocks = [list_edges(t, rows, first, slot.index, connection, slot.is_list) for slot, t, rows in checked]
    block = np.concatenate(blocks) if blocks else np.zeros((0, len(EDGE_COLUMNS)), _I64)
    # the vertex table's order (vertex, field, row), runs of a row kept in order
    table.add_edge_block(block[np.lexsort((block[:, 2], block[:, 1], block[:, 0]))])
    for slot, _, rows in checked:
        if slot.is_list:
            table.size_lists(first, slot.index, rows.per_vertex)
        else:
            table.mark_many(first, tiles.size, slot.index)
    return first


def set_shared_state(table: VertexTable, first: int, n: int, slot: FieldSlot, values: np.ndarray) -> None:
    """State field ``slot`` of vertices ``first, ..., first + n - 1``: the same ``values`` (converted)."""
    table.store.share_values(first, n, slot.index, values)
    if slot.spec.kind is not FieldKind.SCALAR:
        table.store.set_sizes(first, slot.index, np.full(n, values.size, _I64))


def add_shared_edges(table: VertexTable, first: int, n: int, field: int,
                     run: tuple[int, int, int, int] | np.ndarray) -> None:
    """Field ``field`` (not a list) of vertices ``first, ..., first + n - 1`` connected to one run
    ``(var, offset, count, stride)``, or each to its own (``run[v]`` of an ``(n, 4)`` array)."""
    block = np.empty((n, len(EDGE_COLUMNS)), _I64)
    block[:, 0] = np.arange(first, first + n)
    block[:, 1:4] = (field, NO_ROW, len(table.edges))
    block[:, 4:] = run
    table.add_edge_block(block)
    table.mark_many(first, n, field)


def set_vector_state(table: VertexTable, first: int, slot: FieldSlot, values: np.ndarray,
                     per_vertex: np.ndarray) -> None:
    """State vector ``slot`` of vertices ``first, ...``: vertex ``v`` takes the next
    ``per_vertex[v]`` of ``values``."""
    values = np.asarray(values).astype(slot.spec.type.dtype).reshape(-1)
    table.store.set_values(first, slot.index, values, per_vertex)
    table.store.set_sizes(first, slot.index, per_vertex)


def set_perf_estimates(table: VertexTable, first: int, cycles: np.ndarray) -> None:
    """The perf estimates of vertices ``first, first + 1, ...``: vertex ``v`` takes ``cycles[v]``
    (as ``setPerfEstimate`` on each)."""
    rows = np.frombuffer(table.rows, _I64).reshape(-1, len(VERTEX_COLUMNS))
    rows[first:first + cycles.size, PERF] = cycles
    del rows  # the buffer must not stay exported: appending resizes it
