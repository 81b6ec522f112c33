"""popnn's cycle estimators: the non-linearity vertices at the data-path width.

PopLibs runs an element-wise non-linearity and its gradient as ``popnn::NonLinearity1D`` and
``NonLinearityGrad1D`` MultiVertices, whose estimators (``lib/popnn/popnnCycleEstimators.cpp``,
``lib/popnn/PerformanceEstimation.hpp``) cost the tile's ``n`` elements as whole data-path vectors
shared between the workers (``ceil(vectors / workers)`` each) in a pipelined loop of the
operation's per-vector cycles, the worker's set-up, and the remainder (an odd float, or 1-3
halves) on one worker. poplar-py runs them as generated ``map`` vertices costed with these
formulas (:class:`~poplibs_py.popops.perf_estimation.MapCost`); HARD_SIGMOID, which PopLibs has
no vertex for, keeps the cost of its expression. The softmaxes are reductions and maps, costed
as those.

Classification (``popnn::ReduceArgRows``, ``CalcAccuracy``) follows PopLibs' ``ReduceMaxClassGather``
and ``CalcAccuracy`` estimators; the loss itself is one-hot encoding, maps and a reduction, costed
by popops' estimators.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from poplar_py import FLOAT, HALF, Target, Type, VertexPerfEstimate

from ..popops.perf_estimation import MapCost, rowSizes

#: a non-linearity's cycles per element and per vector in the loop (float, half), forward
_FORWARD_OPS = {"RELU": ((1, 1), (1, 1)), "SIGMOID": ((5, 10), (2, 4)), "TANH": ((5, 10), (1, 2)),
                "GELU": ((10, 10), (5, 5)), "GELU_ERF": ((30, 30), (15, 15)), "SWISH": ((6, 11), (3, 5))}
#: and for the gradient
_GRADIENT_OPS = {"RELU": ((3, 3), (3, 3)), "SIGMOID": ((3, 3), (3, 3)), "TANH": ((3, 3), (3, 3)),
                 "GELU": ((10, 10), (5, 5)), "GELU_ERF": ((30, 30), (15, 15)), "SWISH": ((10, 15), (7, 9))}
#: the supervisor's share of the vertex
SUPERVISOR_CYCLES = 9


def _split(n: int, t: Type, target: Target) -> tuple[int, int]:
    """(vectors the busiest worker takes, elements left over after the vectors)."""
    vectors, remainder = divmod(n, target.getVectorWidth(t))
    return -(-vectors // target.getNumWorkerContexts()), remainder


def nonLinearityCycles(nl: str, t: Type, inPlace: bool, n: int, target: Target) -> int:
    """``NonLinearity1D`` (``InPlace``) over the tile's ``n`` elements of type ``t``."""
    op, vector_op = _FORWARD_OPS[nl][t != FLOAT]
    per_worker, remainder = _split(n, t, target)
    worker = 20 + int(nl == "SWISH" and inPlace)
    worker += (2 + op + (per_worker - 1) * vector_op + 1 + op) if per_worker else 0
    if t == FLOAT:
        worker += 3 + (2 + op) * (remainder & 1)
    else:
        worker += 4 + (2 + op) * bool(remainder & 2) + (3 + op) * (remainder & 1)
    return SUPERVISOR_CYCLES + target.getNumWorkerContexts() * worker


def nonLinearityGradCycles(nl: str, t: Type, n: int, target: Target) -> int:
    """``NonLinearityGrad1D`` over the tile's ``n`` elements of type ``t``."""
    op, vector_op = _GRADIENT_OPS[nl][t != FLOAT]
    per_worker, remainder = _split(n, t, target)
    worker = 20 + ((4 + (per_worker - 1) * vector_op + 1) if per_worker else 0)
    if t == FLOAT:
        worker += 4 + (op + 1) * bool(remainder)
    else:
        worker += 6 + (op + 2) * bool(remainder & 2) + (op + 4) * (remainder & 1)
    return SUPERVISOR_CYCLES + target.getNumWorkerContexts() * worker


def nonLinearityCost(nl: str, t: Type, inPlace: bool) -> MapCost | None:
    """The cost of the forward vertex, or None when PopLibs has none for ``nl``."""
    if nl not in _FORWARD_OPS:
        return None
    return MapCost(f"NonLinearity1D{'InPlace' * inPlace}<{t},{nl}>",
                   lambda rows, target: nonLinearityCycles(nl, t, inPlace, _total(rows), target))


def nonLinearityGradCost(nl: str, t: Type) -> MapCost | None:
    """The cost of the gradient vertex, or None when PopLibs has none for ``nl``."""
    if nl not in _GRADIENT_OPS:
        return None
    return MapCost(f"NonLinearityGrad1D<{t},{nl}>",
                   lambda rows, target: nonLinearityGradCycles(nl, t, _total(rows), target))


def _total(rows: Sequence[int]) -> int:
    return int(sum(rows))


# ---- classification ---------------------------------------------------------------------------

#: ``ReduceMaxClassGather``'s supervisor: the vertex's entry, then calling and syncing the workers
ARG_SUPERVISOR_CYCLES = 5 + 4


def argRowCycles(t: Type, n: int) -> int:
    """A worker finding the arg max (or min) of a row of ``n`` elements, as one worker pass of
    PopLibs' ``ReduceMaxClassGather``: its assembly for float and half (set-up, 3 cycles an element
    in the loop, the index worked out and stored), its compiled loop for integers."""
    if t in (FLOAT, HALF):
        return 3 + 2 + 4 + 3 + 1 + 3 + 1 + 3 * (n - 1) + 3 + 6 + 4
    return 22 + 6 * n + 25


def reduceArgRowsEstimator(t: Type) -> Callable[[Any, Target], VertexPerfEstimate]:
    """``popnn::ReduceArgRows``: worker ``w`` takes rows ``w, w + workers, ...``, one
    :func:`argRowCycles` pass each; the tile takes its workers x the busiest one, and the supervisor."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        workers = target.getNumWorkerContexts()
        rows = rowSizes(vertex.getFieldInfo("rows"))
        busiest = max((sum(argRowCycles(t, n) for n in rows[w::workers]) for w in range(workers)), default=0)
        return VertexPerfEstimate(ARG_SUPERVISOR_CYCLES + workers * busiest)

    return estimate


def calcAccuracyEstimator(vertex: Any, target: Target) -> VertexPerfEstimate:
    """``popnn::CalcAccuracy``: entry and set-up, then 4 cycles a row (two loads, compare, add)."""
    return VertexPerfEstimate(5 + 8 + 4 * vertex.getFieldInfo("expected").size() + 1)


# ---- CTC ----------------------------------------------------------------------------------------

def ctcLossEstimator(vertex: Any, target: Target) -> VertexPerfEstimate:
    """``popnn::CTCLossAndGradient`` at its largest (the lengths are read at run time): about
    12 cycles per alpha and per beta cell (two or three log-adds of a table of ``maxTime x
    (2 * maxLabelLength + 1)``), and per gradient element a pass over the extended label."""
    steps = vertex.getFieldInfo("logProbs").size()
    cells = vertex.getFieldInfo("alpha").size()
    width = cells // max(steps, 1)
    grads = sum(rowSizes(vertex.getFieldInfo("grad")))
    return VertexPerfEstimate(20 + 2 * 12 * cells + grads * (8 + 4 * width))


def ctcBeamSearchEstimator(vertex: Any, target: Target) -> VertexPerfEstimate:
    """``popnn::CTCBeamSearch`` at its largest: per step, 10 cycles a candidate to generate,
    a pairwise merge test (4 cycles a label compared) and one selection pass per beam."""
    steps = vertex.getFieldInfo("logProbs").size()
    candidates = vertex.getFieldInfo("candBeam").size()
    beams = vertex.getFieldInfo("length").size() // 2
    merge = candidates * (candidates - 1) // 2 * (6 + 4 * steps)
    per_step = 10 * candidates + merge + beams * (8 * candidates + 4 * steps)
    return VertexPerfEstimate(20 + steps * per_step + 4 * steps * vertex.getFieldInfo("labelLengths").size())



def roiAlignEstimator(bins: str) -> Callable[[Any, Target], VertexPerfEstimate]:
    """``popnn::ROIAlignForward`` (bins in ``out``) and ``Backward`` (in ``topGrad``): per sample
    about 30 cycles (its position and four weighted corners), ``grid`` squared samples a bin, and
    20 cycles a region."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        grid = int(vertex.getFieldInfo("grid").getInitialValue())
        count = sum(rowSizes(vertex.getFieldInfo(bins)))
        return VertexPerfEstimate(20 + 20 * vertex.getFieldInfo("rois").size() + 30 * grid * grid * count)

    return estimate
