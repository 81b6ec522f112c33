"""Executable steps: what lowered programs are made of, and the machine they run on.

A leaf step (a copy, a stream copy, a compute set, a print, a sync) has a precomputed plan
that knows how to run itself on a :class:`Machine` and what it costs
(:class:`~poplar_py.cycles.costs.StepCost`); control steps (Sequence, Repeat, loops, If,
Switch, Call) run their children. In a replicated graph a leaf step runs its one replica's plan
on every replica's memories in turn (:mod:`replicas`), and raises the first error of any replica
(on every MPI rank) once all have run. Consecutive leaves that touch only their own replica's
memories (compute sets, copies within a replica, syncs) run as one :class:`ReplicaSegment`:
each replica through all of them before the next, so that one replica's data stays in the
host's caches; no such step reads another replica's memories, so the order gives the same
memories. What codelets print is written in program order all the same: compute set by compute
set, each replica's (this process's) in turn, each in vertex order (:mod:`codelet.prints`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import IO, TYPE_CHECKING, ClassVar

import numpy as np

from ..codelet.pipeline import NO_BUDGET
from ..cycles.costs import CostModel, RunRecord, StepCost
from ..errors import ApplicationRuntimeError, RemoteBufferError, StreamError
from ..printing import format_tensor
from ..streams import HostStream
from ..types import Type
from .exchange import CopyPlan, TileTraffic
from .streaming_memory import StreamingMemory
from .vertex_tables import ComputeSetRunner
from .world import COPY, GATHER, SCATTER, Move, World

if TYPE_CHECKING:
    from .fp_state import FpControl


@dataclass
class Machine:
    """The running device: tile memories (every replica's), the vertex state the replicas share,
    connected host streams (per stream, one host end per replica, or one for a broadcast
    stream), Streaming Memory, where PrintTensor writes, the lowered functions, the record of what
    ran and the processes that run it (under MPI, this rank's tiles only: the record holds their
    cycles)."""

    arena: np.ndarray
    shared: np.ndarray
    record: RunRecord
    functions: list[Step]
    world: World = field(default_factory=World)
    streams: dict[str, list[HostStream | None]] = field(default_factory=dict)
    # per host function, the Python function of each replica (Engine.connectHostFunction)
    host_functions: dict[str, list[Callable | None]] = field(default_factory=dict)
    remote: StreamingMemory = field(default_factory=lambda: StreamingMemory({}))
    out: IO[str] | None = None
    clock: Callable[[], int] = field(default=lambda: 0)  # the cycles run since load, as the profile counts
    fp: FpControl | None = None  # the tiles' floating-point control words (csr_functions)
    cycle_budget: int = NO_BUDGET  # the cycles a vertex of a checked kernel may count (codelets.cycleBudget)
    #: while a ReplicaSegment runs: what codelets print, by (step in the segment, replica), and
    #: where the step running is
    held: list[tuple[int, int, str]] | None = None
    held_at: tuple[int, int] = (0, 0)

    @functools.cached_property
    def base(self) -> int:
        """The arena's address (it never moves; ctypes takes a microsecond to tell it)."""
        return self.arena.ctypes.data

    def codelet_output(self, text: str) -> None:
        """What a compute set's codelets printed on one replica: written where PrintTensor writes,
        or held until the ReplicaSegment running has run (then written in program order)."""
        if self.held is not None:
            self.held.append((*self.held_at, text))
            return
        out = self.out or sys.stdout
        out.write(text)
        out.flush()

    def on_replicas(self, run: Callable[[int], None], every: bool = False) -> None:
        """``run(r)`` for every replica this process takes part in (``every``: for every replica
        of the device, on every rank alike, as what reaches the host reaches every rank's host
        end); the first error (by replica) is raised once all have run, on every rank."""
        error: tuple[int, Exception] | None = None
        for replica in range(self.world.replica_count) if every else self.world.replicas:
            try:
                run(replica)
            except Exception as exc:  # a host callback's error too: raised on every rank
                if error is None:
                    error = (replica, exc)
            except BaseException as exc:  # sys.exit or Ctrl-C in a host callback: the job ends
                self.world.abort(exc)
        self.world.agree(None if error is None else error[1], () if error is None else (error[0],))


@dataclass(frozen=True)
class ScalarRef:
    """One element in tile memory, read by control flow (predicates, Switch control): every rank
    gets the value of the rank holding it, and the other IPUs of each replica wait for ``ipu``,
    the one holding it there."""

    address: int
    dtype: np.dtype
    name: str
    ipu: int = 0

    def read(self, m: Machine) -> int | float:
        m.record.read_predicate(self.ipu)
        return m.world.read_scalar(m.arena, self.address, self.dtype)


@dataclass
class Step:
    label: str
    id: int = field(default=-1, init=False)  # leaf steps: their index in LoweredPrograms.leaves
    traffic: TileTraffic | None = field(default=None, init=False)
    kind: ClassVar[str] = ""  # a leaf step's kind in the profile

    def run(self, m: Machine) -> None:
        raise NotImplementedError

    def moves(self) -> list[Move]:
        """The plans a leaf step runs, each with its kind of move (world.COPY, SCATTER, GATHER)
        and whether it runs on every replica (else it spans the device)."""
        return []

    def replica_leaves(self) -> list[Step] | None:
        """The leaves this step runs, in order, when each runs on one replica's memories alone
        (see :meth:`run_on`) and nothing else happens; None when it does more (host transfers,
        control flow, cross-replica copies)."""
        return None

    def run_on(self, m: Machine, replica: int) -> None:
        """Run on ``replica``'s memories only (a leaf of :meth:`replica_leaves`)."""
        raise NotImplementedError

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

    def run(self, m: Machine) -> None:
        if self.replicated:
            for replica in m.world.replicas:
                self.run_on(m, replica)
        else:
            m.world.cross_copy(self.plan, m.base, self.pairs)
        m.record.ran(self.id)

    def replica_leaves(self) -> list[Step] | None:
        return [self] if self.replicated else None

    def run_on(self, m: Machine, replica: int) -> None:
        m.world.copy(self.plan, m.base, replica)

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

    def _host(self, m: Machine, replica: int) -> HostStream:
        ends = m.streams.get(self.handle)
        stream = ends[replica] if ends is not None else None
        if stream is None:
            which = f" for replica {replica}" if m.world.replica_count > 1 and not self.broadcast else ""
            raise StreamError(f"stream '{self.handle}' is not connected{which}: call engine.connectStream "
                              "first")
        return stream

    def _fetch(self, m: Machine, replica: int | None) -> np.ndarray:
        """The host end's data for one replica's transfer (None: a broadcast's, for every replica)."""
        stream = self._host(m, 0 if replica is None else replica)
        data, fetched = m.world.share(lambda: stream.to_device(self.n, self.dtype), self.plan, replica,
                                      self.n, self.dtype)
        if fetched:
            stream.transferred()
        return data

    def _receive(self, m: Machine, replica: int) -> None:
        stream = self._host(m, replica)
        data = np.empty(self.n, dtype=self.dtype)
        m.world.gather(self.plan, m.base, data, replica)
        stream.from_device(data)

    def run(self, m: Machine) -> None:
        if self.broadcast:
            data = self._fetch(m, None)
            m.on_replicas(lambda r: m.world.scatter(self.plan, data.ctypes.data, m.base, r))
        elif self.to_device:
            def one(replica: int) -> None:
                data = self._fetch(m, replica)  # held: the copy reads it by address
                m.world.scatter(self.plan, data.ctypes.data, m.base, replica)

            m.on_replicas(one)
        else:
            m.on_replicas(lambda r: self._receive(m, r), every=True)
        m.record.ran(self.id)

    def moves(self) -> list[Move]:
        return [(SCATTER if self.to_device else GATHER, self.plan, True)]


@dataclass
class PrintStep(HostStep):
    """Replica 0's tensor, printed once."""

    title: str
    plan: CopyPlan  # a replica's memories -> host buffer
    type: Type
    shape: tuple[int, ...]

    def run(self, m: Machine) -> None:
        values = np.empty(self.shape, dtype=self.type.dtype)
        m.world.gather(self.plan, m.base, values, 0)
        error = None
        if m.world.rank == 0:  # printed once
            out = m.out or sys.stdout
            try:
                out.write(format_tensor(self.title, values) + "\n")
                out.flush()
            except Exception as exc:  # the user's stream failed: raised on every rank
                error = exc
        m.world.agree(error)
        m.record.ran(self.id)

    def moves(self) -> list[Move]:
        return [(GATHER, self.plan, True)]


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

    def run(self, m: Machine) -> None:
        chosen: dict[int, list[int]] = {}
        m.on_replicas(lambda r: chosen.__setitem__(r, self._offsets(m, r)))
        m.on_replicas(lambda r: self._move(m, r, chosen[r]))
        m.record.ran(self.id)

    def _offsets(self, m: Machine, replica: int) -> list[int]:
        if self.offsets is None:
            return [0]
        values = np.empty(len(self.rows), np.uint32)
        m.world.gather_local(self.offsets, m.base, values, replica)
        bad = np.flatnonzero(values >= self.repeats)
        if bad.size:
            raise RemoteBufferError(
                f"remote buffer '{self.handle}': offset {int(values[bad[0]])} (element {int(bad[0])} of the "
                f"offsets) on replica {replica} is out of range: the buffer has {self.repeats} row(s), "
                f"0..{self.repeats - 1}; nothing was copied")
        return values.tolist()

    def _move(self, m: Machine, replica: int, offsets: list[int]) -> None:
        for plan, row in zip(self.rows, offsets):
            if self.to_device:
                m.world.scatter(plan, m.remote.address(self.handle, replica, row), m.base, replica)
            else:
                m.world.gather_local(plan, m.base, m.remote.write(self.handle, replica, row), replica)

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
    runner: ComputeSetRunner
    kind: ClassVar[str] = "OnTileExecute"

    def run(self, m: Machine) -> None:
        m.on_replicas(lambda r: self.run_on(m, r))
        m.record.ran(self.id)

    def replica_leaves(self) -> list[Step] | None:
        return [self]

    def run_on(self, m: Machine, replica: int) -> None:
        self.runner.run(m.arena, m.shared, m.record, self.id, m.world, replica, m.cycle_budget, m.fp,
                        m.codelet_output)

    def moves(self) -> list[Move]:
        exchanges = (self.runner.exchange_in, self.runner.exchange_out)
        return [(COPY, plan, True) for plan in exchanges if plan is not None]

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        assert self.traffic is not None
        compute, active = self.runner.compute_cycles(record, self.id)
        traffic = model.device(self.traffic)
        local = model.local(traffic)
        return StepCost(self.kind, model.sync(traffic, self.runner.syncs), model.exchange(traffic),
                        model.zero, compute + local, active + local, model.global_exchange(traffic),
                        ipus=model.ipus(traffic, compute), syncs=model.crossing(traffic))


@dataclass
class SyncStep(Step):
    """A barrier: of each IPU's tiles, or (``external``) of every IPU, which wait for the latest."""

    external: bool = False
    kind: ClassVar[str] = "Sync"

    def run(self, m: Machine) -> None:
        m.record.ran(self.id)

    def replica_leaves(self) -> list[Step] | None:
        return [self]

    def run_on(self, m: Machine, replica: int) -> None:
        """A sync moves nothing: only its count (kept by the segment) is recorded."""

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        return replace(super().cost(model, record), ipus=None, syncs=self.external)


@dataclass
class CycleStampStep(Step):
    """Reads the simulated cycle counter (a sync, then the count) into a tensor of two 32-bit
    words on every replica: the cycles since load, or since the stamp ``since`` reads."""

    write: CopyPlan  # host buffer of two UNSIGNED_INTs -> the tensor
    since: CopyPlan | None  # the earlier stamp -> host buffer
    kind: ClassVar[str] = "Sync"

    def run(self, m: Machine) -> None:
        now = m.clock()

        def one(replica: int) -> None:
            count = now
            if self.since is not None:
                start = np.empty(2, np.uint32)
                m.world.gather(self.since, m.base, start, replica)
                count -= int(start[0]) | int(start[1]) << 32
            words = np.asarray([count & 0xFFFFFFFF, count >> 32 & 0xFFFFFFFF], np.uint32)
            m.world.scatter(self.write, words.ctypes.data, m.base, replica)

        m.on_replicas(one, every=True)  # every rank takes part in every replica's gather
        m.record.ran(self.id)

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

    def run(self, m: Machine) -> None:
        if not m.world.runs_alone():
            for s in self.steps:
                s.run(m)
            return
        failure: tuple[int, int, Exception] | None = None
        m.held = []
        try:
            for replica in m.world.replicas:
                for i, s in enumerate(self.steps):
                    if failure is not None and i > failure[0]:
                        break
                    m.held_at = (i, replica)
                    try:
                        s.run_on(m, replica)
                    except Exception as exc:  # raised once every replica has run (on every rank)
                        if failure is None or i < failure[0]:
                            failure = (i, replica, exc)
                        break
                    except BaseException as exc:  # Ctrl-C: the job ends
                        m.world.abort(exc)
        finally:
            held, m.held = m.held, None
            for *_, text in sorted(held):  # program order: step by step, each step replica by replica
                m.codelet_output(text)
        done = len(self.steps) if failure is None else failure[0]
        for s in self.steps[:done]:
            m.record.ran(s.id)
        m.world.agree(None if failure is None else failure[2], () if failure is None else failure[:2])


@dataclass
class SequenceStep(Step):
    steps: list[Step]

    def run(self, m: Machine) -> None:
        for s in self.runs:
            s.run(m)

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
class AbortStep(Step):
    """An Abort, or (given a predicate) an AbortOnCondition: raises ApplicationRuntimeError."""

    predicate: ScalarRef | None
    message: str

    def run(self, m: Machine) -> None:
        if self.predicate is None or self.predicate.read(m):
            why = "" if self.predicate is None else f" (predicate '{self.predicate.name}' is true)"
            raise ApplicationRuntimeError(f"{self.label}: the program aborted{why}"
                                          + (f": {self.message}" if self.message else ""))


@dataclass
class CallStep(Step):
    function: int

    def run(self, m: Machine) -> None:
        m.functions[self.function].run(m)
