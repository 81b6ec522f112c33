"""The remaining matMul tensor creators of PopLibs' MatMul.hpp, laid out by the product's plan.

``createMatMulGroupedInputLHS/RHS`` are the grouped (3-D) forms of ``createMatMulInputLHS/RHS``;
``createMatMulOutput`` and ``createMatMulGroupedOutput`` make an output whose blocks lie on the
tiles that compute them (so ``matMulWithOutput`` writes them in place); and
``preArrangeMatMulInputRHS`` / ``preArrangeMatMulGroupedInputRHS`` copy a right-hand operand
into the plan's layout once, ahead of products that then read it where it lies.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor, Type
from poplar_py import program as prog
from poplar_py.debug import debug_name
from poplar_py.errors import InvalidArgumentError
from poplar_py.types import asType

from ..poputil import PoplibsArgumentError, PoplibsError, sequenceArgument, tensorArgument, trailingArguments
from .blocks import Blocks, block_major_output
from .matmul import checkShapes, create_operand, getMatMulPlan, matmulValidateOptions
from .plan import PlanningCache, planningCacheArgument

__all__ = ["createMatMulGroupedInputLHS", "createMatMulGroupedInputRHS", "createMatMulGroupedOutput",
           "createMatMulOutput", "mapMatMulOutput", "preArrangeMatMulGroupedInputRHS",
           "preArrangeMatMulInputRHS"]


def _shape(value: Any, what: str) -> list[int]:
    try:
        return [int(d) for d in value]
    except (TypeError, ValueError):
        raise PoplibsArgumentError(f"{what} must be a list of ints, got {value!r:.40}") from None


def _type(value: Any, what: str) -> Type:
    try:
        return asType(value)
    except InvalidArgumentError:
        raise PoplibsArgumentError(f"{what} must be a poplar element type, got {value!r:.40}") from None


def _arguments(what: str, graph: Graph, dataType: Any, args: tuple, keywords: dict[str, Any],
               rank: int) -> tuple[Type, Type, list[int], list[int], str, dict | None, PlanningCache | None]:
    """``[outputType,] aShape, bShape, debugContext[, options, cache]`` after the input type."""
    if not isinstance(graph, Graph):
        raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__}")
    rest = list(args)
    in_type = _type(dataType, f"{what}: inputType")
    if rest and not isinstance(rest[0], (list, tuple)):
        out_type = _type(rest.pop(0), f"{what}: outputType")
    else:
        out_type = in_type
    if len(rest) < 2:
        raise PoplibsArgumentError(f"{what}: expected aShape and bShape after the types")
    a_shape, b_shape = _shape(rest[0], f"{what}: aShape"), _shape(rest[1], f"{what}: bShape")
    if len(a_shape) != rank or len(b_shape) != rank:
        raise PoplibsError(f"{what}: aShape and bShape must be {rank}-D, got {a_shape} and {b_shape}")
    checkShapes(a_shape, b_shape)
    name, options, cache = trailingArguments(what, rest[2:], keywords)
    matmulValidateOptions(options)
    return (in_type, out_type, a_shape, b_shape, debug_name(name, f"{what}: debugContext"), options,
            planningCacheArgument(cache, what))


def createMatMulGroupedInputLHS(graph: Graph, inputType: Any, *args: Any, debugContext: Any = "",
                                options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new ``[g, m, k]`` left-hand operand whose blocks lie on the tiles that multiply them
    (``createMatMulGroupedInputLHS(graph, inputType, outputType, aShape, bShape, debugContext,
    options, cache)``)."""
    what = "createMatMulGroupedInputLHS"
    in_t, out_t, a, b, name, options, cache = _arguments(
        what, graph, inputType, args, {"debugContext": debugContext, "options": options, "cache": cache}, 3)
    return create_operand(graph, in_t, out_t, a, b, name or "A", options, cache, lhs=True)


def createMatMulGroupedInputRHS(graph: Graph, inputType: Any, *args: Any, debugContext: Any = "",
                                options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new ``[g, k, n]`` right-hand operand laid out for the product (arguments as the LHS')."""
    what = "createMatMulGroupedInputRHS"
    in_t, out_t, a, b, name, options, cache = _arguments(
        what, graph, inputType, args, {"debugContext": debugContext, "options": options, "cache": cache}, 3)
    return create_operand(graph, in_t, out_t, a, b, name or "B", options, cache, lhs=False)


def _output(graph: Graph, in_type: Type, out_type: Type, a_shape: list[int], b_shape: list[int], name: str,
            options: dict | None, cache: PlanningCache | None) -> Tensor:
    """A new ``[g, m, n]`` output laid out as the product lays out one it makes: each block one
    region of the variable, on the tiles that write it (in shares over its K-splits' tiles)."""
    g, m, _, n = checkShapes(a_shape, b_shape)
    plan = getMatMulPlan(graph.getTarget(), in_type, a_shape, b_shape, out_type, options, cache)
    if plan.m == 0 or plan.n == 0:
        out = graph.addVariable(out_type, [g, m, n], name)
        graph.setTileMapping(out, 0)
        return out
    return block_major_output(graph, plan, Blocks.of(plan), out_type, name)


def mapMatMulOutput(graph: Graph, out: Tensor, in_type: Type, a_shape: list[int], b_shape: list[int],
                    options: dict | None, cache: PlanningCache | None) -> None:
    """Map the ``[g, m, n]`` tensor (or view) ``out`` of ``a_shape x b_shape`` as the product lays
    out its output: each block on the tile that computes it (its first K-split)."""
    plan = getMatMulPlan(graph.getTarget(), in_type, a_shape, b_shape, out.elementType(), options, cache)
    if plan.m == 0 or plan.n == 0:
        graph.setTileMapping(out, 0)
        return
    blocks = Blocks.of(plan)
    blocks = blocks.select(blocks.ik == 0)
    pieces = blocks.out(plan)
    graph.map_intervals(out.flatten(), pieces.begin, pieces.end, blocks.tile[pieces.owner])


def createMatMulOutput(graph: Graph, inputType: Any, *args: Any, debugContext: Any = "",
                       options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new ``[m, n]`` output of ``aShape x bShape`` whose blocks lie on the tiles that compute them,
    each one region of its variable (``createMatMulOutput(graph, inputType[, outputType], aShape,
    bShape, debugContext, options, cache)``), for ``matMulWithOutput``."""
    what = "createMatMulOutput"
    in_t, out_t, a, b, name, options, cache = _arguments(
        what, graph, inputType, args, {"debugContext": debugContext, "options": options, "cache": cache}, 2)
    return _output(graph, in_t, out_t, [1, *a], [1, *b], name or "out", options, cache)[0]


def createMatMulGroupedOutput(graph: Graph, inputType: Any, *args: Any, debugContext: Any = "",
                              options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new ``[g, m, n]`` output laid out for the grouped product (arguments as
    ``createMatMulGroupedInputLHS``')."""
    what = "createMatMulGroupedOutput"
    in_t, out_t, a, b, name, options, cache = _arguments(
        what, graph, inputType, args, {"debugContext": debugContext, "options": options, "cache": cache}, 3)
    return _output(graph, in_t, out_t, a, b, name or "out", options, cache)


def _pre_arrange(what: str, graph: Graph, aShape: Any, B: Tensor, prog_: prog.Sequence, args: tuple,
                 keywords: dict[str, Any], rank: int) -> Tensor:
    B = tensorArgument(graph, B, f"{what}: B")
    prog_ = sequenceArgument(prog_, what)
    a_shape = _shape(aShape, f"{what}: aShape")
    if len(a_shape) != rank or B.rank() != rank:
        raise PoplibsError(f"{what}: aShape and B must be {rank}-D, got {a_shape} and {B.shape()}")
    rest = list(args)
    out_type = B.elementType()
    if rest and isinstance(rest[0], Type):  # the overload taking the output type
        out_type = rest.pop(0)
    name, options, cache = trailingArguments(what, rest, keywords)
    matmulValidateOptions(options)
    a3, b3 = ([1, *a_shape], [1, *B.shape()]) if rank == 2 else (a_shape, B.shape())
    checkShapes(a3, b3)
    arranged = create_operand(graph, B.elementType(), out_type, a3, b3,
                              debug_name(name, f"{what}: debugContext") or f"{B.name}/arranged", options,
                              planningCacheArgument(cache, what), lhs=False)
    arranged = arranged[0] if rank == 2 else arranged
    prog_.add(prog.Copy(B, arranged, False, what))
    return arranged


def preArrangeMatMulInputRHS(graph: Graph, aShape: Any, B: Tensor, prog_: prog.Sequence, *args: Any,
                             debugContext: Any = "", options: dict | None = None,
                             cache: PlanningCache | None = None) -> Tensor:
    """A copy of the ``[k, n]`` operand ``B`` laid out as ``createMatMulInputRHS`` lays it out for
    ``aShape x B.shape()``: a Copy in ``prog`` moves each block, through the exchange, to the tile
    that multiplies it (``preArrangeMatMulInputRHS(graph, aShape, B, prog[, outputType],
    debugContext, options, cache)``)."""
    return _pre_arrange("preArrangeMatMulInputRHS", graph, aShape, B, prog_, args,
                        {"debugContext": debugContext, "options": options, "cache": cache}, 2)


def preArrangeMatMulGroupedInputRHS(graph: Graph, aShape: Any, B: Tensor, prog_: prog.Sequence, *args: Any,
                                    debugContext: Any = "", options: dict | None = None,
                                    cache: PlanningCache | None = None) -> Tensor:
    """The grouped form of :func:`preArrangeMatMulInputRHS` (``[g, k, n]`` B)."""
    return _pre_arrange("preArrangeMatMulGroupedInputRHS", graph, aShape, B, prog_, args,
                        {"debugContext": debugContext, "options": options, "cache": cache}, 3)
