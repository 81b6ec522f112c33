"""TensorUseTracker (TileMapping.hpp): map data where it is used.

Record, for each tile, the parts of tensors a tile's vertices will read (``add``); then
``mapTensorsByUse`` maps each variable so that an element used by one tile lives there and
elements used by several tiles are spread between those tiles, in grains, as PopLibs does
(lib/poputil/TensorUseTracker.cpp). Constants are not tracked.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from typing import Any

import numpy as np

from poplar_py import Graph, Interval, Tensor

from .errors import PoplibsArgumentError, PoplibsError, tensorArgument
from .regions import splitRegions
from .tile_mapping import invTransformTileIndex

__all__ = ["TensorUseTracker"]

_Entry = tuple[int, int, frozenset]  # [lower, upper) and the tiles using it


def _uint(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise PoplibsArgumentError(f"{what} must be a non-negative integer, got {value!r:.40}")
    return int(value)


def _joined(entries: list[_Entry]) -> list[_Entry]:
    """An interval map's entries with touching neighbours of equal tile sets joined (boost's
    interval_map joins them)."""
    out: list[_Entry] = []
    for lo, hi, tiles in entries:
        if lo >= hi:
            continue
        if out and out[-1][1] == lo and out[-1][2] == tiles:
            out[-1] = (out[-1][0], hi, tiles)
        else:
            out.append((lo, hi, tiles))
    return out


def _uses(per_tile: dict[int, list[Interval]]) -> list[_Entry]:
    """The interval map of tile sets that ``add`` builds: each piece between the bounds of the
    intervals, with the set of tiles whose intervals cover it."""
    bounds = sorted({b for ivs in per_tile.values() for iv in ivs for b in (iv.begin(), iv.end())})
    if len(bounds) < 2:
        return []
    index = {b: i for i, b in enumerate(bounds)}
    cover: list[set[int]] = [set() for _ in range(len(bounds) - 1)]
    for tile, ivs in per_tile.items():
        for iv in ivs:
            for k in range(index[iv.begin()], index[iv.end()]):
                cover[k].add(tile)
    return _joined([(bounds[k], bounds[k + 1], frozenset(c)) for k, c in enumerate(cover) if c])


def _insert(entries: list[_Entry]) -> list[_Entry]:
    """boost's ``interval_map::insert`` of each entry in turn: it fills only what is not yet
    covered (earlier entries win where they overlap)."""
    out: list[_Entry] = []
    covered: list[tuple[int, int]] = []  # sorted, disjoint
    for lo, hi, tiles in entries:
        pieces = [(lo, hi)]
        for clo, chi in covered:
            nxt = []
            for plo, phi in pieces:
                if phi <= clo or plo >= chi:
                    nxt.append((plo, phi))
                    continue
                if plo < clo:
                    nxt.append((plo, clo))
                if phi > chi:
                    nxt.append((chi, phi))
            pieces = nxt
        for plo, phi in pieces:
            if plo < phi:
                out.append((plo, phi, tiles))
                covered.append((plo, phi))
        covered.sort()
    return _joined(sorted(out, key=lambda e: e[0]))


def _extend(entries: list[_Entry], lower: int, upper: int) -> list[_Entry]:
    """Each entry stretched to the next one's start (the first from ``lower``, the last to
    ``upper``): partial use extended to the whole variable."""
    out = []
    for k, (lo, _, tiles) in enumerate(entries):
        start = lower if k == 0 else lo
        stop = upper if k + 1 == len(entries) else entries[k + 1][0]
        out.append((start, stop, tiles))
    return _joined(out)


def _halo(entries: list[_Entry]) -> list[_Entry]:
    """Halo regions (used by exactly the union of the tiles of the regions either side) given to
    the tiles of the region before them."""
    out = []
    for k, (lo, hi, tiles) in enumerate(entries):
        if 0 < k < len(entries) - 1:
            prev, nxt = entries[k - 1][2], entries[k + 1][2]
            if len(prev) + len(nxt) == len(tiles) and prev <= tiles and nxt <= tiles:
                out.append((lo, hi, prev))
                continue
        out.append((lo, hi, tiles))
    return _joined(out)


def _merge_intersecting(entries: list[_Entry]) -> list[_Entry]:
    """Neighbouring entries whose tile sets intersect joined (over any gap between them), with
    the union of their tiles."""
    if not entries:
        return []
    out = []
    lo, hi, tiles = entries[0]
    for nlo, nhi, ntiles in entries[1:]:
        if tiles & ntiles:
            tiles, hi = tiles | ntiles, nhi
        else:
            out.append((lo, hi, tiles))
            lo, hi, tiles = nlo, nhi, ntiles
    out.append((lo, hi, tiles))
    return _joined(out)


class TensorUseTracker:
    """Tracks which tiles use which elements, then maps the variables by their use.

    ``TensorUseTracker(numTiles, startTile=0, ascendingMappingOrder=True)``: tile k of the
    tracker is tile ``invTransformTileIndex(k, numTiles, startTile, ascendingMappingOrder)`` of
    the graph when the mapping is set.
    """

    class MappingMethod(enum.Enum):
        #: Regions used by several tiles between neighbours used by subsets of them ("halos") go
        #: to the tiles of the region before them.
        OptimizeHaloRegions = "OptimizeHaloRegions"
        #: Elements are mapped only to tiles that use them (neighbouring groups of tiles that
        #: share a tile are merged); otherwise the grain size may put some on a tile that does not.
        ConstrainMappingToUsedTiles = "ConstrainMappingToUsedTiles"
        #: No particular method: PopLibs' ``MappingMethod::None``.
        NONE = "None"

    def __init__(self, numTiles: int, startTile: int = 0, ascendingMappingOrder: bool = True) -> None:
        what = "TensorUseTracker"
        if isinstance(numTiles, TensorUseTracker):  # the copy constructor
            other = numTiles
            self._num_tiles, self._start, self._ascending = other._num_tiles, other._start, other._ascending
            self._usage = {var: {tile: list(ivs) for tile, ivs in tiles.items()}
                           for var, tiles in other._usage.items()}
            return
        self._num_tiles = _uint(numTiles, f"{what}: numTiles")
        self._start = _uint(startTile, f"{what}: startTile")
        if not isinstance(ascendingMappingOrder, (bool, np.bool_)):
            raise PoplibsArgumentError(f"{what}: ascendingMappingOrder must be a bool, got "
                                       f"{ascendingMappingOrder!r:.40}")
        self._ascending = bool(ascendingMappingOrder)
        # variable index -> tile -> intervals of the variable's elements used there
        self._usage: dict[int, dict[int, list[Interval]]] = {}

    def __copy__(self) -> TensorUseTracker:
        return TensorUseTracker(self)

    def __deepcopy__(self, memo: dict) -> TensorUseTracker:  # (intervals are immutable: a copy suffices)
        return TensorUseTracker(self)

    def add(self, *args: Any) -> None:
        """``add(graph, tile, t)``: tile ``tile`` uses the elements of ``t`` (constants are not
        tracked); ``add(other)``: every use recorded by another tracker of as many tiles."""
        if len(args) == 1:
            other = args[0]
            if not isinstance(other, TensorUseTracker):
                raise PoplibsArgumentError(f"TensorUseTracker.add: expected another TensorUseTracker, got "
                                           f"{type(other).__name__}")
            if other._num_tiles != self._num_tiles:
                raise PoplibsError(f"TensorUseTracker.add: trying to add tensor use tracker state with a "
                                   f"different number of tiles ({other._num_tiles}, not {self._num_tiles})")
            for var, tiles in other._usage.items():
                mine = self._usage.setdefault(var, {})
                for tile, ivs in tiles.items():
                    mine.setdefault(tile, []).extend(ivs)
            return
        if len(args) != 3:
            raise PoplibsArgumentError("TensorUseTracker.add takes (graph, tile, t) or (other)")
        graph, tile, t = args
        if not isinstance(graph, Graph):
            raise PoplibsArgumentError(f"TensorUseTracker.add: graph must be a poplar Graph, got "
                                       f"{type(graph).__name__}")
        tile = _uint(tile, "TensorUseTracker.add: tile")
        if tile >= self._num_tiles:
            raise PoplibsArgumentError(f"TensorUseTracker.add: tile {tile} is not one of the tracker's "
                                       f"{self._num_tiles} tiles")
        t = tensorArgument(graph, t, "TensorUseTracker.add: t")
        for ref, iv in t.flatten().getVarRegions():
            if graph.isConstant(ref):
                continue
            self._usage.setdefault(ref.index, {}).setdefault(tile, []).append(iv)

    def empty(self) -> bool:
        """Whether no use has been recorded."""
        return not self._usage

    def _method(self, mappingMethod: Any) -> TensorUseTracker.MappingMethod:
        if mappingMethod is None:
            return TensorUseTracker.MappingMethod.NONE
        if not isinstance(mappingMethod, TensorUseTracker.MappingMethod):
            raise PoplibsArgumentError(f"TensorUseTracker: mappingMethod must be a "
                                       f"TensorUseTracker.MappingMethod, got {mappingMethod!r:.40}")
        return mappingMethod

    def resolve(self, graph: Graph, grainSize: int, minElementsPerTile: int, extendPartialUsage: bool = False,
                mappingMethod: Any = None) -> None:
        """Decide, for each tracked variable, the elements each tile gets: an element used by one
        tile stays there, one used by several is shared between them (splitRegions over those
        tiles, in grains of ``grainSize``, at least ``minElementsPerTile`` a tile where possible).
        ``extendPartialUsage`` stretches each used region to its neighbours so that the whole
        variable is covered."""
        what = "TensorUseTracker.resolve"
        if not isinstance(graph, Graph):
            raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__}")
        grain = _uint(grainSize, f"{what}: grainSize")
        min_elems = _uint(minElementsPerTile, f"{what}: minElementsPerTile")
        if not isinstance(extendPartialUsage, (bool, np.bool_)):
            raise PoplibsArgumentError(f"{what}: extendPartialUsage must be a bool, got "
                                       f"{extendPartialUsage!r:.40}")
        method = self._method(mappingMethod)
        if grain == 0:
            raise PoplibsArgumentError(f"{what}: grainSize must be at least 1")
        if method is TensorUseTracker.MappingMethod.ConstrainMappingToUsedTiles:
            shared = 1
        else:
            shared, grain = grain, 1
        resolved: dict[int, dict[int, list[Interval]]] = {}
        for var, per_tile in self._usage.items():
            n = graph.getVariable(var).numElements()
            uses = _uses(per_tile)
            grains = _insert([(lo // shared, (hi - 1) // shared + 1, tiles) for lo, hi, tiles in uses])
            if extendPartialUsage and grains:
                grains = _extend(grains, 0, -(-n // shared))
            if method is TensorUseTracker.MappingMethod.OptimizeHaloRegions:
                grains = _halo(grains)
            elif method is TensorUseTracker.MappingMethod.ConstrainMappingToUsedTiles:
                grains = _merge_intersecting(grains)
            by_tiles: dict[tuple[int, ...], list[Interval]] = defaultdict(list)
            for lo, hi, tiles in grains:
                by_tiles[tuple(sorted(tiles))].append(Interval(lo, hi))
            min_grains = -(-min_elems // shared)
            out: dict[int, list[Interval]] = {}
            for tiles in sorted(by_tiles):
                parts = splitRegions(by_tiles[tiles], grain, len(tiles), min_grains)
                for tile, part in zip(tiles, parts):
                    out.setdefault(tile, []).extend(
                        Interval(iv.begin() * shared, min(iv.end() * shared, n)) for iv in part)
            resolved[var] = out
        self._usage = resolved

    def mapTensorsByUse(self, graph: Graph, grainSize: int, minElementsPerTile: int,
                        extendPartialUsage: bool = False, mappingMethod: Any = None) -> None:
        """:meth:`resolve`, then set the tile mapping of each tracked variable's used elements
        (the others, with ``extendPartialUsage`` False, keep what they had)."""
        self.resolve(graph, grainSize, minElementsPerTile, extendPartialUsage, mappingMethod)
        num_tiles = graph.getTarget().getNumTiles()
        for var, per_tile in self._usage.items():
            t: Tensor = graph.getVariable(var)
            begin, end, tiles = [], [], []
            for tile, ivs in per_tile.items():
                dst = invTransformTileIndex(tile, num_tiles, self._start % max(num_tiles, 1), self._ascending)
                for iv in ivs:
                    begin.append(iv.begin())
                    end.append(iv.end())
                    tiles.append(dst)
            graph.map_intervals(t, np.asarray(begin, np.int64), np.asarray(end, np.int64),
                                np.asarray(tiles, np.int64))
