"""Engine: compile a graph and its programs, load them onto a device and run them.

Building an Engine freezes the graph into the IR and runs the compiler passes once
(tile mapping, memory layout, exchange and compute-set planning, program lowering).
``load`` creates the tile memories and writes constants and initial values. ``run(i)``
runs program ``i``'s steps: each copy moves bytes between tile memories along its
precomputed plan, each compute set runs its vertices' compiled kernels, stream copies
move data between host arrays and tile memory. State persists between runs.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Mapping
from typing import IO, Any

import numpy as np

from .checks.arguments import checked_file, checked_str, is_int
from .codelet.codelet_compiler import NO_BUDGET
from .codelet.interrupts import interruptible
from .compiler.graph_compiler import CompiledGraph, HostTransfer
from .compiler.steps import HostFunctionStep
from .csr_functions import initial_word
from .cycles.costs import RunRecord
from .debug import debug_name
from .errors import (
    GraphReplicationError,
    InvalidArgumentError,
    InvalidOptionError,
    PoplarError,
    ProgramError,
    RemoteBufferError,
    StreamArgumentError,
    StreamError,
)
from .executable import Executable, checked_progress, compileGraph
from .graph import Graph
from .handles import DataStream
from .options import EngineOptions, parseEngineOptions
from .profile.report import Profile, summary
from .profile.report_files import keep_report, report_path
from .random_seed import HW_SEEDS_HANDLE, initialHwSeeds
from .runtime.copies import execute
from .runtime.execution_profiling import ExecutionProfiling
from .runtime.fp_state import FpControl
from .runtime.host_buffers import host_values, read_into, stream_array
from .runtime.host_memory import release_freed_heap
from .runtime.machine import Machine
from .runtime.mpi_world import make_world
from .runtime.rank_agreement import compiled_digest, compiled_moves
from .runtime.step_runners import run
from .runtime.streaming_memory import StreamingMemory, checked_row, row_array
from .streams import ArrayStream, CallbackStream, FunctionStream, HostStream, StreamCallback
from .target import Device


class Engine:
    """Compiles ``graph`` with ``programs`` (one program or a list) for running on a device,
    or takes an :class:`~poplar_py.Executable` compiled ahead of time: ``Engine(exe, options)``.

    ``options`` is a dict of Poplar-style string flags; POPLAR_ENGINE_OPTIONS (JSON)
    adds to them. Unknown options raise InvalidOptionError. With an executable, the options
    that shaped the compiled code (``COMPILE_OPTIONS``) are the executable's.
    ``Engine(graph, programs, options, progressCallback, debugContext)`` as Poplar's: the callback
    is told the compiler passes' progress (see :func:`~poplar_py.compileGraph`), the debug
    context's name (or ``name``) names the engine's reports.
    """

    def __init__(self, graph: Graph | Executable, programs: Any = None,
                 options: Mapping[str, Any] | None = None,
                 progressCallback: Callable[[int, int], object] | None = None,
                 debugContext: object = "", name: str = "") -> None:
        checked_progress(progressCallback, "Engine")
        if isinstance(graph, Executable):
            if progressCallback is not None:
                raise InvalidArgumentError("Engine(executable): an executable is compiled already: "
                                           "give progressCallback to compileGraph")
            exe = graph
            self._options = _runtime_options(exe.options, programs if options is None else options)
        elif isinstance(graph, Graph):
            if programs is None:
                raise ProgramError("Engine(graph, programs): no programs given")
            exe = compileGraph(graph, programs, options, progressCallback)
            self._options = exe.options
        else:
            raise InvalidArgumentError(f"Engine needs a Graph or an Executable, got {type(graph).__name__} "
                                       f"{graph!r:.40}")
        name = debug_name(name, "Engine: the name") or debug_name(debugContext, "Engine: debugContext")
        path = report_path(self._options, name)
        self._exe: CompiledGraph = exe.take()
        self.name = name
        arena, shared = self._exe.layout.arena, self._exe.layout.shared
        assert arena is not None and shared is not None and self._exe.layout.tile_base is not None
        world = make_world(self._exe.replication, self._exe.layout.tile_base)
        world.join(functools.partial(compiled_digest, exe.ir, self._exe), self._exe.lowered.tables,
                   compiled_moves(self._exe))
        leaves = len(self._exe.lowered.leaves)
        self._machine = Machine(arena, shared, RunRecord(leaves), self._exe.lowered.functions, world,
                                remote=StreamingMemory(self._exe.remote_buffers))
        o = self._options
        self._machine.fp = FpControl.make(world.replica_count, self._exe.replication.tiles, initial_word(
            o.flag("debug.floatPointOpException"), o.flag("debug.divideByZeroException"),
            o.flag("debug.nanOverflowException")))
        # the profile's record: every rank's tiles (this rank's alone are in the machine's)
        self._record = self._machine.record if world.size == 1 else RunRecord(leaves)
        self._loaded = False
        self._device: Device | None = None  # the device loaded, or prepared
        self._profile = Profile(exe.ir.compiled(), self._exe, self._record)
        del exe  # built here from a graph, it goes with the frozen IR's edges
        release_freed_heap()
        self._profiling = ExecutionProfiling(self._machine.record, self._record,
                                             _clock(self._machine, self._record, self._profile))
        self._machine.clock = self._profiling.clock
        self._machine.cycle_budget = min(self._options.integer("codelets.cycleBudget"), NO_BUDGET)
        # Ctrl-C stops checked kernels (the others never look): a run of some is interruptible
        checked = self._options["codelets.mode"] == "native" and self._options.flag("codelets.checkBounds")
        self._interruptible = interruptible if checked and self._exe.lowered.tables else _UNINTERRUPTIBLE
        if path is not None and world.rank == 0:
            # The report is written now (compilation) and again when the engine goes away or
            # the program exits, with everything that ran (under MPI, by rank 0).
            keep_report(self, self._profile, path)

    # ---- loading and running -----------------------------------------------------------------
    def load(self, device: Device) -> None:
        """Create the tile memories on ``device`` and write constants and initial values (vertex
        state too: what compute wrote to it in earlier runs is reset)."""
        self._take(device, "Engine.load")
        self.deploy()

    def prepare(self, device: Device) -> None:
        """The first half of ``load``, as Poplar's: check ``device`` fits the compiled graph and
        take it; ``deploy()`` then loads it."""
        self._take(device, "Engine.prepare")

    def _take(self, device: Device, what: str) -> None:
        if not isinstance(device, Device):
            raise InvalidArgumentError(f"{what} needs a Device, got {type(device).__name__} {device!r:.40}")
        target = device.getTarget()
        ours = self._exe.target
        if target.getNumTiles() != ours.getNumTiles():
            raise PoplarError(f"{what}: the graph was built for {ours.getNumTiles()} "
                              f"tiles but the device has {target.getNumTiles()}")
        self._device = device

    def deploy(self) -> None:
        """The second half of ``load``: the prepared device's tile memories made and written."""
        if self._device is None:
            raise PoplarError("Engine.deploy: no device is prepared: call engine.prepare(device) first")
        m, exe = self._machine, self._exe
        # Under MPI, the other ranks' tiles are never touched: they take no memory here.
        exe.layout.clear(*m.world.own_bytes(m.arena.size))
        for r in m.world.replicas:
            for values, plan in exe.initial_values:
                m.world.scatter(plan, values.ctypes.data, m.base, r)
            if exe.index_constants is not None:
                index = np.full(len(exe.replication.index_constants), r, np.uint32)
                m.world.scatter(exe.index_constants, index.ctypes.data, m.base, r)
            for tables in exe.lowered.tables:  # vertex state compute writes: each replica its own
                state = tables.tile_state
                if state.plan is not None:
                    m.world.scatter(state.plan, state.data.ctypes.data, m.base, r)
        for tables in exe.lowered.tables:  # list tables and state vectors: once, for every replica
            image = tables.image
            if image.plan is not None:
                execute(image.plan, image.data.ctypes.data, m.shared.ctypes.data)
        self._loaded = True
        m.fp.reset()  # the tiles' floating-point control registers (csr_functions)
        seeds = self._exe.host_transfers.get(HW_SEEDS_HANDLE)
        if seeds is not None:  # the tiles' random generators start from the engine's seed
            seed = int(self._options["random.seed"])
            self.writeTensor(HW_SEEDS_HANDLE, initialHwSeeds(seed, *seeds.shape[:2]))

    def loadAndRun(self, device: Device, programIndex: int = 0) -> None:
        self.load(device)
        self.run(programIndex)

    def getDevice(self) -> Device:
        """The device the engine is loaded on (or prepared for)."""
        if self._device is None:
            raise PoplarError("Engine.getDevice: the engine is not loaded: call engine.load(device) first")
        return self._device

    def getTileClockFrequency(self) -> float:
        """The tiles' clock (Hz) the engine's cycles are counted at."""
        return self._exe.target.getTileClockFrequency()

    def _base(self) -> int:
        if not self._loaded:
            raise PoplarError("the engine is not loaded: call engine.load(device) first")
        return self._machine.base

    def run(self, programIndex: int = 0, debugName: str = "") -> None:
        """Run program ``programIndex`` to completion on the simulated tiles."""
        if not is_int(programIndex):
            raise InvalidArgumentError(f"Engine.run: the program index must be an integer, got "
                                       f"{type(programIndex).__name__} {programIndex!r:.40}")
        self._base()
        programs = self._exe.lowered.programs
        if not 0 <= programIndex < len(programs):
            raise ProgramError(f"Engine.run: program {programIndex} does not exist "
                               f"(the engine has {len(programs)})")
        m = self._machine
        with self._profiling.run():
            m.record.runs.append(programIndex)
            with self._interruptible:
                run(programs[programIndex], m)
            m.world.combine(m.record, self._record)  # (not after a failure: a rank alone may have failed)

    # ---- streams -----------------------------------------------------------------------------
    def connectStream(self, handle: str | DataStream, buffer: Any, end: Any = None,
                      replicaIndex: Any = None) -> None:
        """Connect a FIFO (its handle, or the DataStream the graph returned) to a host numpy array,
        used as a circular buffer: each copy takes (or fills) the next ``numElements`` elements,
        wrapping at the end. The array may have another element type of the same size (``np.uint16``
        for HALF), whose bytes are used, as C++'s ``void*``. ``end`` (an int), as Poplar's end
        pointer, uses only the first ``end`` elements of the flattened array.

        In a replicated graph, ``replicaIndex=r`` connects replica r's stream; without it the
        array is every replica's host end (each replica at its own position in it): every replica
        reads it, or, for a device-to-host stream, every replica writes into it in replica order,
        so it keeps the last replica's data (the hardware defines no order: a program connects one
        array to all replicas when they send the same data). A ``BROADCAST`` stream has one host
        end for all replicas and takes no replica index. Poplar's order
        ``connectStream(handle, replicaIndex, buffer[, end])`` is taken too."""
        if is_int(buffer) and isinstance(end, np.ndarray):  # (handle, replicaIndex, buffer[, end])
            buffer, end, replicaIndex = end, replicaIndex, buffer
        stream = self._stream_decl(handle)
        handle = stream.handle()
        replicas = self._replicas_of(stream, replicaIndex, "connectStream")
        flat = stream_array(buffer, stream.elementType().dtype, f"stream '{handle}'")
        if not stream.toDevice and not buffer.flags.writeable:
            raise StreamError(f"stream '{handle}' writes to the host: the array must be writeable")
        if end is not None:
            if not is_int(end) or not 0 <= end <= flat.size:
                raise StreamError(f"stream '{handle}': end must be an element count in [0, {flat.size}], "
                                  f"got {end!r:.40}")
            flat = flat[:end]
        if flat.size == 0 and stream.numElements():
            raise StreamError(f"stream '{handle}': the host array is empty")
        self._connect(stream, {r: ArrayStream(flat) for r in replicas})

    def connectStreamToCallback(self, handle: str | DataStream,
                                callback: StreamCallback | Callable[[np.ndarray], Any],
                                replicaIndex: Any = None) -> None:
        """Connect a FIFO to a :class:`~poplar_py.StreamCallback` (Poplar's fetch, prefetch,
        complete and invalidatePrefetched; see :mod:`poplar_py.streams`), or to a function called
        with each transfer's buffer, which it fills (host-to-device) or reads. A new callback
        replaces the old one, whose prefetched data is invalidated. In a replicated graph the
        callback serves replica ``replicaIndex``, or (None) every replica, called once for each.
        Poplar's order ``connectStreamToCallback(handle, replicaIndex, callback)`` is taken too."""
        if is_int(callback) and callable(replicaIndex):
            callback, replicaIndex = replicaIndex, callback
        stream = self._stream_decl(handle)
        handle = stream.handle()
        replicas = self._replicas_of(stream, replicaIndex, "connectStreamToCallback")
        if isinstance(callback, StreamCallback):
            prefetch = self._options.flag("exchange.enablePrefetch") \
                and self._options["exchange.streamBufferOverlap"] == "none"
            self._connect(stream, {r: CallbackStream(callback, handle, prefetch) for r in replicas})
        elif callable(callback):
            self._connect(stream, {r: FunctionStream(callback) for r in replicas})
        else:
            raise StreamArgumentError(f"stream '{handle}': connect a poplar.StreamCallback or a function, "
                                      f"got {type(callback).__name__}")

    def connectHostFunction(self, handle: str, replicaIndex: Any, callback: Any = None) -> None:
        """Give host function ``handle`` (``graph.addHostFunction``) its Python function on replica
        ``replicaIndex`` (None: every replica): ``callback(inputs, outputs)`` gets the input
        tensors' values as read-only numpy arrays and fills the output arrays in place, during the
        run (see :mod:`poplar_py.host_function`). ``(handle, callback[, replicaIndex])`` is taken
        too."""
        if callable(replicaIndex) and (callback is None or is_int(callback)):
            replicaIndex, callback = callback, replicaIndex
        checked_str(handle, "connectHostFunction: the handle")
        called = sorted({s.handle for s in self._exe.lowered.leaves if isinstance(s, HostFunctionStep)})
        if handle not in called:
            raise StreamError(f"connectHostFunction: the engine's programs call no host function '{handle}' "
                              f"(they call: {', '.join(called) or 'none'})")
        if not callable(callback):
            raise StreamArgumentError(f"connectHostFunction('{handle}'): the callback must be a function, "
                                      f"got {type(callback).__name__} {callback!r:.40}")
        replicas = list(range(self._exe.replication.factor)) if replicaIndex is None \
            else [self._replica(replicaIndex, f"connectHostFunction('{handle}')")]
        ends = self._machine.host_functions.setdefault(handle, [None] * self._exe.replication.factor)
        for r in replicas:
            ends[r] = callback

    def _replicas_of(self, stream: DataStream, replicaIndex: Any, what: str) -> list[int]:
        """The replicas whose host end a connection sets: a broadcast stream has one (0)."""
        if stream.isBroadcast():
            if replicaIndex is not None:
                raise StreamError(f"{what}: stream '{stream.handle()}' is BROADCAST: one host end serves "
                                  f"every replica, so it takes no replicaIndex (got {replicaIndex!r:.40})")
            return [0]
        if replicaIndex is None:
            return list(range(self._exe.replication.factor))
        return [self._replica(replicaIndex, f"{what}('{stream.handle()}')")]

    def _replica(self, replicaIndex: Any, what: str) -> int:
        replicas = self._exe.replication.factor
        if not is_int(replicaIndex) or not 0 <= replicaIndex < replicas:
            raise GraphReplicationError(f"{what}: replica index {replicaIndex!r:.40} is out of range: the "
                                        f"graph has {replicas} replica(s), 0..{replicas - 1}")
        return int(replicaIndex)

    def _connect(self, stream: DataStream, hosts: dict[int, HostStream]) -> None:
        ends = self._machine.streams.setdefault(
            stream.handle(), [None] * (1 if stream.isBroadcast() else self._exe.replication.factor))
        for r, host in hosts.items():
            old = ends[r]
            if old is not None:
                old.disconnect()
            ends[r] = host

    def _stream_decl(self, handle: str | DataStream) -> DataStream:
        streams = self._exe.streams
        name = handle.handle() if isinstance(handle, DataStream) else handle
        if not isinstance(name, str):
            raise InvalidArgumentError(f"a stream is a handle string or a DataStream, got "
                                       f"{type(handle).__name__} {handle!r:.40}")
        if name not in streams:
            raise StreamError(f"no stream '{name}' in the graph (streams: {', '.join(streams) or 'none'})")
        if isinstance(handle, DataStream) and handle != streams[name]:
            raise StreamError(f"stream '{name}' of another graph: this engine's '{name}' is {streams[name]}")
        return streams[name]

    def listStreams(self) -> list[str]:
        return list(self._exe.streams)

    def getEngineOptions(self) -> dict[str, str]:
        """Every engine option's value (given, from POPLAR_ENGINE_OPTIONS, or the default)."""
        return dict(self._options.values)

    # ---- host reads and writes ---------------------------------------------------------------
    def _transfer(self, handle: str, write: bool) -> HostTransfer:
        kind = "createHostWrite" if write else "createHostRead"
        checked_str(handle, f"{'writeTensor' if write else 'readTensor'}: the handle (given to graph.{kind})")
        info = self._exe.host_transfers.get(handle)
        if info is None or info.write != write:
            raise StreamError(f"no host {'write' if write else 'read'} handle '{handle}' "
                              f"(create one with graph.{kind})")
        return info

    def writeTensor(self, handle: str, data: Any, dataEnd: Any = None, replicaIndex: Any = None) -> None:
        """Write host data into the tensor behind a ``createHostWrite`` handle: on replica
        ``replicaIndex``, or (None) on every replica. Data of another element type is converted, or
        taken as raw bytes when it is an array of the tensor's size in bytes (see
        :mod:`poplar_py.runtime.host_buffers`)."""
        t = self._transfer(handle, write=True)
        replicas = range(self._exe.replication.factor) if replicaIndex is None \
            else [self._replica(replicaIndex, f"writeTensor('{handle}')")]
        host = host_values(data, t.dtype, t.size, f"writeTensor('{handle}')")
        base = self._base()
        for r in replicas:
            self._machine.world.scatter(t.plan, host.ctypes.data, base, r)

    def readTensor(self, handle: str, out: np.ndarray | None = None, outEnd: Any = None,
                   replicaIndex: Any = 0) -> np.ndarray:
        """Read the tensor behind a ``createHostRead`` handle on replica ``replicaIndex`` (into
        ``out`` if given: an array of the tensor's elements, or of its size in bytes, filled with
        them as raw bytes); under MPI every rank gets the whole tensor."""
        t = self._transfer(handle, write=False)
        replica = self._replica(replicaIndex, f"readTensor('{handle}')")
        values = np.empty(t.shape, dtype=t.dtype)
        self._machine.world.gather(t.plan, self._base(), values, replica)
        return values if out is None else read_into(values, out, f"readTensor('{handle}')")

    # ---- remote buffers (Streaming Memory) ----------------------------------------------------
    def listRemoteBuffers(self) -> list[str]:
        """The handles of the graph's remote buffers."""
        return list(self._exe.remote_buffers)

    def _remote_row(self, handle: Any, repeatIndex: Any, replicaIndex: Any, array: Any, what: str
                    ) -> tuple[np.ndarray, int, int]:
        """The host array, row and replica a host access names, checked."""
        buffer, row = checked_row(self._exe.remote_buffers, handle, repeatIndex, what)
        replica = self._replica(replicaIndex, f"{what}('{handle}')")
        self._base()
        return row_array(buffer, array, what), row, replica

    def copyToRemoteBuffer(self, buffer: Any, handle: str, repeatIndex: int, replicaIndex: int = 0) -> None:
        """Write ``buffer`` (a numpy array of one row: the remote buffer's element type and
        ``numElements``) into row ``repeatIndex`` of replica ``replicaIndex``'s rows of remote buffer
        ``handle``, in Streaming Memory (no tile memory changes)."""
        data, row, replica = self._remote_row(handle, repeatIndex, replicaIndex, buffer,
                                              "copyToRemoteBuffer")
        m = self._machine
        if m.world.holds(replica):  # under MPI: the ranks running the replica hold its rows
            m.remote.write(handle, replica, row)[:] = np.ascontiguousarray(data).reshape(-1).view(np.uint8)

    def copyFromRemoteBuffer(self, handle: str, buffer: Any, repeatIndex: int, replicaIndex: int = 0) -> None:
        """Fill ``buffer`` (a writeable numpy array of one row) with row ``repeatIndex`` of replica
        ``replicaIndex``'s rows of remote buffer ``handle`` (zeros if it was never written); under
        MPI every rank gets it."""
        out, row, replica = self._remote_row(handle, repeatIndex, replicaIndex, buffer,
                                             "copyFromRemoteBuffer")
        if not out.flags.writeable:
            raise RemoteBufferError(f"copyFromRemoteBuffer('{handle}'): the host buffer is read-only")
        m = self._machine
        data = np.empty(out.nbytes, np.uint8)
        if m.world.holds(replica):
            data[:] = m.remote.read(handle, replica, row)
        m.world.from_holders(replica, data)
        np.copyto(out, data.view(out.dtype).reshape(out.shape))

    # ---- printing and profiling --------------------------------------------------------------
    def setPrintTensorStream(self, stream: IO[str]) -> None:
        """Where PrintTensor and the Python codelets' ``print`` write (default: standard output);
        under MPI, each rank writes what its own replicas and tiles print."""
        self._machine.out = checked_file(stream, "setPrintTensorStream")

    def getProfile(self) -> dict:
        """The compile and execution profile as a dict (the JSON report's content)."""
        return self._profile.report()

    def getGraphProfile(self) -> dict:
        """The compilation part of the profile (target, graph, memory per tile and category), as
        the report's ``"compilation"``."""
        return self._profile.report()["compilation"]

    def getExecutionProfile(self) -> dict:
        """The execution part of the profile (cycles per step, tile and compute set of every run
        so far), as the report's ``"execution"``."""
        return self._profile.report()["execution"]

    def printProfileSummary(self, file: IO[str] | None = None,
                            options: Mapping[str, Any] | None = None) -> None:
        """Print the Target, Graph, Memory Usage and Execution sections, as Poplar does."""
        out = sys.stdout if file is None else checked_file(file, "printProfileSummary")
        if options is not None and not isinstance(options, Mapping):
            raise InvalidArgumentError(f"printProfileSummary: options must be a dict, got {options!r:.40}")
        out.write(summary(self._profile.report(), options or {}))
        out.flush()

    def enableExecutionProfiling(self) -> None:
        """Record later runs in the execution profile again (the default; see
        :mod:`poplar_py.runtime.execution_profiling`)."""
        self._profiling.enabled = True

    def disableExecutionProfiling(self) -> None:
        """Leave later runs out of the execution profile: they run in full, and cycle stamps
        count their cycles, but the profile (and the report) holds only the runs made with
        profiling enabled."""
        self._profiling.enabled = False

    def resetExecutionProfile(self) -> None:
        self._machine.record.reset()
        self._record.reset()


_UNINTERRUPTIBLE = contextlib.nullcontext()

#: options an executable's compiled code depends on: fixed when it is compiled
COMPILE_OPTIONS = ("codelets.mode", "codelets.checkBounds", "codelets.fastMath", "tileMapping.strict",
                   "debug.allowOutOfMemory")


def _runtime_options(compiled: EngineOptions, options: Mapping[str, Any] | None) -> EngineOptions:
    """An executable's options, with ``options`` changing those that are not compile options."""
    given = parseEngineOptions(options)
    for key in COMPILE_OPTIONS:
        if options and key in options and given[key] != compiled[key]:
            raise InvalidOptionError(f"engine option '{key}' was fixed when the executable was compiled "
                                     f"('{compiled[key]}'); compile it again to change it")
    values = dict(given.values)
    values.update({key: compiled[key] for key in COMPILE_OPTIONS})
    return EngineOptions(values)


def _clock(m: Machine, record: RunRecord, profile: Profile) -> Callable[[], int]:
    """The machine's cycle counter: the cycles of what the run record holds, every rank's
    combined (a closure over the machine, not the Engine, which goes away when unused)."""
    def clock() -> int:
        m.world.combine(m.record, record)
        return profile.total_cycles()

    return clock
