"""PopLibs' TriangularSolve.hpp: triangularSolve, triangularMask and their tensor creators.

``triangularSolve`` turns every form of the problem into one: rows ``x`` of a ``[B, K, n]``
matrix becoming ``y`` with ``L y = x``, ``L`` lower triangular, through views (no copies): the
columns of ``X`` for ``A X = B`` (rows of ``X^T``, ``L = A``), the rows of ``X`` for ``X A = B``
(``L = A^T``), an upper triangle reversed in both dimensions to make it lower (and the rows
reversed with it). The result lives in a new variable laid out in that row form, rows spread
over the tiles; a Copy brings ``B`` in and :func:`.linalg_blocks.solve_rows` solves it in place:
``poplin::ForwardSubstitution`` vertices on each diagonal block of ``blockSize`` rows, and a
grouped ``matMulAcc`` removing the solved columns from the later ones.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor
from poplar_py import program as prog
from poplar_py.debug import debug_name

from ..poputil import (
    PoplibsError,
    mapTensorLinearly,
    sequenceArgument,
    templateVertex,
    tensorArgument,
)
from .linalg_blocks import (
    add_row_vertices,
    as_batch,
    block_options,
    check_float,
    shape_argument,
    solve_rows,
    solve_steps,
    type_argument,
)
from .matmul import transposeGroupedMatrix
from .matmul_planning import MatMulParams
from .plan import PlanningCache, planningCacheArgument

__all__ = ["createTriangularSolveInputLHS", "createTriangularSolveInputRHS",
           "getTriangularSolveMatMulPrePlanParameters", "triangularMask", "triangularSolve"]

#: PopLibs' default ``blockSize`` of the triangular solver
BLOCK_SIZE = 64


def _shapes(what: str, a_shape: list[int], b_shape: list[int], leftSide: bool) -> tuple[int, int, int]:
    """``(batch, n, k)`` of A ``[..., n, n]`` and B (``[..., n, k]`` on the left, else ``[..., k, n]``)."""
    if len(a_shape) < 2:
        raise PoplibsError(f"{what}: tensor A must have rank of 2 or higher, got shape {a_shape}")
    if a_shape[-1] != a_shape[-2]:
        raise PoplibsError(f"{what}: tensor A must be square in its last two dimensions, got shape {a_shape}")
    if len(b_shape) != len(a_shape):
        raise PoplibsError(f"{what}: ranks of tensors A {a_shape} and B {b_shape} must match")
    if b_shape[:-2] != a_shape[:-2]:
        raise PoplibsError(f"{what}: batch dimensions of A {a_shape} and B {b_shape} must match")
    n = a_shape[-1]
    if n == 0:
        raise PoplibsError(f"{what}: received an empty matrix A {a_shape}")
    if b_shape[-2 if leftSide else -1] != n:
        side = "rows" if leftSide else "columns"
        raise PoplibsError(f"{what}: B {b_shape} must have A's {n} {side} (leftSide={bool(leftSide)})")
    batch = 1
    for d in a_shape[:-2]:
        batch *= d
    return batch, n, b_shape[-1 if leftSide else -2]


def _create(what: str, graph: Graph, inputType: Any, outputType: Any, aShape: Any, bShape: Any,
            leftSide: bool, debugContext: Any, options: Any, cache: Any, lhs: bool) -> Tensor:
    in_type = type_argument(inputType, f"{what}: inputType")
    type_argument(outputType, f"{what}: outputType")
    a_shape, b_shape = shape_argument(aShape, f"{what}: aShape"), shape_argument(bShape, f"{what}: bShape")
    _shapes(what, a_shape, b_shape, leftSide)
    block_options(options, BLOCK_SIZE, what)
    planningCacheArgument(cache, what)
    shape = a_shape if lhs else b_shape
    name = debug_name(debugContext, f"{what}: debugContext") or ("A" if lhs else "B")
    t = graph.addVariable(in_type, shape, name)
    mapTensorLinearly(graph, t, 0, max(shape[-1], 1))  # whole rows on a tile
    return t


def createTriangularSolveInputLHS(graph: Graph, inputType: Any, outputType: Any, aShape: Any, bShape: Any,
                                  leftSide: bool, debugContext: Any = "", options: dict | None = None,
                                  cache: PlanningCache | None = None) -> Tensor:
    """A new ``aShape`` tensor for :func:`triangularSolve`, its rows spread evenly over the tiles."""
    return _create("createTriangularSolveInputLHS", graph, inputType, outputType, aShape, bShape, leftSide,
                   debugContext, options, cache, lhs=True)


def createTriangularSolveInputRHS(graph: Graph, inputType: Any, outputType: Any, aShape: Any, bShape: Any,
                                  leftSide: bool, debugContext: Any = "", options: dict | None = None,
                                  cache: PlanningCache | None = None) -> Tensor:
    """A new ``bShape`` tensor for :func:`triangularSolve`, its rows spread evenly over the tiles."""
    return _create("createTriangularSolveInputRHS", graph, inputType, outputType, aShape, bShape, leftSide,
                   debugContext, options, cache, lhs=False)


def _row_form(A3: Tensor, S: Tensor, leftSide: bool, lower: bool) -> tuple[Tensor, Tensor]:
    """``(L, X3)``: the lower-triangular view of ``A3`` and the ``[B, ...]`` view of the solution
    whose row form is ``S [B, k, n]`` (see the module doc)."""
    if leftSide:  # A X = B: the columns of X
        if lower:
            return A3, transposeGroupedMatrix(S)
        return A3.reverse(1).reverse(2), transposeGroupedMatrix(S.reverse(2))
    if lower:  # X A = B: A^T x = b for each row; A^T is upper
        return transposeGroupedMatrix(A3).reverse(1).reverse(2), S.reverse(2)
    return transposeGroupedMatrix(A3), S


def triangularSolve(graph: Graph, a: Tensor, b: Tensor, leftSide: bool, lower: bool, unitDiagonal: bool,
                    prog_: prog.Sequence, debugContext: Any = "", options: dict | None = None,
                    cache: PlanningCache | None = None) -> Tensor:
    """``X`` with ``A X = B`` (``leftSide``) or ``X A = B``, using the lower or upper triangle of
    ``A [..., n, n]`` (with ``unitDiagonal`` its diagonal taken as ones and not read); ``B`` is
    ``[..., n, k]`` on the left, ``[..., k, n]`` on the right. Returns a new tensor of B's shape
    (a view of a variable laid out for the solver, see the module doc). ``options``:
    ``blockSize`` (default 64), the rows of A solved by vertices at a time, and matMul's options."""
    what = "triangularSolve"
    a, b = tensorArgument(graph, a, f"{what}: a"), tensorArgument(graph, b, f"{what}: b")
    prog_ = sequenceArgument(prog_, what)
    batch, n, k = _shapes(what, a.shape(), b.shape(), leftSide)
    type_ = check_float(what, "a", a)
    if b.elementType() != type_:
        raise PoplibsError(f"{what}: b '{b.name}' is {b.elementType()}, a is {type_}")
    block, options = block_options(options, BLOCK_SIZE, what)
    cache = planningCacheArgument(cache, what)
    name = debug_name(debugContext, what) or what
    S = graph.addVariable(type_, [batch, k, n], f"{name}/X")
    mapTensorLinearly(graph, S, 0, n)
    L, X3 = _row_form(as_batch(a), S, bool(leftSide), bool(lower))
    X = X3.reshape(b.shape())
    prog_.add(prog.Copy(b, X, False, f"{name}/rhs"))
    solve_rows(graph, L, S, bool(unitDiagonal), prog_, name, block, options, cache)
    return X


def getTriangularSolveMatMulPrePlanParameters(inputType: Any, outputType: Any, aShape: Any, bShape: Any,
                                              leftSide: bool, lower: bool,
                                              options: dict | None = None) -> list[tuple[MatMulParams, dict]]:
    """The ``(MatMulParams, options)`` of the products :func:`triangularSolve` runs for these
    shapes: one grouped ``[B, k, bs] x [B, bs, n - j1]`` update after each diagonal block but the
    last (to preplan them with ``preplanMatMuls``)."""
    what = "getTriangularSolveMatMulPrePlanParameters"
    in_type = type_argument(inputType, f"{what}: inputType")
    out_type = type_argument(outputType, f"{what}: outputType")
    a_shape, b_shape = shape_argument(aShape, f"{what}: aShape"), shape_argument(bShape, f"{what}: bShape")
    batch, n, k = _shapes(what, a_shape, b_shape, leftSide)
    block, options = block_options(options, BLOCK_SIZE, what)
    return [(MatMulParams(in_type, out_type, (batch, k, j1 - j0), (batch, j1 - j0, n - j1)), dict(options))
            for j0, j1 in solve_steps(n, block) if j1 < n and k > 0]


def triangularMask(graph: Graph, a: Tensor, lower: bool, unitDiagonal: bool, prog_: prog.Sequence,
                   debugContext: Any = "") -> Tensor:
    """A copy of ``a [..., n, n]`` with the elements outside its lower (or upper) triangle zero, and
    with ``unitDiagonal`` ones on the diagonal: ``poplin::TriangularMask`` vertices on the tiles
    holding each run of rows write a new tensor laid out as ``a``."""
    what = "triangularMask"
    a = tensorArgument(graph, a, f"{what}: a")
    prog_ = sequenceArgument(prog_, what)
    if a.rank() < 2 or a.shape()[-1] != a.shape()[-2]:
        raise PoplibsError(f"{what}: a '{a.name}' must be [..., n, n], got shape {a.shape()}")
    name = debug_name(debugContext, what) or what
    out = graph.clone(a, f"{name}/out")
    if a.numElements():
        cs = graph.addComputeSet(name)
        add_masks(graph, cs, as_batch(a), as_batch(out), bool(lower), bool(unitDiagonal))
        prog_.add(prog.Execute(cs))
    return out


def add_masks(graph: Graph, cs: Any, src: Tensor, dst: Tensor, lower: bool, unit: bool) -> None:
    """``poplin::TriangularMask`` vertices in ``cs`` writing the masked rows of ``src [B, r, c]``
    to ``dst`` (row ``i`` of each matrix keeps columns ``<= i`` when ``lower``, else ``>= i``)."""

    def state(v: Any, first: int) -> None:
        graph.setInitialValue(v["firstRow"], first)
        graph.setInitialValue(v["lower"], lower)
        graph.setInitialValue(v["unitDiagonal"], unit)

    add_row_vertices(graph, cs, templateVertex("poplin::TriangularMask", src.elementType()),
                     {"out": dst, "a": src}, None, state)
