"""Maps from element ranges to values.

Elements have a *global id* (``gid``): their variable's first gid plus their offset. An
:class:`IntervalMap` cuts the gid line into intervals that each carry values (a tile, an
address); :meth:`IntervalMap.split` cuts runs where the intervals change, into
:class:`Pieces`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arrays import exclusive_cumsum, expand_ranges
from .runs import Runs

_I64 = np.int64


@dataclass(frozen=True)
class Pieces:
    """Runs cut where an :class:`IntervalMap`'s intervals change: each piece lies in one interval.

    ``run`` and ``position`` say where a piece starts in the runs (run index, element index
    within the run); ``gid`` is its first element and ``step`` the gid step between elements.
    """

    run: np.ndarray
    position: np.ndarray
    count: np.ndarray
    interval: np.ndarray
    gid: np.ndarray
    step: np.ndarray

    def __len__(self) -> int:
        return int(self.count.size)

    def flat_start(self, runs: Runs) -> np.ndarray:
        """Flat position of each piece's first element in the sequence ``runs`` describes."""
        return runs.starts()[self.run] + self.position


@dataclass(frozen=True)
class IntervalMap:
    """The gid line ``[0, end)`` cut into intervals: interval ``k`` is ``[starts[k], starts[k+1])``."""

    starts: np.ndarray
    end: int

    @property
    def ends(self) -> np.ndarray:
        return np.append(self.starts[1:], self.end)

    def __len__(self) -> int:
        return int(self.starts.size)

    def find(self, gids: np.ndarray) -> np.ndarray:
        """The interval holding each gid."""
        return np.searchsorted(self.starts, gids, side="right") - 1

    def split(self, runs: Runs, bases: np.ndarray) -> Pieces:
        """Cut every run where it passes from one interval to the next, in run order."""
        if len(runs) == 0:
            z = np.zeros(0, _I64)
            return Pieces(z, z, z, z, z, z)
        first = runs.gids(bases)
        # Work on increasing runs; a decreasing run is split as its reverse, then turned back.
        down = runs.stride < 0
        low = np.where(down, first + (runs.count - 1) * runs.stride, first)
        step = np.abs(runs.stride)
        k0 = self.find(low)
        k1 = self.find(low + (runs.count - 1) * step)
        spans = k1 - k0 + 1
        if (spans == 1).all() and not down.any():  # every run inside one interval: runs are pieces
            zero = np.zeros(len(runs), _I64)
            return Pieces(np.arange(len(runs), dtype=_I64), zero, runs.count, k0, first, runs.stride)
        # A run crossing more intervals than it has elements is cut element by element.
        by_element = (spans > runs.count) & (step > 0)
        parts = []
        for sel, cut in ((np.flatnonzero(~by_element), self._cut_by_interval),
                         (np.flatnonzero(by_element), self._cut_by_element)):
            if sel.size:
                parts.append(cut(sel, low[sel], step[sel], runs.count[sel], k0[sel], spans[sel]))
        run, pos, count, interval = (np.concatenate(c) for c in zip(*parts))
        # Back to each run's own direction and order (each part is in run order already).
        rev = down[run]
        if rev.any():
            pos = np.where(rev, runs.count[run] - pos - count, pos)
        if rev.any() or len(parts) > 1:
            order = np.lexsort((pos, run))
            run, pos, count, interval = run[order], pos[order], count[order], interval[order]
        return Pieces(run, pos, count, interval, first[run] + pos * runs.stride[run], runs.stride[run])

    def _cut_by_interval(self, sel: np.ndarray, low: np.ndarray, step: np.ndarray, count: np.ndarray,
                         k0: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, ...]:
        owner, interval = expand_ranges(k0, spans)
        n = count[owner]
        # Piece k of a run starts at its first element in interval k (a ceiling division), the
        # run's first piece at 0; each piece ends where the next starts, the last one at n.
        later = np.ones(owner.size, dtype=bool)
        later[exclusive_cumsum(spans)] = False
        a = np.zeros(owner.size, _I64)
        o = owner[later]
        a[later] = np.minimum(-((low[o] - self.starts[interval[later]]) // step[o]), n[later])
        b = np.empty_like(a)
        b[:-1] = a[1:]
        last = np.cumsum(spans) - 1
        b[last] = n[last]
        keep = b > a
        return sel[owner[keep]], a[keep], (b - a)[keep], interval[keep]

    def _cut_by_element(self, sel: np.ndarray, low: np.ndarray, step: np.ndarray, count: np.ndarray,
                        k0: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, ...]:
        owner, within = expand_ranges(np.zeros(sel.size, _I64), count)
        interval = self.find(low[owner] + within * step[owner])
        new = np.ones(owner.size, dtype=bool)
        new[1:] = (owner[1:] != owner[:-1]) | (interval[1:] != interval[:-1])
        first = np.flatnonzero(new)
        counts = np.diff(np.append(first, owner.size))
        return sel[owner[first]], within[first], counts, interval[first]
