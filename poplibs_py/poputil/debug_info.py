"""PopLibs' debug information (DebugInfo.hpp): what an operation was called with and what it made.

A PopLibs operation opens a ``PoplibsOpDebugInfo`` from the caller's debug context, with its
arguments turned into profile values (:func:`toProfileValue`), and records its outputs. The
debug info *is* a ``poplar_py.DebugNameAndId`` (as Poplar's converts to one): pass it, or
``poplar.DebugContext(di, "part")``, wherever a debug name goes, and the tensors and programs
it names are named after the operation's context (``"layer1/fc/part"``).

Profile values are plain Python values here: str, int, float, bool, and dicts of them (Poplar's
``ProfileValue::Map``) or lists (``ProfileValue::Vector``). :meth:`OpDebugInfo.getValue` and
:attr:`OpDebugInfo.values` read what was recorded; poplar-py keeps no profile of debug infos.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from poplar_py import ComputeSet, DebugContext, DebugNameAndId, Tensor, Type
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from .errors import PoplibsArgumentError

__all__ = ["DI_ARGS", "ArgType", "OpDebugInfo", "PoplibsOpDebugInfo", "toProfileValue"]

ProfileValue = Any  # str | int | float | bool | dict[str, ProfileValue] | list[ProfileValue]


def toProfileValue(value: Any) -> ProfileValue:
    """``value`` as a profile value, as PopLibs' ``toProfileValue`` overloads make them:

    - numbers, bools and strings as they are (numpy scalars as Python's);
    - a tensor as ``{"shape": "[2, 3]", "type": "float"}``; a Type as its name;
      a TensorCloneMethod (any enum) as its name; a ComputeSet as its id;
    - a program as ``"<poplar::program::Copy>"`` (its class);
    - options (a dict) as a dict of strings (an OptionFlags' profile value);
    - a list or tuple as a dict keyed ``"0"``, ``"1"``... (a ``std::vector``); a numpy array as
      a list of values (an ``ArrayRef``);
    - None as ``"<nullptr>"``;
    - anything else with ``toProfileValue()`` as what that returns, else as ``str(value)``.
    """
    if value is None:
        return "<nullptr>"
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Tensor):
        return {"shape": "[" + ", ".join(str(d) for d in value.shape()) + "]",
                "type": str(value.elementType())}
    if isinstance(value, Type):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, ComputeSet):
        return value.getId()
    if isinstance(value, prog_.Program):
        return f"<poplar::program::{type(value).__name__}>"
    if isinstance(value, (DebugContext, DebugNameAndId)):
        return debug_name(value)
    if isinstance(value, Mapping):
        return {str(k): _option_value(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [toProfileValue(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, (list, tuple)):
        return {str(i): toProfileValue(v) for i, v in enumerate(value)}
    own = getattr(value, "toProfileValue", None)
    if callable(own):
        return own()
    return str(value)


def _option_value(v: Any) -> str:
    """An option's value as OptionFlags holds it: a string (bools as true/false)."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    return v if isinstance(v, str) else str(v)


class ArgType:
    """One named argument (or output) of an operation and its profile value: ``ArgType(name,
    value)`` takes the value as it is (a profile value); ``ArgType.of(name, anything)`` converts
    it with :func:`toProfileValue`."""

    __slots__ = ("n", "pv")

    def __init__(self, name: Any, value: ProfileValue = None) -> None:
        if isinstance(name, tuple) and value is None and len(name) == 2:
            name, value = name
        if not isinstance(name, str):
            raise PoplibsArgumentError(f"ArgType: the argument's name must be a string, got {name!r:.40}")
        self.n, self.pv = name, value

    @classmethod
    def of(cls, name: str, value: Any) -> ArgType:
        return cls(name, toProfileValue(value))

    def __repr__(self) -> str:
        return f"ArgType({self.n!r}, {self.pv!r})"


def DI_ARGS(**arguments: Any) -> list[ArgType]:
    """PopLibs' ``DI_ARGS(a, b, c)``: ``DI_ARGS(a=a, b=b, c=c)`` is the arguments as ArgTypes,
    each value through :func:`toProfileValue` (C++ takes the names from the expressions)."""
    return [ArgType.of(name, value) for name, value in arguments.items()]


def _args(args: Any, what: str) -> list[ArgType]:
    """ArgTypes from a list of ArgTypes or (name, value) pairs, or a dict of names to values."""
    if args is None:
        return []
    if isinstance(args, Mapping):
        return [ArgType.of(str(k), v) for k, v in args.items()]
    if isinstance(args, (str, bytes)) or not isinstance(args, Iterable):
        raise PoplibsArgumentError(f"{what}: arguments must be a list of ArgType or a dict of names to "
                                   f"values, got {type(args).__name__} {args!r:.40}")
    out = []
    for a in args:
        if isinstance(a, ArgType):
            out.append(a)
        elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str):
            out.append(ArgType.of(*a))
        else:
            raise PoplibsArgumentError(f"{what}: an argument must be an ArgType or a (name, value) pair, got "
                                       f"{a!r:.40}")
    return out


class OpDebugInfo(DebugNameAndId):
    """Poplar's ``DebugInfo`` of layer ``"poplibs"`` with an ``"api"`` value: the debug
    information of one operation, a DebugNameAndId named after the caller's debug context."""

    def __init__(self, debugContext: Any, api: str) -> None:
        try:
            path = debug_name(debugContext, "OpDebugInfo: debugContext")
        except Exception as e:  # an InvalidArgumentError, raised again as PopLibs' own
            raise PoplibsArgumentError(str(e)) from None
        super().__init__(path)
        if not isinstance(api, str):
            raise PoplibsArgumentError(f"OpDebugInfo: api must be a string, got {api!r:.40}")
        self._values: dict[str, ProfileValue] = {}
        self.setValue("api", api)

    def getPathName(self) -> str:
        """The path name of the debug context it was made from."""
        return self.getName()

    def getLayer(self) -> str:
        return "poplibs"

    def setValue(self, name: str, value: ProfileValue) -> bool:
        """Record ``value`` under ``name`` (replacing any); True, as Poplar's when it is set."""
        if not isinstance(name, str):
            raise PoplibsArgumentError(f"setValue: the name must be a string, got {name!r:.40}")
        self._values[name] = value
        return True

    def getValue(self, name: str) -> ProfileValue:
        """The value recorded under ``name``; KeyError if none."""
        return self._values[name]

    @property
    def values(self) -> dict[str, ProfileValue]:
        """Everything recorded: ``{"api": ..., "args": {...}, "output": {...}}``."""
        return dict(self._values)

    def add(self, name: str, args: Any) -> None:
        """``add(name, [ArgType...])``: the arguments as a dict under ``name`` (nothing when there
        are none); ``add(name, profileValue)``: the value itself."""
        if isinstance(args, (list, tuple)) and all(isinstance(a, ArgType) for a in args):
            if args:
                self.setValue(name, {a.n: a.pv for a in args})
        else:
            self.setValue(name, args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.getName()!r}, api={self._values.get('api')!r})"


class PoplibsOpDebugInfo(OpDebugInfo):
    """``PoplibsOpDebugInfo(debugContext, args=[], api=<the calling function's name>)``: the debug
    info a PopLibs operation opens, ``args`` (a list of ArgType, say from :func:`DI_ARGS`, or a
    dict of names to values) recorded under ``"args"``."""

    def __init__(self, debugContext: Any, args: Any = None, api: str | None = None) -> None:
        if api is None:
            api = sys._getframe(1).f_code.co_name  # C++'s __builtin_FUNCTION()
        super().__init__(debugContext, api)
        self.add("args", _args(args, "PoplibsOpDebugInfo"))

    def addOutputs(self, outputs: Any) -> None:
        """Record several outputs (ArgTypes, or a dict of names to values) under ``"outputs"``."""
        self.add("outputs", _args(outputs, "PoplibsOpDebugInfo.addOutputs"))

    def addOutput(self, output: Tensor) -> None:
        """Record the one output tensor under ``"output"``."""
        self.setValue("output", toProfileValue(output))
