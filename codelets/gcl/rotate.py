"""gcl's rotation of a collective's work buffer by a replica's ring position.

The host code gives each vertex a run of ``regionSize`` columns of an ``[R, columns]``
buffer, flattened row by row: ``base[i * regionSize + e]`` is element e of the run in row i.
"""

from poplar_py import UNSIGNED_INT, Input, Output, Vector, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class Rotate(Vertex):
    """Row j of ``out`` = row ``(offset + j) mod numRows`` of ``base``."""

    vertexName = "gcl::Rotate"
    offset: Input[UNSIGNED_INT]
    base: Input[Vector[T]]
    out: Output[Vector[T]]
    numRows: UNSIGNED_INT

    def compute(self):
        regionSize = len(self.base) // self.numRows
        row = self.offset % self.numRows
        for j in range(self.numRows):
            for e in range(regionSize):
                self.out[j * regionSize + e] = self.base[row * regionSize + e]
            row = row + 1 if row + 1 < self.numRows else 0
