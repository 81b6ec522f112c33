"""Exception classes, mirroring Poplar's (``poplar::graph_cycle_error`` -> GraphCycleError).

Each class Poplar has is also reachable under Poplar's own spelling (``poplar_error``,
``graph_memory_allocation_error``, ``invalid_option``, ...: :data:`POPLAR_SPELLINGS`), so ported
``catch`` clauses read as they did. The run-time errors follow Poplar's ``runtime_error`` family:
a failing vertex or program is an application error; the recoverable, unrecoverable, system and
unknown kinds exist for programs that catch them, but a simulator has no device, driver or link
to fail, so poplar-py never raises them.
"""

import enum


class PoplarError(RuntimeError):
    """Base class of every error poplar-py raises for bad input or a failed run."""


class InvalidArgumentError(PoplarError, TypeError):
    """An argument of the wrong type or value (the message names it)."""


class TensorCreationError(PoplarError, ValueError):
    """Invalid arguments to a tensor view or to variable creation."""


class TensorArgumentError(TensorCreationError, InvalidArgumentError):
    """A shape, dimension or index of the wrong type (``2.5``, ``None``): both a
    TensorCreationError and a TypeError."""


class PoplarTypeError(PoplarError, TypeError):
    """Element types do not match (tensor vs field, copy endpoints, reinterpret)."""


class InvalidTileMappingError(PoplarError):
    """A tile index out of range, or an unmapped element where a mapping is required."""


class UnknownVertexTypeError(PoplarError, KeyError):
    """``addVertex`` named a vertex type that no ``addCodelets`` call registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownFieldError(PoplarError, KeyError):
    """A field name that the vertex type does not declare."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class GraphConnectionError(PoplarError):
    """A vertex field is unconnected, connected twice, or connected to the wrong kind of tensor."""


class ConnectionArgumentError(GraphConnectionError, InvalidArgumentError):
    """A field connected to something that is neither a tensor nor values (None, an object): both a
    GraphConnectionError and a TypeError."""


class GraphCycleError(PoplarError):
    """Two vertices of one compute set touch the same element and at least one writes it."""


class GraphMemoryAllocationError(PoplarError, MemoryError):
    """Some tile needs more than ``Target.getBytesPerTile()`` bytes."""


class CodeletCompileError(PoplarError):
    """A codelet uses Python the compiler does not support; the message names file and line."""


class CodeletError(CodeletCompileError):
    """A C++ codelet file poplar-py cannot compile or run: clang's errors, inline IPU assembly,
    a field type it cannot lay out; the message names the file and line."""


class CompilerPassError(PoplarError):
    """A compiler pass failed unexpectedly, or left a result that breaks its invariants
    (``POPLAR_PY_CHECK_PASSES=1``): the message names the pass and, where it knew, what it was
    working on; the original exception is the cause."""

    def __init__(self, message: str, passName: str = "", subject: str | None = None) -> None:
        super().__init__(message)
        self.passName = passName
        self.subject = subject


class PoplarRuntimeError(PoplarError):
    """Running a program failed (Poplar's ``runtime_error``)."""


class ApplicationRuntimeError(PoplarRuntimeError):
    """The program itself failed while running (Poplar's ``application_runtime_error``): a vertex
    failed (VertexError), or an ``Abort``, or an ``AbortOnCondition`` whose predicate was true
    (the message is the program's)."""


class RecoveryAction(enum.Enum):
    """What a recoverable run-time error asks of the device (Poplar's RecoveryAction)."""

    IPU_RESET = "IPU_RESET"
    LINK_RESET = "LINK_RESET"
    PARTITION_RESET = "PARTITION_RESET"
    FULL_RESET = "FULL_RESET"


class RecoverableRuntimeError(PoplarRuntimeError):
    """A device failure its recovery action can clear (never raised by the simulator)."""

    def __init__(self, message: str = "", action: RecoveryAction = RecoveryAction.IPU_RESET) -> None:
        super().__init__(message)
        self.recoveryAction = action

    def getRecoveryAction(self) -> RecoveryAction:
        return self.recoveryAction


class UnrecoverableRuntimeError(PoplarRuntimeError):
    """A device failure nothing clears (never raised by the simulator)."""


class SystemRuntimeError(PoplarRuntimeError):
    """A failure of the system around the device, such as its driver (never raised by the simulator)."""


class UnknownRuntimeError(PoplarRuntimeError):
    """A device failure of unknown cause (never raised by the simulator)."""


class VertexError(ApplicationRuntimeError):
    """A vertex failed while running: ``compute`` returned False or indexed out of bounds."""


class StreamError(PoplarError):
    """A data stream is unknown, unconnected, or connected to an array of the wrong size or type."""


class StreamArgumentError(StreamError, InvalidArgumentError):
    """A stream end that is not an array, a function or a StreamCallback: both a StreamError and a
    TypeError."""


class InvalidOptionError(PoplarError, ValueError):
    """An unknown engine option, or a bad value for a known one."""


class OptionTypeError(InvalidOptionError, InvalidArgumentError):
    """Engine options that are not a dict of string names: both an InvalidOptionError and a
    TypeError."""


class ExecutableError(PoplarError, ValueError):
    """A file that is not a poplar-py executable, or a corrupt, truncated or foreign one (the
    message names the file), or an executable that cannot be serialized."""


class ProgramError(PoplarError):
    """An invalid control program (bad predicate, bad Switch control, unknown function...)."""


class ProgramArgumentError(ProgramError, InvalidArgumentError):
    """A program given an argument of the wrong kind (not a program, tensor, compute set, function or
    count): both a ProgramError and a TypeError."""


class MissingCycleEstimateError(PoplarError):
    """A cycle estimate was asked for a vertex that has none."""


class InvalidMachineModelError(PoplarError, ValueError):
    """IPUModel fields that describe no possible device."""


class GraphReplicationError(PoplarError, ValueError):
    """An invalid use of replication (Poplar's ``graph_replication_error``): a replication factor
    that does not divide the IPUs, a replica map that is not a permutation, a replica index out
    of range."""


class RemoteBufferError(PoplarError):
    """A remote buffer (Streaming Memory) used wrongly: a handle given twice, a target without
    Streaming Memory, a copy whose type, shape or offset does not fit the buffer (at run time, an
    offset past its rows), or a host access with a wrong size, row or replica."""


# Poplar's spelling of each class: ``poplar::poplar_error`` is ``poplar_py.poplar_error``
poplar_error = PoplarError
runtime_error = PoplarRuntimeError
application_runtime_error = ApplicationRuntimeError
recoverable_runtime_error = RecoverableRuntimeError
unrecoverable_runtime_error = UnrecoverableRuntimeError
system_runtime_error = SystemRuntimeError
unknown_runtime_error = UnknownRuntimeError
tensor_creation_error = TensorCreationError
type_error = PoplarTypeError
invalid_tile_mapping = InvalidTileMappingError
unknown_vertex_type = UnknownVertexTypeError
unknown_field = UnknownFieldError
graph_connection_error = GraphConnectionError
graph_cycle_error = GraphCycleError
graph_memory_allocation_error = GraphMemoryAllocationError
stream_connection_error = StreamError
invalid_option = InvalidOptionError
missing_cycle_estimate = MissingCycleEstimateError
invalid_machine_model = InvalidMachineModelError
graph_replication_error = GraphReplicationError

#: the names above, for the package to export
POPLAR_SPELLINGS = ("poplar_error", "runtime_error", "application_runtime_error",
                    "recoverable_runtime_error", "unrecoverable_runtime_error", "system_runtime_error",
                    "unknown_runtime_error", "tensor_creation_error", "type_error", "invalid_tile_mapping",
                    "unknown_vertex_type", "unknown_field", "graph_connection_error", "graph_cycle_error",
                    "graph_memory_allocation_error", "stream_connection_error", "invalid_option",
                    "missing_cycle_estimate", "invalid_machine_model", "graph_replication_error")
