"""popops slicing codelets: multi-slice/update, dynamic slice/update at a run-time offset.

The host code views the sliced tensor as ``[numBaseElements, columns]`` (the sliced
dimension first) and gives each vertex a run of ``regionSize`` columns, flattened:
``baseT[i * regionSize + e]`` is element e of the run in row i. ``subT`` likewise holds
one run per slice element or lookup. Each update vertex has its slice's fields with the
directions of ``baseT`` and ``subT`` turned round.
"""

from poplar_py import UNSIGNED_INT, InOut, Input, Output, Vector, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")
S = TypeParam("S")


def _copy(src, srcRow, dst, dstRow, regionSize):
    for e in range(regionSize):
        dst[dstRow * regionSize + e] = src[srcRow * regionSize + e]


def _slice(base, sub, offset, numBase, numSub, update):
    """Rows ``[offset, offset + numSub)`` of ``base``, wrapping past the end to row 0 (an offset
    >= numBase starts at row 0), copied to the rows of ``sub``, or from them when ``update``."""
    regionSize = len(base) // numBase
    b = offset if offset < numBase else 0
    for s in range(numSub):
        if update:
            _copy(sub, s, base, b, regionSize)
        else:
            _copy(base, b, sub, s, regionSize)
        b = b + 1 if b + 1 < numBase else 0


class MultiSlice(Vertex):
    """Row i of ``subT`` = row ``offsets[i]`` of ``baseT``; zeros when that is out of range."""

    vertexName = "popops::MultiSlice"
    offsets: Input[Vector[UNSIGNED_INT]]
    baseT: Input[Vector[T]]
    subT: Output[Vector[T]]
    numBaseElements: UNSIGNED_INT

    def compute(self):
        regionSize = len(self.baseT) // self.numBaseElements
        for i in range(len(self.offsets)):
            off = self.offsets[i]
            if off < self.numBaseElements:
                _copy(self.baseT, off, self.subT, i, regionSize)
            else:
                for e in range(regionSize):
                    self.subT[i * regionSize + e] = 0


class MultiUpdate(MultiSlice):
    """Row ``offsets[i]`` of ``baseT`` = row i of ``subT``, in order of i (the last of
    repeated offsets wins); out-of-range offsets are skipped."""

    vertexName = "popops::MultiUpdate"
    baseT: InOut[Vector[T]]
    subT: Input[Vector[T]]

    def compute(self):
        regionSize = len(self.baseT) // self.numBaseElements
        for i in range(len(self.offsets)):
            if self.offsets[i] < self.numBaseElements:
                _copy(self.subT, i, self.baseT, self.offsets[i], regionSize)


class MultiUpdateAdd(MultiUpdate):
    """Row ``offsets[i]`` of ``baseT`` += ``scale *`` row i of ``subT`` (repeated offsets
    accumulate); out-of-range offsets are skipped."""

    vertexName = "popops::MultiUpdateAdd"
    scale: Input[S]

    def compute(self):
        regionSize = len(self.baseT) // self.numBaseElements
        for i in range(len(self.offsets)):
            off = self.offsets[i]
            if off < self.numBaseElements:
                for e in range(regionSize):
                    self.baseT[off * regionSize + e] += self.scale * self.subT[i * regionSize + e]


class DynamicSlice1D(Vertex):
    """Rows ``[offset, offset + numSubElements)`` of ``baseT`` to ``subT`` (see ``_slice``)."""

    vertexName = "popops::DynamicSlice1D"
    offset: Input[UNSIGNED_INT]
    baseT: Input[Vector[T]]
    subT: Output[Vector[T]]
    numBaseElements: UNSIGNED_INT
    numSubElements: UNSIGNED_INT

    def compute(self):
        _slice(self.baseT, self.subT, self.offset, self.numBaseElements, self.numSubElements, False)


class DynamicUpdateSlice1D(DynamicSlice1D):
    """The inverse of DynamicSlice1D: the rows of ``subT`` are written into ``baseT``."""

    vertexName = "popops::DynamicUpdateSlice1D"
    baseT: InOut[Vector[T]]
    subT: Input[Vector[T]]

    def compute(self):
        _slice(self.baseT, self.subT, self.offset, self.numBaseElements, self.numSubElements, True)
