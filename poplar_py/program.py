"""Control programs: plain data describing what runs in which order.

Programs do nothing by themselves; an Engine lowers them into steps (sync,
exchange, compute) when it is built.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from collections.abc import Sequence as SequenceT
from typing import Any

import networkx as nx

from .checks.arguments import is_int
from .debug import debug_name, label
from .errors import GraphReplicationError, ProgramArgumentError, ProgramError, RemoteBufferError, StreamError
from .handles import ComputeSet, DataStream, Function, RemoteBuffer
from .host_function import HostFunction
from .tensor import Tensor
from .types import INT, UNSIGNED_INT


class Program:
    """Base class of every control program."""

    def isEmpty(self) -> bool:
        return False


def _check_program(p: Any, what: str) -> Program:
    if not isinstance(p, Program):
        raise ProgramArgumentError(f"{what}: expected a program, got {type(p).__name__} {p!r:.40}")
    return p


def _check_tensor(t: Any, what: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise ProgramArgumentError(f"{what} needs a tensor, got {type(t).__name__} {t!r:.40}")
    return t


def _check_scalar(t: Any, what: str) -> Tensor:
    if _check_tensor(t, what).numElements() != 1:
        raise ProgramError(f"{what} must be a tensor of one element, got {t.shape()}")
    return t


class Sequence(Program):
    """Run programs one after another: ``Sequence([p1, p2])`` or ``Sequence(p1, p2)``."""

    def __init__(self, *programs: Program | Iterable[Program], name: Any = "",
                 debugContext: Any = None) -> None:
        self.programs: list[Program] = []
        self.name = label(name, debugContext, "Sequence")
        items: SequenceT[Any] = programs[0] if len(programs) == 1 and isinstance(programs[0], (list, tuple)) \
            else programs
        for p in items:
            self.add(p)

    def add(self, program: Program) -> Sequence:
        self.programs.append(_check_program(program, "Sequence.add"))
        return self

    def isEmpty(self) -> bool:
        return all(p.isEmpty() for p in self.programs)


class Execute(Program):
    """Run every vertex of a compute set: one superstep (sync, exchange, compute)."""

    def __init__(self, cs: ComputeSet, name: Any = "", debugContext: Any = None) -> None:
        if not isinstance(cs, ComputeSet):
            raise ProgramArgumentError(f"Execute needs a ComputeSet, got {type(cs).__name__} {cs!r:.40}")
        self.cs = cs
        self.name = label(name, debugContext, "Execute")


class Copy(Program):
    """Copy between tensors of equal element count and type (shapes may differ), from a
    host-to-device stream into a tensor, from a tensor to a device-to-host stream, or between a
    remote buffer's rows and a tensor: ``Copy(buffer, t[, offset])``, ``Copy(t, buffer[,
    offset])`` (see :meth:`_check_remote`)."""

    def __init__(self, src: Tensor | DataStream | RemoteBuffer, dst: Tensor | DataStream | RemoteBuffer,
                 dontOutline: Any = False, name: Any = "", debugContext: Any = None,
                 offset: Tensor | None = None) -> None:
        """``dontOutline`` (Poplar's code-sharing hint) changes nothing here: copies are not outlined.
        For a remote buffer copy the third argument is the ``offset`` tensor, as in Poplar."""
        remote = isinstance(src, RemoteBuffer) or isinstance(dst, RemoteBuffer)
        if remote and not isinstance(dontOutline, bool):
            offset, dontOutline = dontOutline, False
        self.src, self.dst, self.name = src, dst, label(name, debugContext, "Copy")
        self.offset: Tensor | None = None
        if remote:
            self.offset = self._check_remote(src, dst, offset)
        elif offset is not None:
            raise ProgramArgumentError("Copy: an offset is given only with a remote buffer, got tensors or "
                                       f"streams ({type(src).__name__}, {type(dst).__name__})")
        elif isinstance(src, DataStream) and isinstance(dst, Tensor):
            if not src.toDevice:
                raise ProgramError(f"Copy: stream '{src.handle()}' goes to the host; it cannot be a source")
            self._check_stream(src, dst)
        elif isinstance(src, Tensor) and isinstance(dst, DataStream):
            if dst.toDevice:
                raise ProgramError(
                    f"Copy: stream '{dst.handle()}' comes from the host; it cannot be a destination")
            self._check_stream(dst, src)
        elif isinstance(src, Tensor) and isinstance(dst, Tensor):
            if src.elementType() != dst.elementType():
                raise ProgramError(f"Copy: source '{src.name}' is {src.elementType()} but destination "
                                   f"'{dst.name}' is {dst.elementType()}")
            if src.numElements() != dst.numElements():
                raise ProgramError(f"Copy: source '{src.name}' has {src.numElements()} elements but "
                                   f"destination '{dst.name}' has {dst.numElements()}")
            _check_writeable(dst)
        else:
            raise ProgramArgumentError("Copy needs (tensor, tensor), (stream, tensor), (tensor, stream), "
                                       "(remote buffer, tensor) or (tensor, remote buffer), "
                                       f"got ({type(src).__name__}, {type(dst).__name__})")

    @staticmethod
    def _check_stream(stream: DataStream, t: Tensor) -> None:
        if stream.elementType() != t.elementType():
            raise StreamError(f"stream '{stream.handle()}' carries {stream.elementType()} but tensor "
                              f"'{t.name}' is {t.elementType()}")
        if stream.numElements() != t.numElements():
            raise StreamError(f"stream '{stream.handle()}' moves {stream.numElements()} elements per copy "
                              f"but tensor '{t.name}' has {t.numElements()}")
        if stream.toDevice and t.containsConstant():
            raise ProgramError(f"Copy: destination '{t.name}' contains constants")

    @staticmethod
    def _check_remote(src: Any, dst: Any, offset: Any) -> Tensor | None:
        """A remote buffer copy's checks; returns its offset. Without an offset one row moves (row
        0); a scalar UNSIGNED_INT offset (or one of shape [1]) picks the row; a 1-D one of k
        offsets moves k rows, to or from a tensor of shape [k, numElements]."""
        reading = isinstance(src, RemoteBuffer)
        buffer, t = (src, dst) if reading else (dst, src)
        where = f"Copy {'from' if reading else 'to'} remote buffer '{buffer.handle()}'"
        if not isinstance(t, Tensor):
            raise ProgramArgumentError(f"{where}: the other end must be a tensor, got {type(t).__name__} "
                                       f"{t!r:.40}")
        n = buffer.numElements()
        if t.elementType() != buffer.elementType():
            raise RemoteBufferError(f"{where}: the buffer holds {buffer.elementType()} but tensor '{t.name}' "
                                    f"is {t.elementType()}")
        rows = 1
        if offset is not None:
            if not isinstance(offset, Tensor):
                raise ProgramArgumentError(f"{where}: the offset must be a tensor, got "
                                           f"{type(offset).__name__} {offset!r:.40}")
            if offset.elementType() != UNSIGNED_INT or offset.rank() > 1:
                raise RemoteBufferError(f"{where}: the offset '{offset.name}' must be an UNSIGNED_INT "
                                        f"scalar or 1-D tensor, got {offset.elementType()} of shape "
                                        f"{offset.shape()}")
            if offset.rank() == 1:
                rows = offset.numElements()
                if rows != 1 and t.shape() != [rows, n]:
                    raise RemoteBufferError(f"{where}: {rows} offset(s) move {rows} row(s) of {n}, so tensor "
                                            f"'{t.name}' must have shape {[rows, n]}, not {t.shape()}")
        if rows == 1 and t.numElements() != n:
            raise RemoteBufferError(f"{where}: a row has {n} element(s) but tensor '{t.name}' has "
                                    f"{t.numElements()}")
        if reading:
            _check_writeable(t)
        return offset


def _check_writeable(dst: Tensor) -> None:
    """A copy's destination: no constants, no element twice."""
    if dst.containsConstant():
        raise ProgramError(f"Copy: destination '{dst.name}' contains constants")
    if dst.containsAliases():
        raise ProgramError(f"Copy: destination '{dst.name}' contains aliased elements, "
                           "which would be written more than once")


class Repeat(Program):
    """Run ``body`` ``count`` times."""

    def __init__(self, count: int, body: Program, name: Any = "", debugContext: Any = None) -> None:
        if not is_int(count):
            raise ProgramArgumentError(f"Repeat count must be an integer, got {type(count).__name__} "
                                       f"{count!r:.40}")
        if count < 0:
            raise ProgramError(f"Repeat count must be a non-negative integer, got {count}")
        self.count, self.body = int(count), _check_program(body, "Repeat body")
        self.name = label(name, debugContext, "Repeat")


class RepeatWhileTrue(Program):
    """Run ``cond``; while ``predicate`` (a one-element tensor) is non-zero, run ``body`` and repeat."""

    loop_while = True

    def __init__(self, cond: Program, predicate: Tensor, body: Program, name: Any = "",
                 debugContext: Any = None) -> None:
        self.cond = _check_program(cond, f"{type(self).__name__} condition")
        self.predicate = _check_scalar(predicate, f"{type(self).__name__} predicate")
        self.body = _check_program(body, f"{type(self).__name__} body")
        self.name = label(name, debugContext, type(self).__name__)


class RepeatWhileFalse(RepeatWhileTrue):
    """Run ``cond``; while ``predicate`` is zero, run ``body`` and repeat."""

    loop_while = False


class If(Program):
    """Run ``trueBody`` if ``predicate`` (one element) is non-zero, else ``falseBody``."""

    def __init__(self, predicate: Tensor, trueBody: Program, falseBody: Program | None = None,
                 name: Any = "", debugContext: Any = None) -> None:
        self.predicate = _check_scalar(predicate, "If predicate")
        self.then = _check_program(trueBody, "If true body")
        self.orelse = _check_program(falseBody if falseBody is not None else Sequence(), "If false body")
        self.name = label(name, debugContext, "If")


class Switch(Program):
    """Run the case whose value equals ``control`` (a one-element INT or UNSIGNED_INT tensor),
    else ``default``."""

    def __init__(self, control: Tensor, cases: SequenceT[tuple[int, Program]] | Program | None = None,
                 default: Program | None = None, name: Any = "", debugContext: Any = None) -> None:
        self.control = _check_scalar(control, "Switch control")
        if control.elementType() not in (INT, UNSIGNED_INT):
            raise ProgramError(f"Switch control '{control.name}' must be int or unsigned int, "
                               f"not {control.elementType()}")
        if isinstance(cases, Program):
            cases, default = None, cases
        self.cases: dict[int, Program] = {}
        self.default = _check_program(default if default is not None else Sequence(), "Switch default")
        self.name = label(name, debugContext, "Switch")
        if cases is not None and not isinstance(cases, (list, tuple)):
            raise ProgramArgumentError(f"Switch: cases must be a list of (value, program) pairs, got "
                                       f"{type(cases).__name__} {cases!r:.40}")
        for case in cases or []:
            if not isinstance(case, (list, tuple)) or len(case) != 2:
                raise ProgramArgumentError(f"Switch: a case must be a (value, program) pair, got "
                                           f"{case!r:.40}")
            self.add(*case)

    def add(self, value: int, body: Program) -> Switch:
        if not is_int(value):
            raise ProgramArgumentError(f"Switch: a case value must be an integer, got {value!r:.40}")
        if int(value) in self.cases:
            raise ProgramError(f"Switch: case {value} is given twice")
        self.cases[int(value)] = _check_program(body, f"Switch case {value}")
        return self


class Call(Program):
    """Run a function registered with ``graph.addFunction``. ``Call(hostFunction, inputs,
    outputs)``, with a HostFunction from ``graph.addHostFunction``, makes a
    :class:`HostFunctionCall` instead."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], HostFunction):
            return HostFunctionCall(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, function: Function, name: Any = "", debugContext: Any = None) -> None:
        if not isinstance(function, Function):
            raise ProgramArgumentError(f"Call needs a Function from graph.addFunction, got "
                                       f"{type(function).__name__}")
        self.function, self.name = function, label(name, debugContext, "Call")


class HostFunctionCall(Program):
    """Call a host function (``program.Call(f, inputs, outputs)``; see
    :mod:`poplar_py.host_function`): ``inputs`` and ``outputs`` are tensors matching the types and
    element counts ``graph.addHostFunction`` declared, in order."""

    def __init__(self, function: HostFunction, inputs: Any = (), outputs: Any = (), name: Any = "",
                 debugContext: Any = None) -> None:
        what = f"Call of host function '{function.handle()}'"
        self.function = function
        self.inputs = _host_tensors(inputs, function.inputs, f"{what}: inputs")
        self.outputs = _host_tensors(outputs, function.outputs, f"{what}: outputs")
        for t in self.outputs:
            if t.containsConstant() or t.containsAliases():
                raise ProgramError(f"{what}: output '{t.name}' contains constants or aliased elements, which "
                                   "cannot be written")
        self.name = label(name, debugContext, "Call")


def _host_tensors(tensors: Any, declared: tuple, what: str) -> list[Tensor]:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise ProgramArgumentError(f"{what} must be a list of tensors, got {tensors!r:.60}")
    if len(tensors) != len(declared):
        raise ProgramError(f"{what}: {len(tensors)} tensor(s) given, the host function takes {len(declared)}")
    for i, (t, (type_, n)) in enumerate(zip(tensors, declared)):
        if t.elementType() != type_ or t.numElements() != n:
            raise ProgramError(f"{what}[{i}]: tensor '{t.name}' is {t.numElements()} {t.elementType()}, "
                               f"the host function takes {n} {type_}")
    return list(tensors)


class PrintTensor(Program):
    """Print a tensor's values: ``PrintTensor(t)`` or ``PrintTensor(title, t)``."""

    def __init__(self, title: str | Tensor, tensor: Tensor | None = None) -> None:
        if tensor is None:
            title, tensor = "", title  # type: ignore[assignment]
        self.tensor = _check_tensor(tensor, "PrintTensor")
        self.title = debug_name(title, "PrintTensor: the title")


class WriteUndef(Program):
    """Mark a tensor's contents as dead (a liveness hint; no data moves)."""

    def __init__(self, tensor: Tensor, name: Any = "", debugContext: Any = None) -> None:
        self.tensor, self.name = _check_tensor(tensor, "WriteUndef"), label(name, debugContext, "WriteUndef")


class CrossReplicaCopy(Program):
    """Copy ``src`` of each replica r to ``dst`` of replica ``replicaMap[r]``; the map (a dict of
    replica to replica) must be a permutation of all the graph's replicas."""

    def __init__(self, src: Tensor, dst: Tensor, replicaMap: dict[int, int], name: Any = "",
                 debugContext: Any = None) -> None:
        if not isinstance(src, Tensor) or not isinstance(dst, Tensor):
            raise ProgramArgumentError(f"CrossReplicaCopy needs two tensors, got ({type(src).__name__}, "
                                       f"{type(dst).__name__})")
        Copy(src, dst)  # the same checks as a copy within a replica
        items = replicaMap.items() if isinstance(replicaMap, dict) else None
        if items is None or not all(is_int(k) and is_int(v) for k, v in items):
            raise GraphReplicationError(f"CrossReplicaCopy: the replica map must be a dict of replica index "
                                        f"to replica index, got {replicaMap!r:.60}")
        mapping = {int(k): int(v) for k, v in replicaMap.items()}
        if sorted(mapping.values()) != sorted(mapping):
            raise GraphReplicationError(f"CrossReplicaCopy: the replica map {mapping} is not a permutation "
                                        "(each replica must send once and receive once)")
        self.src, self.dst, self.replicaMap = src, dst, mapping
        self.name = label(name, debugContext, "CrossReplicaCopy")


class AssumeEqualAcrossReplicas(Program):
    """Tell the compiler that ``t`` holds the same values on every replica (no data moves)."""

    def __init__(self, t: Tensor, name: Any = "", debugContext: Any = None) -> None:
        self.tensor = _check_tensor(t, "AssumeEqualAcrossReplicas")
        self.name = label(name, debugContext, "AssumeEqualAcrossReplicas")


class Abort(Program):
    """Stop the run: ``Engine.run`` raises ApplicationRuntimeError with ``message``. As Poplar's:
    ``Abort([message][, debugContext])``."""

    def __init__(self, message: Any = "", debugContext: Any = None) -> None:
        self.predicate: Tensor | None = None
        self.message = _message(message, type(self).__name__)
        self.name = label("", debugContext, type(self).__name__)


class AbortOnCondition(Abort):
    """Stop the run if ``predicate`` (a one-element tensor, read on the tiles when the program
    gets here) is non-zero: ``Engine.run`` raises ApplicationRuntimeError with ``message``;
    otherwise carry on."""

    def __init__(self, predicate: Tensor, message: Any = "", debugContext: Any = None) -> None:
        super().__init__(message, debugContext)
        self.predicate = _check_scalar(predicate, "AbortOnCondition predicate")


def _message(message: Any, what: str) -> str:
    if not isinstance(message, str):
        raise ProgramArgumentError(f"{what}: the message must be a string, got {type(message).__name__} "
                                   f"{message!r:.40}")
    return message


class SyncType(enum.Enum):
    INTERNAL = "INTERNAL"
    EXTERNAL = "EXTERNAL"
    GLOBAL = "GLOBAL"


class Sync(Program):
    """A barrier across all tiles."""

    def __init__(self, syncType: SyncType = SyncType.INTERNAL, name: Any = "",
                 debugContext: Any = None) -> None:
        if not isinstance(syncType, SyncType):
            raise ProgramArgumentError(f"Sync needs a SyncType, got {syncType!r:.40}")
        self.syncType, self.name = syncType, label(name, debugContext, "Sync")


class CycleStamp(Program):
    """Write the simulated cycle counter into ``t`` (two UNSIGNED_INTs on one tile: the low and
    high 32 bits): the cycles the device has run since it was loaded, or, given ``since`` (an
    earlier stamp), the cycles since that stamp. ``poplar.cycleStamp`` and ``poplar.cycleCount``
    add these to a Sequence."""

    def __init__(self, t: Tensor, since: Tensor | None = None, name: Any = "") -> None:
        for what, value in (("t", t), ("since", since)):
            if value is not None and (not isinstance(value, Tensor) or value.elementType() != UNSIGNED_INT
                                      or value.numElements() != 2):
                raise ProgramArgumentError(f"CycleStamp: {what} must be a tensor of 2 UNSIGNED_INT, got "
                                           f"{value!r:.60}")
        self.tensor, self.since, self.name = t, since, label(name, None, "CycleStamp")


def children(p: Program) -> list[Program]:
    """The programs ``p`` runs directly (bodies, branches, cases); a Call's function is not one."""
    out: list[Program] = []
    for attr in ("programs", "cond", "body", "then", "orelse", "default"):
        value = getattr(p, attr, None)
        if isinstance(value, list):
            out.extend(value)
        elif isinstance(value, Program):
            out.append(value)
    if isinstance(p, Switch):
        out.extend(p.cases.values())
    return out


def step_label(p: Program) -> str:
    """The name a leaf program's step has in the profile: its own name, else one that says
    what it moves or runs."""
    if isinstance(p, PrintTensor):
        return f"PrintTensor({p.title or p.tensor.name})"
    if getattr(p, "name", ""):
        return p.name
    if isinstance(p, Execute):
        return p.cs.name
    if isinstance(p, (Copy, CrossReplicaCopy)):
        kind = "Copy" if isinstance(p, Copy) else "CrossReplicaCopy"
        if isinstance(p.src, Tensor) and isinstance(p.dst, Tensor):
            return f"{kind}({p.src.name} -> {p.dst.name})"
        ends = [e.handle() if not isinstance(e, Tensor) else e.name for e in (p.src, p.dst)]
        remote = isinstance(p.src, RemoteBuffer) or isinstance(p.dst, RemoteBuffer)
        return f"{'RemoteCopy' if remote else 'StreamCopy'}({ends[0]} -> {ends[1]})"
    if isinstance(p, WriteUndef):
        return f"WriteUndef({p.tensor.name})"
    return type(p).__name__


def walk(programs: SequenceT[Program]) -> list[Program]:
    """Every program reachable from ``programs`` (bodies, branches, cases), each once."""
    seen: dict[int, Program] = {}
    stack = list(programs)
    while stack:
        p = stack.pop()
        if id(p) not in seen:
            seen[id(p)] = p
            stack.extend(children(p))
    return list(seen.values())


def check_acyclic(programs: SequenceT[Program], functions: SequenceT[Program]) -> None:
    """Raise ProgramError if a program contains itself (``seq.add(seq)``) or a function calls
    itself, directly or through others: control code on the IPU has no recursion."""
    graph = nx.DiGraph()
    for k, f in enumerate(functions):
        graph.add_edge(("function", k), id(f))
    bodies: dict[object, Program] = {}
    for p in walk([*programs, *functions]):
        bodies[id(p)] = p
        graph.add_node(id(p))
        for c in children(p):
            graph.add_edge(id(p), id(c))
        if isinstance(p, Call):
            graph.add_edge(id(p), ("function", p.function.id))
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    nodes = [a for a, _ in cycle]
    called = [n[1] for n in nodes if isinstance(n, tuple)]
    if called:
        via = f" through function {', '.join(map(str, called[1:]))}" if len(called) > 1 else ""
        raise ProgramError(f"function {called[0]} calls itself{via}: control programs cannot be recursive")
    first = bodies[nodes[0]]
    name = getattr(first, "name", "") or type(first).__name__
    raise ProgramError(f"program '{name}' contains itself: control programs cannot be recursive")
