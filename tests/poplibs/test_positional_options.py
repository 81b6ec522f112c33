"""PopLibs' trailing ``debugContext, options`` (and ``cache``) work in their C++ positions.

For every function taking them, an options dict given positionally is checked exactly as by
keyword (the same error for a bad one), a valid positional debug name and options are
accepted, and a positional argument past the last parameter raises instead of being dropped.
Only graphs are built here (nothing runs), so the whole table takes a few seconds.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import poplar_py as poplar
from poplar_py import FLOAT, HALF, UNSIGNED_INT
from poplar_py import program as prog
from poplibs_py import poplin, popnn, popops
from poplibs_py.popnn import bn, gn, gru, ln, lstm, pooling
from poplibs_py.popops import expr as pe

BOGUS = {"bogusOption": "1"}
DEBUG = {"debugName", "debugContext", "name"}  # the debug name's keyword in each function


class Graph:
    """A fresh graph with the popops, poplin and popnn codelets, and small tensors on it."""

    def __init__(self) -> None:
        model = poplar.IPUModel()
        model.tilesPerIPU = 8
        self.graph = poplar.Graph(model.createDevice())
        for lib in (popops, poplin, popnn):
            lib.addCodelets(self.graph)
        self.seq = prog.Sequence()

    def var(self, shape: list[int], type_: Any = FLOAT) -> poplar.Tensor:
        return self.graph.addVariable(type_, shape, poplar.VariableMappingMethod.LINEAR)


@dataclass
class Case:
    """``build(g)`` gives the function and its arguments before the trailing ones; ``trailing``
    names those in C++ order with their Python keywords; ``values`` are valid positional values
    for the trailing parameters other than the debug name and options."""

    name: str
    build: Callable[[Graph], tuple[Callable, list]]
    trailing: tuple[str, ...] = ("debugName", "options")
    bogus: Any = field(default_factory=lambda: BOGUS)
    valid: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)

    def positional(self, g: Graph, options: Any, extra: tuple = ()) -> Any:
        fn, args = self.build(g)
        values = {**self.values, self._options(): options}
        return fn(*args, *(values.get(p, "named" if p in DEBUG else None) for p in self.trailing), *extra)

    def keyword(self, g: Graph, options: Any) -> Any:
        fn, args = self.build(g)
        debug = next(p for p in self.trailing if p in DEBUG)
        return fn(*args, **{debug: "named", self._options(): options})

    def _options(self) -> str:
        return next(p for p in self.trailing if p in ("options", "optionFlags"))


def conv_params() -> poplin.ConvParams:
    return poplin.ConvParams(FLOAT, 1, [4, 4], [3, 3], 2, 2, 1)


POOL = pooling.PoolParams(pooling.PoolingType.MAX, [4, 4], [2, 2], [2, 2], [0, 0], [0, 0], 2, 1)


def _norm_acts(g: Graph) -> tuple:
    """Whitened activations, their gradient, invStdDev and gamma of a batch norm."""
    return g.var([2, 4, 3]), g.var([2, 4, 3]), g.var([4]), g.var([4])


def _gn_stats(g: Graph) -> tuple:
    return g.var([4]), g.var([4])  # [batch * numGroups] with 2 groups


def _rnn_params(module: Any) -> Any:
    return (lstm.LstmParams if module is lstm else gru.GruParams)(FLOAT, 2, 2, [3, 4])


def _lstm(g: Graph, module: Any) -> tuple:
    params = _rnn_params(module)
    weights = module.createWeights(g.graph, params, "w")
    state = module.createInitialState(g.graph, params, "s")
    inputs = module.createInput(g.graph, params, "in")
    return params, weights, state, inputs


def _lstm_bwd(g: Graph, module: Any, with_wu: bool) -> tuple[Callable, list]:
    params, weights, state, inputs = _lstm(g, module)
    inter: list = []
    fwd = module.lstmFwd if module is lstm else module.gruFwd
    out = fwd(g.graph, params, state, inputs, weights, inter, g.seq)
    out = out[0] if module is lstm else out
    grad = g.var(out.shape())
    if module is lstm:
        head = [g.graph, params, g.seq, state, inter[0], weights, inputs, out, grad, None, None]
        return (lstm.lstmBwdWithWU, [*head, []]) if with_wu else (lstm.lstmBwd, [*head, None])
    head = [g.graph, params, g.seq, state, inter[0], weights, inputs, out, grad, None]
    return (gru.gruBwdWithWU, [*head, []]) if with_wu else (gru.gruBwd, [*head, None])


MATMUL = ("debugName", "options", "cache")
CASES = [
    # popops
    Case("map", lambda g: (popops.map, [g.graph, pe._1 + pe._2, [g.var([4]), g.var([4])], g.seq])),
    Case("mapInPlace", lambda g: (popops.mapInPlace, [g.graph, pe._1 + pe._2, [g.var([4]), g.var([4])],
                                                      g.seq])),
    Case("mapWithOutput", lambda g: (popops.mapWithOutput, [g.graph, pe._1 + pe._2, [g.var([4]), g.var([4])],
                                                            g.var([4]), g.seq])),
    Case("scaledAddTo", lambda g: (popops.scaledAddTo, [g.graph, g.var([4]), g.var([4]), 2.0, g.seq])),
    Case("scaledAddTo/scaleA", lambda g: (popops.scaledAddTo, [g.graph, g.var([4]), 0.5, g.var([4]), 2.0,
                                                               g.seq])),
    Case("scaledAddTo/specialisation", lambda g: (popops.scaledAddTo, [
        g.graph, g.var([4]), 0.5, g.var([4]), 2.0, g.seq,
        popops.ScaledAddSpecialisation.X_MINUS_AX_PLUS_BY])),
    Case("scaledSubtractFrom", lambda g: (popops.scaledSubtractFrom, [g.graph, g.var([4]), g.var([4]), 2.0,
                                                                      g.seq])),
    Case("dynamicSlice", lambda g: (popops.dynamicSlice, [g.graph, g.var([4, 3]), g.var([1], UNSIGNED_INT),
                                                          [0], [1], g.seq])),
    Case("dynamicUpdate", lambda g: (popops.dynamicUpdate, [g.graph, g.var([4, 3]), g.var([1, 3]),
                                                            g.var([1], UNSIGNED_INT), [0], [1], g.seq])),
    Case("multiSlice", lambda g: (popops.multiSlice, [g.graph, g.var([4, 3]), g.var([2, 1], UNSIGNED_INT),
                                                      [0], [1], g.seq]),
         trailing=("plan", "options", "debugName"), values={"plan": popops.SlicePlan()}),
    Case("multiUpdate", lambda g: (popops.multiUpdate, [g.graph, g.var([4, 3]), g.var([2, 1, 3]),
                                                        g.var([2, 1], UNSIGNED_INT), [0], [1], g.seq]),
         trailing=("plan", "options", "debugName"), values={"plan": popops.SlicePlan()}),
    Case("multiUpdateAdd", lambda g: (popops.multiUpdateAdd, [
        g.graph, g.var([4, 3]), g.var([2, 1, 3]), g.var([2, 1], UNSIGNED_INT), 1.0, [0], [1], g.seq]),
         trailing=("plan", "options", "debugName"), values={"plan": popops.SlicePlan()}),
    Case("createSliceableTensor", lambda g: (popops.createSliceableTensor,
                                             [g.graph, FLOAT, [4, 3], [0], [1]]),
         trailing=("plan", "options", "debugContext"), values={"plan": popops.SlicePlan()}),
    Case("gather", lambda g: (popops.gather, [g.graph, g.var([4, 3]), g.var([2], UNSIGNED_INT), 0, g.seq,
                                              popops.GatherParams()]),
         trailing=("debugContext", "optionFlags")),
    Case("gather/xla", lambda g: (popops.gather, [g.graph, g.var([4, 3]), g.var([2, 1], UNSIGNED_INT), 1, [1],
                                                  [1, 3], [0], [0], g.seq]),
         trailing=("debugContext", "optionFlags")),
    Case("scatter", lambda g: (popops.scatter, [g.graph, g.var([4, 3]), g.var([2, 1], UNSIGNED_INT),
                                                g.var([2, 3]), 1, [1], [0], [0], g.seq]),
         trailing=("debugContext", "optionFlags")),
    # poplin
    Case("matMul", lambda g: (poplin.matMul, [g.graph, g.var([2, 3]), g.var([3, 4]), g.seq]), MATMUL),
    Case("matMul/outputType", lambda g: (poplin.matMul, [g.graph, g.var([2, 3], HALF), g.var([3, 4], HALF),
                                                         g.seq, FLOAT]), MATMUL),
    Case("matMulGrouped", lambda g: (poplin.matMulGrouped, [g.graph, g.var([2, 2, 3]), g.var([2, 3, 4]),
                                                            g.seq]), MATMUL),
    Case("matMulWithOutput", lambda g: (poplin.matMulWithOutput, [g.graph, g.var([2, 3]), g.var([3, 4]),
                                                                  g.var([2, 4]), g.seq]), MATMUL),
    Case("matMulGroupedWithOutput", lambda g: (poplin.matMulGroupedWithOutput, [
        g.graph, g.var([2, 2, 3]), g.var([2, 3, 4]), g.var([2, 2, 4]), g.seq]), MATMUL),
    Case("matMulAcc", lambda g: (poplin.matMulAcc, [g.graph, g.var([2, 4]), 0.5, g.var([2, 3]), g.var([3, 4]),
                                                    g.seq]), MATMUL),
    Case("matMulGroupedAcc", lambda g: (poplin.matMulGroupedAcc, [g.graph, g.var([2, 2, 4]), 0.5,
                                                                  g.var([2, 2, 3]), g.var([2, 3, 4]), g.seq]),
         MATMUL),
    Case("createMatMulInputLHS", lambda g: (poplin.createMatMulInputLHS,
                                            [g.graph, HALF, HALF, [2, 3], [3, 4]]),
         MATMUL),
    Case("createMatMulInputRHS", lambda g: (poplin.createMatMulInputRHS, [g.graph, FLOAT, [2, 3], [3, 4]]),
         MATMUL),
    Case("convolution", lambda g: (poplin.convolution, [g.graph, g.var([1, 2, 4, 4]), g.var([1, 2, 2, 3, 3]),
                                                        conv_params(), False, g.seq]), MATMUL),
    Case("createWeights", lambda g: (poplin.createWeights, [g.graph, conv_params()]),
         ("name", "options", "cache")),
    Case("createInput", lambda g: (poplin.createInput, [g.graph, conv_params()]),
         ("name", "options", "cache")),
    Case("createBiases", lambda g: (poplin.createBiases, [g.graph, g.var([1, 2, 4, 4]), conv_params()]),
         ("name", "options", "cache")),
    Case("calculateWeightDeltas", lambda g: (poplin.calculateWeightDeltas, [
        g.graph, g.var([1, 2, 2, 2]), g.var([1, 2, 4, 4]), conv_params(), g.seq]),
         ("debugContext", "options", "cache")),
    Case("convolutionWeightUpdate", lambda g: (poplin.convolutionWeightUpdate, [
        g.graph, g.var([1, 2, 2, 2]), g.var([1, 2, 2, 3, 3]), g.var([1, 2, 4, 4]), conv_params(), 0.1,
        g.seq]),
         ("debugContext", "options", "cache")),
    Case("QRFactorization", lambda g: (poplin.experimental.QRFactorization, [g.graph, g.var([3, 2]),
                                                                             g.var([3, 3]), g.seq]),
         ("debugContext", "options"), bogus={"rowsPerIteration": "many"}, valid={"rowsPerIteration": "2"}),
    # popnn
    Case("pool", lambda g: (popnn.pooling.pool, [g.graph, POOL, g.var([1, 2, 4, 4]), g.seq])),
    Case("poolInputGradient", lambda g: (popnn.pooling.poolInputGradient, [
        g.graph, POOL, g.var([1, 2, 4, 4]), g.var([1, 2, 2, 2]), g.var([1, 2, 2, 2]), False, g.seq])),
    Case("batchNormStatistics", lambda g: (bn.batchNormStatistics, [g.graph, g.var([2, 4, 3]), 1e-5, g.seq,
                                                                     False, False, FLOAT]), bogus="notADict"),
    Case("batchNormWhiten", lambda g: (bn.batchNormWhiten, [g.graph, g.var([2, 4, 3]), g.var([4]),
                                                             g.var([4]), g.seq]), bogus="notADict"),
    Case("batchNormalise", lambda g: (bn.batchNormalise, [g.graph, g.var([2, 4, 3]), g.var([4]), g.var([4]),
                                                           g.var([4]), g.var([4]), g.seq]), bogus="notADict"),
    Case("batchNormParamGradients", lambda g: (bn.batchNormParamGradients, [
        g.graph, g.var([2, 4, 3]), g.var([2, 4, 3]), g.seq, FLOAT]), bogus="notADict"),
    Case("batchNormGradients", lambda g: (bn.batchNormGradients, [
        g.graph, *_norm_acts(g), g.seq, FLOAT]), bogus="notADict"),
    Case("batchNormParamUpdate", lambda g: (bn.batchNormParamUpdate, [
        g.graph, g.var([4]), g.var([4]), 0.1, g.var([4]), g.var([4]), g.seq]), bogus="notADict"),
    Case("groupNormStatistics", lambda g: (gn.groupNormStatistics, [g.graph, g.var([2, 4, 3]), 1e-5, g.seq, 2,
                                                                     False, False, FLOAT])),
    Case("groupNormWhiten", lambda g: (gn.groupNormWhiten, [g.graph, g.var([2, 4, 3]), *_gn_stats(g),
                                                             g.seq])),
    Case("groupNormalise", lambda g: (gn.groupNormalise, [g.graph, g.var([2, 4, 3]), g.var([4]), g.var([4]),
                                                           *_gn_stats(g), g.seq])),
    Case("groupNormParamGradients", lambda g: (gn.groupNormParamGradients, [
        g.graph, g.var([2, 4, 3]), g.var([2, 4, 3]), g.seq, FLOAT])),
    Case("groupNormGradients", lambda g: (gn.groupNormGradients, [
        g.graph, g.var([2, 4, 3]), g.var([2, 4, 3]), g.var([4]), g.var([4]), g.seq, FLOAT])),
    Case("groupNormParamUpdate", lambda g: (gn.groupNormParamUpdate, [
        g.graph, g.var([4]), g.var([4]), 0.1, g.var([4]), g.var([4]), g.seq])),
    Case("layerNormStatistics", lambda g: (ln.layerNormStatistics, [g.graph, g.var([2, 4, 3]), 1e-5, g.seq,
                                                                     False, False, FLOAT])),
    Case("layerNormWhiten", lambda g: (ln.layerNormWhiten, [g.graph, g.var([2, 4, 3]), g.var([2]), g.var([2]),
                                                             g.seq])),
    Case("layerNormalise", lambda g: (ln.layerNormalise, [g.graph, g.var([2, 4, 3]), g.var([4]), g.var([4]),
                                                           g.var([2]), g.var([2]), g.seq])),
    Case("layerNormParamGradients", lambda g: (ln.layerNormParamGradients, [
        g.graph, g.var([2, 4, 3]), g.var([2, 4, 3]), g.seq, FLOAT])),
    Case("layerNormGradients", lambda g: (ln.layerNormGradients, [
        g.graph, g.var([2, 4, 3]), g.var([2, 4, 3]), g.var([2]), g.var([4]), g.seq, FLOAT])),
    Case("layerNormParamUpdate", lambda g: (ln.layerNormParamUpdate, [
        g.graph, g.var([4]), g.var([4]), 0.1, g.var([4]), g.var([4]), g.seq])),
]
RNN = ("debugContext", "options", "planningCache")
for module, prefix in ((lstm, "lstm"), (gru, "gru")):
    CASES += [
        Case(f"{prefix}.createInput", lambda g, m=module: (m.createInput, [g.graph, _rnn_params(m)]), RNN),
        Case(f"{prefix}.createWeights", lambda g, m=module: (m.createWeights, [g.graph, _rnn_params(m)]),
             RNN),
        Case(f"{prefix}.createInitialState", lambda g, m=module: (m.createInitialState,
                                                                  [g.graph, _rnn_params(m)]), RNN),
        Case(f"{prefix}Fwd", lambda g, m=module: (lambda p, w, s, i: (
            m.lstmFwd if m is lstm else m.gruFwd, [g.graph, p, s, i, w, None, g.seq]))(*_lstm(g, m)), RNN),
        Case(f"{prefix}Bwd", lambda g, m=module: _lstm_bwd(g, m, False), RNN),
        Case(f"{prefix}BwdWithWU", lambda g, m=module: _lstm_bwd(g, m, True), RNN),
    ]


def _error(call: Callable[[], Any]) -> tuple[type, str]:
    with pytest.raises(poplar.PoplarError) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_options_in_cxx_position(case: Case):
    positional = _error(lambda: case.positional(Graph(), case.bogus))
    assert positional == _error(lambda: case.keyword(Graph(), case.bogus))
    case.positional(Graph(), case.valid)  # a positional debug name and valid options are accepted
    with pytest.raises((poplar.PoplarError, TypeError)):  # one positional argument too many
        case.positional(Graph(), case.valid, extra=("surplus",))


ELEMENTWISE = [name for name in popops.elementwise.__all__
               if name not in ("createOutputForElementWiseOp", "map", "mapInPlace", "mapWithOutput")]


def _elementwise_args(g: Graph, name: str) -> list:
    fn = getattr(popops, name)
    operands = [p for p in inspect.signature(fn).parameters if p in ("a", "b", "c", "out")]
    types = {"select": [FLOAT, FLOAT, poplar.BOOL], "selectInPlace": [FLOAT, FLOAT, poplar.BOOL],
             "selectWithOutput": [FLOAT, FLOAT, poplar.BOOL, FLOAT]}.get(name, [])
    return [g.graph, *(g.var([4], types[i] if types else FLOAT) for i in range(len(operands))), g.seq]


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_options_in_cxx_position(name: str):
    fn = getattr(popops, name)
    g = Graph()
    args = _elementwise_args(g, name)
    positional = _error(lambda: fn(*args, "named", BOGUS))
    assert positional == _error(lambda: fn(*args, options=BOGUS))
    assert f"{name}: unrecognised option 'bogusOption'" in positional[1]
    with pytest.raises(poplar.PoplarError, match="too many"):
        fn(*args, "named", {}, "surplus")


@pytest.mark.parametrize("name", ["add", "addInPlace", "negWithOutput", "select"])
def test_elementwise_valid_positional_options(name: str):
    g = Graph()
    getattr(popops, name)(*_elementwise_args(g, name), "named", {"enableGenerateCodelet": "true"})


def test_the_issue_example():
    g = Graph()
    with pytest.raises(poplar.PoplarError, match="Unrecognised matmul option 'bogusOption'"):
        poplin.createMatMulInputLHS(g.graph, HALF, HALF, [2, 3], [3, 4], "name", BOGUS)
    t = poplin.createMatMulInputLHS(g.graph, HALF, HALF, [2, 3], [3, 4], "name", {"partialsType": "half"})
    assert t.shape() == [2, 3] and t.name.startswith("name")
