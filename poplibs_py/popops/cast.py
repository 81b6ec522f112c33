"""popops cast: convert a tensor's elements to another type, on the tiles that hold the result."""

from __future__ import annotations

from poplar_py import QUARTER, Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.types import asType

from ..poputil import PoplibsArgumentError, PoplibsError, computeWithOutput, templateVertex, tensorArgument
from .cast_quarter import castQuarterWithOutput, createQuarterOutput, isQuarterCast
from .expr_map import ProgOrCs, addElementWiseVertices, computeSetFor, createOutputForElementWiseOp

__all__ = ["cast", "castWithOutput"]


def cast(graph: Graph, src: Tensor, dst: Type | object | Tensor, prog: ProgOrCs | Tensor | None = None,
         debugName: str | ProgOrCs = "", *more: str) -> Tensor | prog_.Program:
    """``cast(graph, src, dstType, prog)``: a new tensor of type ``dstType`` holding ``src``'s values,
    laid out like ``src`` (or linearly when src is aliased or constant).

    ``cast(graph, src, dstTensor)`` (no prog) returns the program that casts into ``dstTensor``.
    Conversion (``popops::Cast2d<SrcT,DstT>`` vertices on the tiles holding the result): float ->
    integer truncates toward zero and saturates at the type's range (NaN gives 0); integer ->
    integer wraps; to a float type rounds to nearest; to bool is ``!= 0``.

    ``cast(graph, src, QUARTER, metadata, prog[, debugName])`` (PopLibs' overload) encodes FLOAT or
    HALF ``src`` as a new QUARTER tensor carrying ``metadata``; a QUARTER ``src`` casts to FLOAT or
    HALF by its own metadata (see :mod:`.cast_quarter`).
    """
    metadata = None
    if isinstance(prog, Tensor):  # (graph, src, QUARTER, metadata, prog[, debugName])
        metadata, prog = prog, None if isinstance(debugName, str) else debugName
        debugName = more[0] if more else ""
    src = tensorArgument(graph, src, "cast: the source")
    if isinstance(dst, Tensor):
        if prog is not None:
            raise PoplibsError("cast(graph, src, dst) into a tensor returns a program: pass no prog "
                               "(or use castWithOutput)")
        seq = prog_.Sequence()
        castWithOutput(graph, src, dst, seq, debugName)
        return seq
    if prog is None:
        raise PoplibsError("cast(graph, src, dstType, prog) needs a prog (a Sequence or a ComputeSet)")
    dstType = asType(dst)
    if metadata is not None:
        if dstType != QUARTER:
            raise PoplibsArgumentError(f"cast: a metadata tensor is only for casts to QUARTER, not {dstType}")
        out = createQuarterOutput(graph, src, tensorArgument(graph, metadata, "cast: the metadata"),
                                  debugName or "cast")
    elif dstType == QUARTER:
        raise PoplibsArgumentError("cast: casting to QUARTER needs its metadata tensor: "
                                   "cast(graph, src, QUARTER, metadata, prog)")
    else:
        out = createOutputForElementWiseOp(graph, [src], dstType, debugName or "cast")
    castWithOutput(graph, src, out, prog, debugName)
    return out


def castWithOutput(graph: Graph, src: Tensor, dst: Tensor, prog: ProgOrCs, debugName: str = "") -> None:
    """Write ``src``'s values converted to ``dst``'s type into ``dst`` (same shape, parallel
    writeable), with ``popops::Cast2d`` vertices on the tiles that hold ``dst``."""
    src, dst = tensorArgument(graph, src, "cast: source"), tensorArgument(graph, dst, "cast: destination")
    if src.shape() != dst.shape():
        raise PoplibsError(f"cast: source '{src.name}' has shape {src.shape()}, "
                           f"destination '{dst.name}' has {dst.shape()}")
    if not dst.isParallelWriteable():
        raise PoplibsError(f"Trying to update tensor that cannot be written in parallel: '{dst.name}'")
    if isQuarterCast(src.elementType(), dst.elementType()):
        castQuarterWithOutput(graph, src, dst, prog, debugName)
        return
    vertex = templateVertex("popops::Cast2d", src.elementType(), dst.elementType())

    def compute(out: Tensor) -> None:
        cs = computeSetFor(graph, prog, debugName or "cast")
        addElementWiseVertices(graph, cs, vertex, out, {"src": src}, outField="dst")

    computeWithOutput(graph, dst, [src], prog, debugName or "castWithOutput", compute, elementwise=True)
