"""popops (DynamicSlice.hpp): tensors made for slicing: the slices, the indices, a sliceable
tensor grown from a slice, and the grouped forms.

These add variables and map them; no program. A slice tensor ``[numIndices, *slice]`` is
viewed as ``[rows, columns]`` (the sliced dims first, the others flattened, as the
multi-slice vertices see it) and each column goes to the tile the slicing vertices of that
column run on: the tile holding most of the column in the sliced tensor, or the plan's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from poplar_py import UNSIGNED_INT, Graph, Tensor
from poplar_py.debug import debug_name
from poplar_py.types import asType

from ..poputil import PoplibsError, checkOptions, mapTensorLinearly, splitRegions, trailingArguments
from ._common import SLICE_OPTIONS, check_slice_args, columns_by_tile, map_columns
from .slice_plan import SlicePlan, map_indices, map_planned

__all__ = ["createGroupedIndicesTensor", "createGroupedSliceTensor", "createGroupedSliceableTensor",
           "createIndicesTensor", "createSliceTensor", "createSliceableTensorFromSlice"]


def _columns_view(t: Tensor, dims: list[int]) -> Tensor:
    """``t`` as ``[rows, columns]``: ``dims`` first, the other dims flattened into columns."""
    others = [d for d in range(t.rank()) if d not in dims]
    cols = int(np.prod([t.dim(d) for d in others], dtype=np.int64))
    return t.dimShuffle(dims + others).reshape([t.numElements() // cols if cols else 0, cols])


def _slice_shape(shape: list[int], dims: list[int], sizes: list[int], numIndices: int) -> list[int]:
    shape = list(shape)
    for d, size in zip(dims, sizes):
        shape[d] = size
    return [numIndices, *shape]


def _shape_args(shape: Sequence[int], dims: Sequence[int], sizes: Sequence[int],
                what: str) -> tuple[list[int], list[int], list[int]]:
    """shape, dims and sizes checked as a would-be tensor's (check_slice_args' checks)."""
    try:
        shape, dims, sizes = [int(s) for s in shape], [int(d) for d in dims], [int(s) for s in sizes]
    except (TypeError, ValueError) as e:
        raise PoplibsError(f"{what}: shape, dims and sizes must be lists of integers") from e
    if min(shape, default=0) < 0:
        raise PoplibsError(f"{what}: negative shape {shape}")
    if len(dims) != len(sizes) or len(set(dims)) != len(dims):
        raise PoplibsError(f"{what}: dims {dims} and sizes {sizes} must be distinct dims, one size each")
    for d, size in zip(dims, sizes):
        if not 0 <= d < len(shape) or not 0 <= size <= shape[d]:
            raise PoplibsError(f"{what}: dim {d} (size {size}) does not fit shape {shape}")
    return shape, dims, sizes


def _plan_arg(plan: object, what: str, required: bool) -> SlicePlan:
    if not isinstance(plan, SlicePlan):
        raise PoplibsError(f"{what}: plan must be a SlicePlan, got {type(plan).__name__}")
    if required and not plan.isPlanned():
        raise PoplibsError(f"{what}: needs a plan from embedding.plan, got an empty SlicePlan")
    return plan


def _map_spread(graph: Graph, view: Tensor) -> None:
    """Whole columns spread over the tiles, as createSliceableTensor spreads them."""
    if view.numElements() == 0:
        return
    if view.dim(1) == 1:
        mapTensorLinearly(graph, view.flatten())
        return
    for tile, part in enumerate(splitRegions([(0, view.dim(1))], 1, graph.getTarget().getNumTiles())):
        for iv in part:
            graph.setTileMapping(view.slice(iv.begin(), iv.end(), 1), tile)


def createSliceTensor(graph: Graph, *args: object, debugContext: object = "",
                      options: dict | None = None) -> Tensor:
    """A new ``[numIndices, *slice shape]`` tensor to slice into or update from.

    ``createSliceTensor(graph, t, dims, sizes, numIndices, debugContext="")``: each column of
    the slice is mapped to the tile holding most of that column of ``t``, where the
    multi-slice vertices run. ``createSliceTensor(graph, type, shape, dims, sizes, numIndices,
    plan, options, debugContext="")``: the columns go to the plan's tiles (an empty plan:
    spread over the tiles as createSliceableTensor spreads the sliceable tensor's).
    """
    if args and isinstance(args[0], Tensor):
        if len(args) < 4:
            raise PoplibsError("createSliceTensor: expected (graph, t, dims, sizes, numIndices"
                               "[, debugContext])")
        t, dims, sizes, numIndices, *rest = args
        (debugContext,) = trailingArguments("createSliceTensor", rest, {"debugContext": debugContext})
        name = debug_name(debugContext, "createSliceTensor: debugContext") or "slice"
        dims, sizes = check_slice_args(t, dims, sizes, f"createSliceTensor '{name}'")
        out = graph.addVariable(t.elementType(), _slice_shape(t.shape(), dims, sizes, int(numIndices)), name)
        if out.numElements():
            _, by_tile = columns_by_tile(graph, _columns_view(t, dims))
            map_columns(graph, _columns_view(out, [0, *(d + 1 for d in dims)]), by_tile)
        return out
    if len(args) < 7:
        raise PoplibsError("createSliceTensor: expected (graph, type, shape, dims, sizes, numIndices, plan, "
                           "options[, debugContext]) or (graph, t, dims, sizes, numIndices[, debugContext])")
    type_, shape, dims, sizes, numIndices, plan, opts, *rest = args
    options, debugContext = trailingArguments("createSliceTensor", [opts, *rest],
                                              {"options": options, "debugContext": debugContext})
    checkOptions(options, SLICE_OPTIONS, "createSliceTensor")
    name = debug_name(debugContext, "createSliceTensor: debugContext") or "slice"
    what = f"createSliceTensor '{name}'"
    shape, dims, sizes = _shape_args(shape, dims, sizes, what)
    plan = _plan_arg(plan, what, False)
    type_ = asType(type_)
    plan.check(what, type_, shape, dims, False)
    out = graph.addVariable(type_, _slice_shape(shape, dims, sizes, int(numIndices)), name)
    view = _columns_view(out, [0, *(d + 1 for d in dims)])
    if plan.isPlanned():
        if out.numElements():
            map_planned(graph, view, plan, 0)
    else:
        _map_spread(graph, view)
    return out


def createIndicesTensor(graph: Graph, dims: Sequence[int], numIndices: int, plan: SlicePlan,
                        options: dict | None = None, debugContext: object = "") -> Tensor:
    """A new ``[numIndices, len(dims)]`` UNSIGNED_INT tensor of slice indices, whole indices
    spread evenly over the plan's tiles (over all tiles for an empty plan)."""
    checkOptions(options, SLICE_OPTIONS, "createIndicesTensor")
    name = debug_name(debugContext, "createIndicesTensor: debugContext") or "indices"
    plan = _plan_arg(plan, f"createIndicesTensor '{name}'", False)
    t = graph.addVariable(UNSIGNED_INT, [int(numIndices), len(list(dims))], name)
    map_indices(graph, t, plan, 0)
    return t


def createSliceableTensorFromSlice(graph: Graph, s: Tensor, dims: Sequence[int], numSlices: Sequence[int],
                                   debugContext: object = "") -> Tensor:
    """A new tensor of ``numSlices[k]`` slices shaped like ``s`` along each ``dims[k]``
    (``t.dim(dims[k]) == numSlices[k] * s.dim(dims[k])``), each slice mapped exactly as ``s``
    is: on the same tiles, in the same contiguous regions, so slicing or updating it from a
    tensor laid out like ``s`` needs no exchange."""
    name = debug_name(debugContext, "createSliceableTensorFromSlice: debugContext") or "sliceable"
    what = f"createSliceableTensorFromSlice '{name}'"
    dims, numSlices = [int(d) for d in dims], [int(n) for n in numSlices]
    if len(dims) != len(numSlices) or len(set(dims)) != len(dims):
        raise PoplibsError(f"{what}: dims {dims} and numSlices {numSlices} must be distinct dims, "
                           "one count each")
    if any(not 0 <= d < s.rank() for d in dims) or min(numSlices, default=1) < 0:
        raise PoplibsError(f"{what}: dims {dims} or numSlices {numSlices} do not fit slice shape {s.shape()}")
    count = int(np.prod(numSlices, dtype=np.int64))
    clones = graph.cloneN(s, count, name)  # [count, *s.shape], each clone mapped as s
    k = len(dims)
    blocks = clones.reshape([*numSlices, *s.shape()])
    order = [axis for j in range(s.rank()) for axis in ([dims.index(j)] if j in dims else []) + [k + j]]
    shape = [s.dim(j) * (numSlices[dims.index(j)] if j in dims else 1) for j in range(s.rank())]
    return blocks.dimShuffle(order).reshape(shape)


# ---- grouped --------------------------------------------------------------------------------------

def _grouped(graph: Graph, groupSize: int, plan: object, name: str, what: str) -> tuple[SlicePlan, int]:
    plan = _plan_arg(plan, f"{what} '{name}'", True)
    groupSize = int(groupSize)
    if groupSize != plan.group_size:
        raise PoplibsError(f"{what} '{name}': groupSize {groupSize} is not the plan's {plan.group_size}")
    return plan, groupSize


def createGroupedSliceableTensor(graph: Graph, type_: object, groupSize: int, shape: Sequence[int],
                                 dims: Sequence[int], sizes: Sequence[int], plan: SlicePlan,
                                 options: dict | None = None, debugContext: object = "") -> Tensor:
    """A new ``[groupSize, *shape]`` tensor laid out by ``plan`` (required): group g's columns
    on the group's share of the tiles, each column whole on one tile."""
    checkOptions(options, SLICE_OPTIONS, "createGroupedSliceableTensor")
    name = debug_name(debugContext, "createGroupedSliceableTensor: debugContext") or "sliceable"
    plan, groups = _grouped(graph, groupSize, plan, name, "createGroupedSliceableTensor")
    what = f"createGroupedSliceableTensor '{name}'"
    shape, dims, sizes = _shape_args(shape, dims, sizes, what)
    plan.check(what, asType(type_), [groups, *shape], dims, True)
    t = graph.addVariable(type_, [groups, *shape], name)
    if t.numElements():
        for g in range(groups):
            map_planned(graph, _columns_view(t[g], dims), plan, g)
    return t


def createGroupedSliceTensor(graph: Graph, type_: object, groupSize: int, shape: Sequence[int],
                             dims: Sequence[int], sizes: Sequence[int], numIndices: int, plan: SlicePlan,
                             options: dict | None = None, debugContext: object = "") -> Tensor:
    """A new ``[groupSize, numIndices, *slice shape]`` tensor, each group's columns on the plan's
    tiles for that group (where the grouped multi-slice vertices of those columns run)."""
    checkOptions(options, SLICE_OPTIONS, "createGroupedSliceTensor")
    name = debug_name(debugContext, "createGroupedSliceTensor: debugContext") or "slice"
    plan, groups = _grouped(graph, groupSize, plan, name, "createGroupedSliceTensor")
    what = f"createGroupedSliceTensor '{name}'"
    shape, dims, sizes = _shape_args(shape, dims, sizes, what)
    plan.check(what, asType(type_), [groups, *shape], dims, True)
    out = graph.addVariable(type_, [groups, *_slice_shape(shape, dims, sizes, int(numIndices))], name)
    if out.numElements():
        for g in range(groups):
            map_planned(graph, _columns_view(out[g], [0, *(d + 1 for d in dims)]), plan, g)
    return out


def createGroupedIndicesTensor(graph: Graph, groupSize: int, dims: Sequence[int], numIndices: int,
                               plan: SlicePlan, options: dict | None = None,
                               debugContext: object = "") -> Tensor:
    """A new ``[groupSize, numIndices, len(dims)]`` UNSIGNED_INT tensor, each group's indices
    spread over the group's tiles."""
    checkOptions(options, SLICE_OPTIONS, "createGroupedIndicesTensor")
    name = debug_name(debugContext, "createGroupedIndicesTensor: debugContext") or "indices"
    plan, groups = _grouped(graph, groupSize, plan, name, "createGroupedIndicesTensor")
    t = graph.addVariable(UNSIGNED_INT, [groups, int(numIndices), len(list(dims))], name)
    for g in range(groups):
        map_indices(graph, t[g], plan, g)
    return t
