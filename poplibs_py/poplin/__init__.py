"""poplin: matrix multiplication and convolution on the tiles.

``matMul`` and friends split a product over the tiles with a planner (:mod:`.plan`,
``getMatMulPlan``), compute block products with the ``poplin::MatMulBlock`` codelet and
reduce partial sums over K in a second compute set. ``convolution`` lowers to a grouped
matMul on im2col views of the (transformed) input, which one Copy gathers onto the tiles
that multiply them. The training passes (:mod:`.conv_backward`) reuse those views: weight
deltas and updates are grouped matMuls too, the input gradient is a convolution with
``getGradientParams``. ``poplin.experimental`` has PopLibs' QR and LU factorizations;
``cholesky`` and ``triangularSolve`` are blocked factorizations on their own codelets
(:mod:`.linalg_blocks`) and matMulAcc; ``poplin.multiconv``, ``poplin.fc``, :mod:`.conv_util`
and :mod:`.matmul_planning` cover the rest of PopLibs' poplin headers. A
:class:`PlanningCache` (also ``poplin.matmul.PlanningCache``) given to these functions as
``cache`` holds their plans.
"""

from poplar_py import INT, UNSIGNED_INT

from ..codelets import add_library
from ..poputil import templateVertex
from . import experimental, fc, multiconv
from .cholesky import cholesky, choleskyInPlace, createCholeskyInput, getCholeskyMatMulPrePlanParameters
from .conv_backward import (
    addBias,
    calculateWeightDeltas,
    convolutionBiasUpdate,
    convolutionWeightUpdate,
    createBiases,
    weightsTransposeChansFlipXY,
)
from .conv_params import ConvParams, getGradientParams, hash_value
from .conv_util import (
    NO_INDEX,
    getDilatedSize,
    getInputIndex,
    getInputRange,
    getKernelIndex,
    getKernelRange,
    getOutputRangeForInputIndex,
    getOutputRangeForInputRange,
    getOutputRangeForKernelIndex,
    getOutputRangeForKernelRange,
    getWeightUpdateParams,
)
from .convolution import (
    convolution,
    convolutionValidateOptions,
    convolutionWithOutput,
    createConvOutput,
    createInput,
    createWeights,
)
from .linalg_estimation import LINALG_ESTIMATORS
from .matmul import (
    createMatMulInputLHS,
    createMatMulInputRHS,
    getMatMulPlan,
    matMul,
    matMulAcc,
    matMulGrouped,
    matMulGroupedAcc,
    matMulGroupedWithOutput,
    matmulValidateOptions,
    matMulWithOutput,
    transposeGroupedMatrix,
)
from .matmul_operands import (
    createMatMulGroupedInputLHS,
    createMatMulGroupedInputRHS,
    createMatMulGroupedOutput,
    createMatMulOutput,
    preArrangeMatMulGroupedInputRHS,
    preArrangeMatMulInputRHS,
)
from .matmul_planning import (
    ConvPlanParams,
    MatMulParams,
    MatMulPlanParams,
    MatMulToConvOptions,
    matMulGroupedReportPlan,
    matMulReportPlan,
    preplan,
    preplanConvolutions,
    preplanMatMuls,
)
from .perf_estimation import BLOCK_TYPES, REDUCE_TYPES, matMulBlockEstimator, reducePartialsEstimator
from .plan import REGISTER_TILE, MatMulPlan, PlanningCache, TargetFigures, planMatMul
from .triangular import (
    createTriangularSolveInputLHS,
    createTriangularSolveInputRHS,
    getTriangularSolveMatMulPrePlanParameters,
    triangularMask,
    triangularSolve,
)

__all__ = ["NO_INDEX", "ConvParams", "ConvPlanParams", "MatMulParams", "MatMulPlan", "MatMulPlanParams",
           "MatMulToConvOptions", "PlanningCache", "TargetFigures", "addBias", "addCodelets",
           "calculateWeightDeltas", "cholesky", "choleskyInPlace", "convolution", "convolutionBiasUpdate",
           "convolutionValidateOptions", "convolutionWeightUpdate", "convolutionWithOutput", "createBiases",
           "createCholeskyInput", "createConvOutput", "createInput", "createMatMulGroupedInputLHS",
           "createMatMulGroupedInputRHS", "createMatMulGroupedOutput", "createMatMulInputLHS",
           "createMatMulInputRHS", "createMatMulOutput", "createTriangularSolveInputLHS",
           "createTriangularSolveInputRHS", "createWeights", "experimental", "fc",
           "getCholeskyMatMulPrePlanParameters", "getDilatedSize", "getGradientParams", "getInputIndex",
           "getInputRange", "getKernelIndex", "getKernelRange", "getMatMulPlan",
           "getOutputRangeForInputIndex", "getOutputRangeForInputRange", "getOutputRangeForKernelIndex",
           "getOutputRangeForKernelRange", "getTriangularSolveMatMulPrePlanParameters",
           "getWeightUpdateParams", "hash_value", "matMul", "matMulAcc", "matMulGrouped", "matMulGroupedAcc",
           "matMulGroupedReportPlan", "matMulGroupedWithOutput", "matMulReportPlan", "matMulWithOutput",
           "matmulValidateOptions", "multiconv", "planMatMul", "preArrangeMatMulGroupedInputRHS",
           "preArrangeMatMulInputRHS", "preplan", "preplanConvolutions", "preplanMatMuls",
           "transposeGroupedMatrix", "triangularMask", "triangularSolve", "weightsTransposeChansFlipXY"]


def addCodelets(graph) -> None:
    """Register the poplin codelets with ``graph`` (call once before using poplin), and their cycle
    estimators (:mod:`.perf_estimation`) for every type combination poplin builds, as PopLibs'
    ``poplin::addCodelets`` does; an estimator or ``setPerfEstimate`` the user sets later wins."""
    add_library(graph, "poplin")
    integers = ((INT, INT), (UNSIGNED_INT, UNSIGNED_INT))
    for in_type, partials in BLOCK_TYPES + integers:
        graph.registerPerfEstimator(templateVertex("poplin::MatMulBlock", in_type, partials, *REGISTER_TILE),
                                    matMulBlockEstimator(in_type, partials))
    for partials, out_type in REDUCE_TYPES + integers:
        estimator = reducePartialsEstimator(partials, out_type)
        names = [templateVertex("poplin::ScaledReducePartials", partials, out_type),
                 templateVertex("poplin::ReducePartials", partials, out_type) if partials != out_type
                 else templateVertex("poplin::ReducePartialsSameType", out_type)]
        for name in names:
            graph.registerPerfEstimator(name, estimator)
    for vertex, factory, types in LINALG_ESTIMATORS:
        for type_ in types:
            graph.registerPerfEstimator(templateVertex(vertex, type_), factory(type_))
