"""Invariants of what the compiler passes hand each other (``POPLAR_PY_CHECK_PASSES=1``).

Each check reads one result with array operations and raises :class:`~.passes.InvariantError` saying
what is wrong and where: the frozen IR (ids and element ranges in bounds, compute sets'
vertex lists consistent), the complete tile mapping (every element on a tile), the memory
layout (intervals naturally aligned, inside their tile's used bytes, apart from each other
unless both are packed variables whose lives never meet), the compute-set plans (vertex
state and exchange buffers inside tile memory) and the fixed addresses.
"""

from __future__ import annotations

import numpy as np

from ..ir import GraphIR, VariablesIR
from ..regions.arrays import expand_ranges
from ..regions.interval_map import IntervalMap
from .computeset import ComputeSetPlans
from .layout import ALIGN, MemoryLayout
from .liveness import Liveness
from .lower import LoweredPrograms
from .mapping import TileMapping
from .passes import InvariantError

_I64 = np.int64
# Packed intervals overlapping others on their tile: up to this many pairs get their lives
# compared (beyond it, only neighbours are)
MAX_PAIRS = 1 << 20


def _require(ok: np.ndarray | bool, message: str, where: np.ndarray | None = None) -> None:
    """Raise ``message`` (with the first failing index of ``where``) unless ``ok`` holds everywhere."""
    ok = np.asarray(ok)
    if ok.all():
        return
    if ok.ndim and where is not None:
        message += f" (first at {int(where[np.flatnonzero(~ok)[0]])})"
    elif ok.ndim:
        message += f" (first at index {int(np.flatnonzero(~ok)[0])}, {int((~ok).sum())} in all)"
    raise InvariantError(message)


def check_ir(graph: GraphIR) -> None:
    """Vertices, edges and the user's mapping refer to what exists, within bounds."""
    tiles, v = graph.target.getNumTiles(), graph.variables
    vx, e = graph.vertices, graph.edges
    num_cs = len(graph.compute_sets)
    _require(np.diff(v.bases) == v.sizes[:-1], "variables' first ids do not follow their sizes")
    _require((vx.tile >= -1) & (vx.tile < tiles), f"vertex tile out of range [-1, {tiles})")
    _require((vx.compute_set >= 0) & (vx.compute_set < num_cs), "vertex in no compute set")
    _require(vx.cs_bounds.size == num_cs + 1 and vx.by_cs.size == len(vx),
             "compute sets' vertex lists do not cover the vertices")
    _require(np.sort(vx.by_cs) == np.arange(len(vx)), "compute sets' vertex lists are not a permutation")
    members = vx.compute_set[vx.by_cs]
    _require(np.searchsorted(members, np.arange(num_cs + 1)) == vx.cs_bounds,
             "compute sets' vertex bounds do not match their vertices")
    _require((e.vertex >= 0) & (e.vertex < len(vx)), "edge of a vertex that does not exist")
    _require((e.var >= 0) & (e.var < len(v)), "edge to a variable that does not exist")
    if len(e):
        _require(np.searchsorted(vx.compute_set[e.vertex], np.arange(num_cs + 1)) == e.cs_bounds,
                 "edges are not grouped by their vertices' compute sets")
        some = e.count > 0
        last = e.offset + (e.count - 1) * e.stride
        size = v.sizes[e.var]
        _require(~some | ((e.offset >= 0) & (e.offset < size) & (last >= 0) & (last < size)),
                 "edge elements outside their variable", np.arange(len(e)))
    _check_intervals(graph.mapping, v.num_elements, v, "the user's mapping")
    _require((graph.mapping_tiles >= -1) & (graph.mapping_tiles < tiles), "user's mapping: tile out of range")
    pairs = graph.value_constants
    _require((pairs[:, 0] >= 0) & (pairs[:, 0] < len(v)) & (pairs[:, 1] < len(vx)),
             "value constant of a variable or vertex that does not exist")


def _check_intervals(imap: IntervalMap, end: int, v: VariablesIR, what: str) -> None:
    starts = imap.starts
    _require(imap.end == end, f"{what} does not end at the last element ({imap.end} != {end})")
    if not starts.size:
        return
    _require(starts[0] == 0 and bool((np.diff(starts) > 0).all()), f"{what}: intervals not increasing from 0")
    bases = v.bases[v.sizes > 0]
    found = np.searchsorted(starts, bases)
    _require((found < starts.size) & (starts[np.minimum(found, starts.size - 1)] == bases),
             f"{what}: a variable does not start an interval")


def check_mapping(graph: GraphIR, mapping: TileMapping) -> None:
    """Every element of every variable on a tile of the target."""
    tiles = graph.target.getNumTiles()
    _check_intervals(mapping.intervals, graph.variables.num_elements, graph.variables, "the complete mapping")
    _require(mapping.tiles.size == len(mapping.intervals), "complete mapping: a tile per interval")
    _require((mapping.tiles >= 0) & (mapping.tiles < tiles),
             f"complete mapping: tile out of range [0, {tiles})", mapping.intervals.starts)


def check_layout(graph: GraphIR, layout: MemoryLayout, liveness: Liveness | None) -> None:
    """Every mapping interval naturally aligned inside its tile's used bytes, and apart from every
    other, unless both belong to packed variables whose lives never meet."""
    n = layout.num_tiles
    _require(layout.tile_used.size == n and bool((layout.tile_used >= 0).all()), "tile use per tile")
    for name, used in layout.usage.items():
        _require(used.size == n and bool((used >= 0).all()), f"memory use '{name}' per tile")
    starts = layout.intervals.starts
    if not starts.size:
        return
    nbytes = (layout.intervals.ends - starts) * layout.elem_size
    tile, offset = layout.tile, layout.offset
    _require((tile >= 0) & (tile < n), "layout: interval on no tile", starts)
    _require((offset >= 0) & (offset % layout.elem_size == 0), "layout: interval misaligned", starts)
    _require(offset + nbytes <= layout.tile_used[tile], "layout: interval past its tile's used bytes", starts)
    var = graph.variables.var_of(starts)
    nvars = 0 if liveness is None else liveness.always.size
    packed = np.zeros(starts.size, bool) if liveness is None else ~liveness.always[var % nvars]
    order = np.lexsort((offset, tile))
    fixed = order[~packed[order]]
    _require((tile[fixed][1:] != tile[fixed][:-1]) | (offset[fixed][1:] >= (offset + nbytes)[fixed][:-1]),
             "layout: always-live intervals overlap on a tile", starts[fixed[1:]])
    rest = order[packed[order]]
    if liveness is None or not rest.size:  # (no liveness: nothing packed)
        return
    top = np.zeros(n, _I64)  # where the always-live bytes end on each tile
    np.maximum.at(top, tile[fixed], (offset + nbytes)[fixed])
    _require(offset[rest] >= top[tile[rest]], "layout: packed interval overlaps an always-live one",
             starts[rest])
    # every packed interval against those starting after it on its tile, before it ends
    t, lo, hi = tile[rest], offset[rest], (offset + nbytes)[rest]
    key_lo, key_hi = t * (1 << 40) + lo, t * (1 << 40) + hi
    after = np.searchsorted(key_lo, key_hi, side="left") - np.arange(rest.size) - 1
    after = np.maximum(after, 0)
    if int(after.sum()) > MAX_PAIRS:
        after = np.minimum(after, 1)
    a, b = expand_ranges(np.arange(rest.size, dtype=_I64) + 1, after)
    va, vb = var[rest][a] % nvars, var[rest][b] % nvars
    other = va != vb
    meet = np.zeros(a.size, bool)
    meet[other] = liveness.meet(va[other], vb[other])
    _require(~meet, "layout: packed intervals of variables live at once share bytes", starts[rest][a])


def check_memory(layout: MemoryLayout, limit: int, allowed: bool) -> None:
    """Every tile within its memory (unless running out is allowed)."""
    if not allowed:
        _require(layout.tile_total <= limit, f"a tile needs more than its {limit:,} bytes",
                 np.arange(layout.num_tiles))


def check_plans(layout: MemoryLayout, plans: ComputeSetPlans) -> None:
    """Each compute set's vertices on tiles, their state and their fields' data (in place or in
    exchange buffers) inside tile memory (state 8-byte aligned)."""
    n = layout.num_tiles
    for plan in plans.plans.values():
        what = f"compute set '{plan.name}'"
        _require((plan.tiles >= 0) & (plan.tiles < n), f"{what}: vertex on no tile", plan.vertices)
        has = plan.state_offset >= 0
        t = plan.tiles[has]
        state = plan.state_offset[has]
        _require((state % ALIGN == 0) & (state < layout.tile_used[t]),
                 f"{what}: vertex state outside its tile", plan.vertices[has])
        has = plan.host_offset >= 0
        host = plan.host_offset[has]
        _require((host % ALIGN == 0) & (host < layout.shared_size),
                 f"{what}: vertex state outside the host's shared state", plan.vertices[has])
        seg = plan.segments
        some = seg.length > 0  # in place or in an exchange buffer: contiguous on the vertex's tile
        t = plan.tiles[seg.vertex[some]]
        end = seg.offset[some] + seg.length[some] * seg.size[some]
        _require((seg.offset[some] >= 0) & (end <= layout.tile_used[t]),
                 f"{what}: a field's data outside its vertex's tile", plan.vertices[seg.vertex[some]])


def check_addresses(layout: MemoryLayout) -> None:
    """Tile memories back to back in the arena, each as big as its tile uses, every replica's."""
    base = layout.tile_base
    _require(base is not None and base.size == layout.num_tiles + 1, "no tile bases")
    assert base is not None
    _require((base % ALIGN == 0) & (np.append(np.diff(base) >= layout.tile_used, True)),
             "tile memory smaller than its use, or misaligned", np.arange(base.size))
    _require(layout.arena is not None and layout.arena.size >= layout.replicas * layout.arena_size,
             "the arena does not hold every replica's tile memories")


def check_lowered(lowered: LoweredPrograms, plans: ComputeSetPlans) -> None:
    """Leaf steps numbered in order; every compute set run was planned."""
    ids = np.asarray([leaf.id for leaf in lowered.leaves], _I64)
    _require(ids == np.arange(ids.size), "leaf steps not numbered in order")
    planned = {plan.name for plan in plans.plans.values()}
    missing = [r.name for r in lowered.tables if r.name not in planned]
    _require(not missing, f"compute set{'s' if len(missing) > 1 else ''} run without a plan: {missing[:3]}")
