"""Matrix-multiplication codelets (PopLibs' poplin vertices, one MultiVertex per tile).

``MatMulBlock<InT, OutT, R, C>`` computes a tile's block product
``out[i * N + j] = sum_k a[i * K + k] * b[k * N + j]``, with ``a`` the A block (row-major, K per row),
``b`` the B block (K rows of N, row-major) and ``out`` the product's rows one after another (a
block whose rows lie together in memory is one region; the sizes give M, K and N). Workers share
the rows out in whole R-row units (the last worker also takes the leftover rows); when there are
fewer rows than workers, each row's columns are cut between several workers. Its cycles are not
this host kernel's: poplin's estimator costs the block as PopLibs' AMP vertex would run it
(``poplibs_py/poplin/perf_estimation.py``).

The bulk runs in R x C register tiles (the planner's 6 x 16): R * C sums held in a local array
across the whole k loop, which unrolls into registers that LLVM's SLP vectoriser packs (with
AVX-512, one 16-lane register per row: six independent add chains, enough to hide the add
latency), each element still summed in k order (strict IEEE needs no reassociation). Leftover
rows and columns go one at a time (the planner prefers blocks of whole tiles). Products and sums are
formed in the output type: ``OutT(a[...])`` converts (half inputs with a float output multiply
in float, in both codelet modes).
"""

import math

from poplar_py import Const, InOut, Input, LocalArray, MultiVertex, Output, Vector, VectorList
from poplar_py.vertex import TypeParam

InT = TypeParam("InT")
OutT = TypeParam("OutT")
PartT = TypeParam("PartT")


def tile(a, b, out, kk, n, i, j, R, C):
    """Rows i..i+R-1, columns j..j+C-1 of the block product: R * C sums across the k loop."""
    acc = LocalArray(OutT, R * C)
    x = LocalArray(OutT, R)
    for k in range(kk):
        for r in range(R):
            x[r] = OutT(a[(i + r) * kk + k])
        base = k * n + j
        for c in range(C):
            bc = OutT(b[base + c])
            for r in range(R):
                acc[r * C + c] += x[r] * bc
    for r in range(R):
        for c in range(C):  # (an index written out: one guard checks every store, as for the loads)
            out[(i + r) * n + j + c] = acc[r * C + c]


def strip(a, b, out, kk, n, i, j, end, R, C):
    """R rows from row i, C-column tiles from column j while they fit before ``end``; returns the
    first column left."""
    while j + C <= end:
        tile(a, b, out, kk, n, i, j, R, C)
        j += C
    return j


def band(a, b, out, kk, n, i, last, c0, c1, R, C):
    """R-row tiles from row i while R rows remain before ``last``: C-column tiles across columns
    [c0, c1), then single columns. Returns the first row left."""
    while i + R <= last:
        strip(a, b, out, kk, n, i, strip(a, b, out, kk, n, i, c0, c1, R, C), c1, R, 1)
        i += R
    return i


def product(a, b, out, kk, n, first, last, c0, c1, R, C):
    """Rows [first, last), columns [c0, c1) of the block product: R-row bands, then single rows."""
    band(a, b, out, kk, n, band(a, b, out, kk, n, first, last, c0, c1, R, C), last, c0, c1, 1, C)


def block_columns(la, lb, lo):
    """The columns n of an ``m x k`` by ``k x n`` block product from its fields' sizes
    (``la = m k``, ``lb = k n``, ``lo = m n``, so ``n * n = lb lo / la``): the candidate near the
    square root whose m and k fit every size (0 if none does). An empty inner dimension (``la``
    0) makes the product one row of zeros."""
    if la == 0 or lo == 0:
        return lo
    guess = int(math.sqrt(float(lb) / float(la) * float(lo)))
    for n in range(max(guess - 2, 1), guess + 3):
        if lo % n == 0 and lb % n == 0 and (lo // n) * (lb // n) == la:
            return n
    return 0


class MatMulBlock(MultiVertex):
    vertexName = "poplin::MatMulBlock"
    a: Input[Vector[InT]]
    b: Input[Vector[InT]]
    out: Output[Vector[OutT]]
    R: Const[int]
    C: Const[int]

    def compute(self, workerId):
        n = block_columns(len(self.a), len(self.b), len(self.out))
        if n == 0:
            return len(self.out) == 0  # sizes that fit no block product are an error
        m = len(self.out) // n
        kk = len(self.a) // m
        workers = self.numWorkers()
        first, last, c0, c1 = 0, 0, 0, n
        if m >= workers:
            # Whole R-row units per worker; the last worker also takes the m % R rows.
            units = m // self.R
            first = self.R * (workerId * units // workers)
            last = self.R * ((workerId + 1) * units // workers)
            if workerId == workers - 1:
                last = m
        else:
            parts = min(max(workers // m, 1), max(n, 1))
            row = workerId // parts
            if row < m:
                part = workerId % parts
                first, last = row, row + 1
                c0, c1 = part * n // parts, (part + 1) * n // parts
        product(self.a, self.b, self.out, kk, n, first, last, c0, c1, self.R, self.C)
        return True


class ReducePartials(MultiVertex):
    """``out[j] = sum_q partials[q][j]``, summed in q order; workers share the elements.

    Works on chunks of 8 elements whose running sums stay in registers (so a partial row is read
    8 elements at a time, which vectorises), the rest one element at a time."""

    vertexName = "poplin::ReducePartials"
    partials: Input[VectorList[PartT]]
    out: Output[Vector[OutT]]

    def compute(self, workerId):
        n = len(self.out)
        workers = self.numWorkers()
        p = len(self.partials)
        first = self.partials[0]
        j = workerId * n // workers
        end = (workerId + 1) * n // workers
        while j + 8 <= end:
            s = LocalArray(PartT, 8)
            for c in range(8):
                s[c] = first[j + c]
            for q in range(1, p):
                row = self.partials[q]
                for c in range(8):
                    s[c] += row[j + c]
            for c in range(8):
                self.out[j + c] = s[c]
            j += 8
        while j < end:
            acc = first[j]
            for q in range(1, p):
                acc += self.partials[q][j]
            self.out[j] = acc
            j += 1
        return True


class ReducePartialsSameType(MultiVertex):
    """``ReducePartials`` when the partials already have the output type: each partial row is
    added into the output in turn (``out[j]`` still sums ``partials[0][j]``, ``partials[1][j]``,
    ... in q order, so the result is the same), a contiguous loop that vectorises."""

    vertexName = "poplin::ReducePartialsSameType"
    partials: Input[VectorList[OutT]]
    out: Output[Vector[OutT]]

    def compute(self, workerId):
        n = len(self.out)
        workers = self.numWorkers()
        p = len(self.partials)
        first = workerId * n // workers
        end = (workerId + 1) * n // workers
        row = self.partials[0]
        for j in range(first, end):
            self.out[j] = row[j]
        for q in range(1, p):
            row = self.partials[q]
            for j in range(first, end):
                self.out[j] += row[j]
        return True


class ScaledReducePartials(MultiVertex):
    """``out[j] += scale * sum_q partials[q][j]`` (matMulAcc's update)."""

    vertexName = "poplin::ScaledReducePartials"
    partials: Input[VectorList[PartT]]
    out: InOut[Vector[OutT]]
    scale: PartT

    def compute(self, workerId):
        n = len(self.out)
        workers = self.numWorkers()
        p = len(self.partials)
        first = self.partials[0]
        for j in range(workerId * n // workers, (workerId + 1) * n // workers):
            acc = first[j]
            for q in range(1, p):
                acc += self.partials[q][j]
            self.out[j] = self.out[j] + self.scale * acc
        return True
