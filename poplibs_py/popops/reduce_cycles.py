"""The cycle estimate of popops' reduction vertices (PopLibs' ``lib/popops/reduction/
CycleEstimationFunctions.cpp``).

A ``Reduce``, ``ScaledReduce`` or ``ReduceAddInPlace`` vertex is one worker's share of a tile's
output regions: region ``r`` of ``out`` sums (or takes the maximum of ...) its ``numPartials[r]``
entries of ``partials``, each a whole number of copies of the region. PopLibs picks a specialised
assembly vertex for the shapes it has one for (``getReductionVertexSpecialisation``), and so does
the estimate, by the work's shape:

* one output element from one run of partials (ADD, SQUARE_ADD, LOG_ADD, not updating): PopLibs'
  ``SCALAR_OUTPUT_SINGLE_INPUT`` (``getCyclesEstimateForSingleInput``), the accumulators' vector
  (4 floats, 8 halves) every max(loads, 1) cycles;
* several single outputs, each from one run of partials of the same length (the vectorised
  operations): ``ALL_REGIONS_CONTINUOUS``, PopLibs' ``ContinuousReduce``
  (``getCycleEstimateReduceAllRegionsContinuous``), a loop over each output's partials at the
  accumulators' width limited by the data path, and 12 cycles an output;
* outputs of whole 32-bit words whose partials are rows of the region (ADD, SQUARE_ADD, MAX,
  MIN, LOG_ADD into float or half): ``STRIDED_REDUCE`` (``getCyclesEstimateForStridedReduce``), a
  loop over the region's 64-bit vectors with a cycle per partial row, each region on its own;
* anything else: the general vertex (``getCyclesEstimateForReduce``), an outer loop over vectors
  of the region (8 halves or 4 floats in the accumulators for ADD and SQUARE_ADD, the data-path
  vector for MUL, MAX and MIN), and for each partial an inner loop loading one vector per pass at
  the data-path width, plus per-region set-up, the remainder checks and the (scaled, updated)
  store in the output type; LOGICAL_AND, LOGICAL_OR and LOG_ADD are C++ loops of one element per
  pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from poplar_py import FLOAT, HALF, Target, Type, VertexPerfEstimate

from .perf_estimation import rowSizes

#: operations PopLibs runs in vectorised assembly, and those of them that use the accumulators
VECTORISED = frozenset({"Add", "SquareAdd", "Mul", "Max", "Min"})
#: operations with PopLibs' single-input and strided specialisations
SINGLE_INPUT = frozenset({"Add", "SquareAdd", "LogAdd"})
STRIDED = frozenset({"Add", "SquareAdd", "Max", "Min", "LogAdd"})
ACCUMULATED = frozenset({"Add", "SquareAdd"})
#: cycles of one element of the C++ operations (LOG_ADD's exp and log: 20)
SCALAR_OP_CYCLES = {"LogAdd": 20}


def accumulatorWidth(partialsType: Type) -> int:
    """Elements the accumulators take per pass: 8 halves, 4 floats, else 1."""
    return {HALF: 8, FLOAT: 4}.get(partialsType, 1)


def reduceCycles(partials: Sequence[int], outs: Sequence[int], numPartials: Sequence[int],
                 partialsType: Type, outType: Type, op: str, update: bool, target: Target) -> int:
    """Worker cycles of a reduction vertex: ``outs`` region lengths, ``numPartials[r]`` entries of
    ``partials`` (their lengths) for region ``r``, ``op`` the operation's name (``Operation.value``);
    the specialised vertex's figure where PopLibs has one for the shape."""
    if op in SINGLE_INPUT and not update and list(outs) == [1] and len(partials) == 1:
        return singleInputCycles(partials[0], partialsType, outType, op, target)
    if op in VECTORISED and len(outs) > 1 and set(outs) == {1} and set(numPartials) == {1} \
            and len(set(partials)) == 1:
        return continuousCycles(partials[0], len(outs), partialsType, update, target)
    rows = _rows(partials, outs, numPartials)
    if op in STRIDED and outType in (FLOAT, HALF) and rows is not None and all(
            w * outType.size % 4 == 0 and w * partialsType.size % 8 == 0 for w in outs):
        return sum(stridedCycles(w, p, partialsType, outType, op, update, target) for w, p in zip(outs, rows))
    return generalCycles(partials, outs, numPartials, partialsType, outType, op, update, target)


def _rows(partials: Sequence[int], outs: Sequence[int], numPartials: Sequence[int]) -> list[int] | None:
    """The partial rows of each region (each entry a whole number of the region's width), else None."""
    rows, first = [], 0
    for width, count in zip(outs, numPartials):
        entries = partials[first:first + count]
        if width == 0 or any(n % width for n in entries):
            return None
        rows.append(sum(entries) // width)
        first += count
    return rows


def _op_vector(op: str, partialsType: Type, strided: bool) -> tuple[int, int]:
    """(elements, cycles) of one vector operation (``getOpVectorWidthAndCycles``): the
    accumulators' width a cycle; LOG_ADD's assembly (strided only) 2 floats in 23 cycles or 4 halves
    in 13, its C++ one element in 20."""
    if op != "LogAdd":
        return accumulatorWidth(partialsType), 1
    if strided:
        return (4, 13) if partialsType == HALF else (2, 23)
    return 1, 20


def singleInputCycles(n: int, partialsType: Type, outType: Type, op: str, target: Target) -> int:
    """``getCyclesEstimateForSingleInput``: ``n`` partials into one output."""
    width, per_op = _op_vector(op, partialsType, False)
    per_cycle = min(width, target.getVectorWidth(partialsType))
    loads = width // per_cycle
    per_loop, elements = max(loads, per_op), per_cycle * loads
    cycles = 1 + 2 + 6 + per_loop * n // elements + 5 + n % elements + 3
    return cycles + (5 if outType != FLOAT else 0)


def continuousCycles(n: int, outputs: int, partialsType: Type, update: bool, target: Target) -> int:
    """``getCycleEstimateReduceAllRegionsContinuous``: ``outputs`` outputs of ``n`` partials each
    (PopLibs passes the vertex's ``numOutputsM1`` as the count; this takes the outputs)."""
    path = target.getDataPathWidth() // (8 * partialsType.size)
    per_loop = min(accumulatorWidth(partialsType), path)
    return outputs * (n // per_loop) + (2 if n & 1 else 0) + 12 * outputs + 10 + update + 7


#: result storage after a strided loop: PopLibs' table by partials type, then output type, then
#: update (half partials: by operation; float partials: by whether it is LOG_ADD)
_STRIDED_STORE_HALF = {HALF: {"Add": (7, 9), "Max": (7, 10), "Min": (7, 10), "LogAdd": (7, 22)},
                       FLOAT: {"Add": (6, 11), "Max": (7, 10), "Min": (7, 10), "LogAdd": (7, 56)}}
_STRIDED_STORE_FLOAT = {HALF: {False: (2, 4), True: (2, 13)}, FLOAT: {False: (2, 5), True: (2, 27)}}


def stridedCycles(width: int, rows: int, partialsType: Type, outType: Type, op: str, update: bool,
                  target: Target) -> int:
    """``getCyclesEstimateForStridedReduce``: ``rows`` partial rows of ``width`` into ``width``
    outputs (one outer stride)."""
    vector, per_op = _op_vector(op, partialsType, True)
    if partialsType == HALF:
        store = _STRIDED_STORE_HALF[outType].get(op, (0, 0))  # SQUARE_ADD: none in the table
        post = 1 + store[update]
    else:
        post = (3 if op == "Add" else 2) + _STRIDED_STORE_FLOAT[outType][op == "LogAdd"][update]
    outer = 3 + post + 3 + per_op * (rows - 1)
    per_loop = math.gcd(min(vector, target.getVectorWidth(partialsType)), width)
    return 3 + 2 + 6 + 5 + outer * -(-width // per_loop)


def generalCycles(partials: Sequence[int], outs: Sequence[int], numPartials: Sequence[int],
                  partialsType: Type, outType: Type, op: str, update: bool, target: Target) -> int:
    """``getCyclesEstimateForReduce``: the general vertex."""
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
