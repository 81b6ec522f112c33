"""The graph compiler: a visible list of passes from the frozen graph IR to a CompiledGraph.

    complete tile mapping -> analyse liveness -> lay out variables -> plan compute sets
    -> release edges -> account control code -> check memory -> check Streaming Memory
    -> fix addresses -> lower programs

Each pass is a plain function reading the :class:`~poplar_py.ir.GraphIR` and what the
passes before it produced. A replicated graph is compiled once, for one replica
(:mod:`replicas`); the small dataclasses between them live in the pass modules. Each pass
names itself in its errors, can dump its result and have it checked (:mod:`passes`:
POPLAR_PY_DUMP_AFTER, POPLAR_PY_CHECK_PASSES, POPLAR_PY_DEBUG_PASSES); a slow build shows a
progress bar (:mod:`progress`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import program as prog
from ..errors import GraphMemoryAllocationError, ProgramArgumentError
from ..handles import DataStream, RemoteBuffer
from ..ir import GraphIR
from ..options import EngineOptions
from ..regions.runs import Runs
from ..target import Target
from . import pass_checks, pass_dumps
from .computeset import ComputeSetPlans, plan_compute_sets
from .exchange import CopyPlan
from .layout import MemoryLayout, layout_memory
from .liveness import Liveness, analyse_liveness
from .lower import LoweredPrograms, host_plan, lower_programs
from .mapping import TileMapping, complete_mapping
from .partition import ir_digest, launched_ranks
from .passes import CompilerPass, run_passes
from .replicas import Replication

_I64 = np.int64


@dataclass(frozen=True)
class HostTransfer:
    """How ``writeTensor``/``readTensor`` move one handle's tensor (host buffer <-> a replica's
    memories)."""

    write: bool
    plan: CopyPlan
    dtype: np.dtype
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=_I64))


@dataclass
class CompiledGraph:
    """Everything an Engine needs to load and run: memory layout, steps, host transfers."""

    target: Target
    streams: Mapping[str, DataStream]
    remote_buffers: Mapping[str, RemoteBuffer]
    options: EngineOptions
    mapping: TileMapping
    layout: MemoryLayout
    lowered: LoweredPrograms
    initial_values: list[tuple[np.ndarray, CopyPlan]]  # (values, plan writing them on a replica)
    index_constants: CopyPlan | None  # writes replica r's index into its replication index constants
    host_transfers: dict[str, HostTransfer]
    replication: Replication
    liveness: Liveness | None = None
    pass_times: dict[str, float] = field(default_factory=dict)
    edges_digest: str = ""  # under MPI: the frozen IR's edges, hashed before they went


@dataclass
class Compilation:
    """One graph being compiled: its frozen IR, programs, options and replication, and what the
    passes have made of them so far (each pass reads earlier products and adds its own)."""

    graph: GraphIR
    programs: list[prog.Program]
    options: EngineOptions
    replication: Replication
    mapping: TileMapping | None = None
    liveness: Liveness | None = None
    layout: MemoryLayout | None = None
    compute_sets: ComputeSetPlans | None = None
    lowered: LoweredPrograms | None = None
    edges_digest: str = ""


def _complete_mapping(c: Compilation) -> None:
    c.mapping = complete_mapping(c.graph, c.options.flag("tileMapping.strict"))


def _analyse_liveness(c: Compilation) -> None:
    c.liveness = analyse_liveness(c.graph, c.programs)


def _lay_out_variables(c: Compilation) -> None:
    assert c.mapping is not None
    c.layout = layout_memory(c.graph, c.mapping, c.liveness)


def _plan_compute_sets(c: Compilation) -> None:
    assert c.layout is not None
    c.compute_sets = plan_compute_sets(c.graph, c.programs, c.layout, c.options)


def _release_edges(c: Compilation) -> None:
    """The plans hold what the edges said: the rest of the build goes without them (under MPI,
    their digest stays, for the ranks to check they built alike)."""
    if launched_ranks() > 1:
        e = c.graph.edges
        c.edges_digest = ir_digest([e.vertex, e.field, e.var, e.offset, e.count])
    c.graph = c.graph.without_edges()


# Control code: a sync, a branch or a step descriptor per program on every tile (an
# estimate; Poplar does not publish its control-code sizes).
CONTROL_BYTES_PER_PROGRAM = 16


def _account_control_code(c: Compilation) -> None:
    assert c.layout is not None
    programs = len(prog.walk([*c.programs, *c.graph.functions]))
    tiles = c.graph.target.getNumTiles()
    c.layout.account(np.full(tiles, CONTROL_BYTES_PER_PROGRAM * programs, dtype=_I64), "control code")


def _check_memory(c: Compilation) -> None:
    assert c.layout is not None
    limit = c.graph.target.getBytesPerTile()
    total = c.layout.tile_total
    over = np.flatnonzero(total > limit)
    if over.size == 0 or c.options.flag("debug.allowOutOfMemory"):
        return
    worst = over[np.argsort(-total[over], kind="stable")][:5]
    lines = []
    for tile in worst.tolist():
        parts = ", ".join(f"{name} {int(b[tile]):,}" for name, b in c.layout.usage.items() if b[tile])
        lines.append(f"  tile {tile}: {int(total[tile]):,} bytes ({parts})")
    raise GraphMemoryAllocationError(
        f"Out of memory: {over.size} tile(s) need more than the {limit:,} bytes a tile has; worst:\n"
        + "\n".join(lines) + "\nSet the engine option debug.allowOutOfMemory=true to compile anyway "
        "and inspect the profile.")


def _check_streaming_memory(c: Compilation) -> None:
    """Each replica's remote buffers fit its IPUs' share of their IPU-Machines' Streaming Memory."""
    buffers = sorted(c.graph.remote_buffers.values(), key=lambda b: -b.nbytes)
    target = c.graph.target  # one replica's IPUs
    capacity = target.getStreamingMemoryBytesPerIPU() * target.getNumIPUs()
    need = sum(b.nbytes for b in buffers)
    if need <= capacity or c.options.flag("debug.allowOutOfMemory"):
        return
    largest = ", ".join(f"'{b.handle()}' {b.nbytes:,} ({b.getRepeats():,} x {b.numElements():,} "
                        f"{b.elementType()})" for b in buffers[:5])
    raise GraphMemoryAllocationError(
        f"Out of Streaming Memory: each replica's remote buffers need {need:,} bytes but its "
        f"{target.getNumIPUs()} IPU(s) have {capacity:,} ({target.getStreamingMemoryBytesPerIPU():,} each, "
        f"their share of an IPU-Machine's); largest: {largest}")


def _fix_addresses(c: Compilation) -> None:
    assert c.layout is not None
    c.layout.finalise(c.replication.factor)
    c.replication = dataclasses.replace(c.replication, stride=c.layout.arena_size)


def _lower_programs(c: Compilation) -> None:
    assert c.layout is not None and c.compute_sets is not None
    c.lowered = lower_programs(c.graph, c.programs, c.layout, c.compute_sets, c.replication)


def _dump_ir(c: Compilation) -> str:
    return pass_dumps.ir_text(c.graph, c.mapping)


def _dump_layout(c: Compilation) -> str:
    assert c.layout is not None
    return pass_dumps.layout_text(c.layout)


def _dump_liveness(c: Compilation) -> str:
    return "liveness: every variable always live\n" if c.liveness is None else \
        pass_dumps.liveness_text(c.graph, c.liveness)


def _dump_plans(c: Compilation) -> str:
    assert c.layout is not None and c.compute_sets is not None
    return pass_dumps.plans_text(c.layout, c.compute_sets)


def _dump_lowered(c: Compilation) -> str:
    assert c.lowered is not None
    return pass_dumps.lowered_text(c.lowered)


def _check_ir(c: Compilation) -> None:
    pass_checks.check_ir(c.graph)


def _check_mapping(c: Compilation) -> None:
    assert c.mapping is not None
    pass_checks.check_mapping(c.graph, c.mapping)


def _check_layout(c: Compilation) -> None:
    assert c.layout is not None
    pass_checks.check_layout(c.graph, c.layout, c.liveness)


def _check_plans(c: Compilation) -> None:
    assert c.layout is not None and c.compute_sets is not None
    _check_layout(c)
    pass_checks.check_plans(c.layout, c.compute_sets)


def _check_memory_fits(c: Compilation) -> None:
    assert c.layout is not None
    pass_checks.check_memory(c.layout, c.graph.target.getBytesPerTile(),
                             c.options.flag("debug.allowOutOfMemory"))


def _check_addresses(c: Compilation) -> None:
    assert c.layout is not None
    pass_checks.check_addresses(c.layout)


def _check_lowered(c: Compilation) -> None:
    assert c.lowered is not None and c.compute_sets is not None
    pass_checks.check_lowered(c.lowered, c.compute_sets)


#: (name, pass, its result as text, the invariants its result keeps)
PASSES: list[CompilerPass[Compilation]] = [CompilerPass(*p) for p in [
    ("complete tile mapping", _complete_mapping, _dump_ir, _check_mapping),
    ("analyse liveness", _analyse_liveness, _dump_liveness, None),
    ("lay out variables", _lay_out_variables, _dump_layout, _check_layout),
    ("plan compute sets", _plan_compute_sets, _dump_plans, _check_plans),
    ("release edges", _release_edges, _dump_ir, _check_ir),
    ("account control code", _account_control_code, _dump_layout, None),
    ("check memory", _check_memory, _dump_layout, _check_memory_fits),
    ("check Streaming Memory", _check_streaming_memory, _dump_layout, None),
    ("fix addresses", _fix_addresses, _dump_layout, _check_addresses),
    ("lower programs", _lower_programs, _dump_lowered, _check_lowered),
]]


def compile_graph(graph: GraphIR, programs: list[prog.Program], options: EngineOptions,
                  progress_callback: Callable[[int, int], object] | None = None
                  ) -> tuple[GraphIR, CompiledGraph]:
    """Run every pass in order (:mod:`passes`) and package the result, with the IR as the passes
    leave it (its edges go once the compute sets are planned: pass the only reference to
    ``graph``). ``progress_callback(done, total)`` is told the passes' progress (:mod:`progress`)."""
    for i, p in enumerate(programs):
        if not isinstance(p, prog.Program):
            raise ProgramArgumentError(f"Engine program {i} is not a program: {type(p).__name__}")
    replication = Replication(graph.replication_factor, graph.target.getNumTiles(),
                              graph.device_target or graph.target, graph.replica_index_constants)
    c = Compilation(graph, programs, options, replication)
    del graph  # the compilation's is the one the passes change
    times = run_passes(PASSES, c, _check_ir, progress_callback)
    graph, layout, replication = c.graph, c.layout, c.replication
    assert layout is not None and c.lowered is not None and c.mapping is not None
    transfers = {name: HostTransfer(h.write, host_plan(layout, h.runs, h.type.size, h.write)[0], h.type.dtype,
                                    h.shape) for name, h in graph.host_handles.items()}
    compiled = CompiledGraph(replication.device, graph.streams, graph.remote_buffers, options, c.mapping,
                             layout, c.lowered,
                             _initial_values(graph, layout), _index_constants(graph, layout), transfers,
                             replication, c.liveness, times, c.edges_digest)
    return graph, compiled


def _initial_values(graph: GraphIR, layout: MemoryLayout) -> list[tuple[np.ndarray, CopyPlan]]:
    """(values, plan writing them on a replica): one plan per element size for every constant and
    initial value (the replication index constants aside), the values as their raw bits."""
    by_type: dict[np.dtype, tuple[list[int], list[np.ndarray]]] = {}
    index = set(graph.replica_index_constants)
    for var, values in graph.initial:
        if values.size and var not in index:
            variables, arrays = by_type.setdefault(values.dtype, ([], []))
            variables.append(var)
            arrays.append(values.reshape(-1))
    by_size: dict[int, list[tuple[list[int], list[np.ndarray]]]] = {}
    for dtype, items in by_type.items():
        by_size.setdefault(dtype.itemsize, []).append(items)
    plans = []
    for size, groups in sorted(by_size.items()):
        bits = np.concatenate([np.concatenate(arrays).view(f"u{size}") for _, arrays in groups])
        var = np.concatenate([np.asarray(variables, _I64) for variables, _ in groups])
        count = np.concatenate([[a.size for a in arrays] for _, arrays in groups]).astype(_I64)
        runs = Runs.make(var, np.zeros_like(var), count, np.ones_like(var))
        plans.append((bits, host_plan(layout, runs, size, True)[0]))
    return plans


def _index_constants(graph: GraphIR, layout: MemoryLayout) -> CopyPlan | None:
    """The plan writing a host buffer of one UNSIGNED_INT per replication index constant (each the
    replica's index) into that replica's constants."""
    if not graph.replica_index_constants:
        return None
    runs = Runs.concat([Runs.single(var, 0, 1, 1) for var in graph.replica_index_constants])
    return host_plan(layout, runs, 4, True)[0]
