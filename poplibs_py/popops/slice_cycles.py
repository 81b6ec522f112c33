"""Cycle estimators of popops' multi-update-op, sequence-slice and circular-buffer vertices,
after PopLibs' (``lib/popops/popopsCycleEstimators.cpp``, ``lib/popops/PerformanceEstimation.cpp``).

These vertices are plain (worker) vertices, so the figures are a worker's cycles. PopLibs'
MultiUpdateOp estimate assumes every offset in range for one worker and multiplies that
worker's cycles by the tile's workers (its supervisor's figure); here the one worker's
cycles are the figure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from poplar_py import Target, Type, VertexPerfEstimate

Estimator = Callable[[Any, Target], VertexPerfEstimate]


def multiUpdateOpCycles(target: Target, type_: Type, regionSize: int, numOffsets: int) -> int:
    """``getMultiUpdateOpCycleEstimate`` unscaled (MAX, MUL), every offset in range, for one worker."""
    bytes_per_elem = target.getTypeSize(type_)
    wide = bytes_per_elem == 4
    cycles = 3 + (29 if wide else 30)
    if numOffsets == 0:
        return cycles
    elems_per_atom = max(1, target.getAtomicStoreGranularity() // bytes_per_elem)
    per_offset = 11 if wide else 12
    if regionSize % elems_per_atom:  # sub-word writes: C++'s per-element cost
        per_offset += regionSize * 20
    else:
        per_offset += (regionSize // elems_per_atom - 1) * 3
    return cycles + per_offset * numOffsets


def multiUpdateOpEstimator(type_: Type) -> Estimator:
    """``popops::MultiUpdateMax<T>``: :func:`multiUpdateOpCycles` over the vertex's offsets."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        offsets = vertex.getFieldInfo("offsets").size()
        rows = int(vertex.getFieldInfo("numBaseElements").getInitialValues()[0])
        region = vertex.getFieldInfo("baseT").size() // max(rows, 1)
        return VertexPerfEstimate(multiUpdateOpCycles(target, type_, region, offsets))

    return estimate


def sequenceSliceEstimator(type_: Type) -> Estimator:
    """``popops::SequenceSlice<T>``, one worker copying every slice: PopLibs' 60 cycles of call
    overhead and 60 a slice, and, as PopLibs assumes, the whole of the smaller of ``srcT``
    and ``dstT`` copied at 32 bits per 2 cycles."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        n = vertex.getFieldInfo("nElementsT").size()
        if n == 0:
            return VertexPerfEstimate(40)
        copied = min(vertex.getFieldInfo("srcT").size(), vertex.getFieldInfo("dstT").size())
        return VertexPerfEstimate(60 + 60 * n + copied * target.getTypeSize(type_) // 4 * 2)

    return estimate


def constantEstimator(cycles: int) -> Estimator:
    """A vertex of fixed cost (PopLibs' ``CircBufIncrIndex``: 8, ``CircOffset``: 10)."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        return VertexPerfEstimate(cycles)

    return estimate
