"""popops::ForLoopCounter<T>: the condition step of countedForLoop."""

from poplar_py import INT, UNSIGNED_INT, InOut, Input, Output, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class ForLoopCounter(Vertex):
    """``count += increment``, then ``comparisonResult = (count != limit)`` (1 or 0).

    ``T`` is INT or UNSIGNED_INT; an UNSIGNED_INT count wraps modulo 2**32, so a count
    started one step below zero reaches zero on its first increment.
    """

    vertexName = "popops::ForLoopCounter"
    count: InOut[T]
    limit: Input[T]
    comparisonResult: Output[UNSIGNED_INT]
    increment: INT

    def compute(self):
        self.count = self.count + self.increment
        self.comparisonResult = 1 if self.count != self.limit else 0
