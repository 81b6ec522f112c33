"""popops histogram (GatherStatistics.hpp): how many elements fall between each pair of levels.

Each tile's elements of the input are shared between its workers; one ``Histogram`` vertex a
worker counts its regions into a partial histogram of ``levels + 1`` buckets on its tile
(UNSIGNED_INT counts, or FLOAT with PopLibs' float-arithmetic options), and a popops ADD
reduction over the partials gives the result, added to ``output`` with ``updateOutput``.
Bucket 0 holds the elements below ``levels[0]``, bucket k those in ``[levels[k-1],
levels[k])`` and the last those at or above the last level; ``levels`` must be ascending.
"""

from __future__ import annotations

from typing import Any

from poplar_py import FLOAT, HALF, UNSIGNED_INT, Graph, InvalidOptionError, Target, Tensor, VertexPerfEstimate
from poplar_py import program as prog_
from poplar_py.debug import debug_name

from ..poputil import (
    PoplibsError,
    checkOptions,
    sequenceArgument,
    splitRegionsBetweenWorkers,
    templateVertex,
    trailingArguments,
)
from .cast import cast
from .elementwise import addInPlace
from .perf_estimation import registerDefaultEstimator, rowSizes
from .reduce import Operation, ReduceParams, reduceWithOutput

__all__ = ["histogram"]

_OPTIONS = ("useFloatArithmeticWithUnsignedIntOutput", "useFloatArithmetic")


def histogramEstimator(dataType: Any, absolute: bool) -> Any:
    """PopLibs' ``Histogram2D`` estimate (its regions and ``histogramCount`` buckets): a pass
    over the data per bucket boundary, vectorised at the data path's width."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        rows = rowSizes(vertex.getFieldInfo("data"))
        count = vertex.getFieldInfo("histogram").size()
        width = target.getDataPathWidth() // (32 if dataType == FLOAT else 16)
        a = int(absolute)
        cycles = 7
        if dataType == HALF:
            loop = 16 + sum((3 + a) * ((n & 1) + ((n >> 1) & 1) + n // width) for n in rows)
            cycles += 5 + (loop + 6) * (count - 1)
        else:
            loop = 10 + sum((2 + a) * (n & 1) + (3 + a) * (n // width) for n in rows)
            cycles += 3 + (loop + 5) * (count - 1)
        cycles += 3 + 3 * max(len(rows) - 1, 0) + 10 + (count - 1) * 2
        return VertexPerfEstimate(cycles)

    return estimate


def _flag(options: dict, name: str) -> bool:
    value = str(options.get(name, "false")).lower()
    if value not in ("true", "false"):
        raise InvalidOptionError(f"histogram: option {name} must be true or false, not {options[name]!r}")
    return value == "true"


def _partials(graph: Graph, input_: Tensor, levels: Tensor, absolute: bool, partialsType: Any,
              prog: prog_.Sequence, name: str) -> Tensor:
    """One compute set of Histogram vertices; their ``[vertices, levels + 1]`` partial counts."""
    flat = input_.flatten()
    target = graph.getTarget()
    work = [(tile, part) for tile, intervals in enumerate(graph.getTileMapping(flat)) if intervals
            for part in splitRegionsBetweenWorkers(target, intervals, 1)]
    if not work:  # an empty input: one row of zero counts
        zeros = graph.addConstant(partialsType, [1, levels.numElements() + 1], 0, f"{name}/partials")
        graph.setTileMapping(zeros, 0)
        return zeros
    partials = graph.addVariable(partialsType, [len(work), levels.numElements() + 1], f"{name}/partials")
    cs = graph.addComputeSet(name)
    vertex = templateVertex("popops::Histogram", input_.elementType(), partialsType)
    registerDefaultEstimator(graph, vertex, histogramEstimator(input_.elementType(), absolute))
    flat_levels = levels.flatten()
    for row, (tile, part) in enumerate(work):
        v = graph.addVertex(cs, vertex, {"data": [flat.slice(iv.begin(), iv.end()) for iv in part],
                                         "limits": flat_levels, "histogram": partials[row]})
        graph.setInitialValue(v["absolute"], int(absolute))
        graph.setTileMapping(v, tile)
        graph.setTileMapping(partials[row], tile)
    prog.add(prog_.Execute(cs))
    return partials


def histogram(graph: Graph, input: Tensor, *args: Any, debugContext: Any = "",  # noqa: A002 - PopLibs' name
              options: dict | None = None) -> Tensor | None:
    """``histogram(graph, input, levels, absoluteOfInput, prog[, debugContext, options])``: a new
    ``[levels + 1]`` UNSIGNED_INT tensor of counts (FLOAT with option ``useFloatArithmetic``).

    ``histogram(graph, input, output, updateOutput, levels, absoluteOfInput, prog[,
    debugContext, options])`` writes the counts into ``output`` (UNSIGNED_INT, or the
    deprecated FLOAT), or adds them to it with ``updateOutput``. With
    ``useFloatArithmeticWithUnsignedIntOutput`` the tiles count in FLOAT and the sum is cast
    to UNSIGNED_INT (exact up to 2**24). ``absoluteOfInput`` counts ``|x|``.
    """
    with_output = len(args) >= 5 and isinstance(args[2], Tensor)
    n = 5 if with_output else 3
    if len(args) < n:
        raise PoplibsError("histogram: expected (input, levels, absoluteOfInput, prog) or "
                           "(input, output, updateOutput, levels, absoluteOfInput, prog)")
    debugContext, options = trailingArguments("histogram", args[n:],
                                              {"debugContext": debugContext, "options": options})
    output, update, levels, absolute, prog = args[:n] if with_output else (None, False, *args[:n])
    opts = checkOptions(options, _OPTIONS, "histogram")
    name = debug_name(debugContext, "histogram: debugContext") or "histogram"
    prog = sequenceArgument(prog, "histogram: prog")
    to_uint = _flag(opts, "useFloatArithmeticWithUnsignedIntOutput")
    floats = _flag(opts, "useFloatArithmetic")
    if to_uint and floats:
        raise InvalidOptionError("histogram: options useFloatArithmetic and "
                                 "useFloatArithmeticWithUnsignedIntOutput cannot both be true")
    if with_output and floats:
        raise InvalidOptionError("histogram: option useFloatArithmetic cannot be used with an output tensor")
    for what, t in (("input", input), ("levels", levels)):
        if not isinstance(t, Tensor) or t.elementType() not in (FLOAT, HALF):
            raise PoplibsError(f"{name}: {what} must be a FLOAT or HALF tensor")
    if levels.elementType() != input.elementType() or levels.rank() != 1:
        raise PoplibsError(f"{name}: levels tensor '{levels.name}' must be 1-D, of the input's type "
                           f"{input.elementType()}")
    if with_output:
        if output.shape() != [levels.numElements() + 1] or output.elementType() not in (UNSIGNED_INT, FLOAT):
            raise PoplibsError(f"{name}: output tensor '{output.name}' must be [{levels.numElements() + 1}] "
                               f"UNSIGNED_INT or FLOAT, not {output.shape()} {output.elementType()}")
        if to_uint and output.elementType() != UNSIGNED_INT:
            raise PoplibsError(f"{name}: useFloatArithmeticWithUnsignedIntOutput needs an UNSIGNED_INT "
                               "output")
        floats = output.elementType() == FLOAT
    else:
        output = graph.addVariable(FLOAT if floats else UNSIGNED_INT, [levels.numElements() + 1], name)
        graph.setTileMapping(output, 0)
    partials = _partials(graph, input, levels, bool(absolute), FLOAT if floats or to_uint else UNSIGNED_INT,
                         prog, f"{name}/count")
    if not to_uint:
        reduceWithOutput(graph, partials, output, [0], ReduceParams(Operation.ADD, bool(update)), prog,
                         f"{name}/sum")
        return None if with_output else output
    total = graph.addVariable(FLOAT, output.shape(), f"{name}/total")
    graph.setTileMapping(total, 0)
    reduceWithOutput(graph, partials, total, [0], Operation.ADD, prog, f"{name}/sum")
    counts = cast(graph, total, UNSIGNED_INT, prog, f"{name}/cast")
    if update:
        addInPlace(graph, output, counts, prog, f"{name}/update")
    else:
        prog.add(prog_.Copy(counts, output))
    return None if with_output else output
