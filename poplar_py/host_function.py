"""HostFunction: a function of the host that a program calls (``graph.addHostFunction``).

``graph.addHostFunction(handle, inputs, outputs)`` declares it: ``inputs`` and ``outputs`` are
lists of ``(type, numElements)`` (Poplar's ``HostFunctionArgument``). ``program.Call(f, inputTensors,
outputTensors)`` calls it: when the run gets there, the tiles sync with the host, the input
tensors' values travel to the host, the function connected with ``Engine.connectHostFunction``
is called with them as numpy arrays and fills the output arrays, and those travel back into the
output tensors; the step costs what a stream copy of those bytes both ways does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .checks.arguments import checked_int
from .errors import InvalidArgumentError
from .types import Type, asType


@dataclass(frozen=True)
class HostFunction:
    """The handle ``graph.addHostFunction`` returns."""

    handle_: str
    inputs: tuple[tuple[Type, int], ...]
    outputs: tuple[tuple[Type, int], ...]
    owner: int = field(default=0, repr=False)  # the graph's token, as ComputeSet's

    def handle(self) -> str:
        return self.handle_


def checked_arguments(args: Any, what: str) -> tuple[tuple[Type, int], ...]:
    """A host function's inputs or outputs: a list of ``(type, numElements)``."""
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise InvalidArgumentError(f"{what} must be a list of (type, numElements), got {type(args).__name__} "
                                   f"{args!r:.40}")
    out = []
    for i, arg in enumerate(args):
        if isinstance(arg, (str, bytes)) or not isinstance(arg, Sequence) or len(arg) != 2:
            raise InvalidArgumentError(f"{what}[{i}] must be a (type, numElements) pair, got {arg!r:.40}")
        out.append((asType(arg[0]), checked_int(arg[1], f"{what}[{i}]: numElements")))
    return tuple(out)
