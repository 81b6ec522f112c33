"""Matrix multiplication on the tiles: matMul, matMulGrouped, matMulAcc and the input creators.

A product runs as one or two compute sets, following the plan of :mod:`.plan`:

1. ``<name>/matmul``: every tile computes one block ``A[m0:m1, k0:k1] @ B[k0:k1, n0:n1]``,
   its six workers each taking a piece of the block's rows (or columns) with a
   ``poplin::MatMulBlock`` vertex. Blocks of A and B that live elsewhere come in through
   the exchange buffers the compiler plans; the block result is written in place.
2. ``<name>/reduce`` (only when K is split, the partials type differs from the output
   type, or for ``matMulAcc``): the tiles that shared a K-split each add up a share of
   their block's partial sums (``poplin::ReducePartialsSameType``, ``ReducePartials`` when the
   partials type differs from the output type, ``ScaledReducePartials`` for ``matMulAcc``).

Each compute set's vertices (one per block, or per share) and the mappings of the blocks are
built in bulk from the plan's blocks as numpy arrays (:mod:`.blocks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from poplar_py import FLOAT, HALF, INT, UNSIGNED_INT, ComputeSet, Graph, Tensor, Type
from poplar_py import program as prog
from poplar_py.debug import debug_name, isDebugName
from poplar_py.regions.runs import arithmetic_groups
from poplar_py.types import asType

from .. import popops
from ..poputil import (
    PoplibsArgumentError,
    PoplibsError,
    computeWithOutput,
    sequenceArgument,
    templateVertex,
    tensorArgument,
    trailingArguments,
)
from .blocks import Blocks, Partials, Pieces, block_major_operand, block_major_output, share_of
from .plan import (
    AVAILABLE_MEMORY_PROPORTION,
    REGISTER_TILE,
    MatMulPlan,
    PlanningCache,
    TargetFigures,
    planMatMul,
    planningCacheArgument,
)

SUPPORTED_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT)
#: an operand whose blocks its vertices would read as more regions than this, on average, and
#: more than _FEW_REGIONS in all, is rearranged (below that, its reads cost less than a copy step)
_REGIONS_PER_BLOCK = 2
_FEW_REGIONS = 4096
#: the matmul options PopLibs knows (convolutions take them too)
MATMUL_OPTIONS = {"availableMemoryProportion", "fullyConnectedPass", "partialsType", "inputRHSIsPreArranged",
                  "use128BitConvUnitLoad", "enableMultiStageReduce", "enableFastReduce", "remapOutputTensor"}


def checkShapes(aShape: list[int], bShape: list[int]) -> tuple[int, int, int, int]:
    """``(groups, m, k, n)`` of two 2-D (or two 3-D, grouped) operand shapes; PoplibsError if unusable."""
    if len(aShape) not in (2, 3) or len(bShape) != len(aShape):
        raise PoplibsError(f"Operand to matrix multiplication is not a matrix: shapes {aShape} and {bShape}"
                           " (both must be 2-D, or 3-D for a grouped product)")
    if len(aShape) == 3 and aShape[0] != bShape[0]:
        raise PoplibsError(f"Grouped matrix multiplication operands have different group counts: "
                           f"{aShape} and {bShape}")
    if aShape[-1] != bShape[-2]:
        raise PoplibsError(f"Inner dimensions of matrix multiplication operands differ: {aShape} x {bShape}")
    g = aShape[0] if len(aShape) == 3 else 1
    return int(g), int(aShape[-2]), int(aShape[-1]), int(bShape[-1])


def _check_types(a: Tensor, b: Tensor) -> Type:
    if a.elementType() != b.elementType():
        raise PoplibsError(f"Matrix multiplication operands have different types: '{a.name}' is "
                           f"{a.elementType()}, '{b.name}' is {b.elementType()}")
    if a.elementType() not in SUPPORTED_TYPES:
        raise PoplibsError(f"Matrix multiplication of {a.elementType()} is not supported "
                           f"(use {', '.join(str(t) for t in SUPPORTED_TYPES)})")
    return a.elementType()


def _plan_options(options: dict | None) -> tuple:
    """planMatMul's trailing arguments for ``options`` (the partials type only when asked for, so
    plans memoised without it are found again)."""
    partials = _partials_option(options)
    return (_memory_proportion(options),) + ((partials,) if partials is not None else ())


def _memory_proportion(options: dict | None) -> float:
    if options is not None and not isinstance(options, dict):
        raise PoplibsArgumentError(f"matMul: options must be a dict, got {type(options).__name__} "
                                   f"{options!r:.40}")
    for name in options or {}:
        if name not in MATMUL_OPTIONS:
            raise PoplibsError(f"Unrecognised matmul option '{name}' "
                               f"(known: {', '.join(sorted(MATMUL_OPTIONS))})")
    return float((options or {}).get("availableMemoryProportion", AVAILABLE_MEMORY_PROPORTION))


def _partials_option(options: dict | None) -> Type | None:
    """The option ``partialsType`` ("half" or "float"), or None when it is not given."""
    value = (options or {}).get("partialsType")
    if value is None:
        return None
    if str(value) not in ("half", "float"):
        raise PoplibsError(f"matmul option partialsType={value!r} is not 'half' or 'float'")
    return asType(str(value))


def _plan(graph: Graph, in_type: Type, out_type: Type, shape: tuple[int, int, int, int],
          options: dict | None, cache: PlanningCache | None) -> MatMulPlan:
    """The plan, from ``cache`` (stored there when new) or, without one, from the global memo."""
    g, m, k, n = shape
    figures = TargetFigures.of(graph.getTarget())
    plan = cache.plan if cache is not None else planMatMul
    return plan(figures, in_type, out_type, g, m, k, n, *_plan_options(options))


def _trailing(what: str, rest: list, debugName: Any, options: Any,
              cache: Any) -> tuple[str, dict | None, PlanningCache | None]:
    """PopLibs' trailing ``debugContext, options, cache``, positional (``rest``) or by keyword, checked."""
    debugName, options, cache = trailingArguments(what, rest, {"debugContext": debugName, "options": options,
                                                               "cache": cache})
    _plan_options(options)  # the options are checked even when no plan is made
    return debug_name(debugName, f"{what}: debugContext"), options, planningCacheArgument(cache, what)


def _split_overload(what: str, args: tuple, debugName: Any, options: Any,
                    cache: Any) -> tuple[Type | None, str, dict | None, PlanningCache | None]:
    """PopLibs' overloads: ``(..., prog[, outputType], debugContext, options, cache)``."""
    rest = list(args)
    out_type = None
    if rest and not (rest[0] is None or isDebugName(rest[0])
                     or isinstance(rest[0], (Mapping, PlanningCache))):
        out_type = asType(rest.pop(0))
    return (out_type, *_trailing(what, rest, debugName, options, cache))


def _as_3d(t: Tensor) -> Tensor:
    return t.expand([0]) if t.rank() == 2 else t


# ---- public API ----------------------------------------------------------------------------

def matMul(graph: Graph, A: Tensor, B: Tensor, prog_: prog.Sequence, *args: Any, debugName: str = "",
           options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """``A [m, k] @ B [k, n]`` -> a new ``[m, n]`` tensor, computed on the tiles.

    ``matMul(graph, A, B, prog[, outputType], debugName="", options=None, cache=None)``; the
    output type defaults to A's; the trailing arguments may be given positionally, as in C++.
    A :class:`PlanningCache` ``cache`` holds the plan. Appends one or two compute sets to
    ``prog`` (see module doc).
    """
    out_type, debugName, options, cache = _split_overload("matMul", args, debugName, options, cache)
    A, B = tensorArgument(graph, A, "matMul: A"), tensorArgument(graph, B, "matMul: B")
    if A.rank() != 2 or B.rank() != 2:
        raise PoplibsError(f"Operand to matrix multiplication is not a matrix: shapes {A.shape()} and "
                           f"{B.shape()}")
    return _matmul(graph, A.expand([0]), B.expand([0]), prog_, out_type, debugName, options, cache)[0]


def matMulGrouped(graph: Graph, A: Tensor, B: Tensor, prog_: prog.Sequence, *args: Any,
                  debugName: str = "", options: dict | None = None,
                  cache: PlanningCache | None = None) -> Tensor:
    """``A [g, m, k] @ B [g, k, n]`` -> ``[g, m, n]``: the groups' products spread over the tiles
    (arguments as :func:`matMul`'s)."""
    out_type, debugName, options, cache = _split_overload("matMulGrouped", args, debugName, options, cache)
    A, B = tensorArgument(graph, A, "matMulGrouped: A"), tensorArgument(graph, B, "matMulGrouped: B")
    if A.rank() != 3 or B.rank() != 3:
        raise PoplibsError(f"Operand to grouped matrix multiplication is not a group of matrices: shapes "
                           f"{A.shape()} and {B.shape()}")
    return _matmul(graph, A, B, prog_, out_type, debugName, options, cache)


def matMulWithOutput(graph: Graph, A: Tensor, B: Tensor, out: Tensor, prog_: prog.Sequence,
                     debugName: str = "", options: dict | None = None,
                     cache: PlanningCache | None = None) -> None:
    """``out = A @ B`` into an existing ``[m, n]`` tensor (mapped by the plan if it is unmapped)."""
    debugName, options, cache = _trailing("matMulWithOutput", [], debugName, options, cache)
    A, B, out = (tensorArgument(graph, x, f"matMulWithOutput: {w}") for x, w in ((A, "A"), (B, "B"),
                                                                                  (out, "out")))
    if out.rank() != 2:
        raise PoplibsError(f"matMulWithOutput: output '{out.name}' of shape {out.shape()} is not a matrix")
    _matmul(graph, _as_3d(A), _as_3d(B), prog_, out.elementType(), debugName, options, cache,
            out=out.expand([0]))


def matMulGroupedWithOutput(graph: Graph, A: Tensor, B: Tensor, out: Tensor, prog_: prog.Sequence,
                            debugName: str = "", options: dict | None = None,
                            cache: PlanningCache | None = None) -> None:
    """``out = A @ B`` for ``[g, m, k] x [g, k, n]`` into an existing ``[g, m, n]`` tensor."""
    debugName, options, cache = _trailing("matMulGroupedWithOutput", [], debugName, options, cache)
    out = tensorArgument(graph, out, "matMulGroupedWithOutput: out")
    _matmul(graph, A, B, prog_, out.elementType(), debugName, options, cache, out=out)


def matMulAcc(graph: Graph, C: Tensor, k: float | Tensor, A: Tensor, B: Tensor, prog_: prog.Sequence,
              debugName: str = "", options: dict | None = None, cache: PlanningCache | None = None) -> None:
    """``C += k * (A @ B)``: with a number ``k`` the block products go to partials and the
    reduction updates C in place; with a one-element tensor ``k`` the product is formed and a
    ``popops.scaledAddTo`` on C's tiles adds it (needs the popops codelets)."""
    debugName, options, cache = _trailing("matMulAcc", [], debugName, options, cache)
    _accumulate("matMulAcc", graph, C, k, A, B, prog_, debugName, options, cache)


def matMulGroupedAcc(graph: Graph, C: Tensor, k: float | Tensor, A: Tensor, B: Tensor, prog_: prog.Sequence,
                     debugName: str = "", options: dict | None = None,
                     cache: PlanningCache | None = None) -> None:
    """``C += k * (A @ B)`` for grouped operands (``k`` a number or a one-element tensor)."""
    debugName, options, cache = _trailing("matMulGroupedAcc", [], debugName, options, cache)
    _accumulate("matMulGroupedAcc", graph, C, k, A, B, prog_, debugName, options, cache)


def _accumulate(what: str, graph: Graph, C: Tensor, k: float | Tensor, A: Tensor, B: Tensor,
                prog_: prog.Sequence, name: str, options: dict | None, cache: PlanningCache | None) -> None:
    C, A, B = (_as_3d(tensorArgument(graph, t, f"{what}: {n}")) for t, n in ((C, "C"), (A, "A"), (B, "B")))
    if isinstance(k, Tensor):
        k = tensorArgument(graph, k, f"{what}: k")
        if k.numElements() != 1 or not k.elementType().is_float:
            raise PoplibsError(f"{what}: the scale k '{k.name}' must be one floating-point element, got "
                               f"{k.elementType()} of shape {k.shape()}")
        product = _matmul(graph, A, B, prog_, C.elementType(), name, options, cache)
        popops.scaledAddTo(graph, C, product, k, prog_, debugName=f"{name or what}/accumulate")
        return
    if isinstance(k, bool) or not isinstance(k, (int, float)):
        raise PoplibsError(f"{what}: the scale k must be a number or a one-element tensor, got {k!r:.40}")
    _matmul(graph, A, B, prog_, C.elementType(), name, options, cache, out=C, scale=float(k))


def transposeGroupedMatrix(A: Tensor) -> Tensor:
    """The view of a ``[g, m, k]`` tensor with each group's matrix transposed (no copy)."""
    return A.dimShuffle([0, 2, 1])


def createMatMulInputLHS(graph: Graph, dataType: Any, *args: Any, debugName: str = "",
                         options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new ``aShape`` tensor whose blocks lie on the tiles that multiply them.

    ``createMatMulInputLHS(graph, type[, outputType], aShape, bShape, debugName="A", options=None,
    cache=None)``; the trailing arguments may be given positionally, as in C++.
    """
    return _create_input("createMatMulInputLHS", graph, dataType, args, debugName, options, cache, lhs=True)


def createMatMulInputRHS(graph: Graph, dataType: Any, *args: Any, debugName: str = "",
                         options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new ``bShape`` tensor whose blocks lie on the tiles that multiply them (arguments as the LHS')."""
    return _create_input("createMatMulInputRHS", graph, dataType, args, debugName, options, cache, lhs=False)


def matmulValidateOptions(options: dict | None) -> None:
    """PoplibsError naming the first matmul option that is unknown or has a bad value."""
    _plan_options(options)


def getMatMulPlan(target: Any, inputType: Any, aShape: list[int], bShape: list[int],
                  outputType: Any = None, options: dict | None = None,
                  cache: PlanningCache | None = None) -> MatMulPlan:
    """The plan matMul (2-D shapes) or matMulGrouped (3-D shapes) uses for these operands (taken
    from, or stored in, ``cache`` when one is given)."""
    g, m, k, n = checkShapes(list(aShape), list(bShape))
    in_type = asType(inputType)
    cache = planningCacheArgument(cache, "getMatMulPlan")
    plan = cache.plan if cache is not None else planMatMul
    return plan(TargetFigures.of(target.getTarget() if hasattr(target, "getTarget") else target),
                in_type, asType(outputType) if outputType is not None else in_type, g, m, k, n,
                *_plan_options(options))


# ---- building the compute sets -----------------------------------------------------------

def _create_input(what: str, graph: Graph, dataType: Any, args: tuple, debugName: Any, options: Any,
                  cache: Any, lhs: bool) -> Tensor:
    """createMatMulInputLHS/RHS: ``args`` are ``[outputType,] aShape, bShape[, debugContext, options,
    cache]``."""
    rest = list(args)
    in_type = asType(dataType)
    out_type = asType(rest.pop(0)) if rest and not isinstance(rest[0], (list, tuple)) else in_type
    if len(rest) < 2 or not all(isinstance(s, (list, tuple)) for s in rest[:2]):
        raise PoplibsArgumentError(f"{what}: expected aShape and bShape (lists of ints) after the types")
    a_shape, b_shape = [int(d) for d in rest[0]], [int(d) for d in rest[1]]
    name, options, cache = _trailing(what, rest[2:], debugName, options, cache)
    return create_operand(graph, in_type, out_type, a_shape, b_shape, name or ("A" if lhs else "B"),
                          options, cache, lhs)


def create_operand(graph: Graph, in_type: Type, out_type: Type, a_shape: list[int], b_shape: list[int],
                   name: str, options: dict | None, cache: PlanningCache | None, lhs: bool) -> Tensor:
    """A new operand (A when ``lhs``, else B) of ``a_shape x b_shape`` laid out for its plan."""
    plan = _plan(graph, in_type, out_type, checkShapes(a_shape, b_shape), options, cache)
    return _new_operand(graph, plan, in_type, a_shape if lhs else b_shape, lhs, name)


def _new_operand(graph: Graph, plan: MatMulPlan, type_: Type, shape: list[int], lhs: bool,
                 name: str, spread: bool = False) -> Tensor:
    """A new operand of ``shape`` laid out for the plan: each block contiguous on the tile of the
    plan's first N-split (first M-split) that multiplies it, or (``spread``) in equal shares on
    all the tiles that multiply it."""
    if plan.m == 0 or plan.n == 0 or plan.k == 0:  # no blocks to read: keep the operand somewhere
        t = graph.addVariable(type_, shape, name)
        graph.setTileMapping(t, 0)
        return t
    return block_major_operand(graph, plan, type_, lhs, name, spread, shape)


def _arranged(graph: Graph, plan: MatMulPlan, t3: Tensor, pieces: Pieces, lhs: bool, prog_: prog.Sequence,
              name: str) -> Tensor:
    """``t3`` itself when the vertices can read the blocks ``pieces`` where they lie; else a copy
    laid out as the plan's input, made by a Copy before the product, as PopLibs rearranges an
    operand whose layout does not suit the plan. That is a transposed or strided view, or a large
    operand whose blocks' rows lie apart (a weight sliced from a buffer, an activation laid out
    by another plan): each element then crosses the exchange once, each block is one region for
    its vertices, and each block is shared among the tiles that read it."""
    runs = t3.runs()
    if not ((runs.count > 1) & (runs.stride != 1)).any():
        read, owner = runs.take_ranges(pieces.begin, pieces.end)
        block = pieces.owner[owner]
        # the regions the vertices' edges would be (joined as Graph.add_vertices joins them)
        regions = arithmetic_groups(read.offset, read.count, read.stride,
                                    (block[1:] == block[:-1]) & (read.var[1:] == read.var[:-1]))[0].size
        if regions <= max(_REGIONS_PER_BLOCK * (int(block.max(initial=-1)) + 1), _FEW_REGIONS):
            return t3
    arranged = _new_operand(graph, plan, t3.elementType(), t3.shape(), lhs,
                            f"{name}/arranged{'LHS' if lhs else 'RHS'}", spread=True)
    src, dst = t3, arranged
    if len(t3.dimShuffle([0, 2, 1]).runs()) <= t3.dim(0):
        # the transposed view of contiguous matrices: copied in the order they lie in memory, a
        # piece is a tile's run of them (in the view's order, a piece would be an element or two)
        src, dst = t3.dimShuffle([0, 2, 1]), arranged.dimShuffle([0, 2, 1])
    prog_.add(prog.Copy(src, dst))
    return arranged


def is_unmapped(graph: Graph, t: Tensor) -> bool:
    """Whether some element of ``t`` has no tile yet."""
    begin, end, _ = graph.tile_intervals(t, requireComplete=False)
    return int((end - begin).sum()) < t.numElements()


def _matmul(graph: Graph, A: Tensor, B: Tensor, prog_: prog.Sequence, out_type: Type | None, name: str,
            options: dict | None, cache: PlanningCache | None, out: Tensor | None = None,
            scale: float | None = None) -> Tensor:
    A, B = tensorArgument(graph, A, "matMul: A"), tensorArgument(graph, B, "matMul: B")
    prog_ = sequenceArgument(prog_, name or "matMul")
    shape = checkShapes(A.shape(), B.shape())
    in_type = _check_types(A, B)
    out_type = out_type or in_type
    if out_type not in SUPPORTED_TYPES or out_type.is_float != in_type.is_float:
        raise PoplibsError(f"Matrix multiplication of {in_type} cannot produce {out_type}")
    g, m, _, n = shape
    if out is not None and out.shape() != [g, m, n]:
        raise PoplibsError(f"Matrix multiplication output '{out.name}' has shape {out.shape()}, "
                           f"expected {[g, m, n]}")
    if out is not None and scale is None:  # (matMulAcc's reduction reads only the partials)
        computeWithOutput(graph, out, [A, B], prog_, name or "matMul", lambda dst: _products(
            graph, A, B, prog_, out_type, name, options, cache, dst, None))
        return out
    return _products(graph, A, B, prog_, out_type, name, options, cache, out, scale)


def _products(graph: Graph, A: Tensor, B: Tensor, prog_: prog.Sequence, out_type: Type, name: str,
              options: dict | None, cache: PlanningCache | None, out: Tensor | None,
              scale: float | None) -> Tensor:
    """The compute sets of ``out = A @ B`` (or ``out += scale * A @ B``); ``out`` overlaps no input
    unless scale is given."""
    shape = checkShapes(A.shape(), B.shape())
    g, m, _, n = shape
    in_type = A.elementType()
    plan = _plan(graph, in_type, out_type, shape, options, cache)
    name = name or "matMul"
    if m == 0 or n == 0:
        out = graph.addVariable(out_type, [g, m, n], name) if out is None else out
        if is_unmapped(graph, out):
            graph.setTileMapping(out, 0)
        return out
    blocks = Blocks.of(plan)
    map_out = out is not None and is_unmapped(graph, out)
    if out is None:
        out = block_major_output(graph, plan, blocks, out_type, name)
    lhs, rhs = blocks.lhs(plan), blocks.rhs(plan)
    A = _arranged(graph, plan, A, lhs, True, prog_, name)
    B = _arranged(graph, plan, B, rhs, False, prog_, name)
    reducing = plan.needsReduction or scale is not None
    if reducing:
        partials = Partials.add(graph, plan, blocks, name)
        dest, pieces = partials.tensor, partials.products(blocks)
    else:
        dest, pieces = out.flatten(), blocks.out(plan)
    if reducing:  # each block's product whole on its tile (one interval, not one per row)
        graph.map_intervals(dest, *partials.extents(blocks), blocks.tile)
    elif map_out:
        graph.map_intervals(dest, pieces.begin, pieces.end, blocks.tile[pieces.owner])
    cs = graph.addComputeSet(f"{name}/matmul")
    vertex = templateVertex("poplin::MatMulBlock", in_type, plan.partialsType if reducing else out_type,
                            *REGISTER_TILE)
    n_blocks = len(blocks)
    graph.add_vertices(cs, vertex, blocks.tile, {"a": (A.flatten(), lhs.vector_rows(n_blocks)),
                                                 "b": (B.flatten(), rhs.vector_rows(n_blocks)),
                                                 "out": (dest, pieces.vector_rows(n_blocks))})
    prog_.add(prog.Execute(cs))
    if reducing:
        prog_.add(prog.Execute(_reduce(graph, plan, blocks, partials, out, map_out, scale, f"{name}/reduce")))
    return out


def _reduce(graph: Graph, plan: MatMulPlan, blocks: Blocks, partials: Partials, out: Tensor,
            map_out: bool, scale: float | None, name: str) -> ComputeSet:
    """The compute set adding each block's K-split partials: the tiles that computed a block's
    partials each sum a contiguous share of its (flattened) elements."""
    cs = graph.addComputeSet(name)
    sk = plan.splitK
    if scale is not None:
        vertex = templateVertex("poplin::ScaledReducePartials", plan.partialsType, out.elementType())
    elif plan.partialsType == out.elementType():  # sums in place in the output: vectorises
        vertex = templateVertex("poplin::ReducePartialsSameType", out.elementType())
    else:
        vertex = templateVertex("poplin::ReducePartials", plan.partialsType, out.elementType())
    size = partials.size[blocks.output]
    first, last = share_of(size, blocks.ik, sk)  # the shares block_major_output maps
    keep = first < last
    blocks, first, last = blocks.select(keep), first[keep], last[keep]
    out_flat, dest = out.flatten(), blocks.out(plan, first, last)
    if map_out:
        graph.map_intervals(out_flat, dest.begin, dest.end, blocks.tile[dest.owner])
    shares = partials.shares(blocks, first, last, sk).list_rows(np.full(len(blocks), sk, np.int64))
    lists = {"partials": (partials.tensor, shares), "out": (out_flat, dest.vector_rows(len(blocks)))}
    graph.add_vertices(cs, vertex, blocks.tile, lists, state={"scale": scale} if scale is not None else None)
    return cs
