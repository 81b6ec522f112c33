"""The building blocks of poplin's Cholesky, triangular solve and LU factorization.

They all work on batches of matrices ``[B, rows, cols]`` (often views: transposed or reversed),
one row per entry of a vertex's ``VectorList``. :func:`row_runs` cuts each matrix's rows into the
runs whose first elements lie on one tile, at most one piece per worker, and the vertices of a
run go to that tile. :func:`solve_rows` is the blocked forward substitution the solvers share:
the rows ``x`` of ``X`` become ``y`` with ``L y = x``; each diagonal block of ``L`` solves its
columns of ``X`` in one compute set of ``poplin::ForwardSubstitution`` vertices, and a grouped
``matMulAcc`` takes the solved columns out of the later ones (``X[:, :, j1:] -= Y_j
L[:, j1:, j]^T``). Also the options the solvers share (``blockSize`` and matMul's).
"""

from __future__ import annotations

import math
from typing import Any

from poplar_py import FLOAT, HALF, ComputeSet, Graph, Tensor, Type
from poplar_py import program as prog
from poplar_py.errors import InvalidArgumentError
from poplar_py.types import asType

from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, templateVertex
from .matmul import MATMUL_OPTIONS, matMulGroupedAcc, transposeGroupedMatrix
from .plan import PlanningCache

__all__ = ["FLOAT_TYPES", "add_row_vertices", "as_batch", "block_options", "check_float", "first_tile",
           "row_runs", "shape_argument", "solve_rows", "solve_steps", "substitution_vertices",
           "type_argument"]

FLOAT_TYPES = (FLOAT, HALF)


def block_options(options: Any, default: int, what: str) -> tuple[int, dict]:
    """``blockSize`` (a positive integer, ``default`` if not given) and the rest of ``options`` (for
    the matMuls; PoplibsError naming an unknown option)."""
    options = checkOptions(options, MATMUL_OPTIONS | {"blockSize"}, what)
    value = options.pop("blockSize", default)
    try:
        size = int(value)
    except (TypeError, ValueError):
        size = 0
    if size < 1 or isinstance(value, bool) or (isinstance(value, float) and value != size):
        raise PoplibsError(f"{what}: option blockSize must be a positive integer, got {value!r:.40}")
    return size, options


def type_argument(value: Any, what: str) -> Type:
    """``value`` as a poplar element type; PoplibsArgumentError naming ``what`` if it is not one."""
    try:
        return asType(value)
    except InvalidArgumentError:
        raise PoplibsArgumentError(f"{what} must be a poplar element type, got {value!r:.40}") from None


def shape_argument(value: Any, what: str) -> list[int]:
    """``value`` as a list of ints; PoplibsArgumentError naming ``what`` if it is not one."""
    try:
        return [int(d) for d in value]
    except (TypeError, ValueError):
        raise PoplibsArgumentError(f"{what} must be a list of ints, got {value!r:.40}") from None


def check_float(what: str, name: str, t: Tensor) -> Type:
    if t.elementType() not in FLOAT_TYPES:
        raise PoplibsError(f"{what}: {name} '{t.name}' must be of a floating-point type (float or half), got "
                           f"{t.elementType()}")
    return t.elementType()


def as_batch(t: Tensor) -> Tensor:
    """``t [..., r, c]`` as ``[B, r, c]`` (B the product of the leading dimensions, 1 for none)."""
    *batch, rows, cols = t.shape()
    return t.reshape([math.prod(batch), rows, cols])


def first_tile(graph: Graph, t: Tensor) -> int:
    """The tile holding ``t``'s first element (0 if it has none)."""
    for tile, intervals in enumerate(graph.getTileMapping(t.flatten().slice(0, 1))):
        if intervals:
            return tile
    return 0


def row_runs(graph: Graph, t: Tensor) -> list[tuple[int, int, int, int]]:
    """``(batch, first, end, tile)``: each matrix's rows in runs whose first elements lie on one
    tile, each run cut in at most as many pieces as a tile has workers."""
    workers = graph.getTarget().getNumWorkerContexts()
    runs = []
    for b in range(t.dim(0)):
        for tile, intervals in enumerate(graph.getTileMapping(t[b].slice(0, 1, 1))):
            for iv in intervals:
                size = iv.size()
                pieces = min(size, workers)
                for p in range(pieces):
                    lo, hi = iv.begin() + p * size // pieces, iv.begin() + (p + 1) * size // pieces
                    runs.append((b, lo, hi, tile))
    return runs


def add_row_vertices(graph: Graph, cs: ComputeSet, vertex: str, rows: dict[str, Tensor],
                     per_batch: dict[str, Tensor] | None = None, state: Any = None) -> None:
    """A ``vertex`` per run of rows of the first tensor of ``rows`` (``[B, r, c]``, see
    :func:`row_runs`): each field of ``rows`` gets those rows of its tensor, each field of
    ``per_batch`` (``[B, ...]``) its batch's entry, and ``state(v, first)`` sets its state."""
    for b, lo, hi, tile in row_runs(graph, next(iter(rows.values()))):
        fields = {name: t[b].slice(lo, hi, 0) for name, t in rows.items()}
        fields.update({name: x[b] for name, x in (per_batch or {}).items()})
        v = graph.addVertex(cs, vertex, fields)
        graph.setTileMapping(v, tile)
        if state is not None:
            state(v, lo)


def substitution_vertices(graph: Graph, cs: ComputeSet, L: Tensor, X: Tensor, unit: bool) -> None:
    """Vertices in ``cs`` turning each row ``x`` of ``X [B, K, n]`` into ``y`` with ``L y = x``
    (``L [B, n, n]`` lower triangular)."""
    vertex = templateVertex("poplin::ForwardSubstitution", X.elementType())
    add_row_vertices(graph, cs, vertex, {"x": X}, {"a": L},
                     lambda v, _: graph.setInitialValue(v["unitDiagonal"], bool(unit)))


def solve_steps(n: int, block: int) -> list[tuple[int, int]]:
    """The diagonal blocks ``[j0, j1)`` of an ``n``-row triangle cut in blocks of ``block``."""
    return [(j0, min(j0 + block, n)) for j0 in range(0, n, block)]


def solve_rows(graph: Graph, L: Tensor, X: Tensor, unit: bool, prog_: prog.Sequence, name: str, block: int,
               options: dict, cache: PlanningCache | None) -> None:
    """Rows ``x`` of ``X [B, K, n]`` become ``y`` with ``L y = x``, in place (``L [B, n, n]``
    lower triangular; its upper triangle is not read, nor with ``unit`` its diagonal)."""
    if X.dim(1) == 0:
        return
    n = L.dim(1)
    for j0, j1 in solve_steps(n, block):
        cs = graph.addComputeSet(f"{name}/substitute{j0}")
        substitution_vertices(graph, cs, L[:, j0:j1, j0:j1], X[:, :, j0:j1], unit)
        prog_.add(prog.Execute(cs))
        if j1 < n:
            lower = transposeGroupedMatrix(L[:, j1:, j0:j1])
            matMulGroupedAcc(graph, X[:, :, j1:], -1.0, X[:, :, j0:j1], lower, prog_, f"{name}/update{j0}",
                             options, cache)
