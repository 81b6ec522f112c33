"""Handles a graph hands out: compute sets, functions, streams, vertices and their fields.

Handles are light: a vertex is its graph and id, a field its vertex, name and row;
everything else lives in the graph's tables.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .checks.arguments import checked_int
from .errors import GraphConnectionError, InvalidArgumentError, UnknownFieldError
from .tensor import Tensor
from .types import Type


class VertexOwner(Protocol):
    """What a vertex handle asks of its graph."""

    def vertex_fields(self, vid: int) -> Mapping[str, object]: ...

    def unknown_field(self, vid: int, name: str) -> str: ...

    def describe_vertex(self, vid: int) -> str: ...


@dataclass(frozen=True)
class ComputeSet:
    """A set of vertices that run together in one superstep."""

    id: int
    name: str
    owner: int = field(default=0, repr=False)  # the graph's token: another graph's are refused

    def getId(self) -> int:
        return self.id


@dataclass(frozen=True)
class Function:
    """Control code registered with ``graph.addFunction`` and run by ``program.Call``."""

    id: int
    owner: int = field(default=0, repr=False)  # the graph's token, as ComputeSet's

    def getId(self) -> int:
        return self.id


class ReplicatedStreamMode(enum.Enum):
    """How a host-to-device FIFO of a replicated graph feeds the replicas: each replica from its
    own host stream (REPLICATE), or every replica from one (BROADCAST)."""

    REPLICATE = "REPLICATE"
    BROADCAST = "BROADCAST"


class DataStreamType(enum.Enum):
    """What a DataStream is (Poplar's ``DataStreamType``): a FIFO from the host or to it; a remote
    buffer is Poplar's pair of buffer streams (``RemoteBuffer`` here)."""

    HostToDeviceFIFO = "HostToDeviceFIFO"
    DeviceToHostFIFO = "DeviceToHostFIFO"
    HostToDeviceBuffer = "HostToDeviceBuffer"
    DeviceToHostBuffer = "DeviceToHostBuffer"


@dataclass(frozen=True)
class StreamHandle:
    """What a stream and a remote buffer have in common: a handle and ``numElements`` elements of
    ``type`` a copy moves (Poplar implements a remote buffer as two streams)."""

    handle_: str
    type_: Type
    numElements_: int

    def handle(self) -> str:
        return self.handle_

    def elementType(self) -> Type:
        return self.type_

    def numElements(self) -> int:
        return self.numElements_


@dataclass(frozen=True)
class DataStream(StreamHandle):
    """A host FIFO: each stream copy moves ``numElements`` elements of ``type``."""

    toDevice: bool
    replicatedMode_: ReplicatedStreamMode = ReplicatedStreamMode.REPLICATE
    replicationFactor_: int = 1

    def replicatedMode(self) -> ReplicatedStreamMode:
        return self.replicatedMode_

    def type(self) -> DataStreamType:
        """HostToDeviceFIFO or DeviceToHostFIFO."""
        return DataStreamType.HostToDeviceFIFO if self.toDevice else DataStreamType.DeviceToHostFIFO

    def replicationFactor(self) -> int:
        return self.replicationFactor_

    def isBroadcast(self) -> bool:
        """Whether one host end feeds every replica (a BROADCAST host-to-device FIFO). A
        poplar-py addition."""
        return self.toDevice and self.replicatedMode_ is ReplicatedStreamMode.BROADCAST


class VertexRef:
    """Handle to a vertex; ``v["field"]`` gives a :class:`FieldRef`."""

    __slots__ = ("graph", "id")

    def __init__(self, graph: VertexOwner, vid: int) -> None:
        self.graph = graph
        self.id = vid

    def getId(self) -> int:
        return self.id

    def __getitem__(self, name: str) -> FieldRef:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"{self!r}: a field is named by a string, got {type(name).__name__} "
                                       f"{name!r:.40}")
        if name not in self.graph.vertex_fields(self.id):
            raise UnknownFieldError(self.graph.unknown_field(self.id, name))
        return FieldRef(self, name, None)

    def __repr__(self) -> str:
        return f"<VertexRef {self.graph.describe_vertex(self.id)}>"


class FieldRef:
    """A field of a vertex, or one entry of a list field (``v["ins"][2]``)."""

    __slots__ = ("index", "name", "vertex")

    def __init__(self, vertex: VertexRef, name: str, index: int | None) -> None:
        self.vertex, self.name, self.index = vertex, name, index

    def __repr__(self) -> str:
        return f"FieldRef({self.vertex!r}, {self.name!r}, {self.index!r})"

    def __getitem__(self, i: int) -> FieldRef:
        if self.index is not None:
            raise GraphConnectionError(f"field '{self.name}' is already indexed")
        return FieldRef(self.vertex, self.name, checked_int(i, f"the index of field '{self.name}'"))

    def isIndexed(self) -> bool:
        return self.index is not None

    def getIndex(self) -> int:
        return -1 if self.index is None else self.index


@dataclass(frozen=True)
class HostHandle:
    """A createHostWrite/createHostRead handle: a named tensor the host may write or read."""

    name: str
    tensor: Tensor
    write: bool


@dataclass(frozen=True)
class RemoteBuffer(StreamHandle):
    """A buffer in Streaming Memory (``graph.addRemoteBuffer``): ``repeats`` rows of
    ``numElements`` elements of ``type``, each replica with rows of its own. Programs copy rows
    between it and tile memory (``program.Copy(buffer, t[, offset])``, ``Copy(t, buffer[,
    offset])``); the host reads and writes rows with ``Engine.copyToRemoteBuffer`` and
    ``copyFromRemoteBuffer``."""

    repeats_: int = 1
    rearrangeOnHost_: bool = False
    optimisedForMemory_: bool = False
    owner: int = field(default=0, repr=False)  # the graph's token, as ComputeSet's

    def getRepeats(self) -> int:
        """Rows of the buffer (on each replica)."""
        return self.repeats_

    def isRearrangeOnHost(self) -> bool:
        return self.rearrangeOnHost_

    def isOptimisedForMemory(self) -> bool:
        return self.optimisedForMemory_

    @property
    def row_bytes(self) -> int:
        return self.numElements_ * self.type_.size

    @property
    def nbytes(self) -> int:
        """Bytes of every row (one replica's)."""
        return self.row_bytes * self.repeats_
