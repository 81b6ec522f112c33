"""popops: scatter (Scatter.hpp), XLA's scatter: windows of ``updates`` written into ``operand``.

``scatter(graph, operand, indices, updates, indexVectorDim, updateWindowDims,
insertWindowDims, scatterDimsToOperandDims, prog[, debugContext, optionFlags])`` follows XLA's
semantics (``optionFlags``: PopLibs' slice options, checked):
the index vector of each scatter position (``indices`` along ``indexVectorDim``; a scalar when
``indexVectorDim == indices.rank()``) gives the window's start in the operand dims
``scatterDimsToOperandDims`` (0 in the others); the window's sizes are the ``updateWindowDims``
of ``updates`` for the operand dims not in ``insertWindowDims`` (in order) and 1 for those
inserted. A window that does not fit the operand is skipped, as XLA does.

On the tiles: an ``XlaWindowOffsets`` compute set turns each index vector into the flat row
offsets of its window in a ``[rows, columns]`` view of the operand (see ``_xla``), then one
``MultiUpdate`` compute set writes the update rows on the tiles holding the operand, each
column's rows in order, so overlapping windows take the last update (XLA leaves it unspecified).

The overload with ``updateComputation`` (``f(graph, current, update, prog) -> Tensor``, after
``scatterDimsToOperandDims``) combines the operand's window with the update: ``popops.add``
itself gives one ``MultiUpdateAdd`` compute set (overlaps accumulate); any other function is
called once, on ``[*window]`` tensors, to build the body of a ``countedLoop`` over the windows
(per pass: dynamicSlice the window's offsets and update, MultiSlice the operand window, the
function's programs, MultiUpdate it back), so overlapping windows combine in order as in XLA.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from poplar_py import Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, tensorArgument, trailingArguments
from ._common import SLICE_OPTIONS
from ._xla import Windows, check_window, dim_list, index_vectors
from .dynamic_slice import dynamicSlice
from .elementwise import add
from .loop import countedLoop
from .multi_slice import multiSlice, multiUpdate, multiUpdateAdd

__all__ = ["scatter"]

UpdateComputationFunc = Callable[[Graph, Tensor, Tensor, prog_.Sequence], Tensor]


def _prepare(graph: Graph, operand: Tensor, indices: Tensor, updates: Tensor, indexVectorDim: Any,
             updateWindowDims: Sequence[int], insertWindowDims: Sequence[int],
             scatterDimsToOperandDims: Sequence[int], name: str) -> tuple[Windows, Tensor, Tensor]:
    """Check the arguments; the windows, the ``[N, K]`` index vectors and the ``[N, *window]`` updates."""
    operand = tensorArgument(graph, operand, f"{name}: operand")
    indices = tensorArgument(graph, indices, f"{name}: indices")
    updates = tensorArgument(graph, updates, f"{name}: updates")
    rank = operand.rank()
    window_dims = dim_list(updateWindowDims, updates.rank(), "updateWindowDims", name)
    inserted = dim_list(insertWindowDims, rank, "insertWindowDims", name)
    to_operand = dim_list(scatterDimsToOperandDims, rank, "scatterDimsToOperandDims", name, ordered=False)
    if len(window_dims) + len(inserted) != rank:
        raise PoplibsError(f"{name}: updateWindowDims {window_dims} and insertWindowDims {inserted} must "
                           f"together have one entry per dim of operand '{operand.name}' {operand.shape()}")
    rows, batch = index_vectors(indices, indexVectorDim, name)
    if rows.dim(1) != len(to_operand):
        raise PoplibsError(f"{name}: indices '{indices.name}' {indices.shape()} hold index vectors of "
                           f"{rows.dim(1)} elements in indexVectorDim {indexVectorDim}, but "
                           f"scatterDimsToOperandDims {to_operand} has {len(to_operand)}")
    scatter_dims = [d for d in range(updates.rank()) if d not in window_dims]
    if [updates.dim(d) for d in scatter_dims] != batch:
        raise PoplibsError(f"{name}: the scatter dims {scatter_dims} of updates '{updates.name}' "
                           f"{updates.shape()} must match indices '{indices.name}' {indices.shape()} "
                           f"without indexVectorDim, {batch}")
    sizes = iter(updates.dim(d) for d in window_dims)
    window = [1 if d in inserted else next(sizes) for d in range(rank)]
    check_window(operand, window, "the update window", name)
    if updates.elementType() != operand.elementType():
        raise PoplibsError(f"{name}: updates '{updates.name}' is {updates.elementType()}, operand "
                           f"'{operand.name}' is {operand.elementType()}")
    n = rows.dim(0)
    upd = updates.dimShuffle(scatter_dims + window_dims).reshape([n] + window)
    return Windows(operand, to_operand, window), rows, upd


def scatter(graph: Graph, operand: Tensor, indices: Tensor, updates: Tensor, indexVectorDim: int,
            updateWindowDims: Sequence[int], insertWindowDims: Sequence[int],
            scatterDimsToOperandDims: Sequence[int], *args: Any, debugContext: str = "",
            optionFlags: dict | None = None) -> None:
    """Write (or combine) the windows of ``updates`` into ``operand`` in place, at run-time
    ``indices``: ``scatter(..., prog[, debugContext, optionFlags])`` or ``scatter(...,
    updateComputation, prog[, debugContext, optionFlags])`` (see the module docstring)."""
    update_fn = None
    if args and callable(args[0]) and not isinstance(args[0], prog_.Program):
        update_fn, args = args[0], args[1:]
    if not args or not isinstance(args[0], prog_.Sequence):
        raise PoplibsArgumentError("scatter: prog must be a Sequence (after scatterDimsToOperandDims, "
                                   "or after updateComputation)")
    prog = args[0]
    debugContext, optionFlags = trailingArguments("scatter", args[1:], {"debugContext": debugContext,
                                                                        "optionFlags": optionFlags})
    checkOptions(optionFlags, SLICE_OPTIONS, "scatter")
    name = debug_name(debugContext, "scatter: debugContext") or "scatter"
    windows, rows, upd = _prepare(graph, operand, indices, updates, indexVectorDim, updateWindowDims,
                                  insertWindowDims, scatterDimsToOperandDims, name)
    n = rows.dim(0)
    if n == 0 or windows.rows_per_window * windows.columns == 0:
        return
    offsets = windows.offsets(graph, rows, False, prog, name)
    target = windows.rows_view()
    if update_fn is None:
        multiUpdate(graph, target, windows.to_rows(upd), offsets, [0], [1], prog, debugName=name)
    elif update_fn is add:
        multiUpdateAdd(graph, target, windows.to_rows(upd), offsets, 1.0, [0], [1], prog, debugName=name)
    else:
        _scatter_loop(graph, windows, target, upd, offsets, update_fn, prog, name)


def _scatter_loop(graph: Graph, windows: Windows, target: Tensor, upd: Tensor, offsets: Tensor,
                  update_fn: UpdateComputationFunc, prog: prog_.Sequence, name: str) -> None:
    """One countedLoop pass per window: slice its offsets and update, combine, write back."""
    n, m, cols = upd.dim(0), windows.rows_per_window, windows.columns
    upd_rows = windows.to_rows(upd).reshape([n, m * cols])
    offset_rows = offsets.reshape([n, m])

    def body(i: Tensor) -> prog_.Program:
        seq = prog_.Sequence()
        off = dynamicSlice(graph, offset_rows, i, [0], [1], seq, f"{name}/windowOffsets").reshape([m, 1])
        new = dynamicSlice(graph, upd_rows, i, [0], [1], seq, f"{name}/update").reshape([m, 1, cols])
        cur = multiSlice(graph, target, off, [0], [1], seq, debugName=f"{name}/current")
        result = update_fn(graph, windows.from_rows(cur, 1)[0], windows.from_rows(new, 1)[0], seq)
        if not isinstance(result, Tensor) or result.shape() != windows.window:
            raise PoplibsError(f"{name}: updateComputation must return a tensor of the window's shape "
                               f"{windows.window}, returned {getattr(result, 'shape', lambda: result)()}")
        if result.elementType() != target.elementType():
            raise PoplibsError(f"{name}: updateComputation returned {result.elementType()}, operand is "
                               f"{target.elementType()}")
        multiUpdate(graph, target, windows.to_rows(result.expand([0])), off, [0], [1], seq,
                    debugName=f"{name}/write")
        return seq

    prog.add(countedLoop(graph, n, body, f"{name}/loop"))
