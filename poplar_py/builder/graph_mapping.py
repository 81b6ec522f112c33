"""Graph's tile mapping methods: ``setTileMapping``, ``getTileMapping`` and the interval forms
libraries use (the mapping table is :mod:`mapping_table`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks.arguments import checked_intervals, checked_tile
from ..errors import InvalidArgumentError, InvalidTileMappingError
from ..handles import VertexRef
from ..interval import Interval
from ..tensor import Tensor
from .vertex_table import TILE


class GraphTileMapping:
    """The tile mapping part of :class:`~poplar_py.graph.Graph`, a mixin (the graph holds the tables)."""

    def _check_tile(self, tile: object, what: str) -> int:
        """A tile of this graph (relative in a virtual graph), as an absolute tile."""
        return self._absolute(checked_tile(tile, self._num_tiles, what))

    def _absolute(self, tiles: Any) -> Any:
        """Tile ids of this graph (an int or an array) as the top-level graph's."""
        if self._tiles is None:
            return tiles
        if isinstance(tiles, np.ndarray):
            return np.asarray(self._tiles, dtype=np.int64)[tiles]
        return self._tiles[tiles]

    def setTileMapping(self, target: Tensor | VertexRef, mapping: Any) -> None:
        """Place a vertex on a tile, or map tensor elements: to one tile, or by a per-tile
        list of intervals over the flattened tensor."""
        if type(mapping) is int and 0 <= mapping < self._num_tiles:  # the common cases, first
            tile = mapping if self._tiles is None else self._tiles[mapping]
            if type(target) is VertexRef and target.graph is self:
                self._vertices.put(target.id, TILE, tile)
                return
            run = target.as_run() if type(target) is Tensor else None
            if run is not None and (run[3] == 1 or run[2] == 1) and target.variables is self._vars:
                self._mapping.set(run[0], run[1], run[1] + run[2], tile)
                return
        if type(target) is VertexRef:
            vid = self._own_vertex(target, "setTileMapping")
            self._vertices.put(vid, TILE, self._check_tile(mapping, self._vertices.describe(vid)))
            return
        if not isinstance(target, Tensor):
            raise InvalidArgumentError(f"setTileMapping: expected a Tensor or a VertexRef, got "
                                       f"{target!r:.60}")
        if target.variables is not self._vars:
            self._check_own(target, "setTileMapping")
        if isinstance(mapping, (int, np.integer)):
            tile = self._check_tile(mapping, f"tensor '{target.name}'")
            runs = target.runs()
            self._mapping.set_runs(runs, np.full(len(runs), tile, dtype=np.int64))
            return
        per_tile = checked_intervals(mapping, f"setTileMapping of tensor '{target.name}'")
        try:
            pairs = np.array([iv for ivs in per_tile for iv in ivs], dtype=np.int64).reshape(-1, 2)
        except OverflowError:
            raise InvalidTileMappingError(f"tensor '{target.name}': an interval is outside its "
                                          f"{target.numElements()} elements") from None
        tiles = np.repeat(np.arange(len(per_tile), dtype=np.int64), [len(ivs) for ivs in per_tile])
        self.map_intervals(target, pairs[:, 0], pairs[:, 1], tiles)

    def map_intervals(self, t: Tensor, begin: np.ndarray, end: np.ndarray, tiles: np.ndarray) -> None:
        """The libraries' bulk ``setTileMapping``: elements ``[begin[j], end[j])`` of flattened ``t``
        to tile ``tiles[j]`` (numpy arrays; where intervals overlap, the later one wins)."""
        self._check_own(t, "setTileMapping")
        begin, end, tiles = (np.asarray(a, dtype=np.int64) for a in (begin, end, tiles))
        n = t.numElements()
        bad_tile = (tiles < 0) | (tiles >= self._num_tiles)
        bad = np.flatnonzero(bad_tile | (begin < 0) | (begin > end) | (end > n))
        if bad.size:  # the first bad interval, or its tile
            j = int(bad[0])
            if bad_tile[j]:
                self._check_tile(int(tiles[j]), f"tensor '{t.name}'")
            raise InvalidTileMappingError(f"tensor '{t.name}': interval [{int(begin[j])}, {int(end[j])}) is "
                                          f"outside its {n} elements")
        if begin.size:
            runs, owner = t.runs().take_ranges(begin, end)
            self._mapping.set_runs(runs, self._absolute(tiles)[owner])

    def getTileMapping(self, t: Tensor, requireComplete: bool = True) -> list[list[Interval]]:
        """Per tile, the intervals of the flattened tensor that live there (maximal runs)."""
        if not isinstance(requireComplete, (bool, np.bool_)):
            raise InvalidArgumentError(f"getTileMapping: requireComplete must be a bool, got "
                                       f"{requireComplete!r:.40}")
        result: list[list[Interval]] = [[] for _ in range(self._num_tiles)]
        for b, e, tile in zip(*(a.tolist() for a in self.tile_intervals(t, requireComplete))):
            result[tile].append(Interval(b, e))
        return result

    def tile_intervals(self, t: Tensor, requireComplete: bool = True
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``getTileMapping`` as arrays: the maximal intervals ``[begin, end)`` of the flattened
        tensor on one tile each, in order, and their tiles (unmapped elements left out)."""
        self._check_own(t, "getTileMapping")
        runs = t.runs()
        if not len(runs):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        pieces, tiles = self._mapping.tiles_of(runs)
        start = pieces.flat_start(runs)
        if self._tiles is not None:  # relative ids; -1 for tiles outside this virtual graph
            relative = np.full(self._top.getTarget().getNumTiles() + 1, -1, dtype=np.int64)
            relative[np.asarray(self._tiles)] = np.arange(self._num_tiles)
            tiles = relative[tiles]
        if requireComplete and (tiles < 0).any():
            first = int(start[np.flatnonzero(tiles < 0)[0]])
            where = "has no tile" if self._tiles is None else "has no tile in this virtual graph"
            raise InvalidTileMappingError(
                f"tensor '{t.name}' is not completely mapped: element {first} (flattened) {where}")
        first = np.flatnonzero(np.concatenate(([True], tiles[1:] != tiles[:-1])))
        ends = np.append(start[first[1:]], t.numElements())
        keep = tiles[first] >= 0
        return start[first][keep], ends[keep], tiles[first][keep]
