"""Dense linear-algebra codelets: the diagonal-block factorizations and triangular solves that
poplin's Cholesky, triangularSolve and LU factorization are built from (the off-diagonal blocks
are matMuls). Each vertex works on whole rows (``VectorList`` fields, one entry per row); sums
run in float64 whatever the element type.

``CholeskyBlock<T>`` factors a square block ``A = L L^T`` in place: L in the lower triangle,
zeros above (a pivot that is not positive gives NaN, as ``sqrt`` does). ``LUBlock<T>`` factors
a square block ``A = L U`` without pivoting (Doolittle): U in the upper triangle and L's
multipliers below the diagonal (L's unit diagonal is not stored). ``ForwardSubstitution<T>``
solves ``A y = x`` for each row ``x`` of ``x``, in place, with ``A`` lower triangular (only its
lower triangle is read; with ``unitDiagonal`` not its diagonal either). ``TriangularMask<T>``
copies rows keeping one triangle (row ``firstRow + r`` of a matrix), zeroing the rest, and with
``unitDiagonal`` puts ones on the diagonal.
"""

import math

from poplar_py import UNSIGNED_INT, InOut, Input, Output, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


class CholeskyBlock(Vertex):
    """``rows`` (n rows of n) -> the lower Cholesky factor, zeros above the diagonal."""

    vertexName = "poplin::CholeskyBlock"
    rows: InOut[VectorList[T]]

    def compute(self):
        n = len(self.rows)
        for j in range(n):
            rj = self.rows[j]
            s = float(rj[j])
            for k in range(j):
                s -= float(rj[k]) * float(rj[k])
            d = math.sqrt(s) if s > 0.0 else math.nan
            rj[j] = d
            for i in range(j + 1, n):
                ri = self.rows[i]
                t = float(ri[j])
                for k in range(j):
                    t -= float(ri[k]) * float(rj[k])
                ri[j] = t / d
            for c in range(j + 1, n):
                rj[c] = 0


class LUBlock(Vertex):
    """``rows`` (n rows of n) -> U on and above the diagonal, L's multipliers below it."""

    vertexName = "poplin::LUBlock"
    rows: InOut[VectorList[T]]

    def compute(self):
        n = len(self.rows)
        for j in range(n):
            rj = self.rows[j]
            pivot = float(rj[j])
            for i in range(j + 1, n):
                ri = self.rows[i]
                f = float(ri[j]) / pivot
                ri[j] = f
                for c in range(j + 1, n):
                    ri[c] = float(ri[c]) - f * float(rj[c])


class ForwardSubstitution(Vertex):
    """Each row ``x`` of ``x`` becomes ``y`` with ``a y = x`` (``a`` lower triangular, n rows)."""

    vertexName = "poplin::ForwardSubstitution"
    a: Input[VectorList[T]]
    x: InOut[VectorList[T]]
    unitDiagonal: bool

    def compute(self):
        n = len(self.a)
        for r in range(len(self.x)):
            row = self.x[r]
            for i in range(n):
                li = self.a[i]
                s = float(row[i])
                for k in range(i):
                    s -= float(li[k]) * float(row[k])
                row[i] = s if self.unitDiagonal else s / float(li[i])


class TriangularMask(Vertex):
    """``out[r] = in[r]`` on and below (``lower``) or above the diagonal of matrix row
    ``firstRow + r``, zero elsewhere; with ``unitDiagonal`` the diagonal is one."""

    vertexName = "poplin::TriangularMask"
    a: Input[VectorList[T]]
    out: Output[VectorList[T]]
    firstRow: UNSIGNED_INT
    lower: bool
    unitDiagonal: bool

    def compute(self):
        for r in range(len(self.a)):
            src = self.a[r]
            dst = self.out[r]
            i = self.firstRow + r
            for c in range(len(src)):
                keep = c <= i if self.lower else c >= i
                if c == i and self.unitDiagonal:
                    dst[c] = 1
                elif keep:
                    dst[c] = src[c]
                else:
                    dst[c] = 0
