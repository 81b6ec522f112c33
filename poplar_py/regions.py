"""Regions: variable elements as strided runs, and maps from element ranges to values.

A tensor's elements, in flattened order, are a list of *runs*: run ``k`` holds the
elements ``offset[k] + i * stride[k]`` (``i < count[k]``) of variable ``var[k]``. A row or
a contiguous slice is one run, a column of a row-major matrix one run of stride
``cols``, a broadcast scalar one run of stride 0. Every pass works on runs and on
interval maps, so its cost grows with the regions of the data, not its elements.

Elements also have a *global id* (``gid``): the variable's first gid plus the offset.
An :class:`IntervalMap` cuts the gid line into intervals that each carry values (a
tile, an address); :meth:`IntervalMap.split` cuts runs where the intervals change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_I64 = np.int64
SMALL_RUNS = 8  # runs this short are cheaper to handle one by one than as arrays


def _int_array(values: object) -> np.ndarray:
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


def arithmetic_groups(offset: np.ndarray, count: np.ndarray, stride: np.ndarray,
                      linked: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Join consecutive arithmetic sequences (``count[k]`` terms from ``offset[k]`` by
    ``stride[k]``) wherever ``linked[k]`` allows joining k and k + 1 and the terms go on
    with one step. Returns each group's first index, its count and its stride (1 for a
    single term). Any sequence that is arithmetic as a whole becomes one group.
    """
    n = count.size
    single = count == 1
    if n <= 1:
        return np.arange(n, dtype=_I64), count, np.where(single, 1, stride)
    step = offset[1:] - (offset[:-1] + (count[:-1] - 1) * stride[:-1])
    ok = linked & (single[:-1] | (stride[:-1] == step)) & (single[1:] | (stride[1:] == step))
    # A one-term sequence joined on both sides must see one step on both sides.
    ok[1:] &= ~(ok[:-1] & single[1:-1] & (step[1:] != step[:-1]))
    if not ok.any():
        return np.arange(n, dtype=_I64), count, np.where(single, 1, stride)
    first = np.flatnonzero(np.concatenate(([True], ~ok)))
    counts = np.add.reduceat(count, first)
    joined = np.append(ok, False)[first]  # the group has a second member
    strides = np.where(joined, np.append(step, 0)[first], stride[first])
    return first, counts, np.where(counts == 1, 1, strides)


def in_order_of(runs: Runs, var: int) -> Runs:
    """Runs of a new variable ``var`` whose elements lie in memory in the order of the elements of
    ``runs`` in theirs (distinct elements): element ``i`` of the result is at the rank of element
    ``i`` of ``runs`` among all of them in (variable, offset) order."""
    if not ((runs.count > 1) & (runs.stride != 1)).any():  # runs of consecutive elements: rank runs
        order = np.lexsort((runs.offset, runs.var))
        start = np.empty(order.size, _I64)
        start[order] = exclusive_cumsum(runs.count[order])
        count, stride = runs.count, np.ones(order.size, _I64)
    else:  # strided runs interleave: rank elements
        v, o = runs.elements()
        start = np.empty(v.size, _I64)
        start[np.lexsort((o, v))] = np.arange(v.size, dtype=_I64)
        count, stride = np.ones(v.size, _I64), np.ones(v.size, _I64)
    first, count, stride = arithmetic_groups(start, count, stride, np.ones(max(start.size - 1, 0), bool))
    return Runs(np.full(first.size, var, _I64), start[first], count, stride)


def expand_ranges(begin: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges ``[begin[k], begin[k] + count[k])``: (owner k, value) of every member."""
    owner = np.repeat(np.arange(count.size, dtype=_I64), count)
    within = np.arange(owner.size, dtype=_I64) - np.repeat(exclusive_cumsum(count), count)
    return owner, np.repeat(begin, count) + within


def merge_rows(rows: Sequence[tuple[int, int, int, int]]) -> tuple[list[tuple[int, int, int, int]], bool]:
    """``Runs.merged`` of a few ``(var, offset, count, stride)`` rows (each holding elements), one
    at a time in Python (cheaper than arrays for few runs); also whether any row changed."""
    out: list[tuple[int, int, int, int]] = []
    changed = False
    for v, o, c, s in rows:
        if out:
            gv, go, gc, gs = out[-1]
            step = o - (go + (gc - 1) * gs)
            if gv == v and (gc == 1 or gs == step) and (c == 1 or s == step):
                out[-1] = (gv, go, gc + c, step)
                changed = True
                continue
        changed |= c == 1 and s != 1
        out.append((v, o, c, s if c > 1 else 1))
    return out, changed


@dataclass(frozen=True)
class Runs:
    """A flat sequence of variable elements as strided runs (see the module docstring)."""

    var: np.ndarray
    offset: np.ndarray
    count: np.ndarray  # every run holds at least one element
    stride: np.ndarray

    @staticmethod
    def make(var: object, offset: object, count: object, stride: object) -> Runs:
        count = _int_array(count)
        keep = count > 0
        arrays = [_int_array(a) for a in (var, offset, count, stride)]
        if not keep.all():
            arrays = [a[keep] for a in arrays]
        return Runs(*arrays)

    @staticmethod
    def single(var: int, offset: int, count: int, stride: int) -> Runs:
        if count <= 0:
            return EMPTY_RUNS
        return Runs(np.array([var], _I64), np.array([offset], _I64), np.array([count], _I64),
                    np.array([stride if count > 1 else 1], _I64))

    @staticmethod
    def from_rows(rows: Sequence[tuple[int, int, int, int]]) -> Runs:
        """Runs from ``(var, offset, count, stride)`` rows (each holding elements)."""
        if not rows:
            return EMPTY_RUNS
        a = np.array(rows, dtype=_I64).T.copy()
        return Runs(a[0], a[1], a[2], a[3])

    def rows(self) -> list[tuple[int, int, int, int]]:
        """``(var, offset, count, stride)`` of each run."""
        return list(zip(self.var.tolist(), self.offset.tolist(), self.count.tolist(), self.stride.tolist()))

    @staticmethod
    def concat(parts: Sequence[Runs]) -> Runs:
        parts = [p for p in parts if len(p)]
        if not parts:
            return EMPTY_RUNS
        if len(parts) == 1:
            return parts[0]
        return Runs(*(np.concatenate([getattr(p, name) for p in parts])
                      for name in ("var", "offset", "count", "stride")))

    def __len__(self) -> int:
        return int(self.count.size)

    @property
    def num_elements(self) -> int:
        return int(self.count.sum())

    def starts(self) -> np.ndarray:
        """Flat position of each run's first element."""
        return exclusive_cumsum(self.count)

    def last(self) -> np.ndarray:
        """Offset of each run's last element."""
        return self.offset + (self.count - 1) * self.stride

    def select(self, index: np.ndarray) -> Runs:
        return Runs(self.var[index], self.offset[index], self.count[index], self.stride[index])

    def merged(self) -> Runs:
        """Neighbouring runs joined where their elements continue one arithmetic sequence.

        An arithmetic sequence of one variable always becomes a single run (a run of one
        element then has stride 1), which makes single runs a canonical key.
        """
        if len(self) <= SMALL_RUNS:
            return self._merged_small()
        first, count, stride = arithmetic_groups(self.offset, self.count, self.stride,
                                                 self.var[1:] == self.var[:-1])
        if first.size == len(self):
            return Runs(self.var, self.offset, self.count, stride)
        return Runs(self.var[first], self.offset[first], count, stride)

    def _merged_small(self) -> Runs:
        """``merged`` one run at a time (for few runs, cheaper than arrays)."""
        out, changed = merge_rows(self.rows())
        return Runs.from_rows(out) if changed else self

    def take(self, begin: int, end: int) -> Runs:
        """The elements at flat positions ``[begin, end)`` (merged if these runs are)."""
        if end <= begin:
            return EMPTY_RUNS
        if len(self) <= SMALL_RUNS:
            rows, pos = [], 0
            for v, o, c, s in self.rows():
                a, b = max(begin, pos), min(end, pos + c)
                if b > a:
                    rows.append((v, o + (a - pos) * s, b - a, s if b - a > 1 else 1))
                pos += c
                if pos >= end:
                    break
            return Runs.from_rows(rows).merged()
        starts = self.starts()
        k0 = int(np.searchsorted(starts, begin, side="right")) - 1
        k1 = int(np.searchsorted(starts, end - 1, side="right")) - 1
        part = slice(k0, k1 + 1)
        var, offset, count, stride = (a[part].copy() for a in
                                      (self.var, self.offset, self.count, self.stride))
        skip, keep = begin - int(starts[k0]), end - int(starts[k1])
        offset[0] += skip * stride[0]
        count[-1] = keep
        count[0] -= skip
        stride[count == 1] = 1
        runs = Runs(var, offset, count, stride)
        # Only the shortened end runs can now join a neighbour.
        return runs if len(runs) < 2 or (count[0] > 1 and count[-1] > 1) else runs.merged()

    def take_ranges(self, begin: np.ndarray, end: np.ndarray) -> tuple[Runs, np.ndarray]:
        """The elements of flat ranges ``[begin[k], end[k])``, range after range; also the
        range each resulting run belongs to."""
        begin, end = _int_array(begin), _int_array(end)
        nonempty = end > begin
        if not nonempty.all():
            keep = np.flatnonzero(nonempty)
            runs, owner = self.take_ranges(begin[keep], end[keep])
            return runs, keep[owner]
        if begin.size == 0 or len(self) == 0:
            return EMPTY_RUNS, np.zeros(0, _I64)
        starts = self.starts()
        first = np.searchsorted(starts, begin, side="right") - 1
        last = np.searchsorted(starts, end - 1, side="right") - 1
        owner, run = expand_ranges(first, last - first + 1)
        lo = np.maximum(begin[owner], starts[run]) - starts[run]
        hi = np.minimum(end[owner], starts[run] + self.count[run]) - starts[run]
        return Runs(self.var[run], self.offset[run] + lo * self.stride[run], hi - lo,
                    np.where(hi - lo == 1, 1, self.stride[run])), owner

    def elements(self) -> tuple[np.ndarray, np.ndarray]:
        """(variable, offset) of every element: per-element data, for small or bounded uses."""
        owner, within = expand_ranges(np.zeros(len(self), _I64), self.count)
        return self.var[owner], self.offset[owner] + within * self.stride[owner]

    def gids(self, bases: np.ndarray) -> np.ndarray:
        """Global id of each run's first element (``bases``: each variable's first gid)."""
        return bases[self.var] + self.offset

    def unit_intervals(self, bases: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The elements as gid intervals ``[lo, hi)`` with the run each came from: one per
        run of stride -1, 0 or 1 (a broadcast element once), one per element otherwise."""
        first = self.gids(bases)
        simple = (np.abs(self.stride) <= 1) | (self.count == 1)
        width = np.where(self.stride == 0, 1, self.count)
        lo = np.where(self.stride < 0, first + (self.count - 1) * self.stride, first)
        if simple.all():
            return lo, lo + width, np.arange(len(self), dtype=_I64)
        plain = np.flatnonzero(simple)
        other = np.flatnonzero(~simple)
        owner, within = expand_ranges(np.zeros(other.size, _I64), self.count[other])
        run = other[owner]
        elem = first[run] + within * self.stride[run]
        los = np.concatenate((lo[plain], elem))
        his = np.concatenate((lo[plain] + width[plain], elem + 1))
        runs = np.concatenate((plain, run))
        order = np.argsort(runs, kind="stable")
        return los[order], his[order], runs[order]


EMPTY_RUNS = Runs(*(np.zeros(0, _I64) for _ in range(4)))


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
