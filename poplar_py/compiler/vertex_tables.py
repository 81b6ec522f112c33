"""Lowering of one compute set: vertex state tables, exchange plans and the runner.

Vertices are grouped by class; each group gets one numpy structured array of state
records (the layout the compiled kernel expects), filled column by column with
vectorised address arithmetic. Running ``Execute(cs)`` is then: the exchange-in
copies, one native call per vertex class, the exchange-out copies.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..codelet import prints
from ..codelet.fp_rules import kernel_features
from ..codelet.lanes import LANES
from ..codelet.pipeline import (
    BUFFER_ENTRY,
    ERR_DTYPE,
    ERR_INTERRUPTED,
    VECTOR_LIST_ENTRY_DTYPE,
    KernelOptions,
)
from ..cycles.costs import RunRecord
from ..errors import MissingCycleEstimateError, VertexError
from ..introspector import VertexIntrospector
from ..ir import GraphIR, PerfEstimator
from ..kernels import Compiled, Info, codelet_info, compile_codelet, error_message, is_cxx, written_state
from ..options import EngineOptions
from ..perf_estimate import VertexPerfEstimate
from ..regions import exclusive_cumsum, expand_ranges, first_alike
from ..target import Target
from ..vertex import Direction, FieldKind
from . import threads
from .computeset import ComputeSetPlan, state_vector_bytes
from .exchange import CopyPlan, SharedGather, TileTraffic, gather_into_buffers, traffic
from .fp_state import FpControl, vertex_env
from .layout import MemoryLayout
from .state_image import Image
from .world import World

_I64 = np.int64


@dataclass
class _Group:
    """One vertex class of a compute set: its state table, kernel and cycle totals."""

    cls: type
    info: Info
    compiled: Compiled | None  # None in interpreter mode
    positions: np.ndarray  # positions of its vertices in the compute set
    table: np.ndarray
    slots: np.ndarray  # per vertex: the worker (or MultiVertex) slot its measured cycles go to, or -1
    sums: np.ndarray  # per chunk: cycles the kernel measured, per slot
    estimated: int  # cycles of the vertices with estimates, per run
    err: np.ndarray  # one error record per chunk
    chunks: list[tuple[int, ...]]  # first vertex, then run()'s (states, n, slots, sums, err)
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
        state.update(info=None, compiled=None, chunks=[])
        return state

    def __setstate__(self, state: dict) -> None:
        """Unpickled: the codelet checked again and its kernel taken from the disk cache."""
        self.__dict__.update(state)
        self.info = codelet_info(self.cls)
        self.compiled = compile_codelet(self.cls, self.kernel) if self.kernel is not None else None
        self.chunks = _chunks(self.table, self.slots, self.sums, self.err)

    def restricted(self, keep: np.ndarray, estimates: np.ndarray) -> _Group:
        """The group of the vertices ``keep`` marks (``estimates``: every vertex's estimated
        cycles, or -1)."""
        mine = estimates[keep]
        table, slots = np.ascontiguousarray(self.table[keep]), np.ascontiguousarray(self.slots[keep])
        kept = np.flatnonzero(keep)
        in_buffers = {name: np.searchsorted(kept, rows[keep[rows]]) for name, rows in self.in_buffers.items()}
        return replace(self, positions=self.positions[keep], table=table, slots=slots,
                       estimated=int(mine[mine >= 0].sum()), in_buffers=in_buffers,
                       chunks=_chunks(table, slots, self.sums, self.err))

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

    def run_native(self, budget: int) -> np.void | None:
        """Run every vertex, chunks on parallel threads, each vertex held to ``budget`` cycles
        (checked kernels); the first failure in vertex order, or None."""
        assert self.compiled is not None
        self.sums.fill(0)
        failed = threads.run_all(self.compiled.run,
                                 [(*c[1:], self.at, self.buffers_at, budget) for c in self.chunks])
        for i, rc in enumerate(failed):
            if rc:
                return self._record(i)
        return None

    def run_native_fp(self, env: np.ndarray, budget: int) -> np.void | None:
        """Run every vertex with a floating-point kernel (for the bits their words have), under
        their control words and generators ``env`` (FP_ENV_DTYPE records), each held to
        ``budget`` cycles as in ``run_native``; in one call, in vertex order, as the generators
        they share are drawn from in that order. The first failure, or None."""
        assert self.kernel is not None
        features = kernel_features(env["ctl"])
        compiled = compile_codelet(self.cls, replace(self.kernel, fp=features, lanes=False))
        self.sums.fill(0)
        measured = bool((self.slots >= 0).any())
        slots, sums = (self.slots.ctypes.data, self.sums[0].ctypes.data) if measured else (0, 0)
        failed = compiled.run(self.table.ctypes.data, self.table.size, slots, sums, self.err.ctypes.data,
                              self.at, self.buffers_at, budget, env.ctypes.data)
        return self.err[0].copy() if failed else None

    def interruption(self) -> np.void | None:
        """Once Ctrl-C stopped a run of the kernel: the record of the first vertex that stopped
        (checked kernels stop in a loop), or None; the records are cleared for the next run."""
        stopped = np.flatnonzero(self.err["code"] == ERR_INTERRUPTED)
        record = self._record(int(stopped[0])) if stopped.size else None
        self.err["code"] = 0
        return record

    def _record(self, chunk: int) -> np.void:
        """A chunk's error record, its vertex counted in the group."""
        record = self.err[chunk].copy()
        record["vertex"] += self.chunks[chunk][0]
        return record


def _chunks(table: np.ndarray, slots: np.ndarray, sums: np.ndarray, err: np.ndarray) -> list[tuple[int, ...]]:
    """One contiguous chunk of the state table per thread (each with its own row of ``sums``):
    (first vertex, then run()'s states, n, slots, sums and error-record addresses). Any split gives
    the same result."""
    measured = bool((slots >= 0).any())
    return [(a, table.ctypes.data + a * table.itemsize, b - a,
             slots.ctypes.data + a * slots.itemsize if measured else 0,
             sums[i].ctypes.data if measured else 0, err.ctypes.data + i * err.itemsize)
            for i, (a, b) in enumerate(threads.split(table.size, 4))]


def _cycle_estimates(graph: GraphIR, plan: ComputeSetPlan, target: Target
                     ) -> tuple[np.ndarray, dict[str, int]]:
    """Per vertex: setPerfEstimate (read by the IPU Model only), else a registered estimator, else
    -1 (use the kernel's count); and the FLOPs the estimators reported, by the type they name (""
    when they name none)."""
    out = graph.vertices.perf[plan.vertices].copy() if target.calibration.perf_estimates \
        else np.full(plan.vertices.size, -1, _I64)
    flops: dict[str, int] = {}
    estimators = graph.perf_estimators
    if not estimators:
        return out, flops
    for cls, positions in plan.groups.items():
        estimator = estimators.get(cls.vertexName)
        if estimator is None:
            continue
        todo = positions[out[positions] < 0]
        # An estimator sees fields' sizes and state values only: vertices alike in those (a
        # library operation's vertices come in a few shapes) are estimated once.
        alike = _first_alike(graph, plan, cls, todo)
        firsts = np.flatnonzero(alike == np.arange(todo.size))
        known = [_estimate(estimator, VertexIntrospector(graph, plan, int(todo[k])), target, cls.vertexName)
                 for k in firsts.tolist()]
        cycles = np.zeros(todo.size, _I64)
        cycles[firsts] = [c for c, _, _ in known]
        out[todo] = cycles[alike]
        members = np.bincount(alike, minlength=todo.size)[firsts].tolist()
        for (_, done, kind), n in zip(known, members):
            if done:
                flops[kind] = flops.get(kind, 0) + done * n
    return out, flops


def _estimate(estimator: PerfEstimator, vertex: VertexIntrospector, target: Target,
              name: str) -> tuple[int, int, str]:
    """(cycles, FLOPs, the FLOPs' type or "") an estimator gives for one vertex."""
    est = estimator(vertex, target)
    cycles = est[0] if isinstance(est, tuple) else getattr(est, "cycles", est)
    if cycles is None:
        raise MissingCycleEstimateError(f"the perf estimator of '{name}' returned nothing for "
                                        f"{vertex.describe()}")
    done = est[1] if isinstance(est, tuple) and len(est) > 1 else getattr(est, "flops", 0)
    kind = est.flopsKind if isinstance(est, VertexPerfEstimate) else ""
    return int(cycles), int(done or 0), kind


def _first_alike(graph: GraphIR, plan: ComputeSetPlan, cls: type, positions: np.ndarray) -> np.ndarray:
    """Per vertex at these positions: the first of them alike in what an estimator sees, the
    lengths of its fields' segments and its state values (an index into ``positions``)."""
    seg = plan.segments
    first = np.searchsorted(seg.vertex, positions)
    owner, at = expand_ranges(first, np.searchsorted(seg.vertex, positions + 1) - first)
    owners, tokens = [np.repeat(owner, 2)], [np.stack((seg.field[at], seg.length[at]), axis=1).reshape(-1)]
    vids = plan.vertices[positions]
    every = np.arange(positions.size, dtype=_I64)
    for f, spec in enumerate(cls.fields.values()):
        if spec.direction is Direction.STATE:  # flat values of the field's type: their bytes tell them
            data, nbytes = graph.vertices.store.raw(f, vids)
            owners += [every, np.repeat(every, np.maximum(nbytes, 0))]
            tokens += [nbytes, data.astype(_I64)]
    owner = np.concatenate(owners)
    order = np.argsort(owner, kind="stable")  # vertex by vertex, each part in order
    return first_alike(np.concatenate(tokens)[order], np.bincount(owner, minlength=positions.size))


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
                 state_abs: np.ndarray, images: tuple[Image, Image], kernel: KernelOptions | None,
                 slots: np.ndarray, estimates: np.ndarray) -> _Group:
    """The state table of one vertex class (and its kernel, compiled unless ``kernel`` is None:
    interpreter mode); list tables and state vectors go to the shared image (``images[0]``), the
    state compute writes to the tile-memory one (``images[1]``: each replica its own copy)."""
    seg, info = plan.segments, plan.codelets[cls]
    n = positions.size
    table = np.zeros(n, dtype=info.state_dtype)
    vids = plan.vertices[positions]
    cursor = state_abs[positions].copy()  # next free byte of each vertex's state block
    shared, tiles = images
    home = tiles.base - shared.base  # from a byte of the shared state to its place in the arena
    written = written_state(cls)
    nfields = max(len(c.fields) for c in graph.vertices.classes) + 1
    keys = seg.vertex * nfields + seg.field  # non-decreasing: segments go vertex by vertex
    in_buffer = seg.buffer >= 0
    in_buffers = {}
    for fnum, (name, spec) in enumerate(cls.fields.items()):
        if spec.direction is Direction.STATE:
            values, lengths = graph.vertices.store.values(fnum, vids, spec.type.dtype)
            if name in written:  # in the arena, reserved like a state vector, as an edge
                tiles.add(cursor + home, lengths, values, spec.type.dtype)
                table[name if spec.kind is FieldKind.SCALAR else name + ".ptr"] = cursor + home
            elif spec.kind is FieldKind.SCALAR:
                table[name] = values
                continue
            else:
                shared.add(cursor, lengths, values, spec.type.dtype)
                table[name + ".ptr"] = cursor
            if spec.kind is FieldKind.VECTOR:
                table[name + ".size"] = lengths
            cursor += state_vector_bytes(lengths, spec.type.size)
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
    err = np.zeros(threads.count(), dtype=ERR_DTYPE)
    sums = np.zeros((threads.count(), int(slots.max(initial=0)) + 1), dtype=_I64)
    if kernel is not None and not kernel.fast_math and n >= LANES:
        kernel = replace(kernel, lanes=True)  # enough vertices to fill the lockstep lanes
    compiled = compile_codelet(cls, kernel) if kernel is not None else None
    in_buffers = {k: v for k, v in in_buffers.items() if v.size}
    return _Group(cls, info, compiled, positions, table, measured, sums, estimate, err,
                  _chunks(table, measured, sums, err), in_buffers, kernel, written)


@dataclass
class _Share:
    """The vertices one replica runs in this process: all of them, or (a replica split over MPI
    ranks) those on this rank's tiles; with the cycles per slot of those whose cycles are
    estimated, and per tile (compute, active) when every run costs the same."""

    groups: list[_Group]
    estimated: np.ndarray
    fixed: tuple[np.ndarray, np.ndarray] | None


class ComputeSetRunner:
    """Runs one compute set on a replica's memories: exchange in, kernels, exchange out; accounts
    its cycles on that replica's tiles."""

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
        state_abs = shared + layout.address(plan.tiles, plan.state_offset)
        images = (Image(shared), Image(base))
        estimates, self.flops = _cycle_estimates(graph, plan, target)  # flops: one run on one replica
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
        self.split: dict[int, _Share] = {}  # replica -> this rank's share, for replicas split over ranks

    @property
    def groups(self) -> list[_Group]:
        return self.whole.groups

    def _share(self, groups: list[_Group], estimated: np.ndarray) -> _Share:
        return _Share(groups, estimated, None if self.measures else self._tile_cycles(estimated))

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

    def run(self, arena: np.ndarray, shared: np.ndarray, record: RunRecord, step_id: int, world: World,
            replica: int, budget: int, fp: FpControl | None = None,
            output: Callable[[str], None] | None = None) -> None:
        """Run the compute set on ``replica``'s memories (its vertices' list tables and state vectors
        in ``shared``), each vertex of a checked kernel held to ``budget`` cycles; a failing vertex
        raises its VertexError once the exchange out has run (under MPI, every rank takes part in
        it), and Ctrl-C stopping a kernel a KeyboardInterrupt naming where it stopped. A replica
        this process runs whole uses the first replica's exchange buffers: they live only while
        one compute set runs on one replica, so the host keeps one set of them, not one per
        replica (a replica split over MPI ranks keeps its own: its exchange is cut by rank).
        Vertex classes with a non-zero floating-point control word (``fp``) on some of their tiles
        run their floating-point kernels. What the codelets print goes to ``output`` (standard
        output by default) once the kernels have run, failing or not, in vertex order
        (:meth:`_printed`)."""
        base = arena.ctypes.data
        words = None if fp is None or not fp.words[replica].any() else fp.words[replica]
        mine = self.split.get(replica, self.whole)
        at = replica * self.stride
        buffers = 0 if mine is self.whole else at
        if self.exchange_in is not None:
            world.copy(self.exchange_in, base, replica, dst=base + buffers)
        total = mine.estimated.copy() if mine.fixed is None else mine.estimated
        with prints.capture() as printed:
            error = self._kernels(mine, arena, shared, record, replica, budget, words, fp, total)
        if printed:
            (output or sys.stdout.write)(self._printed(mine, printed))
        if self.exchange_out is not None:
            world.copy(self.exchange_out, base, replica, src=base + buffers)
        if error is not None:
            raise error
        if mine is self.whole and mine.fixed is not None:  # the same every run: counted
            runs = record.fixed_runs.get(step_id)
            if runs is None:
                runs = record.fixed_runs[step_id] = np.zeros(self.replicas, _I64)
            runs[replica] += 1
            return
        compute, active = self._tile_cycles(total) if mine.fixed is None else mine.fixed
        sums = record.compute_sums.get(step_id)
        if sums is None:
            sums = record.compute_sums[step_id] = [np.zeros(self.num_tiles * self.replicas) for _ in range(2)]
        tiles = slice(replica * self.num_tiles, (replica + 1) * self.num_tiles)
        sums[0][tiles] += compute
        sums[1][tiles] += active

    def _kernels(self, mine: _Share, arena: np.ndarray, shared: np.ndarray, record: RunRecord, replica: int,
                 budget: int, words: np.ndarray | None, fp: FpControl | None, total: np.ndarray
                 ) -> VertexError | None:
        """Run every vertex class's kernel on ``replica``'s memories, adding measured cycles to
        ``total``; the first failing vertex's error (raised once the exchange out has run)."""
        base, at = arena.ctypes.data, replica * self.stride
        buffers = 0 if mine is self.whole else at
        for g in mine.groups:
            g.move_to(at, buffers)
            env = None if words is None else self._fp_env(g, words, fp, base + at)
            if self.interpret:
                extra = {} if env is None else {"fp_env": env}
                err = g.info.run_interpreted(g.table, arena, None, shared, g.at, g.buffers_at, **extra)
            else:
                try:
                    err = g.run_native(budget) if env is None else g.run_native_fp(env, budget)
                except KeyboardInterrupt:  # raised by Python's handler once the kernel stopped
                    raise self._interrupted(g, g.interruption(), replica) from None
            if err is not None:
                if err["code"] == ERR_INTERRUPTED:  # a Python handler of SIGINT that did not raise
                    g.interruption()
                    raise self._interrupted(g, err, replica)
                return self._error(g, err, int(g.positions[int(err["vertex"])]), replica)
            entry = record.vertex_cycles.setdefault(g.cls.vertexName, [0, 0])
            entry[0] += g.positions.size
            entry[1] += g.estimated
            if mine.fixed is None:
                measured = g.sums.sum(axis=0)
                total[:measured.size] += measured
                entry[1] += int(measured.sum())
        return None

    def _printed(self, mine: _Share, printed: list[tuple[int, int, int, str]]) -> str:
        """The text the vertices printed, ordered by tile, vertex id, worker and the order each
        printed it in: the same whatever the threads or the mode."""
        starts = np.array([g.table.ctypes.data for g in mine.groups], dtype=np.uint64)
        order = np.argsort(starts)
        keyed = []
        for state, worker, when, text in printed:
            g = mine.groups[int(order[np.searchsorted(starts[order], np.uint64(state), side="right") - 1])]
            pos = int(g.positions[(state - g.table.ctypes.data) // g.table.itemsize])
            keyed.append((int(self.tiles[pos]), int(self.vertices[pos]), worker, when, text))
        return "".join(k[-1] for k in sorted(keyed))

    def _fp_env(self, g: _Group, words: np.ndarray, fp: FpControl | None, base: int) -> np.ndarray | None:
        """The floating-point kernel's records for ``g``'s vertices (a replica's memories at
        ``base``), or None when every word of their tiles is zero (or the codelet is C++)."""
        tiles = self.tiles[g.positions]
        if is_cxx(g.cls) or not words[tiles].any():
            return None
        assert fp is not None
        return vertex_env(words, tiles, self.contexts[g.positions], fp.rng, base)

    def _error(self, g: _Group, err: np.void, pos: int, replica: int) -> VertexError:
        return VertexError(error_message(g.cls, err, self._where(pos, replica)))

    def _where(self, pos: int, replica: int) -> str:
        """The vertex at ``pos`` for messages: which it is, its tile, replica and compute set."""
        vid = int(self.vertices[pos])
        of_replica = f" of replica {replica}" if self.replicas > 1 else ""
        return (f"{self.graph_vertices.describe(vid)} on tile {int(self.tiles[pos])}{of_replica} in "
                f"compute set '{self.name}'")

    def _interrupted(self, g: _Group, err: np.void | None, replica: int) -> KeyboardInterrupt:
        """Ctrl-C stopped the run in ``g``'s kernel: where (the vertex and line, when the kernel
        stopped in a loop of a vertex, else the compute set)."""
        if err is None:
            return KeyboardInterrupt(f"Engine.run stopped by Ctrl-C in compute set '{self.name}', "
                                     f"running its {g.cls.vertexName} vertices")
        pos = int(g.positions[int(err["vertex"])])
        return KeyboardInterrupt(f"Engine.run: {error_message(g.cls, err, self._where(pos, replica))}")

    def _tile_cycles(self, total: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
