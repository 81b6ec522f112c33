"""poplin's convolution training passes against numpy: the input gradient (``convolution`` with
``getGradientParams`` and transposed, flipped weights), ``calculateWeightDeltas``,
``convolutionWeightUpdate``, ``weightsTransposeChansFlipXY``, biases.

The numpy reference runs the forward in float64 with every transform of ConvParams; its
gradients are the adjoint of each step, checked against central finite differences of that
forward, and the device's gradients against both.
"""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin, popops
from poplibs_py.poputil import PoplibsError

# ---- numpy reference (float64) ------------------------------------------------------------------


def _transform_input(x, p):
    for d in range(2):
        ax = 2 + d
        x = np.moveaxis(x, ax, -1)
        x = x[..., p.inputTruncationLower[d]:x.shape[-1] - p.inputTruncationUpper[d]]
        dil = np.zeros(x.shape[:-1] + ((x.shape[-1] - 1) * p.inputDilation[d] + 1,))
        dil[..., ::p.inputDilation[d]] = x
        x = np.pad(dil, [(0, 0)] * (x.ndim - 1) + [(p.paddingLower[d], p.paddingUpper[d])])
        x = np.moveaxis(x, -1, ax)
    return x


def _transform_input_adjoint(g, p):
    for d in range(2):
        ax = 2 + d
        g = np.moveaxis(g, ax, -1)
        g = g[..., p.paddingLower[d]:g.shape[-1] - p.paddingUpper[d]][..., ::p.inputDilation[d]]
        g = np.pad(g, [(0, 0)] * (g.ndim - 1) + [(p.inputTruncationLower[d], p.inputTruncationUpper[d])])
        g = np.moveaxis(g, -1, ax)
    return g


def _conv_size(p, d):
    return p.getUntransformedOutputSize(d)


def _output_select(p):
    """Index arrays of the conv positions each output takes (after truncation and stride)."""
    return [np.arange(p.outputTruncationLower[d], _conv_size(p, d) - p.outputTruncationUpper[d], p.stride[d])
            for d in range(2)]


def forward(x, w, p):
    G, Co, Ci, KH, KW = w.shape
    xp = _transform_input(x.astype(np.float64), p)
    ch, cw = _conv_size(p, 0), _conv_size(p, 1)
    (dh, dw) = p.dilation
    conv = np.zeros((x.shape[0], G * Co, ch, cw))
    for g in range(G):
        for kh in range(KH):
            for kw in range(KW):
                win = xp[:, g * Ci:(g + 1) * Ci, kh * dh:kh * dh + ch, kw * dw:kw * dw + cw]
                conv[:, g * Co:(g + 1) * Co] += np.einsum("bchw,oc->bohw", win, w[g, :, :, kh, kw])
    rh, rw = _output_select(p)
    out = conv[:, :, rh][:, :, :, rw]
    return np.pad(out, [(0, 0), (0, 0), (p.outputPaddingLower[0], p.outputPaddingUpper[0]),
                        (p.outputPaddingLower[1], p.outputPaddingUpper[1])])


def _conv_grad(dy, p):
    """The gradient of the valid cross-correlation's output from the output's gradient ``dy``."""
    ph, pw = p.outputPaddingLower
    rh, rw = _output_select(p)
    inner = dy[:, :, ph:ph + len(rh), pw:pw + len(rw)]
    dconv = np.zeros(dy.shape[:2] + (_conv_size(p, 0), _conv_size(p, 1)))
    dconv[:, :, rh[:, None], rw[None, :]] = inner
    return dconv


def gradients(x, w, dy, p):
    """(dL/dx, dL/dw) for L = sum(forward(x, w) * dy)."""
    G, Co, Ci, KH, KW = w.shape
    xp = _transform_input(x.astype(np.float64), p)
    dconv = _conv_grad(dy.astype(np.float64), p)
    ch, cw = dconv.shape[2:]
    (dh, dw) = p.dilation
    dxp, dwt = np.zeros_like(xp), np.zeros(w.shape)
    for g in range(G):
        for kh in range(KH):
            for kw in range(KW):
                dc = dconv[:, g * Co:(g + 1) * Co]
                win = (slice(None), slice(g * Ci, (g + 1) * Ci), slice(kh * dh, kh * dh + ch),
                       slice(kw * dw, kw * dw + cw))
                dwt[g, :, :, kh, kw] = np.einsum("bohw,bchw->oc", dc, xp[win])
                dxp[win] += np.einsum("bohw,oc->bchw", dc, w[g, :, :, kh, kw])
    return _transform_input_adjoint(dxp, p), dwt


def directional_fd(f, a, v, eps=1e-4):
    return (f(a + eps * v) - f(a - eps * v)) / (2 * eps)


CASES = {
    "3x3 pad 1": dict(batchSize=2, inputFieldShape=(5, 5), kernelShape=(3, 3), inputChannelsPerConvGroup=2,
                      outputChannelsPerConvGroup=3, paddingLower=1, paddingUpper=1),
    "stride 2, rows left over": dict(batchSize=2, inputFieldShape=(7, 6), kernelShape=(3, 3),
                                     inputChannelsPerConvGroup=2, outputChannelsPerConvGroup=2, stride=2),
    "stride, pad, dilation, groups": dict(batchSize=2, inputFieldShape=(7, 6), kernelShape=(3, 2),
                                          inputChannelsPerConvGroup=3, outputChannelsPerConvGroup=2,
                                          numConvGroups=2, stride=(2, 1), paddingLower=(1, 0),
                                          paddingUpper=(2, 1), dilation=(1, 2)),
    "1x1 stride 3, 3 groups": dict(batchSize=1, inputFieldShape=(5, 7), kernelShape=(1, 1),
                                   inputChannelsPerConvGroup=1, outputChannelsPerConvGroup=2, numConvGroups=3,
                                   stride=3),
    "all transforms": dict(batchSize=1, inputFieldShape=(6, 7), kernelShape=(2, 3),
                           inputChannelsPerConvGroup=2, outputChannelsPerConvGroup=2, stride=(2, 1),
                           paddingLower=(0, 2), paddingUpper=(1, 0), dilation=(2, 1), inputDilation=(1, 2),
                           inputTruncationLower=(1, 0), inputTruncationUpper=(0, 1),
                           outputTruncationLower=(1, 0), outputTruncationUpper=(0, 2),
                           outputPaddingLower=(1, 0), outputPaddingUpper=(0, 2)),
}


def _data(p, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(p.inputShape()).astype(np.float32),
            rng.standard_normal(p.weightsShape()).astype(np.float32),
            rng.standard_normal(p.outputShape()).astype(np.float32))


@pytest.mark.parametrize("case", CASES)
def test_reference_gradients_match_finite_differences(case):
    """The numpy adjoints used below are the gradients of the numpy forward."""
    p = poplin.ConvParams(poplar.FLOAT, **CASES[case])
    x, w, dy = (a.astype(np.float64) for a in _data(p))
    assert forward(x, w, p).shape == tuple(p.outputShape())
    dx, dw = gradients(x, w, dy, p)
    rng = np.random.default_rng(5)
    for _ in range(3):
        vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
        np.testing.assert_allclose(directional_fd(lambda a: np.sum(forward(a, w, p) * dy), x, vx),
                                   np.sum(dx * vx), rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(directional_fd(lambda a: np.sum(forward(x, a, p) * dy), w, vw),
                                   np.sum(dw * vw), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("case", CASES)
def test_backward_passes(harness, case):
    """Forward, input gradient (two ways), weight deltas and both weight updates in one program."""
    h = harness(16)
    poplin.addCodelets(h.graph)
    p = poplin.ConvParams(poplar.FLOAT, **CASES[case])
    bwd = poplin.getGradientParams(p)
    assert bwd.inputShape() == p.outputShape() and bwd.outputShape() == p.inputShape()
    x, w, dy = _data(p)
    X, W, DY = h.tensor(x, name="x"), h.tensor(w, name="w"), h.tensor(dy, name="dy")
    W2 = h.tensor(w, name="w2")
    Y = poplin.convolution(h.graph, X, W, p, False, h.seq, "fwd")
    DX = poplin.convolution(h.graph, DY, W, bwd, True, h.seq, "bwd")
    WT = h.graph.addVariable(poplar.FLOAT, bwd.weightsShape(), "wt")
    poplin.weightsTransposeChansFlipXY(h.graph, W, WT, h.seq)
    DX2 = poplin.convolution(h.graph, DY, WT, bwd, False, h.seq, "bwd2")
    DW = poplin.calculateWeightDeltas(h.graph, DY, X, p, h.seq, "wu")
    assert DW.shape() == p.weightsShape()
    scale = h.tensor(np.array([-0.25], np.float32), name="scale")
    poplin.convolutionWeightUpdate(h.graph, DY, W, X, p, 0.5, h.seq, "update")
    poplin.convolutionWeightUpdate(h.graph, DY, W2, X, p, scale, h.seq, "update2")
    y, dx, dx2, dw, w_new, w2_new = h.run(Y, DX, DX2, DW, W, W2)
    ref_dx, ref_dw = gradients(x, w, dy, p)
    np.testing.assert_allclose(y, forward(x, w, p), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, ref_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx2, dx, rtol=0, atol=0)
    np.testing.assert_allclose(dw, ref_dw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w_new, w + 0.5 * ref_dw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w2_new, w - 0.25 * ref_dw, rtol=1e-5, atol=1e-5)
    # and the device's gradients against finite differences of the float64 forward
    rng = np.random.default_rng(7)
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)
    fd_x = directional_fd(lambda a: np.sum(forward(a, w64, p) * dy64), x64, vx)
    fd_w = directional_fd(lambda a: np.sum(forward(x64, a, p) * dy64), w64, vw)
    np.testing.assert_allclose(np.sum(dx * vx), fd_x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.sum(dw * vw), fd_w, rtol=1e-4, atol=1e-3)


def test_gradient_params():
    p = poplin.ConvParams(poplar.FLOAT, 4, (8, 8), (3, 3), 8, 16, paddingLower=1, paddingUpper=1)
    bwd = poplin.getGradientParams(p)
    assert bwd == poplin.ConvParams(poplar.FLOAT, 4, (8, 8), (3, 3), 16, 8, paddingLower=1, paddingUpper=1)
    s2 = poplin.ConvParams(poplar.FLOAT, 1, (7, 7), (3, 3), 1, 1, stride=2)
    bwd2 = poplin.getGradientParams(s2)
    assert bwd2.inputDilation == (2, 2) and bwd2.inputFieldShape == (3, 3)
    assert bwd2.paddingLower == (2, 2) and bwd2.paddingUpper == (2, 2)
    assert bwd2.getOutputFieldShape() == [7, 7]
    assert s2.canonicalize().getOutputFieldShape() == s2.getOutputFieldShape()
    with pytest.raises(PoplibsError, match="ConvParams"):
        poplin.getGradientParams("params")


def test_biases(harness):
    h = harness(8)
    poplin.addCodelets(h.graph)
    rng = np.random.default_rng(3)
    acts = rng.standard_normal((3, 4, 5, 2)).astype(np.float32)
    dy = rng.standard_normal((3, 4, 5, 2)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    A, DY = h.tensor(acts, name="acts"), h.tensor(dy, name="dy")
    B = poplin.createBiases(h.graph, A, "biases")
    assert B.shape() == [4] and B.elementType() == poplar.FLOAT
    h.graph.createHostWrite("b", B)
    h._inputs.append(("b", b))
    poplin.addBias(h.graph, A, B, h.seq)
    B2 = h.tensor(b, name="b2")
    poplin.convolutionBiasUpdate(h.graph, DY, B2, -0.5, {}, h.seq)
    a_out, b2 = h.run(A, B2)
    np.testing.assert_allclose(a_out, acts + b[None, :, None, None], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b2, b - 0.5 * dy.sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-5)


def _graph():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    return graph, poplar.program.Sequence()


def test_bad_arguments():
    graph, seq = _graph()
    p = poplin.ConvParams(poplar.FLOAT, 2, (4, 4), (3, 3), 2, 3)
    x = graph.addVariable(poplar.FLOAT, p.inputShape(), "x")
    w = graph.addVariable(poplar.FLOAT, p.weightsShape(), "w")
    dy = graph.addVariable(poplar.FLOAT, p.outputShape(), "dy")
    for t in (x, w, dy):
        graph.setTileMapping(t, 0)
    with pytest.raises(PoplibsError, match="zDeltas 'x'"):
        poplin.calculateWeightDeltas(graph, x, x, p, seq)
    with pytest.raises(PoplibsError, match="activations 'dy'"):
        poplin.calculateWeightDeltas(graph, dy, dy, p, seq)
    with pytest.raises(PoplibsError, match="params"):
        poplin.calculateWeightDeltas(graph, dy, x, {"stride": 1}, seq)
    with pytest.raises(PoplibsError, match="weights 'x'"):
        poplin.convolutionWeightUpdate(graph, dy, x, x, p, 0.1, seq)
    with pytest.raises(PoplibsError, match="scale"):
        poplin.convolutionWeightUpdate(graph, dy, w, x, p, "0.1", seq)
    with pytest.raises(PoplibsError, match="scale"):
        poplin.convolutionWeightUpdate(graph, dy, w, x, p, graph.addVariable(poplar.FLOAT, [2]), seq)
    const_w = graph.addConstant(poplar.FLOAT, p.weightsShape(), 0.0)
    with pytest.raises(PoplibsError, match="writeable"):
        poplin.convolutionWeightUpdate(graph, dy, const_w, x, p, 0.1, seq)
    with pytest.raises(PoplibsError, match="weightsOut"):
        poplin.weightsTransposeChansFlipXY(graph, w, graph.addVariable(poplar.FLOAT, p.weightsShape()), seq)
    with pytest.raises(PoplibsError, match="input 'dy'"):  # forward params where backward ones belong
        poplin.convolution(graph, dy, w, p, True, seq)
    with pytest.raises(PoplibsError, match="biases"):
        poplin.addBias(graph, x, graph.addVariable(poplar.FLOAT, [3]), seq)
    with pytest.raises(PoplibsError, match="biases"):
        poplin.addBias(graph, x, graph.addVariable(poplar.HALF, [2]), seq)
    with pytest.raises(PoplibsError, match="channel"):
        poplin.createBiases(graph, graph.addVariable(poplar.FLOAT, [5]))
    with pytest.raises(PoplibsError, match="option"):
        poplin.calculateWeightDeltas(graph, dy, x, p, seq, options={"pass": "SIDEWAYS"})
    with pytest.raises(PoplibsError, match="prog"):
        poplin.calculateWeightDeltas(graph, dy, x, p, None)


@pytest.mark.parametrize("kwargs,message", [
    (dict(inputDilation=0), "inputDilation"),
    (dict(outputPaddingLower=-1), "outputPaddingLower"),
    (dict(inputTruncationLower=3, inputTruncationUpper=3), "input truncation"),
    (dict(outputTruncationUpper=2), "output truncation"),
])
def test_bad_transforms(kwargs, message):
    args = dict(inputType=poplar.FLOAT, batchSize=1, inputFieldShape=(4, 4), kernelShape=(3, 3),
                inputChannelsPerConvGroup=2, outputChannelsPerConvGroup=2)
    with pytest.raises(PoplibsError, match=message):
        poplin.ConvParams(**{**args, **kwargs})


def test_sgd_steps_in_a_loop(harness):
    """A conv layer with bias trained for 3 SGD steps (squared error) in a Repeat, as numpy does."""
    h = harness(8)
    poplin.addCodelets(h.graph)
    p = poplin.ConvParams(poplar.FLOAT, 4, (6, 6), (3, 3), 2, 4, stride=2, paddingLower=1, paddingUpper=1)
    x, w, target = _data(p, seed=4)
    b = np.linspace(-0.5, 0.5, 4).astype(np.float32)
    X, T = h.tensor(x, name="x"), h.tensor(target, name="t")
    W, B = poplin.createWeights(h.graph, p, "w", {"pass": "TRAINING_FWD"}), h.tensor(b, name="b")
    h.graph.createHostWrite("w", W)
    h._inputs.append(("w", w))
    body = poplar.program.Sequence()
    Y = poplin.convolution(h.graph, X, W, p, False, body, "fwd", {"pass": "TRAINING_FWD"})
    poplin.addBias(h.graph, Y, B, body)
    DY = popops.sub(h.graph, Y, T, body)
    poplin.convolutionWeightUpdate(h.graph, DY, W, X, p, -0.01, body, "wu", {"pass": "TRAINING_WU"})
    poplin.convolutionBiasUpdate(h.graph, DY, B, -0.01, {}, body)
    h.seq.add(poplar.program.Repeat(3, body))
    w_out, b_out = h.run(W, B)
    w64, b64 = w.astype(np.float64), b.astype(np.float64)
    for _ in range(3):
        dy = forward(x, w64, p) + b64[None, :, None, None] - target
        w64 = w64 - 0.01 * gradients(x, w64, dy, p)[1]
        b64 = b64 - 0.01 * dy.sum(axis=(0, 2, 3))
    np.testing.assert_allclose(w_out, w64, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b_out, b64, rtol=1e-4, atol=1e-4)
