"""popops: gather along one axis and createGatherInput (Gather.hpp), as numpy's ``take``.

``gather(graph, input, indices, axis, prog, params)`` is a multiSlice of ``input`` along
``axis`` at the flattened indices, read on the tiles at run time: the columns of ``input``
(its elements at one position of the other dims) go to the tile holding most of each, whose
workers do every lookup for them. The result is that slice seen through a reshape and a
dimShuffle (no copy) with the shape ``input.shape[:axis] + indices.shape +
input.shape[axis+1:]``. ``createGatherInput`` lays an input out so that no column is split
between tiles (``createSliceableTensor`` along ``axis``).

Indices are UNSIGNED_INT, or INT read as UNSIGNED_INT; an index outside the axis (a
negative INT included) gives a slice of zeros, as multiSlice does (PopLibs leaves it
unspecified). ``GatherParams`` is accepted; its ``maxElementsPerTile`` is not used. The
XLA-style overload (indexVectorDim, offsetDims, sliceSizes...) is not provided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from poplar_py import INT, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError, tensorArgument
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


def createGatherInput(graph: Graph, type_, operandShape: Sequence[int], axis: int,
                      params: GatherParams | None = None, debugContext: str = "") -> Tensor:
    """A new tensor of ``operandShape`` laid out for ``gather`` along ``axis``: each column
    (the elements at one position of the other dims) whole on one tile, the columns spread
    over the tiles."""
    name = debugContext or "gatherInput"
    axis = _check_axis(axis, len(operandShape), f"createGatherInput '{name}'")
    return createSliceableTensor(graph, type_, operandShape, [axis], [1], 0, name)


def gather(graph: Graph, input: Tensor, indices: Tensor, axis: int, prog: prog_.Sequence,  # noqa: A002
           params: GatherParams | None = None, debugContext: str = "") -> Tensor:
    """``numpy.take(input, indices, axis)``: slices of ``input`` at run-time ``indices`` along
    ``axis``, of rank ``indices.rank() + input.rank() - 1`` (see the module docstring)."""
    name = debugContext or "gather"
    input = tensorArgument(graph, input, f"{name}: input")  # noqa: A001
    indices = tensorArgument(graph, indices, f"{name}: indices")
    axis = _check_axis(axis, input.rank(), f"{name} of tensor '{input.name}'")
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
