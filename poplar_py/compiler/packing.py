"""First-fit packing of the segments whose lives do not always last, every tile at once.

On each tile, segments are placed largest first (then in variable order), each at the lowest
8-byte aligned offset where it overlaps no segment already placed whose life meets its own.
A tile's lives meet few of the others, so the work is done on pairs of segments whose lives
meet, found for all tiles with one sort, and the placing runs rank by rank over all tiles with
numpy: step ``r`` places every tile's ``r``-th segment against that tile's earlier segments
that meet it. Tiles are taken in chunks so that the pairs held at once stay bounded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..regions.arrays import expand_ranges
from .liveness import Liveness

_I64 = np.int64
_ALIGN = 8
_PAIRS_PER_CHUNK = 1 << 20  # pairs of meeting segments held at once (memory)


def pack(tile: np.ndarray, var: np.ndarray, nbytes: np.ndarray, liveness: Liveness) -> np.ndarray:
    """Each segment's offset in its tile (segment ``k``: ``nbytes[k]`` bytes of variable
    ``var[k]`` on ``tile[k]``; sorted by tile, at most one per variable and tile)."""
    offset = np.zeros(tile.size, _I64)
    if not tile.size:
        return offset
    rank = _ranks(tile, var, nbytes)
    candidates = _Candidates.of(tile, liveness.hulls(var))
    # the tiles in chunks whose candidate pairs stay under the budget (a chunk's segments are
    # consecutive both as given and in the candidates' order, which sorts by tile first)
    tile_first = np.flatnonzero(np.concatenate(([True], tile[1:] != tile[:-1])))
    per_tile = np.add.reduceat(candidates.count, tile_first).tolist()
    bounds = np.append(tile_first, tile.size).tolist()
    lo = 0
    while lo < len(per_tile):
        hi, total = lo + 1, per_tile[lo]
        while hi < len(per_tile) and total + per_tile[hi] <= _PAIRS_PER_CHUNK:
            total += per_tile[hi]
            hi += 1
        a, b = bounds[lo], bounds[hi]
        later, earlier = _meeting_pairs(candidates, a, b, var, rank, liveness)
        offset[a:b] = _place_by_rank(rank[a:b], nbytes[a:b], later - a, earlier - a)
        lo = hi
    return offset


def _ranks(tile: np.ndarray, var: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Each segment's place in its tile's placing order: largest first, then by variable."""
    order = np.lexsort((var, -nbytes, tile))
    new = np.concatenate(([True], tile[order][1:] != tile[order][:-1]))
    first = np.flatnonzero(new)
    rank = np.empty(tile.size, _I64)
    rank[order] = np.arange(tile.size, dtype=_I64) - first[np.cumsum(new) - 1]
    return rank


@dataclass(frozen=True)
class _Candidates:
    """The segments in order of (tile, start of life), and for each the segments after it in
    that order that start within its life's hull (``start`` and ``count`` positions): every
    pair of a tile's segments whose lives meet, once (with pairs whose hulls alone meet)."""

    order: np.ndarray
    start: np.ndarray
    count: np.ndarray

    @staticmethod
    def of(tile: np.ndarray, life: np.ndarray) -> _Candidates:
        span = int(life.max(initial=0)) + 1
        key = tile * span + life[0]
        order = np.argsort(key, kind="stable")
        key = key[order]
        end = np.searchsorted(key, tile[order] * span + life[1, order], side="left")
        start = np.arange(1, tile.size + 1, dtype=_I64)
        return _Candidates(order, start, np.maximum(end - start, 0))


def _meeting_pairs(c: _Candidates, first: int, end: int, var: np.ndarray, rank: np.ndarray,
                   liveness: Liveness) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of segments ``[first, end)`` (whole tiles) on one tile whose lives meet, as
    (later, earlier) in placing order."""
    owner, other = expand_ranges(c.start[first:end], c.count[first:end])
    a, b = c.order[first + owner], c.order[other]
    keep = np.ones(a.size, bool)
    gaps = liveness.interval_counts(var) != 1  # a hull may meet a life in a gap between intervals
    several = gaps[a] | gaps[b]
    keep[several] = liveness.meet(var[a[several]], var[b[several]])
    a, b = a[keep], b[keep]
    swap = rank[a] < rank[b]
    return np.where(swap, b, a), np.where(swap, a, b)


def _place_by_rank(rank: np.ndarray, nbytes: np.ndarray, later: np.ndarray,
                   earlier: np.ndarray) -> np.ndarray:
    """First fit, rank by rank: the ``r``-th segment of every tile at once, against the earlier
    segments whose lives meet it (``later``/``earlier`` pairs)."""
    offset = np.zeros(rank.size, _I64)
    end = np.zeros(rank.size, _I64)  # aligned ends of the segments placed
    ranks = np.arange(int(rank.max(initial=-1)) + 2)
    by_rank = np.argsort(rank, kind="stable")
    seg_bounds = np.searchsorted(rank[by_rank], ranks)
    by_pair = np.argsort(rank[later] * rank.size + later)  # (the order within a segment is free)
    later, earlier = later[by_pair], earlier[by_pair]
    pair_bounds = np.searchsorted(rank[later], ranks)
    for r in range(ranks.size - 1):
        lo, hi = int(pair_bounds[r]), int(pair_bounds[r + 1])
        if hi > lo:
            other = earlier[lo:hi]
            placed, at = _first_fits(later[lo:hi], offset[other], end[other], nbytes)
            offset[placed] = at
        segs = by_rank[seg_bounds[r]:seg_bounds[r + 1]]
        end[segs] = (offset[segs] + nbytes[segs] + _ALIGN - 1) // _ALIGN * _ALIGN
    return offset


def _first_fits(seg: np.ndarray, a: np.ndarray, b: np.ndarray, nbytes: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """For each segment of ``seg`` (grouped), the lowest offset from 0 that fits its bytes
    among the spans ``[a, b)`` that group holds: scanning the spans by start, the offset is
    past every span seen so far, until one starts far enough beyond it."""
    order = np.argsort((seg - seg.min()) * (int(a.max()) + 1) + a)  # (spans starting together: any order)
    seg, a, b = seg[order], a[order], b[order]
    first = np.flatnonzero(np.concatenate(([True], seg[1:] != seg[:-1])))
    group = np.cumsum(np.concatenate(([False], seg[1:] != seg[:-1])))
    lift = group * (int(b.max(initial=0)) + 1)  # a running maximum per group, in one pass
    seen = np.maximum.accumulate(b + lift) - lift  # the furthest end up to each span
    before = np.concatenate(([0], seen[:-1]))
    before[first] = 0  # the offset when a span is reached
    fits = before + nbytes[seg] <= a
    index = np.where(fits, np.arange(seg.size), seg.size)
    hit = np.minimum.reduceat(index, first)
    last = np.append(first[1:], seg.size) - 1
    at = np.where(hit < seg.size, before[np.minimum(hit, seg.size - 1)], seen[last])
    return seg[first], at
