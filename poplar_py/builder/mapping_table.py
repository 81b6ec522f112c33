"""The tile mapping a graph's user sets: per variable, intervals of elements and their tiles.

``setTileMapping`` appends records (variable, begin, end, tile); a later record wins
where records overlap. Records are resolved per variable when a query needs them, and all
at once on the global id line when the Engine needs the whole mapping (which then stands for
the records made so far, one per interval), into sorted disjoint intervals, so the cost grows
with the records, not with the elements mapped.
"""

from __future__ import annotations

import struct

import numpy as np

from ..regions.arrays import paint, unique_sorted
from ..regions.interval_map import IntervalMap, Pieces
from ..regions.runs import Runs
from .variable_table import VariableTable

_I64 = np.int64
_RECORD = struct.Struct("4q").pack


class MappingTable:
    """Tile mapping records of one graph's variables."""

    def __init__(self, variables: VariableTable) -> None:
        self._vars = variables
        self._log = bytearray()  # the records (var, begin, end, tile) since the last snapshot's, in order
        self._sorted = 0  # bytes of the log handed to the variables' pending records
        self._pending: dict[int, list[np.ndarray]] = {}  # var -> chunks of (begin, end, tile) rows, in order
        self._resolved: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # var -> (starts, tiles) over [0, size)

    def set(self, var: int, begin: int, end: int, tile: int) -> None:
        """Map elements ``[begin, end)`` of ``var`` to ``tile``."""
        self._log += _RECORD(var, begin, end, tile)

    def set_runs(self, runs: Runs, tiles: np.ndarray) -> None:
        """Map the elements of run ``k`` to ``tiles[k]``, runs in order."""
        if not len(runs):
            return
        lo, hi, owner = runs.unit_intervals(np.zeros(self._vars.num_variables, _I64))
        self._log += np.stack((runs.var[owner], lo, hi, tiles[owner]), axis=1).astype(_I64).tobytes()

    def _sort_log(self) -> None:
        """Hand the records logged since the last call to their variables (keeping their order)."""
        if self._sorted == len(self._log):
            return
        records = np.frombuffer(bytes(self._log[self._sorted:]), _I64).reshape(-1, 4)
        self._sorted = len(self._log)
        order = np.argsort(records[:, 0], kind="stable")
        records = records[order]
        var = records[:, 0]
        bounds = np.flatnonzero(np.concatenate(([True], var[1:] != var[:-1], [True])))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            self._pending.setdefault(int(var[a]), []).append(records[a:b, 1:])

    def resolved(self, var: int) -> tuple[np.ndarray, np.ndarray]:
        """``(starts, tiles)``: ``[0, size)`` of ``var`` cut into intervals, -1 where unmapped."""
        self._sort_log()
        pending = self._pending.pop(var, None)
        done = self._resolved.get(var)
        if pending is None and done is not None:
            return done
        size = self._vars.sizes[var]
        chunks = list(pending or [])
        if done is not None:  # what was resolved before, under the new records
            starts, tiles = done
            mapped = tiles >= 0
            chunks.insert(0, np.stack((starts, np.append(starts[1:], size), tiles), axis=1)[mapped])
        records = np.concatenate(chunks) if chunks else np.zeros((0, 3), _I64)
        lo, hi, tile = paint(records[:, 0], records[:, 1], records[:, 2])
        done = _complete(lo, hi, tile, size)
        self._resolved[var] = done
        return done

    def interval_map(self, variables: np.ndarray) -> tuple[IntervalMap, np.ndarray]:
        """The gid line over these variables cut where tiles change, with each interval's tile."""
        bases, sizes = self._vars.bases, self._vars.sizes
        used = [v for v in unique_sorted(variables).tolist() if sizes[v]]
        if not used:
            return IntervalMap(np.zeros(1, _I64), 1), np.full(1, -1, _I64)
        parts = [self.resolved(v) for v in used]
        starts = np.concatenate([s + bases[v] for (s, _), v in zip(parts, used)])
        tiles = np.concatenate([t for _, t in parts])
        return IntervalMap(starts, int(bases[used[-1]]) + sizes[used[-1]]), tiles

    def tiles_of(self, runs: Runs) -> tuple[Pieces, np.ndarray]:
        """``runs`` cut where tiles change, and the tile of each piece (-1: unmapped)."""
        imap, tiles = self.interval_map(runs.var)
        pieces = imap.split(runs, self._vars.bases)
        return pieces, tiles[pieces.interval]

    def snapshot(self) -> tuple[IntervalMap, np.ndarray]:
        """The whole mapping as gid intervals (every variable starts an interval; -1 where
        unmapped), painted from every record at once."""
        records = np.frombuffer(self._log, _I64).reshape(-1, 4)  # (_compact replaces the log)
        bases = self._vars.bases
        gid = bases[records[:, 0]]
        lo, hi, tile = paint(gid + records[:, 1], gid + records[:, 2], records[:, 3])
        del records, gid
        end = self._vars.num_elements
        starts = unique_sorted(np.concatenate((lo, hi[hi < end], bases[np.asarray(self._vars.sizes) > 0])))
        k = np.searchsorted(lo, starts, side="right") - 1
        tiles = np.where((k >= 0) & (hi[np.maximum(k, 0)] > starts), tile[np.maximum(k, 0)], -1) \
            if lo.size else np.full(starts.size, -1, _I64)
        at = np.minimum(np.searchsorted(bases, starts), bases.size - 1)
        first = bases[at] == starts  # a variable begins
        keep = first | np.concatenate(([True], tiles[1:] != tiles[:-1]))
        starts, tiles = starts[keep], tiles[keep].astype(_I64)
        self._compact(starts, tiles)
        return IntervalMap(starts, end), tiles

    def _compact(self, starts: np.ndarray, tiles: np.ndarray) -> None:
        """Keep, instead of every record made so far, one per mapped interval of the snapshot
        (``starts`` cut where variables begin): the mapping they give is the same."""
        bases = self._vars.bases
        mapped = tiles >= 0
        lo, hi = starts[mapped], np.append(starts[1:], self._vars.num_elements)[mapped]
        var = np.searchsorted(bases, lo, side="right") - 1
        records = np.empty((lo.size, 4), _I64)
        records[:, 0], records[:, 1], records[:, 2], records[:, 3] = var, lo, hi, tiles[mapped]
        records[:, 1:3] -= bases[var][:, None]
        self._log = bytearray(records)
        self._sorted, self._pending, self._resolved = 0, {}, {}


def _complete(lo: np.ndarray, hi: np.ndarray, tile: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint intervals plus the gaps (tile -1) between them, covering ``[0, size)``."""
    starts = np.empty(2 * lo.size + 1, _I64)  # gap, interval, gap, interval, ..., gap
    tiles = np.full(2 * lo.size + 1, -1, _I64)
    starts[0::2] = np.concatenate(([0], hi))
    starts[1::2], tiles[1::2] = lo, tile
    width = np.diff(np.append(starts, size))
    keep = width > 0
    starts, tiles = starts[keep], tiles[keep]
    same = np.concatenate(([False], tiles[1:] == tiles[:-1]))
    return starts[~same], tiles[~same]
