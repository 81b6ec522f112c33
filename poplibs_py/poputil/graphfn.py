"""Graph functions (GraphFunction.hpp, ``poputil::graphfn``): build a piece of graph once and call it
on different tensors.

A function's body is built when the function object is made, on parameter tensors cloned from
the signature's example tensors (same shapes, types and tile mappings), and registered with
``graph.addFunction`` (or kept as a Sequence when ``inlined``). Each call copies its input
arguments into the parameters, runs the body (``Call``), and copies the parameters back into its
output arguments: the vertices and compute sets exist once however often the function is
called, and each call costs the copies.

    from poplibs_py.poputil import graphfn

    sig = [graphfn.input(a, "a"), graphfn.input(b, "b"), graphfn.output(c, "c")]
    addFn = graphfn.VoidFunction(graph, sig, lambda args, seq: popops.addWithOutput(
        graph, args[0], args[1], args[2], seq))
    addFn([x, y, z], seq)            # z = x + y
    addFn([z, y, w], seq)            # w = z + y, the same vertices

``TensorFunction``'s body returns a tensor it created, and each call returns a new tensor (a
clone of it) holding the result; ``ProgramFunction``'s body returns a program, and each call
returns a program (the copies and the call). As in C++, the argument list of a call is updated
in place: a ``created`` argument's slot receives the tensor the call made.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from typing import Any

from poplar_py import DebugContext, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from .debug_info import PoplibsOpDebugInfo
from .errors import PoplibsArgumentError, PoplibsError

__all__ = ["ArgSig", "ArgType", "CreatedArg", "InOutArg", "InputArg", "OutputArg", "ProgramFunction",
           "Signature", "TensorFunction", "VoidFunction", "created", "inout", "input", "output"]


class ArgType(enum.Enum):
    """How a function uses an argument: read (copied in), written (copied out), both, or made by
    the function (a new tensor returned in the argument's slot)."""
    InputArg = "InputArg"
    OutputArg = "OutputArg"
    InOutArg = "InOutArg"
    CreatedArg = "CreatedArg"


InputArg, OutputArg = ArgType.InputArg, ArgType.OutputArg
InOutArg, CreatedArg = ArgType.InOutArg, ArgType.CreatedArg


class ArgSig:
    """One parameter of a signature: its ArgType, a tensor like the arguments it will take (the
    parameter is a clone of it: same shape, type and tile mapping; none for a created argument)
    and a debug name."""

    __slots__ = ("debugName", "similarTensor", "type")

    def __init__(self, type: ArgType, similarTensor: Tensor | None, debugName: str = "") -> None:  # noqa: A002
        if not isinstance(type, ArgType):
            raise PoplibsArgumentError(f"ArgSig: type must be a graphfn.ArgType, got {type!r:.40}")
        if type is not ArgType.CreatedArg and not isinstance(similarTensor, Tensor):
            raise PoplibsArgumentError(f"ArgSig: a {type.name} parameter '{debugName}' needs a tensor its "
                                       f"arguments will be like, got {similarTensor!r:.40}")
        self.type = type
        self.similarTensor = similarTensor
        self.debugName = debug_name(debugName, "ArgSig: debugName")

    def __repr__(self) -> str:
        like = f", like {self.similarTensor!r}" if self.similarTensor is not None else ""
        return f"ArgSig({self.type.name}, {self.debugName!r}{like})"


Signature = list  # a list of ArgSig, as PopLibs' std::vector<ArgSig>


def input(similar: Tensor, debugName: str = "") -> ArgSig:  # noqa: A001 (PopLibs' name)
    """A parameter the function reads: each call copies its argument in."""
    return ArgSig(ArgType.InputArg, similar, debugName)


def inout(similar: Tensor, debugName: str = "") -> ArgSig:
    """A parameter the function reads and writes: copied in before the call and out after it."""
    return ArgSig(ArgType.InOutArg, similar, debugName)


def output(similar: Tensor, debugName: str = "") -> ArgSig:
    """A parameter the function writes: each call copies it out into its argument."""
    return ArgSig(ArgType.OutputArg, similar, debugName)


def created(debugName: str = "") -> ArgSig:
    """A tensor the function's body makes (it sets the parameter's slot): each call clones it
    into a new tensor, put in the argument's slot, and copies the result there."""
    return ArgSig(ArgType.CreatedArg, None, debugName)


def _takes_debug(f: Callable[..., Any], plain: int) -> bool:
    """Whether body ``f`` takes the DebugNameAndId after its ``plain`` arguments (the second C++
    overload): it accepts ``plain + 1`` positional arguments."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required) > plain or (len(positional) > plain and len(required) <= plain + 1
                                     and positional[plain].name in ("dnai", "debugNameAndId", "di"))


def _label(sig: ArgSig, i: int) -> str:
    return f"argument {i}" + (f" ('{sig.debugName}')" if sig.debugName else "")


class VoidFunction:
    """``VoidFunction(graph, signature, f, inlined=False, debugContext="")``: the body ``f(params,
    seq)`` (or ``f(params, seq, dnai)``) adds its work to ``seq``, reading and writing the
    parameter tensors ``params`` (clones of the signature's tensors; a created parameter's slot is
    None until the body sets it). ``fn(args, seq)`` adds a call on ``args`` to ``seq``."""

    def __init__(self, graph: Graph, sig: list[ArgSig], f: Callable[..., Any], inlined: bool = False,
                 debugContext: Any = "") -> None:
        what = type(self).__name__
        if not isinstance(graph, Graph):
            raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__}")
        if isinstance(sig, ArgSig) or not isinstance(sig, (list, tuple)) or \
                not all(isinstance(s, ArgSig) for s in sig):
            raise PoplibsArgumentError(f"{what}: the signature must be a list of graphfn.ArgSig (from input, "
                                       f"output, inout, created), got {sig!r:.60}")
        if not callable(f):
            raise PoplibsArgumentError(f"{what}: the body must be callable, got {type(f).__name__}")
        if not isinstance(inlined, bool):
            raise PoplibsArgumentError(f"{what}: inlined must be a bool, got {inlined!r:.40}")
        di = PoplibsOpDebugInfo(debugContext, {"inlined": inlined}, what)
        self.graph, self.sig, self.inlined = graph, list(sig), inlined
        self.prog = prog_.Sequence(name=di.getPathName())
        self.params: list[Tensor | None] = []
        for i, s in enumerate(self.sig):
            if s.type is ArgType.CreatedArg:
                self.params.append(None)
                continue
            if not graph.owns(s.similarTensor):
                raise PoplibsArgumentError(f"{what}: the tensor of {_label(s, i)} of the signature belongs "
                                           "to another graph")
            name = debug_name(DebugContext(di, s.debugName or f"param{i}"))
            self.params.append(graph.clone(s.similarTensor, name))
        if _takes_debug(f, 2):
            f(self.params, self.prog, di)
        else:
            f(self.params, self.prog)
        for i, s in enumerate(self.sig):
            if s.type is ArgType.CreatedArg and not (isinstance(self.params[i], Tensor)
                                                     and graph.owns(self.params[i])):
                raise PoplibsError(f"{what}: the body must set the slot of created {_label(s, i)} to a "
                                   f"tensor of the graph, got {self.params[i]!r:.40}")
        self.func = None if inlined else graph.addFunction(self.prog)

    def _check_args(self, args: Any, what: str) -> None:
        if not isinstance(args, list):
            raise PoplibsArgumentError(f"{what}: the arguments must be a list of tensors (updated in place), "
                                       f"got {type(args).__name__} {args!r:.40}")
        if len(args) != len(self.sig):
            raise PoplibsArgumentError(f"{what}: {len(args)} arguments for a signature of {len(self.sig)}")
        for i, (a, s) in enumerate(zip(args, self.sig)):
            if s.type is ArgType.CreatedArg:
                continue
            p = self.params[i]
            if not isinstance(a, Tensor):
                raise PoplibsArgumentError(f"{what}: {_label(s, i)} must be a tensor, got {type(a).__name__} "
                                           f"{a!r:.40}")
            if not self.graph.owns(a):
                raise PoplibsArgumentError(f"{what}: {_label(s, i)}, tensor '{a.name}', belongs to another "
                                           "graph")
            if a.elementType() != p.elementType() or a.numElements() != p.numElements():
                raise PoplibsError(f"{what}: {_label(s, i)}, tensor '{a.name}' of {a.elementType()} "
                                   f"{a.shape()}, does not match the signature's {p.elementType()} "
                                   f"{p.shape()}")

    def __call__(self, args: list[Tensor | None], seq: prog_.Sequence, debugContext: Any = "") -> None:
        what = f"{type(self).__name__} call"
        self._check_args(args, what)
        if not isinstance(seq, prog_.Sequence):
            raise PoplibsArgumentError(f"{what}: seq must be a program Sequence, got {type(seq).__name__}")
        di = PoplibsOpDebugInfo(debugContext, {"args": [a for a in args if a is not None]}, what)
        for i, s in enumerate(self.sig):
            if s.type in (ArgType.InputArg, ArgType.InOutArg):
                seq.add(prog_.Copy(args[i], self.params[i], False, debug_name(DebugContext(di, f"in{i}"))))
        if self.inlined:
            seq.add(self.prog)
        else:
            seq.add(prog_.Call(self.func, di.getPathName()))
        for i, s in enumerate(self.sig):
            if s.type is ArgType.CreatedArg:
                args[i] = self.graph.clone(self.params[i],
                                           debug_name(DebugContext(di, s.debugName or f"created{i}")))
            if s.type in (ArgType.OutputArg, ArgType.InOutArg, ArgType.CreatedArg):
                seq.add(prog_.Copy(self.params[i], args[i], False, debug_name(DebugContext(di, f"out{i}"))))


class ProgramFunction:
    """``ProgramFunction(graph, signature, f, inlined=False, debugContext="")``: the body
    ``f(params)`` (or ``f(params, dnai)``) returns a program; ``fn(args)`` returns a program
    that copies ``args`` in, calls it and copies the results out."""

    def __init__(self, graph: Graph, sig: list[ArgSig], f: Callable[..., Any], inlined: bool = False,
                 debugContext: Any = "") -> None:
        if not callable(f):
            raise PoplibsArgumentError(f"ProgramFunction: the body must be callable, got {type(f).__name__}")
        takes_debug = _takes_debug(f, 1)

        def body(params: list[Tensor | None], seq: prog_.Sequence, dnai: Any) -> None:
            p = f(params, dnai) if takes_debug else f(params)
            if not isinstance(p, prog_.Program):
                raise PoplibsError(f"ProgramFunction: the body must return a program, got {type(p).__name__}")
            seq.add(p)

        self._void = VoidFunction(graph, sig, body, inlined, debugContext)

    def __call__(self, args: list[Tensor | None], debugContext: Any = "") -> prog_.Sequence:
        di = PoplibsOpDebugInfo(debugContext, None, "ProgramFunction call")
        seq = prog_.Sequence(name=di.getPathName())
        self._void(args, seq, di)
        return seq


class TensorFunction:
    """``TensorFunction(graph, signature, f, inlined=False, debugContext="")``: the body
    ``f(params, seq)`` (or ``f(params, seq, dnai)``) adds its work to ``seq`` and returns the
    tensor it made; ``fn(args, seq)`` adds a call to ``seq`` and returns a new tensor holding
    that call's result."""

    def __init__(self, graph: Graph, sig: list[ArgSig], f: Callable[..., Any], inlined: bool = False,
                 debugContext: Any = "") -> None:
        if not callable(f):
            raise PoplibsArgumentError(f"TensorFunction: the body must be callable, got {type(f).__name__}")
        if isinstance(sig, ArgSig) or not isinstance(sig, (list, tuple)):
            raise PoplibsArgumentError(f"TensorFunction: the signature must be a list of graphfn.ArgSig, got "
                                       f"{sig!r:.60}")
        takes_debug = _takes_debug(f, 2)

        def body(params: list[Tensor | None], seq: prog_.Sequence, dnai: Any) -> None:
            # the body sees the signature's parameters (not the slot of its result)
            visible = params[:-1]
            result = f(visible, seq, dnai) if takes_debug else f(visible, seq)
            if not isinstance(result, Tensor):
                raise PoplibsError(f"TensorFunction: the body must return the tensor it made, got "
                                   f"{type(result).__name__} {result!r:.40}")
            params[-1] = result

        self._void = VoidFunction(graph, [*sig, created("result")], body, inlined, debugContext)

    def __call__(self, args: list[Tensor], prog: prog_.Sequence, debugContext: Any = "") -> Tensor:
        di = PoplibsOpDebugInfo(debugContext, None, "TensorFunction call")
        if not isinstance(args, list):
            raise PoplibsArgumentError(f"TensorFunction call: the arguments must be a list of tensors, got "
                                       f"{type(args).__name__} {args!r:.40}")
        full: list[Tensor | None] = [*args, None]
        self._void(full, prog, di)
        args[:] = full[:-1]
        result = full[-1]
        di.addOutput(result)
        return result
