"""poplin: matrix multiplication and convolution on the tiles.

``matMul`` and friends split a product over the tiles with a planner (:mod:`.plan`,
``getMatMulPlan``), compute block products with the ``poplin::MatMulBlock`` codelet and
reduce partial sums over K in a second compute set. ``convolution`` lowers to a grouped
matMul on im2col views of the (padded) input; views never copy, so the exchange gathers
each tile's patches.
"""

from ..codelets import add_library
from .convolution import ConvParams, convolution, createInput, createWeights
from .matmul import (
    createMatMulInputLHS,
    createMatMulInputRHS,
    getMatMulPlan,
    matMul,
    matMulAcc,
    matMulGrouped,
    matMulGroupedAcc,
    matMulGroupedWithOutput,
    matMulWithOutput,
    transposeGroupedMatrix,
)
from .plan import MatMulPlan, TargetFigures, planMatMul

__all__ = ["ConvParams", "MatMulPlan", "TargetFigures", "addCodelets", "convolution", "createInput",
           "createMatMulInputLHS", "createMatMulInputRHS", "createWeights", "getMatMulPlan", "matMul",
           "matMulAcc", "matMulGrouped", "matMulGroupedAcc", "matMulGroupedWithOutput", "matMulWithOutput",
           "planMatMul", "transposeGroupedMatrix"]


def addCodelets(graph) -> None:
    """Register the poplin codelets with ``graph`` (call once before using poplin)."""
    add_library(graph, "poplin")
