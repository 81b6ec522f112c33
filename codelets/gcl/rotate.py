"""gcl's rotation of a collective's work buffer by a replica's position on the ring.

The host code gives each vertex a run of columns of an ``[R, columns]`` buffer, one vector
per row (each contiguous on the vertex's tile, so nothing is staged through exchange buffers).
``replica`` is the replication index (a constant on the vertex's tile) and ``positions`` the
ring position of each replica.
"""

from poplar_py import UNSIGNED_INT, Input, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class Rotate(Vertex):
    """Row j of ``out`` = row ``(p + j) mod numRows`` of ``base``, p this replica's ring position
    (``-p`` when ``inverse``, which undoes the rotation)."""

    vertexName = "gcl::Rotate"
    replica: Input[UNSIGNED_INT]
    base: Input[VectorList[T]]
    out: Output[VectorList[T]]
    positions: Vector[UNSIGNED_INT]
    numRows: UNSIGNED_INT
    inverse: bool

    def compute(self):
        row = self.positions[self.replica] % self.numRows
        if self.inverse:
            row = (self.numRows - row) % self.numRows
        for j in range(self.numRows):
            for e in range(len(self.out[j])):
                self.out[j][e] = self.base[row][e]
            row = row + 1 if row + 1 < self.numRows else 0
