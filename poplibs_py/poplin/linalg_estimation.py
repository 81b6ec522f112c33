"""Cycle estimators of the linear-algebra vertices, from PopLibs' (``poplinCycleEstimators.cpp``).

``CholeskyBlock`` costs what PopLibs' ``Cholesky`` vertex costs for its block; each row that
``ForwardSubstitution`` solves costs what PopLibs' ``TriangularSolve`` vertex (lower) costs for
one right-hand side; ``LUBlock`` costs PopLibs' ``LUDCoreVertex`` loops (4-byte aligned) run by
one worker. FLOPs are counted as PopLibs counts them (a multiply-accumulate is two).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from poplar_py import FLOAT, HALF, Target, Type, VertexPerfEstimate

Estimator = Callable[[Any, Target], VertexPerfEstimate]


def choleskyBlockCycles(dim: int, type_: Type) -> int:
    """PopLibs' Cholesky vertex on a ``dim x dim`` block."""
    if type_ == HALF:
        return dim ** 3 // 2 + 795 * dim * dim // 4 + 191 * dim // 2 + 426
    return dim ** 3 + 102 * dim * dim + 101 * dim + 102


def triangularSolveCycles(an: int, type_: Type) -> int:
    """PopLibs' (lower) TriangularSolve vertex on one right-hand side of ``an`` elements."""
    if type_ == HALF:
        return max(3 * an * an // 4 + 318 * an - 150, 0)
    return max(3 * an * an // 2 + 180 * an - 126, 0)


def luBlockCycles(depth: int) -> int:
    """PopLibs' LUDCoreVertex loops on a ``depth x depth`` block, every row on one worker."""
    return 5 + sum(5 + (depth - 1 - i) * (16 + 7 * (depth - 1 - i)) for i in range(depth))


def choleskyBlockEstimator(type_: Type) -> Estimator:
    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        n = vertex.getFieldInfo("rows").size()
        flops = n + n * (n + 1) + (n + 1) * n * (n - 1) // 3  # sqrt, add and divide, MACs
        return VertexPerfEstimate(choleskyBlockCycles(n, type_), flops, type_)
    return estimate


def forwardSubstitutionEstimator(type_: Type) -> Estimator:
    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        n, rows = vertex.getFieldInfo("a").size(), vertex.getFieldInfo("x").size()
        flops = rows * (n * (n - 1) // 2 + n)
        return VertexPerfEstimate(rows * triangularSolveCycles(n, type_), flops, type_)
    return estimate


def luBlockEstimator(type_: Type) -> Estimator:
    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        n = vertex.getFieldInfo("rows").size()
        return VertexPerfEstimate(luBlockCycles(n), (n - 1) * n * (2 * n - 1) // 3, type_)
    return estimate


#: (vertex, estimator factory, types) registered by poplin.addCodelets
LINALG_ESTIMATORS = (("poplin::CholeskyBlock", choleskyBlockEstimator, (FLOAT, HALF)),
                     ("poplin::ForwardSubstitution", forwardSubstitutionEstimator, (FLOAT, HALF)),
                     ("poplin::LUBlock", luBlockEstimator, (FLOAT,)))
