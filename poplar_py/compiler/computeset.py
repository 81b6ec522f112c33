"""Pass: plan compute sets: vertex checks, data races, exchange buffers, memory.

Every field of every vertex becomes a *segment* (a scalar, a vector, or one row of a
list field): the elements the vertex sees as one contiguous run, given as runs of
variable elements. A segment whose elements already lie contiguously on the vertex's
tile is used in place; any other gets an exchange buffer on the vertex's tile, filled
before compute (inputs) and copied home after compute (outputs). Vertices on one tile
that read the same data share one buffer, so it crosses the exchange once. All of it
works on arrays over segments and runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .. import program as prog
from ..codelet.codelet_compiler import VECTOR_LIST_ENTRY_DTYPE
from ..errors import GraphConnectionError, InvalidTileMappingError
from ..ir import GraphIR
from ..options import EngineOptions
from ..regions.arrays import exclusive_cumsum, expand_ranges, first_alike, first_equal, unique_sorted
from ..regions.runs import Runs
from ..vertex import Direction, FieldKind, state_record_bytes
from ..vertex_types.backends import Info, codelet_info, written_state
from .layout import Located, MemoryLayout, align
from .mapping import busiest_tiles
from .passes import working_on
from .races import check_races
from .segments import FieldTables, SegmentRuns, Segments, build_segments

_I64 = np.int64


@dataclass
class ComputeSetPlan:
    """What the lowering needs to build the state tables and exchange plans of one compute set."""

    cs_id: int
    name: str
    vertices: np.ndarray  # vertex ids, in the compute set's order
    tiles: np.ndarray  # tile of each vertex
    segments: Segments
    staged: Staged  # the home pieces of the segments used through exchange buffers
    groups: dict[type, np.ndarray]  # vertex class -> positions in ``vertices``
    codelets: dict[type, Info]  # state records and code sizes (compiling needs no LLVM here)
    state_offset: np.ndarray  # per vertex: offset in its tile of its list tables and state vectors
    # per vertex: offset in the host's copy of the shared vertex state (``MemoryLayout.shared``) of
    # its list tables and the state vectors compute does not write, or -1
    host_offset: np.ndarray


@dataclass
class ComputeSetPlans:
    plans: dict[int, ComputeSetPlan]
    options: EngineOptions


def compute_sets_used(graph: GraphIR, programs: Iterable[prog.Program]) -> list[int]:
    mine = graph.tensors.token  # another graph's compute sets are refused when lowering
    return sorted({p.cs.id for p in prog.walk([*programs, *graph.functions])
                   if isinstance(p, prog.Execute) and p.cs.owner == mine})


def _where(graph: GraphIR, vid: int, name: str) -> str:
    cls = graph.vertices.classes[int(graph.vertices.cls[vid])]
    return f"{graph.vertices.describe(vid)} field '{name}' ({cls.fields[name].describe()})"


def _list_sizes(graph: GraphIR, vids: np.ndarray) -> dict[tuple[int, int], np.ndarray]:
    """Per (class, list field) of these vertices: each vertex's rows (in the order of ``vids``
    of that class), -1 where the list was never given a size."""
    cls_of = graph.vertices.cls[vids]
    out = {}
    for c in unique_sorted(cls_of).tolist():
        ids = vids[cls_of == c]
        for f, spec in enumerate(graph.vertices.classes[c].fields.values()):
            if spec.kind is FieldKind.VECTOR_LIST and spec.is_edge:
                out[c, f] = graph.vertices.store.sizes(f, ids)
    return out


def _check_fields(graph: GraphIR, vids: np.ndarray, seg: Segments,
                  list_sizes: dict[tuple[int, int], np.ndarray]) -> None:
    """Every edge field connected (every row of a list, ``list_sizes``), every state field initialised."""
    cls_of = graph.vertices.cls[vids]
    width = max(len(c.fields) for c in graph.vertices.classes)
    counts = np.bincount(seg.vertex * width + seg.field, minlength=vids.size * width)
    _, first = np.unique(cls_of, return_index=True)
    for c in cls_of[np.sort(first)].tolist():
        positions = np.flatnonzero(cls_of == c)
        ids = vids[positions]
        for f, (name, spec) in enumerate(graph.vertices.classes[c].fields.items()):
            if spec.direction is Direction.STATE:
                missing = np.flatnonzero(graph.vertices.store.value_bytes(f, ids) < 0)
                if missing.size:
                    raise GraphConnectionError(f"{_where(graph, int(ids[missing[0]]), name)} is not "
                                               "initialised: call graph.setInitialValue")
                continue
            have = counts[positions * width + f]
            if spec.kind is not FieldKind.VECTOR_LIST:
                if not have.all():
                    missing = int(ids[np.flatnonzero(have == 0)[0]])
                    raise GraphConnectionError(f"{_where(graph, missing, name)} is not connected")
                continue
            want = list_sizes[c, f]
            if (want < 0).any():
                missing = int(ids[np.flatnonzero(want < 0)[0]])
                raise GraphConnectionError(f"{_where(graph, missing, name)} is not connected")
            short = np.flatnonzero(have != want)
            if short.size:
                p = int(positions[short[0]])
                rows = set(seg.row[(seg.vertex == p) & (seg.field == f)].tolist())
                row = next(r for r in range(int(want[short[0]])) if r not in rows)
                raise GraphConnectionError(f"{_where(graph, int(ids[short[0]]), name)}: entry {row} "
                                           "is not connected")


def _vertex_tiles(graph: GraphIR, vids: np.ndarray, seg: Segments, sruns: SegmentRuns, layout: MemoryLayout,
                  strict: bool) -> np.ndarray:
    """The tile of each vertex: its own, else the tile holding most of its data (lowest on a tie)."""
    tiles = graph.vertices.tile[vids].copy()
    unmapped = np.flatnonzero(tiles < 0)
    if not unmapped.size:
        return tiles
    if strict:
        first = graph.vertices.describe(int(vids[unmapped[0]]))
        raise InvalidTileMappingError(f"{first} has no tile mapping (option tileMapping.strict is on)")
    rows = np.flatnonzero(tiles[seg.vertex[sruns.segment]] < 0)  # the runs of unmapped vertices
    located = layout.locate(sruns.runs.select(rows))
    piece_vertex = seg.vertex[sruns.segment[rows[located.run]]]
    tiles[unmapped] = 0
    owners, best = busiest_tiles(piece_vertex, located.tile, located.count)
    tiles[owners] = best
    return tiles


@dataclass(frozen=True)
class Placement:
    """Where the elements of a compute set's segments live. Segments with the same runs on the
    same tile are located once, through one representative (planning only)."""

    rep: np.ndarray  # per segment: its representative (an index into ``segments``)
    segments: np.ndarray  # the representative segments
    located: Located  # pieces of the representatives' elements, representative after representative
    runs: Runs  # the representatives' runs (what was located)
    piece_rep: np.ndarray  # per piece: its representative
    piece_first: np.ndarray  # per representative: its first piece
    piece_count: np.ndarray

    def position(self, seg: Segments) -> np.ndarray:
        """Per piece: the position of its first element in its segment."""
        return self.located.flat - exclusive_cumsum(seg.length[self.segments])[self.piece_rep]

    def gids(self, bases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per piece: the global id of its first element, and the gid step."""
        return self.located.gids(self.runs, bases)

    def pieces(self, segments: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pieces of these segments (through their representatives), segment after segment,
        and the position in ``segments`` each belongs to."""
        r = self.rep[segments]
        return expand_ranges(self.piece_first[r], self.piece_count[r])[::-1]


@dataclass(frozen=True)
class Staged:
    """The home pieces of the segments owning an exchange buffer: what the exchange moves between
    the data's home and the buffers (a piece lies on one tile, evenly spaced)."""

    segment: np.ndarray
    position: np.ndarray  # of the piece's first element in its segment
    count: np.ndarray
    tile: np.ndarray
    offset: np.ndarray  # inside the tile
    step: np.ndarray  # bytes
    size: np.ndarray  # bytes per element
    gid: np.ndarray  # global id of the first element
    gstep: np.ndarray


def _place(seg: Segments, sruns: SegmentRuns, vertex_tile: np.ndarray, layout: MemoryLayout) -> Placement:
    same = np.arange(len(seg))
    single = np.flatnonzero(sruns.count == 1)
    runs = sruns.runs
    if single.size:
        r = sruns.first[single]
        same[single] = single[first_equal([vertex_tile[single], runs.var[r], runs.offset[r], runs.count[r],
                                            runs.stride[r]])]
    multi = np.flatnonzero(sruns.count > 1)
    if multi.size:
        same[multi] = multi[_first_equal_runs(multi, sruns, vertex_tile)]
    unique = np.flatnonzero(same == np.arange(len(seg)))
    rep_runs = runs if unique.size == len(seg) else runs.select(sruns.rows(unique))
    located = layout.locate(rep_runs)
    run_rep = np.repeat(np.arange(unique.size), sruns.count[unique])
    piece_rep = run_rep[located.run]
    piece_count = np.bincount(piece_rep, minlength=unique.size).astype(_I64)
    return Placement(np.searchsorted(unique, same), unique, located, rep_runs, piece_rep,
                     exclusive_cumsum(piece_count), piece_count)


def _first_equal_runs(segments: np.ndarray, sruns: SegmentRuns, vertex_tile: np.ndarray) -> np.ndarray:
    """For each of these segments, the index (into ``segments``) of the first one on the same tile
    with the same runs: rows of its tile, then its runs' columns, compared by ``first_alike``."""
    rows, runs = sruns.rows(segments), sruns.runs
    count = sruns.count[segments]
    tokens = np.empty(4 * rows.size + segments.size, _I64)
    head = 4 * exclusive_cumsum(count) + np.arange(segments.size)  # where each segment's row starts
    tokens[head] = vertex_tile[segments]
    body = np.ones(tokens.size, dtype=bool)
    body[head] = False
    tokens[body] = np.stack((runs.var[rows], runs.offset[rows], runs.count[rows], runs.stride[rows]),
                            axis=1).reshape(-1)
    return first_alike(tokens, 4 * count + 1)


def _assign_buffers(seg: Segments, sruns: SegmentRuns, place: Placement, tiles: np.ndarray,
                    layout: MemoryLayout, bases: np.ndarray) -> Staged:
    """Give every segment that is remote or scattered an exchange buffer on the vertex's tile;
    where the others lie in place. Returns the home pieces of the staged segments."""
    located = place.located
    vertex_tile = tiles[seg.vertex]
    piece_tile = vertex_tile[place.segments[place.piece_rep]]
    first = np.concatenate(([True], place.piece_rep[1:] != place.piece_rep[:-1]))
    # In place: every piece on the vertex's tile, each element right after the one before.
    bad = (located.tile != piece_tile) | ((located.step != located.size) & (located.count > 1))
    prev_end = located.offset + (located.count - 1) * located.step + located.size
    bad[1:] |= ~first[1:] & ((located.offset[1:] != prev_end[:-1]) | (located.tile[1:] != located.tile[:-1]))
    staged_rep = np.zeros(place.segments.size, dtype=bool)
    staged_rep[place.piece_rep[bad]] = True
    here = place.piece_count[place.rep] > 0
    seg.offset[here] = located.offset[place.piece_first[place.rep[here]]]
    staged = np.flatnonzero(staged_rep[place.rep])
    fresh = staged  # the segments owning a buffer: the exchange fills or empties only those
    if staged.size:
        owner = _share(seg, sruns, place, staged, vertex_tile, bases)
        new = owner == np.arange(staged.size)
        fresh = staged[new]
        nbytes = seg.length[fresh] * seg.size[fresh]
        offsets = layout.reserve_scratch(vertex_tile[fresh], nbytes)  # placed after every compute set
        number = np.cumsum(new) - 1
        seg.buffer[staged] = number[owner]
        seg.offset[staged] = offsets[number[owner]]
    sel, owner = place.pieces(fresh)
    gid, gstep = place.gids(bases)
    return Staged(fresh[owner], place.position(seg)[sel], located.count[sel], located.tile[sel],
                  located.offset[sel], located.step[sel], located.size[sel], gid[sel], gstep[sel])


def _share(seg: Segments, sruns: SegmentRuns, place: Placement, staged: np.ndarray, vertex_tile: np.ndarray,
           bases: np.ndarray) -> np.ndarray:
    """For each staged segment, the first staged segment whose buffer it uses: readers on one
    tile of the same elements share; writers never do."""
    owner = np.arange(staged.size)
    readers = np.flatnonzero(~seg.writes[staged])
    if not readers.size:
        return owner
    kind = place.rep[staged[readers]]  # same tile and runs: same representative
    canon = _same_elements(unique_sorted(kind), place, sruns, vertex_tile, bases)
    _, first, inverse = np.unique(canon[kind], return_index=True, return_inverse=True)
    owner[readers] = readers[first[inverse.reshape(-1)]]
    return owner


def _same_elements(reps: np.ndarray, place: Placement, sruns: SegmentRuns, vertex_tile: np.ndarray,
                   bases: np.ndarray) -> np.ndarray:
    """Per representative, the first of ``reps`` on its tile holding the same elements (runs
    that differ may hold the same elements). A fingerprint of each one's elements (count, sums of
    gids and of their squares, wrapping) finds the candidates; their elements are compared, as
    different sets can share a fingerprint ({0, 3, 5, 6} and {1, 2, 4, 7} do)."""
    canon = np.arange(place.segments.size)
    multi = reps[sruns.count[place.segments[reps]] > 1]
    if multi.size < 2:
        return canon
    segments = place.segments[multi]
    rows = sruns.rows(segments)
    runs = sruns.runs.select(rows)
    u = np.uint64
    g, s, c = runs.gids(bases).astype(u), runs.stride.astype(u), runs.count.astype(u)
    tri = c * (c - u(1)) // u(2)  # sum of i for i < c
    squares = (c - u(1)) * c * (u(2) * c - u(1)) // u(6)  # sum of i * i
    first = exclusive_cumsum(sruns.count[segments])
    total = np.add.reduceat(c * g + s * tri, first)
    total2 = np.add.reduceat(c * g * g + u(2) * g * s * tri + s * s * squares, first)
    key = [vertex_tile[segments], np.add.reduceat(runs.count, first), total.view(_I64), total2.view(_I64)]
    same = first_equal(key)

    def elements(k: int) -> np.ndarray:
        return np.stack(sruns.runs.select(sruns.rows(segments[k:k + 1])).elements())

    # Within one fingerprint, the first member with each distinct element sequence.
    distinct: dict[int, list[tuple[int, np.ndarray]]] = {}
    for k in np.flatnonzero(same != np.arange(multi.size)).tolist():
        head = int(same[k])
        kinds = distinct.setdefault(head, [(head, elements(head))])
        mine = elements(k)
        match = next((j for j, e in kinds if np.array_equal(e, mine)), None)
        if match is None:
            kinds.append((k, mine))
        else:
            canon[multi[k]] = canon[multi[match]]
    return canon


def state_vector_bytes(n: int | np.ndarray, size: int) -> int | np.ndarray:
    """Bytes a state vector takes in tile memory (8-byte aligned)."""
    return -(-n * size // 8) * 8


def _reserve_vertex_state(graph: GraphIR, vids: np.ndarray, tiles: np.ndarray, layout: MemoryLayout,
                          list_sizes: dict[tuple[int, int], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Room on each vertex's tile for its list-field entry tables (``list_sizes`` rows, at the
    IPU's bytes a row), state vectors and the state scalars its compute writes (those first: they
    live there on the host too); and room in the host's shared vertex state for the list tables as
    the host kernels read them and the state vectors compute does not write."""
    on_tile = np.zeros(vids.size, dtype=_I64)
    on_host = np.zeros(vids.size, dtype=_I64)
    cls_of = graph.vertices.cls[vids]
    for c in unique_sorted(cls_of).tolist():
        cls = graph.vertices.classes[c]
        written = written_state(cls)
        positions = np.flatnonzero(cls_of == c)
        for f, spec in enumerate(cls.fields.values()):
            if spec.kind is FieldKind.VECTOR_LIST and spec.is_edge:
                rows = np.maximum(list_sizes[c, f], 0)
                on_tile[positions] += spec.row_bytes * rows
                on_host[positions] += VECTOR_LIST_ENTRY_DTYPE.itemsize * rows
            elif spec.is_edge or (spec.kind is FieldKind.SCALAR and spec.name not in written):
                continue
            else:  # (every state field has values: _check_fields)
                counts = graph.vertices.store.value_bytes(f, vids[positions]) // spec.type.size
                nbytes = state_vector_bytes(counts, spec.type.size)
                on_tile[positions] += nbytes
                if spec.name not in written:
                    on_host[positions] += nbytes
    return _reserve(tiles, on_tile, layout), layout.reserve_shared(on_host)


def _reserve(tiles: np.ndarray, need: np.ndarray, layout: MemoryLayout) -> np.ndarray:
    """``need[v]`` bytes of vertex state on ``tiles[v]``, a tile's vertices' back to back (each
    8-byte aligned): each vertex's offset in its tile, or -1 where it needs none."""
    need = align(need)
    offsets = np.full(tiles.size, -1, dtype=_I64)
    users = np.flatnonzero(need)
    if users.size:
        user_tiles = tiles[users]
        blocks_tiles = unique_sorted(user_tiles)
        totals = np.bincount(np.searchsorted(blocks_tiles, user_tiles), weights=need[users]).astype(_I64)
        blocks = layout.reserve_many(blocks_tiles, totals, "vertex state")
        order = np.argsort(user_tiles, kind="stable")
        before = exclusive_cumsum(need[users][order])
        group = np.searchsorted(blocks_tiles, user_tiles[order])
        within = before - before[np.searchsorted(group, np.arange(blocks_tiles.size))][group]
        offsets[users[order]] = blocks[group] + within
    return offsets


def plan_compute_sets(graph: GraphIR, programs: list[prog.Program], layout: MemoryLayout,
                      options: EngineOptions) -> ComputeSetPlans:
    """Check and plan every compute set the programs execute; reserve its tile memory."""
    strict = options.flag("tileMapping.strict")
    plans = {}
    num_tiles = graph.target.getNumTiles()
    code = np.zeros(num_tiles, dtype=_I64)
    state = np.zeros(num_tiles, dtype=_I64)
    code_seen = np.zeros((len(graph.vertices.classes), num_tiles), dtype=bool)
    tables = FieldTables.of(graph.vertices.classes)
    for cs_id in compute_sets_used(graph, programs):
        vids = graph.vertices.in_compute_set(cs_id)
        name = graph.compute_sets[cs_id]
        working_on(f"planning compute set '{name}'")
        seg, sruns = build_segments(graph, cs_id, vids, tables)
        list_sizes = _list_sizes(graph, vids)
        if vids.size:
            _check_fields(graph, vids, seg, list_sizes)
        tiles = _vertex_tiles(graph, vids, seg, sruns, layout, strict)
        check_races(name, graph, vids, seg, sruns)
        place = _place(seg, sruns, tiles[seg.vertex], layout)
        staged = _assign_buffers(seg, sruns, place, tiles, layout, graph.variables.bases)
        state_offset, host_offset = _reserve_vertex_state(graph, vids, tiles, layout, list_sizes)
        cls_of = graph.vertices.cls[vids]
        _, first = np.unique(cls_of, return_index=True)
        order = cls_of[np.sort(first)].tolist()
        groups = {graph.vertices.classes[c]: np.flatnonzero(cls_of == c) for c in order}
        infos = {cls: codelet_info(cls) for cls in groups}
        for c, (cls, members) in zip(order, groups.items()):
            member_tiles = tiles[members]
            state += np.bincount(member_tiles, minlength=num_tiles) * state_record_bytes(cls.fields.values())
            fresh = unique_sorted(member_tiles)
            fresh = fresh[~code_seen[c, fresh]]
            code_seen[c, fresh] = True
            code[fresh] += infos[cls].code_bytes
        plans[cs_id] = ComputeSetPlan(cs_id, name, vids, tiles, seg, staged, groups, infos, state_offset,
                                      host_offset)
    # A compute set's exchange buffers live only while it runs: every compute set's share one
    # scratch region per tile, as big as the largest set's.
    base = layout.place_scratch("exchange buffers")
    for plan in plans.values():
        staged = plan.segments.buffer >= 0
        plan.segments.offset[staged] += base[plan.tiles[plan.segments.vertex[staged]]]
    layout.account(state, "vertex state")
    layout.account(code, "vertex code")
    return ComputeSetPlans(plans, options)
