"""Graph's host exchange methods: host reads and writes, data streams, remote buffers, functions and
host functions."""

from __future__ import annotations

from typing import Any

from ..checks.arguments import checked_bool, checked_int, checked_str
from ..errors import InvalidArgumentError, PoplarError, RemoteBufferError
from ..handles import DataStream, Function, HostHandle, RemoteBuffer, ReplicatedStreamMode
from ..host_function import HostFunction, checked_arguments
from ..program import Program
from ..tensor import Tensor
from ..types import Type, asType


class GraphHostExchange:
    """The host exchange part of :class:`~poplar_py.graph.Graph`, a mixin (the graph holds the tables)."""

    def _new_handle(self, handle: str, what: str, error: type[PoplarError] = PoplarError) -> None:
        checked_str(handle, f"{what}: the handle")
        if handle in self._host_handles or handle in self._streams or handle in self._remote_buffers \
                or handle in self._host_functions:
            raise error(f"{what}: handle '{handle}' is already used by another stream, host read/write or "
                        "remote buffer")

    def createHostWrite(self, handle: str, t: Tensor, rearrangeOnHost: bool = False) -> None:
        """Let ``engine.writeTensor(handle, array)`` write ``t`` from the host."""
        self._new_handle(handle, "createHostWrite")
        self._check_own(t, f"createHostWrite('{handle}')")
        if t.containsConstant():
            raise PoplarError(f"createHostWrite('{handle}'): tensor '{t.name}' contains constants")
        self._host_handles[handle] = HostHandle(handle, t, write=True)

    def createHostRead(self, handle: str, t: Tensor, rearrangeOnHost: bool = False) -> None:
        """Let ``engine.readTensor(handle)`` read ``t`` back to the host."""
        self._new_handle(handle, "createHostRead")
        self._check_own(t, f"createHostRead('{handle}')")
        self._host_handles[handle] = HostHandle(handle, t, write=False)

    def addHostToDeviceFIFO(self, handle: str, type_: Type | object, numElements: int, *args: Any,
                            replicatedMode: ReplicatedStreamMode | None = None, options: Any = None
                            ) -> DataStream:
        """A host-to-device FIFO: ``(handle, type, numElements[, replicatedMode][, options])``. In a
        replicated graph each replica reads its own host stream (``REPLICATE``, the default), or
        all read one (``BROADCAST``)."""
        self._new_handle(handle, "addHostToDeviceFIFO")
        modes = [a for a in (*args, replicatedMode) if isinstance(a, ReplicatedStreamMode)]
        s = DataStream(handle, asType(type_), checked_int(numElements, f"stream '{handle}': numElements"),
                       toDevice=True, replicatedMode_=modes[0] if modes else ReplicatedStreamMode.REPLICATE,
                       replicationFactor_=self._replicas)
        self._streams[handle] = s
        return s

    def addDeviceToHostFIFO(self, handle: str, type_: Type | object, numElements: int, *_: Any) -> DataStream:
        self._new_handle(handle, "addDeviceToHostFIFO")
        s = DataStream(handle, asType(type_), checked_int(numElements, f"stream '{handle}': numElements"),
                       toDevice=False, replicationFactor_=self._replicas)
        self._streams[handle] = s
        return s

    def addRemoteBuffer(self, handle: str, type_: Type | object, numElements: int, repeats: int = 1,
                        rearrangeOnHost: bool = False, optimisedForMemory: bool = False) -> RemoteBuffer:
        """A buffer of ``repeats`` rows of ``numElements`` elements in Streaming Memory, the DRAM
        beside the IPUs: each replica has rows of its own, which programs copy to and from tile
        memory (``program.Copy``) and the host reads and writes by row. No tile memory is used;
        rows take host memory when first written (a row never written reads as zeros).
        ``rearrangeOnHost`` and ``optimisedForMemory`` are Poplar's layout hints: accepted, with no
        effect here."""
        self._new_handle(handle, "addRemoteBuffer", RemoteBufferError)
        what = f"addRemoteBuffer('{handle}')"
        hints = [checked_bool(v, f"{what}: {k}") for k, v in (("rearrangeOnHost", rearrangeOnHost),
                                                               ("optimisedForMemory", optimisedForMemory))]
        buffer = RemoteBuffer(handle, asType(type_), checked_int(numElements, f"{what}: numElements", 1),
                              checked_int(repeats, f"{what}: repeats", 1), *hints, owner=self._vars.token)
        if not self._target.supportsRemoteBuffers():
            raise RemoteBufferError(f"{what}: the target ({self._target.getTargetArchString()}) has no "
                                    "Streaming Memory: remote buffers need IPU-Machines (ipu2, ipu21)")
        self._remote_buffers[handle] = buffer
        return buffer

    def addFunction(self, program: Program) -> Function:
        """Register control code once; run it with ``program.Call(function)``."""
        if not isinstance(program, Program):
            raise InvalidArgumentError(f"addFunction needs a program, got {type(program).__name__} "
                                       f"{program!r:.40}")
        self._functions.append(program)
        return Function(len(self._functions) - 1, self._vars.token)

    def addHostFunction(self, handle: str, inputs: Any, outputs: Any) -> HostFunction:
        """A function of the host that ``program.Call(f, inputTensors, outputTensors)`` runs, with
        ``inputs`` and ``outputs`` lists of ``(type, numElements)`` (see :mod:`poplar_py.host_function`);
        ``Engine.connectHostFunction`` gives it its Python function."""
        self._new_handle(handle, "addHostFunction")
        what = f"addHostFunction('{handle}')"
        f = HostFunction(handle, checked_arguments(inputs, f"{what}: inputs"),
                         checked_arguments(outputs, f"{what}: outputs"), self._vars.token)
        self._host_functions[handle] = f
        return f
