"""The running device a compiled program's steps run on: tile memories, vertex state, host
stream ends, Streaming Memory, the run record and the processes that run it."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

import numpy as np

from ..codelet.codelet_compiler import NO_BUDGET
from ..compiler.steps import Step
from ..cycles.costs import RunRecord
from ..streams import HostStream
from .fp_state import FpControl
from .mpi_world import World
from .streaming_memory import StreamingMemory

if TYPE_CHECKING:  # (compute_sets runs on a Machine)
    from .compute_sets import KernelRun


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
    #: per vertex class of a compute set (by the id of its group): its kernel's buffers here
    kernel_runs: dict[int, KernelRun] = field(default_factory=dict)

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
