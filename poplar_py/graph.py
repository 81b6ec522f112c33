"""Graph: variables and constants, tile mappings, codelets, vertices, streams, functions.

A graph records what lives on which tile and which vertices run where, in tables that
grow with the regions mapped and the vertices added, not with elements
(:mod:`~poplar_py.builder.mapping_table`, :mod:`~poplar_py.builder.vertex_table`). Nothing runs until an
:class:`~poplar_py.engine.Engine` freezes the graph into the IR (:meth:`Graph.freeze`)
and compiles it with its programs.
"""

from __future__ import annotations

import copy
import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from . import ir
from .builder import box_views, constant_pool, graph_dump
from .builder.field_connections import FieldConnector
from .builder.graph_host import GraphHostExchange
from .builder.graph_mapping import GraphTileMapping
from .builder.graph_vertices import GraphVertices
from .builder.half_values import checked_half, half_bits
from .builder.mapping_table import MappingTable
from .builder.sorted_regions import sorted_contiguous_regions
from .builder.strided_block import contiguous_strides
from .builder.variable_table import VariableRef, VariableTable
from .builder.vertex_table import VertexTable
from .checks.arguments import (
    cast_values,
    checked_int,
    checked_ints,
    checked_shape,
    checked_tile,
    checked_values,
)
from .debug import debug_name, label
from .errors import (
    GraphMemoryAllocationError,
    GraphReplicationError,
    InvalidArgumentError,
    InvalidTileMappingError,
    PoplarError,
    PoplarTypeError,
    TensorCreationError,
)
from .handles import (
    ComputeSet,
    DataStream,
    DataStreamType,
    FieldRef,
    Function,
    HostHandle,
    RemoteBuffer,
    ReplicatedStreamMode,
    VertexRef,
)
from .host_function import HostFunction
from .interval import Interval
from .program import Program
from .regions.arrays import unique_sorted
from .regions.runs import in_order_of
from .target import Device, Target
from .tensor import Tensor, concat
from .types import HALF, QUARTER_METADATA, UNSIGNED_INT, Type, asType
from .vertex_types.registry import CodeletRegistry

__all__ = ["ComputeSet", "DataStream", "DataStreamType", "FieldRef", "Function", "Graph", "HostHandle",
           "RemoteBuffer", "ReplicatedStreamMode",
           "TensorCloneMethod", "VariableMappingMethod", "VertexRef", "replication_factor"]


class VariableMappingMethod(enum.Enum):
    NONE = "NONE"
    LINEAR = "LINEAR"


class TensorCloneMethod(enum.Enum):
    PRESERVE_ORDER_AND_ALIASES = "PRESERVE_ORDER_AND_ALIASES"
    CREATE_NEW_ORDER = "CREATE_NEW_ORDER"
    PRESERVE_ORDER_UNLESS_ALIASES = "PRESERVE_ORDER_UNLESS_ALIASES"


PerfEstimator = Callable[..., Any]


class replication_factor(int):  # noqa: N801 (Poplar's name)
    """A replication factor, as Poplar's strong type: ``Graph(target, poplar.replication_factor(2))``."""


def _values(values: Any, n: int, type_: Type, what: str) -> np.ndarray:
    """``n`` values of ``type_`` from a scalar (repeated), a list or an array."""
    arr = checked_values(values, what)
    if arr.size == 1 and n != 1:
        arr = np.full(n, arr.reshape(-1)[0])
    if arr.size != n:
        raise TensorCreationError(f"{what}: {arr.size} values given for {n} elements")
    return cast_values(arr, type_.dtype)


class Graph(GraphTileMapping, GraphVertices, GraphHostExchange):
    """A graph of tensors and vertices for one target.

    ``Graph(target)`` or ``Graph(device)``. Variables start unmapped; map them with
    ``setTileMapping`` (or let the compiler map what is left: next to the vertices using it, or linearly).

    ``Graph(target, replication_factor=R)`` builds one replica of a program that runs on R
    replicas of ``numIPUs / R`` IPUs each: ``getTarget()`` is one replica's, and the Engine
    compiles that one replica and runs it on every replica's own tile memories.
    """

    def __init__(self, target: Target | Device, replication_factor: int = 1) -> None:
        device = target.getTarget() if isinstance(target, Device) else target
        if not isinstance(device, Target):
            raise InvalidArgumentError(f"Graph needs a Target or a Device, got {target!r:.60}")
        replicas = checked_int(replication_factor, "Graph: replication_factor", 1)
        if device.getNumIPUs() % replicas:
            raise GraphReplicationError(f"Graph: replication factor {replicas} does not divide the target's "
                                        f"{device.getNumIPUs()} IPUs (numIPUs)")
        self._replicas = replicas
        self._target = device if replicas == 1 else replace(device, numIPUs=device.getNumIPUs() // replicas)
        self._device_target = device
        self._replica_index_constants: list[int] = []
        self._num_tiles = self._target.getNumTiles()
        self._tiles: list[int] | None = None  # a virtual graph's tiles (absolute), by relative id
        self._top = self
        self._vars = VariableTable(self._num_tiles * self._target.getBytesPerTile())
        self._mapping = MappingTable(self._vars)
        self._vertices = VertexTable()
        self._fields = FieldConnector(self._vertices, self._vars, self._value_constant)
        self._initial: dict[int, np.ndarray] = {}  # variable -> values (constants, initial values)
        self._pool = constant_pool.ConstantPool()  # one-element constants' values, not yet in _initial
        self._codelets = CodeletRegistry()
        self._vertex_types: dict[str, int] = {}  # addVertex's name -> class id in the vertex table
        self._compute_sets: list[str] = []
        self._perf_estimators: dict[str, PerfEstimator] = {}
        self._host_handles: dict[str, HostHandle] = {}
        self._streams: dict[str, DataStream] = {}
        self._remote_buffers: dict[str, RemoteBuffer] = {}
        self._functions: list[Program] = []
        self._host_functions: dict[str, HostFunction] = {}

    # ---- target and variables ----------------------------------------------------------------
    def getTarget(self) -> Target:
        """The target this graph sees: a virtual graph's covers its own tiles only."""
        return self._target

    def getTopLevelGraph(self) -> Graph:
        return self._top

    def getReplicationFactor(self) -> int:
        return self._replicas

    def addReplicationIndexConstant(self, debugContext: Any = "") -> Tensor:
        """An UNSIGNED_INT scalar constant, on this graph's tile 0, whose value is r on replica r."""
        name = debug_name(debugContext, "addReplicationIndexConstant") or "replicationIndex"
        t = self.addConstant(UNSIGNED_INT, [], 0, name)
        self.setTileMapping(t, 0)
        self._replica_index_constants.append(self._vars.num_variables - 1)
        return t

    def owns(self, t: object) -> bool:
        """Whether ``t`` is a tensor of this graph (virtual graphs share their top-level
        graph's tensors). A poplar-py addition, for libraries that check their arguments."""
        return isinstance(t, Tensor) and t.variables is self._vars

    def createVirtualGraph(self, *args: Any) -> Graph:
        """A view of some of this graph's tiles: ``(numTilesPerIPU)``, the first tiles of each
        IPU; ``(lowerTile, upperTile)``; or ``(tiles)``, a list. Tile ids inside it are relative
        (tile 0 is its first tile); tensors, vertices, compute sets, codelets, streams and
        functions are shared with the top-level graph."""
        target, what = self._target, "createVirtualGraph"
        per_ipu = target.getTilesPerIPU()
        if len(args) == 1 and not isinstance(args[0], (list, tuple, np.ndarray)):
            n = checked_int(args[0], f"{what}: numTilesPerIPU", 1)
            if n > per_ipu:
                raise InvalidArgumentError(f"{what}: {n} tiles per IPU, but an IPU of this graph has "
                                           f"{per_ipu}")
            tiles = (np.arange(target.getNumIPUs(), dtype=np.int64)[:, None] * per_ipu + np.arange(n)).ravel()
            sub = replace(target, tilesPerIPU=n)
        else:
            if len(args) == 2:
                lower = checked_int(args[0], f"{what}: lowerTile", None)
                upper = checked_int(args[1], f"{what}: upperTile", None)
                if lower >= upper:
                    raise InvalidArgumentError(f"{what}: lowerTile {lower} must be below upperTile {upper}")
                if lower < 0 or upper > self._num_tiles:  # checked before a tile list is built
                    raise InvalidTileMappingError(f"{what}: tiles [{lower}, {upper}) are out of range (the "
                                                  f"target has {self._num_tiles} tiles)")
                tiles = np.arange(lower, upper, dtype=np.int64)
            elif len(args) == 1:
                listed = checked_ints(args[0], f"{what}: tiles")
                tiles = np.asarray([checked_tile(t, self._num_tiles, what) for t in listed], dtype=np.int64)
                if not tiles.size or np.unique(tiles).size != tiles.size:
                    raise InvalidArgumentError(f"{what}: the tiles {tiles[:8].tolist()} must be distinct and "
                                               "at least one")
            else:
                raise InvalidArgumentError(f"{what} takes (numTilesPerIPU), (lowerTile, upperTile) or "
                                           "(tiles)")
            counts = np.unique(tiles // per_ipu, return_counts=True)[1]
            even = bool((counts == counts[0]).all())  # as many tiles on each IPU used
            sub = replace(target, numIPUs=counts.size, tilesPerIPU=int(counts[0])) if even \
                else replace(target, numIPUs=1, tilesPerIPU=tiles.size)
        view = copy.copy(self)  # shares every table: a view, not a copy of the graph
        view._target, view._num_tiles = sub, int(tiles.size)
        view._tiles = self._absolute(tiles).tolist()
        return view

    def _new_variable(self, type_: Type, shape: Sequence[int], name: str, constant: bool) -> Tensor:
        name = name or f"{'constant' if constant else 'variable'}{self._vars.num_variables}"
        shape_t = checked_shape(shape, f"{'constant' if constant else 'variable'} '{name}'")
        nbytes = math.prod(shape_t) * type_.size
        if nbytes > self._vars.capacity:
            raise GraphMemoryAllocationError(
                f"variable '{name}' of shape {list(shape_t)} needs {nbytes} bytes, more than all "
                f"{self._top._num_tiles} tiles hold ({self._target.getBytesPerTile()} bytes each, "
                f"{self._vars.capacity} in all)")
        var = self._vars.add(name, type_, shape_t, constant)
        if self._num_tiles == 1 and math.prod(shape_t):
            self._mapping.set(var, 0, math.prod(shape_t), self._absolute(0))
        return Tensor(self._vars, type_, shape_t, var, 0, contiguous_strides(shape_t), name)

    def addVariable(self, type_: Type | object, shape: Sequence[int], *args: Any,
                    mappingMethod: VariableMappingMethod | None = None, debugContext: Any = None,
                    name: Any = None) -> Tensor:
        """A new variable: ``addVariable(type, shape[, mappingMethod][, debugContext])``; the
        debug name (a string or a DebugContext) may also be given as ``name=``. A QUARTER variable
        takes its QUARTER_METADATA tensor as Poplar's ``addVariable(QUARTER, metadata, shape, ...)``
        (or after the shape); ``t.getMetadata()`` returns it."""
        method = mappingMethod or VariableMappingMethod.NONE
        name = label(name, debugContext, "addVariable")
        metadata = None
        if isinstance(shape, Tensor):
            metadata, shape, args = shape, args[0] if args else None, args[1:]
        for a in args:
            if isinstance(a, VariableMappingMethod):
                method = a
            elif isinstance(a, Tensor):
                metadata = a
            else:
                name = debug_name(a, "addVariable")
        type_ = asType(type_)
        self._check_metadata(type_, metadata, "addVariable")
        t = self._new_variable(type_, shape, name, constant=False)
        if metadata is not None:
            self._vars.metadata[self._vars.num_variables - 1] = metadata
        if method is VariableMappingMethod.LINEAR:
            n = t.numElements()
            if n:
                per_tile = -(-n // self._num_tiles)
                begin = np.arange(0, n, per_tile, dtype=np.int64)
                self._mapping.set_runs(t.runs().take_ranges(begin, np.minimum(begin + per_tile, n))[0],
                                       self._absolute(np.arange(begin.size, dtype=np.int64)))
        return t

    def addConstant(self, type_: Type | object, shape: Sequence[int], values: Any, name: Any = "",
                    debugContext: Any = None) -> Tensor:
        """A constant tensor: values is a scalar (fills every element), a list or a numpy array."""
        type_ = asType(type_)
        name = label(name, debugContext, "addConstant") or f"constant{self._vars.num_variables}"
        n = math.prod(checked_shape(shape, f"constant '{name}'"))
        if n == 1 and constant_pool.takes(values):  # converted with the others of its type, in bulk
            t = self._new_variable(type_, shape, name, constant=True)
            self._pool.add(self._vars.num_variables - 1, type_, values)
            return t
        values = _values(values, n, type_, f"constant '{name}'")  # checked before the graph changes
        t = self._new_variable(type_, shape, name, constant=True)
        self._initial[self._vars.num_variables - 1] = values
        return t

    def _values_for(self, t: Tensor, values: Any, what: str) -> np.ndarray:
        return _values(values, t.numElements(), t.elementType(), f"{what} '{t.name}'")

    def clone(self, *args: Any, **kwargs: Any) -> Tensor:
        """A new variable with the shape and tile mapping of ``t``: ``clone(t[, name][, method])`` or
        ``clone(type, t[, name][, method])``. By default (``PRESERVE_ORDER_UNLESS_ALIASES``) its
        elements lie in memory in the order of ``t``'s elements in theirs, so each tile holds its part
        of the clone as it holds its part of ``t`` (a block-major ``t`` gives a block-major clone);
        ``CREATE_NEW_ORDER``, or a ``t`` with aliases, gives the row-major order of ``addVariable``."""
        if not args:
            raise InvalidArgumentError("clone needs a tensor: clone(t[, name]) or clone(type, t[, name])")
        metadata = None
        if isinstance(args[0], Tensor):
            type_, t, rest = args[0].elementType(), args[0], args[1:]
        elif len(args) > 2 and isinstance(args[1], Tensor) and isinstance(args[2], Tensor):
            type_, metadata, t, rest = asType(args[0]), args[1], args[2], args[3:]  # (type, metadata, t)
        else:
            type_, t, rest = asType(args[0]), args[1] if len(args) > 1 else None, args[2:]
        self._check_own(t, "clone")
        if metadata is None and type_ == t.elementType() and t.hasMetadata():
            metadata = t.getMetadata()  # a QUARTER clone shares its original's metadata
        self._check_metadata(type_, metadata, "clone")
        labels = [a for a in rest if not isinstance(a, TensorCloneMethod)]
        labels += [kwargs[k] for k in ("debugContext", "name") if k in kwargs]
        name = (debug_name(labels[0], "clone") if labels else "") or f"{t.name}.clone"
        method = next((a for a in rest if isinstance(a, TensorCloneMethod)),
                      kwargs.get("method", TensorCloneMethod.PRESERVE_ORDER_UNLESS_ALIASES))
        new = self._new_variable(type_, t.shape(), name, constant=False)
        if method is not TensorCloneMethod.CREATE_NEW_ORDER and not t.containsAliases() and t.numElements():
            ordered = in_order_of(t.runs(), int(new.runs().var[0]))
            if len(ordered) > 1:  # (one run: the row-major order of new)
                shape = tuple(t.shape())
                new = Tensor.from_boxes(self._vars, type_, shape, box_views.from_runs(ordered, shape), name)
        pieces, tiles = self._mapping.tiles_of(t.runs())
        mapped = tiles >= 0
        if mapped.any():
            start = pieces.flat_start(t.runs())[mapped]
            flat = new.runs()
            self._mapping.set_runs(flat.take_ranges(start, start + pieces.count[mapped])[0], tiles[mapped])
        if metadata is not None:
            self._vars.metadata[self._vars.num_variables - 1] = metadata
        return new

    def _check_metadata(self, type_: Type, metadata: Tensor | None, what: str) -> None:
        """A metadata tensor goes with QUARTER only, and is one QUARTER_METADATA element of this graph."""
        if metadata is None:
            return
        if not type_.requiresMetadata():
            raise TensorCreationError(f"{what}: a metadata tensor is for QUARTER variables only, not {type_}")
        self._check_own(metadata, f"{what}: the metadata")
        if metadata.elementType() != QUARTER_METADATA or metadata.numElements() != 1:
            raise PoplarTypeError(f"{what}: the metadata must be one QUARTER_METADATA element, got "
                                  f"'{metadata.name}' ({metadata.elementType()}, shape {metadata.shape()})")

    def cloneN(self, t: Tensor, N: int, name: Any = "") -> Tensor:
        self._check_own(t, "cloneN")
        if checked_int(N, "cloneN: N") * t.numElements() * t.elementType().size > self._vars.capacity:
            raise GraphMemoryAllocationError(f"cloneN: {N} clones of tensor '{t.name}' need more than all "
                                             f"{self._num_tiles} tiles hold ({self._vars.capacity} bytes)")
        base = debug_name(name, "cloneN") or t.name
        clones = [self.clone(t, f"{base}.clone{i}").expand([0]) for i in range(N)]
        return concat(clones, 0)

    def getVariable(self, var: VariableRef | int) -> Tensor:
        index = self._variable(var, "getVariable")
        shape = self._vars.shapes[index]
        return Tensor(self._vars, self._vars.types[index], shape, index, 0, contiguous_strides(shape),
                      self._vars.names[index])

    def isConstant(self, var: VariableRef | int) -> bool:
        return bool(self._vars.constant[self._variable(var, "isConstant")])

    def _variable(self, var: object, what: str) -> int:
        """The index of a variable given as a VariableRef or an index."""
        index = var.index if isinstance(var, VariableRef) else checked_int(var, f"{what}: the variable")
        if not 0 <= index < self._vars.num_variables:
            raise InvalidArgumentError(f"{what}: no variable {index} (the graph has "
                                       f"{self._vars.num_variables})")
        return index

    def setInitialValue(self, target: Tensor | FieldRef, values: Any) -> None:
        """Initial value of a variable at engine load, or of a vertex state field."""
        if isinstance(target, FieldRef):
            self._set_state(target, values)
            return
        self._check_own(target, "setInitialValue")
        if target.containsConstant():
            raise PoplarError(f"setInitialValue: tensor '{target.name}' contains constants")
        vals = self._values_for(target, values, "initial value of")
        var, offset = target.runs().elements()
        for v in unique_sorted(var).tolist():
            init = self._initial.get(v)
            if init is None:
                init = self._initial[v] = np.zeros(self._vars.sizes[v], self._vars.types[v].dtype)
            elif not init.flags.writeable:  # a frozen graph's IR holds these values
                init = self._initial[v] = init.copy()
            sel = var == v
            same_size = vals.dtype.itemsize == init.itemsize
            init[offset[sel]] = vals[sel].view(init.dtype) if same_size else vals[sel]

    def setInitialValueHalf(self, t: Tensor, values: Any) -> None:
        """``setInitialValue`` of a HALF tensor from its elements' 16-bit patterns (see
        :mod:`poplar_py.builder.half_values`)."""
        self._check_own(t, "setInitialValueHalf")
        checked_half(t.elementType(), f"setInitialValueHalf of tensor '{t.name}'")
        self.setInitialValue(t, half_bits(values, f"setInitialValueHalf of tensor '{t.name}'"))

    def addConstantHalf(self, type_: Type | object, shape: Sequence[int], values: Any, name: Any = "",
                        debugContext: Any = None) -> Tensor:
        """``addConstant`` of HALF ``type_`` from 16-bit patterns: one (filling every element) or
        one per element."""
        checked_half(type_, "addConstantHalf")
        return self.addConstant(HALF, shape, half_bits(values, "addConstantHalf"), name, debugContext)

    def _check_own(self, t: object, what: str) -> Tensor:
        if not isinstance(t, Tensor):
            raise InvalidArgumentError(f"{what}: expected a Tensor, got {type(t).__name__} {t!r:.40}")
        if t.variables is not self._vars:
            raise PoplarError(f"{what}: tensor '{t.name}' belongs to another graph")
        return t

    def getSortedContiguousRegions(self, t: Tensor, regions: Any, removeAliasedIntervals: Any = False,
                                   aliases: list[int] | None = None) -> list[list[Interval]]:
        """Intervals of ``t`` grouped into sequences contiguous in memory, in memory order (see
        :func:`~poplar_py.builder.sorted_regions.sorted_contiguous_regions`)."""
        self._check_own(t, "getSortedContiguousRegions")
        return sorted_contiguous_regions(t, regions, removeAliasedIntervals, aliases)

    # ---- dumps -------------------------------------------------------------------------------
    def outputVertexGraph(self, file: Any, progs: Any = None) -> None:
        """Write the vertex graph (each vertex, the variables it is connected to, an edge per field)
        as Graphviz dot to ``file``, a path or an open file; given programs, only the compute sets
        they execute (:mod:`poplar_py.builder.graph_dump`)."""
        self._dump(file, progs, graph_dump.vertex_graph, "outputVertexGraph")

    def outputComputeGraph(self, file: Any, progs: Any = None) -> None:
        """Write the compute graph (compute sets and the variables they read and write) as Graphviz
        dot to ``file``; given programs, only the compute sets they execute."""
        self._dump(file, progs, graph_dump.compute_graph, "outputComputeGraph")

    def _dump(self, file: Any, progs: Any, dump: Callable[..., str], what: str) -> None:
        programs, _ = graph_dump.programs_and_format(() if progs is None else (progs,), what)
        graph_dump.write(file, dump(self.freeze(), programs), what)

    def serialize(self, file: Any, *args: Any) -> None:
        """Write the graph to ``file`` (a path or an open file): ``serialize(file[, progs][,
        format])`` with ``poplar.SerializationFormat.JSON`` (the default) or ``Binary``. The format
        is described in :mod:`poplar_py.builder.graph_dump`."""
        programs, fmt = graph_dump.programs_and_format(args, "serialize")
        graph_dump.write(file, graph_dump.serialized(self.freeze(), programs, fmt), "serialize")

    # ---- freezing ----------------------------------------------------------------------------
    def freeze(self) -> ir.GraphIR:
        """The graph as it is now, as an immutable IR (what an Engine compiles)."""
        table = self._vertices
        rows = table.vertex_columns()
        mapping, tiles = self._mapping.snapshot()
        self._pool.flush(self._initial)
        num_cs = len(self._compute_sets)
        vertices = ir.freeze_vertices(table.classes, rows, table.sources, num_cs, table.store.freeze(),
                                      table.num_edges())
        handles = {name: ir.HostHandleIR(name, h.write, h.tensor.runs(), h.tensor.elementType(),
                                         tuple(h.tensor.shape()))
                   for name, h in self._host_handles.items()}
        repeats = table.edge_columns(ir.REPEAT_COLUMNS) if table.one_by_one else None
        order = ir.edge_order(*table.edge_columns(ir.ORDER_COLUMNS), rows[:, 1], repeats)
        edges = ir.freeze_edges(table.edge_columns(ir.IR_COLUMNS, order), rows[:, 1], num_cs)
        return ir.GraphIR(
            self._top._target, self._vars, ir.freeze_variables(self._vars), mapping, tiles,
            ir.freeze_initial(self._initial), vertices, edges, tuple(self._compute_sets),
            tuple(self._functions), handles, dict(self._streams), dict(self._perf_estimators),
            self._replicas, self._device_target, tuple(self._replica_index_constants),
            np.frombuffer(table.values, np.int64).reshape(-1, 2).copy(), dict(self._remote_buffers))
