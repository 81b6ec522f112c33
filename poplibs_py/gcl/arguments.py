"""Checks of the arguments of gcl's functions, made before anything is added to the graph: a
wrong kind of argument raises a PoplibsArgumentError (an InvalidArgumentError) naming the
function and the argument, as the rest of the API does."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from poplar_py import Graph, Tensor
from poplar_py import program as prog_
from poplar_py.checks.arguments import is_int
from poplar_py.debug import debug_name
from poplar_py.errors import GraphReplicationError

from ..popops import expr as pe
from ..poputil import PoplibsArgumentError, PoplibsError, tensorArgument
from .groups import CommGroup, CommGroupType
from .operators import CollectiveOperator, combine_expr
from .tensor_lists import checked_list

F = TypeVar("F", bound=Callable[..., Any])


def group_at(position: int) -> Callable[[F], F]:
    """A collective that takes a CommGroup at ``position`` (GCL's place, right after ``prog``) and
    can still be called as before groups: a positional argument there that is not a group (nor a
    CommGroupType, a likely slip) is the next parameter's, the group left to its default."""
    def wrap(f: F) -> F:
        @functools.wraps(f)
        def call(*args: Any, **kwargs: Any) -> Any:
            if len(args) > position and not isinstance(args[position], (CommGroup, CommGroupType)):
                args = (*args[:position], None, *args[position:])
            return f(*args, **kwargs)
        return call  # type: ignore[return-value]
    return wrap


def checked_group(group: Any, graph: Graph, what: str) -> tuple[tuple[int, ...], ...]:
    """The replica groups ``group`` (a CommGroup, None for every replica) makes of ``graph``'s
    replicas, each in ascending order."""
    if group is None:
        group = CommGroup()
    if not isinstance(group, CommGroup):
        raise PoplibsArgumentError(f"{what}: group must be a gcl.CommGroup, got {type(group).__name__} "
                                   f"{group!r:.40}")
    try:
        return group.groups(graph.getReplicationFactor())
    except GraphReplicationError as exc:
        raise GraphReplicationError(f"{what}: {group!r}: {exc}") from None


def checked_call(what: str, graph: Any, t: Any, prog: Any, debugContext: Any,
                 options: Any, many: bool = False) -> tuple[str, Any]:
    """The arguments every gcl function takes, checked: returns the debug name of what the call
    adds (``what`` unless ``debugContext`` names it) and the tensor (with ``many``, a list or
    tuple of tensors of one element type may be given instead: returned as a list)."""
    if not isinstance(graph, Graph):
        raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__} "
                                   f"{graph!r:.40}")
    if many and isinstance(t, (list, tuple)):
        t = checked_list(graph, t, what)
    else:
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


def checked_root(root: Any, group: Any, groups: tuple[tuple[int, ...], ...], what: str) -> int:
    """``root`` (an integer, numpy's too), the index of a replica within each of ``groups`` (the
    replica index for one group of every replica)."""
    if not is_int(root):
        raise PoplibsArgumentError(f"{what}: rootReplica must be an integer, got {type(root).__name__} "
                                   f"{root!r:.40}")
    size = len(groups[0])
    if not 0 <= root < size:
        where = f"the graph has {size} replica(s)" if len(groups) == 1 else \
            f"each group of {group!r} has {size} replica(s)"
        raise GraphReplicationError(f"{what}: rootReplica {root} is out of range: {where}, 0..{size - 1}")
    return int(root)


def checked_writeable(t: Tensor, op: CollectiveOperator, what: str) -> None:
    """``t`` can take the result of an in-place collective that writes it (every operator but
    LOCAL, on a tensor with elements): no constants, no aliased elements."""
    if op is not CollectiveOperator.LOCAL and t.numElements() and not t.isParallelWriteable():
        raise PoplibsError(f"{what}: tensor '{t.name}' contains constants or aliased elements, so the "
                           f"result of {op.name} cannot be written into it")
