"""popops histogram codelet (PopLibs' ``Histogram1D``/``Histogram2D``): a partial histogram of
the regions of the input on one tile.
"""

from poplar_py import UNSIGNED_INT, Input, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")
OutT = TypeParam("OutT")


class Histogram(Vertex):
    """``histogram[k]`` counts the elements x of ``data`` (``|x|`` when ``absolute``) with
    ``limits[k-1] <= x < limits[k]``: bucket 0 below ``limits[0]``, the last at or above the
    last limit (``limits`` ascending). A NaN is in no range and counts in bucket 0."""

    vertexName = "popops::Histogram"
    data: Input[VectorList[T]]
    limits: Input[Vector[T]]
    histogram: Output[Vector[OutT]]
    absolute: UNSIGNED_INT

    def compute(self):
        n = len(self.limits)
        for k in range(n + 1):
            self.histogram[k] = 0
        for r in range(len(self.data)):
            row = self.data[r]
            for i in range(len(row)):
                x = row[i]
                if self.absolute != 0 and x < 0:
                    x = -x
                k = 0
                while k < n and x >= self.limits[k]:
                    k += 1
                self.histogram[k] += 1
