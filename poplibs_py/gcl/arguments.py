"""Checks of the arguments of gcl's functions, made before anything is added to the graph: a
wrong kind of argument raises a PoplibsArgumentError (an InvalidArgumentError) naming the
function and the argument, as the rest of the API does."""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor
from poplar_py import program as prog_
from poplar_py.arguments import is_int
from poplar_py.debug import debug_name
from poplar_py.errors import GraphReplicationError

from ..popops import expr as pe
from ..poputil import PoplibsArgumentError, PoplibsError, tensorArgument
from .operators import CollectiveOperator, combine_expr


def checked_call(what: str, graph: Any, t: Any, prog: Any, debugContext: Any,
                 options: Any) -> tuple[str, Tensor]:
    """The arguments every gcl function takes, checked: returns the debug name of what the call
    adds (``what`` unless ``debugContext`` names it) and the tensor."""
    if not isinstance(graph, Graph):
        raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__} "
                                   f"{graph!r:.40}")
    t = tensorArgument(graph, t, f"{what}: the tensor")
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"{what}: prog must be a program Sequence (the collective adds its steps "
                                   f"to it), got {type(prog).__name__} {prog!r:.40}")
    name = debug_name(debugContext, f"{what}: debugContext") or what
    if options is not None:
        if not isinstance(options, dict):
            raise PoplibsArgumentError(f"{what}: options must be a dict of strings, got "
                                       f"{type(options).__name__} {options!r:.40}")
        bad = [k for k, v in options.items() if not (isinstance(k, str) and isinstance(v, str))]
        if bad:
            raise PoplibsArgumentError(f"{what}: options must be a dict of strings: option {bad[0]!r:.40} is "
                                       f"{options[bad[0]]!r:.40}")
    return name, t


def checked_op(op: Any, t: Tensor, what: str) -> CollectiveOperator:
    """``op``, a CollectiveOperator that can combine ``t``'s element type."""
    if not isinstance(op, CollectiveOperator):
        raise PoplibsArgumentError(f"{what}: op must be a gcl.CollectiveOperator, got {op!r:.40}")
    if op is CollectiveOperator.LOCAL:
        return op
    exprs = [combine_expr(op)]
    if op is CollectiveOperator.SQUARE_ADD:
        exprs.append(pe.Square(pe.PlaceHolder(1)))
    try:
        for e in exprs:
            pe.inferType(e, [t.elementType(), t.elementType()])
    except PoplibsError as exc:
        raise PoplibsArgumentError(f"{what}: {op.name} cannot combine tensor '{t.name}' of type "
                                   f"{t.elementType()}: {exc}") from None
    return op


def checked_root(root: Any, graph: Graph, what: str) -> int:
    """``root`` (an integer, numpy's too), the index of one of ``graph``'s replicas."""
    if not is_int(root):
        raise PoplibsArgumentError(f"{what}: rootReplica must be an integer, got {type(root).__name__} "
                                   f"{root!r:.40}")
    replicas = graph.getReplicationFactor()
    if not 0 <= root < replicas:
        raise GraphReplicationError(f"{what}: rootReplica {root} is out of range: the graph has {replicas} "
                                    f"replica(s), 0..{replicas - 1}")
    return int(root)


def checked_writeable(t: Tensor, op: CollectiveOperator, what: str) -> None:
    """``t`` can take the result of an in-place collective that writes it (every operator but
    LOCAL, on a tensor with elements): no constants, no aliased elements."""
    if op is not CollectiveOperator.LOCAL and t.numElements() and not t.isParallelWriteable():
        raise PoplibsError(f"{what}: tensor '{t.name}' contains constants or aliased elements, so the "
                           f"result of {op.name} cannot be written into it")
