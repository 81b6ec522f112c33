"""Runs: a tensor's elements, in flattened order, as strided runs of variable elements.

Run ``k`` holds the elements ``offset[k] + i * stride[k]`` (``i < count[k]``) of variable
``var[k]``. A row or a contiguous slice is one run, a column of a row-major matrix one run of
stride ``cols``, a broadcast scalar one run of stride 0. Every pass works on runs and on interval
maps (:mod:`interval_map`), so its cost grows with the regions of the data, not its elements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .arrays import exclusive_cumsum, expand_ranges, int_array

_I64 = np.int64


SMALL_RUNS = 8  # runs this short are cheaper to handle one by one than as arrays


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
        count = int_array(count)
        keep = count > 0
        arrays = [int_array(a) for a in (var, offset, count, stride)]
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
        begin, end = int_array(begin), int_array(end)
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
