"""Pass: lower control programs into executable steps.

Every leaf program becomes a step (:mod:`~poplar_py.compiler.steps`) with a precomputed
plan (which bytes move where, which kernel runs on which state table) that knows what it
costs; control programs (Sequence, Repeat, loops, If, Switch, Call) become small step trees.
One table, :data:`STEPS`, says which step each kind of program becomes: lowering dispatches
on it, and the runtime runs each kind of step (:mod:`poplar_py.runtime.step_runners`).

A replicated graph is lowered once, for one replica: a leaf step's plan runs on every replica's
memories in turn, and a ``CrossReplicaCopy``'s from each replica's memories to its partner's
(:mod:`replicas`). Control flow reads its predicates on replica 0, since every replica runs
the same program (Poplar requires them to agree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import program as prog
from ..csr_functions import FloatingPointControl
from ..errors import GraphReplicationError, ProgramError, RemoteBufferError
from ..handles import DataStream, RemoteBuffer
from ..ir import GraphIR
from ..regions.arrays import unique_sorted
from ..regions.runs import Runs
from ..tensor import Tensor
from .compute_set_tables import ComputeSetTables
from .computeset import ComputeSetPlans
from .exchange import CopyPlan, TileTraffic, align_pieces, traffic
from .fp_control import lower_fp_control
from .layout import MemoryLayout
from .passes import working_on
from .replicas import Replication
from .steps import (
    AbortStep,
    CallStep,
    CopyStep,
    CycleStampStep,
    ExecuteStep,
    HostFunctionStep,
    IfStep,
    PrintStep,
    RemoteCopyStep,
    RepeatStep,
    ScalarRef,
    SequenceStep,
    Step,
    StreamCopyStep,
    SwitchStep,
    SyncStep,
    WhileStep,
)

_I64 = np.int64


@dataclass
class LoweredPrograms:
    """Entry programs and functions as step trees; ``leaves`` lists every leaf step by id."""

    programs: list[Step]
    functions: list[Step]
    leaves: list[Step]
    tables: list[ComputeSetTables]  # one per compute set executed


def host_plan(layout: MemoryLayout, runs: Runs, size: int, to_device: bool) -> tuple[CopyPlan, TileTraffic]:
    """The plan moving elements between a contiguous host buffer (in flattened order) and their
    tiles, and the bytes each tile receives from (or sends to) the host."""
    located = layout.locate(runs)
    address = layout.address(located.tile, located.offset)
    per_tile = np.bincount(located.tile, weights=located.count * size,
                           minlength=layout.num_tiles).astype(_I64)
    zero = np.zeros(layout.num_tiles, dtype=_I64)
    sizes = np.full(len(located), size, _I64)
    host = located.flat * size
    moved = TileTraffic(zero, per_tile, zero) if to_device else TileTraffic(per_tile, zero, zero)
    if to_device:  # a tensor written from the host may repeat elements: the last value wins
        return CopyPlan.build(host, address, located.count, sizes, located.step, sizes, moved), moved
    plan = CopyPlan.build(address, host, located.count, located.step, sizes, sizes, moved, disjoint=True)
    return plan, moved


class Lowerer:
    """Turns programs into steps, with the layout and compute-set plans of one graph."""

    def __init__(self, graph: GraphIR, layout: MemoryLayout, compute_sets: ComputeSetPlans,
                 replication: Replication) -> None:
        self.graph = graph
        self.replication = replication
        self.layout = layout
        self.compute_sets = compute_sets
        self.tables: dict[int, ComputeSetTables] = {}
        self.num_tiles = graph.target.getNumTiles()
        self.tiles_per_ipu = graph.target.getTilesPerIPU()
        self.leaves: list[Step] = []
        # by program object: one placed in many parents is one step tree, its leaves one profile
        # row each, counting every run (as Poplar's profile counts a program's runs by its id)
        self.lowered: dict[int, Step] = {}

    def leaf(self, step: Step, traffic_: TileTraffic | None = None) -> Step:
        step.id = len(self.leaves)
        step.traffic = traffic_ if traffic_ is not None else TileTraffic.empty(self.num_tiles)
        self.leaves.append(step)
        return step

    def lower(self, p: prog.Program) -> Step:
        step = self.lowered.get(id(p))
        if step is not None:
            return step
        for cls in type(p).__mro__:
            make = STEPS.get(cls)
            if make is not None:
                outer = working_on(f"lowering {_describe(p)}")
                step = self.lowered[id(p)] = make(self, p)
                working_on(outer)  # not on failure: the error names the innermost program
                return step
        raise ProgramError(f"cannot lower program of type {type(p).__name__}")

    def runs(self, t: Tensor, what: str) -> Runs:
        """``t``'s elements (of one replica)."""
        if t.variables is not self.graph.tensors:
            raise ProgramError(f"{what}: tensor '{t.name}' belongs to another graph")
        return t.runs()

    def host_plan(self, t: Tensor, what: str, to_device: bool) -> tuple[CopyPlan, TileTraffic]:
        """A replica's plan between a host buffer and ``t``."""
        return host_plan(self.layout, self.runs(t, what), t.elementType().size, to_device)

    def scalar(self, t: Tensor, what: str) -> ScalarRef:
        """Replica 0's copy of a one-element tensor (control flow reads it)."""
        located = self.layout.locate(self.runs(t, what))
        address = self.layout.address(located.tile, located.offset)
        ipu = int(located.tile[0]) // self.tiles_per_ipu
        return ScalarRef(int(address[0]), t.elementType().dtype, t.name, ipu)

    def compute_set(self, cs_id: int) -> ComputeSetTables:
        """The tables of a compute set, built once however often it is executed."""
        tables = self.tables.get(cs_id)
        if tables is None:
            plans = self.compute_sets
            tables = ComputeSetTables(self.graph, plans.plans[cs_id], self.layout, plans.options)
            self.tables[cs_id] = tables
        return tables


def _describe(p: prog.Program) -> str:
    """``Copy 'name'``, or the kind of program alone when it has no name."""
    name = getattr(p, "name", "")  # PrintTensor and a few others have none
    return f"{type(p).__name__} '{name}'" if name else type(p).__name__


def _sequence(lw: Lowerer, p: prog.Sequence) -> Step:
    return SequenceStep(p.name or "Sequence", [lw.lower(c) for c in p.programs])


def _execute(lw: Lowerer, p: prog.Execute) -> Step:
    if p.cs.owner != lw.graph.tensors.token:
        raise ProgramError(f"Execute: compute set '{p.cs.name}' belongs to another graph")
    tables = lw.compute_set(p.cs.id)
    return lw.leaf(ExecuteStep(prog.step_label(p), tables), tables.traffic)


def _copy(lw: Lowerer, p: prog.Copy) -> Step:
    if isinstance(p.src, RemoteBuffer) or isinstance(p.dst, RemoteBuffer):
        return _remote_copy(lw, p)
    if isinstance(p.src, Tensor) and isinstance(p.dst, Tensor):
        src, dst = lw.runs(p.src, "Copy source"), lw.runs(p.dst, "Copy destination")
        plan = _tensor_copy(lw, p.src, p.dst, src, dst)
        return lw.leaf(CopyStep(prog.step_label(p), plan), plan.traffic)
    to_device = isinstance(p.dst, Tensor)
    stream, t = (p.src, p.dst) if to_device else (p.dst, p.src)
    assert isinstance(stream, DataStream) and isinstance(t, Tensor)
    plan, host = lw.host_plan(t, "Copy", to_device)  # each replica's transfer between the host and its tiles
    return lw.leaf(StreamCopyStep(prog.step_label(p), stream.handle(), to_device, plan, stream.isBroadcast(),
                                  t.elementType().dtype, t.numElements()), host)


def _remote_copy(lw: Lowerer, p: prog.Copy) -> Step:
    """Rows between a remote buffer and a tensor: one host plan per row of the tensor (a row of
    the buffer is a contiguous host array), and the plan reading the offsets."""
    reading = isinstance(p.src, RemoteBuffer)
    buffer, t = (p.src, p.dst) if reading else (p.dst, p.src)
    assert isinstance(buffer, RemoteBuffer) and isinstance(t, Tensor)
    if lw.graph.remote_buffers.get(buffer.handle()) != buffer:
        raise RemoteBufferError(f"Copy: remote buffer '{buffer.handle()}' was not added to this graph")
    rows = [t] if p.offset is None or p.offset.numElements() == 1 else [t[i] for i in range(t.dim(0))]
    plans, moved = [], TileTraffic.empty(lw.num_tiles)
    for row in rows:
        plan, traffic_ = lw.host_plan(row, "Copy", to_device=reading)
        plans.append(plan)
        moved = moved + traffic_
    offsets = None if p.offset is None else lw.host_plan(p.offset, "Copy offset", to_device=False)[0]
    step = RemoteCopyStep(prog.step_label(p), buffer.handle(), reading, plans, offsets, buffer.getRepeats())
    return lw.leaf(step, moved)


def _tensor_copy(lw: Lowerer, src: Tensor, dst: Tensor, src_runs: Runs, dst_runs: Runs,
                 replica_map: dict[int, int] | None = None) -> CopyPlan:
    """The plan copying the elements ``src_runs`` to ``dst_runs`` (in flattened order) on one
    replica, or, given ``replica_map``, the one that copies them from each replica ``r`` to replica
    ``replica_map[r]`` (its traffic over the device's tiles)."""
    a, b = lw.layout.locate(src_runs), lw.layout.locate(dst_runs)
    a_addr, b_addr = lw.layout.address(a.tile, a.offset), lw.layout.address(b.tile, b.offset)
    start, count, ia, ib = align_pieces(a.flat, a.count, b.flat, b.count)
    size = np.full(count.size, src.elementType().size, _I64)
    src_addr = a_addr[ia] + (start - a.flat[ia]) * a.step[ia]
    dst_addr = b_addr[ib] + (start - b.flat[ib]) * b.step[ib]
    src_tile, dst_tile, src_step, dst_step = a.tile[ia], b.tile[ib], a.step[ia], b.step[ib]
    gid, gstep = None, None
    if src.containsAliases():  # an element sent to several places crosses the exchange once
        a_gid, a_gstep = a.gids(src_runs, lw.graph.variables.bases)
        gid, gstep = a_gid[ia] + (start - a.flat[ia]) * a_gstep[ia], a_gstep[ia]
    if replica_map is None:
        t = traffic(src_tile, dst_tile, count, size, lw.num_tiles, gid, gstep, lw.tiles_per_ipu)
    else:  # every replica's pieces on the expanded device's tiles (replica r's elements as its ids)
        rep = lw.replication
        sources = np.asarray(sorted(replica_map), _I64)
        targets = np.asarray([replica_map[r] for r in sorted(replica_map)], _I64)

        def spread(x: np.ndarray, by: np.ndarray, unit: int) -> np.ndarray:
            return (x[None, :] + by[:, None] * unit).reshape(-1)

        n = sources.size
        t = traffic(spread(src_tile, sources, rep.tiles), spread(dst_tile, targets, rep.tiles),
                    np.tile(count, n), np.tile(size, n), rep.factor * rep.tiles,
                    None if gid is None else spread(gid, sources, lw.graph.variables.num_elements),
                    None if gstep is None else np.tile(gstep, n), lw.tiles_per_ipu)
    shared = bool(np.isin(unique_sorted(src_runs.var), unique_sorted(dst_runs.var)).any())
    return CopyPlan.build(src_addr, dst_addr, count, src_step, dst_step, size, t, same_memory=shared,
                          disjoint=True,  # a Copy's destination has no aliases
                          across=replica_map is not None)


def _cross_replica_copy(lw: Lowerer, p: prog.CrossReplicaCopy) -> Step:
    """Replica r's ``src`` to replica ``replicaMap[r]``'s ``dst``: one copy over the device."""
    replicas = lw.replication.factor
    if sorted(p.replicaMap) != list(range(replicas)):
        raise GraphReplicationError(f"CrossReplicaCopy: the replica map {p.replicaMap} is not a permutation "
                                    f"of the graph's {replicas} replica(s) 0..{replicas - 1}")
    plan = _tensor_copy(lw, p.src, p.dst, lw.runs(p.src, "CrossReplicaCopy source"),
                        lw.runs(p.dst, "CrossReplicaCopy destination"), p.replicaMap)
    pairs = tuple((r, p.replicaMap[r]) for r in range(replicas))
    return lw.leaf(CopyStep(prog.step_label(p), plan, pairs), plan.traffic)


def _repeat(lw: Lowerer, p: prog.Repeat) -> Step:
    return RepeatStep(p.name or f"Repeat({p.count})", p.count, lw.lower(p.body))


def _while(lw: Lowerer, p: prog.RepeatWhileTrue) -> Step:
    return WhileStep(p.name or type(p).__name__, lw.lower(p.cond),
                     lw.scalar(p.predicate, f"{type(p).__name__} predicate"), p.loop_while, lw.lower(p.body))


def _if(lw: Lowerer, p: prog.If) -> Step:
    predicate = lw.scalar(p.predicate, "If predicate")
    return IfStep(p.name or "If", predicate, lw.lower(p.then), lw.lower(p.orelse))


def _switch(lw: Lowerer, p: prog.Switch) -> Step:
    return SwitchStep(p.name or "Switch", lw.scalar(p.control, "Switch control"),
                      {v: lw.lower(b) for v, b in p.cases.items()}, lw.lower(p.default))


def _abort(lw: Lowerer, p: prog.Abort) -> Step:
    predicate = None if p.predicate is None else lw.scalar(p.predicate, f"{type(p).__name__} predicate")
    return AbortStep(p.name or type(p).__name__, predicate, p.message)


def _host_function_call(lw: Lowerer, p: prog.HostFunctionCall) -> Step:
    """Gather plans for the inputs, scatter plans for the outputs: a stream copy each way."""
    f = p.function
    if f.owner != lw.graph.tensors.token:
        raise ProgramError(f"Call: host function '{f.handle()}' was not added to this graph")
    moved = TileTraffic.empty(lw.num_tiles)
    ends = []
    for tensors, to_device in ((p.inputs, False), (p.outputs, True)):
        plans = []
        for t in tensors:
            plan, traffic_ = lw.host_plan(t, f"Call of host function '{f.handle()}'", to_device)
            plans.append((plan, t.elementType().dtype, t.numElements()))
            moved = moved + traffic_
        ends.append(plans)
    return lw.leaf(HostFunctionStep(p.name or f"Call({f.handle()})", f.handle(), *ends), moved)


def _call(lw: Lowerer, p: prog.Call) -> Step:
    if p.function.owner != lw.graph.tensors.token or not 0 <= p.function.id < len(lw.graph.functions):
        raise ProgramError(f"Call: function {p.function.id} was not added to this graph")
    return CallStep(p.name or f"Call({p.function.id})", p.function.id)


def _print(lw: Lowerer, p: prog.PrintTensor) -> Step:
    plan, host = lw.host_plan(p.tensor, "PrintTensor", to_device=False)
    step = PrintStep(prog.step_label(p), p.title, plan, p.tensor.elementType(),
                     tuple(p.tensor.shape()))
    return lw.leaf(step, lw.replication.first_only(host))  # printed from replica 0


def _write_undef(lw: Lowerer, p: prog.WriteUndef) -> Step:
    lw.runs(p.tensor, "WriteUndef")
    return SequenceStep(prog.step_label(p), [])


def _assume_equal(lw: Lowerer, p: prog.AssumeEqualAcrossReplicas) -> Step:
    lw.runs(p.tensor, "AssumeEqualAcrossReplicas")
    return SequenceStep(p.name or f"AssumeEqualAcrossReplicas({p.tensor.name})", [])


def _cycle_stamp(lw: Lowerer, p: prog.CycleStamp) -> Step:
    write, _ = lw.host_plan(p.tensor, "CycleStamp", to_device=True)
    since = None if p.since is None else lw.host_plan(p.since, "CycleStamp since", to_device=False)[0]
    return lw.leaf(CycleStampStep(prog.step_label(p), write, since))


def _sync(lw: Lowerer, p: prog.Sync) -> Step:
    return lw.leaf(SyncStep(p.name or f"Sync({p.syncType.value})", p.syncType is not prog.SyncType.INTERNAL))


#: The step each kind of program becomes (a subclass uses its base's entry).
STEPS: dict[type, Callable[[Lowerer, prog.Program], Step]] = {  # type: ignore[dict-item]
    prog.Sequence: _sequence, prog.Execute: _execute, prog.Copy: _copy, prog.Repeat: _repeat,
    prog.RepeatWhileTrue: _while, prog.If: _if, prog.Switch: _switch, prog.Call: _call,
    prog.PrintTensor: _print, prog.WriteUndef: _write_undef, prog.Sync: _sync,
    prog.CrossReplicaCopy: _cross_replica_copy, prog.AssumeEqualAcrossReplicas: _assume_equal,
    prog.CycleStamp: _cycle_stamp, FloatingPointControl: lower_fp_control, prog.Abort: _abort,
    prog.HostFunctionCall: _host_function_call,
}


def lower_programs(graph: GraphIR, programs: list[prog.Program], layout: MemoryLayout,
                   compute_sets: ComputeSetPlans, replication: Replication) -> LoweredPrograms:
    prog.check_acyclic(programs, graph.functions)
    lowerer = Lowerer(graph, layout, compute_sets, replication)
    functions = [lowerer.lower(f) for f in graph.functions]
    entries = [lowerer.lower(p) for p in programs]
    return LoweredPrograms(entries, functions, lowerer.leaves, list(lowerer.tables.values()))
