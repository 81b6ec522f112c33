"""popnn codelets for classification: arg max/min of rows and counting correct predictions."""

from poplar_py import UNSIGNED_INT, Const, InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")
L = TypeParam("L")


class ReduceArgRows(MultiVertex):
    """For each row r: ``index[r]`` = position of its largest (``isMax``) or smallest element,
    the first one on ties, and ``value[r]`` = that element. NaN never replaces a number. Worker
    ``w`` takes rows ``w, w + 6, ...``."""

    vertexName = "popnn::ReduceArgRows"
    rows: Input[VectorList[T]]
    index: Output[Vector[UNSIGNED_INT]]
    value: Output[Vector[T]]
    isMax: Const[bool]

    def compute(self, workerId):
        for r in range(workerId, len(self.rows), self.numWorkers()):
            row = self.rows[r]
            best = 0
            for k in range(1, len(row)):
                if (row[k] > row[best]) if self.isMax else (row[k] < row[best]):
                    best = k
            self.index[r] = best
            self.value[r] = row[best]


class CalcAccuracy(Vertex):
    """``numCorrect += count(maxIndex[i] == expected[i])``; a masked or out-of-range label
    never matches an index."""

    vertexName = "popnn::CalcAccuracy"
    maxIndex: Input[Vector[UNSIGNED_INT]]
    expected: Input[Vector[L]]
    numCorrect: InOut[UNSIGNED_INT]

    def compute(self):
        count = self.numCorrect
        for i in range(len(self.expected)):
            label = self.expected[i]
            if label >= 0 and self.maxIndex[i] == label:
                count += 1
        self.numCorrect = count
