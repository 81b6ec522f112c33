"""The cycle model's pieces that steps use: what a step costs, and what a run records.

Every leaf step is costed per tile in three phases (see :mod:`poplar_py.profile.report`):
sync, exchange (on-chip or host) and compute. Each step computes its own
:class:`StepCost` from a :class:`CostModel` (the target's figures) and from the
:class:`RunRecord` the engine fills while it runs (how often each step ran, the
compute cycles the kernels measured).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from ..compiler.exchange import TileTraffic
from ..compiler.replicas import Replication
from ..target import Target
from .fabric import Fabric


@dataclass(frozen=True)
class StepCost:
    kind: str  # "OnTileExecute", "DoExchange", "StreamCopy", "RemoteBufferCopy", "Sync"
    sync: np.ndarray  # cycles per tile
    exchange: np.ndarray  # on-chip exchange cycles per tile
    host: np.ndarray  # host exchange cycles per tile
    compute: np.ndarray  # cycles per tile, idle worker slots included
    compute_active: np.ndarray  # cycles per tile, only slots that did work
    global_exchange: int = 0  # cycles of the bytes crossing IPUs, every tile waiting
    streaming: int = 0  # cycles of a Streaming Memory transfer, every tile waiting
    ipus: np.ndarray | None = None  # the device's IPUs it involves (cycles/timeline.py); None: every one
    syncs: bool = False  # whether those IPUs synchronise before it
    prepare: int = 0  # cycles the host prepares a stream copy's data (StreamCopyBegin), every tile waiting

    @property
    def cycles(self) -> int:
        return int(self.sync.max(initial=0) + self.exchange.max(initial=0) + self.host.max(initial=0)
                   + self.compute.max(initial=0)) + self.global_exchange + self.streaming + self.prepare

    def waits(self) -> np.ndarray:
        """Cycles each tile waits at the step's barriers for slower tiles: the slowest tile's
        exchange and compute less its own."""
        return (self.exchange.max(initial=0) - self.exchange) + (self.compute.max(initial=0) - self.compute)


def _ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -(-a // b)


class CostModel:
    """The target's figures, as per-tile cycle counts of the phases of a step, over the device's
    tiles: its methods take the device's traffic (:meth:`device`)."""

    def __init__(self, target: Target, replication: Replication | None = None) -> None:
        self.target = target
        n = target.getNumTiles()
        self.replication = replication or Replication(1, n, target)
        self.replica_of_tile = np.arange(n) // (n // self.replication.factor)
        relative = np.arange(n) % target.getTilesPerIPU() // 32 if target.relativeSyncDelay \
            else np.zeros(n, dtype=np.int64)
        self.barrier = target.syncCycles + relative  # cycles of one sync, per tile
        self.zero = np.zeros(n, dtype=np.int64)
        self.fabric = Fabric(target) if target.getNumIPUs() > 1 else None
        self.every_ipu = np.arange(target.getNumIPUs())
        cal, clock = target.calibration, target.getTileClockFrequency()
        self.host_bytes_per_cycle = (target.hostExchangeBytesPerCycle if cal.host_bandwidth is None
                                     else cal.host_bandwidth / clock)
        self.prepare_bytes_per_cycle = (None if cal.host_prepare_bandwidth is None
                                        else cal.host_prepare_bandwidth / clock)
        self.host_barrier = self.barrier + round(cal.host_sync * clock)  # a stream copy's sync, per tile

    def device(self, traffic: TileTraffic) -> TileTraffic:
        """A step's traffic over the device: a replica's counts on every replica
        (:meth:`Replication.device_traffic`)."""
        return self.replication.device_traffic(traffic)

    def global_exchange(self, traffic: TileTraffic) -> int:
        """Cycles of the bytes that cross IPUs, over the IPU-Links (cycles/fabric.py)."""
        if self.fabric is None or traffic.ipu_bytes is None or not traffic.ipu_bytes.any():
            return 0
        return self.fabric.cycles(traffic.ipu_bytes)

    def sync(self, traffic: TileTraffic, syncs: int = 1) -> np.ndarray:
        """Barrier cycles per tile: ``syncs`` internal ones, and a global one when bytes cross IPUs."""
        return self.barrier * syncs + (self.target.globalSyncCycles if self.crossing(traffic) else 0)

    def exchange(self, traffic: TileTraffic) -> np.ndarray:
        """On-chip exchange cycles per tile."""
        busiest = np.maximum(traffic.bytes_in, traffic.bytes_out)
        return _ceil_div(busiest, self.target.getExchangeBytesPerCycle())

    def ipus(self, traffic: TileTraffic, compute: np.ndarray | None = None) -> np.ndarray:
        """The device's IPUs a step involves: those whose tiles move bytes or compute (every IPU
        when none does, as an empty compute set)."""
        t = self.target
        active = (traffic.bytes_in + traffic.bytes_out + traffic.bytes_local) > 0
        if compute is not None:
            active |= compute > 0
        involved = np.flatnonzero(active.reshape(t.getNumIPUs(), t.getTilesPerIPU()).any(axis=1))
        return involved if involved.size else self.every_ipu

    @staticmethod
    def crossing(traffic: TileTraffic) -> bool:
        """Whether bytes cross IPUs (the IPUs they join then synchronise)."""
        return traffic.ipu_bytes is not None and bool(traffic.ipu_bytes.any())

    def local(self, traffic: TileTraffic) -> np.ndarray:
        """Cycles of on-tile copies (memcpy) per tile."""
        return _ceil_div(traffic.bytes_local, self.target.getMemcpyBytesPerCycle())

    def streaming(self, traffic: TileTraffic) -> int:
        """Cycles of a Streaming Memory transfer: its latency, then the bytes that the IPUs of each
        IPU-Machine move, at the bandwidth those IPUs share; every tile waits for the slowest
        machine. Nothing moved costs nothing."""
        t = self.target
        moved = traffic.bytes_in + traffic.bytes_out
        if not moved.any():
            return 0
        per_ipu = moved.reshape(t.getNumIPUs(), t.getTilesPerIPU()).sum(axis=1)
        per_machine = np.bincount(np.arange(per_ipu.size) // t.getIPUsPerMachine(), weights=per_ipu)
        bytes_per_cycle = t.getStreamingMemoryBandwidth() / t.getTileClockFrequency()
        return t.getStreamingMemoryLatencyCycles() + int(np.ceil(per_machine.max() / bytes_per_cycle))

    def host_bytes(self, traffic: TileTraffic) -> int:
        """Bytes of the replica moving the most over its host link (each replica has its own)."""
        moved = np.bincount(self.replica_of_tile, weights=traffic.bytes_in + traffic.bytes_out)
        return int(moved.max(initial=0))

    def host(self, nbytes: int) -> np.ndarray:
        """Host exchange cycles of a transfer of ``nbytes`` (:meth:`host_bytes`): the whole
        transfer at the host link's rate, every tile waiting."""
        cycles = int(np.ceil(nbytes / self.host_bytes_per_cycle))
        return np.full(self.target.getNumTiles(), cycles, dtype=np.int64)

    def prepare(self, nbytes: int) -> int:
        """Cycles the host takes preparing a transfer's ``nbytes`` before they move (the
        hardware's StreamCopyBegin; none on the IPU Model)."""
        if self.prepare_bytes_per_cycle is None:
            return 0
        return int(np.ceil(nbytes / self.prepare_bytes_per_cycle))


@dataclass
class RunRecord:
    """What the engine records while it runs: enough to cost every step afterwards."""

    num_leaves: int
    counts: list[int] = field(default_factory=list)  # runs of each leaf step
    runs: list[int] = field(default_factory=list)  # programs run, in order
    compute_sums: dict[int, list] = field(default_factory=dict)  # Execute step -> [compute, active] summed
    # Execute step -> its runs on each replica at the fixed cost of a whole replica (per-tile arrays
    # for those would take steps x replicas x tiles)
    fixed_runs: dict[int, np.ndarray] = field(default_factory=dict)
    vertex_cycles: dict[str, list[int]] = field(default_factory=dict)  # vertex type -> [instances, cycles]
    trace: array = field(default_factory=lambda: array("i"))  # leaf steps as they ran (cycles/timeline.py)

    def __post_init__(self) -> None:
        self.counts = [0] * self.num_leaves

    def ran(self, step: int) -> None:
        """Leaf step ``step`` ran once more."""
        self.counts[step] += 1
        self.trace.append(step)

    def read_predicate(self, ipu: int) -> None:
        """Control flow read a predicate held on IPU ``ipu`` of each replica."""
        self.trace.append(-1 - ipu)

    def reset(self) -> None:
        self.counts = [0] * self.num_leaves
        self.trace = array("i")
        self.runs = []
        self.compute_sums = {}
        self.fixed_runs = {}
        self.vertex_cycles = {}
