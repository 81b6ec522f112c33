"""gcl's rotation of a collective's work buffer by a replica's position on the ring, in place.

The host code gives each tile one vertex holding the tile's runs of columns of an
``[R, columns]`` buffer: for each run, its R rows in order, one vector each (each contiguous on
the tile, so nothing is staged through exchange buffers). ``replica`` is the replication index
(a constant on the vertex's tile) and ``positions`` the ring position of each replica.
"""

from poplar_py import UNSIGNED_INT, InOut, Input, LocalArray, MultiVertex, Vector, VectorList
from poplar_py.vertex import TypeParam

T = TypeParam("T")
BLOCK = 64  # columns a worker moves at a time, one held aside per cycle


class Rotate(MultiVertex):
    """Row j of ``rows`` becomes its row ``(p + j) mod numRows``, p this replica's ring position
    (``-p`` when ``inverse``, which undoes the rotation), in every run of columns; workers share
    each run's columns. A block of columns goes round the cycles of the rotation (as many as the gcd
    of the shift and the rows) with one row's part held aside."""

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
            begin = workerId * n // workers
            end = (workerId + 1) * n // workers
            while begin < end:  # blocks of columns: each row's part moves as one contiguous copy
                width = min(BLOCK, end - begin)
                for start in range(cycles):
                    held = LocalArray(T, BLOCK)
                    source = self.rows[first + start]
                    for e in range(width):
                        held[e] = source[begin + e]
                    k = start
                    following = k + shift if k + shift < count else k + shift - count
                    while following != start:
                        target = self.rows[first + k]
                        source = self.rows[first + following]
                        for e in range(width):
                            target[begin + e] = source[begin + e]
                        k = following
                        following = k + shift if k + shift < count else k + shift - count
                    target = self.rows[first + k]
                    for e in range(width):
                        target[begin + e] = held[e]
                begin += width
        return True
