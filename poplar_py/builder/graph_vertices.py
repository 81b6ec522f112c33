"""Graph's codelet and vertex methods: codelets, compute sets, vertices one at a time or in bulk,
their fields, sizes and perf estimates (the vertex table is :mod:`vertex_table`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks.arguments import cast_values, checked_int, checked_str
from ..debug import label
from ..errors import GraphConnectionError, InvalidArgumentError, InvalidTileMappingError, PoplarError
from ..handles import ComputeSet, FieldRef, VertexRef
from ..ir import PerfEstimator
from ..tensor import Tensor
from ..types import Type
from ..vertex_types.loading import CodeletFileType, caller_location
from . import constant_pool
from .bulk_vertices import (
    Rows,
    add_list_vertices,
    add_shared_edges,
    set_perf_estimates,
    set_shared_state,
    set_vector_state,
)
from .field_connections import unknown_field
from .strided_block import contiguous_strides
from .vertex_table import PERF, FieldSlot


class GraphVertices:
    """The codelet and vertex part of :class:`~poplar_py.graph.Graph`, a mixin (the graph holds the
    tables)."""

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
        if not (isinstance(ref.graph, GraphVertices) and ref.graph._vertices is self._vertices):
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
