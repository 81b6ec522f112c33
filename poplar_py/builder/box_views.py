"""Views made of several blocks: the general path of tensor views, vectorised over blocks.

Most views are one strided block of one variable, as a numpy view is, and
:mod:`poplar_py.tensor` handles those with plain arithmetic. The others (concatenations,
broadcasts of dimensions longer than one, reshapes a strided block cannot express) are
a set of *boxes*: box ``b`` covers the indices ``start[b] <= i < start[b] + size[b]`` of
the tensor and holds element ``offset[b] + sum((i - start[b]) * stride[b])`` of
variable ``var[b]``. The boxes tile the tensor's index space, and each view is a few
numpy operations on the box arrays, so its cost grows with the boxes, not the elements.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..regions.arrays import expand_ranges, unique_sorted
from ..regions.runs import EMPTY_RUNS, Runs, arithmetic_groups

_I64 = np.int64
_INDEXED = 64  # windows into more boxes than this go through an index


@dataclass(frozen=True)
class Boxes:
    """Blocks tiling a tensor's index space (see the module docstring); no box is empty."""

    var: np.ndarray  # [B]
    offset: np.ndarray  # [B]
    start: np.ndarray  # [B, N]
    size: np.ndarray  # [B, N]
    stride: np.ndarray  # [B, N]; 0 on dimensions of size 1
    # per dimension: box order by start, sorted starts, widest box (built by ``near`` when needed)
    _index: dict[int, tuple[np.ndarray, np.ndarray, int]] = field(default_factory=dict, compare=False,
                                                                  repr=False)

    def __len__(self) -> int:
        return int(self.var.size)

    def near(self, d: int, lo: int, hi: int) -> np.ndarray:
        """The boxes that may reach into ``lo <= i < hi`` along dimension ``d`` (a superset,
        found through an index of the boxes by their start along ``d``, built once)."""
        index = self._index.get(d)
        if index is None:
            order = np.argsort(self.start[:, d], kind="stable")
            index = self._index[d] = (order, self.start[order, d], int(self.size[:, d].max()))
        order, starts, widest = index
        return order[np.searchsorted(starts, lo - widest + 1):np.searchsorted(starts, hi)]

    @property
    def rank(self) -> int:
        return int(self.start.shape[1])

    def select(self, keep: np.ndarray) -> Boxes:
        return Boxes(self.var[keep], self.offset[keep], self.start[keep], self.size[keep], self.stride[keep])

    def replace(self, offset: np.ndarray | None = None, start: np.ndarray | None = None,
                size: np.ndarray | None = None, stride: np.ndarray | None = None) -> Boxes:
        """New arrays where given; empty boxes dropped, unit-dimension strides set to 0."""
        size = self.size if size is None else size
        stride = self.stride if stride is None else stride
        b = Boxes(self.var, self.offset if offset is None else offset,
                  self.start if start is None else start, size, np.where(size == 1, 0, stride))
        keep = (size > 0).all(axis=1)
        return b if keep.all() else b.select(keep)


def block(var: int, offset: int, shape: Sequence[int], strides: Sequence[int]) -> Boxes:
    """One strided block covering a whole tensor of ``shape``."""
    n = len(shape)
    size = np.asarray(shape, _I64).reshape(1, n)
    b = Boxes(np.array([var], _I64), np.array([offset], _I64), np.zeros((1, n), _I64), size,
              np.asarray(strides, _I64).reshape(1, n))
    return b.replace()


def as_block(b: Boxes, shape: Sequence[int]) -> tuple[int, int, tuple[int, ...]] | None:
    """``(var, offset, strides)`` when the boxes are a single block covering ``shape``."""
    if len(b) != 1 or b.start.any() or b.size[0].tolist() != list(shape):
        return None
    return int(b.var[0]), int(b.offset[0]), tuple(b.stride[0].tolist())


def window(b: Boxes, lo: Sequence[int], hi: Sequence[int]) -> Boxes:
    """The part of each box inside ``lo <= i < hi``, re-indexed from ``lo``."""
    if len(b) > _INDEXED:  # many boxes: look only at those near the window along its narrowest side
        near = min((b.near(d, lo[d], hi[d]) for d in range(b.rank)), key=len, default=None)
        if near is not None and near.size < len(b):
            b = b.select(near)
    lo_a, hi_a = np.asarray(lo, _I64), np.asarray(hi, _I64)
    s = np.maximum(b.start, lo_a)
    e = np.minimum(b.start + b.size, hi_a)
    keep = (e > s).all(axis=1)
    b, s, e = b.select(keep), s[keep], e[keep]
    offset = b.offset + ((s - b.start) * b.stride).sum(axis=1)
    return b.replace(offset=offset, start=s - lo_a, size=e - s)


def drop(b: Boxes, dims: Sequence[int]) -> Boxes:
    """Remove dimensions of size 1."""
    keep = [d for d in range(b.rank) if d not in set(dims)]
    return Boxes(b.var, b.offset, b.start[:, keep], b.size[:, keep], b.stride[:, keep])


def insert(b: Boxes, positions: Sequence[int]) -> Boxes:
    """Insert dimensions of size 1 at these (sorted) positions of the result."""
    n = b.rank + len(positions)
    old = [d for d in range(n) if d not in set(positions)]
    start = np.zeros((len(b), n), _I64)
    size = np.ones((len(b), n), _I64)
    stride = np.zeros((len(b), n), _I64)
    start[:, old], size[:, old], stride[:, old] = b.start, b.size, b.stride
    return Boxes(b.var, b.offset, start, size, stride)


def permute(b: Boxes, perm: Sequence[int]) -> Boxes:
    """Result dimension ``i`` is dimension ``perm[i]``."""
    p = list(perm)
    return Boxes(b.var, b.offset, b.start[:, p], b.size[:, p], b.stride[:, p])


def _column(a: np.ndarray, d: int, values: np.ndarray) -> np.ndarray:
    out = a.copy()
    out[:, d] = values
    return out


def reverse(b: Boxes, d: int, extent: int) -> Boxes:
    """Index ``i`` of dimension ``d`` becomes ``extent - 1 - i``."""
    size, stride = b.size[:, d], b.stride[:, d]
    return b.replace(offset=b.offset + (size - 1) * stride,
                     start=_column(b.start, d, extent - b.start[:, d] - size),
                     stride=_column(b.stride, d, -stride))


def subsample(b: Boxes, d: int, k: int) -> Boxes:
    """Every ``k``-th index of dimension ``d``, from 0."""
    start, size, stride = b.start[:, d], b.size[:, d], b.stride[:, d]
    first = -(-start // k) * k
    count = np.maximum(0, -(-(start + size - first) // k))
    return b.replace(offset=b.offset + (first - start) * stride, start=_column(b.start, d, first // k),
                     size=_column(b.size, d, count), stride=_column(b.stride, d, stride * k))


def tile(b: Boxes, d: int, n: int, extent: int) -> Boxes:
    """``n`` copies of the tensor one after another along ``d`` (Poplar's broadcast)."""
    copies = np.repeat(np.arange(n, dtype=_I64), len(b))
    index = np.tile(np.arange(len(b)), n)
    b = b.select(index)
    return Boxes(b.var, b.offset, _column(b.start, d, b.start[:, d] + copies * extent), b.size, b.stride)


def repeat(b: Boxes, d: int, k: int) -> Boxes:
    """Each index of dimension ``d`` repeated ``k`` times (Poplar's upsample)."""
    owner, i = expand_ranges(np.zeros(len(b), _I64), b.size[:, d])
    b2 = b.select(owner)
    return b2.replace(offset=b2.offset + i * b2.stride[:, d],
                      start=_column(b2.start, d, (b2.start[:, d] + i) * k),
                      size=_column(b2.size, d, np.full(owner.size, k, _I64)),
                      stride=_column(b2.stride, d, np.zeros(owner.size, _I64)))


def concat(parts: Sequence[Boxes], d: int, extents: Sequence[int]) -> Boxes:
    """The tensors of ``parts`` joined along ``d`` (``extents``: their sizes along ``d``)."""
    shifts = np.concatenate(([0], np.cumsum(extents)[:-1])).astype(_I64)
    shift = np.repeat(shifts, [len(p) for p in parts])
    start = np.concatenate([p.start for p in parts])
    start[:, d] += shift
    return coalesce(Boxes(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("var", "offset")),
                          start, np.concatenate([p.size for p in parts]),
                          np.concatenate([p.stride for p in parts])))


# ---- a few boxes, in Python ------------------------------------------------------------------
# A concatenation of a few views (a halo stitched to a window) costs more in numpy calls than in
# work: the same steps on boxes as tuples ``(var, offset, start, size, stride)``, with the same
# results as the numpy functions (each step mirrors one of them).

Row = tuple[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def block_rows(var: int, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> list[Row]:
    """``block`` as rows: none for an empty block."""
    if 0 in shape:
        return []
    strides = tuple(0 if n == 1 else s for n, s in zip(shape, strides))
    return [(var, offset, (0,) * len(shape), shape, strides)]


def rows_of(b: Boxes) -> list[Row]:
    """The boxes as rows."""
    columns = (map(tuple, a.tolist()) for a in (b.start, b.size, b.stride))
    return list(zip(b.var.tolist(), b.offset.tolist(), *columns))


def from_rows(rows: Sequence[Row], rank: int) -> Boxes:
    """Boxes from rows (one array, whose columns the fields view)."""
    a = np.array([(v, o, *a, *n, *s) for v, o, a, n, s in rows], _I64).reshape(len(rows), 2 + 3 * rank)
    return Boxes(a[:, 0], a[:, 1], a[:, 2:2 + rank], a[:, 2 + rank:2 + 2 * rank], a[:, 2 + 2 * rank:])


def concat_rows(parts: Sequence[list[Row]], d: int, extents: Sequence[int], rank: int,
                blocks: bool = False) -> list[Row]:
    """``concat`` on rows (the same boxes, maybe in another order). Parts that are ``blocks``
    (a row each, or none) can only join along ``d``."""
    rows: list[Row] = []
    shift = 0
    for part, extent in zip(parts, extents):
        for v, o, a, n, s in part:
            rows.append((v, o, a[:d] + (a[d] + shift,) + a[d + 1:], n, s))
        shift += extent
    return _coalesce_rows(rows, [d] if blocks else list(reversed(range(rank))))


def _across(r: Row, d: int) -> tuple[int, ...]:
    """Where a box lies across dimension ``d``: its variable, and its start, size and stride
    along every other dimension (boxes alike across ``d`` may join along it)."""
    _, _, a, n, s = r
    return (r[0], *a[:d], *a[d + 1:], *n[:d], *n[d + 1:], *s[:d], *s[d + 1:])


def _coalesce_rows(rows: list[Row], dims: list[int]) -> list[Row]:
    """``coalesce`` on rows, along ``dims`` in turn: boxes alike across ``d`` sorted next to each
    other by their start along ``d`` (unlike ones in any order), then linked and grouped as
    ``coalesce`` does."""
    for d in dims:
        if len(rows) <= 1:
            return rows
        keyed = sorted((_across(r, d), r[2][d], r) for r in rows)
        rows = [r for _, _, r in keyed]
        linked = [p[0] == q[0] and q[1] == p[1] + p[2][3][d] for p, q in itertools.pairwise(keyed)]
        if not any(linked):
            continue
        first, count, stride = _groups([r[1] for r in rows], [r[3][d] for r in rows],
                                       [r[4][d] for r in rows], linked)
        joined = []
        for k, c, s in zip(first, count, stride):
            v, o, a, n, t = rows[k]
            n = n[:d] + (c,) + n[d + 1:]
            t = t[:d] + (s,) + t[d + 1:]
            joined.append((v, o, a, n, tuple(0 if m == 1 else x for m, x in zip(n, t))))
        rows = joined
    return rows


def _groups(offset: list[int], count: list[int], stride: list[int], linked: list[bool]
            ) -> tuple[list[int], list[int], list[int]]:
    """``regions.arithmetic_groups`` on lists."""
    n = len(count)
    single = [c == 1 for c in count]
    step = [offset[k + 1] - (offset[k] + (count[k] - 1) * stride[k]) for k in range(n - 1)]
    ok = [linked[k] and (single[k] or stride[k] == step[k]) and (single[k + 1] or stride[k + 1] == step[k])
          for k in range(n - 1)]
    # a one-term sequence joined on both sides must see one step on both sides (ok as it was)
    ok = ok[:1] + [ok[k] and not (ok[k - 1] and single[k] and step[k] != step[k - 1])
                   for k in range(1, n - 1)]
    if not any(ok):
        return list(range(n)), count, [1 if c == 1 else s for c, s in zip(count, stride)]
    first = [0] + [k + 1 for k in range(n - 1) if not ok[k]]
    ends = first[1:] + [n]
    counts = [sum(count[a:b]) for a, b in zip(first, ends)]
    strides = [step[a] if a < n - 1 and ok[a] else stride[a] for a in first]
    return first, counts, [1 if c == 1 else s for c, s in zip(counts, strides)]


def coalesce(b: Boxes) -> Boxes:
    """Join boxes that continue each other along a dimension (fewer, larger boxes)."""
    for d in reversed(range(b.rank)):
        if len(b) <= 1:
            return b
        others = [c for c in range(b.rank) if c != d]
        keys = [b.start[:, d], *(b.stride[:, c] for c in others), *(b.size[:, c] for c in others),
                *(b.start[:, c] for c in others), b.var]
        b = b.select(np.lexsort(keys))
        same = b.var[1:] == b.var[:-1]
        if others:
            rest = np.concatenate([b.start[:, others], b.size[:, others], b.stride[:, others]], axis=1)
            same &= (rest[1:] == rest[:-1]).all(axis=1)
        linked = same & (b.start[1:, d] == b.start[:-1, d] + b.size[:-1, d])
        if not linked.any():
            continue
        first, count, stride = arithmetic_groups(b.offset, b.size[:, d], b.stride[:, d], linked)
        b = b.select(first)
        b = b.replace(size=_column(b.size, d, count), stride=_column(b.stride, d, stride))
    return b


def to_runs(b: Boxes, shape: Sequence[int]) -> Runs:
    """The elements in the tensor's flattened order, as merged runs.

    A box gives one run per index of its leading dimensions; trailing dimensions join the
    run while the box spans them fully and their strides continue it.
    """
    n = len(shape)
    if len(b) == 0:
        return EMPTY_RUNS
    ones = np.ones(len(b), _I64)
    if n == 0:
        return Runs(b.var, b.offset, ones, ones)
    flat = np.ones(n, _I64)
    for d in range(n - 2, -1, -1):
        flat[d] = flat[d + 1] * shape[d + 1]
    first = np.full(len(b), n - 1, _I64)  # the run covers dimensions first..n-1
    count, stride = b.size[:, n - 1].copy(), b.stride[:, n - 1].copy()
    full = np.ones(len(b), dtype=bool)
    active = np.ones(len(b), dtype=bool)
    for d in range(n - 1, 0, -1):
        full &= (b.start[:, d] == 0) & (b.size[:, d] == shape[d])
        size_d, stride_d = b.size[:, d - 1], b.stride[:, d - 1]
        active &= full & ((size_d == 1) | (count == 1) | (stride_d == count * stride))
        stride = np.where(active & (count == 1), stride_d, stride)
        count = np.where(active, count * size_d, count)
        first = np.where(active, d - 1, first)
    pos_parts, off_parts, owner_parts = [], [], []
    for k in unique_sorted(first).tolist():
        sel = np.flatnonzero(first == k)
        pos = (b.start[sel] * flat).sum(axis=1)
        off = b.offset[sel]
        if k:
            lead = b.size[sel, :k]
            o, j = expand_ranges(np.zeros(sel.size, _I64), lead.prod(axis=1))
            pos, off, sel = pos[o], off[o], sel[o]
            lead, strides = lead[o], b.stride[sel, :k]
            for d in range(k - 1, -1, -1):
                i = j % lead[:, d]
                j = j // lead[:, d]
                pos = pos + i * flat[d]
                off = off + i * strides[:, d]
        pos_parts.append(pos)
        off_parts.append(off)
        owner_parts.append(sel)
    pos, off, owner = (np.concatenate(p) for p in (pos_parts, off_parts, owner_parts))
    order = np.argsort(pos, kind="stable")
    owner = owner[order]
    count, stride = count[owner], stride[owner]
    return Runs(b.var[owner], off[order], count, np.where(count == 1, 1, stride)).merged()


def from_runs(runs: Runs, shape: Sequence[int]) -> Boxes:
    """Boxes of a tensor of ``shape`` whose flattened elements are ``runs``."""
    n = len(shape)
    if len(runs) == 0:
        z = np.zeros((0, n), _I64)
        return Boxes(np.zeros(0, _I64), np.zeros(0, _I64), z, z, z)
    b = Boxes(runs.var, runs.offset, runs.starts().reshape(-1, 1), runs.count.reshape(-1, 1),
              runs.stride.reshape(-1, 1)).replace()
    for inner in [int(np.prod(shape[d + 1:], dtype=_I64)) for d in range(n - 1)]:
        b = _split_last(b, inner)
    if n == 0:
        return drop(b, [0])
    return coalesce(b) if n > 1 else b  # merged runs are as few 1-D boxes as there can be


def _split_last(b: Boxes, inner: int) -> Boxes:
    """The last dimension (extent A * inner) split into (A, inner): each box becomes at most
    three: a partial first row, whole rows, a partial last row."""
    a, length, s = b.start[:, -1], b.size[:, -1], b.stride[:, -1]
    end = a + length
    up = -(-a // inner) * inner
    head_end = np.minimum(up, end)
    mid_hi = np.maximum(end // inner * inner, up)
    tail_lo = np.maximum(mid_hi, head_end)
    pieces = []
    for lo, hi, whole in ((a, head_end, False), (up, mid_hi, True), (tail_lo, end, False)):
        sel = np.flatnonzero(hi > lo)
        if not sel.size:
            continue
        lo_s, hi_s, s_s = lo[sel], hi[sel], s[sel]
        start = np.concatenate([b.start[sel, :-1], (lo_s // inner)[:, None],
                                (np.zeros_like(lo_s) if whole else lo_s % inner)[:, None]], axis=1)
        rows = (hi_s - lo_s) // inner if whole else np.ones_like(lo_s)
        size = np.concatenate([b.size[sel, :-1], rows[:, None],
                               (np.full_like(lo_s, inner) if whole else hi_s - lo_s)[:, None]], axis=1)
        stride = np.concatenate([b.stride[sel, :-1], (s_s * inner)[:, None], s_s[:, None]], axis=1)
        pieces.append(Boxes(b.var[sel], b.offset[sel] + (lo_s - a[sel]) * s_s, start, size, stride).replace())
    return Boxes(*(np.concatenate([getattr(p, f) for p in pieces])
                   for f in ("var", "offset", "start", "size", "stride")))
