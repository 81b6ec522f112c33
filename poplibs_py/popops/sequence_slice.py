"""popops sequenceSlice (SequenceSlice.hpp): copy runs of rows between two tensors at offsets
read on the tiles when the program runs.

``tOut[tOutOffset[i] : tOutOffset[i] + tN[i]] = tIn[tInOffset[i] : tInOffset[i] + tN[i]]``
along the outer dim, for each i; a run is clipped where it would pass the end of either
tensor. Both are viewed as ``[rows, columns]`` (the inner dims flattened). The larger of
the two (the source if it is more than twice the destination, as PopLibs chooses) decides
where the work runs: each tile holding columns of its first row gets a ``SequenceSlice``
vertex that copies those columns of every run.
"""

from __future__ import annotations

from typing import Any

from poplar_py import UNSIGNED_INT, Graph, GraphConnectionError, Tensor, concat
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import sequenceArgument, templateVertex
from .fill import zero
from .perf_estimation import registerDefaultEstimator
from .slice_cycles import sequenceSliceEstimator

__all__ = ["sequenceSlice"]


def _check(tIn: Tensor, tOut: Tensor, tN: Tensor, tInOffset: Tensor, tOutOffset: Tensor) -> None:
    """PopLibs' checks (graph connection errors, each naming its argument)."""
    named = (("tIn", tIn), ("tOut", tOut), ("tN", tN), ("tInOffset", tInOffset), ("tOutOffset", tOutOffset))
    for what, t in named:
        if not isinstance(t, Tensor):
            raise GraphConnectionError(f"sequenceSlice: {what} must be a Tensor, got {type(t).__name__}")
    if tN.rank() != 1 or tN.elementType() != UNSIGNED_INT:
        raise GraphConnectionError("sequenceSlice: tN must be a 1d UNSIGNED_INT tensor")
    for what, t in (("tInOffset", tInOffset), ("tOutOffset", tOutOffset)):
        if t.shape() != tN.shape() or t.elementType() != UNSIGNED_INT:
            raise GraphConnectionError(f"sequenceSlice: {what} must be a 1d UNSIGNED_INT tensor with the "
                                       "same length as tN")
    for what, t in (("tIn", tIn), ("tOut", tOut)):
        if t.rank() < 2:
            raise GraphConnectionError(f"sequenceSlice: {what} must have a rank of at least 2")
    if tOut.containsAliases() or tOut.containsConstant():
        raise GraphConnectionError("sequenceSlice: tOut must not contain aliases or constants")
    if tIn.elementType() != tOut.elementType():
        raise GraphConnectionError(f"sequenceSlice: tIn is {tIn.elementType()} but tOut is "
                                   f"{tOut.elementType()}")


def sequenceSlice(graph: Graph, tIn: Tensor, tOut: Tensor, tN: Tensor, tInOffset: Tensor, tOutOffset: Tensor,
                  zeroUnused: bool, prog: prog_.Sequence, debugContext: Any = "") -> None:
    """Copy ``tN[i]`` outer-dim rows of ``tIn`` from ``tInOffset[i]`` to ``tOut`` from
    ``tOutOffset[i]``, for every i (UNSIGNED_INT 1-D tensors of one length), clipped to both
    tensors. With ``zeroUnused`` ``tOut`` is zeroed first (popops fill vertices), so the rows
    no run writes read 0. One compute set of ``SequenceSlice`` vertices (see the module)."""
    name = debug_name(debugContext, "sequenceSlice: debugContext") or "sequenceSlice"
    prog = sequenceArgument(prog, "sequenceSlice: prog")
    _check(tIn, tOut, tN, tInOffset, tOutOffset)
    if tIn.dim(0) and tOut.dim(0) and tIn.numElements() // tIn.dim(0) != tOut.numElements() // tOut.dim(0):
        raise GraphConnectionError(f"sequenceSlice: tIn and tOut (inner) dimensions {tIn.shape()} / "
                                   f"{tOut.shape()} are incompatible")
    if zeroUnused:
        zero(graph, tOut, prog, f"{name}/zero")
    if tIn.dim(0) == 0 or tOut.dim(0) == 0 or tN.numElements() == 0 or tOut.numElements() == 0:
        return
    src = tIn.reshape([tIn.dim(0), tIn.numElements() // tIn.dim(0)])
    dst = tOut.reshape([tOut.dim(0), tOut.numElements() // tOut.dim(0)])
    base = src if src.numElements() > 2 * dst.numElements() else dst
    vertex = templateVertex("popops::SequenceSlice", tIn.elementType())
    registerDefaultEstimator(graph, vertex, sequenceSliceEstimator(tIn.elementType()))
    cs = graph.addComputeSet(name)
    for tile, intervals in enumerate(graph.getTileMapping(base[0])):
        if not intervals:
            continue
        columns = [(iv.begin(), iv.end()) for iv in intervals]
        v = graph.addVertex(cs, vertex, {
            "srcT": concat(src.slices(columns, 1), 1).flatten(),
            "dstT": concat(dst.slices(columns, 1), 1).flatten(),
            "srcOffsetT": tInOffset, "dstOffsetT": tOutOffset, "nElementsT": tN})
        graph.setInitialValue(v["numSrcElements"], src.dim(0))
        graph.setInitialValue(v["numDstElements"], dst.dim(0))
        graph.setInitialValue(v["regionSize"], sum(e - b for b, e in columns))
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))
