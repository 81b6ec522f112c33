"""Running one compute set on a replica's memories (an ``Execute`` step): the exchange in, one
native call (or the interpreter) per vertex class, the exchange out; its cycles accounted on that
replica's tiles. The tables it runs are the compiler's (:mod:`poplar_py.compiler.compute_set_tables`);
each vertex class's per-thread buffers (measured cycles, error records) are this process's own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..codelet import prints
from ..codelet.codelet_compiler import ERR_DTYPE, ERR_INTERRUPTED
from ..codelet.fp_rules import kernel_features
from ..compiler.compute_set_tables import ComputeSetTables, VertexGroup, VertexShare
from ..errors import VertexError
from ..vertex_types.backends import compile_codelet, error_message, is_cxx
from . import threads
from .fp_state import FpControl, vertex_env
from .machine import Machine

_I64 = np.int64


@dataclass
class KernelRun:
    """A vertex class's buffers for running its kernel in this process: one contiguous chunk of
    its state table per thread, each with its own row of measured cycles per slot (``sums``) and
    its own error record (``err``)."""

    chunks: list[tuple[int, ...]]  # first vertex, then run()'s (states, n, slots, sums, err)
    sums: np.ndarray
    err: np.ndarray

    @staticmethod
    def make(g: VertexGroup) -> KernelRun:
        """The buffers of ``g`` (any split of its table over threads gives the same result)."""
        err = np.zeros(threads.count(), dtype=ERR_DTYPE)
        sums = np.zeros((threads.count(), int(g.slots.max(initial=0)) + 1), dtype=_I64)
        return KernelRun(_chunks(g.table, g.slots, sums, err), sums, err)


def run_compute_set(cs: ComputeSetTables, m: Machine, step_id: int, replica: int) -> None:
    """Run the compute set on ``replica``'s memories (its vertices' list tables and state vectors
    in ``m.shared``), each vertex of a checked kernel held to ``m.cycle_budget`` cycles; a failing
    vertex raises its VertexError once the exchange out has run (under MPI, every rank takes part
    in it), and Ctrl-C stopping a kernel a KeyboardInterrupt naming where it stopped. A replica
    this process runs whole uses the first replica's exchange buffers: they live only while
    one compute set runs on one replica, so the host keeps one set of them, not one per
    replica (a replica split over MPI ranks keeps its own: its exchange is cut by rank).
    Vertex classes with a non-zero floating-point control word (``m.fp``) on some of their tiles
    run their floating-point kernels. What the codelets print goes to ``m.codelet_output`` once
    the kernels have run, failing or not, in vertex order (:func:`_printed`)."""
    arena, record, world, fp = m.arena, m.record, m.world, m.fp
    base = arena.ctypes.data
    words = None if fp is None or not fp.words[replica].any() else fp.words[replica]
    mine = cs.split.get(replica, cs.whole)
    at = replica * cs.stride
    buffers = 0 if mine is cs.whole else at
    if cs.exchange_in is not None:
        world.copy(cs.exchange_in, base, replica, dst=base + buffers)
    total = mine.estimated.copy() if mine.fixed is None else mine.estimated
    with prints.capture() as printed:
        error = _kernels(cs, m, mine, replica, words, total)
    if printed:
        m.codelet_output(_printed(cs, mine, printed))
    if cs.exchange_out is not None:
        world.copy(cs.exchange_out, base, replica, src=base + buffers)
    if error is not None:
        raise error
    if mine is cs.whole and mine.fixed is not None:  # the same every run: counted
        runs = record.fixed_runs.get(step_id)
        if runs is None:
            runs = record.fixed_runs[step_id] = np.zeros(cs.replicas, _I64)
        runs[replica] += 1
        return
    compute, active = cs.tile_cycles(total) if mine.fixed is None else mine.fixed
    sums = record.compute_sums.get(step_id)
    if sums is None:
        sums = record.compute_sums[step_id] = [np.zeros(cs.num_tiles * cs.replicas) for _ in range(2)]
    tiles = slice(replica * cs.num_tiles, (replica + 1) * cs.num_tiles)
    sums[0][tiles] += compute
    sums[1][tiles] += active


def _kernels(cs: ComputeSetTables, m: Machine, mine: VertexShare, replica: int, words: np.ndarray | None,
             total: np.ndarray) -> VertexError | None:
    """Run every vertex class's kernel on ``replica``'s memories, adding measured cycles to
    ``total``; the first failing vertex's error (raised once the exchange out has run)."""
    arena, record, budget, at = m.arena, m.record, m.cycle_budget, replica * cs.stride
    base = arena.ctypes.data
    buffers = 0 if mine is cs.whole else at
    for g in mine.groups:
        g.move_to(at, buffers)
        env = None if words is None else _fp_env(cs, g, words, m.fp, base + at)
        if cs.interpret:
            extra = {} if env is None else {"fp_env": env}
            err = g.info.run_interpreted(g.table, arena, None, m.shared, g.at, g.buffers_at, **extra)
        else:
            work = _work(m, g)
            try:
                err = _run_native(g, work, budget) if env is None else _run_native_fp(g, work, env, budget)
            except KeyboardInterrupt:  # raised by Python's handler once the kernel stopped
                raise _interrupted(cs, g, _interruption(work), replica) from None
        if err is not None:
            if err["code"] == ERR_INTERRUPTED:  # a Python handler of SIGINT that did not raise
                _interruption(_work(m, g))
                raise _interrupted(cs, g, err, replica)
            return _error(cs, g, err, int(g.positions[int(err["vertex"])]), replica)
        entry = record.vertex_cycles.setdefault(g.cls.vertexName, [0, 0])
        entry[0] += g.positions.size
        entry[1] += g.estimated
        if mine.fixed is None:
            measured = _work(m, g).sums.sum(axis=0)
            total[:measured.size] += measured
            entry[1] += int(measured.sum())
    return None


def _printed(cs: ComputeSetTables, mine: VertexShare, printed: list[tuple[int, int, int, str]]) -> str:
    """The text the vertices printed, ordered by tile, vertex id, worker and the order each
    printed it in: the same whatever the threads or the mode."""
    starts = np.array([g.table.ctypes.data for g in mine.groups], dtype=np.uint64)
    order = np.argsort(starts)
    keyed = []
    for state, worker, when, text in printed:
        g = mine.groups[int(order[np.searchsorted(starts[order], np.uint64(state), side="right") - 1])]
        pos = int(g.positions[(state - g.table.ctypes.data) // g.table.itemsize])
        keyed.append((int(cs.tiles[pos]), int(cs.vertices[pos]), worker, when, text))
    return "".join(k[-1] for k in sorted(keyed))


def _fp_env(cs: ComputeSetTables, g: VertexGroup, words: np.ndarray, fp: FpControl | None, base: int
            ) -> np.ndarray | None:
    """The floating-point kernel's records for ``g``'s vertices (a replica's memories at
    ``base``), or None when every word of their tiles is zero (or the codelet is C++)."""
    tiles = cs.tiles[g.positions]
    if is_cxx(g.cls) or not words[tiles].any():
        return None
    assert fp is not None
    return vertex_env(words, tiles, cs.contexts[g.positions], fp.rng, base)


def _error(cs: ComputeSetTables, g: VertexGroup, err: np.void, pos: int, replica: int) -> VertexError:
    return VertexError(error_message(g.cls, err, _where(cs, pos, replica)))


def _where(cs: ComputeSetTables, pos: int, replica: int) -> str:
    """The vertex at ``pos`` for messages: which it is, its tile, replica and compute set."""
    vid = int(cs.vertices[pos])
    of_replica = f" of replica {replica}" if cs.replicas > 1 else ""
    return (f"{cs.graph_vertices.describe(vid)} on tile {int(cs.tiles[pos])}{of_replica} in "
            f"compute set '{cs.name}'")


def _interrupted(cs: ComputeSetTables, g: VertexGroup, err: np.void | None, replica: int
                 ) -> KeyboardInterrupt:
    """Ctrl-C stopped the run in ``g``'s kernel: where (the vertex and line, when the kernel
    stopped in a loop of a vertex, else the compute set)."""
    if err is None:
        return KeyboardInterrupt(f"Engine.run stopped by Ctrl-C in compute set '{cs.name}', "
                                 f"running its {g.cls.vertexName} vertices")
    pos = int(g.positions[int(err["vertex"])])
    return KeyboardInterrupt(f"Engine.run: {error_message(g.cls, err, _where(cs, pos, replica))}")


def _work(m: Machine, g: VertexGroup) -> KernelRun:
    """The buffers of ``g``'s kernel in this machine, made when it first runs."""
    work = m.kernel_runs.get(id(g))
    if work is None:
        work = m.kernel_runs[id(g)] = KernelRun.make(g)
    return work


def _run_native(g: VertexGroup, work: KernelRun, budget: int) -> np.void | None:
    """Run every vertex of ``g``, chunks on parallel threads, each vertex held to ``budget`` cycles
    (checked kernels); the first failure in vertex order, or None."""
    assert g.compiled is not None
    work.sums.fill(0)
    failed = threads.run_all(g.compiled.run, [(*c[1:], g.at, g.buffers_at, budget) for c in work.chunks])
    for i, rc in enumerate(failed):
        if rc:
            return _record(work, i)
    return None


def _run_native_fp(g: VertexGroup, work: KernelRun, env: np.ndarray, budget: int) -> np.void | None:
    """Run every vertex of ``g`` with a floating-point kernel (for the bits their words have), under
    their control words and generators ``env`` (FP_ENV_DTYPE records), each held to ``budget``
    cycles as in ``_run_native``; in one call, in vertex order, as the generators they share are
    drawn from in that order. The first failure, or None."""
    assert g.kernel is not None
    features = kernel_features(env["ctl"])
    compiled = compile_codelet(g.cls, replace(g.kernel, fp=features, lanes=False))
    work.sums.fill(0)
    measured = bool((g.slots >= 0).any())
    slots, sums = (g.slots.ctypes.data, work.sums[0].ctypes.data) if measured else (0, 0)
    failed = compiled.run(g.table.ctypes.data, g.table.size, slots, sums, work.err.ctypes.data,
                          g.at, g.buffers_at, budget, env.ctypes.data)
    return work.err[0].copy() if failed else None


def _interruption(work: KernelRun) -> np.void | None:
    """Once Ctrl-C stopped a run of the kernel: the record of the first vertex that stopped
    (checked kernels stop in a loop), or None; the records are cleared for the next run."""
    stopped = np.flatnonzero(work.err["code"] == ERR_INTERRUPTED)
    record = _record(work, int(stopped[0])) if stopped.size else None
    work.err["code"] = 0
    return record


def _record(work: KernelRun, chunk: int) -> np.void:
    """A chunk's error record, its vertex counted in the group."""
    record = work.err[chunk].copy()
    record["vertex"] += work.chunks[chunk][0]
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
