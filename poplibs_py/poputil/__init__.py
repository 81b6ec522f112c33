"""poputil: tile mappings, clones on other graphs and IPUs, region splitting, vertex names, the
PopLibs error class."""

from .aliasing import computeWithOutput
from .arguments import checkOptions, trailingArguments
from .clone import cloneToGraph, cloneToIpu, copyToIpu, duplicate
from .errors import PoplibsArgumentError, PoplibsError, sequenceArgument, tensorArgument
from .regions import splitRegions, splitRegionsBetweenWorkers
from .tile_mapping import calcLinearTileMapping, mapTensorLinearly
from .vertices import broadcastToMatch, templateVertex

__all__ = [
           "PoplibsArgumentError",
           "PoplibsError",
           "broadcastToMatch",
           "calcLinearTileMapping",
           "checkOptions",
           "cloneToGraph",
           "cloneToIpu",
           "computeWithOutput",
           "copyToIpu",
           "duplicate",
           "mapTensorLinearly",
           "sequenceArgument",
           "splitRegions",
           "splitRegionsBetweenWorkers",
           "templateVertex",
           "tensorArgument",
           "trailingArguments",
]
