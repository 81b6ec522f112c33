"""popops: countedLoop (Loop.hpp), a Repeat whose body sees its induction variable.

The induction variable is a ``[1]`` UNSIGNED_INT variable on tile 0: a Copy from a constant
sets it to ``begin`` before the loop, and at the end of every pass an ``addInPlace`` vertex on
tile 0 adds ``step`` to it, so the body's programs read the current count on the device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from poplar_py import UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsArgumentError, PoplibsError
from .elementwise import addInPlace

__all__ = ["countedLoop"]

Body = Callable[[Tensor], prog_.Program]


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PoplibsArgumentError(f"countedLoop: {what} must be a non-negative integer, got {value!r:.40}")
    return value


def countedLoop(graph: Graph, *args: Any, debugContext: str = "") -> prog_.Sequence:
    """A program running ``body(i)`` for ``i = begin, begin + step, ...`` while ``i < end``.

    ``countedLoop(graph, count, body[, debugContext])`` counts from 0 to ``count``;
    ``countedLoop(graph, begin, end, step, body[, debugContext])`` as PopLibs'. ``body`` is
    called once, with the induction variable (a ``[1]`` UNSIGNED_INT tensor on tile 0), and
    returns the loop body Program. The result is a Sequence: the counter's initial Copy, then a
    ``Repeat`` of ``ceil((end - begin) / step)`` passes of the body and the increment.
    ``step == 0`` or ``begin >= end`` raise PoplibsError, as in PopLibs.
    """
    if args and isinstance(args[-1], str) and not callable(args[-1]):
        args, debugContext = args[:-1], args[-1]
    if len(args) == 2:
        begin, end, step, body = 0, _count(args[0], "count"), 1, args[1]
    elif len(args) == 4:
        begin, end, step = (_count(a, w) for a, w in zip(args[:3], ("begin", "end", "step")))
        body = args[3]
    else:
        raise PoplibsArgumentError("countedLoop(graph, count, body) or countedLoop(graph, begin, end, step, "
                                   f"body), got {len(args)} arguments after graph")
    name = debugContext or "countedLoop"
    if step == 0:
        raise PoplibsError(f"{name}: step must be greater than zero")
    if begin >= end:
        raise PoplibsError(f"{name}: begin ({begin}) must be less than end ({end})")
    if not callable(body):
        raise PoplibsArgumentError(f"{name}: body must be a function of the counter returning a Program, "
                                   f"got {type(body).__name__}")
    counter = graph.addVariable(UNSIGNED_INT, [1], f"{name}/counter")
    t_begin = graph.addConstant(UNSIGNED_INT, [1], begin, f"{name}/begin-{begin}")
    t_step = graph.addConstant(UNSIGNED_INT, [1], step, f"{name}/step-{step}")
    for t in (counter, t_begin, t_step):
        graph.setTileMapping(t, 0)
    inner = body(counter)
    if not isinstance(inner, prog_.Program):
        raise PoplibsArgumentError(f"{name}: body must return a Program, returned {type(inner).__name__}")
    body_prog = prog_.Sequence([inner])
    addInPlace(graph, counter, t_step, body_prog, f"{name}/increment")
    passes = (end - begin + step - 1) // step
    return prog_.Sequence([prog_.Copy(t_begin, counter), prog_.Repeat(passes, body_prog)])
