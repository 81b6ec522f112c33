"""gcl's rotation of a collective's work buffer by a replica's position on the ring.

The host code gives each tile one vertex holding the tile's runs of columns of an
``[R, columns]`` buffer: for each run, its R rows in order, one vector each (each contiguous on
the tile, so nothing is staged through exchange buffers). ``replica`` is the replication index
(a constant on the vertex's tile) and ``positions`` the ring position of each replica.
"""

from poplar_py import UNSIGNED_INT, Input, MultiVertex, Output, Vector, VectorList
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class Rotate(MultiVertex):
    """Row j of ``out`` = row ``(p + j) mod numRows`` of ``base``, p this replica's ring position
    (``-p`` when ``inverse``, which undoes the rotation), in every run of columns; workers share
    each run's columns."""

    vertexName = "gcl::Rotate"
    replica: Input[UNSIGNED_INT]
    base: Input[VectorList[T]]
    out: Output[VectorList[T]]
    positions: Vector[UNSIGNED_INT]
    numRows: UNSIGNED_INT
    inverse: bool

    def compute(self, workerId):
        rows = self.numRows
        shift = self.positions[self.replica] % rows
        if self.inverse:
            shift = (rows - shift) % rows
        workers = self.numWorkers()
        for first in range(0, len(self.out), rows):
            n = len(self.out[first])
            begin = workerId * n // workers
            end = (workerId + 1) * n // workers
            row = shift
            for j in range(rows):
                source = self.base[first + row]
                target = self.out[first + j]
                for e in range(begin, end):
                    target[e] = source[e]
                row = row + 1 if row + 1 < rows else 0
        return True
