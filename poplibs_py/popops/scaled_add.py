"""popops scaled add (PopLibs' ScaledAdd.hpp): ``A += scaleB * B`` and ``A = scaleA * A + scaleB * B``.

Each call is one fused ``mapInPlace`` on ``A``: the tiles that hold ``A`` compute their
elements (B is staged to them where it lives elsewhere), costed as PopLibs' ``ScaledAddSupervisor``,
``ScaledSubtractSupervisor`` or ``aXPlusbYSupervisor`` vertex. A scale is a Python number (a 0-D
constant of A's type) or a one-element tensor of type FLOAT or of A's type; B may have another
type than A and is converted to A's type, as in PopLibs.
"""

from __future__ import annotations

import enum

from poplar_py import FLOAT, ComputeSet, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, trailingArguments
from . import expr as pe
from .expr_map import ProgOrCs, mapAsVertex
from .perf_estimation import scaledAddCost

__all__ = ["ScaledAddSpecialisation", "scaledAddTo", "scaledSubtractFrom"]

Scale = Tensor | int | float
#: the options PopLibs' scaled add knows (its vertex choices: checked, and change nothing here)
SCALED_ADD_OPTIONS = frozenset({"optimizeForSpeed", "scaleFloatToHalfTolerance"})


class ScaledAddSpecialisation(enum.Enum):
    DEFAULT = 0
    X_MINUS_AX_PLUS_BY = 1  # A = (1 - scaleA) * A + scaleB * B


def _scale(graph: Graph, A: Tensor, s: Scale, what: str) -> Tensor:
    if isinstance(s, Tensor):
        if s.numElements() != 1 or s.elementType() not in (FLOAT, A.elementType()):
            raise PoplibsError(f"scaled add: {what} must be one element of type float or "
                               f"{A.elementType()}, got '{s.name}' {s.elementType()} of shape {s.shape()}")
        return s.reshape([])
    if not isinstance(s, (int, float)):
        raise PoplibsError(f"scaled add: {what} must be a number or a tensor, got {s!r}")
    const = graph.addConstant(A.elementType(), [], s, f"scaledAdd.{what}")
    graph.setTileMapping(const, 0)
    return const


def _as(e: pe.Expr, t: Tensor, A: Tensor) -> pe.Expr:
    return e if t.elementType() == A.elementType() else pe.Cast(e, A.elementType())


def _scaled(graph: Graph, A: Tensor, args: tuple, subtract: bool, name: str, debugName: str,
            options: dict | None, specialisation: ScaledAddSpecialisation) -> None:
    progs = [i for i, a in enumerate(args) if isinstance(a, (prog_.Sequence, ComputeSet))]
    if not progs or progs[0] not in (2, 3):
        raise PoplibsArgumentError(f"{name} takes (graph, A, B, scaleB, prog) or (graph, A, scaleA, B, "
                                   "scaleB, prog), then optionally debugContext and options")
    if progs[0] == 2:  # (B, scaleB, prog)
        (B, scaleB, prog), rest = args[:3], list(args[3:])
        scaleA = None
    else:  # (scaleA, B, scaleB, prog[, specialisation])
        (scaleA, B, scaleB, prog), rest = args[:4], list(args[4:])
        if rest and isinstance(rest[0], ScaledAddSpecialisation):
            if specialisation is not ScaledAddSpecialisation.DEFAULT:
                raise PoplibsArgumentError(f"{name}: specialisation given both positionally and by keyword")
            specialisation = rest.pop(0)
    debugName, options = trailingArguments(name, rest, {"debugContext": debugName, "options": options})
    debugName = debug_name(debugName, f"{name}: debugContext")
    checkOptions(options, SCALED_ADD_OPTIONS, name)
    if not isinstance(B, Tensor) or A.shape() != B.shape():
        raise PoplibsError(f"{name}: B must be a tensor of A's shape {A.shape()}, got {B!r}")
    ts = [A, B, _scale(graph, A, scaleB, "scaleB")]
    term = _as(pe._3, ts[2], A) * _as(pe._2, B, A)
    if scaleA is None:
        a_part: pe.Expr = pe._1
    else:
        ts.append(_scale(graph, A, scaleA, "scaleA"))
        factor = _as(pe._4, ts[3], A)
        if specialisation is ScaledAddSpecialisation.X_MINUS_AX_PLUS_BY:
            factor = 1 - factor
        a_part = factor * pe._1
    operation = ("AXMINUSBY" if subtract else "AXPLUSBY") if scaleA is not None else \
        ("SUBTRACT" if subtract else "ADD")
    mapAsVertex(graph, scaledAddCost(A.elementType(), B.elementType(), operation),
                a_part - term if subtract else a_part + term, ts, prog, debugName or name, inPlace=True)


def scaledAddTo(graph: Graph, A: Tensor, *args: Tensor | Scale | ProgOrCs, debugName: str = "",
                options: dict | None = None,
                specialisation: ScaledAddSpecialisation = ScaledAddSpecialisation.DEFAULT) -> None:
    """``scaledAddTo(graph, A, B, scaleB, prog)``: ``A += scaleB * B``;
    ``scaledAddTo(graph, A, scaleA, B, scaleB, prog[, specialisation])``: ``A = scaleA * A + scaleB * B``
    (``(1 - scaleA) * A`` with ``specialisation=X_MINUS_AX_PLUS_BY``); then, as in C++,
    ``debugContext`` and ``options`` (PopLibs' scaled add options, checked).

    Runs on the tiles holding ``A``, which must be parallel-writeable and of B's shape.
    """
    _scaled(graph, A, args, False, "scaledAddTo", debugName, options, specialisation)


def scaledSubtractFrom(graph: Graph, A: Tensor, *args: Tensor | Scale | ProgOrCs,
                       debugName: str = "", options: dict | None = None) -> None:
    """``scaledSubtractFrom(graph, A, B, scaleB, prog)``: ``A -= scaleB * B``;
    ``scaledSubtractFrom(graph, A, scaleA, B, scaleB, prog)``: ``A = scaleA * A - scaleB * B``;
    then optionally ``debugContext`` and ``options``, as :func:`scaledAddTo`.

    Runs on the tiles holding ``A``, which must be parallel-writeable and of B's shape.
    """
    _scaled(graph, A, args, True, "scaledSubtractFrom", debugName, options, ScaledAddSpecialisation.DEFAULT)
