"""Pass: lay out every variable and constant in the memory of its tile.

Each tile owns a byte buffer. A variable's elements on one tile form one segment (in
element order, 8-byte aligned); segments follow each other in variable order. The
layout is computed per mapping interval (a run of one variable's elements on one tile),
so its cost grows with the intervals, not the elements: an element's place is its
interval's place plus its distance from the interval's start. All tile buffers are
slices of one arena. Extra per-tile buffers (exchange buffers, vertex state) are
reserved by later passes through :meth:`MemoryLayout.reserve_many`.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field

import numpy as np

from ..ir import GraphIR
from ..regions.arrays import exclusive_cumsum
from ..regions.interval_map import IntervalMap
from ..regions.runs import Runs, arithmetic_groups
from .liveness import Liveness
from .mapping import TileMapping
from .packing import pack

ALIGN = 8
_I64 = np.int64


def align(x: np.ndarray | int) -> np.ndarray | int:
    return (x + (ALIGN - 1)) // ALIGN * ALIGN


def back_to_back(tiles: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Offsets placing ``nbytes[k]`` on ``tiles[k]`` one after another in order, each 8-byte
    aligned, from 0 on every tile."""
    if tiles.size == 0:
        return np.zeros(0, _I64)
    order = np.argsort(tiles, kind="stable")
    t = tiles[order]
    before = exclusive_cumsum(align(nbytes[order]))
    first = np.concatenate(([True], t[1:] != t[:-1]))
    out = np.empty(tiles.size, _I64)
    out[order] = before - before[first][np.cumsum(first) - 1]
    return out


@dataclass(frozen=True)
class Located:
    """Elements in flattened order, cut into pieces that each lie on one tile at evenly spaced
    places: piece ``k`` starts at flat position ``flat[k]``, holds ``count[k]`` elements, the
    first ``offset[k]`` bytes into tile ``tile[k]``'s memory and the next ``step[k]`` bytes on."""

    run: np.ndarray  # the run (of the runs located) each piece belongs to
    flat: np.ndarray
    count: np.ndarray
    tile: np.ndarray
    offset: np.ndarray
    step: np.ndarray
    size: np.ndarray  # bytes per element

    def __len__(self) -> int:
        return int(self.count.size)

    def gids(self, runs: Runs, bases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Global id of each piece's first element, and the gid step, from the runs located."""
        within = self.flat - runs.starts()[self.run]
        stride = runs.stride[self.run]
        return runs.gids(bases)[self.run] + within * stride, stride


@dataclass
class MemoryLayout:
    """Where every mapping interval lives, plus the per-tile buffers later passes reserve."""

    num_tiles: int
    intervals: IntervalMap  # the complete mapping, every variable starting an interval
    tile: np.ndarray  # per interval
    offset: np.ndarray  # per interval: byte offset of its first element inside its tile
    elem_size: np.ndarray  # per interval: bytes per element
    bases: np.ndarray  # first gid of each variable
    tile_used: np.ndarray  # bytes used per tile (arena part)
    usage: dict[str, np.ndarray] = field(default_factory=dict)  # category -> bytes per tile
    not_always_live: np.ndarray | None = None  # per tile: bytes the packed (not always live) variables take
    scratch: np.ndarray | None = None  # per tile: bytes of buffers living within one step (reserve_scratch)
    tile_base: np.ndarray | None = None  # one replica's tiles
    replicas: int = 1  # the arena holds this many copies of the tile memories, back to back
    arena: np.ndarray | None = None  # all tile memories; never reallocated (kernels hold addresses)
    # the vertices' list tables (as the host kernels read them) and the state vectors compute does
    # not write, kept once for every replica (read-only while vertices run, alike on every replica);
    # their room in tile memory (the device's, at the IPU's sizes) stays reserved and untouched,
    # but for the state vectors and scalars compute writes, which live there (each replica its own)
    shared: np.ndarray | None = None
    shared_size: int = 0  # bytes of ``shared`` handed out (reserve_shared)
    outside: np.ndarray | None = None  # bytes per tile kept outside the arena (state tables, code)

    @property
    def tile_total(self) -> np.ndarray:
        """Bytes each tile needs: its arena buffer plus vertex state and code."""
        return self.tile_used if self.outside is None else self.tile_used + self.outside

    def reserve_many(self, tiles: np.ndarray, nbytes: np.ndarray, category: str) -> np.ndarray:
        """Reserve ``nbytes[k]`` on ``tiles[k]``, one after another in order (each 8-byte
        aligned); returns each reservation's offset inside its tile."""
        usage = self.usage.setdefault(category, np.zeros(self.num_tiles, dtype=_I64))
        if tiles.size == 0:
            return np.zeros(0, _I64)
        out = align(self.tile_used[tiles]) + back_to_back(tiles, nbytes)
        np.maximum.at(self.tile_used, tiles, out + nbytes)
        np.add.at(usage, tiles, nbytes)
        return out

    def reserve_shared(self, nbytes: np.ndarray) -> np.ndarray:
        """Reserve ``nbytes[k]`` (each 8-byte aligned) in the host's shared vertex state: each
        reservation's offset there, or -1 where it is empty."""
        sizes = align(nbytes)
        out = np.where(sizes > 0, self.shared_size + exclusive_cumsum(sizes), -1)
        self.shared_size += int(sizes.sum())
        return out

    def reserve_scratch(self, tiles: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
        """Offsets, inside each tile's scratch region, of buffers that live only while one step
        runs (a compute set's exchange buffers): each call's buffers lie back to back from the
        region's start, so calls share the region, which is as big as the largest call needs.
        :meth:`place_scratch` reserves it and says where it starts."""
        if self.scratch is None:
            self.scratch = np.zeros(self.num_tiles, dtype=_I64)
        out = back_to_back(tiles, nbytes)
        np.maximum.at(self.scratch, tiles, out + nbytes)
        return out

    def place_scratch(self, category: str) -> np.ndarray:
        """Reserve every tile's scratch region (counted as ``category``): where it starts."""
        extent = np.zeros(self.num_tiles, _I64) if self.scratch is None else self.scratch
        tiles = np.flatnonzero(extent)
        base = np.zeros(self.num_tiles, _I64)
        base[tiles] = self.reserve_many(tiles, extent[tiles], category)
        self.usage.setdefault(category, np.zeros(self.num_tiles, dtype=_I64))
        return base

    def account(self, per_tile: np.ndarray, category: str) -> None:
        """Count bytes that live outside the arena (vertex state, code) against each tile."""
        self.outside = per_tile if self.outside is None else self.outside + per_tile
        self.usage.setdefault(category, np.zeros(self.num_tiles, dtype=_I64))
        self.usage[category] += per_tile

    def finalise(self, replicas: int = 1) -> None:
        """Fix the arena: tile buffers back to back, and ``replicas`` copies of them (untouched
        pages of a zeroed arena take no memory)."""
        sizes = align(self.tile_used)
        self.tile_base = np.concatenate(([0], np.cumsum(sizes))).astype(_I64)
        self.replicas = replicas
        self._new_memories()

    def _new_memories(self) -> None:
        """Zeroed tile memories of every replica and shared vertex state of one, whose pages the
        host maps only when first touched (so untouched bytes take no host memory)."""
        self.arena = self._new_memory(self.replicas * self.arena_size)
        self.shared = self._new_memory(self.shared_size)

    @staticmethod
    def _new_memory(nbytes: int) -> np.ndarray:
        """``nbytes`` zeroed bytes whose pages the host maps only when first touched."""
        return np.frombuffer(mmap.mmap(-1, nbytes + ALIGN, flags=mmap.MAP_PRIVATE), dtype=np.uint8)

    def clear(self, lo: int, hi: int) -> None:
        """Zero the arena's bytes ``[lo, hi)``, handing their whole pages back to the host."""
        assert self.arena is not None
        page = mmap.PAGESIZE
        a, b = -(-lo // page) * page, hi // page * page
        if b <= a:
            self.arena[lo:hi] = 0
            return
        self.arena[lo:a] = 0
        self.arena[b:hi] = 0
        self.arena.base.obj.madvise(mmap.MADV_DONTNEED, a, b - a)

    def __getstate__(self) -> dict:
        """Pickled without the arena (the tile memories) and the shared vertex state: an unpickled
        layout gets new, zeroed ones."""
        state = dict(self.__dict__)
        state["arena"] = state["shared"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.tile_base is not None:
            self._new_memories()

    @property
    def arena_size(self) -> int:
        """The bytes of one replica's tile memories."""
        assert self.tile_base is not None
        return int(self.tile_base[-1])

    def address(self, tile: np.ndarray, offset: np.ndarray) -> np.ndarray:
        """Arena offsets of ``offset`` bytes into each ``tile``'s memory."""
        assert self.tile_base is not None
        return self.tile_base[tile] + offset

    def locate(self, runs: Runs) -> Located:
        """Where the elements of ``runs`` live, piece by piece: a run's consecutive intervals
        on one tile whose bytes go on with one step make one piece (a transposed view of a
        block-mapped tensor reads a block's rows as one strided piece, not row by row)."""
        p = self.intervals.split(runs, self.bases)
        size = self.elem_size[p.interval]
        offset = self.offset[p.interval] + (p.gid - self.intervals.starts[p.interval]) * size
        tile = self.tile[p.interval]
        step = p.step * size
        linked = p.run[1:] == p.run[:-1]
        if not linked.any():  # a piece per run: nothing to join
            return Located(p.run, p.flat_start(runs), p.count, tile, offset, step, size)
        linked &= tile[1:] == tile[:-1]
        first, count, joined = arithmetic_groups(offset, p.count, step, linked)
        return Located(p.run[first], p.flat_start(runs)[first], count, tile[first], offset[first],
                       np.where(count > 1, joined, step[first]), size[first])


def layout_memory(graph: GraphIR, mapping: TileMapping, liveness: Liveness | None = None) -> MemoryLayout:
    """Lay out every tile: one segment per (variable, tile); the always-live segments back to
    back, then the others packed by their lives (``liveness`` of the unreplicated variables:
    segments whose lives do not meet share bytes). Without ``liveness`` every variable is
    always live."""
    num_tiles = graph.target.getNumTiles()
    starts, tiles = mapping.intervals.starts, mapping.tiles
    zero = np.zeros(num_tiles, _I64)
    if not starts.size:
        return MemoryLayout(num_tiles, mapping.intervals, tiles, starts, starts, graph.variables.bases,
                            zero.copy(), {"variables": zero.copy(), "constants": zero.copy()})
    lengths = mapping.intervals.ends - starts
    var = graph.variables.var_of(starts)
    size = graph.variables.element_sizes()[var]
    # One segment per (variable, tile): its intervals in element order, back to back.
    order = np.lexsort((starts, var, tiles))  # by tile, then variable, then element
    t, v, n, sz = tiles[order], var[order], lengths[order], size[order]
    seg_first = np.concatenate(([True], (t[1:] != t[:-1]) | (v[1:] != v[:-1])))
    seg = np.cumsum(seg_first) - 1
    seg_bytes = np.add.reduceat(n * sz, np.flatnonzero(seg_first))
    seg_tile, seg_var = t[seg_first], v[seg_first]
    seg_start, tile_used, packed, shared = _place(seg_tile, seg_var, seg_bytes, num_tiles, liveness)
    within = exclusive_cumsum(n * sz)
    within -= within[seg_first][seg]
    offset = np.empty(starts.size, _I64)
    offset[order] = seg_start[seg] + within
    constant = graph.variables.constant[seg_var]
    plain = ~constant & ~packed
    per_tile = np.bincount(seg_tile[plain], weights=seg_bytes[plain], minlength=num_tiles).astype(_I64)
    usage = {"variables": per_tile + shared,  # the packed ones as the bytes they share
             "constants": np.bincount(seg_tile[constant], weights=seg_bytes[constant],
                                      minlength=num_tiles).astype(_I64)}
    return MemoryLayout(num_tiles, mapping.intervals, tiles, offset, size, graph.variables.bases, tile_used,
                        usage, not_always_live=shared)


def _place(seg_tile: np.ndarray, seg_var: np.ndarray, seg_bytes: np.ndarray, num_tiles: int,
           liveness: Liveness | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each segment's offset in its tile, the bytes each tile uses, which segments were packed
    (not always live) and the bytes each tile's packed ones take. Segments come sorted by tile,
    then variable."""
    nvars = 0 if liveness is None else liveness.always.size
    packed = np.zeros(seg_var.size, dtype=bool) if liveness is None else ~liveness.always[seg_var % nvars]
    seg_start = np.zeros(seg_var.size, _I64)
    tile_used, shared = np.zeros(num_tiles, _I64), np.zeros(num_tiles, _I64)
    # always-live segments: back to back
    fixed = np.flatnonzero(~packed)
    seg_start[fixed] = back_to_back(seg_tile[fixed], seg_bytes[fixed])
    np.maximum.at(tile_used, seg_tile[fixed], seg_start[fixed] + seg_bytes[fixed])
    rest = np.flatnonzero(packed)
    if rest.size:
        assert liveness is not None
        base = align(tile_used)
        tiles = seg_tile[rest]
        offset = pack(tiles, seg_var[rest] % nvars, seg_bytes[rest], liveness)
        seg_start[rest] = base[tiles] + offset
        np.maximum.at(shared, tiles, offset + seg_bytes[rest])
        tile_used[tiles] = base[tiles] + shared[tiles]
    return seg_start, tile_used, packed, shared
