"""Exchange planning: the byte moves a copy makes between (and within) tile memories.

A :class:`CopyPlan` is computed once, when the engine is built, as *pieces*: piece ``k``
moves ``count[k]`` elements of ``size[k]`` bytes, read every ``src_step[k]`` bytes and
written every ``dst_step[k]`` bytes (a contiguous piece is one ``memmove``). The runtime
runs it natively (:mod:`poplar_py.runtime.copies`) over any two memories: tile to tile, host
to tile, tile to host. A plan also records the bytes each tile sends and receives, which the cycle
model charges to the exchange phase.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..regions.arrays import (
    exclusive_cumsum,
    expand_ranges,
    first_alike,
    first_equal,
    union,
    union_grouped,
    unique_sorted,
)

_I64 = np.int64
#: below this many pieces a copy is not worth handing to several threads (nor its pieces sorting)
MIN_PIECES_PER_THREAD = 4096
_SHORT = 8  # pieces shorter than this on average are run grouped by length
_SHARE_PIECES = 8  # buffers filled by this many pieces or more are gathered once when shared


@dataclass(frozen=True)
class TileTraffic:
    """Bytes per tile for one step: sent to / received from other tiles, copied on-tile."""

    bytes_out: np.ndarray
    bytes_in: np.ndarray
    bytes_local: np.ndarray
    ipu_bytes: np.ndarray | None = None  # [from IPU, to IPU]: bytes that cross IPUs (several IPUs)

    @staticmethod
    def empty(num_tiles: int) -> TileTraffic:
        z = np.zeros(num_tiles, dtype=_I64)
        return TileTraffic(z, z, z)

    def __add__(self, other: TileTraffic) -> TileTraffic:
        ipu = self.ipu_bytes if other.ipu_bytes is None else other.ipu_bytes if self.ipu_bytes is None \
            else self.ipu_bytes + other.ipu_bytes
        return TileTraffic(self.bytes_out + other.bytes_out, self.bytes_in + other.bytes_in,
                           self.bytes_local + other.bytes_local, ipu)


def traffic(src_tile: np.ndarray, dst_tile: np.ndarray, count: np.ndarray, size: np.ndarray, num_tiles: int,
            src_gid: np.ndarray | None = None, src_gstep: np.ndarray | None = None,
            tiles_per_ipu: int | None = None) -> TileTraffic:
    """Exchange bytes of moving pieces of elements from ``src_tile`` to ``dst_tile``.

    With the source elements given (``src_gid``, ``src_gstep``), an element sent to several
    tiles goes on its tile's bus once (a broadcast). With ``tiles_per_ipu`` (a target of
    several IPUs), the bytes that cross from one IPU to another are counted per pair of IPUs
    (each destination tile's bytes: a conservative count for broadcasts).
    """
    nbytes = count * size
    remote = src_tile != dst_tile
    bytes_in = np.bincount(dst_tile[remote], weights=nbytes[remote], minlength=num_tiles)
    bytes_local = np.bincount(dst_tile[~remote], weights=nbytes[~remote], minlength=num_tiles)
    if src_gid is None or src_gstep is None:
        bytes_out = np.bincount(src_tile[remote], weights=nbytes[remote], minlength=num_tiles)
    else:
        bytes_out = _broadcast_bytes(src_tile[remote], count[remote], size[remote], src_gid[remote],
                                     src_gstep[remote], num_tiles)
    ipu_bytes = None
    if tiles_per_ipu is not None and num_tiles > tiles_per_ipu:
        ipus = -(-num_tiles // tiles_per_ipu)
        a, b = src_tile // tiles_per_ipu, dst_tile // tiles_per_ipu
        cross = a != b
        ipu_bytes = np.bincount(a[cross] * ipus + b[cross], weights=nbytes[cross],
                                minlength=ipus * ipus).astype(_I64).reshape(ipus, ipus)
    return TileTraffic(bytes_out.astype(_I64), bytes_in.astype(_I64), bytes_local.astype(_I64), ipu_bytes)


def _broadcast_bytes(tile: np.ndarray, count: np.ndarray, size: np.ndarray, gid: np.ndarray,
                     gstep: np.ndarray, num_tiles: int) -> np.ndarray:
    """Bytes each tile sends when every distinct source element is sent once.

    A piece's elements are an arithmetic progression of gids. Progressions of one step and one
    residue on one (tile, element size) are intervals of the quotient line, so their union is a
    sort; only progressions whose spans meet one of another step go element by element.
    """
    n = np.where(gstep == 0, 1, count)
    step = np.where(n == 1, 1, np.abs(gstep))
    lo = np.where(gstep < 0, gid - (n - 1) * step, gid)
    columns = [tile, size, step, lo % step]
    first, kind = np.unique(first_equal(columns), return_inverse=True)
    kind, qlo, qhi = union_grouped(kind.reshape(-1), lo // step, lo // step + n)
    tile, size, step, residue = (c[first[kind]] for c in columns)
    lo, n = qlo * step + residue, qhi - qlo
    place = tile * 16 + size
    mixed = _meets_other_step(place, lo, lo + (n - 1) * step + 1, step)
    whole = ~mixed
    out = np.bincount(tile[whole], weights=n[whole] * size[whole], minlength=num_tiles).astype(_I64)
    if mixed.any():
        m = np.flatnonzero(mixed)
        plain, strided = m[step[m] == 1], m[step[m] > 1]
        owner, within = expand_ranges(np.zeros(strided.size, _I64), n[strided])
        piece = strided[owner]
        e_lo = lo[piece] + within * step[piece]
        group, ulo, uhi = union_grouped(np.concatenate((place[plain], place[piece])),
                                        np.concatenate((lo[plain], e_lo)),
                                        np.concatenate((lo[plain] + n[plain], e_lo + 1)))
        out += np.bincount(group // 16, weights=(uhi - ulo) * (group % 16), minlength=num_tiles).astype(_I64)
    return out


def _meets_other_step(place: np.ndarray, lo: np.ndarray, hi: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Per progression spanning ``[lo, hi)`` on ``place``: whether it lies in a cluster of
    overlapping spans on its place holding more than one step."""
    if not lo.size:
        return np.zeros(0, dtype=bool)
    _, rank = np.unique(place, return_inverse=True)
    base = int(lo.min())
    span = int(hi.max()) - base + 1  # one place's coordinates never reach the next place's
    x_lo, x_hi = lo - base + rank * span, hi - base + rank * span
    order = np.argsort(x_lo, kind="stable")
    reach = np.maximum.accumulate(x_hi[order])
    new = np.concatenate(([True], x_lo[order][1:] >= reach[:-1]))
    starts = np.flatnonzero(new)
    o_step = step[order]
    mixed_cluster = np.minimum.reduceat(o_step, starts) != np.maximum.reduceat(o_step, starts)
    cluster = np.cumsum(new) - 1
    mixed = np.empty(order.size, dtype=bool)
    mixed[order] = mixed_cluster[cluster]
    return mixed


def align_pieces(a_flat: np.ndarray, a_count: np.ndarray, b_flat: np.ndarray, b_count: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two cuttings of the flat positions ``[0, n)`` into pieces, cut where either cuts:
    (start, count, piece of a, piece of b) of every resulting piece."""
    n = int(a_count.sum())
    if n == 0:
        z = np.zeros(0, _I64)
        return z, z, z, z
    start = unique_sorted(np.concatenate((a_flat, b_flat)))
    count = np.diff(np.append(start, n))
    ia = np.searchsorted(a_flat, start, side="right") - 1
    ib = np.searchsorted(b_flat, start, side="right") - 1
    return start, count, ia, ib


@dataclass(frozen=True)
class CopyPlan:
    """Pieces of elements to move (see the module docstring), one row per piece: (source,
    destination, count) when every piece shares its steps and element size (``steps``), else
    (source, destination, count, source step, destination step, element size)."""

    pieces: np.ndarray
    steps: tuple[int, int, int] | None  # (source step, destination step, size) shared by all pieces
    staged: bool  # the copy overwrites what it reads: it goes through a temporary
    traffic: TileTraffic
    nbytes: int

    @staticmethod
    def build(src: np.ndarray, dst: np.ndarray, count: np.ndarray, src_step: np.ndarray, dst_step: np.ndarray,
              size: np.ndarray, traffic_: TileTraffic, same_memory: bool = False,
              disjoint: bool = False, across: bool = False) -> CopyPlan:
        """A plan moving these pieces; ``same_memory``: source and destination are one memory,
        so a copy that overwrites what it still has to read goes through a temporary;
        ``disjoint``: no two pieces write the same place, so their order is free; ``across``:
        run between the memories of several replicas at once (:meth:`staging`), so any overlap
        of the two sides stages it (one piece too)."""
        src, dst, count, src_step, dst_step, size = _joined(src, dst, count, src_step, dst_step, size)
        strided = bool((src_step != size).any() or (dst_step != size).any())
        staged = same_memory and (across or count.size > 1 or strided) \
            and _overlap(src, count, src_step, size, dst, dst_step)
        if disjoint and not staged and count.size > MIN_PIECES_PER_THREAD and count.mean() < _SHORT:
            # Many short pieces: grouped by length, the native loop's branches are predictable.
            order = np.argsort(np.minimum(count, _SHORT), kind="stable")
            columns = (src, dst, count, src_step, dst_step, size)
            src, dst, count, src_step, dst_step, size = (a[order] for a in columns)
        return CopyPlan(*_table(src, dst, count, src_step, dst_step, size), staged, traffic_,
                        int((count * size).sum()))

    def __len__(self) -> int:
        return int(self.pieces.shape[0])

    def __getstate__(self) -> dict:
        """Pickled without the pieces' address, which belongs to this process."""
        state = dict(self.__dict__)
        state.pop("address", None)
        return state

    @functools.cached_property
    def address(self) -> int:
        """Where the piece table is (kept: ctypes takes a microsecond to tell it)."""
        return self.pieces.ctypes.data

    @functools.cached_property
    def staging(self) -> tuple[CopyPlan, CopyPlan]:
        """This copy as two that run one after the other, through a buffer of ``nbytes`` bytes:
        the pieces packed into it back to back, then out of it."""
        empty = TileTraffic.empty(0)
        into, out_of = self._through_temporary()
        return CopyPlan(*into, False, empty, self.nbytes), CopyPlan(*out_of, False, empty, self.nbytes)

    def across(self, offsets: np.ndarray) -> CopyPlan:
        """This copy repeated once per row of ``offsets`` (source and destination offsets), as
        one copy (staged like this one)."""
        p = self.pieces
        at = np.repeat(offsets, len(self), axis=0)
        pieces = np.tile(p, (offsets.shape[0], 1))
        pieces[:, 0] += at[:, 0]
        pieces[:, 1] += at[:, 1]
        return CopyPlan(pieces, self.steps, self.staged, self.traffic, self.nbytes * offsets.shape[0])

    def _through_temporary(self) -> tuple[tuple, tuple]:
        """The copy into a packed temporary, and the copy out of it (tables and steps)."""
        p = self.pieces
        if self.steps is None:
            size = p[:, 5]
            columns = [p[:, k] for k in range(6)]
        else:
            ss, ds, z = self.steps
            size = np.full(len(self), z, _I64)
            columns = [p[:, 0], p[:, 1], p[:, 2], np.full(len(self), ss, _I64), np.full(len(self), ds, _I64),
                       size]
        packed = exclusive_cumsum(p[:, 2] * size)
        src, dst, count, src_step, dst_step, _ = columns
        return (_table(src, packed, count, src_step, size, size),
                _table(packed, dst, count, size, dst_step, size))


@dataclass(frozen=True)
class SharedGather:
    """Filling buffers some of which receive exactly the same bytes (a vector every tile reads):
    the first receiver of each gathers them piece by piece, the others copy its buffer whole.
    What crosses the exchange (``traffic``) is what the gather alone would move."""

    gather: CopyPlan
    replicate: CopyPlan  # buffer to buffer, after the gather

    @property
    def traffic(self) -> TileTraffic:
        return self.gather.traffic


def gather_into_buffers(src: np.ndarray, dst: np.ndarray, count: np.ndarray, step: np.ndarray,
                        size: np.ndarray, buffer: np.ndarray, start: np.ndarray,
                        traffic_: TileTraffic) -> CopyPlan | SharedGather:
    """The plan filling buffers: piece ``k`` (``count[k]`` elements of ``size[k]`` bytes, read
    ``step[k]`` bytes apart, written contiguously at ``dst[k]``) fills buffer ``buffer[k]``,
    which starts at ``start[k]``. Buffers of _SHARE_PIECES pieces or more that the same pieces
    fill, at the same places, are gathered once (:class:`SharedGather`)."""
    order = np.argsort(buffer, kind="stable")
    columns = (src, dst, count, step, size, buffer, start)
    src, dst, count, step, size, buffer, start = (a[order] for a in columns)
    first = np.flatnonzero(np.concatenate(([True], buffer[1:] != buffer[:-1])))
    pieces = np.diff(np.append(first, buffer.size))
    big = np.flatnonzero(pieces >= _SHARE_PIECES)
    if big.size < 2:
        return CopyPlan.build(src, dst, count, step, size, size, traffic_, disjoint=True)
    rows = np.stack((src, count, step, size, dst - start), axis=1)
    lo = first[big]
    rep = _first_alike(rows, lo, pieces[big])
    copied = rep != lo
    if not copied.any():
        return CopyPlan.build(src, dst, count, step, size, size, traffic_, disjoint=True)
    ends = np.maximum.reduceat(dst - start + count * size, first)[big]
    dropped = np.zeros(first.size, dtype=bool)
    dropped[big[copied]] = True  # filled by copying an alike buffer whole
    keep = np.repeat(~dropped, pieces)
    gather = CopyPlan.build(src[keep], dst[keep], count[keep], step[keep], size[keep], size[keep], traffic_,
                            disjoint=True)
    one = np.ones(int(copied.sum()), _I64)
    return SharedGather(gather, CopyPlan.build(start[rep[copied]], start[lo[copied]], ends[copied], one, one,
                                               one, TileTraffic.empty(0), disjoint=True))


def _first_alike(rows: np.ndarray, lo: np.ndarray, n: np.ndarray) -> np.ndarray:
    """For the blocks ``rows[lo[k]:lo[k] + n[k]]``: the ``lo`` of the first block equal to each."""
    piece = expand_ranges(lo, n)[1]
    return lo[first_alike(rows[piece].reshape(-1), n * rows.shape[1])]


def _table(src: np.ndarray, dst: np.ndarray, count: np.ndarray, src_step: np.ndarray, dst_step: np.ndarray,
           size: np.ndarray) -> tuple[np.ndarray, tuple[int, int, int] | None]:
    """The pieces as one table: three columns and shared steps when they share them."""
    if count.size and (src_step == src_step[0]).all() and (dst_step == dst_step[0]).all() \
            and (size == size[0]).all():
        return np.stack((src, dst, count), axis=1).astype(_I64), (int(src_step[0]), int(dst_step[0]),
                                                                    int(size[0]))
    return np.stack((src, dst, count, src_step, dst_step, size), axis=1).astype(_I64).reshape(-1, 6), None


def _joined(src: np.ndarray, dst: np.ndarray, count: np.ndarray, src_step: np.ndarray, dst_step: np.ndarray,
            size: np.ndarray) -> tuple[np.ndarray, ...]:
    """Neighbouring pieces that are contiguous on both sides and continue each other, as one."""
    if count.size <= 1:
        return src, dst, count, src_step, dst_step, size
    flat = ((src_step == size) & (dst_step == size)) | (count == 1)
    end = count * size
    joins = flat[:-1] & flat[1:] & (size[1:] == size[:-1]) & (src[1:] == src[:-1] + end[:-1]) \
        & (dst[1:] == dst[:-1] + end[:-1])
    if not joins.any():
        return src, dst, count, src_step, dst_step, size
    first = np.flatnonzero(np.concatenate(([True], ~joins)))
    counts = np.add.reduceat(count, first)
    joined = counts != count[first]
    return (src[first], dst[first], counts, np.where(joined, size[first], src_step[first]),
            np.where(joined, size[first], dst_step[first]), size[first])


def _overlap(src: np.ndarray, count: np.ndarray, src_step: np.ndarray, size: np.ndarray, dst: np.ndarray,
             dst_step: np.ndarray) -> bool:
    """Could a destination byte be a source byte? (Byte ranges of the pieces, conservatively.)"""
    def ranges(start: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        last = start + (count - 1) * step
        return union(np.minimum(start, last), np.maximum(start, last) + size)

    a_lo, a_hi = ranges(src, src_step)
    b_lo, b_hi = ranges(dst, dst_step)
    k = np.searchsorted(b_hi, a_lo, side="right")
    inside = k < b_lo.size
    return bool((b_lo[k[inside]] < a_hi[inside]).any())
