"""popops::Cast<SrcT,DstT> and Cast2d<SrcT,DstT>: convert every element of ``src`` into ``dst``.

The store converts as the codelet language does: to a float type rounds to nearest, float to
integer truncates toward zero and saturates at the type's range (NaN gives 0), integer to integer
wraps, anything to bool is ``!= 0``.
"""

from poplar_py import Input, MultiVertex, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

SrcT = TypeParam("SrcT")
DstT = TypeParam("DstT")


class Cast(Vertex):
    """``dst[i] = src[i]`` converted to DstT (a vertex over one region)."""

    vertexName = "popops::Cast"
    src: Input[Vector[SrcT]]
    dst: Output[Vector[DstT]]

    def compute(self):
        for i in range(len(self.dst)):
            self.dst[i] = self.src[i]
        return True


class Cast2d(MultiVertex):
    """``dst[w][i] = src[w][i]`` converted to DstT: worker ``w`` converts row ``w`` (its share of
    the tile's regions)."""

    vertexName = "popops::Cast2d"
    src: Input[VectorList[SrcT]]
    dst: Output[VectorList[DstT]]

    def compute(self, workerId):
        if workerId < len(self.dst):
            src = self.src[workerId]
            dst = self.dst[workerId]
            for i in range(len(dst)):
                dst[i] = src[i]
        return True
