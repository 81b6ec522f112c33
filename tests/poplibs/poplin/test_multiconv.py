"""poplin.multiconv: a set of convolutions, forward, weight deltas and weight updates, against the
numpy reference of test_conv_backward; and its misuse."""

import numpy as np
import pytest
from test_conv_backward import forward, gradients

import poplar_py as poplar
from poplibs_py import poplin, popops
from poplibs_py.poplin import multiconv
from poplibs_py.poputil import PoplibsError


@pytest.fixture
def mode():
    """Native codelets only: the vertices are those test_conv_backward runs in both modes."""
    return "native"


PARAMS = [poplin.ConvParams(poplar.FLOAT, 1, [5, 5], [3, 3], 2, 3, paddingLower=1, paddingUpper=1),
          poplin.ConvParams(poplar.FLOAT, 2, [6, 4], [2, 2], 1, 2, numConvGroups=2, stride=2)]


def test_forward_weight_deltas_and_updates(harness):
    h = harness(8)
    poplin.addCodelets(h.graph)
    popops.addCodelets(h.graph)
    rng = np.random.default_rng(3)
    create = [multiconv.CreateTensorArgs(p, {}, f"c{i}") for i, p in enumerate(PARAMS)]
    options = {"planType": "parallel", "perConvReservedTiles": 2, "cycleBackOff": 0.2}
    data, args, wu, wu_scalar = [], [], [], []
    for i, p in enumerate(PARAMS):
        X = multiconv.createInput(h.graph, create, i, options)
        W = multiconv.createWeights(h.graph, create, i, options)
        assert X.shape() == p.inputShape() and W.shape() == p.weightsShape()
        x, w, dy = (rng.standard_normal(s).astype(np.float32)
                    for s in (p.inputShape(), p.weightsShape(), p.outputShape()))
        h.write(X, x), h.write(W, w)
        DY, W2 = h.tensor(dy), h.tensor(w)
        data.append((x, w, dy))
        args.append(multiconv.ConvolutionArgs(X, W, p, {"pass": "TRAINING_FWD"}))
        wu.append(multiconv.CalculateWeightDeltasArgs(DY, X, p))
        wu_scalar.append((DY, W2, X, p))
    Y = multiconv.convolution(h.graph, args, False, h.seq, "fwd", options)
    DW = multiconv.calculateWeightDeltas(h.graph, wu, h.seq, "wd")
    scale = h.tensor(np.array([-0.5], np.float32))
    updates = [multiconv.ConvWeightUpdateArgsScalar(dy_, w2, x_, 0.25, p) for dy_, w2, x_, p in wu_scalar]
    multiconv.convolutionWeightUpdate(h.graph, updates[:1], h.seq, "wu")
    dy_, w2, x_, p = wu_scalar[1]
    multiconv.convolutionWeightUpdate(h.graph, [multiconv.ConvWeightUpdateArgs(dy_, w2, x_, scale, p)], h.seq)
    results = h.run(*Y, *DW, *(w2 for _, w2, _, _ in wu_scalar))
    for i, (p, (x, w, dy)) in enumerate(zip(PARAMS, data)):
        ref_dw = gradients(x, w, dy, p)[1]
        np.testing.assert_allclose(results[i], forward(x, w, p), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(results[2 + i], ref_dw, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(results[4 + i], w + (0.25, -0.5)[i] * ref_dw, rtol=1e-5, atol=1e-5)


def test_transposed_weights():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    p = PARAMS[0]
    bwd = poplin.getGradientParams(p)
    W = graph.addVariable(poplar.FLOAT, p.weightsShape(), "w")
    WT = graph.addVariable(poplar.FLOAT, bwd.weightsShape(), "wt")
    X = graph.addVariable(poplar.FLOAT, bwd.inputShape(), "x")
    seq = poplar.program.Sequence()
    multiconv.weightsTransposeChansFlipXY(graph, [multiconv.ConvolutionArgs(X, WT, bwd)], [W], seq, {}, "t")
    assert graph.getTileMapping(WT)  # mapped by the copy's target
    with pytest.raises(PoplibsError, match="weightsIn must be a list of 1"):
        multiconv.weightsTransposeChansFlipXY(graph, [multiconv.ConvolutionArgs(X, WT, bwd)], [], seq)


def test_misuse():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    create = [multiconv.CreateTensorArgs(PARAMS[0])]
    with pytest.raises(PoplibsError, match="weightsIndex 1 is not an index"):
        multiconv.createWeights(graph, create, 1)
    with pytest.raises(PoplibsError, match=r"args\[0\] must be a multiconv.CreateTensorArgs"):
        multiconv.createInput(graph, [PARAMS[0]], 0)
    with pytest.raises(PoplibsError, match="planType='fast'"):
        multiconv.createInput(graph, create, 0, {"planType": "fast"})
    with pytest.raises(PoplibsError, match="cycleBackOff"):
        multiconv.createInput(graph, create, 0, {"cycleBackOff": 2})
    with pytest.raises(PoplibsError, match="unrecognised option 'bogus'"):
        multiconv.createInput(graph, create, 0, {"bogus": 1})
    with pytest.raises(PoplibsError, match="unrecognised convolution option"):
        multiconv.createWeights(graph, [multiconv.CreateTensorArgs(PARAMS[0], {"bogus": 1})], 0)
