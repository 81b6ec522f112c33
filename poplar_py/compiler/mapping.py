"""Pass: complete the tile mapping of every variable element.

Elements the user mapped keep their tile. An unmapped element that a mapped vertex
uses goes to that vertex's tile (the vertex with the lowest id wins), so it needs no
exchange. What is left is spread linearly over the tiles (at least 128 bytes per tile,
starting where the previous automatic mapping stopped, so many small variables do
not all land on tile 0). With the option ``tileMapping.strict`` an unmapped element
is an error, as in Poplar. Everything works on intervals of elements.

The constant of a field connected to a value goes, last, to the tile its vertex runs on: the
vertex's own, else the tile holding most of its other data (where compute-set planning puts
it), else tile 0. Programs connect first and map after, so only now is that tile known.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidTileMappingError
from ..ir import GraphIR
from ..regions.arrays import expand_ranges, paint, unique_sorted
from ..regions.interval_map import IntervalMap

_I64 = np.int64


@dataclass(frozen=True)
class TileMapping:
    """The complete mapping: gid intervals (each variable starting one) and their tiles."""

    intervals: IntervalMap
    tiles: np.ndarray
    auto_mapped: tuple[str, ...]  # names of variables the compiler mapped


def complete_mapping(graph: GraphIR, strict: bool) -> TileMapping:
    imap, tiles = graph.mapping, graph.mapping_tiles
    variables = graph.variables
    var = variables.var_of(imap.starts)
    value = np.zeros(len(variables), bool)
    value[graph.value_constants[:, 0]] = True
    value_intervals = value[var] & (tiles < 0)
    tiles = np.where(value_intervals, 0, tiles)  # held aside: placed last
    unmapped = tiles < 0
    waiting = unique_sorted(var[unmapped])
    if strict and waiting.size:
        v = int(waiting[0])
        first = int(imap.starts[np.flatnonzero(unmapped & (var == v))[0]] - variables.bases[v])
        raise InvalidTileMappingError(
            f"variable '{variables.names[v]}' has no tile mapping for element {first} "
            f"({waiting.size} variable(s) incompletely mapped; option tileMapping.strict is on)")
    if waiting.size:
        lo, hi, tile = _next_to_users(graph, imap, tiles)
        lo, tile = _linear(graph, lo, hi, tile)
        imap, tiles = IntervalMap(lo, imap.end), tile
    if value_intervals.any():
        tiles = _next_to_vertices(graph, imap, tiles, unique_sorted(var[value_intervals]))
    return TileMapping(imap, tiles, tuple(variables.names[v] for v in waiting.tolist()))


def _next_to_vertices(graph: GraphIR, imap: IntervalMap, tiles: np.ndarray, held: np.ndarray) -> np.ndarray:
    """``tiles`` with the value constants ``held`` (sorted) on their vertices' tiles."""
    constant, vertex = graph.value_constants[:, 0], graph.value_constants[:, 1]
    keep = np.isin(constant, held)
    constant, vertex = constant[keep], vertex[keep]
    vertex_tile = np.zeros(vertex.size, _I64)  # no vertex (its addVertex failed): tile 0
    mine = vertex >= 0
    vertex_tile[mine] = graph.vertices.tile[vertex[mine]]
    unplaced = np.flatnonzero(vertex_tile < 0)
    if unplaced.size:
        vertex_tile[unplaced] = 0
        edges = graph.edges
        rows = np.flatnonzero(np.isin(edges.vertex, vertex[unplaced]) & (edges.count > 0)
                              & ~np.isin(edges.var, held))
        pieces = imap.split(edges.runs(rows), graph.variables.bases)
        owners, best = busiest_tiles(edges.vertex[rows[pieces.run]], tiles[pieces.interval], pieces.count)
        found = np.searchsorted(owners, vertex[unplaced])
        hit = found < owners.size
        hit[hit] &= owners[found[hit]] == vertex[unplaced][hit]
        vertex_tile[unplaced[hit]] = best[found[hit]]
    tile_of = np.full(len(graph.variables), -1, _I64)
    tile_of[constant] = vertex_tile
    var_tile = tile_of[graph.variables.var_of(imap.starts)]
    return np.where(var_tile >= 0, var_tile, tiles)


def busiest_tiles(owner: np.ndarray, tile: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each owner (sorted) of pieces of data, the tile holding most of its data (the lowest
    on a tie)."""
    if not owner.size:
        return owner, owner
    key = owner * (1 << 24) + tile
    keys, inverse = np.unique(key, return_inverse=True)
    totals = np.bincount(inverse, weights=weight)
    order = np.lexsort((keys % (1 << 24), -totals, keys >> 24))
    best = keys[order]
    first = np.concatenate(([True], (best[1:] >> 24) != (best[:-1] >> 24)))
    return best[first] >> 24, best[first] % (1 << 24)


def _next_to_users(graph: GraphIR, imap: IntervalMap, tiles: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unmapped elements used by mapped vertices go to the tile of the lowest such vertex."""
    edges, vertices = graph.edges, graph.vertices
    vertex_tile = vertices.tile[edges.vertex]
    rows = np.flatnonzero((vertex_tile >= 0) & (edges.count > 0))
    runs = edges.runs(rows)
    lo, hi, owner = runs.unit_intervals(graph.variables.bases)
    row = rows[owner]
    # Only accesses that touch an unmapped interval matter.
    unmapped = (tiles < 0).astype(_I64)
    before = np.concatenate(([0], np.cumsum(unmapped)))
    k0, k1 = imap.find(lo), imap.find(hi - 1)
    touch = before[k1 + 1] - before[k0] > 0
    lo, hi, row = lo[touch], hi[touch], row[touch]
    starts, ends = imap.starts, imap.ends
    if lo.size == 0:
        return starts, ends, tiles
    # Paint users from the highest vertex id down (the lowest wins), then the user's mapping on top.
    order = np.argsort(-edges.vertex[row], kind="stable")
    mapped = tiles >= 0
    all_lo = np.concatenate((lo[order], starts[mapped]))
    all_hi = np.concatenate((hi[order], ends[mapped]))
    all_tile = np.concatenate((vertex_tile[row][order], tiles[mapped]))
    p_lo, p_hi, p_tile = paint(all_lo, all_hi, all_tile)
    return _cut(p_lo, p_hi, p_tile, graph)


def _cut(lo: np.ndarray, hi: np.ndarray, tile: np.ndarray, graph: GraphIR
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint painted intervals as a complete cover of the gid line (gaps: tile -1), cut
    where each variable starts."""
    end = graph.variables.num_elements
    gap_lo, gap_hi = np.concatenate(([0], hi)), np.concatenate((lo, [end]))
    gaps = gap_hi > gap_lo
    bases = graph.variables.bases[graph.variables.sizes > 0]
    points = unique_sorted(np.concatenate((lo, gap_lo[gaps], bases)))
    all_lo = np.concatenate((lo, gap_lo[gaps]))
    all_tile = np.concatenate((tile, np.full(int(gaps.sum()), -1, _I64)))
    order = np.argsort(all_lo, kind="stable")
    k = np.searchsorted(all_lo[order], points, side="right") - 1
    return points, np.append(points[1:], end), all_tile[order][k]


def _linear(graph: GraphIR, lo: np.ndarray, hi: np.ndarray, tile: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Spread each variable's remaining unmapped elements over the tiles, in variable order."""
    free = np.flatnonzero(tile < 0)
    if free.size == 0:
        return lo, tile
    num_tiles = graph.target.getNumTiles()
    variables = graph.variables
    var = variables.var_of(lo[free])
    length = hi[free] - lo[free]
    first = np.concatenate(([True], var[1:] != var[:-1]))
    group = np.cumsum(first) - 1
    total = np.add.reduceat(length, np.flatnonzero(first))  # unmapped elements per variable
    size = variables.element_sizes()[var[first]]
    per_tile = np.maximum(-(-total // num_tiles), -(-128 // size))
    used = -(-total // per_tile)  # tiles each variable takes
    cursor = np.concatenate(([0], np.cumsum(used)[:-1])) % num_tiles
    k = np.concatenate(([0], np.cumsum(length)))[:-1]  # position among the variable's unmapped elements
    k -= k[first][group]
    per = per_tile[group]
    # Cut each free interval where the position crosses a multiple of per_tile.
    chunks = (k + length - 1) // per - k // per + 1
    owner, chunk = expand_ranges(k // per, chunks)
    a = np.maximum(chunk * per[owner], k[owner]) - k[owner] + lo[free][owner]
    pieces_tile = (cursor[group][owner] + chunk) % num_tiles
    keep = np.ones(lo.size, dtype=bool)
    keep[free] = False
    new_lo = np.concatenate((lo[keep], a))
    new_tile = np.concatenate((tile[keep], pieces_tile))
    order = np.argsort(new_lo, kind="stable")
    return new_lo[order], new_tile[order]
