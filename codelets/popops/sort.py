"""popops sorting codelets: one vertex sorts one row (a stable bottom-up merge sort).

Order: ascending, NaN after every number (as numpy); equal elements keep their order.
Each vertex gets scratch rows of the same length to merge into.
"""

from poplar_py import UNSIGNED_INT, InOut, Input, Output, Vector, Vertex
from poplar_py.vertex import TypeParam

K = TypeParam("K")
V = TypeParam("V")


def _less(a, b):
    """a before b: a < b, or a is a number and b is NaN."""
    return a < b or (a == a and b != b)


def _before(a, b, descending):
    if descending:
        return _less(b, a)
    return _less(a, b)


def _merge(keys, vals, dkeys, dvals, lo, mid, hi, descending, withValues):
    """Runs [lo, mid) and [mid, hi) of ``keys`` merged into ``dkeys``, ``vals`` into ``dvals``
    alike when ``withValues``."""
    i = lo
    j = mid
    for k in range(lo, hi):
        # take from the right run only when strictly before the left: stable
        src = i
        if j < hi and (i >= mid or _before(keys[j], keys[i], descending)):
            src = j
            j += 1
        else:
            i += 1
        dkeys[k] = keys[src]
        if withValues:
            dvals[k] = vals[src]


def _sort(keys, vals, tkeys, tvals, descending, withValues):
    """Sort keys (and vals with them when ``withValues``) in place: merge passes of doubling
    width, back and forth between the rows and the scratch rows tkeys/tvals."""
    n = len(keys)
    width = 1
    inMain = True
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            if inMain:
                _merge(keys, vals, tkeys, tvals, lo, mid, hi, descending, withValues)
            else:
                _merge(tkeys, tvals, keys, vals, lo, mid, hi, descending, withValues)
        inMain = not inMain
        width *= 2
    if not inMain:  # the last pass ended in the scratch rows: a merge with no right run copies back
        _merge(tkeys, tvals, keys, vals, 0, n, n, descending, withValues)


class Sort(Vertex):
    """Sort ``data`` in place."""

    vertexName = "popops::Sort"
    data: InOut[Vector[K]]
    scratch: InOut[Vector[K]]

    def compute(self):
        # no values: the keys stand in for them, unused
        _sort(self.data, self.data, self.scratch, self.scratch, False, False)


class SortKeyValue(Vertex):
    """Sort ``keys`` in place, permuting ``values`` the same way."""

    vertexName = "popops::SortKeyValue"
    keys: InOut[Vector[K]]
    values: InOut[Vector[V]]
    scratchKeys: InOut[Vector[K]]
    scratchValues: InOut[Vector[V]]

    def compute(self):
        _sort(self.keys, self.values, self.scratchKeys, self.scratchValues, False, True)


class TopK(Vertex):
    """The ``len(outValues)`` largest (or smallest) elements of ``inp`` and their indices.

    Sorted stably, largest first when ``largest`` (NaN counts as the largest), then
    written out in that order or, with ``reverse``, the other way round.
    """

    vertexName = "popops::TopK"
    inp: Input[Vector[K]]
    outValues: Output[Vector[K]]
    outIndices: Output[Vector[UNSIGNED_INT]]
    keys: InOut[Vector[K]]
    indices: InOut[Vector[UNSIGNED_INT]]
    scratchKeys: InOut[Vector[K]]
    scratchIndices: InOut[Vector[UNSIGNED_INT]]
    largest: bool
    reverse: bool

    def compute(self):
        n = len(self.inp)
        for i in range(n):
            self.keys[i] = self.inp[i]
            self.indices[i] = i
        _sort(self.keys, self.indices, self.scratchKeys, self.scratchIndices, self.largest, True)
        k = len(self.outValues)
        for i in range(k):
            src = i
            if self.reverse:
                src = k - 1 - i
            self.outValues[i] = self.keys[src]
            self.outIndices[i] = self.indices[src]
