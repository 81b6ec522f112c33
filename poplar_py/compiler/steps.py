"""Executable steps: what lowered programs are made of, as data the runtime runs.

A leaf step (a copy, a stream copy, a compute set, a print, a sync) holds a precomputed plan; it
says which plans it moves (:meth:`Step.moves`, what MPI ranks cut by rank) and what one run of it
costs (:class:`~poplar_py.cycles.costs.StepCost`). Control steps (Sequence, Repeat, loops, If,
Switch, Call) hold their children. How each kind runs on a machine is the runtime's
(:mod:`poplar_py.runtime.step_runners`). In a replicated graph a leaf step runs its one replica's
plan on every replica's memories in turn (:mod:`replicas`); consecutive leaves that touch only
their own replica's memories (compute sets, copies within a replica, syncs) form one
:class:`ReplicaSegment`, which runs each replica through all of them before the next.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields, replace
from typing import ClassVar

import numpy as np

from ..cycles.costs import CostModel, RunRecord, StepCost
from ..types import Type
from .compute_set_tables import ComputeSetTables
from .exchange import CopyPlan, TileTraffic
from .partition import COPY, GATHER, SCATTER, Move


@dataclass(frozen=True)
class ScalarRef:
    """One element in tile memory, read by control flow (predicates, Switch control): every rank
    gets the value of the rank holding it, and the other IPUs of each replica wait for ``ipu``,
    the one holding it there."""

    address: int
    dtype: np.dtype
    name: str
    ipu: int = 0


@dataclass
class Step:
    label: str
    id: int = field(default=-1, init=False)  # leaf steps: their index in LoweredPrograms.leaves
    traffic: TileTraffic | None = field(default=None, init=False)
    kind: ClassVar[str] = ""  # a leaf step's kind in the profile

    def moves(self) -> list[Move]:
        """The plans a leaf step runs, each with its kind of move (partition.COPY, SCATTER, GATHER)
        and whether it runs on every replica (else it spans the device)."""
        return []

    def replica_leaves(self) -> list[Step] | None:
        """The leaves this step runs, in order, when each runs on one replica's memories alone
        (the runtime's ``RUNNERS_ON_REPLICA``) and nothing else happens; None when it does more
        (host transfers, control flow, cross-replica copies)."""
        return None

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
        traffic = model.device(self.traffic)
        local = model.local(traffic)
        return StepCost(self.kind, model.sync(traffic), model.exchange(traffic), model.zero, local, local,
                        model.global_exchange(traffic), ipus=model.ipus(traffic),
                        syncs=model.crossing(traffic))


@dataclass
class CopyStep(Step):
    """A copy within every replica, or, given ``pairs`` of source and destination replicas (a
    CrossReplicaCopy), from each replica's memories to its partner's."""

    plan: CopyPlan
    pairs: tuple[tuple[int, int], ...] = ()
    kind: ClassVar[str] = "DoExchange"

    @property
    def replicated(self) -> bool:
        """Whether the copy stays within each replica."""
        return not self.pairs

    def replica_leaves(self) -> list[Step] | None:
        return [self] if self.replicated else None

    def moves(self) -> list[Move]:
        return [(COPY, self.plan, True)] if self.replicated else []


@dataclass
class HostStep(Step):
    """A leaf that moves data between the host and tile memory (stream copy, print)."""

    kind: ClassVar[str] = "StreamCopy"

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        assert self.traffic is not None
        traffic = model.device(self.traffic)
        nbytes = model.host_bytes(traffic)
        return StepCost(self.kind, model.host_barrier, model.exchange(traffic), model.host(nbytes),
                        model.zero, model.zero, ipus=model.ipus(traffic), syncs=True,
                        prepare=model.prepare(nbytes))


@dataclass
class StreamCopyStep(HostStep):
    """One transfer per replica, each between its own host end and its replica's tiles; a
    broadcast stream's one transfer goes to every replica. Under MPI, a replica's host end is
    called on the rank that holds it (or, for a replica split over ranks and for a broadcast, on
    the rank holding its first destination, which shares the data); data going to the host
    reaches every rank's host end."""

    handle: str
    to_device: bool
    plan: CopyPlan  # host buffer <-> a replica's memories
    broadcast: bool
    dtype: np.dtype
    n: int

    def moves(self) -> list[Move]:
        return [(SCATTER if self.to_device else GATHER, self.plan, True)]


@dataclass
class PrintStep(HostStep):
    """Replica 0's tensor, printed once."""

    title: str
    plan: CopyPlan  # a replica's memories -> host buffer
    type: Type
    shape: tuple[int, ...]

    def moves(self) -> list[Move]:
        return [(GATHER, self.plan, True)]


@dataclass
class HostFunctionStep(HostStep):
    """A host function call (``program.Call(hostFunction, inputs, outputs)``) on every replica:
    its input tensors gathered into host arrays, the function connected for the replica called
    with them and with zeroed output arrays it fills, the outputs scattered into its tensors. Under
    MPI a replica's function is called on the ranks running that replica."""

    handle: str
    inputs: list[tuple[CopyPlan, np.dtype, int]]  # a replica's tensor -> host array, its dtype and size
    outputs: list[tuple[CopyPlan, np.dtype, int]]  # host array -> a replica's tensor

    def moves(self) -> list[Move]:
        return [*((GATHER, plan, True) for plan, _, _ in self.inputs),
                *((SCATTER, plan, True) for plan, _, _ in self.outputs)]


@dataclass
class RemoteCopyStep(Step):
    """Rows between a remote buffer in Streaming Memory and a tensor, on every replica: tensor row
    ``i`` and the buffer's row ``offsets[i]``, the offsets read from each replica's own offset
    tensor (without one, row 0). Every replica's offsets are checked before anything moves: one
    past the buffer's rows raises RemoteBufferError on every rank and nothing is copied."""

    handle: str
    to_device: bool  # from the buffer into tile memory
    rows: list[CopyPlan]  # plan i: a host row <-> the tensor's row i on a replica
    offsets: CopyPlan | None  # a replica's offset tensor -> a host buffer of UNSIGNED_INTs
    repeats: int
    kind: ClassVar[str] = "RemoteBufferCopy"

    def moves(self) -> list[Move]:
        rows = [(SCATTER if self.to_device else GATHER, plan, True) for plan in self.rows]
        return rows + ([(GATHER, self.offsets, True)] if self.offsets is not None else [])

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        assert self.traffic is not None
        traffic = model.device(self.traffic)
        return StepCost(self.kind, model.barrier, model.exchange(traffic), model.zero, model.zero, model.zero,
                        streaming=model.streaming(traffic), ipus=model.ipus(traffic), syncs=True)


@dataclass
class ExecuteStep(Step):
    """Execute(cs): a compute set's exchange in, kernels and exchange out on every replica."""

    compute_set: ComputeSetTables
    kind: ClassVar[str] = "OnTileExecute"

    def replica_leaves(self) -> list[Step] | None:
        return [self]

    def moves(self) -> list[Move]:
        exchanges = (self.compute_set.exchange_in, self.compute_set.exchange_out)
        return [(COPY, plan, True) for plan in exchanges if plan is not None]

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        assert self.traffic is not None
        compute, active = self.compute_set.compute_cycles(record, self.id)
        traffic = model.device(self.traffic)
        local = model.local(traffic)
        return StepCost(self.kind, model.sync(traffic, self.compute_set.syncs), model.exchange(traffic),
                        model.zero, compute + local, active + local, model.global_exchange(traffic),
                        ipus=model.ipus(traffic, compute), syncs=model.crossing(traffic))


@dataclass
class SyncStep(Step):
    """A barrier: of each IPU's tiles, or (``external``) of every IPU, which wait for the latest."""

    external: bool = False
    kind: ClassVar[str] = "Sync"

    def replica_leaves(self) -> list[Step] | None:
        return [self]

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        return replace(super().cost(model, record), ipus=None, syncs=self.external)


@dataclass
class CycleStampStep(Step):
    """Reads the simulated cycle counter (a sync, then the count) into a tensor of two 32-bit
    words on every replica: the cycles since load, or since the stamp ``since`` reads."""

    write: CopyPlan  # host buffer of two UNSIGNED_INTs -> the tensor
    since: CopyPlan | None  # the earlier stamp -> host buffer
    kind: ClassVar[str] = "Sync"

    def moves(self) -> list[Move]:
        return [(SCATTER, self.write, True), *([(GATHER, self.since, True)] if self.since else [])]

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        """A sync of every IPU (the counter is read when all have arrived)."""
        return replace(super().cost(model, record), ipus=None, syncs=True)


@dataclass(frozen=True)
class ReplicaSegment:
    """Consecutive leaves that each run on one replica's memories alone, run replica by replica:
    each replica through every step before the next replica starts (when this process runs its
    replicas alone; else step by step, every rank in step). A failing step stops its replica,
    and later replicas stop at that step too; the first failure by (step, replica) is raised on
    every rank, as running step by step would (earlier replicas may have run further steps)."""

    steps: tuple[Step, ...]


@dataclass
class SequenceStep(Step):
    steps: list[Step]

    def replica_leaves(self) -> list[Step] | None:
        leaves: list[Step] = []
        for s in self.steps:
            more = s.replica_leaves()
            if more is None:
                return None
            leaves.extend(more)
        return leaves

    @functools.cached_property
    def runs(self) -> list[Step | ReplicaSegment]:
        """The children, with each run of consecutive replica-local ones (see
        :meth:`Step.replica_leaves`) as one segment."""
        runs: list[Step | ReplicaSegment] = []
        segment: list[Step] = []
        for s in self.steps:
            leaves = s.replica_leaves()
            if leaves is None:
                if segment:
                    runs.append(ReplicaSegment(tuple(segment)))
                    segment = []
                runs.append(s)
            else:
                segment.extend(leaves)
        if segment:
            runs.append(ReplicaSegment(tuple(segment)))
        return runs


@dataclass
class RepeatStep(Step):
    count: int
    body: Step


@dataclass
class WhileStep(Step):
    cond: Step
    predicate: ScalarRef
    loop_while: bool
    body: Step


@dataclass
class IfStep(Step):
    predicate: ScalarRef
    then: Step
    orelse: Step


@dataclass
class SwitchStep(Step):
    control: ScalarRef
    cases: dict[int, Step]
    default: Step


@dataclass
class AbortStep(Step):
    """An Abort, or (given a predicate) an AbortOnCondition: raises ApplicationRuntimeError."""

    predicate: ScalarRef | None
    message: str


@dataclass
class CallStep(Step):
    function: int
