"""Planning matrix products ahead of time: MatMulParams, the plan reports and the preplanners.

PopLibs' ``MatMulParams`` names one product (element types and operand shapes);
``preplanMatMuls`` and ``preplan`` (PopLibs' ConvPreplan.hpp, for convolutions and matMuls
together) put the plans of many products into a :class:`PlanningCache` before any graph is
built, and ``matMulReportPlan`` / ``matMulGroupedReportPlan`` write the plan a product would
use to a text stream. Everything here is planning on the host; no tensor is touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from poplar_py import Graph, Target, Type
from poplar_py.types import asType

from ..poputil import PoplibsArgumentError, PoplibsError
from .conv_params import ConvParams
from .convolution import matMulOptions
from .matmul import checkShapes, getMatMulPlan
from .plan import MatMulPlan, PlanningCache, planningCacheArgument

__all__ = ["ConvPlanParams", "MatMulParams", "MatMulPlanParams", "MatMulToConvOptions", "describePlan",
           "matMulGroupedReportPlan", "matMulReportPlan", "preplan", "preplanConvolutions", "preplanMatMuls"]


@dataclass(frozen=True)
class MatMulParams:
    """PopLibs' ``MatMulParams``: the element types and operand shapes of one (grouped) product.
    Ordered (``<``) and hashable, so a set of them can be preplanned."""

    inputType: Type
    outputType: Type
    aShape: tuple[int, ...]
    bShape: tuple[int, ...]

    def __post_init__(self) -> None:
        for name in ("inputType", "outputType"):
            try:
                object.__setattr__(self, name, asType(getattr(self, name)))
            except Exception:
                raise PoplibsArgumentError(f"MatMulParams: {name} must be a poplar element type, got "
                                           f"{getattr(self, name)!r:.40}") from None
        for name in ("aShape", "bShape"):
            value = getattr(self, name)
            try:
                shape = tuple(int(d) for d in value)
            except (TypeError, ValueError):
                raise PoplibsArgumentError(f"MatMulParams: {name} must be a list of ints, got "
                                           f"{value!r:.40}") from None
            object.__setattr__(self, name, shape)
        checkShapes(list(self.aShape), list(self.bShape))

    def _key(self) -> tuple:
        return (str(self.inputType), str(self.outputType), self.aShape, self.bShape)

    def __lt__(self, other: MatMulParams) -> bool:
        if not isinstance(other, MatMulParams):
            return NotImplemented
        return self._key() < other._key()


def _target(graph_or_target: Any, what: str) -> Any:
    target = graph_or_target.getTarget() if isinstance(graph_or_target, Graph) else graph_or_target
    if not hasattr(target, "getNumTiles"):
        raise PoplibsArgumentError(f"{what}: target must be a poplar Target (or Graph), got "
                                   f"{type(graph_or_target).__name__} {graph_or_target!r:.40}")
    return target


def _report(what: str, out: Any, graph: Graph, inputType: Any, outputType: Any, aShape: Any, bShape: Any,
            options: dict | None, cache: Any, rank: int) -> None:
    if not callable(getattr(out, "write", None)):
        raise PoplibsArgumentError(f"{what}: out must be a text stream (with write()), got "
                                   f"{type(out).__name__}")
    params = MatMulParams(inputType, outputType, aShape, bShape)
    if len(params.aShape) != rank:
        raise PoplibsError(f"{what}: aShape and bShape must be {rank}-D, got {list(params.aShape)} and "
                           f"{list(params.bShape)}")
    plan = getMatMulPlan(_target(graph, what), params.inputType, list(params.aShape), list(params.bShape),
                         params.outputType, options, planningCacheArgument(cache, what))
    out.write(describePlan(plan))


def describePlan(plan: MatMulPlan) -> str:
    """The text ``matMulReportPlan`` writes for ``plan``."""
    return (f"MatMul plan: {plan.groups} x [{plan.m}, {plan.k}] x [{plan.k}, {plan.n}]\n"
            f"  types: input {plan.inputType}, partials {plan.partialsType}, output {plan.outputType}\n"
            f"  split: M {plan.splitM}, N {plan.splitN}, K {plan.splitK} (blocks {plan.blockM} x "
            f"{plan.blockK} x {plan.blockN})\n"
            f"  tiles: {plan.tilesPerGroup} per group, {plan.tilesUsed} of {plan.numTiles} used\n"
            f"  estimated cycles: compute {plan.computeCycles}, exchange {plan.exchangeCycles}, "
            f"reduce {plan.reduceCycles}, total {plan.estimatedCycles}\n"
            f"  estimated memory: {plan.bytesPerTile} bytes per tile\n")


def matMulReportPlan(out: Any, graph: Graph, inputType: Any, outputType: Any, aShape: Any, bShape: Any,
                     options: dict | None = None, cache: PlanningCache | None = None) -> None:
    """Write to the text stream ``out`` the plan ``matMul`` uses for ``[m, k] x [k, n]``: its splits
    of M, N and K over the tiles and the cycle and memory estimates (taken from, or stored in,
    ``cache``)."""
    _report("matMulReportPlan", out, graph, inputType, outputType, aShape, bShape, options, cache, 2)


def matMulGroupedReportPlan(out: Any, graph: Graph, inputType: Any, outputType: Any, aShape: Any,
                            bShape: Any, options: dict | None = None,
                            cache: PlanningCache | None = None) -> None:
    """Write to ``out`` the plan ``matMulGrouped`` uses for ``[g, m, k] x [g, k, n]``."""
    _report("matMulGroupedReportPlan", out, graph, inputType, outputType, aShape, bShape, options, cache, 3)


def _entries(what: str, items: Any, kind: type) -> list[tuple[Any, Any, dict | None]]:
    """``(target, params, options)`` triples (PopLibs' ``MatMulPlanParams`` / ``ConvPlanParams``)."""
    if not isinstance(items, Iterable):
        raise PoplibsArgumentError(f"{what}: expected a collection of (target, params, options) tuples, got "
                                   f"{type(items).__name__}")
    entries = []
    for item in items:
        if not isinstance(item, tuple) or len(item) != 3 or not isinstance(item[1], kind):
            raise PoplibsArgumentError(f"{what}: each entry must be a (target, {kind.__name__}, options) "
                                       f"tuple, got {item!r:.60}")
        entries.append((_target(item[0], what), item[1], item[2]))
    return entries


def _required_cache(cache: Any, what: str) -> PlanningCache:
    cache = planningCacheArgument(cache, what)
    if cache is None:
        raise PoplibsArgumentError(f"{what}: cache must be a poplin.PlanningCache to hold the plans")
    return cache


def preplanMatMuls(matmuls: Iterable[tuple[Any, MatMulParams, dict | None]], cache: PlanningCache) -> None:
    """Plan every ``(target, MatMulParams, options)`` of ``matmuls`` into ``cache``, so the products
    given that cache later find their plans there."""
    cache = _required_cache(cache, "preplanMatMuls")
    for target, params, options in _entries("preplanMatMuls", matmuls, MatMulParams):
        getMatMulPlan(target, params.inputType, list(params.aShape), list(params.bShape), params.outputType,
                      options, cache)


#: PopLibs' tuple types naming one product or convolution to plan: (target, params, options)
MatMulPlanParams = tuple[Target, MatMulParams, "dict | None"]
ConvPlanParams = tuple[Target, ConvParams, "dict | None"]
#: PopLibs maps each matMul's options to its convolution's; the options here need no mapping
MatMulToConvOptions = dict


def preplanConvolutions(*args: Any) -> None:
    """Plan the convolutions ``(target, ConvParams, options)`` into ``cache``:
    ``preplanConvolutions([graph, ]convs, cache)`` (PopLibs' deprecated form of ``preplan``)."""
    if len(args) == 3 and isinstance(args[0], Graph):
        args = args[1:]
    if len(args) != 2:
        raise PoplibsArgumentError(f"preplanConvolutions: expected ([graph, ]convs, cache), got {len(args)} "
                                   "arguments")
    preplan(args[0], [], args[1])


def preplan(convs: Iterable[tuple[Any, ConvParams, dict | None]],
            matmuls: Iterable[tuple[Any, MatMulParams, dict | None]], cache: PlanningCache) -> None:
    """Plan the convolutions ``convs`` (``(target, ConvParams, options)``: the grouped product each
    lowers to) and the products ``matmuls`` into ``cache``."""
    cache = _required_cache(cache, "preplan")
    for target, params, options in _entries("preplan", convs, ConvParams):
        a_shape, b_shape = params.matMulShapes()
        getMatMulPlan(target, params.inputType, a_shape, b_shape, params.outputType,
                      matMulOptions(options, "preplan"), cache)
    preplanMatMuls(matmuls, cache)
