"""Planning a reduction from the tile mapping, with vectorised numpy (no loop per element).

The input is viewed as a 2-D matrix ``[numOutputs, reduceSize]`` (kept dimensions first).
A plan is a list of *regions*, each reduced by one vertex on one tile: ``width`` consecutive
outputs, written at ``dst0`` of a destination (the output, or a partials buffer), from
``count`` *pieces* of a 1-D source tensor. A piece of a width-1 region is a run of one row;
a piece of a wider region is ``width`` long and element ``i`` belongs to output ``out0 + i``
(a run along a column of the matrix, such as a slice of an input row in a column reduction).

Stage 1 works on the input where it lives: an output whose elements all live on one tile is
finished there; any other gets one partial per tile holding some of its elements. Stage 2
reduces the partials of each output on the output's tile. When that would pile most of the
work on the outputs' few tiles (a column reduction of a tensor spread over the whole IPU: a
bias gradient's thousand partials per output on the tiles of a short output), an intermediate
stage first reduces each block of ``group`` consecutive source tiles' partials on a tile of
that block (:func:`intermediate_group`), as PopLibs' intermediate partials do, so the last
stage reduces a few partials per output.

Several reductions are planned as one (:class:`Layout`): their matrices one after another,
their outputs numbered across them, each read along rows or columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from poplar_py.regions.arrays import expand_ranges

MAX_CHUNKED_PIECES = 16


@dataclass
class Regions:
    """Regions sorted by tile, and their pieces back to back in region order."""

    tile: np.ndarray
    out0: np.ndarray  # first output (index into the flattened output)
    dst0: np.ndarray  # first destination element (the output, or the partials buffer)
    width: np.ndarray
    final: np.ndarray  # bool: writes the output (else partials)
    count: np.ndarray  # pieces per region
    pos: np.ndarray  # per piece: first element in the source
    length: np.ndarray  # per piece: elements

    @property
    def first_piece(self) -> np.ndarray:
        return np.cumsum(self.count) - self.count


def _run_starts(brk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs that ``brk`` (True where a run starts) marks."""
    starts = np.flatnonzero(brk)
    return starts, np.diff(np.append(starts, brk.size))


def _row_regions(starts: np.ndarray, lengths: np.ndarray, tiles: np.ndarray, row: np.ndarray) -> Regions:
    """Stage 1 along rows: pieces are runs of a row (``starts``: positions in the source, ``tiles``
    their tiles, ``row`` their outputs); a region is one (tile, output)."""
    order = np.lexsort((starts, row, tiles))
    starts, lengths, row, tile = starts[order], lengths[order], row[order], tiles[order]
    new = np.ones(starts.size, dtype=bool)
    new[1:] = (row[1:] != row[:-1]) | (tile[1:] != tile[:-1])
    first = np.flatnonzero(new)
    count = np.diff(np.append(first, starts.size))
    ones = np.ones(first.size, dtype=np.int64)
    return Regions(tile[first], row[first], row[first], ones, ones.astype(bool), count, starts, lengths)


def column_regions(tile: np.ndarray, r0: np.ndarray, pos: np.ndarray, length: np.ndarray,
                   num_outputs: int) -> Regions:
    """Regions from runs along columns (run k covers outputs ``r0[k]:r0[k]+length[k]`` from
    ``pos[k]``): runs are cut where any run on the same tile starts or ends, so the pieces of
    a region cover exactly the same outputs."""
    stride = num_outputs + 1
    begin, end = tile * stride + r0, tile * stride + r0 + length
    points = np.unique(np.concatenate((begin, end)))
    lo, hi = np.searchsorted(points, begin), np.searchsorted(points, end)
    n = hi - lo
    k = np.repeat(lo, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    a, b = points[k], points[k + 1]
    piece_pos = np.repeat(pos - begin, n) + a
    order = np.argsort(a, kind="stable")  # a encodes (tile, first output): the region key
    a, b, piece_pos = a[order], b[order], piece_pos[order]
    new = np.ones(a.size, dtype=bool)
    new[1:] = a[1:] != a[:-1]
    first = np.flatnonzero(new)
    count = np.diff(np.append(first, a.size))
    tiles, out0 = a[first] // stride, a[first] % stride
    width = b[first] - a[first]
    return Regions(tiles, out0, out0.copy(), width, np.ones(first.size, dtype=bool), count, piece_pos, b - a)


@dataclass
class Layout:
    """Reductions planned together, each a matrix ``[outputs, reduced]`` (``outputs`` and
    ``reduced`` per reduction), its outputs numbered one after another, read from a source of
    the matrices flattened one after another by rows, then those of the reductions in
    ``by_columns`` flattened by columns (the transposed matrices). For each element of the
    rows part, then of the columns part, its tile and whether it starts a new run of
    consecutive elements of one variable on one tile (``edge``): pieces never cross one."""

    outputs: np.ndarray
    reduced: np.ndarray
    by_columns: np.ndarray  # bool per reduction: its columns follow the rows in the source
    tiles: np.ndarray
    edge: np.ndarray

    @property
    def first_output(self) -> np.ndarray:
        return np.cumsum(self.outputs) - self.outputs


def _elements(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For parts of ``sizes`` elements one after another: the part of each element and its
    position in that part."""
    part = np.repeat(np.arange(sizes.size), sizes)
    return part, np.arange(part.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)


def _counts(marks: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """How many of ``marks`` are set in each ``[begin[k], end[k])``."""
    total = np.concatenate(([0], np.cumsum(marks)))
    return total[end] - total[begin]


def plan_stage1(layout: Layout) -> Regions:
    """Stage 1 of the reductions of ``layout`` on their inputs where they live: an output whose
    elements all live on one tile is finished there; any other gets one partial per tile holding
    some of its elements. Returns the regions (their pieces' positions in the source).

    Each reduction reads the orientation with fewer runs: rows when the reduced dimensions are
    innermost in memory, columns when the kept ones are (e.g. reducing dim 0 of a row-major
    matrix)."""
    outputs, reduced, first_output = layout.outputs, layout.reduced, layout.first_output
    sizes = outputs * reduced
    n_rows = int(sizes.sum())
    tiles, edge = layout.tiles[:n_rows], layout.edge[:n_rows]
    job, within = _elements(sizes)
    row = first_output[job] + within // reduced[job]
    row_starts = np.flatnonzero(within % reduced[job] == 0)
    brk = edge.copy()
    brk[row_starts] = True  # a piece never crosses rows
    single = np.minimum.reduceat(tiles, row_starts) == np.maximum.reduceat(tiles, row_starts)
    columns = np.zeros(outputs.size, dtype=bool)
    parts = []
    cols = np.flatnonzero(layout.by_columns)
    if cols.size:
        c_job, c_within = _elements(sizes[cols])
        line = c_within % outputs[cols][c_job]  # the output within its reduction
        out = first_output[cols][c_job] + line
        c_brk = layout.edge[n_rows:].copy()
        c_brk[line == 0] = True
        c_brk[1:] |= (single[out[1:]] != single[out[:-1]])  # finished and partial outputs apart
        begin = np.cumsum(sizes) - sizes
        c_begin = np.cumsum(sizes[cols]) - sizes[cols]
        fewer = _counts(c_brk, c_begin, c_begin + sizes[cols]) < _counts(brk, begin[cols],
                                                                         begin[cols] + sizes[cols])
        columns[cols] = fewer
        starts, lengths = _run_starts(c_brk)
        keep = fewer[c_job[starts]]
        starts, lengths = starts[keep], lengths[keep]
        if starts.size:
            parts.append(column_regions(layout.tiles[n_rows:][starts], out[starts], starts + n_rows, lengths,
                                        int(outputs.sum())))
    starts, lengths = _run_starts(brk)
    keep = ~columns[job[starts]]
    starts, lengths = starts[keep], lengths[keep]
    if starts.size or not parts:
        parts.append(_row_regions(starts, lengths, tiles[starts], row[starts]))
    regions = _joined(parts)
    regions.final = single[regions.out0]
    return regions


def _joined(parts: list[Regions]) -> Regions:
    """Regions of several plans, sorted by tile and first output (each plan is sorted so)."""
    if len(parts) == 1:
        return parts[0]
    fields = ("tile", "out0", "dst0", "width", "final", "count")
    joined = {f: np.concatenate([getattr(p, f) for p in parts]) for f in fields}
    order = np.lexsort((joined["out0"], joined["tile"]))
    first = np.concatenate([p.first_piece for p in parts]) + np.repeat(
        np.cumsum([0] + [p.pos.size for p in parts[:-1]]), [p.tile.size for p in parts])
    count = joined["count"][order]
    piece = expand_ranges(first[order], count)[1]
    pos = np.concatenate([p.pos for p in parts])[piece]
    length = np.concatenate([p.length for p in parts])[piece]
    return Regions(*(joined[f][order] for f in fields), pos, length)


def sources_per_output(stage1: Regions, num_outputs: int) -> np.ndarray:
    """The number of partials of each output (one per tile holding some of its elements)."""
    part = ~stage1.final
    covered = expand_ranges(stage1.out0[part], stage1.width[part])[1]
    return np.bincount(covered, minlength=num_outputs)


def assign_partials(regions: Regions) -> int:
    """Give the partial regions consecutive places in a partials buffer, tile by tile;
    returns its size."""
    partial = ~regions.final
    widths = regions.width[partial]
    regions.dst0[partial] = np.cumsum(widths) - widths
    return int(widths.sum())


def intermediate_group(stage1: Regions, stage2: Regions, num_tiles: int) -> int:
    """The number of consecutive source tiles whose partials an intermediate stage should reduce
    together (about the square root of the tiles holding partials), or 0 when stage 2 alone
    spreads its work well enough (its busiest tile reads at most 4x an even share of the
    partials) or outputs have few partials (under 64)."""
    part = ~stage1.final
    covered = expand_ranges(stage1.out0[part], stage1.width[part])[1]  # each partial region's outputs
    sources = np.bincount(covered).max(initial=0)
    read = np.bincount(np.repeat(stage2.tile, stage2.count), weights=stage2.length, minlength=num_tiles)
    total = float(read.sum())
    if sources < 64 or read.max(initial=0) <= 4 * total / num_tiles:
        return 0
    # blocks of about sqrt(T) of the T source tiles: each stage then reduces about sqrt(T) partials
    return int(np.ceil(np.sqrt(int(stage1.tile[part].max()) + 1)))


def plan_stage2(stage1: Regions, owner: np.ndarray, group: int = 0) -> Regions:
    """Stage 2: each output's partials (one per stage-1 tile) reduced on the output's tile; with
    ``group``, the intermediate stage instead: the partials of source tiles ``b * group`` to
    ``(b + 1) * group - 1`` reduced on one of those tiles, chosen by the output's tile so that a
    block's outputs spread over its tiles.

    Works on runs, not elements: each partial region is cut where the outputs' tile changes,
    and the pieces on one destination tile that continue each other are joined."""
    part = np.flatnonzero(~stage1.final)
    a = stage1.out0[part]
    b = a + stage1.width[part]
    edges = np.concatenate(([0], np.flatnonzero(owner[1:] != owner[:-1]) + 1, [owner.size]))
    first = np.searchsorted(edges, a, side="right") - 1  # the run of outputs on one tile holding a
    n = np.searchsorted(edges, b, side="left") - first  # runs the region touches
    g = np.repeat(np.arange(part.size), n)
    run = np.repeat(first, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    r = np.maximum(a[g], edges[run])
    length = np.minimum(b[g], edges[run + 1]) - r
    pos = stage1.dst0[part][g] + r - a[g]
    src, dest = stage1.tile[part][g], owner[r]
    if group:
        block = src // group * group
        size = np.minimum(group, int(src.max()) + 1 - block)  # the last block may be short
        dest = block + dest % size
    order = np.lexsort((pos, dest))
    r, pos, src, dest, length = r[order], pos[order], src[order], dest[order], length[order]
    brk = np.ones(r.size, dtype=bool)
    brk[1:] = ((dest[1:] != dest[:-1]) | (src[1:] != src[:-1])
               | (r[1:] != r[:-1] + length[:-1]) | (pos[1:] != pos[:-1] + length[:-1]))
    starts = np.flatnonzero(brk)
    lengths = np.add.reduceat(length, starts) if starts.size else length
    return column_regions(dest[starts], r[starts], pos[starts], lengths, owner.size)


def fill_regions(owner: np.ndarray) -> Regions:
    """Regions without pieces (the output of an empty reduction): runs of outputs per tile."""
    starts, lengths = _run_starts(np.concatenate(([True], owner[1:] != owner[:-1])))
    order = np.argsort(owner[starts], kind="stable")
    starts, lengths = starts[order], lengths[order]
    zero = np.zeros(starts.size, dtype=np.int64)
    return Regions(owner[starts], starts, starts.copy(), lengths, np.ones(starts.size, dtype=bool),
                   zero, zero[:0], zero[:0])


def split_for_workers(regions: Regions, workers: int, grain: int = 1) -> np.ndarray:
    """Cut wide regions holding more than a worker's share of their tile's work (and few
    pieces) into column chunks starting at multiples of ``grain`` columns (64 bits of partials,
    as PopLibs' strided vertices take them), in place, and return each region's worker
    (consecutive regions of a tile share out its work evenly)."""
    piece_region = np.repeat(np.arange(regions.tile.size), regions.count)
    read = np.bincount(piece_region, weights=regions.length, minlength=regions.tile.size)
    work = np.maximum(read, regions.width)
    tile_work = np.bincount(regions.tile, weights=work)
    share = np.maximum(tile_work[regions.tile] / workers, 1)
    grains = -(-regions.width // grain)
    # the nearest whole number of shares (not the next): a region just over two shares in two chunks
    chunks = np.minimum(np.maximum(np.rint(work / share), 1), np.minimum(grains, workers)).astype(np.int64)
    # Cutting a region multiplies its pieces (vertex state, exchange descriptors): regions
    # with many pieces, such as stage 2 gathering a partial from every tile, stay whole, unless
    # their tile would leave most workers idle (the last stage after an intermediate one)
    few = 2 * np.bincount(regions.tile)[regions.tile] <= workers
    chunks[(regions.width == 1) | ((regions.count > MAX_CHUNKED_PIECES) & ~few)] = 1
    if (chunks > 1).any():
        _chunk(regions, np.maximum(chunks, 1), grain)
        piece_region = np.repeat(np.arange(regions.tile.size), regions.count)
        read = np.bincount(piece_region, weights=regions.length, minlength=regions.tile.size)
        work = np.maximum(read, regions.width)
    total = np.bincount(regions.tile, weights=work)[regions.tile]
    before = np.cumsum(work) - work
    before -= (np.cumsum(work) - work)[np.searchsorted(regions.tile, regions.tile)]  # per tile
    worker = np.floor((before + work / 2) * workers / np.maximum(total, 1)).astype(np.int64)
    return np.clip(worker, 0, workers - 1)


def _chunk(regions: Regions, chunks: np.ndarray, grain: int) -> None:
    """Split region g into ``chunks[g]`` column ranges starting at multiples of ``grain`` (its
    pieces are ``width`` long)."""
    g = np.repeat(np.arange(chunks.size), chunks)
    c = np.arange(g.size) - np.repeat(np.cumsum(chunks) - chunks, chunks)
    grains = -(-regions.width[g] // grain)
    lo = np.minimum(grains * c // chunks[g] * grain, regions.width[g])
    hi = np.minimum(grains * (c + 1) // chunks[g] * grain, regions.width[g])
    count = regions.count[g]
    first = (np.cumsum(regions.count) - regions.count)[g]
    k = np.repeat(first, count) + np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    regions.pos = regions.pos[k] + np.repeat(lo, count)
    regions.length = np.repeat(hi - lo, count)
    regions.tile, regions.final, regions.count = regions.tile[g], regions.final[g], count
    regions.out0, regions.dst0 = regions.out0[g] + lo, regions.dst0[g] + lo
    regions.width = hi - lo
