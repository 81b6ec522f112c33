"""PopLibs' experimental LuFactorization.hpp: ``A = L U`` without pivoting (Doolittle).

``LUFactorization(graph, A, prog)`` copies ``A [m, n]`` (float, or half cast to float: the
factorization needs the precision) into a float work matrix, rows spread over the tiles, and
factors it in place in steps of ``DEPTH`` columns, as PopLibs does: a ``poplin::LUBlock`` vertex
factors the diagonal block; ``poplin::ForwardSubstitution`` vertices, in one compute set, solve
the rows of U to its right (``L_jj U_row = A_row``, unit diagonal) and the multipliers below it
(``L_col U_jj = A_col``); a ``matMulAcc`` takes ``L_col U_row`` from the trailing matrix. Then
``poplin::TriangularMask`` vertices write ``L [m, m]`` (unit lower: the multipliers, ones on the
diagonal) and ``U [m, n]`` (upper) into new float tensors. A zero pivot gives infinities and
NaN, as elimination without pivoting does.
"""

from __future__ import annotations

from typing import Any

from poplar_py import FLOAT, Graph, Tensor, concat
from poplar_py import program as prog
from poplar_py.debug import debug_name

from .. import popops
from ..poputil import PoplibsError, mapTensorLinearly, sequenceArgument, templateVertex, tensorArgument
from .linalg_blocks import check_float, first_tile, solve_steps, substitution_vertices
from .matmul import matMulAcc, transposeGroupedMatrix
from .triangular import add_masks

__all__ = ["LUFactorization"]

#: columns factored a step (PopLibs' default depth)
DEPTH = 6


def LUFactorization(graph: Graph, input: Tensor, prog_: prog.Sequence,  # noqa: A002 (PopLibs' name)
                    debugContext: Any = "") -> tuple[Tensor, Tensor]:
    """``(L, U)``: ``L [m, m]`` unit lower triangular and ``U [m, n]`` upper triangular float
    tensors with ``L @ U = input`` (``input [m, n]``, float or half, factored without pivoting;
    see the module doc). ``input`` is not changed."""
    what = "LUFactorization"
    a = tensorArgument(graph, input, f"{what}: input")
    prog_ = sequenceArgument(prog_, what)
    if a.rank() != 2 or a.numElements() == 0:
        raise PoplibsError(f"{what}: input '{a.name}' must be a non-empty matrix [M, N], got shape "
                           f"{a.shape()}")
    check_float(what, "input", a)
    name = debug_name(debugContext, what) or what
    m, n = a.shape()
    work = graph.addVariable(FLOAT, [m, n], f"{name}/work")
    mapTensorLinearly(graph, work, 0, n)
    if a.elementType() == FLOAT:
        prog_.add(prog.Copy(a, work, False, f"{name}/copy"))
    else:
        popops.castWithOutput(graph, a, work, prog_, f"{name}/cast")
    edge = min(m, n)
    for j0, j1 in solve_steps(edge, DEPTH):
        _step(graph, work, j0, j1, prog_, f"{name}/step{j0}")
    L = graph.addVariable(FLOAT, [m, m], f"{name}/L")
    U = graph.addVariable(FLOAT, [m, n], f"{name}/U")
    mapTensorLinearly(graph, L, 0, m)
    mapTensorLinearly(graph, U, 0, n)
    multipliers = work[:, :edge]
    if m > edge:  # L's columns past U's: identity below the factored ones
        zeros = graph.addConstant(FLOAT, [m, m - edge], 0.0, f"{name}/zeros")
        graph.setTileMapping(zeros, 0)
        multipliers = concat([multipliers, zeros], 1)
    cs = graph.addComputeSet(f"{name}/factors")
    add_masks(graph, cs, multipliers.expand([0]), L.expand([0]), lower=True, unit=True)
    add_masks(graph, cs, work.expand([0]), U.expand([0]), lower=False, unit=False)
    prog_.add(prog.Execute(cs))
    return L, U


def _step(graph: Graph, work: Tensor, j0: int, j1: int, prog_: prog.Sequence, name: str) -> None:
    """Factor columns ``[j0, j1)``: the diagonal block, the panels beside and below it, the update."""
    m, n = work.shape()
    core = work[j0:j1, j0:j1]
    cs = graph.addComputeSet(f"{name}/core")
    v = graph.addVertex(cs, templateVertex("poplin::LUBlock", FLOAT), {"rows": core})
    graph.setTileMapping(v, first_tile(graph, core))
    prog_.add(prog.Execute(cs))
    if j1 == m and j1 == n:
        return
    core3 = core.expand([0])
    cs = graph.addComputeSet(f"{name}/panels")
    if j1 < n:  # U's rows: L_jj U_row = A_row, column by column
        substitution_vertices(graph, cs, core3, work[j0:j1, j1:].transpose().expand([0]), True)
    if j1 < m:  # L's multipliers: L_col U_jj = A_col, row by row (U_jj^T is lower)
        substitution_vertices(graph, cs, transposeGroupedMatrix(core3), work[j1:, j0:j1].expand([0]), False)
    prog_.add(prog.Execute(cs))
    if j1 < m and j1 < n:
        matMulAcc(graph, work[j1:, j1:], -1.0, work[j1:, j0:j1], work[j0:j1, j1:], prog_, f"{name}/update")
