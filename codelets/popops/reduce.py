"""Reduction codelets (PopLibs' ``popops::Reduce`` / ``popops::ScaledReduce`` family).

Every vertex reduces a list of output regions. Output region ``r`` (``out[r]``, ``width``
elements) takes the next ``numPartials[r]`` entries of ``partials``; each entry's length is a
multiple of ``width`` and its element ``j`` belongs to output element ``j % width``. So one
vertex can reduce rows (``width == 1``: every element of every entry goes to one output) and
columns (``width > 1``: entries are slices of rows lying across many outputs).

``Reduce<Op, T, AccT, OutT>`` writes ``out = reduction`` with the operation policy ``Op``
(``popops::ReduceAdd``, ``ReduceSquareAdd``, ``ReduceMul``, ``ReduceMax``, ``ReduceMin``,
``ReduceLogicalAnd``, ``ReduceLogicalOr``, ``ReduceLogAdd``), partials ``T``, accumulator ``AccT``
(the type of the ``identity`` state, the operation's neutral value) and output ``OutT``. Half
inputs use a float accumulator for ADD, SQUARE_ADD, MUL and LOG_ADD, as PopLibs does.
``ScaledReduce<Op, T, AccT, OutT, update>`` (ADD, SQUARE_ADD, LOG_ADD) reads the 0-D ``k`` and
writes ``out = k * reduction`` or, with ``update``, ``out += k * reduction``; for LOG_ADD values
are logarithms, so scaling adds ``k`` and updating log-adds into ``out``.
``ReduceAddInPlace<T, AccT>`` is ``Reduce<ReduceAdd, T, AccT, AccT>`` accumulating a region of
several columns in place, a contiguous row at a time (vectorised; the same sums, bit for bit).

Each output element combines its elements in order, one region column after another; regions
of several columns run eight columns at a time (eight accumulators in registers). Only ADD of a
whole row (``width == 1``) keeps four partial sums (``lanes``): strict IEEE code without one
serial chain of adds, PopLibs' order-free reduction.
"""

import math

from poplar_py import (
    FLOAT,
    Const,
    InOut,
    Input,
    LocalArray,
    Output,
    Policy,
    Vector,
    VectorList,
    Vertex,
    float4,
)
from poplar_py.vertex import TypeParam

T = TypeParam("T")
AccT = TypeParam("AccT")
OutT = TypeParam("OutT")


class ReduceOp(Policy):
    """A reduction: ``update(acc, x)`` combines one element into the accumulator; a scaled result
    is ``scale(acc, k)``, added to an output by ``combine(old, value)``."""

    lanes = 1  # partial results a row may use (reassociation)

    @staticmethod
    def scale(acc, k):
        return acc * k

    @staticmethod
    def combine(old, value):
        return old + value


class ReduceAdd(ReduceOp):
    policyName = "popops::ReduceAdd"
    lanes = 4

    @staticmethod
    def update(acc, x):
        return acc + x


class ReduceSquareAdd(ReduceOp):
    policyName = "popops::ReduceSquareAdd"

    @staticmethod
    def update(acc, x):
        y = AccT(x)  # half squares in float
        return acc + y * y


class ReduceMul(ReduceOp):
    policyName = "popops::ReduceMul"

    @staticmethod
    def update(acc, x):
        return acc * x


class ReduceMax(ReduceOp):
    policyName = "popops::ReduceMax"

    @staticmethod
    def update(acc, x):
        return x if x > acc or x != x else acc  # a NaN stays, as numpy's max


class ReduceMin(ReduceOp):
    policyName = "popops::ReduceMin"

    @staticmethod
    def update(acc, x):
        return x if x < acc or x != x else acc  # a NaN stays, as numpy's min


class ReduceLogicalAnd(ReduceOp):
    policyName = "popops::ReduceLogicalAnd"

    @staticmethod
    def update(acc, x):
        return acc and x


class ReduceLogicalOr(ReduceOp):
    policyName = "popops::ReduceLogicalOr"

    @staticmethod
    def update(acc, x):
        return acc or x


class ReduceLogAdd(ReduceOp):
    """Values are logarithms: ``log(exp(acc) + exp(x))``; scaling adds the log of the scale."""

    policyName = "popops::ReduceLogAdd"

    @staticmethod
    def update(acc, x):
        return log_add(acc, x)

    @staticmethod
    def scale(acc, k):
        return acc + k

    @staticmethod
    def combine(old, value):
        return log_add(old, value)


def log_add(a, b):
    """log(exp(a) + exp(b)), exact when either is -inf (log of zero probability)."""
    hi = max(a, b)
    lo = min(a, b)
    if lo == -math.inf:
        return hi
    return hi + math.log1p(math.exp(lo - hi))


def element(op, partials, first, last, i, width, identity):
    """Output element ``i`` of a region of ``width``: its elements of ``partials[first:last]``."""
    acc = identity
    for p in range(first, last):
        part = partials[p]
        if op.lanes == 4 and width == 1:  # known False for the other operations: no lanes() compiled
            acc = op.update(acc, lanes(op, part, identity))
        else:
            for j in range(i, len(part), width):
                acc = op.update(acc, part[j])
    return acc


def lanes(op, v, identity):
    """A whole vector in four independent accumulators. Float accumulators are one float4, so a
    turn is one vector add (the compiler need not find the vector in four scalars); others
    (integers, whose sums do not depend on the order) take the elements one by one."""
    n = len(v)
    if AccT != FLOAT:
        acc = identity
        for j in range(n):
            acc = op.update(acc, v[j])
        return acc
    s = float4(identity)
    whole = n - n % 4
    for j in range(0, whole, 4):  # a range loop: its accesses are checked once, before it runs
        s = op.update(s, float4(v[j], v[j + 1], v[j + 2], v[j + 3]))
    first = s[0]
    for j in range(whole, n):
        first = op.update(first, v[j])
    return op.update(op.update(first, s[1]), op.update(s[2], s[3]))


def columns(op, partials, first, last, i, width, identity, region, k, scaled, update):
    """Outputs ``region[i:i + 8]`` at once: eight accumulators, each combining its output's
    elements in ``element``'s order; a region's pieces are read eight columns at a time."""
    acc = LocalArray(AccT, 8)
    for c in range(8):
        acc[c] = identity
    for p in range(first, last):
        part = partials[p]
        for j in range(i, len(part), width):
            for c in range(8):
                acc[c] = op.update(acc[c], part[j + c])
    for c in range(8):
        store(op, region, i + c, acc[c], k, scaled, update)


def store(op, region, i, acc, k, scaled, update):
    if scaled:
        v = op.scale(acc, k)
        region[i] = op.combine(region[i], v) if update else v
    else:
        region[i] = acc


def add_rows_into(partials, first, last, region, zero):
    """``region = zero + every width-long row of partials[first:last]`` (an entry's rows in
    order): each output adds its elements in the order ``element`` does, so the same result
    when the region has the accumulator's type. The loops run along a row (unchecked and
    vectorised), up to four entries of one row each, or eight rows of one entry, a pass; the
    first pass starts from ``zero`` instead of reading the region."""
    w = len(region)
    fresh = True
    p: int = first  # 64-bit: row indices that loop versioning can reason about
    while p < last:
        n = len(partials[p])
        m = 1  # entries of one row each that this pass adds, from p
        while m < 4 and p + m < last and n == w and len(partials[p + m]) == w:
            m += 1
        if m == 4:
            add_entries(partials, p, 4, region, zero, fresh)
        elif m == 3:
            add_entries(partials, p, 3, region, zero, fresh)
        elif m == 2:
            add_entries(partials, p, 2, region, zero, fresh)
        else:
            if fresh:
                for c in range(w):
                    region[c] = zero
            a = partials[p]
            add_block(a, add_block(a, add_block(a, 0, region, 8), region, 4), region, 1)
        fresh = False
        p += m
    if fresh:
        for c in range(w):
            region[c] = zero


def add_entries(partials, p, M, region, zero, fresh):
    """``region`` (or ``zero`` when ``fresh``) plus the M one-row entries from ``partials[p]``."""
    for c in range(len(region)):
        v = zero if fresh else region[c]
        for q in range(M):
            v = v + partials[p + q][c]
        region[c] = v


def add_block(a, o, region, R):
    """``region`` plus the rows of entry ``a`` from offset ``o``, R rows a pass while R rows
    remain; returns the offset of the first row left."""
    w = len(region)
    while o + R * w <= len(a):
        for c in range(w):
            v = region[c]
            for q in range(R):
                v = v + a[o + q * w + c]
            region[c] = v
        o += R * w
    return o


def reduce_regions(op, partials, numPartials, out, identity, k, scaled, update):
    first = 0
    for r in range(len(out)):
        last = first + numPartials[r]
        region = out[r]
        width = len(region)
        i = 0
        if width > 1:
            while i + 8 <= width:
                columns(op, partials, first, last, i, width, identity, region, k, scaled, update)
                i += 8
        while i < width:
            store(op, region, i, element(op, partials, first, last, i, width, identity), k, scaled, update)
            i += 1
        first = last


class Reduce(Vertex):
    vertexName = "popops::Reduce"
    Op: Const[ReduceOp]
    partials: Input[VectorList[T]]
    identity: AccT
    out: Output[VectorList[OutT]]
    numPartials: Vector[int]

    def compute(self):
        reduce_regions(self.Op, self.partials, self.numPartials, self.out, self.identity, 1.0, False, False)


class ScaledReduce(Vertex):
    vertexName = "popops::ScaledReduce"
    Op: Const[ReduceOp]
    partials: Input[VectorList[T]]
    identity: AccT
    out: InOut[VectorList[OutT]]
    numPartials: Vector[int]
    k: Input[float]
    update: Const[bool]

    def compute(self):
        reduce_regions(self.Op, self.partials, self.numPartials, self.out, self.identity, self.k, True,
                       self.update)


class ReduceAddInPlace(Vertex):
    """ReduceAdd whose output has the accumulator's type ``<T, AccT>``: a region of several
    columns is accumulated in place, a row at a time (see ``add_rows_into``)."""

    vertexName = "popops::ReduceAddInPlace"
    partials: Input[VectorList[T]]
    identity: AccT
    out: Output[VectorList[AccT]]
    numPartials: Vector[int]

    def compute(self):
        first = 0
        for r in range(len(self.out)):
            last = first + self.numPartials[r]
            region = self.out[r]
            if len(region) == 1:
                region[0] = element(ReduceAdd, self.partials, first, last, 0, 1, self.identity)
            else:
                add_rows_into(self.partials, first, last, region, self.identity)
            first = last
