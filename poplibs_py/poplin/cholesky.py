"""PopLibs' Cholesky.hpp: the Cholesky factor of symmetric positive definite matrices.

``choleskyInPlace`` factors each matrix of ``a [..., n, n]`` as ``A = L L^T`` (``lower``) or
``A = U^T U``, blocked and right-looking, in place: for each diagonal block of ``blockSize``
rows, a ``poplin::CholeskyBlock`` vertex per matrix factors the block; ``poplin::ForwardSubstitution``
vertices solve the panel below it (``P L_jj^T = A_panel``); a grouped ``matMulAcc`` takes ``P
P^T`` from the trailing matrix. Finally a ``popops`` zero clears the other triangle. The upper
factor is the lower factor of the transposed view, so both read and write ``a`` where it lies.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor, concat
from poplar_py import program as prog
from poplar_py.debug import debug_name

from .. import popops
from ..poputil import PoplibsError, mapTensorLinearly, sequenceArgument, templateVertex, tensorArgument
from .linalg_blocks import (
    as_batch,
    block_options,
    check_float,
    first_tile,
    shape_argument,
    solve_steps,
    substitution_vertices,
    type_argument,
)
from .matmul import matMulGroupedAcc, transposeGroupedMatrix
from .matmul_planning import MatMulParams
from .plan import PlanningCache, planningCacheArgument

__all__ = ["cholesky", "choleskyInPlace", "createCholeskyInput", "getCholeskyMatMulPrePlanParameters"]

#: PopLibs' default ``blockSize`` of the Cholesky factoriser
BLOCK_SIZE = 8


def _square(what: str, shape: list[int]) -> tuple[int, int]:
    """``(batch, n)`` of a ``[..., n, n]`` shape."""
    if len(shape) < 2:
        raise PoplibsError(f"{what}: tensor A must have rank of 2 or higher, got shape {shape}")
    if shape[-1] != shape[-2]:
        raise PoplibsError(f"{what}: tensor A must be square in its last two dimensions, got shape {shape}")
    if shape[-1] == 0:
        raise PoplibsError(f"{what}: received an empty matrix {shape}")
    batch = 1
    for d in shape[:-2]:
        batch *= d
    return batch, shape[-1]


def getCholeskyMatMulPrePlanParameters(type_: Any, shape: Any, lower: bool,
                                       options: dict | None = None) -> list[tuple[MatMulParams, dict]]:
    """The ``(MatMulParams, options)`` of the products :func:`cholesky` runs: one grouped
    ``[B, n - j1, bs] x [B, bs, n - j1]`` trailing update after each diagonal block but the last."""
    what = "getCholeskyMatMulPrePlanParameters"
    dtype = type_argument(type_, f"{what}: type")
    batch, n = _square(what, shape_argument(shape, f"{what}: shape"))
    block, options = block_options(options, BLOCK_SIZE, what)
    return [(MatMulParams(dtype, dtype, (batch, n - j1, j1 - j0), (batch, j1 - j0, n - j1)), dict(options))
            for j0, j1 in solve_steps(n, block) if j1 < n]


def createCholeskyInput(graph: Graph, type_: Any, shape: Any, lower: bool, debugContext: Any = "",
                        options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new ``[..., n, n]`` tensor for :func:`cholesky`, whole rows spread evenly over the tiles."""
    what = "createCholeskyInput"
    dtype = type_argument(type_, f"{what}: type")
    shape = shape_argument(shape, f"{what}: shape")
    _square(what, shape)
    block_options(options, BLOCK_SIZE, what)
    planningCacheArgument(cache, what)
    t = graph.addVariable(dtype, shape, debug_name(debugContext, f"{what}: debugContext") or "A")
    mapTensorLinearly(graph, t, 0, shape[-1])
    return t


def choleskyInPlace(graph: Graph, a: Tensor, lower: bool, prog_: prog.Sequence, debugContext: Any = "",
                    options: dict | None = None, cache: PlanningCache | None = None) -> None:
    """Overwrite each matrix of ``a [..., n, n]`` (float or half, symmetric positive definite) with
    its lower (``lower``) or upper Cholesky factor, zeros in the other triangle (see the module
    doc; a matrix that is not positive definite gives NaN). ``options``: ``blockSize`` (default 8)
    and matMul's options. Needs the popops codelets (the zeroing) as well as poplin's."""
    what = "choleskyInPlace"
    a = tensorArgument(graph, a, f"{what}: a")
    _factor(what, graph, a, lower, prog_, debugContext, options, cache)


def cholesky(graph: Graph, a: Tensor, lower: bool, prog_: prog.Sequence, debugContext: Any = "",
             options: dict | None = None, cache: PlanningCache | None = None) -> Tensor:
    """A new tensor holding the Cholesky factor of each matrix of ``a`` (``a`` is copied into it by
    a Copy, then factored in place as :func:`choleskyInPlace`)."""
    what = "cholesky"
    a = tensorArgument(graph, a, f"{what}: a")
    name = debug_name(debugContext, what) or what
    out = graph.clone(a, f"{name}/factor")
    sequenceArgument(prog_, what).add(prog.Copy(a, out, False, f"{name}/copy"))
    _factor(what, graph, out, lower, prog_, name, options, cache)
    return out


def _factor(what: str, graph: Graph, a: Tensor, lower: bool, prog_: prog.Sequence, debugContext: Any,
            options: Any, cache: Any) -> None:
    prog_ = sequenceArgument(prog_, what)
    _, n = _square(what, a.shape())
    check_float(what, "a", a)
    if not a.isParallelWriteable():
        raise PoplibsError(f"{what}: a '{a.name}' is not writeable in place (it holds constants or aliases)")
    block, options = block_options(options, BLOCK_SIZE, what)
    cache = planningCacheArgument(cache, what)
    name = debug_name(debugContext, what) or what
    A = as_batch(a)
    if not lower:  # U^T is the lower factor of A^T = A
        A = transposeGroupedMatrix(A)
    vertex = templateVertex("poplin::CholeskyBlock", A.elementType())
    steps = solve_steps(n, block)
    for j0, j1 in steps:
        cs = graph.addComputeSet(f"{name}/diagonal{j0}")
        diagonal = A[:, j0:j1, j0:j1]
        for b in range(A.dim(0)):
            v = graph.addVertex(cs, vertex, {"rows": diagonal[b]})
            graph.setTileMapping(v, first_tile(graph, diagonal[b]))
        prog_.add(prog.Execute(cs))
        if j1 < n:
            panel = A[:, j1:, j0:j1]
            cs = graph.addComputeSet(f"{name}/panel{j0}")
            substitution_vertices(graph, cs, diagonal, panel, False)
            prog_.add(prog.Execute(cs))
            matMulGroupedAcc(graph, A[:, j1:, j1:], -1.0, panel, transposeGroupedMatrix(panel), prog_,
                             f"{name}/update{j0}", options, cache)
    above = [A[:, j0:j1, j1:].flatten() for j0, j1 in steps if j1 < n]
    if above:
        popops.zero(graph, concat(above), prog_, f"{name}/zeroUpper")
