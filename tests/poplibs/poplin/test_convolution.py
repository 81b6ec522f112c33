"""poplin.convolution against a numpy reference (einsum per kernel position on the padded input)."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poputil import PoplibsError


def reference(x: np.ndarray, w: np.ndarray, p: poplin.ConvParams) -> np.ndarray:
    G, Co, Ci, KH, KW = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p.paddingLower[0], p.paddingUpper[0]),
                                       (p.paddingLower[1], p.paddingUpper[1])))
    (oh, ow), (sh, sw), (dh, dw) = p.getOutputFieldShape(), p.stride, p.dilation
    out = np.zeros((x.shape[0], G * Co, oh, ow))
    for g in range(G):
        for kh in range(KH):
            for kw in range(KW):
                win = xp[:, g * Ci:(g + 1) * Ci, kh * dh:kh * dh + (oh - 1) * sh + 1:sh,
                         kw * dw:kw * dw + (ow - 1) * sw + 1:sw]
                out[:, g * Co:(g + 1) * Co] += np.einsum("bchw,oc->bohw", win, w[g, :, :, kh, kw])
    return out


CASES = {
    "1x1": dict(batchSize=1, inputFieldShape=(4, 5), kernelShape=(1, 1), inputChannelsPerConvGroup=3,
                outputChannelsPerConvGroup=2),
    "3x3 pad": dict(batchSize=2, inputFieldShape=(5, 5), kernelShape=(3, 3), inputChannelsPerConvGroup=2,
                    outputChannelsPerConvGroup=3, paddingLower=1, paddingUpper=1),
    "stride, dilation, groups, odd": dict(batchSize=2, inputFieldShape=(7, 6), kernelShape=(3, 2),
                                          inputChannelsPerConvGroup=3, outputChannelsPerConvGroup=4,
                                          numConvGroups=2, stride=(2, 1), paddingLower=(1, 0),
                                          paddingUpper=(2, 1), dilation=(1, 2)),
}


@pytest.mark.parametrize("case", CASES)
def test_convolution_matches_numpy(harness, case):
    h = harness(16)
    poplin.addCodelets(h.graph)
    p = poplin.ConvParams(poplar.FLOAT, **CASES[case])
    rng = np.random.default_rng(1)
    x = rng.standard_normal(p.inputShape()).astype(np.float32)
    w = rng.standard_normal(p.weightsShape()).astype(np.float32)
    Y = poplin.convolution(h.graph, h.tensor(x), h.tensor(w), p, False, h.seq, "conv")
    assert Y.shape() == p.outputShape()
    (y,) = h.run(Y)
    np.testing.assert_allclose(y, reference(x, w, p), rtol=1e-5, atol=1e-5)


def test_created_tensors_and_transposed_flipped_weights(harness):
    h = harness(8)
    poplin.addCodelets(h.graph)
    p = poplin.ConvParams(poplar.FLOAT, 1, (5, 4), (2, 3), 3, 2, paddingLower=(0, 1), paddingUpper=(1, 1))
    X, W = poplin.createInput(h.graph, p, "x"), poplin.createWeights(h.graph, p, "w")
    assert X.shape() == [1, 3, 5, 4] and W.shape() == [1, 2, 3, 2, 3]
    rng = np.random.default_rng(2)
    x = rng.standard_normal(X.shape()).astype(np.float32)
    w = rng.standard_normal(W.shape()).astype(np.float32)
    for name, t, array in (("x", X, x), ("w", W, w)):
        h.write(t, array, name)
    fwd_w = w.transpose(0, 2, 1, 3, 4)[:, :, :, ::-1, ::-1].copy()  # [G, Ci, Co, kH, kW] of a forward pass
    Wf = h.tensor(fwd_w)
    Y = poplin.convolution(h.graph, X, W, p, False, h.seq)
    Yf = poplin.convolution(h.graph, X, Wf, p, True, h.seq)
    y, yf = h.run(Y, Yf)
    np.testing.assert_allclose(y, reference(x, w, p), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(yf, y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kwargs,message", [
    (dict(stride=0), "stride"),
    (dict(kernelShape=(9, 1)), "larger than the padded input"),
    (dict(paddingLower=-1), "negative"),
    (dict(inputChannelsPerConvGroup=0), "at least 1"),
    (dict(dilation=(1, 2, 3)), "2 entries"),
])
def test_bad_params(kwargs, message):
    args = dict(inputType=poplar.FLOAT, batchSize=1, inputFieldShape=(4, 4), kernelShape=(3, 3),
                inputChannelsPerConvGroup=2, outputChannelsPerConvGroup=2)
    with pytest.raises(PoplibsError, match=message):
        poplin.ConvParams(**{**args, **kwargs})


def test_bad_operands():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    p = poplin.ConvParams(poplar.FLOAT, 1, (4, 4), (3, 3), 2, 2)
    seq = poplar.program.Sequence()
    x, w = graph.addVariable(poplar.FLOAT, [1, 3, 4, 4]), graph.addVariable(poplar.FLOAT, p.weightsShape())
    with pytest.raises(PoplibsError, match="input"):
        poplin.convolution(graph, x, w, p, False, seq)
    x = graph.addVariable(poplar.HALF, p.inputShape())
    with pytest.raises(PoplibsError, match="half"):
        poplin.convolution(graph, x, w, p, False, seq)
    assert p.getOutputFieldShape() == [2, 2] and p.getNumOutputChans() == 2
