"""popops cast: convert a tensor's elements to another type, on the tiles that hold the result."""

from __future__ import annotations

from poplar_py import Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.types import asType

from ..poputil import PoplibsError, computeWithOutput, templateVertex, tensorArgument
from .expr_map import ProgOrCs, addElementWiseVertices, computeSetFor, createOutputForElementWiseOp

__all__ = ["cast", "castWithOutput"]


def cast(graph: Graph, src: Tensor, dst: Type | object | Tensor, prog: ProgOrCs | None = None,
         debugName: str = "") -> Tensor | prog_.Program:
    """``cast(graph, src, dstType, prog)``: a new tensor of type ``dstType`` holding ``src``'s values,
    laid out like ``src`` (or linearly when src is aliased or constant).

    ``cast(graph, src, dstTensor)`` (no prog) returns the program that casts into ``dstTensor``.
    Conversion (``popops::Cast2d<SrcT,DstT>`` vertices on the tiles holding the result): float ->
    integer truncates toward zero and saturates at the type's range (NaN gives 0); integer ->
    integer wraps; to a float type rounds to nearest; to bool is ``!= 0``.
    """
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
    out = createOutputForElementWiseOp(graph, [src], asType(dst), debugName or "cast")
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
    vertex = templateVertex("popops::Cast2d", src.elementType(), dst.elementType())

    def compute(out: Tensor) -> None:
        cs = computeSetFor(graph, prog, debugName or "cast")
        addElementWiseVertices(graph, cs, vertex, out, {"src": src}, outField="dst")

    computeWithOutput(graph, dst, [src], prog, debugName or "castWithOutput", compute, elementwise=True)
