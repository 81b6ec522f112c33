"""The processes one simulation runs on: this one alone, or K MPI ranks (DESIGN.md section 9).

Steps move data through a :class:`World`. The single-process world runs every plan as it is.
:class:`MpiWorld` (mpi4py, imported only when MPI launched the program) runs each rank's share
of a plan (:mod:`poplar_py.compiler.partition`, cut once per plan and kept): data crossing
ranks moves in one collective per exchange phase (``Alltoallv``), host reads gather with
``Allgatherv``, a predicate is broadcast from the rank holding it, and an error on any rank
is raised on every rank.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Protocol

import numpy as np

from ..errors import PoplarError
from ..regions import exclusive_cumsum
from .costs import RunRecord
from .exchange import CopyPlan, SharedGather
from .partition import (
    HostGather,
    HostScatter,
    RankBlocks,
    RankCopy,
    full_pieces,
    host_gather,
    host_scatter,
    rank_blocks,
    rank_copy,
    tile_copies,
)

#: environment variables by which MPI launchers (MPICH's Hydra, Open MPI, Slurm's srun) give
#: the number of ranks, and this process's rank
LAUNCH_SIZE = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS")
LAUNCH_RANK = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")


def _launch_value(names: tuple[str, ...], default: int) -> int:
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return default


def launched_ranks() -> int:
    """How many ranks an MPI launcher started (1 without one): read from the environment, so
    that a program run without mpiexec never imports mpi4py."""
    return _launch_value(LAUNCH_SIZE, 1)


def launched_rank() -> int:
    """This process's rank, as the MPI launcher gave it (0 without one)."""
    return _launch_value(LAUNCH_RANK, 0) if launched_ranks() > 1 else 0


#: the moves a plan makes: tile to tile, host to tiles, tiles to host
COPY, SCATTER, GATHER = "copy", "scatter", "gather"


class Restrictable(Protocol):
    """A compute set's runner, which can keep the vertices of some tiles only."""

    def restrict(self, own: np.ndarray) -> None: ...


class World:
    """One process holds every tile: each operation runs in place."""

    rank = 0
    size = 1

    def join(self, digest: Callable[[], str], runners: Iterable[Restrictable],
             moves: Iterable[tuple[str, Any]]) -> None:
        """Take up a compiled graph: check that every rank built the same (``digest``), keep
        each compute set's own vertices, and plan every move (``(COPY | SCATTER | GATHER,
        plan)``) over the ranks. One process has nothing to do."""

    def copy(self, plan: CopyPlan | SharedGather, base: int) -> None:
        """A tile-to-tile copy."""
        plan.execute(base, base)

    def scatter(self, plan: CopyPlan, host: int, base: int) -> None:
        """Host buffer to tiles."""
        plan.execute(host, base)

    def gather(self, plan: CopyPlan, base: int, host: int) -> None:
        """Tiles to a host buffer: every rank's buffer receives all of it."""
        plan.execute(base, host)

    def read_scalar(self, arena: np.ndarray, address: int, dtype: np.dtype) -> int | float:
        """One element of tile memory, the same on every rank."""
        return arena[address:address + dtype.itemsize].view(dtype)[0].item()

    def home(self, plan: CopyPlan) -> int:
        """The rank that calls the host end of a host-to-tiles stream copy."""
        return 0

    def share(self, fetch: Callable[[], np.ndarray], root: int, n: int, dtype: np.dtype) -> np.ndarray:
        """What ``fetch`` returns on rank ``root`` (``n`` elements of ``dtype``), on every rank;
        if it raises, every rank raises."""
        return fetch()

    def agree(self, error: Exception | None, order: tuple = ()) -> None:
        """Raise ``error`` (the first by ``order`` of any rank's) on every rank."""
        if error is not None:
            raise error

    def combine(self, partial: RunRecord, into: RunRecord) -> None:
        """Make ``into`` the record of every rank's tiles (``partial`` holds this rank's)."""

    def own_bytes(self, arena_size: int) -> tuple[int, int]:
        return 0, arena_size

    @property
    def traffic(self) -> int:
        """Bytes this rank sent to other ranks so far."""
        return 0


class MpiWorld(World):
    """Rank ``blocks.rank`` of ``comm``, holding the tiles ``blocks`` gives it."""

    def __init__(self, mpi: Any, blocks: RankBlocks) -> None:
        self.mpi, self.comm, self.blocks = mpi, mpi.COMM_WORLD, blocks
        self.rank, self.size = blocks.rank, blocks.size
        self._plans: dict[tuple[str, int], Any] = {}
        self._sent = 0
        self._cut_by = {COPY: lambda p: [rank_copy(c, blocks) for c in tile_copies(p)],
                        SCATTER: lambda p: host_scatter(p, blocks), GATHER: lambda p: host_gather(p, blocks)}

    def join(self, digest: Callable[[], str], runners: Iterable[Restrictable],
             moves: Iterable[tuple[str, Any]]) -> None:
        self._check_same(digest())
        own = self.blocks.own_tiles()
        for runner in runners:
            runner.restrict(own)
        for kind, plan in moves:
            self._share_of(kind, plan)

    def _share_of(self, kind: str, plan: Any) -> Any:
        """This rank's share of a plan, cut once (``join`` cuts every plan of the Engine)."""
        key = (kind, id(plan))
        cut = self._plans.get(key)
        if cut is None:
            cut = self._plans[key] = (plan, self._cut_by[kind](plan))  # plan kept alive: its id stays unique
        return cut[1]

    def copy(self, plan: CopyPlan | SharedGather, base: int) -> None:
        parts: list[RankCopy] = self._share_of(COPY, plan)
        for part in parts:
            if not part.crossing:
                part.local.execute(base, base)
                continue
            send = np.empty(int(part.send.sum()), np.uint8)
            receive = np.empty(int(part.receive.sum()), np.uint8)
            part.pack.execute(base, send.ctypes.data)
            self.comm.Alltoallv(self._spec(send, part.send), self._spec(receive, part.receive))
            self._sent += send.size
            part.local.execute(base, base)
            part.unpack.execute(receive.ctypes.data, base)

    def _spec(self, buffer: np.ndarray, counts: np.ndarray) -> list:
        return [buffer, (counts.tolist(), exclusive_cumsum(counts).tolist()), self.mpi.BYTE]

    def scatter(self, plan: CopyPlan, host: int, base: int) -> None:
        part: HostScatter = self._share_of(SCATTER, plan)
        part.own.execute(host, base)

    def gather(self, plan: CopyPlan, base: int, host: int) -> None:
        part: HostGather = self._share_of(GATHER, plan)
        mine = np.empty(part.pack.nbytes, np.uint8)
        part.pack.execute(base, mine.ctypes.data)
        every = np.empty(int(part.counts.sum()), np.uint8)
        self.comm.Allgatherv(mine, self._spec(every, part.counts))
        part.unpack.execute(every.ctypes.data, host)

    def read_scalar(self, arena: np.ndarray, address: int, dtype: np.dtype) -> int | float:
        value = np.zeros(1, dtype)
        owner = int(self.blocks.rank_of(np.asarray([address]))[0])
        if owner == self.rank:
            value[0] = arena[address:address + dtype.itemsize].view(dtype)[0]
        self.comm.Bcast(value.view(np.uint8), root=owner)
        return value[0].item()

    def home(self, plan: CopyPlan) -> int:
        pieces = full_pieces(plan)
        return int(self.blocks.rank_of(pieces[:1, 1])[0]) if pieces.shape[0] else 0

    def share(self, fetch: Callable[[], np.ndarray], root: int, n: int, dtype: np.dtype) -> np.ndarray:
        out, error = np.empty(n, dtype), None
        if self.rank == root:
            try:
                out = np.ascontiguousarray(fetch(), dtype)
            except Exception as exc:  # a host callback's error: raised on every rank
                error = exc
        self.agree(error)
        self.comm.Bcast(out.view(np.uint8), root=root)
        return out

    def agree(self, error: Exception | None, order: tuple = ()) -> None:
        failed = np.asarray([error is not None], np.int32)
        self.comm.Allreduce(self.mpi.IN_PLACE, failed, op=self.mpi.MAX)
        if not failed[0]:
            return
        errors = self.comm.allgather(None if error is None else (order, self.rank, error))
        raise min(e for e in errors if e is not None)[2]

    def combine(self, partial: RunRecord, into: RunRecord) -> None:
        into.counts, into.runs = list(partial.counts), list(partial.runs)
        into.compute_sums, into.vertex_cycles = {}, {}
        for sums, cycles in self.comm.allgather((partial.compute_sums, partial.vertex_cycles)):
            for step, pair in sums.items():
                total = into.compute_sums.setdefault(step, [0, 0])
                into.compute_sums[step] = [total[0] + pair[0], total[1] + pair[1]]
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


def make_world(ipus: int, tiles_per_ipu: int, tile_base: np.ndarray) -> World:
    """This process's world: MpiWorld when an MPI launcher started several ranks."""
    if launched_ranks() == 1:
        return World()
    try:
        from mpi4py import MPI  # the optional dependency: imported only when MPI launched the program
    except ImportError:
        raise PoplarError("this program was launched by MPI, but mpi4py is not installed: "
                          "pip install 'poplar-py[mpi]'") from None
    comm = MPI.COMM_WORLD
    _abort_on_uncaught(comm)
    return MpiWorld(MPI, rank_blocks(comm.Get_rank(), comm.Get_size(), ipus, tiles_per_ipu, tile_base))


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
        sys.stderr.flush()
        comm.Abort(1)

    hook.aborts_mpi = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def ir_digest(parts: list[Any]) -> str:
    """A hash of what the ranks must agree on (arrays by their bytes, the rest by repr)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(np.ascontiguousarray(p).tobytes() if isinstance(p, np.ndarray) else repr(p).encode())
    return h.hexdigest()
