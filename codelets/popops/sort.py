"""popops sorting codelets: one vertex sorts one row (a stable bottom-up merge sort); top-k
MultiVertices find the best k of pieces of rows (a heap of k elements) and merge two sorted
results into their best k, a piece per worker in turn.

Order: ascending, NaN after every number (as numpy); equal elements keep their order.
A sorting vertex gets scratch rows of the same length to merge into; a top-k vertex needs
no more than its outputs.
"""

from poplar_py import UNSIGNED_INT, InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex
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


# ---- top k ------------------------------------------------------------------------------------------
#
# A chunk of a row keeps its best k in a heap (its latest element, the one to drop first, at the
# root), heap-sorted at the end; two chunks' sorted results merge into the best k of both. Keys
# compare in the order ``_before(.., largest)`` then by index in the row: a total order, so the k
# chosen and their order are those of a stable sort.


def _precedes(a, ia, b, ib, descending):
    """Key a at index ia before key b at index ib: a's key first, or equal keys and ia lower."""
    if a == b or (a != a and b != b):
        return ia < ib
    if descending:  # NaN first
        return b < a or a != a
    return a < b or b != b


def _place(keys, vals, idx, key, val, index, i, size, descending, withValues):
    """Put (key, val, index) at element i of the heap of the first ``size`` elements, moving it
    down (its later child up) until it follows its children."""
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _precedes(keys[child], idx[child], keys[child + 1], idx[child + 1],
                                          descending):
            child += 1
        if not _precedes(key, index, keys[child], idx[child], descending):
            break
        keys[i] = keys[child]
        idx[i] = idx[child]
        if withValues:
            vals[i] = vals[child]
        i = child
    keys[i] = key
    idx[i] = index
    if withValues:
        vals[i] = val


def _stable_reverse(keys, vals):
    """Reverse a sorted row but keep each run of equal keys in its order."""
    n = len(keys)
    for i in range(n // 2):
        key = keys[i]
        keys[i] = keys[n - 1 - i]
        keys[n - 1 - i] = key
        val = vals[i]
        vals[i] = vals[n - 1 - i]
        vals[n - 1 - i] = val
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and (keys[hi] == keys[lo] or (keys[hi] != keys[hi] and keys[lo] != keys[lo])):
            hi += 1
        for i in range((hi - lo) // 2):  # equal keys may still differ in sign (zeros) or payload (NaN)
            key = keys[lo + i]
            keys[lo + i] = keys[hi - 1 - i]
            keys[hi - 1 - i] = key
            val = vals[lo + i]
            vals[lo + i] = vals[hi - 1 - i]
            vals[hi - 1 - i] = val
        lo = hi


def _top_k(inKeys, inVals, keys, vals, idx, offset, withValues, largest, reverse):
    """The best ``len(keys)`` of ``inKeys`` into ``keys``, sorted, with their indices (``offset``
    plus their position) in ``idx`` and their ``inVals`` in ``vals`` when ``withValues``; best
    first, or the other way round with ``reverse``."""
    k = len(keys)
    for i in range(k):
        keys[i] = inKeys[i]
        idx[i] = offset + i
        if withValues:
            vals[i] = inVals[i]
    for i in range(k // 2 - 1, -1, -1):
        _place(keys, vals, idx, keys[i], vals[i], idx[i], i, k, largest, withValues)
    for i in range(k, len(inKeys)):
        # a later element wins the root's place only with a key strictly before the root's
        if k > 0 and _before(inKeys[i], keys[0], largest):
            _place(keys, vals, idx, inKeys[i], inVals[i], offset + i, 0, k, largest, withValues)
    for end in range(k - 1, 0, -1):  # heap sort: the latest element to the back, each in turn
        key = keys[end]
        val = vals[end]
        index = idx[end]
        keys[end] = keys[0]
        idx[end] = idx[0]
        if withValues:
            vals[end] = vals[0]
        _place(keys, vals, idx, key, val, index, 0, end, largest, withValues)
    if reverse:
        if withValues:
            _stable_reverse(keys, vals)
        else:
            _stable_reverse(keys, idx)


def _merge_top(aKeys, aValues, bKeys, bValues, keys, vals, largest, reverse):
    """The best ``len(keys)`` of two sorted results, ``a`` from earlier in the row than ``b``, with
    their values; sorted as ``_top_k``'s."""
    i = 0
    j = 0
    for o in range(len(keys)):
        # b's element first only when its key is strictly before a's: equal keys come from a, the
        # earlier indices
        if j < len(bKeys) and (i >= len(aKeys) or _before(bKeys[j], aKeys[i], largest)):
            keys[o] = bKeys[j]
            vals[o] = bValues[j]
            j += 1
        else:
            keys[o] = aKeys[i]
            vals[o] = aValues[i]
            i += 1
    if reverse:
        _stable_reverse(keys, vals)


class TopK(MultiVertex):
    """Row j of ``outValues``: the ``len(outValues[j])`` largest (or smallest) elements of
    ``inp[j]``, sorted, and row j of ``outIndices`` their indices: ``offsets[j]`` plus their
    position in ``inp[j]``. Worker w takes rows w, w + 6, ...

    NaN counts as the largest; equal elements are taken in index order. They are written
    largest first when ``largest`` (smallest first otherwise), or the other way round with
    ``reverse``, equal elements in index order either way. The outputs hold a heap while a
    worker scans its row.
    """

    vertexName = "popops::TopK"
    inp: Input[VectorList[K]]
    outValues: Output[VectorList[K]]
    outIndices: Output[VectorList[UNSIGNED_INT]]
    offsets: Vector[UNSIGNED_INT]
    largest: bool
    reverse: bool

    def compute(self, workerId):
        for j in range(workerId, len(self.inp), self.numWorkers()):
            # no values: the indices stand in for them, unused
            _top_k(self.inp[j], self.inp[j], self.outValues[j], self.outIndices[j], self.outIndices[j],
                   self.offsets[j], False, self.largest, self.reverse)


class TopKKeyValue(MultiVertex):
    """As TopK on the rows of ``keys``, writing the ``values`` at the chosen keys' positions;
    ``positions`` (scratch) holds their positions while a worker runs."""

    vertexName = "popops::TopKKeyValue"
    keys: Input[VectorList[K]]
    values: Input[VectorList[V]]
    outKeys: Output[VectorList[K]]
    outValues: Output[VectorList[V]]
    positions: Output[VectorList[UNSIGNED_INT]]
    largest: bool
    reverse: bool

    def compute(self, workerId):
        for j in range(workerId, len(self.keys), self.numWorkers()):
            _top_k(self.keys[j], self.values[j], self.outKeys[j], self.outValues[j], self.positions[j], 0,
                   True, self.largest, self.reverse)


class TopKMerge(MultiVertex):
    """Row j of the outputs: the best ``len(outKeys[j])`` of the sorted rows ``aKeys[j]`` and
    ``bKeys[j]`` (results of these vertices, a's from earlier in the row than b's), with their
    values, sorted as TopK's (``reverse`` too). Worker w takes rows w, w + 6, ..."""

    vertexName = "popops::TopKMerge"
    aKeys: Input[VectorList[K]]
    aValues: Input[VectorList[V]]
    bKeys: Input[VectorList[K]]
    bValues: Input[VectorList[V]]
    outKeys: Output[VectorList[K]]
    outValues: Output[VectorList[V]]
    largest: bool
    reverse: bool

    def compute(self, workerId):
        for j in range(workerId, len(self.outKeys), self.numWorkers()):
            _merge_top(self.aKeys[j], self.aValues[j], self.bKeys[j], self.bValues[j], self.outKeys[j],
                       self.outValues[j], self.largest, self.reverse)
