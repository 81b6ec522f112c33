"""popops' cycle estimators: what PopLibs' popops vertices cost at the tile's data-path width.

A worker loads and stores ``Target.getDataPathWidth()`` bits a cycle, so PopLibs' element-wise
vertices process vectors of ``getVectorWidth(type)`` elements (2 floats or 4 halves on 64 bits).
Each function here follows one of PopLibs' estimators (``lib/popops/popopsCycleEstimators.cpp``,
``lib/popops/PerformanceEstimation.cpp``, ``lib/popops/reduction/CycleEstimationFunctions.cpp``,
``lib/popops/ExpressionGenerator.cpp``): a per-vertex overhead, a per-worker overhead, and an inner
loop costed from the operation's figures (:mod:`.op_cycles`).

poplar-py's element-wise vertices are one MultiVertex per tile whose worker ``w`` processes row
``w`` of its list fields (``tile_rows``). Where PopLibs' MultiVertex estimator gives every worker
``ceil(n / workers)`` elements, these take the longest row: what the slowest worker does. A
generated ``map`` vertex is costed as the PopLibs vertex that would run its expression
(:class:`MapCost`): a single operation as the ``UnaryOp1D``, ``BinaryOp1D`` or
``BroadcastScalar1D`` vertex of that operation, a conversion as ``Cast1D``, anything else as the
fused codelet PopLibs generates. The estimates report no FLOPs: the profile's FLOPs are those of
matMuls and convolutions, against the AMP's peak.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from poplar_py import BOOL, FLOAT, HALF, UNSIGNED_INT, Graph, Target, Type, VertexPerfEstimate

from . import expr as pe
from . import op_cycles

#: the supervisor's share of a MultiVertex (``basicOpSupervisorOverhead``)
SUPERVISOR_CYCLES = 11
#: load/store and loop-decision cycles added to a vectorised inner-loop pass: unary ops; binary
#: ops with an assembly codelet (float/half ADD, SUBTRACT, MULTIPLY) and without
UNARY_LOOP_OVERHEAD, FAST_BINARY_LOOP_OVERHEAD, BINARY_LOOP_OVERHEAD = 4, 2, 5

RowCost = Callable[[Sequence[int], Target], int]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def rowSizes(field: Any) -> list[int]:
    """The lengths of a VectorList field's rows (a vertex introspector's field info)."""
    return [field.getSizeAtIndex(i) for i in range(field.size())]


@dataclass(frozen=True)
class MapCost:
    """How a generated ``map`` vertex is costed: ``kind`` names the PopLibs vertex whose estimator
    it follows (it is part of the generated codelet, so vertices costed differently differ), and
    ``cycles(rows, target)`` gives its tile cycles from the lengths of its output rows (one a
    worker; a worker's rows summed where it has several)."""

    kind: str
    cycles: RowCost

    def estimator(self, outField: str = "out") -> Callable[[Any, Target], VertexPerfEstimate]:
        """The perf estimator of a vertex whose rows are those of ``outField``."""

        def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
            rows = rowSizes(vertex.getFieldInfo(outField))
            workers = target.getNumWorkerContexts()  # row r is worker r mod workers's
            return VertexPerfEstimate(int(self.cycles([sum(rows[w::workers]) for w in range(workers)]
                                                      if len(rows) > workers else rows, target)))

        return estimate


def registerDefaultEstimator(graph: Graph, vertexType: str,
                             estimator: Callable[[Any, Target], VertexPerfEstimate]) -> None:
    """Register a library estimator for ``vertexType`` unless one is registered (the user's wins)."""
    if not graph.hasPerfEstimator(vertexType):
        graph.registerPerfEstimator(vertexType, estimator)


# ---- inner loops ------------------------------------------------------------------------------

def unaryLoopCycles(n: int, vectorWidth: int, entry: tuple[int, bool, int]) -> int:
    """A unary op's inner loop over ``n`` elements (``unaryOpInnerLoopCycles``)."""
    cycles, natural, unroll = entry
    if not natural and unroll:
        return ceil_div(n, unroll) * cycles
    width = vectorWidth if natural else 1
    return (cycles + UNARY_LOOP_OVERHEAD) * (n + width - 1) // width


def binaryLoopCycles(n: int, vectorWidth: int, entry: tuple[int, bool, int], overhead: int) -> int:
    """A binary op's inner loop over ``n`` elements: ``overhead`` cycles are added to a vectorised
    pass (``binaryOpInnerLoopCycles``, the scalar-broadcast loops)."""
    cycles, natural, unroll = entry
    if natural:
        return ceil_div(n, vectorWidth) * (cycles + overhead)
    return ceil_div(n, max(unroll, 1)) * cycles


def _fast_binary(op: pe.BinaryOpType, t: Type) -> bool:
    """The op has an assembly codelet (PopLibs' ``hasExternalCodelet``)."""
    return t in (FLOAT, HALF) and op in (pe.BinaryOpType.ADD, pe.BinaryOpType.SUBTRACT,
                                         pe.BinaryOpType.MULTIPLY)


# ---- single operations ------------------------------------------------------------------------

def unaryOpCycles(op: pe.UnaryOpType, t: Type, inPlace: bool, rows: Sequence[int], target: Target) -> int:
    """``UnaryOp1D`` / ``UnaryOp1DInPlace``: per worker 17 (33 for EXPONENT; 55 in place) plus its
    loop, six workers, 9 + 11 for the supervisor."""
    table = op_cycles.UNARY_IN_PLACE if inPlace else op_cycles.UNARY
    worker = 55 if inPlace else 33 if op is pe.UnaryOpType.EXPONENT else 17
    loop = unaryLoopCycles(max(rows, default=0), target.getVectorWidth(t), table[op.name][t.name])
    return target.getNumWorkerContexts() * (worker + loop) + 9 + SUPERVISOR_CYCLES


def binaryOpCycles(op: pe.BinaryOpType, t: Type, inPlace: bool, rows: Sequence[int], target: Target) -> int:
    """``BinaryOp1D`` / ``BinaryOp1DInPlace``: per worker 29 (float) or 26 (58 in place) plus its
    loop, whose vectorised passes take 2 cycles more with an assembly codelet, else 5."""
    table = op_cycles.BINARY_IN_PLACE if inPlace else op_cycles.BINARY
    worker = 58 if inPlace else 29 if t == FLOAT else 26
    overhead = FAST_BINARY_LOOP_OVERHEAD if _fast_binary(op, t) else BINARY_LOOP_OVERHEAD
    loop = binaryLoopCycles(max(rows, default=0), target.getVectorWidth(t), table[op.name][t.name], overhead)
    return target.getNumWorkerContexts() * (worker + loop) + SUPERVISOR_CYCLES


def broadcastScalarCycles(op: pe.BinaryOpType, t: Type, inPlace: bool, rows: Sequence[int],
                          target: Target) -> int:
    """``BroadcastScalar1D`` / ``BroadcastScalar1DInPlace`` (one operand a single element): per
    worker 20 plus its loop, whose vectorised passes take 1 cycle more with an assembly codelet,
    else 4."""
    table = op_cycles.BROADCAST_IN_PLACE if inPlace else op_cycles.BROADCAST
    overhead = 1 if _fast_binary(op, t) else 4
    loop = binaryLoopCycles(max(rows, default=0), target.getVectorWidth(t), table[op.name][t.name], overhead)
    return target.getNumWorkerContexts() * (20 + loop) + SUPERVISOR_CYCLES


def selectCycles(rows: Sequence[int], target: Target) -> int:
    """``Select``: a worker vertex, 5 plus 6 per region and 5 per element (three loads, a move and
    a store); each worker's row is one region."""
    return target.getNumWorkerContexts() * (5 + 6 + 5 * max(rows, default=0))


def fusedCycles(numOps: int, vectorInputs: int, t: Type, rows: Sequence[int], target: Target) -> int:
    """A codelet PopLibs generates for a fused expression (``ExpressionGenerator``'s MultiVertex
    estimate): 20, plus per vector input and per operation one cycle for each whole vector and
    each remaining element of the tile's ``n`` elements, rounded up to a multiple of the workers."""
    n, width, workers = sum(rows), target.getVectorWidth(t), target.getNumWorkerContexts()
    return ceil_div(20 + vectorInputs * (n // width + n % width) * numOps, workers) * workers


# ---- cast, fill -------------------------------------------------------------------------------

def castWorkerCycles(n: int, src: Type, dst: Type, target: Target) -> int:
    """One worker converting ``n`` elements (``castWorkerCycles``): float/half conversions run on
    the auxiliary pipeline at the narrower of two loads and one store per cycle; other conversions
    are C++, one element (plus a cycle) per vector; 19 to start, 1 or 3 per remainder bit."""
    path_bytes = target.getDataPathWidth() // 8
    loads, stores = path_bytes // src.size, path_bytes // dst.size
    aux = src.is_float and dst.is_float
    width = min(2 * loads, stores) if aux else 1
    per_vector = max(width // min(width, loads), width // min(width, stores)) + (not aux)
    rest = n % width
    bits = (width - 1).bit_length()
    return 19 + per_vector * (n // width) + bits + 2 * sum((rest >> i) & 1 for i in range(bits))


def castCycles(src: Type, dst: Type, rows: Sequence[int], target: Target) -> int:
    """``Cast1D``: 12 + per worker its conversion and 18."""
    worker = castWorkerCycles(max(rows, default=0), src, dst, target)
    return 12 + target.getNumWorkerContexts() * (worker + 18)


def fillCycles(t: Type, n: int, target: Target) -> int:
    """``Fill`` of ``n`` elements by one worker (``_fillCycleEstimate``): a 64-bit store per vector
    after 16 + 6 (+1) cycles of set-up and tail; halves 26 + a cycle per vector; bytes at 4 or 8
    a cycle."""
    if t.size == 1:
        return 28 + n // 4 if n < 64 else 39 + n // 8
    width = target.getDataPathWidth() // (16 if t == HALF else 32)
    if t == HALF:
        return {1: 15, 2: 21}.get(n, 26 + n // width)
    return 16 + n // width + 6 + int(n % width == 1) + 1


def fill2dEstimator(t: Type) -> Callable[[Any, Target], VertexPerfEstimate]:
    """``popops::Fill2d``: every worker runs a ``Fill`` on its row."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        rows = rowSizes(vertex.getFieldInfo("out"))
        slowest = max((fillCycles(t, n, target) for n in rows), default=0)
        return VertexPerfEstimate(target.getNumWorkerContexts() * slowest)

    return estimate


def cast2dEstimator(src: Type, dst: Type) -> Callable[[Any, Target], VertexPerfEstimate]:
    """``popops::Cast2d``: costed as ``Cast1D`` over the longest worker row."""
    return MapCost("Cast1D", lambda rows, target: castCycles(src, dst, rows, target)).estimator("dst")


# ---- encoding ---------------------------------------------------------------------------------

#: cycles an index of ``EncodeOneHot``: PopLibs' assembly vertex (unsigned indices, half output)
#: at the worst case of its branches, with the masked-index check; its C++ vertex
ONE_HOT_ASM_CYCLES, ONE_HOT_CYCLES = 62 + 12, 100


def encodeOneHotEstimator(indexType: Type, outType: Type) -> Callable[[Any, Target], VertexPerfEstimate]:
    """``popops::EncodeOneHot`` over its ``indices``: PopLibs' per-index figure. PopLibs runs one
    supervisor vertex over the tile's indices; poplar-py's worker vertices share them out, so the
    tile's workers x its busiest worker comes to the same (its supervisor's entry left out)."""
    per_index = ONE_HOT_ASM_CYCLES if (indexType, outType) == (UNSIGNED_INT, HALF) else ONE_HOT_CYCLES

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        return VertexPerfEstimate(per_index * vertex.getFieldInfo("indices").size())

    return estimate


def iotaEstimator(t: Type) -> Callable[[Any, Target], VertexPerfEstimate]:
    """``popops::Iota``: entry, then per region its set-up and 3 cycles a vector of ``t``."""

    def estimate(vertex: Any, target: Target) -> VertexPerfEstimate:
        width = target.getVectorWidth(t)
        regions = rowSizes(vertex.getFieldInfo("out"))
        return VertexPerfEstimate(10 + sum(4 + 3 * ceil_div(n, width) for n in regions))

    return estimate


# ---- scaled add -------------------------------------------------------------------------------

#: PopLibs' scaled arithmetic operations (``ScaledArithmeticOp``) and the vertices running them
SCALED_VERTICES = {"ADD": "ScaledAddSupervisor", "SUBTRACT": "ScaledSubtractSupervisor",
                   "AXPLUSBY": "aXPlusbYSupervisor", "AXMINUSBY": "aXMinusbYSupervisor"}


def scaledAddCycles(dataType: Type, dataBType: Type, operation: str, n: int, target: Target) -> int:
    """``ScaledAddSupervisor`` and its siblings (``getScaledArithmeticSupervisorCycleEstimate``,
    PopLibs' default ``optimizeForSpeed=false``; ``operation`` a key of :data:`SCALED_VERTICES`):
    the supervisor's overheads, then the tile's ``n`` elements split between the workers in whole
    vectors, one pass of 3 cycles (4 with mixed types) per vector (float aX +- bY: 3, without the
    remainder test); half data with float B its own 5-cycle loop; integers 26 cycles per 3
    elements. PopLibs' workers skip the vectors left over after the even split (its
    ``remainingVectors < 0`` test), and so does this."""
    subtract = operation == "SUBTRACT"
    if not dataType.is_float:
        return 53 + 26 * (n // 3) + int(subtract) + 6 + 26 * (n % 3) + 8 + 6
    workers, width = target.getNumWorkerContexts(), target.getVectorWidth(dataType)
    vectors, remaining = divmod(n, width)
    per_worker, extra = divmod(vectors, workers)
    mixed = dataType == HALF and dataBType == FLOAT
    supervisor = 21 + SUPERVISOR_CYCLES + (13 if remaining else 7) + 12 + 6 + int(mixed and subtract)
    supervisor += {"AXPLUSBY": 12, "SUBTRACT": 7}.get(operation, 0)
    slowest = 0
    for wid in range(workers):
        if dataType == FLOAT and operation.startswith("AX"):
            cycles = 16 + (6 + 3 * (per_worker - 1) if per_worker else 0)
            if wid == extra:
                cycles += 1 + (5 if remaining else 0)
        elif mixed:
            count = per_worker + int(wid < extra)
            cycles = 16 + (9 + 5 * (count - 1) if count else 0) + 2
            if wid == extra:
                cycles += 1 + (2 + 5 * int(remaining >= 2) + 2 + 6 * (remaining % 2) if remaining else 0)
        else:
            loop = 3 if dataType == dataBType else 4
            cycles = 15 + (6 + loop * (per_worker - 1) if per_worker else 0) + 2
            if wid == extra:
                tail = 8 if dataType == FLOAT else 5 + (7 + 6 * int(remaining == 3) if remaining >= 2 else 0)
                cycles += 1 + (tail if remaining else 0)
        slowest = max(slowest, cycles + 1)
    return supervisor + slowest * workers


def scaledAddCost(dataType: Type, dataBType: Type, operation: str) -> MapCost:
    """The cost of a scaled add's vertex (``operation`` a key of :data:`SCALED_VERTICES`)."""
    return MapCost(f"{SCALED_VERTICES[operation]}<{dataType},{dataBType}>",
                   lambda rows, target: scaledAddCycles(dataType, dataBType, operation, sum(rows), target))


# ---- map: which PopLibs vertex an expression is -----------------------------------------------

def _walk(e: pe.Expr):
    yield e
    for c in e.children:
        yield from _walk(c)


def expressionCost(e: pe.Expr, types: Sequence[Type], scalars: frozenset[int], inPlace: bool) -> MapCost:
    """The PopLibs vertex a map of ``e`` runs as (placeholder ``_i`` of type ``types[i-1]``, those in
    ``scalars`` single elements, ``_1`` the output itself with ``inPlace``): one operation on
    placeholders is that operation's vertex, when PopLibs' tables have it for the type; a
    conversion of a placeholder is a cast; anything else the generated fused codelet."""
    leaves = [c.index for c in e.children if isinstance(c, pe.PlaceHolder)]
    simple = len(leaves) == len(e.children) > 0
    if isinstance(e, pe.Cast) and simple:
        src, dst = types[leaves[0] - 1], e.type
        return MapCost(f"Cast1D<{src},{dst}>", lambda rows, target: castCycles(src, dst, rows, target))
    if isinstance(e, pe.UnaryOp) and simple:
        t = types[leaves[0] - 1]
        op = e.op
        unary = op_cycles.UNARY_IN_PLACE if inPlace else op_cycles.UNARY
        if isinstance(op, pe.UnaryOpType) and t.name in unary.get(op.name, {}):
            return MapCost(f"UnaryOp1D{'InPlace' * inPlace}<{op.name},{t}>",
                           lambda rows, target: unaryOpCycles(op, t, inPlace, rows, target))
        if isinstance(op, pe.BinaryOpType):
            scalar = any(i in scalars for i in leaves)
            table = op_cycles.BROADCAST_IN_PLACE if inPlace else op_cycles.BROADCAST
            if not scalar:
                table = op_cycles.BINARY_IN_PLACE if inPlace else op_cycles.BINARY
            if t.name in table.get(op.name, {}):
                cost = broadcastScalarCycles if scalar else binaryOpCycles
                kind = "BroadcastScalar1D" if scalar else "BinaryOp1D"
                return MapCost(f"{kind}{'InPlace' * inPlace}<{op.name},{t}>",
                               lambda rows, target: cost(op, t, inPlace, rows, target))
        if op is pe.TernaryOpType.SELECT:
            return MapCost(f"Select<{t}>", selectCycles)
    num_ops = sum(isinstance(n, pe.UnaryOp) for n in _walk(e))
    used = {n.index for n in _walk(e) if isinstance(n, pe.PlaceHolder)}
    vector_inputs = sum(1 for i in used if i not in scalars or (inPlace and i == 1))
    data_type = types[0] if types[0] != BOOL else FLOAT
    return MapCost(f"Fused<{num_ops}x{vector_inputs}>",
                   lambda rows, target: fusedCycles(num_ops, vector_inputs, data_type, rows, target))

