"""Vectorised helpers over integer arrays, which every stage builds on: distinct values, the
first of equal rows or blocks, cumulative sums, ranges expanded, and intervals (``lo``, ``hi``)
joined, painted with values and merged where their values are equal."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_I64 = np.int64


def int_array(values: object) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=_I64).reshape(-1)


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (numpy's ``unique`` hashes, which is slow on large arrays)."""
    s = np.sort(values, kind="stable")  # stable: linear on already sorted pieces
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def mix_hash(h: np.ndarray, columns: Sequence[np.ndarray]) -> np.ndarray:
    """``h`` (uint64 per row) mixed with each of these integer columns in turn."""
    for c in columns:
        h = (h ^ c.astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return h


def first_equal(columns: list[np.ndarray]) -> np.ndarray:
    """For each row of these equal-length integer columns, the index of the first equal row."""
    if not columns[0].size:
        return np.zeros(0, _I64)
    packed = _packed(columns)
    if packed is not None:  # the columns side by side in one integer: exact
        return _first_of_equal_keys(packed)
    # a hash first (one sort); checked, with an exact sort if it ever collides
    owner = _first_of_equal_keys(mix_hash(np.zeros(columns[0].size, np.uint64), columns))
    if all(np.array_equal(c[owner], c) for c in columns):
        return owner
    order = np.lexsort(columns[::-1])
    rows = np.stack(columns, axis=1)[order]
    new = np.concatenate(([True], (rows[1:] != rows[:-1]).any(axis=1)))
    group = np.cumsum(new) - 1
    lowest = np.full(int(group[-1]) + 1, columns[0].size, dtype=_I64)
    np.minimum.at(lowest, group, order)
    out = np.empty_like(order)
    out[order] = lowest[group]
    return out


def _packed(columns: list[np.ndarray]) -> np.ndarray | None:
    """The columns' values (less each column's least) side by side in one int64 per row, if they
    fit in 62 bits."""
    lows = [int(c.min()) for c in columns]
    bits = [(int(c.max()) - low).bit_length() for c, low in zip(columns, lows)]
    if sum(bits) > 62:
        return None
    key = np.zeros(columns[0].size, _I64)
    for c, low, b in zip(columns, lows, bits):
        key <<= b
        key |= c - low
    return key


def _first_of_equal_keys(key: np.ndarray) -> np.ndarray:
    """For each row, the index of the first row with its key."""
    order = np.argsort(key, kind="stable")  # equal keys keep their order: the first comes first
    sk = key[order]
    start = np.concatenate(([True], sk[1:] != sk[:-1]))
    owner = np.empty_like(order)
    owner[order] = order[np.flatnonzero(start)][np.cumsum(start) - 1]
    return owner


def first_alike(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For rows of integers of different lengths (row ``k``: the next ``counts[k]`` of ``values``),
    the index of the first row equal to each."""
    starts = exclusive_cumsum(counts)
    owner = np.repeat(np.arange(counts.size, dtype=_I64), counts)
    pos = np.arange(values.size, dtype=_I64) - starts[owner]
    token = mix_hash(mix_hash(np.zeros(values.size, np.uint64), [pos]), [values])
    h = np.zeros(counts.size, np.uint64)  # the sum of a row's tokens (wrapping): its hash
    filled = counts > 0
    if filled.any():
        h[filled] = np.add.reduceat(token, starts[filled])
    rep = first_equal([counts, h.view(_I64)])
    # checked element by element; a collision (never seen) falls back to comparing bytes
    if np.array_equal(values[starts[rep[owner]] + pos], values):
        return rep
    rows = [values[a:a + n].tobytes() for a, n in zip(starts.tolist(), counts.tolist())]
    seen: dict[bytes, int] = {}
    return np.asarray([seen.setdefault(r, k) for k, r in enumerate(rows)], _I64)


def exclusive_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.zeros(values.size, dtype=_I64)
    if values.size > 1:
        np.cumsum(values[:-1], out=out[1:])
    return out


def expand_ranges(begin: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[begin[k], begin[k] + count[k])``: (owner k, value) of every member."""
    owner = np.repeat(np.arange(count.size, dtype=_I64), count)
    within = np.arange(owner.size, dtype=_I64) - np.repeat(exclusive_cumsum(count), count)
    return owner, np.repeat(begin, count) + within


def union(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals ``[lo, hi)`` as sorted disjoint intervals (touching ones joined)."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if lo.size == 0:
        return lo, hi
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    starts = np.concatenate(([True], lo[1:] > reach[:-1]))
    first = np.flatnonzero(starts)
    ends = np.append(first[1:], lo.size) - 1
    return lo[first], reach[ends]


def union_grouped(group: np.ndarray, lo: np.ndarray, hi: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of intervals ``[lo, hi)`` within each group: (group, lo, hi) sorted by group."""
    keep = hi > lo
    group, lo, hi = group[keep], lo[keep], hi[keep]
    if lo.size == 0:
        return group, lo, hi
    keys, rank = np.unique(group, return_inverse=True)
    base = int(lo.min())
    span = int(hi.max()) - base + 1  # one group's coordinates never reach the next group's
    ulo, uhi = union(lo - base + rank * span, hi - base + rank * span)
    r = ulo // span
    return keys[r], ulo - r * span + base, uhi - r * span + base


def paint(lo: np.ndarray, hi: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals ``[lo[k], hi[k])`` painted with ``value[k]`` in order (later ones win),
    as sorted disjoint intervals; neighbours with one value are joined. Only intervals that
    overlap others cost a step each."""
    keep = hi > lo
    lo, hi, value = lo[keep], hi[keep], value[keep]
    if lo.size == 0:
        return lo, hi, value
    order = np.argsort(lo, kind="stable")
    slo, shi = lo[order], hi[order]
    if (slo[1:] >= shi[:-1]).all():
        return join_equal(slo, shi, value[order])
    reach = np.maximum.accumulate(shi)
    cluster = np.cumsum(np.concatenate(([True], slo[1:] >= reach[:-1])))  # runs of overlapping intervals
    crowded = np.bincount(cluster)[cluster] > 1
    mine = np.sort(order[crowded])  # the overlapping intervals, in painting order
    points = unique_sorted(np.concatenate((lo[mine], hi[mine])))
    a = np.searchsorted(points, lo[mine])
    b = np.searchsorted(points, hi[mine])
    painted = np.full(points.size - 1, -1, dtype=_I64)
    # Later intervals overwrite earlier ones; one slice assignment each.
    for k, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        painted[x:y] = k
    used = painted >= 0
    all_lo = np.concatenate((slo[~crowded], points[:-1][used]))
    all_hi = np.concatenate((shi[~crowded], points[1:][used]))
    all_value = np.concatenate((value[order][~crowded], value[mine][painted[used]]))
    final = np.argsort(all_lo, kind="stable")
    return join_equal(all_lo[final], all_hi[final], all_value[final])


def join_equal(lo: np.ndarray, hi: np.ndarray, value: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted disjoint intervals with touching neighbours of equal value joined."""
    if lo.size <= 1:
        return lo, hi, value
    start = np.concatenate(([True], (lo[1:] != hi[:-1]) | (value[1:] != value[:-1])))
    first = np.flatnonzero(start)
    last = np.append(first[1:], lo.size) - 1
    return lo[first], hi[last], value[first]
