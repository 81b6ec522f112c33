"""poplin.PlanningCache (PopLibs' poplin::PlanningCache, also poplin.matmul.PlanningCache): the
plans of the matMul and convolution functions given it, one entry per distinct plan."""

from __future__ import annotations

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import FLOAT, HALF
from poplar_py import program as prog
from poplibs_py import poplin, popops
from poplibs_py.poplin.plan import planMatMul
from poplibs_py.poputil import PoplibsArgumentError


def _graph(device: poplar.Device | None = None) -> poplar.Graph:
    model = poplar.IPUModel()
    model.tilesPerIPU = 8
    graph = poplar.Graph(device or model.createDevice())
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    return graph


def test_same_class_under_both_names():
    assert poplin.matmul.PlanningCache is poplin.PlanningCache
    assert poplin.PlanningCache().size() == 0


def test_one_entry_per_distinct_plan():
    graph, seq, cache = _graph(), prog.Sequence(), poplin.PlanningCache()
    a = poplin.createMatMulInputLHS(graph, FLOAT, [4, 6], [6, 5], "a", {}, cache)
    assert cache.size() == 1
    b = poplin.createMatMulInputRHS(graph, FLOAT, [4, 6], [6, 5], "b", cache=cache)
    poplin.matMul(graph, a, b, seq, "ab", {}, cache)  # the same shapes, types and options: one plan
    assert cache.size() == 1
    poplin.matMul(graph, a, b, seq, FLOAT, "ab2", {"availableMemoryProportion": "0.3"}, cache)
    assert cache.size() == 2  # another option: another plan
    poplin.matMul(graph, b.transpose(), a.transpose(), seq, debugName="ba", cache=cache)
    assert cache.size() == 3
    poplin.matMul(graph, b.transpose(), a.transpose(), seq, "ba2", None, cache)
    assert cache.size() == 3


def test_cached_plans_are_the_planners_and_bypass_the_global_memo():
    graph, cache = _graph(), poplin.PlanningCache()
    before = planMatMul.cache_info()
    plan = poplin.getMatMulPlan(graph, HALF, [3, 40], [40, 7], FLOAT, None, cache)
    assert planMatMul.cache_info() == before  # computed into the given cache only
    assert plan == poplin.getMatMulPlan(graph, HALF, [3, 40], [40, 7], FLOAT)
    assert poplin.getMatMulPlan(graph, HALF, [3, 40], [40, 7], FLOAT, cache=cache) is plan
    assert cache.size() == 1


def test_convolution_passes_hold_their_plans():
    graph, seq, cache = _graph(), prog.Sequence(), poplin.PlanningCache()
    params = poplin.ConvParams(FLOAT, 1, [5, 5], [3, 3], 2, 4, 1)
    weights = poplin.createWeights(graph, params, "w", {}, cache)
    inputs = poplin.createInput(graph, params, "in", {}, cache)
    assert cache.size() == 1  # the forward product's plan (the input needs none)
    out = poplin.convolution(graph, inputs, weights, params, False, seq, "fwd", {}, cache)
    assert cache.size() == 1  # the same plan lays out the gathered patches and runs the product
    poplin.calculateWeightDeltas(graph, out, inputs, params, seq, "wu", {}, cache)
    size = cache.size()
    assert size == 2
    poplin.convolutionWeightUpdate(graph, out, weights, inputs, params, -0.1, seq, "wu2", {}, cache)
    assert cache.size() == size  # the weight update's product is the weight deltas' one


def test_results_with_a_cache():
    model = poplar.IPUModel()
    model.tilesPerIPU = 8
    device = model.createDevice()
    graph, seq, cache = _graph(device), prog.Sequence(), poplin.PlanningCache()
    a = poplin.createMatMulInputLHS(graph, FLOAT, [3, 5], [5, 2], "a", None, cache)
    b = poplin.createMatMulInputRHS(graph, FLOAT, [3, 5], [5, 2], "b", None, cache)
    c = poplin.matMul(graph, a, b, seq, "c", None, cache)
    graph.createHostWrite("a", a)
    graph.createHostWrite("b", b)
    graph.createHostRead("c", c)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    x, y = np.arange(15, dtype=np.float32).reshape(3, 5), np.arange(10, dtype=np.float32).reshape(5, 2)
    engine.writeTensor("a", x)
    engine.writeTensor("b", y)
    engine.run()
    np.testing.assert_allclose(engine.readTensor("c"), x @ y)


@pytest.mark.parametrize("call", [
    lambda g, s, t: poplin.matMul(g, t, t, s, "mm", None, "not a cache"),
    lambda g, s, t: poplin.matMul(g, t, t, s, cache={}),
    lambda g, s, t: poplin.createMatMulInputLHS(g, FLOAT, [2, 2], [2, 2], "a", None, 3),
    lambda g, s, t: poplin.getMatMulPlan(g, FLOAT, [2, 2], [2, 2], cache=object()),
    lambda g, s, t: poplin.createWeights(g, poplin.ConvParams(FLOAT, 1, [3, 3], [1, 1], 2, 2), "w", {}, "c"),
    lambda g, s, t: poplin.createBiases(g, t.reshape([1, 2, 2, 1]),
                                        poplin.ConvParams(FLOAT, 1, [2, 1], [1, 1], 2, 2), "b", {}, []),
])
def test_a_cache_argument_that_is_no_cache(call):
    graph = _graph()
    t = graph.addVariable(FLOAT, [2, 2], poplar.VariableMappingMethod.LINEAR)
    with pytest.raises(PoplibsArgumentError, match=r"cache must be a poplin\.PlanningCache"):
        call(graph, prog.Sequence(), t)
