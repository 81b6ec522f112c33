"""The cycle estimate of popops' reduction vertices (PopLibs' ``getCyclesEstimateForReduce``,
``lib/popops/reduction/CycleEstimationFunctions.cpp``, the general vertex with a list of partials
per output region).

A ``Reduce``, ``ScaledReduce`` or ``ReduceAddInPlace`` vertex is one worker's share of a tile's
output regions: region ``r`` of ``out`` sums (or takes the maximum of ...) its ``numPartials[r]``
entries of ``partials``, each a whole number of copies of the region. ADD, SQUARE_ADD, MUL, MAX
and MIN are vectorised: an outer loop over vectors of the region (8 halves or 4 floats in the
accumulators for ADD and SQUARE_ADD, the data-path vector for the others), and for each partial an
inner loop loading one vector per pass at the data-path width, plus per-region set-up, the
remainder checks and the (scaled, updated) store in the output type. LOGICAL_AND, LOGICAL_OR and
LOG_ADD are C++ loops of one element per pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from poplar_py import FLOAT, HALF, Target, Type, VertexPerfEstimate

from .perf_estimation import rowSizes

#: operations PopLibs runs in vectorised assembly, and those of them that use the accumulators
VECTORISED = frozenset({"Add", "SquareAdd", "Mul", "Max", "Min"})
ACCUMULATED = frozenset({"Add", "SquareAdd"})
#: cycles of one element of the C++ operations (LOG_ADD's exp and log: 20)
SCALAR_OP_CYCLES = {"LogAdd": 20}


def accumulatorWidth(partialsType: Type) -> int:
    """Elements the accumulators take per pass: 8 halves, 4 floats, else 1."""
    return {HALF: 8, FLOAT: 4}.get(partialsType, 1)


def reduceCycles(partials: Sequence[int], outs: Sequence[int], numPartials: Sequence[int],
                 partialsType: Type, outType: Type, op: str, update: bool, target: Target) -> int:
    """Worker cycles of a reduction vertex: ``outs`` region lengths, ``numPartials[r]`` entries of
    ``partials`` (their lengths) for region ``r``, ``op`` the operation's name (``Operation.value``)."""
    cycles = 5 + 1 + 1
    if op not in VECTORISED:
        cycles += 12 * 2
        per_element = 24 + SCALAR_OP_CYCLES.get(op, 1) + int(outType != partialsType)
        return cycles + 8 * len(outs) + sum(22 + per_element * n for n in partials)
    path = target.getDataPathWidth() // (8 * partialsType.size)  # partials per load
    accumulated = op in ACCUMULATED
    width = accumulatorWidth(partialsType) if accumulated else target.getVectorWidth(partialsType)
    out_width = target.getVectorWidth(outType)

    def store(w: int) -> int:
        return (2 + update) * min(w, out_width) + accumulated

    per_load = (2 if accumulated else 0) + 2 + width // min(width, path)
    checks = (width - 1).bit_length()
    cycles += 3 + 23
    first = 0
    for length, count in zip(outs, numPartials):
        loops, remaining = divmod(length, width)
        cycles += 16 + 6 + 2 * checks + 2
        cycles += loops * ((5 if accumulated else 3) + store(width) + 1) + loops * count * (7 + 3)
        tails = [1 << i for i in range(checks) if remaining & (1 << i)]
        cycles += sum((4 if accumulated else 2) + store(r) + count * (7 + 3) for r in tails)
        for n in partials[first:first + count]:
            copies = n // length if length else 0
            cycles += loops * copies * (per_load + 3)
            cycles += sum(copies * (2 + r // min(r, path) + 3) for r in tails)
        first += count
    return cycles


def reduceEstimator(partialsType: Type, outType: Type, op: str, update: bool
                    ) -> Callable[[Any, Target], VertexPerfEstimate]:
    """The estimator of ``popops::Reduce``, ``ScaledReduce`` and ``ReduceAddInPlace`` vertices."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        return VertexPerfEstimate(reduceCycles(
            rowSizes(vertex.getFieldInfo("partials")), rowSizes(vertex.getFieldInfo("out")),
            vertex.getFieldInfo("numPartials").getInitialValues(), partialsType, outType, op, update,
            target))

    return estimate
