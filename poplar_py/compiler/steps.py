"""Executable steps: what lowered programs are made of, and the machine they run on.

A leaf step (a copy, a stream copy, a compute set, a print, a sync) has a precomputed plan
that knows how to run itself on a :class:`Machine` and what it costs
(:class:`~poplar_py.compiler.costs.StepCost`); control steps (Sequence, Repeat, loops, If,
Switch, Call) run their children. In a replicated graph every leaf step runs every replica.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from typing import IO, ClassVar

import numpy as np

from ..errors import StreamError
from ..printing import format_tensor
from ..streams import HostStream
from ..types import Type
from .costs import CostModel, RunRecord, StepCost
from .exchange import CopyPlan, SharedGather, TileTraffic
from .vertex_tables import ComputeSetRunner
from .world import COPY, GATHER, SCATTER, World


@dataclass
class Machine:
    """The running device: tile memories, connected host streams (per stream, one host end per
    replica, or one for a broadcast stream), where PrintTensor writes, the lowered functions,
    the record of what ran and the processes that run it (under MPI, this rank's tiles only:
    the record holds their cycles)."""

    arena: np.ndarray
    record: RunRecord
    functions: list[Step]
    world: World = field(default_factory=World)
    streams: dict[str, list[HostStream | None]] = field(default_factory=dict)
    out: IO[str] | None = None

    @property
    def base(self) -> int:
        return self.arena.ctypes.data


@dataclass(frozen=True)
class ScalarRef:
    """One element in tile memory, read by control flow (predicates, Switch control): every rank
    gets the value of the rank holding it."""

    address: int
    dtype: np.dtype
    name: str

    def read(self, m: Machine) -> int | float:
        return m.world.read_scalar(m.arena, self.address, self.dtype)


@dataclass
class Step:
    label: str
    id: int = field(default=-1, init=False)  # leaf steps: their index in LoweredPrograms.leaves
    traffic: TileTraffic | None = field(default=None, init=False)
    kind: ClassVar[str] = ""  # a leaf step's kind in the profile

    def run(self, m: Machine) -> None:
        raise NotImplementedError

    def moves(self) -> list[tuple[str, CopyPlan | SharedGather]]:
        """The plans a leaf step runs, each with its kind of move (world.COPY, SCATTER, GATHER)."""
        return []

    def outline(self) -> str:
        """The step tree's shape: kinds, labels, counts and children (what MPI ranks compare)."""
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Step):
                parts.append(value.outline())
            elif isinstance(value, list) and all(isinstance(v, Step) for v in value):
                parts.extend(v.outline() for v in value)
            elif isinstance(value, dict) and all(isinstance(v, Step) for v in value.values()):
                parts.extend(f"{k}: {v.outline()}" for k, v in value.items())
            elif isinstance(value, (bool, int, str)):
                parts.append(repr(value))
        return f"{type(self).__name__}({', '.join(parts)})"

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
        m.world.copy(self.plan, m.base)
        m.record.counts[self.id] += 1

    def moves(self) -> list[tuple[str, CopyPlan | SharedGather]]:
        return [(COPY, self.plan)]


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
    """One transfer per replica, each between its own host end and its replica's tiles; a
    broadcast stream's one transfer goes to every replica. Under MPI, the rank holding a
    transfer's first destination calls the host end and shares the data; data going to the
    host reaches every rank's host end."""

    handle: str
    to_device: bool
    plans: list[CopyPlan]  # host buffer <-> arena, per replica
    broadcast: bool
    dtype: np.dtype
    n: int

    def _host(self, m: Machine, replica: int) -> HostStream:
        ends = m.streams.get(self.handle)
        stream = ends[replica] if ends is not None else None
        if stream is None:
            which = f" for replica {replica}" if len(self.plans) > 1 and not self.broadcast else ""
            raise StreamError(f"stream '{self.handle}' is not connected{which}: call engine.connectStream "
                              "first")
        return stream

    def _fetch(self, m: Machine, replica: int, plan: CopyPlan) -> np.ndarray:
        """The host end's data for one transfer, on every rank."""
        stream = self._host(m, replica)  # on every rank: an unconnected stream fails on all alike
        home = m.world.home(plan)
        data = m.world.share(lambda: stream.to_device(self.n, self.dtype), home, self.n, self.dtype)
        if m.world.rank == home:
            stream.transferred()
        return data

    def run(self, m: Machine) -> None:
        if self.broadcast:
            data = self._fetch(m, 0, self.plans[0])
            for plan in self.plans:
                m.world.scatter(plan, data.ctypes.data, m.base)
        elif self.to_device:
            for replica, plan in enumerate(self.plans):
                data = self._fetch(m, replica, plan)  # held: the copy reads it by address
                m.world.scatter(plan, data.ctypes.data, m.base)
        else:
            for replica, plan in enumerate(self.plans):
                stream = self._host(m, replica)
                data = np.empty(self.n, dtype=self.dtype)
                m.world.gather(plan, m.base, data.ctypes.data)
                stream.from_device(data)
        m.record.counts[self.id] += 1

    def moves(self) -> list[tuple[str, CopyPlan | SharedGather]]:
        return [(SCATTER if self.to_device else GATHER, plan) for plan in self.plans]


@dataclass
class PrintStep(HostStep):
    title: str
    plan: CopyPlan  # arena -> host buffer
    type: Type
    shape: tuple[int, ...]

    def run(self, m: Machine) -> None:
        values = np.empty(self.shape, dtype=self.type.dtype)
        m.world.gather(self.plan, m.base, values.ctypes.data)
        if m.world.rank == 0:  # printed once
            out = m.out or sys.stdout
            out.write(format_tensor(self.title, values) + "\n")
            out.flush()
        m.record.counts[self.id] += 1

    def moves(self) -> list[tuple[str, CopyPlan | SharedGather]]:
        return [(GATHER, self.plan)]


@dataclass
class ExecuteStep(Step):
    runner: ComputeSetRunner
    kind: ClassVar[str] = "OnTileExecute"

    def run(self, m: Machine) -> None:
        self.runner.run(m.arena, m.record, self.id, m.world)
        m.record.counts[self.id] += 1

    def moves(self) -> list[tuple[str, CopyPlan | SharedGather]]:
        exchanges = (self.runner.exchange_in, self.runner.exchange_out)
        return [(COPY, plan) for plan in exchanges if plan is not None]

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
