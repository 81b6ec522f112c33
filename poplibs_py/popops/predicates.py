"""popops: allTrue (AllTrue.hpp), hasNaN and hasNaNOrInf (NaN.hpp): one boolean for a tensor.

Each is a reduction (LOGICAL_AND or LOGICAL_OR over every element) of the tensor, or of a
boolean tensor that an element-wise codelet (``IsNaN``, ``Not(IsFinite)``) computes on the
tiles holding ``src``; the reduction's vertices run where the elements live and a second
stage combines the partial results, so the answer is a 0-D BOOL tensor on the device.
"""

from __future__ import annotations

from poplar_py import BOOL, FLOAT, HALF, Graph, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError, tensorArgument
from . import expr as pe
from .expr_map import map as map_
from .reduce import Operation, reduce

__all__ = ["allTrue", "hasNaN", "hasNaNOrInf"]


def _reduce_all(graph: Graph, t: Tensor, op: Operation, prog: prog_.Sequence, name: str) -> Tensor:
    """``t`` reduced with ``op`` over every element, as a 0-D tensor."""
    flat = t.flatten()
    if flat.numElements() == 0:  # the reduction's identity: AND of nothing is true, OR false
        out = graph.addConstant(BOOL, [], op is Operation.LOGICAL_AND, f"{name}/empty")
        graph.setTileMapping(out, 0)
        return out
    return reduce(graph, flat, [0], op, prog, name)


def allTrue(graph: Graph, A: Tensor, prog: prog_.Sequence, debugContext: str = "") -> Tensor:
    """A 0-D BOOL tensor: whether every element of the BOOL tensor ``A`` is true.

    A LOGICAL_AND reduction of ``A`` on the tiles that hold it (true for an empty ``A``).
    """
    name = debugContext or "allTrue"
    A = tensorArgument(graph, A, name)
    if A.elementType() != BOOL:
        raise PoplibsError(f"{name}: tensor '{A.name}' must be BOOL, not {A.elementType()}")
    return _reduce_all(graph, A, Operation.LOGICAL_AND, prog, name)


def _check_float(graph: Graph, src: Tensor, name: str) -> Tensor:
    src = tensorArgument(graph, src, name)
    if src.elementType() not in (FLOAT, HALF):
        raise PoplibsError(f"{name}: tensor '{src.name}' must be FLOAT or HALF, not {src.elementType()}")
    return src


def hasNaN(graph: Graph, src: Tensor, prog: prog_.Sequence, debugContext: str = "") -> Tensor:
    """A 0-D BOOL tensor: whether the FLOAT or HALF tensor ``src`` holds a NaN.

    An ``IsNaN`` map on the tiles holding ``src``, then a LOGICAL_OR reduction.
    """
    name = debugContext or "hasNaN"
    src = _check_float(graph, src, name)
    if src.numElements() == 0:
        return _reduce_all(graph, src, Operation.LOGICAL_OR, prog, name)
    flags = map_(graph, pe.IsNaN(pe._1), [src.flatten()], prog, f"{name}/isNaN")
    return _reduce_all(graph, flags, Operation.LOGICAL_OR, prog, name)


def hasNaNOrInf(graph: Graph, src: Tensor, prog: prog_.Sequence, debugContext: str = "") -> Tensor:
    """A 0-D BOOL tensor: whether the FLOAT or HALF tensor ``src`` holds a NaN or an infinity.

    A ``Not(IsFinite)`` map on the tiles holding ``src``, then a LOGICAL_OR reduction.
    """
    name = debugContext or "hasNaNOrInf"
    src = _check_float(graph, src, name)
    if src.numElements() == 0:
        return _reduce_all(graph, src, Operation.LOGICAL_OR, prog, name)
    flags = map_(graph, pe.Not(pe.IsFinite(pe._1)), [src.flatten()], prog, f"{name}/notFinite")
    return _reduce_all(graph, flags, Operation.LOGICAL_OR, prog, name)
