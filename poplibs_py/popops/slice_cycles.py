"""Cycle estimators of popops' multi-update-op, sequence-slice and circular-buffer vertices,
after PopLibs' (``lib/popops/popopsCycleEstimators.cpp``, ``lib/popops/PerformanceEstimation.cpp``).

PopLibs' MultiUpdateOp estimate assumes the worst case: every offset in range for one
worker, whose cycles are multiplied by the tile's worker count (a supervisor's cost).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from poplar_py import Target, Type, VertexPerfEstimate

Estimator = Callable[[Any, Target], VertexPerfEstimate]


def multiUpdateOpCycles(target: Target, type_: Type, regionSize: int, numOffsets: int) -> int:
    """``getMultiUpdateOpCycleEstimate`` unscaled (MAX, MUL), every offset in range."""
    bytes_per_elem = target.getTypeSize(type_)
    wide = bytes_per_elem == 4
    cycles = 3 + (29 if wide else 30)
    if numOffsets == 0:
        return cycles * target.getNumWorkerContexts()
    elems_per_atom = max(1, target.getAtomicStoreGranularity() // bytes_per_elem)
    per_offset = 11 if wide else 12
    if regionSize % elems_per_atom:  # sub-word writes: C++'s per-element cost
        per_offset += regionSize * 20
    else:
        per_offset += (regionSize // elems_per_atom - 1) * 3
    return (cycles + per_offset * numOffsets) * target.getNumWorkerContexts()


def multiUpdateOpEstimator(type_: Type) -> Estimator:
    """``popops::MultiUpdateMax<T>``: :func:`multiUpdateOpCycles` over the vertex's offsets."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        offsets = vertex.getFieldInfo("offsets").size()
        rows = int(vertex.getFieldInfo("numBaseElements").getInitialValues()[0])
        region = vertex.getFieldInfo("baseT").size() // max(rows, 1)
        return VertexPerfEstimate(multiUpdateOpCycles(target, type_, region, offsets))

    return estimate


def sequenceSliceEstimator(type_: Type) -> Estimator:
    """``popops::SequenceSlice<T>``: 60 cycles of call overhead and 60 a slice, and every
    element of the smaller buffer copied at 32 bits per 2 cycles, the slices shared by the
    workers (PopLibs' estimate)."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        n = vertex.getFieldInfo("nElementsT").size()
        if n == 0:
            return VertexPerfEstimate(40)
        copied = min(vertex.getFieldInfo("srcT").size(), vertex.getFieldInfo("dstT").size())
        one_worker = (copied * target.getTypeSize(type_) // 4 * 2 + n - 1) // n
        workers = target.getNumWorkerContexts()
        runs = -(-n // workers)
        return VertexPerfEstimate(60 + one_worker * workers * runs + 60 * n)

    return estimate


def constantEstimator(cycles: int) -> Estimator:
    """A vertex of fixed cost (PopLibs' ``CircBufIncrIndex``: 8, ``CircOffset``: 10)."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        return VertexPerfEstimate(cycles)

    return estimate
