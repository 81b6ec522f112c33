"""popops: countedLoop and countedForLoop (Loop.hpp): loops whose body sees a device counter.

countedLoop: the induction variable is a ``[1]`` UNSIGNED_INT variable on tile 0: a Copy from
a constant sets it to ``begin`` before the loop, and at the end of every pass an
``addInPlace`` vertex on tile 0 adds ``step`` to it, so the body's programs read the current
count on the device. The number of passes is fixed when the graph is built (a ``Repeat``).

countedForLoop differs: its end is a *tensor* read on the device at every pass (the body may
change it), the counter may be the caller's (INT or UNSIGNED_INT) and the test is ``count !=
countLimit``, so it is a ``RepeatWhileTrue`` whose condition is one ``ForLoopCounter`` vertex on
tile 0 (``count += countStep``, then the predicate ``count != countLimit``); a Copy first sets
the counter to ``initialCount - countStep`` so that the body sees ``initialCount`` first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from poplar_py import INT, UNSIGNED_INT, Graph, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsArgumentError, PoplibsError, templateVertex, tensorArgument
from .elementwise import addInPlace

__all__ = ["countedForLoop", "countedLoop"]

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


def countedForLoop(graph: Graph, *args: Any, debugContext: str = "") -> prog_.Sequence:
    """A program equivalent to ``for (count = initialCount; count != countLimit; count +=
    countStep) body``, the test made on the device at every pass (see the module docstring).

    ``countedForLoop(graph, count, initialCount, countLimit, countStep, body[, debugContext])``
    with the caller's ``count`` (one element, INT or UNSIGNED_INT, as ``countLimit``), or
    ``countedForLoop(graph, initialCount, countLimit, countStep, body[, debugContext])`` with a
    new 0-D count of ``countLimit``'s type on tile 0. ``body`` is a Program. As in PopLibs, a
    limit the count never equals loops for ever.
    """
    if args and isinstance(args[-1], str):
        args, debugContext = args[:-1], args[-1]
    name = debugContext or "countedForLoop"
    if len(args) == 5:
        count, args = tensorArgument(graph, args[0], f"{name}: count"), args[1:]
    elif len(args) != 4:
        raise PoplibsArgumentError(f"{name}: countedForLoop(graph, [count,] initialCount, countLimit, "
                                   f"countStep, body), got {len(args)} arguments after graph")
    else:
        count = None
    initial, limit, step, body = args
    limit = tensorArgument(graph, limit, f"{name}: countLimit")
    for value, what in ((initial, "initialCount"), (step, "countStep")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise PoplibsArgumentError(f"{name}: {what} must be an integer, got {value!r:.40}")
    if not isinstance(body, prog_.Program):
        raise PoplibsArgumentError(f"{name}: body must be a Program, got {type(body).__name__}")
    type_ = limit.elementType()
    if type_ not in (INT, UNSIGNED_INT):
        raise PoplibsError(f"{name}: countLimit '{limit.name}' must be INT or UNSIGNED_INT, not {type_}")
    if count is None:
        count = graph.addVariable(type_, [], f"{name}/count")
        graph.setTileMapping(count, 0)
    if count.elementType() != type_:
        raise PoplibsError(f"{name}: count '{count.name}' ({count.elementType()}) and countLimit "
                           f"'{limit.name}' ({type_}) must have the same type")
    for t, what in ((count, "count"), (limit, "countLimit")):
        if t.numElements() != 1:
            raise PoplibsError(f"{name}: {what} '{t.name}' must have one element, has shape {t.shape()}")
    first = (initial - step) % 2**32
    if type_ == INT and first >= 2**31:
        first -= 2**32
    initialiser = graph.addConstant(type_, [], first, f"{name}/initialiser")
    predicate = graph.addVariable(UNSIGNED_INT, [], f"{name}/predicate")
    graph.setTileMapping(initialiser, 0)
    graph.setTileMapping(predicate, 0)
    cs = graph.addComputeSet(f"{name}/counter")
    fields = {"count": count.reshape([]), "limit": limit.reshape([]), "comparisonResult": predicate}
    v = graph.addVertex(cs, templateVertex("popops::ForLoopCounter", type_), fields)
    graph.setInitialValue(v["increment"], step)
    graph.setTileMapping(v, 0)
    cond = prog_.Sequence([prog_.Execute(cs)])
    return prog_.Sequence([prog_.Copy(initialiser, count.reshape([])),
                           prog_.RepeatWhileTrue(cond, predicate, body, f"{name}/loop")])
