"""popops::Fill<T> and Fill2d<T>: set every element of ``out`` to the vertex state ``value``."""

from poplar_py import MultiVertex, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class Fill(Vertex):
    """``out[i] = value`` for every element (a vertex over one region)."""

    vertexName = "popops::Fill"
    out: Output[Vector[T]]
    value: T

    def compute(self):
        v = self.value
        for i in range(len(self.out)):
            self.out[i] = v
        return True


class Fill2d(MultiVertex):
    """``out[w][i] = value``: worker ``w`` fills row ``w`` (its share of the tile's regions)."""

    vertexName = "popops::Fill2d"
    out: Output[VectorList[T]]
    value: T

    def compute(self, workerId):
        if workerId < len(self.out):
            v = self.value
            out = self.out[workerId]
            for i in range(len(out)):
                out[i] = v
        return True
