"""The vertex state tables of one compute set, built when it is lowered.

Vertices are grouped by class; each group gets one numpy structured array of state records (the
layout the compiled kernel expects), filled column by column with vectorised address arithmetic,
and the kernel compiled for it. With them go the exchange plans filling the compute set's input
buffers before compute and emptying its output buffers after, and the cycles of the vertices with
estimates (:mod:`vertex_estimates`). Running ``Execute(cs)`` (:mod:`poplar_py.runtime.compute_sets`)
is then: the exchange-in copies, one native call per vertex class, the exchange-out copies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..codelet.codelet_compiler import BUFFER_ENTRY, VECTOR_LIST_ENTRY_DTYPE, KernelOptions
from ..codelet.lanes import LANES
from ..cycles.costs import RunRecord
from ..ir import GraphIR
from ..options import EngineOptions
from ..regions.arrays import exclusive_cumsum
from ..vertex import Direction, FieldKind
from ..vertex_types.backends import Compiled, Info, codelet_info, compile_codelet, written_state
from .computeset import ComputeSetPlan, state_vector_bytes
from .exchange import CopyPlan, SharedGather, TileTraffic, gather_into_buffers, traffic
from .layout import MemoryLayout
from .state_image import Image
from .vertex_estimates import cycle_estimates

_I64 = np.int64


@dataclass
class VertexGroup:
    """One vertex class of a compute set: its state table, kernel and estimated cycles."""

    cls: type
    info: Info
    compiled: Compiled | None  # None in interpreter mode
    positions: np.ndarray  # positions of its vertices in the compute set
    table: np.ndarray
    slots: np.ndarray  # per vertex: the worker (or MultiVertex) slot its measured cycles go to, or -1
    estimated: int  # cycles of the vertices with estimates, per run
    # per arena-address column: the vertices whose address there is in an exchange buffer
    in_buffers: dict[str, np.ndarray]
    kernel: KernelOptions | None = None  # how ``compiled`` was compiled (None: interpreter mode)
    written: tuple[str, ...] = ()  # state fields compute writes: their columns hold arena addresses
    at: int = 0  # the replica offset the table's addresses include (bytes)
    buffers_at: int = 0  # the offset of the exchange buffers they hold (bytes)

    def pointer_columns(self) -> list[str]:
        """The state table's columns holding arena addresses (vector and scalar edges, the state
        compute writes)."""
        return [column for column, shared in self._addresses() if not shared]

    def shared_columns(self) -> list[str]:
        """The state table's columns holding addresses in the shared vertex state (list tables,
        state vectors)."""
        return [column for column, shared in self._addresses() if shared]

    def _addresses(self) -> list[tuple[str, bool]]:
        out = []
        for name, spec in self.cls.fields.items():
            in_record = spec.direction is Direction.STATE and name not in self.written
            if spec.kind is FieldKind.SCALAR:
                if not in_record:
                    out.append((name, False))
            else:
                shared = spec.kind is FieldKind.VECTOR_LIST or in_record
                out.append((f"{name}.ptr", shared))
        return out

    def __getstate__(self) -> dict:
        """Pickled without what belongs to this process (kernel addresses, parsed codelet)."""
        state = dict(self.__dict__)
        state.update(info=None, compiled=None)
        return state

    def __setstate__(self, state: dict) -> None:
        """Unpickled: the codelet checked again and its kernel taken from the disk cache."""
        self.__dict__.update(state)
        self.info = codelet_info(self.cls)
        self.compiled = compile_codelet(self.cls, self.kernel) if self.kernel is not None else None

    def restricted(self, keep: np.ndarray, estimates: np.ndarray) -> VertexGroup:
        """The group of the vertices ``keep`` marks (``estimates``: every vertex's estimated
        cycles, or -1)."""
        mine = estimates[keep]
        table, slots = np.ascontiguousarray(self.table[keep]), np.ascontiguousarray(self.slots[keep])
        kept = np.flatnonzero(keep)
        in_buffers = {name: np.searchsorted(kept, rows[keep[rows]]) for name, rows in self.in_buffers.items()}
        return replace(self, positions=self.positions[keep], table=table, slots=slots,
                       estimated=int(mine[mine >= 0].sum()), in_buffers=in_buffers)

    def move_to(self, at: int, buffers_at: int) -> None:
        """Point the table at the replica whose memories start ``at`` bytes into the arena, and
        at the exchange buffers of the one starting ``buffers_at`` bytes in (its list entries,
        shared by every replica, are offset when the kernel reads them)."""
        if at != self.at or buffers_at != self.buffers_at:
            shift = np.uint64((buffers_at - self.buffers_at - at + self.at) % 2**64)
            self.rebase(at - self.at)
            for name, rows in self.in_buffers.items():
                self.table[name][rows] += shift
            self.at, self.buffers_at = at, buffers_at

    def rebase(self, delta: int, shared_delta: int = 0) -> None:
        """Move the table's arena addresses by ``delta`` bytes, and its addresses in the shared
        vertex state by ``shared_delta``."""
        for columns, by in ((self.pointer_columns(), delta), (self.shared_columns(), shared_delta)):
            if by:
                for name in columns:
                    self.table[name] += np.uint64(by % 2**64)

def _build_exchange(plan: ComputeSetPlan, seg_addr: np.ndarray, layout: MemoryLayout, tiles_per_ipu: int
                    ) -> tuple[CopyPlan | SharedGather | None, CopyPlan | None, TileTraffic]:
    """Copy plans filling input buffers before compute and emptying output buffers after."""
    seg, p = plan.segments, plan.staged
    total = TileTraffic.empty(layout.num_tiles)
    staged = seg.buffer >= 0
    if not staged.any():
        return None, None, total
    first_user = np.zeros(len(seg), dtype=bool)  # a shared buffer is filled once
    _, first = np.unique(seg.buffer[staged], return_index=True)
    first_user[np.flatnonzero(staged)[first]] = True
    plans = []
    for fill, mask in ((True, staged & first_user & seg.reads), (False, staged & seg.writes)):
        sel = np.flatnonzero(mask[p.segment])
        if not sel.size:
            plans.append(None)
            continue
        s = p.segment[sel]
        count, size, step, tile = p.count[sel], p.size[sel], p.step[sel], p.tile[sel]
        home = layout.address(tile, p.offset[sel])
        buffer = seg_addr[s] + p.position[sel] * size
        vertex_tile = plan.tiles[seg.vertex[s]]
        if fill:
            t = traffic(tile, vertex_tile, count, size, layout.num_tiles, p.gid[sel], p.gstep[sel],
                        tiles_per_ipu)
            plans.append(gather_into_buffers(home, buffer, count, step, size, seg.buffer[s], seg_addr[s], t))
        else:
            t = traffic(vertex_tile, tile, count, size, layout.num_tiles, tiles_per_ipu=tiles_per_ipu)
            plans.append(CopyPlan.build(buffer, home, count, size, step, size, t, disjoint=True))
        total = total + t
    return plans[0], plans[1], total


def _build_group(graph: GraphIR, plan: ComputeSetPlan, cls: type, positions: np.ndarray, seg_abs: np.ndarray,
                 state_abs: tuple[np.ndarray, np.ndarray], images: tuple[Image, Image],
                 kernel: KernelOptions | None, slots: np.ndarray, estimates: np.ndarray) -> VertexGroup:
    """The state table of one vertex class (and its kernel, compiled unless ``kernel`` is None:
    interpreter mode); list tables and state vectors go to the shared image (``images[0]``), the
    state compute writes to the tile-memory one (``images[1]``: each replica its own copy);
    ``state_abs`` says where each vertex's state starts in either."""
    seg, info = plan.segments, plan.codelets[cls]
    n = positions.size
    table = np.zeros(n, dtype=info.state_dtype)
    vids = plan.vertices[positions]
    # next free byte of each vertex's state in the shared state and in its tile
    cursor, in_tile = (where[positions].copy() for where in state_abs)
    shared, tiles = images
    written = written_state(cls)
    nfields = max(len(c.fields) for c in graph.vertices.classes) + 1
    keys = seg.vertex * nfields + seg.field  # non-decreasing: segments go vertex by vertex
    in_buffer = seg.buffer >= 0
    in_buffers = {}
    for fnum, (name, spec) in enumerate(cls.fields.items()):
        if spec.direction is Direction.STATE:
            values, lengths = graph.vertices.store.values(fnum, vids, spec.type.dtype)
            if name in written:  # in the arena, reserved like a state vector, as an edge
                tiles.add(in_tile, lengths, values, spec.type.dtype)
                table[name if spec.kind is FieldKind.SCALAR else name + ".ptr"] = in_tile
                in_tile += state_vector_bytes(lengths, spec.type.size)
            elif spec.kind is FieldKind.SCALAR:
                table[name] = values
                continue
            else:
                shared.add(cursor, lengths, values, spec.type.dtype)
                table[name + ".ptr"] = cursor
                cursor += state_vector_bytes(lengths, spec.type.size)
            if spec.kind is FieldKind.VECTOR:
                table[name + ".size"] = lengths
            continue
        lo = np.searchsorted(keys, positions * nfields + fnum, side="left")
        if spec.kind is FieldKind.SCALAR:
            table[name] = seg_abs[lo]
            in_buffers[name] = np.flatnonzero(in_buffer[lo])
        elif spec.kind is FieldKind.VECTOR:
            table[name + ".ptr"] = seg_abs[lo]
            table[name + ".size"] = seg.length[lo]
            in_buffers[name + ".ptr"] = np.flatnonzero(in_buffer[lo])
        else:
            counts = np.searchsorted(keys, positions * nfields + fnum, side="right") - lo
            rows = np.repeat(lo - exclusive_cumsum(counts), counts) + np.arange(int(counts.sum()))
            entries = np.zeros(rows.size, dtype=VECTOR_LIST_ENTRY_DTYPE)
            flag = np.where(in_buffer[rows], np.uint64(BUFFER_ENTRY), np.uint64(0))
            entries["ptr"] = seg_abs[rows].astype(np.uint64) | flag
            entries["size"] = seg.length[rows]
            shared.add(cursor, counts, entries, VECTOR_LIST_ENTRY_DTYPE)
            table[name + ".ptr"] = cursor
            table[name + ".size"] = counts
            cursor += counts * VECTOR_LIST_ENTRY_DTYPE.itemsize
    mine = estimates[positions]
    measured = np.ascontiguousarray(np.where(mine < 0, slots[positions], -1))  # the others are estimated
    estimate = int(mine[mine >= 0].sum())
    if kernel is not None and not kernel.fast_math and n >= LANES:
        kernel = replace(kernel, lanes=True)  # enough vertices to fill the lockstep lanes
    compiled = compile_codelet(cls, kernel) if kernel is not None else None
    in_buffers = {k: v for k, v in in_buffers.items() if v.size}
    return VertexGroup(cls, info, compiled, positions, table, measured, estimate, in_buffers, kernel, written)


@dataclass
class VertexShare:
    """The vertices one replica runs in this process: all of them, or (a replica split over MPI
    ranks) those on this rank's tiles; with the cycles per slot of those whose cycles are
    estimated, and per tile (compute, active) when every run costs the same."""

    groups: list[VertexGroup]
    estimated: np.ndarray
    fixed: tuple[np.ndarray, np.ndarray] | None


class ComputeSetTables:
    """One compute set as the runtime runs it on a replica's memories (:mod:`poplar_py.runtime.compute_sets`):
    its exchange plans, its vertex classes' state tables and kernels, the cycles of the vertices
    with estimates; and, from what the runs recorded, its cycles per tile."""

    def __init__(self, graph: GraphIR, plan: ComputeSetPlan, layout: MemoryLayout,
                 options: EngineOptions) -> None:
        assert layout.arena is not None
        self.name, self.vertices, self.tiles = plan.name, plan.vertices, plan.tiles
        self.graph_vertices = graph.vertices  # for messages
        self.interpret = options["codelets.mode"] == "interpreter"
        self.num_tiles = layout.num_tiles
        self.replicas, self.stride = layout.replicas, layout.arena_size
        target = graph.target
        self.workers = target.getNumWorkerContexts()
        seg = plan.segments
        seg_addr = np.where(seg.length > 0, layout.address(plan.tiles[seg.vertex], seg.offset), 0)
        self.exchange_in, self.exchange_out, self.traffic = _build_exchange(plan, seg_addr, layout,
                                                                            target.getTilesPerIPU())
        assert layout.shared is not None
        base, shared = layout.arena.ctypes.data, layout.shared.ctypes.data
        state_abs = shared + plan.host_offset, base + layout.address(plan.tiles, plan.state_offset)
        images = (Image(shared), Image(base))
        estimates, self.flops = cycle_estimates(graph, plan, target)  # flops: one run on one replica
        slots = self._slots(graph, plan)
        # each vertex's worker context (0 for a MultiVertex: worker w's is w): whose generator it draws from
        self.contexts = np.where(slots < self.num_tiles * self.workers, slots % self.workers, 0)
        estimated = np.bincount(slots[estimates >= 0], weights=estimates[estimates >= 0],
                                minlength=self.num_tiles * (self.workers + 1)).astype(_I64)
        kernel = None if self.interpret else KernelOptions(checked=options.flag("codelets.checkBounds"),
                                                           fast_math=options.flag("codelets.fastMath"))
        groups = [_build_group(graph, plan, cls, positions, seg_addr + base, state_abs, images, kernel, slots,
                               estimates)
                  for cls, positions in plan.groups.items()]
        self.estimates = estimates  # kept for share
        self.image = images[0].plan()  # written into the shared vertex state by Engine.load
        # the initial values of the state compute writes: written into every replica's tile
        # memory by Engine.load (offsets from the arena's start: no addresses to rebase)
        self.tile_state = images[1].plan()
        self.base, self.shared = base, shared  # the arena's and shared state's addresses they hold
        # with every vertex's cycles estimated (or none measured: the interpreter), each run costs
        # the same: account it once
        self.measures = not self.interpret and any((g.slots >= 0).any() for g in groups)
        self.whole = self._share(groups, estimated)
        self.split: dict[int, VertexShare] = {}  # replica -> this rank's share, for replicas split over ranks

    @property
    def groups(self) -> list[VertexGroup]:
        return self.whole.groups

    def _share(self, groups: list[VertexGroup], estimated: np.ndarray) -> VertexShare:
        return VertexShare(groups, estimated, None if self.measures else self.tile_cycles(estimated))

    def share(self, replica: int, own: np.ndarray) -> None:
        """Run only the vertices on the tiles ``own`` marks when running ``replica`` (a replica
        split over MPI ranks: this rank's tiles of it); only their cycles are counted."""
        split, slot = self.num_tiles * self.workers, np.arange(self.whole.estimated.size)
        slot_tile = np.where(slot < split, slot // self.workers, slot - split)
        estimated = np.where(own[slot_tile], self.whole.estimated, 0)
        groups = [g.restricted(own[self.tiles[g.positions]], self.estimates[g.positions])
                  for g in self.groups]
        self.split[replica] = self._share(groups, estimated)

    def rebase(self, base: int, shared: int) -> None:
        """Point the tables and the image at an arena at ``base`` and shared vertex state at
        ``shared`` (a deserialized executable's)."""
        delta, shared_delta, self.base, self.shared = base - self.base, shared - self.shared, base, shared
        for g in self.groups:
            g.rebase(delta, shared_delta)
        self.image.rebase(delta)

    def _slots(self, graph: GraphIR, plan: ComputeSetPlan) -> np.ndarray:
        """Where each vertex's cycles add up: plain vertices go round-robin to their tile's worker
        contexts in creation order (slot ``tile * workers + context``), a MultiVertex to its tile's
        slot after all of those (``tiles * workers + tile``)."""
        tiles = plan.tiles
        order = np.argsort(tiles, kind="stable")
        rank = np.empty(tiles.size, dtype=_I64)
        rank[order] = np.arange(tiles.size) - np.searchsorted(tiles[order], tiles[order])
        multi = np.asarray([cls.isMultiVertex for cls in graph.vertices.classes],
                           dtype=bool)[graph.vertices.cls[plan.vertices]]
        plain = tiles * self.workers + rank % self.workers
        return np.where(multi, self.num_tiles * self.workers + tiles, plain)

    def tile_cycles(self, total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per tile, from the slot totals: the barrel's cycles (workers x the busiest context) and
        the busy cycles, MultiVertex cycles added to both."""
        split = self.num_tiles * self.workers
        contexts = total[:split].reshape(self.num_tiles, self.workers).astype(np.float64)
        multi = total[split:]
        return contexts.max(axis=1) * self.workers + multi, contexts.sum(axis=1) + multi

    @property
    def syncs(self) -> int:
        """Barriers of one Execute: before the exchange in, before compute, before the exchange out."""
        return 1 + (self.exchange_in is not None) + (self.exchange_out is not None)

    def compute_cycles(self, record: RunRecord, step_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Average per-tile compute cycles (including / excluding idle worker slots) per run."""
        compute, active = np.zeros(self.num_tiles * self.replicas), np.zeros(self.num_tiles * self.replicas)
        runs = record.counts[step_id]
        if not runs:
            return compute, active
        sums, fixed = record.compute_sums.get(step_id), record.fixed_runs.get(step_id)
        if sums is not None:
            compute += sums[0]
            active += sums[1]
        if fixed is not None and self.whole.fixed is not None:
            each = np.repeat(fixed, self.num_tiles)
            compute += each * np.tile(self.whole.fixed[0], self.replicas)
            active += each * np.tile(self.whole.fixed[1], self.replicas)
        return compute / runs, active / runs
