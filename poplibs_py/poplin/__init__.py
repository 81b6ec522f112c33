"""poplin: matrix multiplication and convolution on the tiles.

``matMul`` and friends split a product over the tiles with a planner (:mod:`.plan`,
``getMatMulPlan``), compute block products with the ``poplin::MatMulBlock`` codelet and
reduce partial sums over K in a second compute set. ``convolution`` lowers to a grouped
matMul on im2col views of the (transformed) input, which one Copy gathers onto the tiles
that multiply them. The training passes (:mod:`.conv_backward`) reuse those views: weight
deltas and updates are grouped matMuls too, the input gradient is a convolution with
``getGradientParams``. ``poplin.experimental`` has PopLibs' QR factorization.
"""

from ..codelets import add_library
from . import experimental
from .conv_backward import (
    addBias,
    calculateWeightDeltas,
    convolutionBiasUpdate,
    convolutionWeightUpdate,
    createBiases,
    weightsTransposeChansFlipXY,
)
from .conv_params import ConvParams, getGradientParams
from .convolution import convolution, createInput, createWeights
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

__all__ = ["ConvParams", "MatMulPlan", "TargetFigures", "addBias", "addCodelets", "calculateWeightDeltas",
           "convolution", "convolutionBiasUpdate", "convolutionWeightUpdate", "createBiases", "createInput",
           "createMatMulInputLHS", "createMatMulInputRHS", "createWeights", "experimental",
           "getGradientParams", "getMatMulPlan", "matMul", "matMulAcc", "matMulGrouped", "matMulGroupedAcc",
           "matMulGroupedWithOutput", "matMulWithOutput", "planMatMul", "transposeGroupedMatrix",
           "weightsTransposeChansFlipXY"]


def addCodelets(graph) -> None:
    """Register the poplin codelets with ``graph`` (call once before using poplin)."""
    add_library(graph, "poplin")
