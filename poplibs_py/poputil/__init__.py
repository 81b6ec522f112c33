"""poputil: tile mappings, clones on other graphs and IPUs, region splitting, tensor structure,
broadcasting, graph functions (``poputil.graphfn``), debug information, option specifications,
vertex names, the PopLibs error class."""

from poplar_py.quarter import createConstantMetadataTensor, createVariableMetadataTensor

from . import graphfn
from .aliasing import computeWithOutput
from .arguments import checkOptions, trailingArguments
from .broadcast import broadcastToMatch, canBroadcastToMatch, createBroadcastOperand, expandToMatchRanks
from .clone import cloneAndExpandAliasing, cloneToGraph, cloneToIpu, copyToIpu, createIpuCopy, duplicate
from .debug_info import DI_ARGS, ArgType, OpDebugInfo, PoplibsOpDebugInfo, toProfileValue
from .errors import PoplibsArgumentError, PoplibsError, sequenceArgument, tensorArgument
from .option_parsing import (
    OptionHandler,
    OptionSpec,
    createOptionalDoubleHandler,
    createOptionalEnumHandler,
    parse,
)
from .regions import intervalSequenceNumElements, splitRegions, splitRegionsBetweenWorkers
from .tile_mapping import (
    calcLinearTileMapping,
    calcLinearTileMappingAndNewOffset,
    chooseMappingOffset,
    dimIsSplitOverIPUs,
    dimIsSplitOverTiles,
    getTileImbalance,
    invTransformTileIndex,
    mapTensorLinearly,
    mapTensorLinearlyWithOffset,
    transformTileIndex,
)
from .use_tracker import TensorUseTracker
from .util import (
    balancedPartition,
    calculateUnshufflingIntervals,
    castToDeviceHalfValue,
    checkAccuracyWhenCast,
    cloneN,
    factorDims,
    flattenIndex,
    flattenIntervals,
    mergeAdjacentRegions,
    unfactorDims,
    unflattenIndex,
)
from .var_structure import (
    GroupingInfo,
    createPartitionableTensor,
    detectDimGroupings,
    detectInnermostGrouping,
    iterateTensorPartitions,
)
from .vertices import templateVertex, templateVertexParams

poplibs_error = PoplibsError  # PopLibs' C++ name

__all__ = [
    "DI_ARGS",
    "ArgType",
    "GroupingInfo",
    "OpDebugInfo",
    "OptionHandler",
    "OptionSpec",
    "PoplibsArgumentError",
    "PoplibsError",
    "PoplibsOpDebugInfo",
    "TensorUseTracker",
    "balancedPartition",
    "broadcastToMatch",
    "calcLinearTileMapping",
    "calcLinearTileMappingAndNewOffset",
    "calculateUnshufflingIntervals",
    "canBroadcastToMatch",
    "castToDeviceHalfValue",
    "checkAccuracyWhenCast",
    "checkOptions",
    "chooseMappingOffset",
    "cloneAndExpandAliasing",
    "cloneN",
    "cloneToGraph",
    "cloneToIpu",
    "computeWithOutput",
    "copyToIpu",
    "createBroadcastOperand",
    "createConstantMetadataTensor",
    "createIpuCopy",
    "createOptionalDoubleHandler",
    "createOptionalEnumHandler",
    "createPartitionableTensor",
    "createVariableMetadataTensor",
    "detectDimGroupings",
    "detectInnermostGrouping",
    "dimIsSplitOverIPUs",
    "dimIsSplitOverTiles",
    "duplicate",
    "expandToMatchRanks",
    "factorDims",
    "flattenIndex",
    "flattenIntervals",
    "getTileImbalance",
    "graphfn",
    "intervalSequenceNumElements",
    "invTransformTileIndex",
    "iterateTensorPartitions",
    "mapTensorLinearly",
    "mapTensorLinearlyWithOffset",
    "mergeAdjacentRegions",
    "parse",
    "poplibs_error",
    "sequenceArgument",
    "splitRegions",
    "splitRegionsBetweenWorkers",
    "templateVertex",
    "templateVertexParams",
    "tensorArgument",
    "toProfileValue",
    "trailingArguments",
    "transformTileIndex",
    "unfactorDims",
    "unflattenIndex",
]
