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
from .builder.bulk_vertices import (
    Rows,
    add_list_vertices,
    add_shared_edges,
    set_perf_estimates,
    set_shared_state,
    set_vector_state,
)
from .builder.field_connections import FieldConnector, unknown_field
from .builder.half_values import checked_half, half_bits
from .builder.mapping_table import MappingTable
from .builder.sorted_regions import sorted_contiguous_regions
from .builder.strided_block import contiguous_strides
from .builder.variable_table import VariableRef, VariableTable
from .builder.vertex_table import PERF, TILE, FieldSlot, VertexTable
from .checks.arguments import (
    cast_values,
    checked_bool,
    checked_int,
    checked_intervals,
    checked_ints,
    checked_shape,
    checked_str,
    checked_tile,
    checked_values,
)
from .debug import debug_name, label
from .errors import (
    GraphConnectionError,
    GraphMemoryAllocationError,
    GraphReplicationError,
    InvalidArgumentError,
    InvalidTileMappingError,
    PoplarError,
    PoplarTypeError,
    RemoteBufferError,
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
from .host_function import HostFunction, checked_arguments
from .program import Program
from .regions.arrays import unique_sorted
from .regions.runs import in_order_of
from .target import Device, Target
from .tensor import Interval, Tensor, concat
from .types import HALF, QUARTER_METADATA, UNSIGNED_INT, Type, asType
from .vertex_types.loading import CodeletFileType, caller_location
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


class Graph:
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

    # ---- tile mapping ------------------------------------------------------------------------
    def _check_tile(self, tile: object, what: str) -> int:
        """A tile of this graph (relative in a virtual graph), as an absolute tile."""
        return self._absolute(checked_tile(tile, self._num_tiles, what))

    def _absolute(self, tiles: Any) -> Any:
        """Tile ids of this graph (an int or an array) as the top-level graph's."""
        if self._tiles is None:
            return tiles
        if isinstance(tiles, np.ndarray):
            return np.asarray(self._tiles, dtype=np.int64)[tiles]
        return self._tiles[tiles]

    def setTileMapping(self, target: Tensor | VertexRef, mapping: Any) -> None:
        """Place a vertex on a tile, or map tensor elements: to one tile, or by a per-tile
        list of intervals over the flattened tensor."""
        if type(mapping) is int and 0 <= mapping < self._num_tiles:  # the common cases, first
            tile = mapping if self._tiles is None else self._tiles[mapping]
            if type(target) is VertexRef and target.graph is self:
                self._vertices.put(target.id, TILE, tile)
                return
            run = target.as_run() if type(target) is Tensor else None
            if run is not None and (run[3] == 1 or run[2] == 1) and target.variables is self._vars:
                self._mapping.set(run[0], run[1], run[1] + run[2], tile)
                return
        if type(target) is VertexRef:
            vid = self._own_vertex(target, "setTileMapping")
            self._vertices.put(vid, TILE, self._check_tile(mapping, self._vertices.describe(vid)))
            return
        if not isinstance(target, Tensor):
            raise InvalidArgumentError(f"setTileMapping: expected a Tensor or a VertexRef, got "
                                       f"{target!r:.60}")
        if target.variables is not self._vars:
            self._check_own(target, "setTileMapping")
        if isinstance(mapping, (int, np.integer)):
            tile = self._check_tile(mapping, f"tensor '{target.name}'")
            runs = target.runs()
            self._mapping.set_runs(runs, np.full(len(runs), tile, dtype=np.int64))
            return
        per_tile = checked_intervals(mapping, f"setTileMapping of tensor '{target.name}'")
        try:
            pairs = np.array([iv for ivs in per_tile for iv in ivs], dtype=np.int64).reshape(-1, 2)
        except OverflowError:
            raise InvalidTileMappingError(f"tensor '{target.name}': an interval is outside its "
                                          f"{target.numElements()} elements") from None
        tiles = np.repeat(np.arange(len(per_tile), dtype=np.int64), [len(ivs) for ivs in per_tile])
        self.map_intervals(target, pairs[:, 0], pairs[:, 1], tiles)

    def map_intervals(self, t: Tensor, begin: np.ndarray, end: np.ndarray, tiles: np.ndarray) -> None:
        """The libraries' bulk ``setTileMapping``: elements ``[begin[j], end[j])`` of flattened ``t``
        to tile ``tiles[j]`` (numpy arrays; where intervals overlap, the later one wins)."""
        self._check_own(t, "setTileMapping")
        begin, end, tiles = (np.asarray(a, dtype=np.int64) for a in (begin, end, tiles))
        n = t.numElements()
        bad_tile = (tiles < 0) | (tiles >= self._num_tiles)
        bad = np.flatnonzero(bad_tile | (begin < 0) | (begin > end) | (end > n))
        if bad.size:  # the first bad interval, or its tile
            j = int(bad[0])
            if bad_tile[j]:
                self._check_tile(int(tiles[j]), f"tensor '{t.name}'")
            raise InvalidTileMappingError(f"tensor '{t.name}': interval [{int(begin[j])}, {int(end[j])}) is "
                                          f"outside its {n} elements")
        if begin.size:
            runs, owner = t.runs().take_ranges(begin, end)
            self._mapping.set_runs(runs, self._absolute(tiles)[owner])

    def getTileMapping(self, t: Tensor, requireComplete: bool = True) -> list[list[Interval]]:
        """Per tile, the intervals of the flattened tensor that live there (maximal runs)."""
        if not isinstance(requireComplete, (bool, np.bool_)):
            raise InvalidArgumentError(f"getTileMapping: requireComplete must be a bool, got "
                                       f"{requireComplete!r:.40}")
        result: list[list[Interval]] = [[] for _ in range(self._num_tiles)]
        for b, e, tile in zip(*(a.tolist() for a in self.tile_intervals(t, requireComplete))):
            result[tile].append(Interval(b, e))
        return result

    def tile_intervals(self, t: Tensor, requireComplete: bool = True
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``getTileMapping`` as arrays: the maximal intervals ``[begin, end)`` of the flattened
        tensor on one tile each, in order, and their tiles (unmapped elements left out)."""
        self._check_own(t, "getTileMapping")
        runs = t.runs()
        if not len(runs):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        pieces, tiles = self._mapping.tiles_of(runs)
        start = pieces.flat_start(runs)
        if self._tiles is not None:  # relative ids; -1 for tiles outside this virtual graph
            relative = np.full(self._top.getTarget().getNumTiles() + 1, -1, dtype=np.int64)
            relative[np.asarray(self._tiles)] = np.arange(self._num_tiles)
            tiles = relative[tiles]
        if requireComplete and (tiles < 0).any():
            first = int(start[np.flatnonzero(tiles < 0)[0]])
            where = "has no tile" if self._tiles is None else "has no tile in this virtual graph"
            raise InvalidTileMappingError(
                f"tensor '{t.name}' is not completely mapped: element {first} (flattened) {where}")
        first = np.flatnonzero(np.concatenate(([True], tiles[1:] != tiles[:-1])))
        ends = np.append(start[first[1:]], t.numElements())
        keep = tiles[first] >= 0
        return start[first][keep], ends[keep], tiles[first][keep]

    # ---- codelets and vertices ---------------------------------------------------------------
    def addCodelets(self, src: Any, fileType: CodeletFileType | str = CodeletFileType.Auto,
                    compileFlags: str = "", *_: Any) -> bool:
        """Register vertex classes: a ``.py`` path, a module, a class, or a list of them; or a C++
        file (``.cpp``), or C++ source text with ``CodeletFileType.CppSource`` (or an
        ``io.StringIO``), compiled with clang and ``compileFlags`` as Poplar's ``popc`` would.

        Each class is checked (parsed and typed) now; unsupported Python raises
        CodeletCompileError naming the file and line, C++ that cannot run a CodeletError. A
        class with type parameters is a template: ``addVertex(cs, "Name<float>")`` instantiates
        and checks it. The second argument may be the compile flags, as Poplar's overloads allow.
        A vertex type has one definition per graph, as in Poplar: another class (or C++ vertex)
        under a name already added raises CodeletCompileError naming both; adding the same class
        again does nothing. Returns whether any class was new.
        """
        if isinstance(fileType, str):
            fileType, compileFlags = CodeletFileType.Auto, fileType or compileFlags
        if not isinstance(fileType, CodeletFileType) or not isinstance(compileFlags, str):
            raise InvalidArgumentError(
                f"addCodelets: the file type must be a CodeletFileType and compileFlags a string, got "
                f"{fileType!r:.40} and {compileFlags!r:.40}")
        return self._codelets.add(src, fileType, compileFlags)

    def hasCodelet(self, name: str) -> bool:
        name = checked_str(name, "hasCodelet: the vertex type")
        return self._codelets.lookup(name, required=False) is not None

    def addComputeSet(self, debugName: Any = "", debugContext: Any = None) -> ComputeSet:
        name = label(debugName, debugContext, "addComputeSet")
        cs = ComputeSet(len(self._compute_sets), name or f"cs{len(self._compute_sets)}", self._vars.token)
        self._compute_sets.append(cs.name)
        return cs

    def _class_id(self, vertexType: str, cs: ComputeSet) -> int:
        """The vertex table's class id of a registered codelet, checking ``cs`` is this graph's."""
        cid = self._vertex_types.get(vertexType) if type(vertexType) is str else None
        if cid is None:
            if not isinstance(vertexType, str):
                raise InvalidArgumentError(f"addVertex: the vertex type must be a name, got "
                                           f"{vertexType!r:.60}")
            cid = self._vertex_types[vertexType] = self._vertices.class_id(self._codelets.lookup(vertexType))  # type: ignore[arg-type]
        if type(cs) is not ComputeSet:
            raise InvalidArgumentError(f"addVertex: expected a ComputeSet, got {type(cs).__name__} "
                                       f"{cs!r:.40}")
        if cs.owner != self._vars.token or cs.id >= len(self._compute_sets):
            raise PoplarError(f"addVertex: {cs!r} is not a compute set of this graph")
        return cid

    def addVertex(self, cs: ComputeSet, vertexType: str, connections: dict | None = None) -> VertexRef:
        """Add an instance of a registered codelet to ``cs``, optionally connecting fields."""
        cid = self._class_id(vertexType, cs)
        table = self._vertices
        if connections is not None and type(connections) is not dict:
            raise InvalidArgumentError(f"addVertex: connections must be a dict of field name to tensor, "
                                       f"got {type(connections).__name__}")
        edge_bytes = len(table.edges)
        vid = table.add(cid, cs.id, caller_location())
        if connections:
            slots = table.fields[cid]
            try:
                for name, value in connections.items():
                    slot = slots.get(name)
                    if slot is not None and slot.plain and type(value) is Tensor:  # the common case, inline
                        run = value.edge_run(self._vars, slot.type, slot.rank, slot.writes)
                        if run is not None and table.connect_run(vid, slot.index, run):
                            continue
                    self._fields.connect(vid, slots, name, None, value)
            except PoplarError:
                table.remove_last(vid, edge_bytes)
                raise
        return VertexRef(self, vid)

    def add_vertices(self, cs: ComputeSet, vertexType: str, tiles: np.ndarray,
                     lists: dict[str, tuple[Tensor, Rows]], shared: dict[str, Tensor] | None = None,
                     state: dict[str, Any] | None = None,
                     vector_state: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
                     each: dict[str, tuple[Sequence[Tensor], np.ndarray]] | None = None,
                     perf: np.ndarray | None = None) -> range:
        """The libraries' bulk ``addVertex``: ``len(tiles)`` vertices of ``vertexType`` in ``cs``,
        vertex ``v`` on tile ``tiles[v]``, whose list and vector fields ``lists`` connect to rows of
        tensors (``(tensor, bulk.Rows)``; a vector takes one row), fields ``shared`` to one tensor
        each and state fields ``state`` to one value each, the same for every vertex;
        ``vector_state`` gives state vectors as ``(values, per_vertex)``, vertex ``v`` taking the
        next ``per_vertex[v]`` values; fields ``each`` (not lists) as ``(tensors, which)``, vertex
        ``v`` connected to ``tensors[which[v]]``; ``perf`` the vertices' perf estimates, as
        ``setPerfEstimate`` on each. Returns the new vertices' ids; on an error the graph is left
        as it was."""
        cid = self._class_id(vertexType, cs)
        for name, (t, _) in lists.items():
            self._check_own(t, f"add_vertices: field '{name}'")
        tiles = np.asarray(tiles, dtype=np.int64)
        bad = tiles[(tiles < 0) | (tiles >= self._num_tiles)]
        if bad.size:
            raise InvalidTileMappingError(f"add_vertices of {vertexType}: tile {int(bad[0])} is out of range "
                                          f"for {self._num_tiles} tiles")
        perf = None if perf is None else self._bulk_perf(perf, tiles.size, vertexType)
        plain = {name: ([t], np.zeros(tiles.size, np.int64)) for name, t in (shared or {}).items()}
        plain.update((name, (ts, np.asarray(which, np.int64))) for name, (ts, which) in (each or {}).items())
        table = self._vertices
        edge_bytes, first = len(table.edges), table.num_vertices
        vids = range(first, first + tiles.size)
        try:
            add_list_vertices(table, cid, cs.id, caller_location(), self._absolute(tiles), lists,
                              lambda: f"vertices {first}.. ({vertexType})")
            slots = table.fields[cid]
            for name, (values, per_vertex) in (vector_state or {}).items():
                set_vector_state(table, first, self._fields.state_slot(first, name), values, per_vertex)
            for name, value in (state or {}).items():
                set_shared_state(table, first, tiles.size, *self._fields.state_values(first, name, value))
            for name, (ts, which) in plain.items():
                slot = slots.get(name)
                runs = [t.edge_run(self._vars, slot.type, slot.rank, slot.writes)
                        if slot is not None and slot.plain and type(t) is Tensor else None for t in ts]
                if which.shape != tiles.shape or ((which < 0) | (which >= len(ts))).any():
                    raise GraphConnectionError(f"add_vertices of {vertexType}: field '{name}' must name one "
                                               f"of its {len(ts)} tensors for each of the {tiles.size} "
                                               "vertices")
                if None not in runs:
                    add_shared_edges(table, first, tiles.size, slot.index,
                                     np.asarray(runs, np.int64).reshape(-1, 4)[which])
                    continue
                for vid, k in zip(vids, which.tolist()):  # the checks and the general case
                    self._fields.connect(vid, slots, name, None, ts[k])
            if perf is not None:
                set_perf_estimates(table, first, perf)
        except PoplarError:
            table.remove_last(first, edge_bytes)
            raise
        return vids

    @staticmethod
    def _bulk_perf(perf: Any, n: int, vertexType: str) -> np.ndarray:
        """``add_vertices``' perf estimates checked: ``n`` integers, none negative."""
        cycles = np.asarray(perf)
        if cycles.shape != (n,) or not (cycles.dtype.kind in "iu" and (cycles >= 0).all()):
            raise InvalidArgumentError(f"add_vertices of {vertexType}: perf must be {n} integers of at least "
                                       f"0, one per vertex, got {cycles.dtype} of shape {cycles.shape}")
        return cycles.astype(np.int64)

    def getNumVertices(self) -> int:
        return self._vertices.num_vertices

    def vertex_fields(self, vid: int) -> dict[str, FieldSlot]:
        """The fields of vertex ``vid``'s class (for handles)."""
        return self._vertices.slots(vid)

    def describe_vertex(self, vid: int) -> str:
        return self._vertices.describe(vid)

    def unknown_field(self, vid: int, name: str) -> str:
        return unknown_field(self._vertices, vid, name)

    def _own_vertex(self, v: object, what: str) -> int:
        """The id of vertex ``v`` (a VertexRef, or a FieldRef's vertex) of this graph."""
        ref = v.vertex if isinstance(v, FieldRef) else v
        if not isinstance(ref, VertexRef):
            raise InvalidArgumentError(f"{what}: expected a vertex or a vertex field, got {type(v).__name__}")
        if not (isinstance(ref.graph, Graph) and ref.graph._vertices is self._vertices):
            raise GraphConnectionError(f"{what}: {ref!r} belongs to another graph")
        return ref.id

    def connect(self, ref: FieldRef, value: Any) -> None:
        """Connect a field to a tensor, a list of tensors, or (Input fields) a constant value."""
        vid = self._own_vertex(ref, "connect")
        self._fields.connect(vid, self._vertices.slots(vid), ref.name, ref.index, value)

    def setFieldSize(self, ref: FieldRef, size: int) -> None:
        vid = self._own_vertex(ref, "setFieldSize")
        self._fields.set_size(vid, ref.name, size)

    def getFieldSize(self, ref: FieldRef) -> int:
        vid = self._own_vertex(ref, "getFieldSize")
        return self._fields.size(vid, ref.name)

    def _set_state(self, ref: FieldRef, values: Any) -> None:
        self._fields.set_state(self._own_vertex(ref, "setInitialValue"), ref.name, values)

    def _value_constant(self, type_: Type, shape: list[int], values: Any, name: str, vid: int) -> Tensor:
        """The constant for a field of vertex ``vid`` connected to ``values`` (checked numbers): a
        variable, its values and its vertex, no more (the Engine maps it to the vertex's tile)."""
        shape_t = tuple(shape)
        var = self._vars.add(name, type_, shape_t, True)
        if constant_pool.takes(values):
            self._pool.add(var, type_, values)
        else:
            self._initial[var] = cast_values(values, type_.dtype)
        self._vertices.add_value(var, vid)
        return Tensor(self._vars, type_, shape_t, var, 0, contiguous_strides(shape_t), name)

    def setPerfEstimate(self, v: VertexRef, cycles: int, flops: int = 0) -> None:
        """Cycles this vertex takes (worker cycles for a Vertex, tile cycles for a MultiVertex)."""
        vid = self._own_vertex(v, "setPerfEstimate")
        cycles = checked_int(cycles, f"setPerfEstimate of {self._vertices.describe(vid)}")
        self._vertices.put(vid, PERF, cycles)

    setCycleEstimate = setPerfEstimate

    def registerPerfEstimator(self, vertexType: str, estimator: PerfEstimator) -> None:
        """Per-type estimator ``f(vertex_introspector, target) -> cycles | (cycles, flops) |
        VertexPerfEstimate``; it replaces one registered before for the type (PopLibs' own
        included), and ``setPerfEstimate`` on a vertex wins over both."""
        checked_str(vertexType, "registerPerfEstimator: the vertex type")
        if not callable(estimator):
            raise InvalidArgumentError(f"registerPerfEstimator('{vertexType}'): the estimator must be a "
                                       f"function, got {type(estimator).__name__} {estimator!r:.40}")
        self._perf_estimators[vertexType] = estimator

    def hasPerfEstimator(self, vertexType: str) -> bool:
        """Whether an estimator is registered for ``vertexType`` (a poplar-py addition: libraries
        register theirs only where the user has not)."""
        return vertexType in self._perf_estimators

    # ---- host exchange -----------------------------------------------------------------------
    def _new_handle(self, handle: str, what: str, error: type[PoplarError] = PoplarError) -> None:
        checked_str(handle, f"{what}: the handle")
        if handle in self._host_handles or handle in self._streams or handle in self._remote_buffers \
                or handle in self._host_functions:
            raise error(f"{what}: handle '{handle}' is already used by another stream, host read/write or "
                        "remote buffer")

    def createHostWrite(self, handle: str, t: Tensor, rearrangeOnHost: bool = False) -> None:
        """Let ``engine.writeTensor(handle, array)`` write ``t`` from the host."""
        self._new_handle(handle, "createHostWrite")
        self._check_own(t, f"createHostWrite('{handle}')")
        if t.containsConstant():
            raise PoplarError(f"createHostWrite('{handle}'): tensor '{t.name}' contains constants")
        self._host_handles[handle] = HostHandle(handle, t, write=True)

    def createHostRead(self, handle: str, t: Tensor, rearrangeOnHost: bool = False) -> None:
        """Let ``engine.readTensor(handle)`` read ``t`` back to the host."""
        self._new_handle(handle, "createHostRead")
        self._check_own(t, f"createHostRead('{handle}')")
        self._host_handles[handle] = HostHandle(handle, t, write=False)

    def addHostToDeviceFIFO(self, handle: str, type_: Type | object, numElements: int, *args: Any,
                            replicatedMode: ReplicatedStreamMode | None = None, options: Any = None
                            ) -> DataStream:
        """A host-to-device FIFO: ``(handle, type, numElements[, replicatedMode][, options])``. In a
        replicated graph each replica reads its own host stream (``REPLICATE``, the default), or
        all read one (``BROADCAST``)."""
        self._new_handle(handle, "addHostToDeviceFIFO")
        modes = [a for a in (*args, replicatedMode) if isinstance(a, ReplicatedStreamMode)]
        s = DataStream(handle, asType(type_), checked_int(numElements, f"stream '{handle}': numElements"),
                       toDevice=True, replicatedMode_=modes[0] if modes else ReplicatedStreamMode.REPLICATE,
                       replicationFactor_=self._replicas)
        self._streams[handle] = s
        return s

    def addDeviceToHostFIFO(self, handle: str, type_: Type | object, numElements: int, *_: Any) -> DataStream:
        self._new_handle(handle, "addDeviceToHostFIFO")
        s = DataStream(handle, asType(type_), checked_int(numElements, f"stream '{handle}': numElements"),
                       toDevice=False, replicationFactor_=self._replicas)
        self._streams[handle] = s
        return s

    def addRemoteBuffer(self, handle: str, type_: Type | object, numElements: int, repeats: int = 1,
                        rearrangeOnHost: bool = False, optimisedForMemory: bool = False) -> RemoteBuffer:
        """A buffer of ``repeats`` rows of ``numElements`` elements in Streaming Memory, the DRAM
        beside the IPUs: each replica has rows of its own, which programs copy to and from tile
        memory (``program.Copy``) and the host reads and writes by row. No tile memory is used;
        rows take host memory when first written (a row never written reads as zeros).
        ``rearrangeOnHost`` and ``optimisedForMemory`` are Poplar's layout hints: accepted, with no
        effect here."""
        self._new_handle(handle, "addRemoteBuffer", RemoteBufferError)
        what = f"addRemoteBuffer('{handle}')"
        hints = [checked_bool(v, f"{what}: {k}") for k, v in (("rearrangeOnHost", rearrangeOnHost),
                                                               ("optimisedForMemory", optimisedForMemory))]
        buffer = RemoteBuffer(handle, asType(type_), checked_int(numElements, f"{what}: numElements", 1),
                              checked_int(repeats, f"{what}: repeats", 1), *hints, owner=self._vars.token)
        if not self._target.supportsRemoteBuffers():
            raise RemoteBufferError(f"{what}: the target ({self._target.getTargetArchString()}) has no "
                                    "Streaming Memory: remote buffers need IPU-Machines (ipu2, ipu21)")
        self._remote_buffers[handle] = buffer
        return buffer

    def addFunction(self, program: Program) -> Function:
        """Register control code once; run it with ``program.Call(function)``."""
        if not isinstance(program, Program):
            raise InvalidArgumentError(f"addFunction needs a program, got {type(program).__name__} "
                                       f"{program!r:.40}")
        self._functions.append(program)
        return Function(len(self._functions) - 1, self._vars.token)

    def addHostFunction(self, handle: str, inputs: Any, outputs: Any) -> HostFunction:
        """A function of the host that ``program.Call(f, inputTensors, outputTensors)`` runs, with
        ``inputs`` and ``outputs`` lists of ``(type, numElements)`` (see :mod:`poplar_py.host_function`);
        ``Engine.connectHostFunction`` gives it its Python function."""
        self._new_handle(handle, "addHostFunction")
        what = f"addHostFunction('{handle}')"
        f = HostFunction(handle, checked_arguments(inputs, f"{what}: inputs"),
                         checked_arguments(outputs, f"{what}: outputs"), self._vars.token)
        self._host_functions[handle] = f
        return f

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
