"""popops sequence-slice codelet: copy runs of rows between two 2-D tensors at run-time offsets.

``srcT`` and ``dstT`` are the columns one tile holds of ``[numSrcElements, regionSize]`` and
``[numDstElements, regionSize]`` views, flattened row by row.
"""

from poplar_py import UNSIGNED_INT, InOut, Input, Vector, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class SequenceSlice(Vertex):
    """For each o: rows ``[srcOffsetT[o], srcOffsetT[o] + nElementsT[o])`` of ``srcT`` to the
    rows from ``dstOffsetT[o]`` of ``dstT``, clipped so neither side is read or written past
    its end."""

    vertexName = "popops::SequenceSlice"
    srcT: Input[Vector[T]]
    dstT: InOut[Vector[T]]
    srcOffsetT: Input[Vector[UNSIGNED_INT]]
    dstOffsetT: Input[Vector[UNSIGNED_INT]]
    nElementsT: Input[Vector[UNSIGNED_INT]]
    numSrcElements: UNSIGNED_INT
    numDstElements: UNSIGNED_INT
    regionSize: UNSIGNED_INT

    def compute(self):
        for o in range(len(self.srcOffsetT)):
            src = self.srcOffsetT[o]
            dst = self.dstOffsetT[o]
            n = self.nElementsT[o]
            if src >= self.numSrcElements or dst >= self.numDstElements:
                n = 0
            if src + n > self.numSrcElements:
                n = self.numSrcElements - src
            if dst + n > self.numDstElements:
                n = self.numDstElements - dst
            for i in range(n * self.regionSize):
                self.dstT[dst * self.regionSize + i] = self.srcT[src * self.regionSize + i]
