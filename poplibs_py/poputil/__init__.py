"""poputil: tile mappings, region splitting, vertex names, the PopLibs error class."""

from .errors import PoplibsArgumentError, PoplibsError, tensorArgument
from .regions import splitRegions, splitRegionsBetweenWorkers
from .tile_mapping import calcLinearTileMapping, mapTensorLinearly
from .vertices import broadcastToMatch, templateVertex

__all__ = [
           "PoplibsArgumentError",
           "PoplibsError",
           "broadcastToMatch",
           "calcLinearTileMapping",
           "mapTensorLinearly",
           "splitRegions",
           "splitRegionsBetweenWorkers",
           "templateVertex",
           "tensorArgument",
]
