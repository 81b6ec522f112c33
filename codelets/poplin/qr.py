"""QR factorization codelets (poplin::experimental): Householder reflections on rows.

The factorization works on the rows of ``A`` transposed (A's columns) and of ``Q``, each cut to
the positions ``[row, m)`` of the current block of columns; position ``i`` of such a cut row is
the pivot of step ``k = row + i``. ``x`` is A's column k from position 0 of the cut (the
entries before ``i`` are above the diagonal and take no part).

``Householder`` finds the reflection ``H = I - 2 u u^T / |u|^2`` taking ``x[i:]`` to
``r e_i``: ``u = x[i:] + sign(d) |x[i:]| e_i`` with ``d = x[i]`` (sign(0) = +1), so that
``r = -sign(d) |x[i:]|``; it writes ``(u_i, |u|^2, r)``. The update vertices apply ``H`` to
their rows (``row -= 2 (row . u) / |u|^2 u``, sums in float64), except that the pivot column
itself is set exactly to ``r`` and zeros, and the columns before it are left alone (they are
zero there already). A zero ``x[i:]`` gives ``H = I``.
"""

import math

from poplar_py import UNSIGNED_INT, InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex


def reflect(row, x, i, reflector):
    """``row -= 2 (row . u) / |u|^2 u`` over positions ``i..``, with ``u = x`` but ``u_i`` from
    ``reflector``."""
    ui = reflector[0]
    uu = reflector[1]
    if uu == 0.0:
        return
    dot = float(row[i]) * ui
    for t in range(i + 1, len(row)):
        dot += float(row[t]) * x[t]
    f = 2.0 * dot / uu
    row[i] -= f * ui
    for t in range(i + 1, len(row)):
        row[t] -= f * x[t]


class Householder(Vertex):
    """``reflector = (u_i, |u|^2, r)`` for the pivot ``i = step[0]`` of ``x``."""

    vertexName = "poplin::experimental::Householder"
    x: Input[Vector[float]]
    step: Input[Vector[UNSIGNED_INT]]
    reflector: Output[Vector[float]]

    def compute(self):
        i = int(self.step[0])
        squares = 0.0
        for t in range(i, len(self.x)):
            squares += float(self.x[t]) * self.x[t]
        d = float(self.x[i])
        norm = math.sqrt(squares)
        sign = 1.0 if d >= 0.0 else -1.0
        self.reflector[0] = d + sign * norm
        self.reflector[1] = 2.0 * squares + 2.0 * abs(d) * norm
        self.reflector[2] = -sign * norm


class UpdateColumns(MultiVertex):
    """A's columns ``first + j`` (cut rows ``columns[j]``) after step ``i``: the pivot column
    becomes ``(r, 0, ...)``, the later ones are reflected; workers share the columns."""

    vertexName = "poplin::experimental::UpdateColumns"
    columns: InOut[VectorList[float]]
    x: Input[Vector[float]]
    step: Input[Vector[UNSIGNED_INT]]
    reflector: Input[Vector[float]]
    first: int

    def compute(self, workerId):
        i = int(self.step[0])
        for j in range(workerId, len(self.columns), self.numWorkers()):
            column = self.first + j
            row = self.columns[j]
            if column == i:
                row[i] = self.reflector[2]
                for t in range(i + 1, len(row)):
                    row[t] = 0.0
            elif column > i:
                reflect(row, self.x, i, self.reflector)


class UpdateRows(MultiVertex):
    """Rows of Q (cut) after step ``i``: each is reflected, ``Q <- Q H``; workers share the rows."""

    vertexName = "poplin::experimental::UpdateRows"
    rows: InOut[VectorList[float]]
    x: Input[Vector[float]]
    step: Input[Vector[UNSIGNED_INT]]
    reflector: Input[Vector[float]]

    def compute(self, workerId):
        i = int(self.step[0])
        for j in range(workerId, len(self.rows), self.numWorkers()):
            reflect(self.rows[j], self.x, i, self.reflector)
