"""gcl's rotation of a collective's work buffer by a replica's position on the ring, in place.

The host code gives each tile one vertex holding the tile's runs of columns of an
``[R, columns]`` buffer: for each run, its R rows in order, one vector each (each contiguous on
the tile, so nothing is staged through exchange buffers). ``replica`` is the replication index
(a constant on the vertex's tile) and ``positions`` the ring position of each replica.
"""

from poplar_py import UNSIGNED_INT, InOut, Input, MultiVertex, Vector, VectorList
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class Rotate(MultiVertex):
    """Row j of ``rows`` becomes its row ``(p + j) mod numRows``, p this replica's ring position
    (``-p`` when ``inverse``, which undoes the rotation), in every run of columns; workers share
    each run's columns. Each column goes round the cycles of the rotation with one element held
    aside (as many cycles as the gcd of the shift and the rows)."""

    vertexName = "gcl::Rotate"
    replica: Input[UNSIGNED_INT]
    rows: InOut[VectorList[T]]
    positions: Vector[UNSIGNED_INT]
    numRows: UNSIGNED_INT
    inverse: bool

    def compute(self, workerId):
        count = self.numRows
        shift = self.positions[self.replica] % count
        if self.inverse:
            shift = (count - shift) % count
        if shift == 0:
            return True
        cycles = count
        rest = shift
        while rest != 0:  # gcd(count, shift): the rotation's cycles
            cycles, rest = rest, cycles % rest
        workers = self.numWorkers()
        for first in range(0, len(self.rows), count):
            n = len(self.rows[first])
            for e in range(workerId * n // workers, (workerId + 1) * n // workers):
                for start in range(cycles):
                    held = self.rows[first + start][e]
                    k = start
                    following = (k + shift) % count
                    while following != start:
                        self.rows[first + k][e] = self.rows[first + following][e]
                        k = following
                        following = (k + shift) % count
                    self.rows[first + k][e] = held
        return True
