"""VertexIntrospector and FieldData: what a perf estimator sees of one vertex.

A perf estimator registered with ``graph.registerPerfEstimator(vertexType, f)`` is called, as
Poplar's ``PerfEstimateFunc``, with a :class:`VertexIntrospector` and the :class:`~poplar_py.Target`
when the engine is built: ``f(vertex, target)`` returns a ``VertexPerfEstimate`` (or cycles, or
``(cycles, flops)``). The estimate is the vertex's cycles on its tile in every run; nothing
runs on the tiles to make it. The introspector tells the sizes of the vertex's fields (the
tensors connected to its edges) and the values of its state fields.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .checks.arguments import checked_int, checked_str
from .compiler.computeset import ComputeSetPlan
from .errors import InvalidArgumentError, UnknownFieldError
from .handles import ComputeSet
from .ir import GraphIR
from .target import Target
from .types import asType
from .vertex import Direction, FieldKind, FieldSpec


class FieldData:
    """Poplar's ``FieldData``: one field of a vertex as its estimator sees it. ``size()`` is the
    number of elements of a scalar or vector field (1 for a scalar), the number of vectors of a
    vector list (``getSizeAtIndex(i)`` the length of vector ``i``), or the number of values of a
    state field."""

    def __init__(self, spec: FieldSpec, sizes: list[int] | int, values: np.ndarray | None = None,
                 vertex: str = "") -> None:
        self._spec, self._sizes, self._values, self._vertex = spec, sizes, values, vertex

    def name(self) -> str:
        return self._spec.name

    def rank(self) -> int:
        """0 for a scalar, 1 for a vector, 2 for a vector list."""
        return {FieldKind.SCALAR: 0, FieldKind.VECTOR: 1, FieldKind.VECTOR_LIST: 2}[self._spec.kind]

    def size(self) -> int:
        if self._values is not None:
            return int(self._values.size)
        return len(self._sizes) if isinstance(self._sizes, list) else self._sizes

    def getSizeAtIndex(self, i: int) -> int:
        """The length of vector ``i`` of a vector-list field."""
        what = f"getSizeAtIndex of field '{self._spec.name}'{self._vertex}"
        if not isinstance(self._sizes, list):
            raise InvalidArgumentError(f"{what}: the field is not a vector list (its rank is {self.rank()})")
        index = checked_int(i, f"{what}: the index i")
        if index >= len(self._sizes):
            raise InvalidArgumentError(f"{what}: the index i ({index}) is out of range: the field has "
                                       f"{len(self._sizes)} vectors")
        return self._sizes[index]

    def __getitem__(self, i: int) -> FieldData:
        spec = FieldSpec(self._spec.name, self._spec.direction, FieldKind.VECTOR, self._spec.type)
        return FieldData(spec, self.getSizeAtIndex(i), vertex=self._vertex)

    def getInitialValue(self, target: Target | None = None, type_: Any = None) -> Any:
        """The (first) value of a state field, as Poplar's ``getInitialValue<T>(target)``: a
        Python number of the field's type, or converted to ``type_`` (a poplar type, its name or
        a numpy dtype: C++'s ``T``) when given."""
        return self._typed(target, type_, "getInitialValue")[0].item()

    def getInitialValues(self, target: Target | None = None, type_: Any = None) -> list:
        """Every value of a state field (a vector of state), as :meth:`getInitialValue`."""
        return self._typed(target, type_, "getInitialValues").tolist()

    def _typed(self, target: Any, type_: Any, what: str) -> np.ndarray:
        what = f"{what} of field '{self._spec.name}'{self._vertex}"
        if target is not None and not isinstance(target, Target):
            raise InvalidArgumentError(f"{what}: the target must be a poplar.Target, got "
                                       f"{type(target).__name__} {target!r:.40}")
        if self._values is None or not self._values.size:
            raise InvalidArgumentError(f"{what}: the field has no value (only state fields given values "
                                       "with setInitialValue have one)")
        values = np.asarray(self._values).reshape(-1)
        if type_ is None:
            return values
        return values.astype(asType(type_).dtype)


class VertexIntrospector:
    """Poplar's ``VertexIntrospector``: the vertex a perf estimator is estimating."""

    def __init__(self, graph: GraphIR, plan: ComputeSetPlan, position: int) -> None:
        self._graph, self._plan, self._pos = graph, plan, position

    def getFieldInfo(self, name: str) -> FieldData:
        """The field ``name`` of the vertex (UnknownFieldError if its class has none)."""
        checked_str(name, "getFieldInfo: the field name")
        vid = int(self._plan.vertices[self._pos])
        cls = self._graph.vertices.classes[int(self._graph.vertices.cls[vid])]
        spec = cls.fields.get(name)
        if spec is None:
            raise UnknownFieldError(f"getFieldInfo: {self.describe()} has no field '{name}' (its fields: "
                                    f"{', '.join(cls.fields) or 'none'})")
        f = list(cls.fields).index(name)
        where = f" of {self.describe()}"
        if spec.direction is Direction.STATE:
            return FieldData(spec, 0, self._graph.vertices.store.value(vid, f, spec.type.dtype), where)
        seg = self._plan.segments  # vertex by vertex: a vertex's segments are found by bisection
        first, last = np.searchsorted(seg.vertex, [self._pos, self._pos + 1])
        mine = np.arange(first, last)
        lengths = seg.length[mine[seg.field[mine] == f]].tolist()
        return FieldData(spec, lengths if spec.kind is FieldKind.VECTOR_LIST else sum(lengths), vertex=where)

    def getTarget(self) -> Target:
        """The target the graph is compiled for."""
        return self._graph.target

    def getComputeSet(self) -> ComputeSet:
        """The compute set the vertex is in."""
        return ComputeSet(self._plan.cs_id, self._plan.name, self._graph.tensors.token)

    def describe(self) -> str:
        """The vertex, for messages."""
        return self._graph.vertices.describe(int(self._plan.vertices[self._pos]))
