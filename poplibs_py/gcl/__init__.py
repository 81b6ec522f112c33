"""gcl: Graphcore Communication Library collectives, across replicas and across the IPUs of
one replica.

Each collective adds cross-replica copies (or copies between IPUs) and popops vertices to the
caller's graph, in ring steps as GCL builds them, so they run on the simulated tiles and
links and are costed like any other step; nothing is computed on the host. A cross-replica
collective can run within replica groups (``CommGroup``), each group on its own ring.
``getMinIoTiles`` and ``perIPUTiles`` choose the tiles a program gives to I/O.
"""

from .all_to_all import allToAllCrossReplica
from .balanced_reorder import CollectiveBalancedHostRearrangement, CollectiveBalancedReorder
from .cross_replica import (
    allGatherCrossReplica,
    allGatherToDestinationCrossReplica,
    allReduceCrossReplica,
    allReduceInPlaceCrossReplica,
    allReduceToDestinationCrossReplica,
    broadcastCrossReplica,
    reduceScatterCrossReplica,
    reduceScatterToDestinationCrossReplica,
)
from .groups import CommGroup, CommGroupType
from .operators import CollectiveOperator
from .tile_allocation import getMinIoTiles, perIPUTiles
from .within_replica import (
    Chunk,
    Chunks,
    allGatherWithinReplica,
    allReduceWithinReplica,
    reduceScatterWithinReplica,
)

__all__ = ["Chunk", "Chunks", "CollectiveBalancedHostRearrangement", "CollectiveBalancedReorder",
           "CollectiveOperator", "CommGroup", "CommGroupType", "allGatherCrossReplica",
           "allGatherToDestinationCrossReplica", "allGatherWithinReplica", "allReduceCrossReplica",
           "allReduceInPlaceCrossReplica", "allReduceToDestinationCrossReplica", "allReduceWithinReplica",
           "allToAllCrossReplica", "broadcastCrossReplica", "getMinIoTiles", "perIPUTiles",
           "reduceScatterCrossReplica", "reduceScatterToDestinationCrossReplica",
           "reduceScatterWithinReplica"]
