"""popops casts to and from QUARTER (PopLibs' overloads of ``cast`` that take a metadata tensor).

The vertices (``codelets/popops/cast_quarter.py``) encode or decode on the tiles that hold the
result, reading the metadata tensor there at run time; :mod:`poplar_py.quarter` gives the formats,
the rounding and the host reference. QUARTER converts to and from FLOAT and HALF.
"""

from __future__ import annotations

from poplar_py import FLOAT, HALF, QUARTER, Graph, Tensor, Type

from ..poputil import PoplibsError, computeWithOutput, mapTensorLinearly, templateVertex
from .expr_map import ProgOrCs, addElementWiseVertices, computeSetFor

#: the types QUARTER casts to and from
QUARTER_CAST_TYPES = (FLOAT, HALF)


def isQuarterCast(srcType: Type, dstType: Type) -> bool:
    return srcType == QUARTER or dstType == QUARTER


def createQuarterOutput(graph: Graph, src: Tensor, metadata: Tensor, debugName: str) -> Tensor:
    """A QUARTER tensor of ``src``'s shape carrying ``metadata``: mapped as ``src`` (linearly when
    ``src`` is aliased or constant)."""
    if src.containsAliases() or src.containsConstant():
        out = graph.addVariable(QUARTER, metadata, src.shape(), debugName)
        mapTensorLinearly(graph, out)
        return out
    return graph.clone(QUARTER, metadata, src, debugName)


def castQuarterWithOutput(graph: Graph, src: Tensor, dst: Tensor, prog: ProgOrCs, debugName: str) -> None:
    """Cast into ``dst`` where either side is QUARTER, with ``popops::CastToQuarter<SrcT>`` or
    ``popops::CastFromQuarter<DstT>`` vertices reading the QUARTER side's metadata tensor."""
    srcType, dstType = src.elementType(), dst.elementType()
    other = srcType if dstType == QUARTER else dstType
    if other not in QUARTER_CAST_TYPES:
        raise PoplibsError(f"cast: casting from {srcType} to {dstType} is not supported (QUARTER casts to "
                           f"and from {', '.join(map(str, QUARTER_CAST_TYPES))})")
    quarter = dst if dstType == QUARTER else src
    if not quarter.hasMetadata():
        raise PoplibsError(f"cast: the QUARTER tensor '{quarter.name}' has no metadata tensor (make it "
                           "with addVariable(QUARTER, metadata, shape) or a cast to QUARTER with metadata)")
    metadata = quarter.getMetadata().reshape([])
    vertex = templateVertex("popops::CastToQuarter", srcType) if dstType == QUARTER \
        else templateVertex("popops::CastFromQuarter", dstType)

    def compute(out: Tensor) -> None:
        cs = computeSetFor(graph, prog, debugName or "cast")
        addElementWiseVertices(graph, cs, vertex, out, {"src": src}, {"metadata": metadata}, outField="dst")

    computeWithOutput(graph, dst, [src], prog, debugName or "castWithOutput", compute, elementwise=True)
