"""The processes one simulation runs on: this one alone, or K MPI ranks (docs/replication.md).

Steps move data through a :class:`World`. The single-process world runs every plan as it is.
:class:`MpiWorld` (mpi4py, imported only when MPI launched the program) runs each rank's share
of a plan (:mod:`poplar_py.compiler.partition`, cut once per plan and kept): data crossing
ranks moves in one collective per exchange phase (``Alltoallv``), host reads gather with
``Allgatherv``, a predicate is broadcast from the rank holding it, and an error on any rank
is raised on every rank.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

import numpy as np

from ..compiler.compute_set_tables import ComputeSetTables
from ..compiler.exchange import CopyPlan, SharedGather
from ..compiler.partition import (
    COPY,
    GATHER,
    SCATTER,
    HostGather,
    HostScatter,
    Move,
    RankBlocks,
    RankCopy,
    full_pieces,
    host_gather,
    host_scatter,
    launched_ranks,
    rank_blocks,
    rank_copy,
    tile_copies,
)
from ..compiler.replicas import Replication
from ..cycles.costs import RunRecord
from ..errors import PoplarError
from ..regions.arrays import exclusive_cumsum
from .copies import execute

#: how long a rank waits between writing why it ends the job and MPI_Abort: the launcher forwards
#: the ranks' output on its own time, and an abort at once can drop the message
ABORT_GRACE_SECONDS = 0.3


class World:
    """One process holds every tile of every replica: each operation runs in place. A replica's
    plan runs on replica ``r``'s memories, ``r * replication.stride`` bytes into the arena."""

    rank = 0
    size = 1

    def __init__(self, replication: Replication | None = None) -> None:
        self.replica_count = 1 if replication is None else replication.factor
        self.stride = 0 if replication is None else replication.stride
        self.replicas: list[int] = list(range(self.replica_count))  # the replicas this process runs

    def join(self, digest: Callable[[], str], compute_sets: Iterable[ComputeSetTables],
             moves: Iterable[Move]) -> None:
        """Take up a compiled graph: check that every rank built the same (``digest``), keep
        each compute set's own vertices, and plan every move over the ranks. One process has
        nothing to do."""

    def offset(self, replica: int | None) -> int:
        """Where a replica's memories start in the arena (None: a plan over the device)."""
        return 0 if replica is None else replica * self.stride

    def runs_alone(self) -> bool:
        """Whether this process holds every replica it runs whole, so that a step on one
        replica's memories involves no other process."""
        return True

    def copy(self, plan: CopyPlan | SharedGather, base: int, replica: int | None, src: int | None = None,
             dst: int | None = None) -> None:
        """A tile-to-tile copy on ``replica``'s memories (None: a plan over the device); ``src`` or
        ``dst``: where the memories its source or destination addresses are in start instead
        (the exchange buffers a whole replica uses)."""
        at = base + self.offset(replica)
        execute(plan, at if src is None else src, at if dst is None else dst)

    def cross_copy(self, plan: CopyPlan, base: int, pairs: tuple[tuple[int, int], ...]) -> None:
        """Run ``plan`` from each pair's source replica's memories to its destination's (the
        pairs a permutation), as one copy: a plan that writes what it reads is staged, so that
        every source is read before any destination is written."""
        if not plan.staged:
            for s, d in pairs:
                execute(plan, base + self.offset(s), base + self.offset(d))
            return
        temp = self._packed(plan, base, [s for s, _ in pairs])
        self._unpacked(plan, base, temp, [d for _, d in pairs])

    def _packed(self, plan: CopyPlan, base: int, replicas: list[int]) -> np.ndarray:
        """The source pieces of ``plan`` on each of these replicas, packed back to back."""
        pack, n = plan.staging[0], plan.nbytes
        packed = np.empty(len(replicas) * n, np.uint8)
        for k, r in enumerate(replicas):
            execute(pack, base + self.offset(r), packed.ctypes.data + k * n)
        return packed

    def _unpacked(self, plan: CopyPlan, base: int, packed: np.ndarray, replicas: list[int]) -> None:
        """What :meth:`_packed` packed, written to the destination pieces of ``plan`` on each of
        these replicas in turn."""
        unpack, n = plan.staging[1], plan.nbytes
        for k, r in enumerate(replicas):
            execute(unpack, packed.ctypes.data + k * n, base + self.offset(r))

    def scatter(self, plan: CopyPlan, host: int, base: int, replica: int) -> None:
        """Host buffer to ``replica``'s tiles."""
        execute(plan, host, base + self.offset(replica))

    def gather(self, plan: CopyPlan, base: int, out: np.ndarray, replica: int) -> None:
        """``replica``'s tiles to a host buffer: every rank's buffer receives all of it."""
        if self.holds(replica):
            self.gather_local(plan, base, out, replica)
        self.from_holders(replica, out)

    def holds(self, replica: int) -> bool:
        """Whether this process takes part in running ``replica`` (and holds its Streaming Memory)."""
        return replica in self.replicas

    def gather_local(self, plan: CopyPlan, base: int, out: np.ndarray, replica: int) -> None:
        """``replica``'s tiles to a host buffer, on the processes that take part in ``replica``
        only (each of them receives all of it)."""
        execute(plan, base + self.offset(replica), out.ctypes.data)

    def from_holders(self, replica: int, out: np.ndarray) -> None:
        """``out`` on every process as the processes taking part in ``replica`` filled it."""

    def read_scalar(self, arena: np.ndarray, address: int, dtype: np.dtype) -> int | float:
        """One element of tile memory, the same on every rank."""
        return arena[address:address + dtype.itemsize].view(dtype)[0].item()

    def share(self, fetch: Callable[[], np.ndarray], plan: CopyPlan, replica: int | None, n: int,
              dtype: np.dtype) -> tuple[np.ndarray, bool]:
        """The host data of a transfer ``plan`` makes to ``replica`` (None: to every replica), on
        each rank that writes it, and whether ``fetch`` ran here: it runs on one rank, the one
        holding the replica (or its first destination); if it raises, every rank raises."""
        return fetch(), True

    def agree(self, error: Exception | None, order: tuple = ()) -> None:
        """Raise ``error`` (the first by ``order`` of any rank's) on every rank."""
        if error is not None:
            raise error

    def abort(self, exc: BaseException) -> None:
        """End the run for an exit or interrupt raised in host code (under MPI: the whole job)."""
        raise exc

    def combine(self, partial: RunRecord, into: RunRecord) -> None:
        """Make ``into`` the record of every rank's tiles (``partial`` holds this rank's)."""

    def own_bytes(self, arena_size: int) -> tuple[int, int]:
        return 0, arena_size

    @property
    def traffic(self) -> int:
        """Bytes this rank sent to other ranks so far."""
        return 0


class MpiWorld(World):
    """Rank ``blocks.rank`` of ``comm``, holding the device tiles ``blocks`` gives it: whole
    replicas, which it runs alone, and parts of replicas that several ranks hold, whose plans
    are cut by rank (every rank takes part in those, in replica order)."""

    def __init__(self, mpi: Any, blocks: RankBlocks, replication: Replication) -> None:
        super().__init__(replication)
        self.mpi, self.comm, self.blocks = mpi, mpi.COMM_WORLD, blocks
        self.rank, self.size = blocks.rank, blocks.size
        self.tiles = replication.tiles
        ranks = blocks.tile_ranks().reshape(self.replica_count, self.tiles)
        whole = (ranks == ranks[:, :1]).all(axis=1)
        self.owner = np.where(whole, ranks[:, 0], -1)  # the rank holding each whole replica, or -1
        self.replicas = [r for r in range(self.replica_count) if self.owner[r] in (self.rank, -1)]
        self._plans: dict[tuple[str, int, int | None], Any] = {}
        self._sent = 0
        self._cut_by = {COPY: lambda p, at: [rank_copy(c, blocks, at) for c in tile_copies(p)],
                        SCATTER: lambda p, at: host_scatter(p, blocks, at),
                        GATHER: lambda p, at: host_gather(p, blocks, at)}

    def _split(self) -> list[int]:
        return [r for r in range(self.replica_count) if self.owner[r] < 0]

    def join(self, digest: Callable[[], str], compute_sets: Iterable[ComputeSetTables],
             moves: Iterable[Move]) -> None:
        self._check_same(digest())
        split = self._split()
        own = self.blocks.own_tiles().reshape(self.replica_count, self.tiles)
        for tables in compute_sets:
            for r in split:
                tables.share(r, own[r])
        for kind, plan, replicated in moves:
            for r in split if replicated else [None]:
                self._share_of(kind, plan, r)

    def _share_of(self, kind: str, plan: Any, replica: int | None) -> Any:
        """This rank's share of a plan run on a replica (None: over the device), cut once
        (``join`` cuts every plan of the Engine)."""
        key = (kind, id(plan), replica)
        cut = self._plans.get(key)
        if cut is None:  # the plan is kept alive: its id stays unique
            cut = self._plans[key] = (plan, self._cut_by[kind](plan, self.offset(replica)))
        return cut[1]

    def _whole(self, replica: int | None) -> bool:
        return replica is not None and self.owner[replica] >= 0

    def runs_alone(self) -> bool:
        return all(self.owner[r] == self.rank for r in self.replicas)

    def copy(self, plan: CopyPlan | SharedGather, base: int, replica: int | None, src: int | None = None,
             dst: int | None = None) -> None:
        if self._whole(replica):
            super().copy(plan, base, replica, src, dst)
            return
        # a replica split over ranks keeps its own exchange buffers: src and dst are its memories
        parts: list[RankCopy] = self._share_of(COPY, plan, replica)
        for part in parts:
            if not part.crossing:
                execute(part.local, base, base)
                continue
            send = np.empty(int(part.send.sum()), np.uint8)
            receive = np.empty(int(part.receive.sum()), np.uint8)
            execute(part.pack, base, send.ctypes.data)
            self.comm.Alltoallv(self._spec(send, part.send), self._spec(receive, part.receive))
            self._sent += send.size
            execute(part.local, base, base)
            execute(part.unpack, receive.ctypes.data, base)

    def cross_copy(self, plan: CopyPlan, base: int, pairs: tuple[tuple[int, int], ...]) -> None:
        """Between whole replicas: each rank copies between the replicas it holds, packs what
        goes to another rank's and unpacks what comes to its own (one ``Alltoallv``, on every
        rank). With replicas split over ranks: the pairs as one plan over the device, cut by rank."""
        if (self.owner < 0).any():
            key = ("cross", id(plan), None)
            if key not in self._plans:  # the one-replica plan is kept alive: its id stays unique
                offsets = np.asarray([(self.offset(s), self.offset(d)) for s, d in pairs], np.int64)
                self._plans[key] = (plan, plan.across(offsets))
            self.copy(self._plans[key][1], base, None)
            return
        owner, me = self.owner, self.rank
        local = tuple((s, d) for s, d in pairs if owner[s] == me and owner[d] == me)
        if all(owner[s] == owner[d] for s, d in pairs):
            super().cross_copy(plan, base, local)
            return
        out = sorted((int(owner[d]), s, d) for s, d in pairs if owner[s] == me and owner[d] != me)
        into = sorted((int(owner[s]), s, d) for s, d in pairs if owner[d] == me and owner[s] != me)
        n = plan.nbytes
        send = self._packed(plan, base, [s for _, s, _ in out])
        receive = np.empty(len(into) * n, np.uint8)
        if plan.staged:  # every source is read before anything is written
            staged = self._packed(plan, base, [s for s, _ in local])
        sends = np.bincount([r for r, _, _ in out], minlength=self.size) * n
        receives = np.bincount([r for r, _, _ in into], minlength=self.size) * n
        self.comm.Alltoallv(self._spec(send, sends), self._spec(receive, receives))
        self._sent += send.size
        if plan.staged:
            self._unpacked(plan, base, staged, [d for _, d in local])
        else:
            super().cross_copy(plan, base, local)
        self._unpacked(plan, base, receive, [d for _, _, d in into])

    def _spec(self, buffer: np.ndarray, counts: np.ndarray) -> list:
        return [buffer, (counts.tolist(), exclusive_cumsum(counts).tolist()), self.mpi.BYTE]

    def scatter(self, plan: CopyPlan, host: int, base: int, replica: int) -> None:
        if self._whole(replica):
            if self.owner[replica] == self.rank:
                super().scatter(plan, host, base, replica)
            return
        part: HostScatter = self._share_of(SCATTER, plan, replica)
        execute(part.own, host, base)

    def gather_local(self, plan: CopyPlan, base: int, out: np.ndarray, replica: int) -> None:
        if self._whole(replica):  # its owner alone
            super().gather_local(plan, base, out, replica)
            return
        part: HostGather = self._share_of(GATHER, plan, replica)
        mine = np.empty(part.pack.nbytes, np.uint8)
        execute(part.pack, base, mine.ctypes.data)
        every = np.empty(int(part.counts.sum()), np.uint8)
        self.comm.Allgatherv(mine, self._spec(every, part.counts))
        execute(part.unpack, every.ctypes.data, out.ctypes.data)

    def from_holders(self, replica: int, out: np.ndarray) -> None:
        if self._whole(replica):  # (a replica split over ranks is held by every rank)
            self.comm.Bcast(out.reshape(-1).view(np.uint8), root=int(self.owner[replica]))

    def read_scalar(self, arena: np.ndarray, address: int, dtype: np.dtype) -> int | float:
        value = np.zeros(1, dtype)
        owner = int(self.blocks.rank_of(np.asarray([address]))[0])
        if owner == self.rank:
            value[0] = arena[address:address + dtype.itemsize].view(dtype)[0]
        self.comm.Bcast(value.view(np.uint8), root=owner)
        return value[0].item()

    def share(self, fetch: Callable[[], np.ndarray], plan: CopyPlan, replica: int | None, n: int,
              dtype: np.dtype) -> tuple[np.ndarray, bool]:
        if self._whole(replica):  # only its rank writes it
            return fetch(), True
        pieces = full_pieces(plan, dst_shift=self.offset(replica or 0))
        root = int(self.blocks.rank_of(pieces[:1, 1])[0]) if pieces.shape[0] else 0
        out, error = np.empty(n, dtype), None
        if self.rank == root:
            try:
                out = np.ascontiguousarray(fetch(), dtype)
            except Exception as exc:  # a host callback's error: raised on every rank
                error = exc
        self.agree(error)
        self.comm.Bcast(out.view(np.uint8), root=root)
        return out, self.rank == root

    def agree(self, error: Exception | None, order: tuple = ()) -> None:
        failed = np.asarray([error is not None], np.int32)
        self.comm.Allreduce(self.mpi.IN_PLACE, failed, op=self.mpi.MAX)
        if not failed[0]:
            return
        errors = self.comm.allgather(None if error is None else (order, self.rank, error))
        _, rank, first = min((e for e in errors if e is not None), key=lambda e: e[:2])
        if hasattr(first, "add_note"):  # Python 3.11+: the traceback names the failing rank
            first.add_note(f"(raised on MPI rank {rank} of {self.size}, and so on every rank)")
        raise first

    def abort(self, exc: BaseException) -> None:
        code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 1
        _end_job(self.comm, self.rank, exc, code)

    def combine(self, partial: RunRecord, into: RunRecord) -> None:
        into.counts, into.runs, into.trace = list(partial.counts), list(partial.runs), partial.trace
        into.compute_sums, into.fixed_runs, into.vertex_cycles = {}, {}, {}
        parts = (partial.compute_sums, partial.fixed_runs, partial.vertex_cycles)
        for sums, fixed, cycles in self.comm.allgather(parts):
            for step, pair in sums.items():
                total = into.compute_sums.setdefault(step, [0, 0])
                into.compute_sums[step] = [total[0] + pair[0], total[1] + pair[1]]
            for step, runs in fixed.items():
                into.fixed_runs[step] = into.fixed_runs.get(step, 0) + runs
            for name, (count, cyc) in cycles.items():
                entry = into.vertex_cycles.setdefault(name, [0, 0])
                entry[0] += count
                entry[1] += cyc

    def own_bytes(self, arena_size: int) -> tuple[int, int]:
        return self.blocks.own_bytes()

    @property
    def traffic(self) -> int:
        return self._sent

    def _check_same(self, digest: str) -> None:
        """Every rank built the same graph and programs, or every rank raises."""
        digests = self.comm.allgather(digest)
        differ = [r for r, d in enumerate(digests) if d != digests[0]]
        if differ:
            raise PoplarError(f"MPI ranks {differ} built a different graph or programs than rank 0 "
                              f"(frozen IR hash {digests[differ[0]][:12]} against {digests[0][:12]}): "
                              "every rank must build the same graph")


def make_world(replication: Replication, tile_base: np.ndarray) -> World:
    """This process's world: MpiWorld when an MPI launcher started several ranks (``tile_base``:
    one replica's tiles' first arena bytes, and the end)."""
    if launched_ranks() == 1:
        return World(replication)
    try:
        from mpi4py import MPI  # the optional dependency: imported only when MPI launched the program
    except ImportError:
        raise PoplarError("this program was launched by MPI, but mpi4py is not installed: "
                          "pip install 'poplar-py[mpi]'") from None
    comm = MPI.COMM_WORLD
    _abort_on_uncaught(comm)
    device = replication.device
    blocks = rank_blocks(comm.Get_rank(), comm.Get_size(), device.getNumIPUs(), device.getTilesPerIPU(),
                         replication.device_tile_base(tile_base))
    return MpiWorld(MPI, blocks, replication)


def abort_every_rank_on_uncaught() -> None:
    """Under an MPI launch, install the hook that ends every rank on an uncaught exception.
    ``import poplar_py`` calls it, so that an error before the first Engine (while the other
    ranks wait in MPI start-up inside ``Engine()``) ends the job too. Without mpi4py there is
    nothing to abort with: the first Engine then reports it missing, on every rank."""
    if launched_ranks() == 1:
        return
    try:
        from mpi4py import MPI  # the optional dependency, as in make_world
    except ImportError:
        return
    _abort_on_uncaught(MPI.COMM_WORLD)


def _abort_on_uncaught(comm: Any) -> None:
    """An exception no rank catches (or Ctrl-C) ends every rank, rather than leaving the others
    waiting in a collective."""
    previous = sys.excepthook
    if getattr(previous, "aborts_mpi", False):
        return

    def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        previous(kind, value, tb)
        _end_job(comm, comm.Get_rank(), value, 1)

    hook.aborts_mpi = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def _end_job(comm: Any, rank: int, exc: BaseException, code: int) -> None:
    """Say which rank ends the job and why, give the launcher time to forward it (MPI_Abort's own
    message can be lost as the launcher stops the job), then MPI_Abort."""
    print(f"poplar-py: MPI rank {rank} ended the job: {type(exc).__name__}({exc})", file=sys.stderr,
          flush=True)
    time.sleep(ABORT_GRACE_SECONDS)
    comm.Abort(code)
