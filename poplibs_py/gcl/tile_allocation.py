"""GCL's tile allocation (gcl/TileAllocation.hpp): which tiles of each IPU to give to I/O.

Programs that overlap I/O with compute split each IPU's tiles in two: ``perIPUTiles(graph, 0,
n)`` for the I/O tiles and ``perIPUTiles(graph, n, tilesPerIPU - n)`` for the compute tiles, then
``graph.createVirtualGraph`` on each list. Tile IDs are those of one IPU (0 to tilesPerIPU - 1),
as GCL's are.

The IPU reaches off-chip through exchange blocks, each serving a contiguous span of tiles; host
I/O tiles work in pairs (an even tile and the odd one after it). The simulator models
``EXCHANGE_BLOCKS`` spans per IPU (fewer on a small IPU Model: at least two pairs a span). GCL's
order, modelled here, spreads tiles over the spans: the first pair of every span, then the second
pair of every span, and so on, so any prefix of the order uses the exchange blocks evenly and
consecutive calls with growing offsets hand out disjoint sets. ``getMinIoTiles`` is one pair per
span: 32 tiles on a full-size IPU, the smallest number of I/O tiles Graphcore's frameworks accept.
Nothing runs on the tiles; the simulated exchange does not yet cost I/O tiles differently from
others.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from poplar_py import Graph
from poplar_py.checks.arguments import is_int

from ..poputil import PoplibsArgumentError

__all__ = ["EXCHANGE_BLOCKS", "getMinIoTiles", "perIPUTiles"]

#: the spans of tiles the simulator gives an IPU's exchange blocks (per IPU)
EXCHANGE_BLOCKS = 16
PAIR = 2


def getMinIoTiles(graph: Graph) -> int:
    """The fewest I/O tiles a graph must ask ``perIPUTiles`` for: one tile pair per exchange block
    span of an IPU (32 on a full-size IPU)."""
    return _spans(_tiles_per_ipu(graph, "getMinIoTiles")) * PAIR


def perIPUTiles(graph: Graph, offset: int, count: int, sorted: bool = True,  # noqa: A002 (GCL's name)
                tilePairs: bool = True) -> list[int]:
    """``count`` tile IDs of one IPU from position ``offset`` of GCL's order (the exchange block
    spans taken in turn, see the module doc), ascending when ``sorted``. With ``tilePairs`` the
    order moves a pair of tiles at a time, so an even ``offset`` and ``count`` give whole pairs (as
    host I/O needs); without it, one tile at a time."""
    tiles = _tiles_per_ipu(graph, "perIPUTiles")
    for name, value in (("offset", offset), ("count", count)):
        if not is_int(value) or value < 0:
            raise PoplibsArgumentError(f"perIPUTiles: {name} must be a non-negative integer, got {value!r}")
    for name, value in (("sorted", sorted), ("tilePairs", tilePairs)):
        if not isinstance(value, (bool, np.bool_)):
            raise PoplibsArgumentError(f"perIPUTiles: {name} must be a bool, got {value!r}")
    if offset + count > tiles:
        raise PoplibsArgumentError(f"perIPUTiles: offset {offset} + count {count} is more than the "
                                   f"{tiles} tiles of an IPU")
    chosen = _order(tiles, PAIR if tilePairs else 1)[offset:offset + count]
    return [int(t) for t in (np.sort(chosen) if sorted else chosen)]


def _tiles_per_ipu(graph: Any, what: str) -> int:
    if not isinstance(graph, Graph):
        raise PoplibsArgumentError(f"{what}: graph must be a poplar.Graph, got {type(graph).__name__}")
    return graph.getTarget().getTilesPerIPU()


def _spans(tiles: int) -> int:
    """Exchange block spans of an IPU of ``tiles`` tiles: EXCHANGE_BLOCKS, fewer when small."""
    return max(1, min(EXCHANGE_BLOCKS, tiles // (2 * PAIR)))


def _order(tiles: int, unit: int) -> np.ndarray:
    """Every tile of an IPU in GCL's order: ``unit`` tiles from each span in turn."""
    spans = _spans(tiles)
    starts = np.arange(spans + 1) * tiles // spans // PAIR * PAIR
    starts[-1] = tiles
    position = np.arange(tiles)
    span = np.searchsorted(starts, position, side="right") - 1
    # the k-th unit of every span comes before the (k+1)-th of any; spans in order within a round
    rounds = (position - starts[span]) // unit
    return position[np.lexsort((position, span, rounds))]
