"""popops::XlaWindowOffsets<I>: XLA gather/scatter index vectors to flat row offsets.

The host code views the operand as ``[rows, columns]``: its indexed dimensions (in the
order of ``scatterDimsToOperandDims`` / ``startIndexMap``) flattened into rows, every other
dimension into columns. Each window then covers a fixed set of rows relative to its start
row, so the vertex turns each index vector into one offset per covered row, ready for the
MultiSlice / MultiUpdate vertices.
"""

from poplar_py import UNSIGNED_INT, Input, Output, Vector, Vertex
from poplar_py.vertex import TypeParam

I = TypeParam("I")  # noqa: E741 - PopLibs' name for the index type

OUT_OF_RANGE = 0xFFFFFFFF


class XlaWindowOffsets(Vertex):
    """Window w starts at ``indices[w * K + j]`` in indexed dimension j (K = ``len(limits)``);
    its offsets are ``sum_j start_j * strides[j] + windowOffsets[e]`` for each of its rows e.

    A start outside ``[0, limits[j]]`` (the window would not fit) is clamped into that range
    when ``clamp`` is non-zero (XLA's gather); otherwise every offset of the window is
    OUT_OF_RANGE (0xFFFFFFFF), which the update vertices skip (XLA's scatter).
    """

    vertexName = "popops::XlaWindowOffsets"
    indices: Input[Vector[I]]
    offsets: Output[Vector[UNSIGNED_INT]]
    limits: Vector[UNSIGNED_INT]
    strides: Vector[UNSIGNED_INT]
    windowOffsets: Vector[UNSIGNED_INT]
    clamp: UNSIGNED_INT

    def compute(self):
        k = len(self.limits)
        m = len(self.windowOffsets)
        for w in range(len(self.offsets) // m):
            base = 0
            fits = 1
            for j in range(k):
                start = int(self.indices[w * k + j])
                limit = int(self.limits[j])
                if start < 0 or start > limit:
                    fits = 0
                    start = 0 if start < 0 else limit
                base += start * int(self.strides[j])
            for e in range(m):
                if fits == 1 or self.clamp != 0:
                    self.offsets[w * m + e] = base + int(self.windowOffsets[e])
                else:
                    self.offsets[w * m + e] = OUT_OF_RANGE
