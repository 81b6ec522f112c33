"""popops circular-buffer codelets: step the buffer's index, and an index some entries back."""

from poplar_py import UNSIGNED_INT, InOut, Input, Output, Vertex


class CircBufIncrIndex(Vertex):
    """``index`` advanced by one, back to 0 at ``hSize``."""

    vertexName = "popops::CircBufIncrIndex"
    index: InOut[UNSIGNED_INT]
    hSize: UNSIGNED_INT

    def compute(self):
        updated = self.index + 1
        if updated >= self.hSize:
            updated = 0
        self.index = updated


class CircOffset(Vertex):
    """``indexOut = (indexIn + offset) mod hSize`` (``offset`` < ``hSize``)."""

    vertexName = "popops::CircOffset"
    indexIn: Input[UNSIGNED_INT]
    indexOut: Output[UNSIGNED_INT]
    hSize: UNSIGNED_INT
    offset: UNSIGNED_INT

    def compute(self):
        updated = self.indexIn + self.offset
        if updated >= self.hSize:
            updated -= self.hSize
        self.indexOut = updated
