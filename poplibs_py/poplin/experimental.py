"""poplin::experimental (PopLibs' poplin/experimental/QRFactorization.hpp): QR factorization;
also LuFactorization.hpp's ``LUFactorization`` (:mod:`.lu`).

``QRFactorization(graph, A, Q, prog)`` turns ``A`` (``[m, n]``, ``m >= n``) into R and the
identity ``Q`` (``[m, m]``) into the orthogonal factor, so that ``A = Q @ R`` before the call,
with Householder reflections computed on the tiles. The work is on A's columns and Q's rows,
so :func:`createQRFactorizationMatrices` lays A out transposed (A's columns contiguous) and puts
the ``n + m`` columns of A and rows of Q on the tiles in contiguous, even shares.

Step ``k`` (one per column of A): a ``popops.dynamicSlice`` fetches the column ``x`` of A from
the current block of columns, a ``Householder`` vertex finds the reflection that takes
``x[k:]`` to ``r e_k``, and ``UpdateColumns`` / ``UpdateRows`` vertices on every tile apply it to
the later columns of A and to the rows of Q (``Q <- Q H``); the pivot column becomes exactly
``(r, 0, ..., 0)``, so R is upper triangular to the bit. Steps come in blocks of
``rowsPerIteration`` columns: one ``popops.countedLoop`` per block, whose counter is the step
within the block, so the program holds ``n / rowsPerIteration`` copies of the step.

Signs, as PopLibs: ``r = -sign(d) |x[k:]|`` with ``d`` the pivot (sign(0) = +1), which is
LAPACK's (numpy's) choice, but the reflection is applied even when ``x[k+1:]`` is already zero,
where LAPACK skips it: for ``m == n`` R's last diagonal element and Q's last column are the
negatives of numpy's ``np.linalg.qr(A, "complete")``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from poplar_py import FLOAT, Graph, Tensor
from poplar_py import program as prog_
from poplar_py.debug import debug_name
from poplar_py.types import asType

from ..popops import countedLoop, dynamicSlice
from ..poputil import PoplibsArgumentError, PoplibsError, tensorArgument
from .lu import LUFactorization

__all__ = ["LUFactorization", "QRFactorization", "createQRFactorizationMatrices"]

ROWS_PER_ITERATION = 32  # PopLibs' default block of steps


def createQRFactorizationMatrices(graph: Graph, type_: Any, m: int, n: int,
                                  debugContext: Any = "") -> list[Tensor]:
    """``[A, Q]``: new ``[m, n]`` and ``[m, m]`` tensors of ``type_`` laid out for
    :func:`QRFactorization` (A is a transposed view of an ``[n, m]`` variable); the ``n + m``
    columns of A and rows of Q go to the tiles in contiguous, even shares."""
    name = debug_name(debugContext, "createQRFactorizationMatrices")
    for what, value in (("m", m), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise PoplibsArgumentError(f"createQRFactorizationMatrices: {what} must be a non-negative "
                                       f"integer, got {value!r:.40}")
    if m < n:
        raise PoplibsError(f"createQRFactorizationMatrices: number of matrix A rows must be greater or equal "
                           f"to the number of columns, got m = {m}, n = {n}")
    type_ = asType(type_)
    at = graph.addVariable(type_, [n, m], f"{name}/A" if name else "A")
    q = graph.addVariable(type_, [m, m], f"{name}/Q" if name else "Q")
    work, tiles = n + m, graph.getTarget().getNumTiles()
    for tile in range(tiles):
        first, last = tile * work // tiles, (tile + 1) * work // tiles
        for t, lo, hi in ((at, first, min(last, n)), (q, max(first, n) - n, last - n)):
            if lo < hi:
                graph.setTileMapping(t.slice(lo, hi, 0), tile)
    return [at.transpose(), q]


def QRFactorization(graph: Graph, A: Tensor, Q: Tensor, prog: prog_.Sequence, debugContext: Any = "",
                    options: dict | None = None) -> None:
    """Overwrite ``A`` (``[m, n]`` FLOAT, ``m >= n``) with R and ``Q`` (``[m, m]`` FLOAT, holding the
    identity) with the orthogonal factor: ``A = Q @ R`` before the call (see the module doc).
    ``options``: ``rowsPerIteration`` (default 32), the steps per counted loop; other options
    are ignored, as in PopLibs. Needs the popops and poplin codelets."""
    name = debug_name(debugContext, "QRFactorization") or "QRFactorization"
    A, Q = tensorArgument(graph, A, f"{name}: A"), tensorArgument(graph, Q, f"{name}: Q")
    if A.rank() != 2 or Q.rank() != 2:
        raise PoplibsError(f"{name}: tensors A and Q must have a rank of 2, got A {A.shape()} and "
                           f"Q {Q.shape()}")
    m, n = A.shape()
    if m < n:
        raise PoplibsError(f"{name}: number of matrix A rows must be greater or equal to the number of "
                           f"columns, A '{A.name}' is {A.shape()}")
    if Q.shape() != [m, m]:
        raise PoplibsError(f"{name}: Q '{Q.name}' must be square with A's {m} rows, got {Q.shape()}")
    if A.elementType() != FLOAT or Q.elementType() != FLOAT:
        raise PoplibsError(f"{name}: only float is supported for this operation, got A {A.elementType()} "
                           f"and Q {Q.elementType()}")
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsArgumentError(f"{name}: prog must be a program Sequence, got {type(prog).__name__}")
    block = _rows_per_iteration(options, name)
    at = A.transpose()  # row c: A's column c
    reflector = graph.addVariable(FLOAT, [3], f"{name}/reflector")
    graph.setTileMapping(reflector, 0)
    for row in range(0, n, block):
        steps = min(block, n - row)

        def body(step: Tensor, row: int = row, steps: int = steps) -> prog_.Sequence:
            return _step(graph, at, Q, row, steps, step, reflector, f"{name}/column{row}")

        prog.add(countedLoop(graph, steps, body, f"{name}/block{row}"))


def _rows_per_iteration(options: dict | None, name: str) -> int:
    if options is not None and not isinstance(options, dict):
        raise PoplibsArgumentError(f"{name}: options must be a dict, got {type(options).__name__}")
    value = (options or {}).get("rowsPerIteration", ROWS_PER_ITERATION)
    try:
        rows = int(value)
    except (TypeError, ValueError):
        rows = 0
    if rows < 1 or isinstance(value, bool) or (isinstance(value, float) and value != rows):
        raise PoplibsError(f"{name}: option rowsPerIteration must be a positive integer, got {value!r:.40}")
    return rows


def _step(graph: Graph, at: Tensor, Q: Tensor, row: int, steps: int, step: Tensor, reflector: Tensor,
          name: str) -> prog_.Sequence:
    """One step of the block of columns ``[row, row + steps)``; ``step`` counts within the block.
    Rows are cut to the positions ``[row, m)``, so step ``i`` has its pivot at position ``i``."""
    seq = prog_.Sequence()
    n, m = at.shape()
    x = dynamicSlice(graph, at.slice([row, row], [row + steps, m]), step, [0], [1], seq, f"{name}/x")[0]
    cs = graph.addComputeSet(f"{name}/householder")
    shared = {"x": x, "step": step, "reflector": reflector}
    v = graph.addVertex(cs, "poplin::experimental::Householder", shared)
    graph.setTileMapping(v, _most(graph, x))
    seq.add(prog_.Execute(cs))
    cs = graph.addComputeSet(f"{name}/update")
    for tile, lo, hi in _runs(graph, at.slice([row, row], [n, row + 1])):
        v = graph.addVertex(cs, "poplin::experimental::UpdateColumns",
                            {"columns": at.slice([row + lo, row], [row + hi, m]), **shared})
        graph.setInitialValue(v["first"], lo)
        graph.setTileMapping(v, tile)
    for tile, lo, hi in _runs(graph, Q.slice([0, row], [m, row + 1])):
        v = graph.addVertex(cs, "poplin::experimental::UpdateRows",
                            {"rows": Q.slice([lo, row], [hi, m]), **shared})
        graph.setTileMapping(v, tile)
    seq.add(prog_.Execute(cs))
    return seq


def _runs(graph: Graph, column: Tensor) -> list[tuple[int, int, int]]:
    """``(tile, first, end)``: the runs of rows of a matrix whose first entries (``column``, its
    first cut column) lie on one tile: each run is updated there."""
    mapping = graph.getTileMapping(column)
    return [(tile, iv.begin(), iv.end()) for tile, ivs in enumerate(mapping) for iv in ivs]


def _most(graph: Graph, t: Tensor) -> int:
    """The tile holding most of ``t``."""
    counts = [sum(iv.size() for iv in ivs) for ivs in graph.getTileMapping(t)]
    return int(np.argmax(counts))
