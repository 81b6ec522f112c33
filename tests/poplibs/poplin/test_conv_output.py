"""poplin.createConvOutput and convolutionWithOutput against the numpy forward of
test_conv_backward; ConvParams' remaining getters, validate and hash_value; the convolution
preplanners and option check."""

import numpy as np
import pytest
from test_conv_backward import forward

import poplar_py as poplar
from poplibs_py import poplin, popops
from poplibs_py.poputil import PoplibsError


@pytest.fixture
def mode():
    """Native codelets only: the vertices are those test_convolution runs in both modes."""
    return "native"


PARAMS = [poplin.ConvParams(poplar.FLOAT, 2, [5, 4], [3, 2], 2, 3, paddingLower=1),
          poplin.ConvParams(poplar.FLOAT, 1, [4, 4], [2, 2], 1, 2, stride=2, outputPaddingLower=(1, 0),
                            outputPaddingUpper=(0, 2))]


def test_created_and_given_outputs(harness):
    h = harness(8)
    poplin.addCodelets(h.graph)
    popops.addCodelets(h.graph)
    rng = np.random.default_rng(6)
    outputs, expected = [], []
    for i, p in enumerate(PARAMS):
        x, w = (rng.standard_normal(s).astype(np.float32) for s in (p.inputShape(), p.weightsShape()))
        out = poplin.createConvOutput(h.graph, p, f"out{i}")
        assert out.shape() == p.outputShape() and len([m for m in h.graph.getTileMapping(out) if m]) > 1
        poplin.convolutionWithOutput(h.graph, h.tensor(x), h.tensor(w), out, p, False, h.seq, f"conv{i}",
                                     {"pass": "INFERENCE_FWD"})
        outputs.append(out)
        expected.append(forward(x, w, p))
    p = PARAMS[1]
    unmapped = h.graph.addVariable(poplar.FLOAT, p.outputShape(), "unmapped")
    x, w = (rng.standard_normal(s).astype(np.float32) for s in (p.inputShape(), p.weightsShape()))
    poplin.convolutionWithOutput(h.graph, h.tensor(x), h.tensor(w), unmapped, p, False, h.seq)
    for result, ref in zip(h.run(*outputs, unmapped), [*expected, forward(x, w, p)]):
        np.testing.assert_allclose(result, ref, rtol=1e-5, atol=1e-5)


def test_params_getters_and_planning():
    p = poplin.ConvParams(poplar.FLOAT, 3, [6, 5], [3, 2], 2, 4, inputTruncationLower=(1, 0),
                          inputTruncationUpper=(0, 2))
    assert (p.getBatchSize(), p.getInputFieldShape(), p.getKernelShape()) == (3, [6, 5], [3, 2])
    assert p.getInputSize(1) == 5
    assert (p.getTruncatedInputSize(0), p.getTruncatedInputSize(1), p.getTruncatedKernelSize(0)) == (5, 3, 3)
    p.validate()
    same = poplin.ConvParams(poplar.FLOAT, 3, [6, 5], [3, 2], 2, 4, inputTruncationLower=(1, 0),
                             inputTruncationUpper=(0, 2))
    assert poplin.hash_value(p) == poplin.hash_value(same)
    assert poplin.hash_value(p.inputTransform) == poplin.hash_value(same.inputTransform)
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    cache = poplin.PlanningCache()
    poplin.preplanConvolutions(graph, {(graph.getTarget(), p, None)}, cache)
    poplin.preplanConvolutions([(graph.getTarget(), PARAMS[0], {"pass": "TRAINING_FWD"})], cache.getImpl())
    assert cache.size() == 2
    poplin.convolutionValidateOptions({"pass": "TRAINING_BWD", "partialsType": "half"})
    with pytest.raises(PoplibsError, match="partialsType"):
        poplin.convolutionValidateOptions({"partialsType": "double"})
    with pytest.raises(PoplibsError, match="option pass='SIDEWAYS'"):
        poplin.convolutionValidateOptions({"pass": "SIDEWAYS"})
    with pytest.raises(PoplibsError, match="hash_value: expected a ConvParams"):
        poplin.hash_value(3)
    with pytest.raises(PoplibsError, match="preplanConvolutions: expected"):
        poplin.preplanConvolutions(cache)


def test_with_output_misuse():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    p = PARAMS[0]
    x, w = graph.addVariable(poplar.FLOAT, p.inputShape()), graph.addVariable(poplar.FLOAT, p.weightsShape())
    seq = poplar.program.Sequence()
    with pytest.raises(PoplibsError, match="convolutionWithOutput: out 'o' is float"):
        poplin.convolutionWithOutput(graph, x, w, graph.addVariable(poplar.FLOAT, [1], "o"), p, False, seq)
    with pytest.raises(PoplibsError, match="convolutionWithOutput: out"):
        poplin.convolutionWithOutput(graph, x, w, None, p, False, seq)
    with pytest.raises(PoplibsError, match="createConvOutput: params"):
        poplin.createConvOutput(graph, None)
