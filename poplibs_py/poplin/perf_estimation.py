"""poplin's cycle estimators: what PopLibs' AMP vertices cost for a tile's block product.

A tile's ``poplin::MatMulBlock`` computes a ``rows x inner`` by ``inner x cols`` product, which
PopLibs runs as a 1x1 convolution (``MatMul.cpp``: batch = the LHS rows, input channels = inner,
output channels = the RHS columns) on the ``ConvPartial1x1Out`` vertex: the tile's conv units hold
``weightsPerConvUnit`` input channels of ``numConvUnits`` output channels, loaded at
``convUnitCoeffLoadBytesPerCycle``; the six workers each stream a contiguous share of the field
positions through them, ``inputLoadElems`` input elements a cycle. The cycle formulas are those of
``getConvPartial1x1SupervisorCycleEstimate`` (``lib/poplin/PerformanceEstimation.hpp``, half and float
activations): a worker's piecewise cost per worklist entry, the supervisor's per-input-group,
per-output-group and per-pass overheads, the weight loads, and the zeroing pass. The block runs in
whichever orientation is cheaper (PopLibs' planner may swap a convolution's operands). A
convolution reaches this vertex as a matMul on im2col patches, so its kernel positions are input
channels here: each group of them is one weight load and one worker pass, as in ConvPartialnx1's
kernel loop.

The partial sums of a K-split add up in ``ReducePartials`` vertices costed with PopLibs' reduction
estimate (``getReduceCycleEstimate``: ``accVectorWidth`` partials per loop, a load-bound inner
loop). Integer products do not run on the AMP: a worker multiplies one pair a cycle
(:func:`scalarBlockCycles`). Every function works on ints and on numpy arrays (the planner costs
its whole grid of splits at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from poplar_py import FLOAT, HALF, Target, Type, VertexPerfEstimate

IntOrArray = int | np.ndarray

#: supervisor cycles outside the vertex's loops (ConvPartial1x1Out, half and float activations)
SUPERVISOR_OVERHEAD = 50
#: extra supervisor cycles when a worker finishes early and must be tagged
TAG_CYCLES = 14


def ceil_div(a: IntOrArray, b: IntOrArray) -> IntOrArray:
    return -(-a // b)


@dataclass(frozen=True)
class AmpFigures:
    """The AMP as one (input, partials) type pair uses it on a target."""

    numWorkers: int
    numConvUnits: int
    inputLoadElems: int
    weightsPerConvUnit: int  # input channels one pass takes (PopLibs' inChansPerGroup)
    weightLoadCycles: int  # loading every unit's weights, 64-bit loads (use128BitConvUnitLoad off)
    floatActivations: bool
    floatPartials: bool

    @staticmethod
    def of(target: Target, inputType: Type, partialsType: Type) -> AmpFigures | None:
        """The figures for these types, or None when the AMP cannot run them (integers)."""
        units = target.getNumConvUnits(inputType, partialsType)
        if not units:
            return None
        load = target.getConvUnitInputLoadElemsPerCycle(inputType)
        weights = target.getConvUnitMaxPipelineDepth(partialsType) * load
        coeff_bytes = target.getConvUnitCoeffLoadBytesPerCycle() // 2
        return AmpFigures(target.getNumWorkerContexts(), units, load, weights,
                          units * weights * inputType.size // coeff_bytes, inputType == FLOAT,
                          partialsType == FLOAT)

    @property
    def commonPath(self) -> bool:
        """Half inputs on 16 units, or float partials: the vertex's shared half/float code path."""
        return (not self.floatActivations and self.numConvUnits == 16) or self.floatPartials

    @property
    def retention(self) -> tuple[int, int]:
        """Worker cycles saved by retained state (per worker run, and per input-channel group)."""
        return (7, 3) if not self.floatActivations and (self.floatPartials or self.numConvUnits == 16) \
            else (0, 0)


def conv1x1WorkerCycles(elems: IntOrArray, amp: AmpFigures, zeroing: bool) -> np.ndarray:
    """A worker's cycles for one worklist entry of ``elems`` field positions (0: an idle worker)."""
    n = np.asarray(elems, dtype=np.int64)
    z = int(zeroing)
    if amp.floatActivations:
        per_group = 8 if amp.numConvUnits == 16 else 4 if amp.floatPartials else 2
        costs = [24, 47 + (2 + per_group) * z, 46 + (2 + 2 * per_group) * z,
                 46 + (2 + per_group * n) * z + (n - 3) * 8]
    elif amp.commonPath:
        tail = 1 if zeroing else 2
        costs = [20 + tail, 31 + tail, 40 + tail, (37 if zeroing else 38) + (n - 3) * 4]
    else:
        per_group = 4 if amp.floatPartials else 2
        costs = [24, 39 + (2 + per_group) * z, 40 + (2 + 2 * per_group) * z,
                 41 + (2 + per_group * n) * z + (n - 3) * 4]
    cycles = np.select([n == 0, n == 1, n == 2], costs[:3], costs[3])
    return np.where(n > 0, cycles - amp.retention[0], 0)


def workerShares(total: IntOrArray, workers: int) -> np.ndarray:
    """The contiguous shares of ``total`` items the workers take (PopLibs'
    ``partitionConvPartialByWorker``): worker i gets ``[i * total // W, (i + 1) * total // W)``.
    The shares lie along a new last axis."""
    t = np.asarray(total, dtype=np.int64)[..., None]
    i = np.arange(workers, dtype=np.int64)
    return (i + 1) * t // workers - i * t // workers


def conv1x1InnerLoopCycles(field: IntOrArray, amp: AmpFigures, zeroing: bool) -> np.ndarray:
    """One pass of the workers over ``field`` positions: the slowest worker times the barrel's
    width, or the fastest plus the supervisor's tag cost."""
    per_worker = conv1x1WorkerCycles(workerShares(field, amp.numWorkers), amp, zeroing) * amp.numWorkers
    return np.maximum(per_worker.max(axis=-1), per_worker.min(axis=-1) + TAG_CYCLES)


def conv1x1Cycles(field: IntOrArray, inChans: IntOrArray, outChans: IntOrArray, amp: AmpFigures
                  ) -> np.ndarray:
    """Tile cycles of ``ConvPartial1x1Out`` for one conv group: ``field`` positions, ``inChans``
    input and ``outChans`` output channels, in groups of ``weightsPerConvUnit`` and
    ``numConvUnits`` (one pass per output group)."""
    in_groups = np.maximum(ceil_div(np.asarray(inChans), amp.weightsPerConvUnit), 1)
    out_groups = ceil_div(np.asarray(outChans), amp.numConvUnits)
    zeroed = conv1x1InnerLoopCycles(field, amp, True)
    accumulated = conv1x1InnerLoopCycles(field, amp, False)
    common, loads, excess = int(amp.commonPath), amp.weightLoadCycles, 1
    kept, per_group = amp.retention
    return (SUPERVISOR_OVERHEAD + amp.numWorkers * (kept + per_group * (in_groups - 1))
            + 12 + common
            + (in_groups - 1) * (15 - common + excess + out_groups * (19 + 6 + loads + accumulated))
            + 10 + excess + out_groups * (19 - common + 7 + loads + zeroed))


def ampBlockCycles(rows: IntOrArray, inner: IntOrArray, cols: IntOrArray, amp: AmpFigures) -> np.ndarray:
    """Tile cycles of a ``rows x inner`` by ``inner x cols`` block product on the AMP: the cheaper of
    streaming the rows (the RHS columns as output channels) or the columns (operands swapped)."""
    rows, inner, cols = np.asarray(rows), np.asarray(inner), np.asarray(cols)
    cycles = np.minimum(conv1x1Cycles(rows, inner, cols, amp), conv1x1Cycles(cols, inner, rows, amp))
    return np.where((rows > 0) & (cols > 0), cycles, 0)


def scalarBlockCycles(rows: IntOrArray, inner: IntOrArray, cols: IntOrArray, workers: int) -> np.ndarray:
    """Tile cycles of an integer block product: the workers share the rows (or, with fewer rows
    than workers, column strips of them); per output row a worker zeroes and sets up (6), per
    (row, k) it loads a[i, k] and does one multiply-add per column, plus 16 to start."""
    rows, inner, cols = np.asarray(rows), np.asarray(inner), np.asarray(cols)
    short = rows < workers
    strips = np.where(short, np.maximum(1, np.minimum(cols, workers // np.maximum(rows, 1))), 1)
    worker_rows = np.where(short, np.minimum(rows, 1), ceil_div(rows, workers))
    worker_cols = ceil_div(cols, strips)
    return workers * (16 + worker_rows * (6 + worker_cols + inner * (3 + worker_cols)))


def blockCycles(rows: IntOrArray, inner: IntOrArray, cols: IntOrArray, amp: AmpFigures | None,
                workers: int) -> np.ndarray:
    """Tile cycles of a block product: on the AMP when the types run there, else on the workers."""
    if amp is None:
        return scalarBlockCycles(rows, inner, cols, workers)
    return ampBlockCycles(rows, inner, cols, amp)


def reduceCycles(elements: IntOrArray, partials: IntOrArray, partialsType: Type, outputType: Type,
                 workers: int) -> np.ndarray:
    """Tile cycles of summing ``partials`` rows of ``elements`` values (PopLibs'
    ``getReduceCycleEstimate``, the multi-input supervisor vertex, 64-bit loads; a single row is
    a cast, :func:`castCycles`); integer partials add one value per cycle, one element per loop."""
    n, depth = np.asarray(elements, dtype=np.int64), np.asarray(partials, dtype=np.int64)
    if not partialsType.is_float:
        return workers * (12 + ceil_div(n, workers) * (2 + depth))
    return np.where(depth > 1, _reduce_add_cycles(n, depth, partialsType, outputType, workers),
                    castCycles(n, partialsType, outputType, workers))


def castCycles(elements: IntOrArray, partialsType: Type, outputType: Type, workers: int) -> np.ndarray:
    """Tile cycles of converting one row of partials to the output type (PopLibs'
    ``estimateCastCycles``: each worker loads and stores a 64-bit vector a cycle)."""
    share = ceil_div(np.asarray(elements, dtype=np.int64), workers)
    loads, stores = ceil_div(share, 8 // partialsType.size), ceil_div(share, 8 // outputType.size)
    return (np.maximum(loads, stores) + 26) * workers


def _reduce_add_cycles(n: np.ndarray, depth: np.ndarray, partialsType: Type, outputType: Type,
                       workers: int) -> np.ndarray:
    """PopLibs' ``getReduceCycleEstimate`` for the multi-input vertex."""
    float_partials, float_out = partialsType == FLOAT, outputType == FLOAT
    acc = 4 if float_partials else 8
    per_loop = acc // min(acc, 8 // partialsType.size) + 1
    loops = n // acc + sum((n >> bit) & 1 for bit in range(acc.bit_length() - 1))
    whole, rest = loops // workers, loops % workers
    ragged = (rest > 0) & ((n & (acc - 1)) > 0)
    cycles = 32 + np.where(ragged, 2 * depth + (13 if float_partials else 11), 0)
    whole = whole + ((rest > 0) & ~ragged)
    tail = (7 if float_partials else 9) if float_out else (6 if float_partials else 8)
    return workers * (cycles + (per_loop * depth + tail) * whole)


def matMulFlops(rows: int, inner: int, cols: int) -> int:
    """Floating-point operations of a block product: a multiply and an add per term."""
    return 2 * rows * inner * cols


# ---- the estimators registered for poplin's vertices ----------------------------------------

def blockShape(a: int, b: int, out: int) -> tuple[int, int, int]:
    """``(rows, inner, cols)`` of a ``MatMulBlock`` from its fields' sizes (``a = rows x inner``,
    ``b = inner x cols``, ``out = rows x cols``); zeros when they fit no product."""
    if a == 0 or out == 0:
        return (1, 0, out) if out else (0, 0, 0)
    cols = math.isqrt(b * out // a)
    if cols == 0 or out % cols or b % cols or (out // cols) * (b // cols) != a:
        return 0, 0, 0
    return out // cols, b // cols, cols


def matMulBlockEstimator(inputType: Type, partialsType: Type):
    """The estimator of ``poplin::MatMulBlock<inputType, partialsType, ...>``."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        rows, inner, cols = blockShape(*(vertex.getFieldInfo(f).size() for f in ("a", "b", "out")))
        cycles = _block_cycles(rows, inner, cols, AmpFigures.of(target, inputType, partialsType),
                               target.getNumWorkerContexts())
        if not inputType.is_float:
            return VertexPerfEstimate(cycles)
        return VertexPerfEstimate(cycles, matMulFlops(rows, inner, cols), inputType, partialsType)

    return estimate


@cache
def _block_cycles(rows: int, inner: int, cols: int, amp: AmpFigures | None, workers: int) -> int:
    """:func:`blockCycles` of one vertex (a product's blocks come in a few shapes)."""
    return int(blockCycles(rows, inner, cols, amp, workers))


def reducePartialsEstimator(partialsType: Type, outputType: Type):
    """The estimator of ``poplin::ReducePartials``, ``ReducePartialsSameType`` and
    ``ScaledReducePartials`` (the scaling rides on the final store)."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        depth = vertex.getFieldInfo("partials").size()
        elements = vertex.getFieldInfo("out").size()
        return VertexPerfEstimate(int(reduceCycles(elements, depth, partialsType, outputType,
                                                   target.getNumWorkerContexts())))

    return estimate


#: the floating-point type pairs poplin builds its vertices with: (input, partials) for MatMulBlock
BLOCK_TYPES = ((FLOAT, FLOAT), (HALF, FLOAT), (HALF, HALF))
#: and (partials, output) for the reductions
REDUCE_TYPES = ((FLOAT, FLOAT), (FLOAT, HALF), (HALF, HALF))
