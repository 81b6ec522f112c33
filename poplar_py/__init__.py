"""poplar-py: a Poplar-style graph programming framework running on a simulated IPU."""

from . import program
from .debug import DebugContext, DebugNameAndId
from .engine import Engine
from .errors import (
                     CodeletCompileError,
                     GraphConnectionError,
                     GraphCycleError,
                     GraphMemoryAllocationError,
                     InvalidArgumentError,
                     InvalidMachineModelError,
                     InvalidOptionError,
                     InvalidTileMappingError,
                     MissingCycleEstimateError,
                     OptionTypeError,
                     PoplarError,
                     PoplarTypeError,
                     ProgramError,
                     StreamError,
                     TensorArgumentError,
                     TensorCreationError,
                     UnknownFieldError,
                     UnknownVertexTypeError,
                     VertexError,
)
from .graph import (
                     ComputeSet,
                     DataStream,
                     FieldRef,
                     Function,
                     Graph,
                     TensorCloneMethod,
                     VariableMappingMethod,
                     VertexRef,
)
from .streams import StreamCallback
from .target import Device, DeviceManager, IPUModel, Target, TargetType
from .templates import Policy
from .tensor import Interval, Tensor, UpsampleMethod, VariableRef, append, concat
from .types import (
                     BOOL,
                     CHAR,
                     FLOAT,
                     HALF,
                     INT,
                     LONGLONG,
                     SHORT,
                     SIGNED_CHAR,
                     UNSIGNED_CHAR,
                     UNSIGNED_INT,
                     UNSIGNED_LONGLONG,
                     UNSIGNED_SHORT,
                     Type,
)
from .vertex import (
                     Const,
                     InOut,
                     Input,
                     LocalArray,
                     MultiVertex,
                     Output,
                     TypeParam,
                     Vector,
                     VectorList,
                     Vertex,
)

__version__ = "0.1.0"

__all__ = [
    "BOOL", "CHAR", "FLOAT", "HALF", "INT", "LONGLONG", "SHORT", "SIGNED_CHAR", "UNSIGNED_CHAR",
    "UNSIGNED_INT", "UNSIGNED_LONGLONG", "UNSIGNED_SHORT", "CodeletCompileError", "ComputeSet", "Const",
    "DataStream", "DebugContext", "DebugNameAndId", "Device", "DeviceManager", "Engine", "FieldRef",
    "Function", "Graph", "GraphConnectionError", "GraphCycleError", "GraphMemoryAllocationError",
    "IPUModel", "InOut", "Input", "Interval", "InvalidArgumentError", "InvalidMachineModelError",
    "InvalidOptionError", "InvalidTileMappingError", "LocalArray", "MissingCycleEstimateError",
    "MultiVertex", "OptionTypeError", "Output", "Policy", "PoplarError", "PoplarTypeError", "ProgramError",
    "StreamCallback", "StreamError", "Target", "TargetType", "Tensor", "TensorArgumentError",
    "TensorCloneMethod", "TensorCreationError", "Type", "TypeParam", "UnknownFieldError",
    "UnknownVertexTypeError", "UpsampleMethod", "VariableMappingMethod", "VariableRef", "Vector",
    "VectorList", "Vertex", "VertexError", "VertexRef", "append", "concat", "program",
]
