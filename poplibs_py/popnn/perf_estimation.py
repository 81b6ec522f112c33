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
"""

from __future__ import annotations

from collections.abc import Sequence

from poplar_py import FLOAT, Target, Type

from ..popops.perf_estimation import MapCost

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
