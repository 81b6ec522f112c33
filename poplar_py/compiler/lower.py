"""Pass: lower control programs into executable steps.

Every leaf program becomes a step with a precomputed plan (which bytes move where,
which kernel runs on which state table) that knows how to run itself on a
:class:`Machine` and what it costs (:class:`~poplar_py.compiler.costs.StepCost`);
control programs (Sequence, Repeat, loops, If, Switch, Call) become small step trees.
One table, :data:`STEPS`, says which step each kind of program becomes: lowering
dispatches on it, and running a step is calling its ``run``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, ClassVar

import numpy as np

from .. import program as prog
from ..errors import ProgramError, StreamError
from ..handles import DataStream
from ..ir import GraphIR
from ..printing import format_tensor
from ..regions import Runs, unique_sorted
from ..streams import HostStream
from ..tensor import Tensor
from ..types import Type
from .computeset import ComputeSetPlans
from .costs import CostModel, RunRecord, StepCost
from .exchange import CopyPlan, TileTraffic, align_pieces, traffic
from .layout import Located, MemoryLayout
from .vertex_tables import ComputeSetRunner

_I64 = np.int64


@dataclass
class Machine:
    """The running device: tile memories, connected host streams, where PrintTensor writes,
    the lowered functions and the record of what ran."""

    arena: np.ndarray
    record: RunRecord
    functions: list[Step]
    streams: dict[str, HostStream] = field(default_factory=dict)
    out: IO[str] | None = None

    @property
    def base(self) -> int:
        return self.arena.ctypes.data


@dataclass(frozen=True)
class ScalarRef:
    """One element in tile memory, read by control flow (predicates, Switch control)."""

    address: int
    dtype: np.dtype
    name: str

    def read(self, m: Machine) -> int | float:
        return m.arena[self.address:self.address + self.dtype.itemsize].view(self.dtype)[0].item()


@dataclass
class Step:
    label: str
    id: int = field(default=-1, init=False)  # leaf steps: their index in LoweredPrograms.leaves
    traffic: TileTraffic | None = field(default=None, init=False)
    kind: ClassVar[str] = ""  # a leaf step's kind in the profile

    def run(self, m: Machine) -> None:
        raise NotImplementedError

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        """Cycles per tile of one run of this (leaf) step."""
        assert self.traffic is not None
        local = model.local(self.traffic)
        return StepCost(self.kind, model.sync(self.traffic), model.exchange(self.traffic), model.zero, local,
                        local, model.global_exchange(self.traffic))


@dataclass
class CopyStep(Step):
    plan: CopyPlan
    kind: ClassVar[str] = "DoExchange"

    def run(self, m: Machine) -> None:
        self.plan.execute(m.base, m.base)
        m.record.counts[self.id] += 1


@dataclass
class HostStep(Step):
    """A leaf that moves data between the host and tile memory (stream copy, print)."""

    kind: ClassVar[str] = "StreamCopy"

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        assert self.traffic is not None
        return StepCost(self.kind, model.barrier, model.exchange(self.traffic), model.host(self.traffic),
                        model.zero, model.zero)


@dataclass
class StreamCopyStep(HostStep):
    handle: str
    to_device: bool
    plan: CopyPlan  # host buffer <-> arena
    dtype: np.dtype
    n: int

    def run(self, m: Machine) -> None:
        stream = m.streams.get(self.handle)
        if stream is None:
            raise StreamError(f"stream '{self.handle}' is not connected: call engine.connectStream first")
        if self.to_device:
            data = stream.to_device(self.n, self.dtype)
            self.plan.execute(data.ctypes.data, m.base)
            stream.transferred()
        else:
            data = np.empty(self.n, dtype=self.dtype)
            self.plan.execute(m.base, data.ctypes.data)
            stream.from_device(data)
        m.record.counts[self.id] += 1


@dataclass
class PrintStep(HostStep):
    title: str
    plan: CopyPlan  # arena -> host buffer
    type: Type
    shape: tuple[int, ...]

    def run(self, m: Machine) -> None:
        values = np.empty(self.shape, dtype=self.type.dtype)
        self.plan.execute(m.base, values.ctypes.data)
        out = m.out or sys.stdout
        out.write(format_tensor(self.title, values) + "\n")
        out.flush()
        m.record.counts[self.id] += 1


@dataclass
class ExecuteStep(Step):
    runner: ComputeSetRunner
    kind: ClassVar[str] = "OnTileExecute"

    def run(self, m: Machine) -> None:
        self.runner.run(m.arena, m.record, self.id)
        m.record.counts[self.id] += 1

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        assert self.traffic is not None
        compute, active = self.runner.compute_cycles(record, self.id)
        local = model.local(self.traffic)
        return StepCost(self.kind, model.sync(self.traffic, self.runner.syncs), model.exchange(self.traffic),
                        model.zero, compute + local, active + local, model.global_exchange(self.traffic))


@dataclass
class SyncStep(Step):
    kind: ClassVar[str] = "Sync"

    def run(self, m: Machine) -> None:
        m.record.counts[self.id] += 1


@dataclass
class SequenceStep(Step):
    steps: list[Step]

    def run(self, m: Machine) -> None:
        for s in self.steps:
            s.run(m)


@dataclass
class RepeatStep(Step):
    count: int
    body: Step

    def run(self, m: Machine) -> None:
        body = self.body
        for _ in range(self.count):
            body.run(m)


@dataclass
class WhileStep(Step):
    cond: Step
    predicate: ScalarRef
    loop_while: bool
    body: Step

    def run(self, m: Machine) -> None:
        while True:
            self.cond.run(m)
            if bool(self.predicate.read(m)) != self.loop_while:
                return
            self.body.run(m)


@dataclass
class IfStep(Step):
    predicate: ScalarRef
    then: Step
    orelse: Step

    def run(self, m: Machine) -> None:
        (self.then if self.predicate.read(m) else self.orelse).run(m)


@dataclass
class SwitchStep(Step):
    control: ScalarRef
    cases: dict[int, Step]
    default: Step

    def run(self, m: Machine) -> None:
        self.cases.get(int(self.control.read(m)), self.default).run(m)


@dataclass
class CallStep(Step):
    function: int

    def run(self, m: Machine) -> None:
        m.functions[self.function].run(m)


@dataclass
class LoweredPrograms:
    """Entry programs and functions as step trees; ``leaves`` lists every leaf step by id."""

    programs: list[Step]
    functions: list[Step]
    leaves: list[Step]
    runners: list[ComputeSetRunner]  # one per compute set executed


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

    def __init__(self, graph: GraphIR, layout: MemoryLayout, compute_sets: ComputeSetPlans) -> None:
        self.graph = graph
        self.layout = layout
        self.compute_sets = compute_sets
        self.runners: dict[int, ComputeSetRunner] = {}
        self.num_tiles = graph.target.getNumTiles()
        self.tiles_per_ipu = graph.target.getTilesPerIPU()
        self.leaves: list[Step] = []

    def leaf(self, step: Step, traffic_: TileTraffic | None = None) -> Step:
        step.id = len(self.leaves)
        step.traffic = traffic_ if traffic_ is not None else TileTraffic.empty(self.num_tiles)
        self.leaves.append(step)
        return step

    def lower(self, p: prog.Program) -> Step:
        for cls in type(p).__mro__:
            make = STEPS.get(cls)
            if make is not None:
                return make(self, p)
        raise ProgramError(f"cannot lower program of type {type(p).__name__}")

    def runs(self, t: Tensor, what: str) -> Runs:
        if t.variables is not self.graph.tensors:
            raise ProgramError(f"{what}: tensor '{t.name}' belongs to another graph")
        return t.runs()

    def locate(self, t: Tensor, what: str) -> tuple[Located, np.ndarray]:
        """Where ``t``'s elements live, and each piece's arena address."""
        located = self.layout.locate(self.runs(t, what))
        return located, self.layout.address(located.tile, located.offset)

    def gids(self, t: Tensor, located: Located) -> tuple[np.ndarray, np.ndarray]:
        return located.gids(t.runs(), self.graph.variables.bases)

    def host_plan(self, t: Tensor, what: str, to_device: bool) -> tuple[CopyPlan, TileTraffic]:
        return host_plan(self.layout, self.runs(t, what), t.elementType().size, to_device)

    def scalar(self, t: Tensor, what: str) -> ScalarRef:
        _, address = self.locate(t, what)
        return ScalarRef(int(address[0]), t.elementType().dtype, t.name)

    def runner(self, cs_id: int) -> ComputeSetRunner:
        """The runner of a compute set, built once however often it is executed."""
        runner = self.runners.get(cs_id)
        if runner is None:
            plans = self.compute_sets
            runner = ComputeSetRunner(self.graph, plans.plans[cs_id], self.layout, plans.options)
            self.runners[cs_id] = runner
        return runner


def _sequence(lw: Lowerer, p: prog.Sequence) -> Step:
    return SequenceStep(p.name or "Sequence", [lw.lower(c) for c in p.programs])


def _execute(lw: Lowerer, p: prog.Execute) -> Step:
    if p.cs.owner != lw.graph.tensors.token:
        raise ProgramError(f"Execute: compute set '{p.cs.name}' belongs to another graph")
    runner = lw.runner(p.cs.id)
    return lw.leaf(ExecuteStep(p.name or p.cs.name, runner), runner.traffic)


def _copy(lw: Lowerer, p: prog.Copy) -> Step:
    if isinstance(p.src, Tensor) and isinstance(p.dst, Tensor):
        return _tensor_copy(lw, p.src, p.dst, p.name)
    to_device = isinstance(p.dst, Tensor)
    stream, t = (p.src, p.dst) if to_device else (p.dst, p.src)
    assert isinstance(stream, DataStream) and isinstance(t, Tensor)
    plan, host = lw.host_plan(t, "Copy", to_device)
    label = p.name or (f"StreamCopy({stream.handle()} -> {t.name})" if to_device
                       else f"StreamCopy({t.name} -> {stream.handle()})")
    return lw.leaf(StreamCopyStep(label, stream.handle(), to_device, plan, t.elementType().dtype,
                                  t.numElements()), host)


def _tensor_copy(lw: Lowerer, src: Tensor, dst: Tensor, name: str) -> Step:
    a, a_addr = lw.locate(src, "Copy source")
    b, b_addr = lw.locate(dst, "Copy destination")
    start, count, ia, ib = align_pieces(a.flat, a.count, b.flat, b.count)
    size = np.full(count.size, src.elementType().size, _I64)
    src_addr = a_addr[ia] + (start - a.flat[ia]) * a.step[ia]
    dst_addr = b_addr[ib] + (start - b.flat[ib]) * b.step[ib]
    if src.containsAliases():  # an element sent to several places crosses the exchange once
        a_gid, a_gstep = lw.gids(src, a)
        gid = a_gid[ia] + (start - a.flat[ia]) * a_gstep[ia]
        t = traffic(a.tile[ia], b.tile[ib], count, size, lw.num_tiles, gid, a_gstep[ia], lw.tiles_per_ipu)
    else:
        t = traffic(a.tile[ia], b.tile[ib], count, size, lw.num_tiles, tiles_per_ipu=lw.tiles_per_ipu)
    shared = bool(np.isin(unique_sorted(src.runs().var), unique_sorted(dst.runs().var)).any())
    plan = CopyPlan.build(src_addr, dst_addr, count, a.step[ia], b.step[ib], size, t, same_memory=shared,
                          disjoint=True)  # a Copy's destination has no aliases
    return lw.leaf(CopyStep(name or f"Copy({src.name} -> {dst.name})", plan), t)


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


def _call(lw: Lowerer, p: prog.Call) -> Step:
    if p.function.owner != lw.graph.tensors.token or not 0 <= p.function.id < len(lw.graph.functions):
        raise ProgramError(f"Call: function {p.function.id} was not added to this graph")
    return CallStep(p.name or f"Call({p.function.id})", p.function.id)


def _print(lw: Lowerer, p: prog.PrintTensor) -> Step:
    plan, host = lw.host_plan(p.tensor, "PrintTensor", to_device=False)
    step = PrintStep(f"PrintTensor({p.title or p.tensor.name})", p.title, plan, p.tensor.elementType(),
                     tuple(p.tensor.shape()))
    return lw.leaf(step, host)


def _write_undef(lw: Lowerer, p: prog.WriteUndef) -> Step:
    lw.runs(p.tensor, "WriteUndef")
    return SequenceStep(p.name or f"WriteUndef({p.tensor.name})", [])


def _sync(lw: Lowerer, p: prog.Sync) -> Step:
    return lw.leaf(SyncStep(p.name or f"Sync({p.syncType.value})"))


#: The step each kind of program becomes (a subclass uses its base's entry).
STEPS: dict[type, Callable[[Lowerer, prog.Program], Step]] = {  # type: ignore[dict-item]
    prog.Sequence: _sequence, prog.Execute: _execute, prog.Copy: _copy, prog.Repeat: _repeat,
    prog.RepeatWhileTrue: _while, prog.If: _if, prog.Switch: _switch, prog.Call: _call,
    prog.PrintTensor: _print, prog.WriteUndef: _write_undef, prog.Sync: _sync,
}


def lower_programs(graph: GraphIR, programs: list[prog.Program], layout: MemoryLayout,
                   compute_sets: ComputeSetPlans) -> LoweredPrograms:
    prog.check_acyclic(programs, graph.functions)
    lowerer = Lowerer(graph, layout, compute_sets)
    functions = [lowerer.lower(f) for f in graph.functions]
    entries = [lowerer.lower(p) for p in programs]
    return LoweredPrograms(entries, functions, lowerer.leaves, list(lowerer.runners.values()))
