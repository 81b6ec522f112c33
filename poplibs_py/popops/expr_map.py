"""popops.map: run a fused expression element by element on the tiles that hold the output.

Also the work distribution that fill and cast share: every tile takes the intervals of the
(flattened) output mapped to it and shares them between its worker threads as
``splitRegionsBetweenWorkers`` does (``tile_rows``); the tile gets one MultiVertex whose list
fields have one row per worker partition, connected to the matching slices of every operand (the
engine stages operands that live elsewhere). The vertices are built in bulk, from arrays.

Every function taking ``prog`` also accepts a ``ComputeSet`` there (PopLibs' ComputeSet
overloads): the vertices are then added to that compute set and no program is added, so the
caller can run several operations in one compute set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from poplar_py import ComputeSet, Graph, Tensor, Type
from poplar_py import program as prog_

from ..poputil import (
    PoplibsArgumentError,
    PoplibsError,
    broadcastToMatch,
    checkOptions,
    computeWithOutput,
    mapTensorLinearly,
    tensorArgument,
)
from . import expr as pe
from .expr_codegen import mapVertexClass
from .perf_estimation import MapCost, expressionCost, registerDefaultEstimator
from .tile_rows import workerRows

__all__ = ["createOutputForElementWiseOp", "map", "mapInPlace", "mapWithOutput"]

ProgOrCs = prog_.Sequence | ComputeSet
#: the options PopLibs' map and element-wise operations know (code generation choices: every
#: expression here is one generated codelet, so they are checked and change nothing)
MAP_OPTIONS = frozenset({"enableVectorBroadcastOptimisations", "enableGenerateCodelet",
                         "forceGenerateCodelet", "enableExpressionOptimizations"})


def broadcastShape(tensors: Sequence[Tensor]) -> list[int]:
    """The numpy broadcast of the tensors' shapes (PoplibsError "Cannot broadcast ..." if none)."""
    try:
        return list(np.broadcast_shapes(*(tuple(t.shape()) for t in tensors)))
    except ValueError:
        shapes = ", ".join(str(t.shape()) for t in tensors)
        raise PoplibsError(f"Cannot broadcast tensors of shapes {shapes} to a common shape") from None


def createOutputForElementWiseOp(graph: Graph, inputs: Sequence[Tensor], outputType: Type,
                                 debugName: str = "") -> Tensor:
    """A new tensor of the inputs' (equal) shape, mapped like the best-spread input.

    The candidate is the non-aliased, non-constant input with the smallest maximum number of
    elements on one tile (ties: more tiles used, then fewer regions); with no candidate the
    output is mapped linearly. Nothing runs on the tiles.
    """
    best: tuple | None = None
    for t in inputs:
        if t.containsAliases() or t.containsConstant():
            continue
        begin, end, tile = graph.tile_intervals(t)
        per_tile = np.bincount(tile, weights=end - begin) if tile.size else np.zeros(1)
        score = (int(per_tile.max()), -int(np.count_nonzero(per_tile)), int(tile.size))
        if best is None or score < best[0]:
            best = (score, t)
    name = debugName or "out"
    if best is not None:
        return graph.clone(outputType, best[1], name)
    out = graph.addVariable(outputType, inputs[0].shape(), name)
    mapTensorLinearly(graph, out)
    return out


def addElementWiseVertices(graph: Graph, cs: ComputeSet, vertexType: str, out: Tensor,
                           vectors: Mapping[str, Tensor], scalars: Mapping[str, Tensor] | None = None,
                           state: Mapping[str, object] | None = None, outField: str = "out") -> None:
    """Add one ``vertexType`` MultiVertex per tile holding part of ``out`` to ``cs``.

    Its list fields have one row per worker partition of the tile's part of ``out``
    (``workerRows``): ``outField`` the slices of ``out``, ``vectors`` (tensors of ``out``'s shape)
    the matching slices of theirs. ``scalars`` (0-D tensors) and ``state`` values are the same for
    every vertex. Built in bulk, from the mapping's intervals.
    """
    flat_out = out.flatten()
    grain = graph.getTarget().getVectorWidth(out.elementType())
    tiles, rows = workerRows(graph, flat_out, grain)
    lists = {outField: (flat_out, rows), **{name: (t.flatten(), rows) for name, t in vectors.items()}}
    graph.add_vertices(cs, vertexType, tiles, lists, dict(scalars or {}), dict(state or {}))


def computeSetFor(graph: Graph, prog: ProgOrCs, debugName: str) -> ComputeSet:
    """``prog`` itself when it is a compute set, else a new one that ``prog`` executes."""
    if isinstance(prog, ComputeSet):
        return prog
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsError(f"expected a program Sequence or a ComputeSet, got {type(prog).__name__}")
    cs = graph.addComputeSet(debugName)
    prog.add(prog_.Execute(cs))
    return cs


def _map(graph: Graph, e: pe.Expr, ts: Sequence[Tensor], out: Tensor | None, prog: ProgOrCs,
         debugName: str, inPlace: bool, cost: MapCost | None = None) -> Tensor:
    e = pe.as_expr(e)
    if not isinstance(ts, (list, tuple)):
        raise PoplibsArgumentError(f"map: the inputs must be a list of tensors, got {type(ts).__name__}")
    ts = [tensorArgument(graph, t, f"map: input {k}") for k, t in enumerate(ts)]
    if not ts:
        raise PoplibsError("map needs at least one input tensor")
    types = [t.elementType() for t in ts]
    out_type = pe.inferType(e, types)
    shape = broadcastShape(ts)
    if inPlace:
        out = ts[0]
        if not out.isParallelWriteable():
            raise PoplibsError(f"Trying to update tensor that cannot be written in parallel: '{out.name}'")
        if out_type != out.elementType():
            raise PoplibsError(f"mapInPlace: {e!r} gives {out_type}, but '{out.name}' is {out.elementType()}")
    expanded = [broadcastToMatch(t, out.shape() if out is not None else shape) for t in ts]
    if out is None:
        out = createOutputForElementWiseOp(graph, expanded, out_type, debugName)
    elif out_type != out.elementType():
        raise PoplibsError(f"mapWithOutput: {e!r} gives {out_type}, but '{out.name}' is {out.elementType()}")
    elif not out.isParallelWriteable():
        raise PoplibsError(f"Trying to update tensor that cannot be written in parallel: '{out.name}'")
    used = {n.index for n in _placeholders(e)}
    scalars = frozenset(i for i in used if ts[i - 1].numElements() == 1 and not (inPlace and i == 1))
    cost = cost or expressionCost(e, types, scalars, inPlace)
    cls = mapVertexClass(e, types, scalars, inPlace, out_type, cost.kind)
    graph.addCodelets(cls)
    registerDefaultEstimator(graph, cls.vertexName, cost.estimator())
    cs = computeSetFor(graph, prog, debugName or "map")
    vectors = {f"in{i}": expanded[i - 1] for i in used if i not in scalars and not (inPlace and i == 1)}
    scalar_fields = {f"in{i}": ts[i - 1].reshape([]) for i in scalars}
    addElementWiseVertices(graph, cs, cls.vertexName, out, vectors, scalar_fields)
    return out


def _placeholders(e: pe.Expr):
    if isinstance(e, pe.PlaceHolder):
        yield e
    for c in e.children:
        yield from _placeholders(c)


def map(graph: Graph, expr: pe.Expr, ts: Sequence[Tensor], prog: ProgOrCs,  # noqa: A001
        debugName: str = "", options: dict | None = None) -> Tensor:
    """A new tensor holding ``expr`` evaluated element-wise over ``ts`` (broadcast numpy-style).

    The whole expression becomes one generated codelet; on each tile holding part of the output,
    one MultiVertex computes it there, each worker over its share of the tile's regions. The output
    is laid out like the best-spread input (``createOutputForElementWiseOp``). ``options`` are
    checked against PopLibs' map options (``MAP_OPTIONS``).
    """
    checkOptions(options, MAP_OPTIONS, "map")
    return _map(graph, expr, ts, None, prog, debugName, inPlace=False)


def mapInPlace(graph: Graph, expr: pe.Expr, ts: Sequence[Tensor], prog: ProgOrCs,
               debugName: str = "", options: dict | None = None) -> None:
    """Overwrite ``ts[0]`` with ``expr`` evaluated element-wise, on the tiles holding ``ts[0]``.

    ``ts[0]`` must be parallel-writeable (no aliases, no constants) and of the expression's type.
    """
    checkOptions(options, MAP_OPTIONS, "mapInPlace")
    _map(graph, expr, ts, None, prog, debugName, inPlace=True)


def mapAsVertex(graph: Graph, cost: MapCost | None, expr: pe.Expr, ts: Sequence[Tensor], prog: ProgOrCs,
                debugName: str, inPlace: bool = False, out: Tensor | None = None) -> Tensor:
    """For the libraries: ``map`` (``inPlace``: ``mapInPlace``; ``out``: into ``out``, which must
    not overlap the inputs) whose vertices are costed as the PopLibs vertex ``cost`` names (a
    scaled add, a non-linearity), not as the expression's operations (None: as those)."""
    return _map(graph, expr, ts, out, prog, debugName, inPlace, cost)


def mapWithOutput(graph: Graph, expr: pe.Expr, ts: Sequence[Tensor], out: Tensor, prog: ProgOrCs,
                  debugName: str = "", options: dict | None = None) -> None:
    """Write ``expr`` evaluated element-wise into ``out``, on the tiles holding ``out``; the inputs
    broadcast to ``out``'s shape and ``out`` must have the expression's type. An ``out`` that
    overlaps an input other than element for element gets the result through a temporary."""
    checkOptions(options, MAP_OPTIONS, "mapWithOutput")
    out = tensorArgument(graph, out, f"{debugName or 'mapWithOutput'}: out")

    def compute(dst: Tensor) -> None:
        _map(graph, expr, ts, dst, prog, debugName, inPlace=False)

    inputs = ts if isinstance(ts, (list, tuple)) else []
    computeWithOutput(graph, out, inputs, prog, debugName or "mapWithOutput", compute, elementwise=True)
