"""popops::SelectScalarFromRows and popops::UpdateScalarInRows: one element of each row.

Each vertex gets whole rows (``params``, one entry per row, each the row's ``width``
elements) and the index of each row. An index equal to MASKED_LABEL_CODE (0xFFFFFFFF) masks
the row; any other index outside ``[0, width)`` is an error that both codelets report with
NaN, as PopLibs' do (the softmax cross-entropy gradient's interface).
"""

import math

from poplar_py import UNSIGNED_INT, InOut, Input, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")

MASKED_LABEL_CODE = 0xFFFFFFFF


class SelectScalarFromRows(Vertex):
    """``out[r] = params[r][indices[r]]``; 0 for a masked row, NaN for an index out of range."""

    vertexName = "popops::SelectScalarFromRows"
    params: Input[VectorList[T]]
    indices: Input[Vector[UNSIGNED_INT]]
    out: Output[Vector[T]]

    def compute(self):
        for r in range(len(self.out)):
            row = self.params[r]
            index = self.indices[r]
            if index == MASKED_LABEL_CODE:
                self.out[r] = 0
            elif index < len(row):
                self.out[r] = row[index]
            else:
                self.out[r] = math.nan


class UpdateScalarInRows(Vertex):
    """``params[r][indices[r]] -= 1``; a masked row is left alone, and a row whose index is out
    of range becomes all NaN."""

    vertexName = "popops::UpdateScalarInRows"
    params: InOut[VectorList[T]]
    indices: Input[Vector[UNSIGNED_INT]]

    def compute(self):
        for r in range(len(self.indices)):
            row = self.params[r]
            index = self.indices[r]
            if index == MASKED_LABEL_CODE:
                continue
            if index < len(row):
                row[index] = row[index] - 1
            else:
                for k in range(len(row)):
                    row[k] = math.nan
