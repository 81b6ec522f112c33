"""popops multi-update codelets with an operation (PopLibs' ``MultiUpdateOp``).

Fields as the MultiUpdate vertex's (``codelets/popops/dynamic_slice.py``): ``baseT`` is a run
of ``regionSize`` columns of the ``[numBaseElements, columns]`` view, ``subT`` one run per
lookup.
"""

from poplar_py import UNSIGNED_INT, InOut, Input, Vector, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class MultiUpdateMax(Vertex):
    """Row ``offsets[i]`` of ``baseT`` = the element-wise max of itself and row i of ``subT``
    (repeated offsets all count); out-of-range offsets are skipped. A NaN in either operand
    gives NaN, as popops' ``max``."""

    vertexName = "popops::MultiUpdateMax"
    offsets: Input[Vector[UNSIGNED_INT]]
    baseT: InOut[Vector[T]]
    subT: Input[Vector[T]]
    numBaseElements: UNSIGNED_INT

    def compute(self):
        regionSize = len(self.baseT) // self.numBaseElements
        for i in range(len(self.offsets)):
            off = self.offsets[i]
            if off < self.numBaseElements:
                for e in range(regionSize):
                    s = self.subT[i * regionSize + e]
                    b = self.baseT[off * regionSize + e]
                    if s > b or s != s:
                        self.baseT[off * regionSize + e] = s
