"""popops: gather and createGatherInput (Gather.hpp): along one axis, or XLA's gather.

``gather(graph, input, indices, axis, prog[, params, debugContext, optionFlags])`` is numpy's
``take``: a
multiSlice of ``input`` along ``axis`` at the flattened indices, read on the tiles at run
time: the columns of ``input`` (its elements at one position of the other dims) go to the tile
holding most of each, whose workers do every lookup for them. The result is that slice seen
through a reshape and a dimShuffle (no copy) with the shape ``input.shape[:axis] +
indices.shape + input.shape[axis+1:]``. An index outside the axis (a negative INT included)
gives a slice of zeros, as multiSlice does (PopLibs leaves it unspecified).

``gather(graph, input, indices, indexVectorDim, offsetDims, sliceSizes, collapsedSliceDims,
startIndexMap, prog[, debugContext, optionFlags])`` is XLA's gather: each index vector (``indices`` along
``indexVectorDim``; a scalar when ``indexVectorDim == indices.rank()``) starts a slice of
``sliceSizes`` in the dims ``startIndexMap`` (0 in the others), clamped so that it fits, as
XLA does. The output has the batch dims of ``indices`` and the slice dims not in
``collapsedSliceDims`` at the positions ``offsetDims``. On the tiles: an ``XlaWindowOffsets``
compute set turns the index vectors into row offsets of a ``[rows, columns]`` view of the
input (see ``_xla``), then one MultiSlice compute set copies the rows; the result is a view of
that slice.

Indices are UNSIGNED_INT or INT. ``createGatherInput`` lays an input out so that no column is
split between tiles (``createSliceableTensor`` along ``axis``, or along ``startIndexMap``).
``GatherParams`` is accepted; its ``maxElementsPerTile`` is not used. ``optionFlags`` (PopLibs'
slice options) are checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from poplar_py import INT, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, tensorArgument, trailingArguments
from ._common import SLICE_OPTIONS
from ._xla import Windows, check_window, dim_list, index_vectors, int_list
from .multi_slice import createSliceableTensor, multiSlice

__all__ = ["GatherParams", "createGatherInput", "gather"]


@dataclass
class GatherParams:
    """PopLibs' gather parameters: a suggested maximum of elements per tile (not used here)."""

    maxElementsPerTile: int = 65535


def _check_axis(axis: object, rank: int, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < rank:
        raise PoplibsError(f"{what}: axis {axis!r} must be a dimension of the input (rank {rank})")
    return axis


def createGatherInput(graph: Graph, type_, operandShape: Sequence[int], *args: Any,
                      debugContext: str = "") -> Tensor:
    """A new tensor of ``operandShape`` laid out for ``gather``: each column (the elements at one
    position of the gathered dims) whole on one tile, the columns spread over the tiles.

    ``createGatherInput(graph, type, operandShape, axis[, params, name])`` for the axis gather;
    ``createGatherInput(graph, type, inputShape, sliceSizes, startIndexMap[, name])`` for XLA's.
    """
    if args and not isinstance(args[0], (int, np.integer)):  # sliceSizes, startIndexMap[, name]
        if len(args) < 2:
            raise PoplibsArgumentError("createGatherInput: sliceSizes needs startIndexMap")
        name = (args[2] if len(args) > 2 else debugContext) or "gatherInput"
        what = f"createGatherInput '{name}'"
        shape = int_list(operandShape, "inputShape", what)
        if len(int_list(args[0], "sliceSizes", what)) != len(shape):
            raise PoplibsError(f"{what}: sliceSizes {list(args[0])} must have one entry per dim of {shape}")
        dims = dim_list(args[1], len(shape), "startIndexMap", what, ordered=False)
        if not dims:
            raise PoplibsError(f"{what}: startIndexMap must name at least one dim")
        return createSliceableTensor(graph, type_, shape, dims, [1] * len(dims), 0, name)
    rest = [a for a in args[1:] if not isinstance(a, GatherParams)]
    name = (rest[0] if rest else debugContext) or "gatherInput"
    axis = _check_axis(args[0] if args else None, len(operandShape), f"createGatherInput '{name}'")
    return createSliceableTensor(graph, type_, operandShape, [axis], [1], 0, name)


def gather(graph: Graph, input: Tensor, indices: Tensor, *args: Any,  # noqa: A002
           debugContext: str = "", optionFlags: dict | None = None, **kwargs: Any) -> Tensor:
    """Slices of ``input`` at run-time ``indices``: ``gather(graph, input, indices, axis, prog[,
    params, debugContext, optionFlags])`` (numpy's take) or ``gather(graph, input, indices,
    indexVectorDim, offsetDims, sliceSizes, collapsedSliceDims, startIndexMap, prog[, debugContext,
    optionFlags])`` (XLA's); see the module docstring."""
    unexpected = sorted(set(kwargs) - {"prog", "params", "debugPrefix"})
    if unexpected:
        raise PoplibsArgumentError(f"gather: unexpected keyword argument(s) {', '.join(unexpected)}")
    xla = len(args) >= 5 and not isinstance(args[1], prog_.Program)
    fixed = 6 if xla else 3  # the arguments before PopLibs' trailing debugContext, optionFlags
    debugContext, optionFlags = trailingArguments("gather", args[fixed:], {"debugContext": debugContext,
                                                                           "optionFlags": optionFlags})
    checkOptions(optionFlags, SLICE_OPTIONS, "gather")
    debugContext = debug_name(debugContext, "gather: debugContext") or kwargs.get("debugPrefix", "")
    if xla:
        return _gather_xla(graph, input, indices, *args[:6], debugContext=debugContext)
    axis, prog, params = (list(args) + [None, None, None])[:3]
    prog = kwargs.get("prog", prog)
    params = kwargs.get("params", params)
    name = debugContext or "gather"
    input = tensorArgument(graph, input, f"{name}: input")  # noqa: A001
    indices = tensorArgument(graph, indices, f"{name}: indices")
    axis = _check_axis(axis, input.rank(), f"{name} of tensor '{input.name}'")
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"{name}: prog must be a Sequence, got {type(prog).__name__}")
    if params is not None and not isinstance(params, GatherParams):
        raise PoplibsError(f"{name}: params must be a GatherParams, got {type(params).__name__}")
    if indices.elementType() not in (UNSIGNED_INT, INT):
        raise PoplibsError(f"{name}: indices '{indices.name}' must be UNSIGNED_INT or INT, "
                           f"not {indices.elementType()}")
    offsets = indices.reinterpret(UNSIGNED_INT) if indices.elementType() == INT else indices
    offsets = offsets.flatten().expand([1])
    sliced = multiSlice(graph, input, offsets, [axis], [1], prog, debugName=name)  # [N, ..., 1, ...]
    others = input.shape()[:axis] + input.shape()[axis + 1:]
    k = indices.rank()
    result = sliced.squeeze([axis + 1]).reshape(indices.shape() + others)
    order = list(range(k, k + axis)) + list(range(k)) + list(range(k + axis, k + len(others)))
    return result.dimShuffle(order)


def _gather_xla(graph: Graph, input: Tensor, indices: Tensor, indexVectorDim: Any,  # noqa: A002
                offsetDims: Sequence[int], sliceSizes: Sequence[int], collapsedSliceDims: Sequence[int],
                startIndexMap: Sequence[int], prog: Any = None, debugContext: str = "") -> Tensor:
    name = debugContext or "gather"
    input = tensorArgument(graph, input, f"{name}: input")  # noqa: A001
    indices = tensorArgument(graph, indices, f"{name}: indices")
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"{name}: prog must be a Sequence (after startIndexMap), "
                                   f"got {type(prog).__name__}")
    rank = input.rank()
    sizes = int_list(sliceSizes, "sliceSizes", name)
    if len(sizes) != rank:
        raise PoplibsError(f"{name}: sliceSizes {sizes} must have one entry per dim of input "
                           f"'{input.name}' {input.shape()}")
    check_window(input, sizes, "sliceSizes", name)
    collapsed = dim_list(collapsedSliceDims, rank, "collapsedSliceDims", name)
    if any(sizes[d] != 1 for d in collapsed):
        raise PoplibsError(f"{name}: collapsedSliceDims {collapsed} must have size 1 in sliceSizes {sizes}")
    start_map = dim_list(startIndexMap, rank, "startIndexMap", name, ordered=False)
    rows, batch = index_vectors(indices, indexVectorDim, name)
    if rows.dim(1) != len(start_map):
        raise PoplibsError(f"{name}: indices '{indices.name}' {indices.shape()} hold index vectors of "
                           f"{rows.dim(1)} elements in indexVectorDim {indexVectorDim}, but "
                           f"startIndexMap {start_map} has {len(start_map)}")
    kept = [d for d in range(rank) if d not in collapsed]
    out_rank = len(batch) + len(kept)
    offset_dims = dim_list(offsetDims, out_rank, "offsetDims", name)
    if len(offset_dims) != len(kept):
        raise PoplibsError(f"{name}: offsetDims {offset_dims} must have one entry per slice dim not "
                           f"collapsed ({len(kept)})")
    windows = Windows(input, start_map, sizes)
    n = rows.dim(0)
    if n * windows.rows_per_window * windows.columns == 0:
        out = graph.addVariable(input.elementType(), batch + [sizes[d] for d in kept], f"{name}/empty")
        graph.setTileMapping(out, 0)
    else:
        offsets = windows.offsets(graph, rows, True, prog, name)
        sliced = multiSlice(graph, windows.rows_view(), offsets, [0], [1], prog, debugName=name)
        out = windows.from_rows(sliced, n).reshape(batch + sizes)
        out = out.squeeze([len(batch) + d for d in collapsed]) if collapsed else out
    # [batch..., kept...] -> kept dims at offset_dims, batch dims in order elsewhere
    nb, batch_pos = len(batch), iter(range(len(batch)))
    order = [nb + offset_dims.index(p) if p in offset_dims else next(batch_pos) for p in range(out_rank)]
    return out.dimShuffle(order)
