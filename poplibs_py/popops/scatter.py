"""popops: scatter (Scatter.hpp), XLA's scatter for its common case: rows replaced at run-time indices.

PopLibs' scatter is XLA's (``indexVectorDim``, ``updateWindowDims``, ``insertWindowDims``,
``scatterDimsToOperandDims``). poplar-py supports the case XLA front ends emit for
"replace slices along one dimension": one scatter dimension ``d``
(``scatterDimsToOperandDims == [d]``) whose window is collapsed (``insertWindowDims == [d]``),
index vectors of one element (``indices.dim(indexVectorDim) == 1``, or scalar indices with
``indexVectorDim == indices.rank()``), and update windows over the other operand dimensions,
in order, starting at 0 (a window may be shorter than its dimension). Other configurations
raise PoplibsError; so does the ``updateComputation`` overload.

The update is a multiUpdate of ``operand`` (viewed as its windowed part) along ``d``: one
compute set on the tiles holding the operand, each column's lookups done in order by one
worker, so a repeated index takes the last update. An index outside ``d`` (a negative INT
included) skips its update, as XLA skips windows that do not fit.
"""

from __future__ import annotations

from collections.abc import Sequence

from poplar_py import INT, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError, tensorArgument
from .multi_slice import multiUpdate

__all__ = ["scatter"]


def _ints(values: Sequence[int], what: str, name: str) -> list[int]:
    try:
        return [int(v) for v in values]
    except TypeError as e:
        raise PoplibsError(f"{name}: {what} must be a list of integers, got {values!r:.40}") from e


def scatter(graph: Graph, operand: Tensor, indices: Tensor, updates: Tensor, indexVectorDim: int,
            updateWindowDims: Sequence[int], insertWindowDims: Sequence[int],
            scatterDimsToOperandDims: Sequence[int], prog: prog_.Sequence, *args,
            debugContext: str = "") -> None:
    """Write the windows of ``updates`` into ``operand`` at the run-time ``indices``, in place
    (XLA's scatter; see the module docstring for the configurations supported)."""
    if args and callable(args[0]):
        raise PoplibsError("scatter: the updateComputation overload is not supported by poplar-py")
    if args:  # scatter(..., prog, debugContext)
        debugContext = args[0]
    name = debugContext or "scatter"
    operand = tensorArgument(graph, operand, f"{name}: operand")
    indices = tensorArgument(graph, indices, f"{name}: indices")
    updates = tensorArgument(graph, updates, f"{name}: updates")
    window_dims = _ints(updateWindowDims, "updateWindowDims", name)
    inserted = _ints(insertWindowDims, "insertWindowDims", name)
    to_operand = _ints(scatterDimsToOperandDims, "scatterDimsToOperandDims", name)
    if len(to_operand) != 1 or inserted != to_operand or not 0 <= to_operand[0] < operand.rank():
        raise PoplibsError(f"{name}: only one scatter dimension with a collapsed window is supported "
                           f"(scatterDimsToOperandDims == insertWindowDims == [d]); got "
                           f"{to_operand} and {inserted} for operand '{operand.name}' of shape "
                           f"{operand.shape()}")
    d = to_operand[0]
    if indices.elementType() not in (UNSIGNED_INT, INT):
        raise PoplibsError(f"{name}: indices '{indices.name}' must be UNSIGNED_INT or INT, "
                           f"not {indices.elementType()}")
    if indexVectorDim < indices.rank():
        if indices.dim(indexVectorDim) != 1:
            raise PoplibsError(f"{name}: indices '{indices.name}' must have size 1 in indexVectorDim "
                               f"{indexVectorDim}, has shape {indices.shape()}")
        indices = indices.squeeze([indexVectorDim])
    elif indexVectorDim != indices.rank():
        raise PoplibsError(f"{name}: indexVectorDim {indexVectorDim} is out of range for indices "
                           f"'{indices.name}' of shape {indices.shape()}")
    others = [k for k in range(operand.rank()) if k != d]
    batch = [k for k in range(updates.rank()) if k not in window_dims]
    if sorted(set(window_dims)) != sorted(window_dims) or len(window_dims) != len(others) \
            or any(not 0 <= k < updates.rank() for k in window_dims):
        raise PoplibsError(f"{name}: updateWindowDims {window_dims} must name {len(others)} distinct dims of "
                           f"updates '{updates.name}' of shape {updates.shape()}")
    if [updates.dim(k) for k in batch] != indices.shape():
        raise PoplibsError(f"{name}: the scatter dims {batch} of updates '{updates.name}' "
                           f"{updates.shape()} must match indices '{indices.name}' {indices.shape()}")
    window = [updates.dim(k) for k in window_dims]
    if any(w > operand.dim(k) for w, k in zip(window, others)):
        raise PoplibsError(f"{name}: update window {window} does not fit operand '{operand.name}' "
                           f"of shape {operand.shape()}")
    if updates.elementType() != operand.elementType():
        raise PoplibsError(f"{name}: updates '{updates.name}' is {updates.elementType()}, operand "
                           f"'{operand.name}' is {operand.elementType()}")
    target = operand
    for w, k in zip(window, others):
        target = target.slice(0, w, k)
    n = indices.numElements()
    slices = window[:d] + [1] + window[d:]
    s = updates.dimShuffle(batch + window_dims).reshape([n] + slices)
    offsets = (indices.reinterpret(UNSIGNED_INT) if indices.elementType() == INT else indices)
    multiUpdate(graph, target, s, offsets.flatten().expand([1]), [d], [1], prog, debugName=name)
