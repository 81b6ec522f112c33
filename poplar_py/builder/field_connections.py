"""Vertex fields: connecting them to tensors, lists of tensors and constant values.

A connection becomes edge rows in the vertex table (one per run of the tensor's elements);
the checks here (types, ranks, writes to constants or aliases, tensors of another graph)
are what ``Graph.addVertex`` and ``Graph.connect`` report, naming vertex and field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..checks.arguments import cast_values, checked_int, checked_values
from ..errors import (
    ConnectionArgumentError,
    GraphConnectionError,
    PoplarTypeError,
    TensorCreationError,
    UnknownFieldError,
)
from ..handles import RemoteBuffer
from ..tensor import Tensor
from ..types import Type
from ..vertex import Direction, FieldKind
from .variable_table import VariableTable
from .vertex_table import NO_ROW, FieldSlot, VertexTable

#: makes the constant for a field of a vertex connected to a value: (type, shape, values (checked
#: numbers: a plain number or an array), name, vertex) -> tensor
ConstantMaker = Callable[[Type, list[int], Any, str, int], Tensor]


def unknown_field(vertices: VertexTable, vid: int, name: str) -> str:
    """The message for a field that vertex ``vid``'s class does not declare."""
    cls = vertices.vertex_class(vid)
    return f"vertex type '{cls.vertexName}' has no field '{name}' (fields: {', '.join(cls.fields) or 'none'})"


class FieldConnector:
    """Connects the fields of a graph's vertices."""

    def __init__(self, vertices: VertexTable, variables: VariableTable, constant: ConstantMaker) -> None:
        self._vertices, self._vars, self._constant = vertices, variables, constant

    def connect(self, vid: int, slots: dict[str, FieldSlot], name: str, index: int | None,
                value: Any) -> None:
        """Connect field ``name`` (or its row ``index``) of vertex ``vid`` to a tensor, a list of
        tensors, or (Input fields) a constant value."""
        slot = slots.get(name)
        if slot is None:
            raise UnknownFieldError(unknown_field(self._vertices, vid, name))
        if type(value) is Tensor and index is None and slot.plain:  # the common case, first
            run = value.edge_run(self._vars, slot.type, slot.rank, slot.writes)
            if run is not None and self._vertices.connect_run(vid, slot.index, run):
                return
        table = self._vertices

        def where() -> str:  # built only for an error message
            return f"{table.describe(vid)} field '{name}'"

        if slot.state:
            raise GraphConnectionError(f"{where()} is vertex state; set it with setInitialValue")
        if index is None and table.is_connected(vid, slot.index):
            raise GraphConnectionError(f"{where()} is already connected")
        if isinstance(value, (list, tuple)) and (not value or isinstance(value[0], Tensor)):
            if not slot.is_list or index is not None:
                raise GraphConnectionError(f"{where()} ({slot.describe()}) cannot take a list of tensors")
            for t in value:
                self._check_edge(where, slot, t, 1)
            for row, t in enumerate(value):
                self._add_edge(vid, slot.index, row, t)
            self._size_list(vid, slot, len(value))
            return
        if value is None:
            raise ConnectionArgumentError(f"{where()} ({slot.describe()}) cannot be connected to None")
        if isinstance(value, RemoteBuffer):  # vertices read tile memory only
            raise ConnectionArgumentError(f"{where()} cannot be connected to remote buffer "
                                          f"'{value.handle()}': copy its rows into a tensor with "
                                          "prog.Copy(buffer, tensor)")
        if not isinstance(value, Tensor):
            value = self._value(vid, slot, value, where)
            run = value.as_run()
            if index is None and slot.plain and run is not None:  # a fresh constant of the field's type
                table.connect_run(vid, slot.index, run)
                return
        if index is not None:
            self._connect_indexed(vid, slot, index, value, where)
            return
        self._check_edge(where, slot, value, slot.rank)
        if slot.is_list:
            rows = value.dim(0)
            block = value.block
            cols = value.dim(1)
            if block is not None and rows:
                var, offset, strides = block
                table.add_rows(vid, slot.index, var, offset + np.arange(rows, dtype=np.int64) * strides[0],
                               cols, strides[1])
            elif rows and cols:  # the rows' runs cut from the view's, at the cost of its regions
                ends = np.arange(1, rows + 1, dtype=np.int64) * cols
                runs, row = value.runs().take_ranges(ends - cols, ends)
                table.add_runs(vid, slot.index, row, runs)
            else:
                for k in range(rows):
                    self._add_edge(vid, slot.index, k, value[k])
            self._size_list(vid, slot, rows)
            return
        self._add_edge(vid, slot.index, NO_ROW, value)
        table.mark_connected(vid, slot.index)

    def _value(self, vid: int, slot: FieldSlot, value: Any, where: Callable[[], str]) -> Tensor:
        """A constant holding ``value`` for an Input field of vertex ``vid``."""
        if slot.spec.direction is not Direction.INPUT:
            raise GraphConnectionError(f"{where()}: only Input fields can be connected to a value")
        scalar = slot.spec.kind is FieldKind.SCALAR
        if type(value) in (int, float, bool):  # a plain number needs no check
            return self._constant(slot.type, [] if scalar else [1], value, f"{where()} value", vid)
        values = checked_values(value, f"{where()} ({slot.describe()})")
        if scalar and values.size != 1:
            raise TensorCreationError(f"{where()} ({slot.describe()}) is a scalar but {values.size} values "
                                      "were given")
        return self._constant(slot.type, [] if scalar else [values.size], values, f"{where()} value", vid)

    def _add_edge(self, vid: int, field: int, row: int, t: Tensor) -> None:
        run = t.as_run()
        if run is not None:
            self._vertices.add_run(vid, field, row, run)
        else:
            self._vertices.add_runs(vid, field, row, t.runs())

    def _size_list(self, vid: int, slot: FieldSlot, size: int) -> None:
        self._vertices.store.set_size(vid, slot.index, size)
        self._vertices.mark_connected(vid, slot.index)

    def _connect_indexed(self, vid: int, slot: FieldSlot, index: int, t: Tensor,
                         where: Callable[[], str]) -> None:
        if not slot.is_list:
            raise GraphConnectionError(
                f"{where()} ({slot.describe()}) is not a list field and cannot be indexed")
        size = self._vertices.store.size(vid, slot.index)
        if size is None:
            raise GraphConnectionError(
                f"{where()}: call setFieldSize before connecting {slot.spec.name}[{index}]")
        if not 0 <= index < size:
            raise GraphConnectionError(f"{where()}: index {index} is out of range for size {size}")
        self._check_edge(lambda: f"{where()}[{index}]", slot, t, rank=1)
        self._add_edge(vid, slot.index, index, t)

    def _check_edge(self, where: Callable[[], str], slot: FieldSlot, t: Tensor, rank: int) -> None:
        if not isinstance(t, Tensor):
            raise ConnectionArgumentError(f"{where()}: expected a Tensor, got {type(t).__name__}")
        if t.variables is not self._vars:
            raise GraphConnectionError(f"{where()}: tensor '{t.name}' belongs to another graph")
        if t.elementType() is not slot.type and t.elementType() != slot.type:
            raise PoplarTypeError(f"{where()} ({slot.describe()}) cannot be connected to tensor "
                                  f"'{t.name}' of type {t.elementType()}")
        if t.rank() != rank:
            raise GraphConnectionError(f"{where()} ({slot.describe()}) needs a rank-{rank} tensor; "
                                       f"tensor '{t.name}' has shape {t.shape()}")
        if slot.writes and t.containsConstant():
            raise GraphConnectionError(f"{where()} ({slot.describe()}) writes, but tensor '{t.name}' "
                                       "contains constants")
        if slot.writes and t.containsAliases():
            raise GraphConnectionError(f"{where()} ({slot.describe()}) writes, but tensor '{t.name}' "
                                       "contains aliased elements")

    def _slot(self, vid: int, name: str) -> FieldSlot:
        slot = self._vertices.slots(vid).get(name)
        if slot is None:
            raise UnknownFieldError(unknown_field(self._vertices, vid, name))
        return slot

    def set_size(self, vid: int, name: str, size: object) -> None:
        """The length of a list field, or of a state vector."""
        where = f"{self._vertices.describe(vid)} field '{name}'"
        n = checked_int(size, f"setFieldSize of {where}")
        slot = self._slot(vid, name)
        if slot.spec.kind is FieldKind.SCALAR:
            raise GraphConnectionError(f"{where} is a scalar and has no size")
        if slot.is_list and not slot.state:
            self._size_list(vid, slot, n)
        else:
            self._vertices.store.set_size(vid, slot.index, n)

    def size(self, vid: int, name: str) -> int:
        return self._vertices.store.size(vid, self._slot(vid, name).index) or 0

    def state_slot(self, vid: int, name: str) -> FieldSlot:
        """The slot of state field ``name`` of vertex ``vid`` (an error for an edge)."""
        slot = self._slot(vid, name)
        if not slot.state:
            raise GraphConnectionError(f"{self._vertices.describe(vid)} field '{name}' is an edge "
                                       f"({slot.describe()}); connect a tensor instead")
        return slot

    def state_values(self, vid: int, name: str, values: Any) -> tuple[FieldSlot, np.ndarray]:
        """State field ``name`` of vertex ``vid`` and ``values`` checked and converted for it."""
        slot = self.state_slot(vid, name)
        where = f"{self._vertices.describe(vid)} field '{name}'"
        arr = checked_values(values, where)
        if slot.spec.kind is FieldKind.SCALAR and arr.size != 1:
            raise GraphConnectionError(f"{where} is a scalar but {arr.size} values were given")
        return slot, cast_values(arr, slot.spec.type.dtype)

    def set_state(self, vid: int, name: str, values: Any) -> None:
        """The value of a state field (vertex data that is not an edge)."""
        slot, arr = self.state_values(vid, name, values)
        self._vertices.store.set_value(vid, slot.index, arr)
        if slot.spec.kind is not FieldKind.SCALAR:
            self._vertices.store.set_size(vid, slot.index, arr.size)
