"""popnn.rnn's vanilla recurrent layer (Recurrent.hpp): rnnFwdSequence and rnnBwdSequence
(input gradient and weight deltas) against numpy back-propagation through time."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popnn, popops
from poplibs_py.popnn import NonLinearityType, rnn
from poplibs_py.poputil import PoplibsError

S, B, IN, H = 3, 2, 3, 2


def _reference(x, wi, wfb, b, y0, dy):
    """Forward states [S, B, H] and the gradients (dx, dWi, dWfb, db) of sum(y * dy)."""
    ys, y = [], y0
    for s in range(S):
        y = np.tanh(x[s] @ wi + y @ wfb + b)
        ys.append(y)
    ys = np.stack(ys)
    dx, dwi, dwfb, db = np.zeros_like(x), np.zeros_like(wi), np.zeros_like(wfb), np.zeros_like(b)
    carry = np.zeros((B, H))
    for s in reversed(range(S)):
        d = (dy[s] + carry @ wfb.T) * (1 - ys[s] ** 2)
        dx[s] = d @ wi.T
        prev = ys[s - 1] if s else y0
        dwi += x[s].T @ d
        dwfb += prev.T @ d
        db += d.sum(0)
        carry = d
    return ys, dx, dwi, dwfb, db


def test_rnn_forward_and_backward_sequences_match_numpy():
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    device = model.createDevice()
    g = poplar.Graph(device)
    for lib in (popops, poplin, popnn):
        lib.addCodelets(g)
    seq = prog.Sequence()
    x = rnn.createInput(g, S, B, IN, H, poplar.FLOAT)
    y0 = rnn.createFwdState(g, poplar.FLOAT, B, H, seq, False, False)
    wi = rnn.createWeightsInput(g, S, B, IN, H, poplar.FLOAT)
    wfb = rnn.createWeightsFeedback(g, B, H, poplar.FLOAT)
    bias = g.addVariable(poplar.FLOAT, [H], "bias")
    g.setTileMapping(bias, 1)
    dy = g.addVariable(poplar.FLOAT, [S, B, H], "dy")
    g.setTileMapping(dy, 2)
    assert x.shape() == [S, B, IN] and wi.shape() == [IN, H] and wfb.shape() == [H, H]
    tanh = NonLinearityType.TANH
    ys = rnn.rnnFwdSequence(g, seq, y0, None, bias, wi, wfb, x, tanh, poplar.FLOAT, False)
    dx, dwi, dwfb, db = rnn.rnnBwdSequence(g, True, False, seq, rnn.getOutputFromFwdState(y0), ys, bias, wi,
                                           wfb, dy, x, tanh, poplar.FLOAT)
    weighted = rnn.forwardWeightInput(g, x, wi, seq)
    ys2 = rnn.rnnFwdSequence(g, seq, y0, weighted, bias, wi, wfb, x, tanh, poplar.FLOAT, False)
    rng = np.random.default_rng(0)
    values = {"x": rng.standard_normal((S, B, IN)), "wi": rng.standard_normal((IN, H)),
              "wfb": 0.5 * rng.standard_normal((H, H)), "b": 0.2 * rng.standard_normal(H),
              "y0": rng.standard_normal((B, H)), "dy": rng.standard_normal((S, B, H))}
    tensors = {"x": x, "wi": wi, "wfb": wfb, "b": bias, "y0": y0, "dy": dy}
    for name, t in tensors.items():
        g.createHostWrite(name, t)
    outs = {"ys": ys, "ys2": ys2, "dx": dx, "dwi": dwi, "dwfb": dwfb, "db": db}
    for name, t in outs.items():
        g.createHostRead(name, t)
    engine = poplar.Engine(g, seq)
    engine.load(device)
    for name, v in values.items():
        engine.writeTensor(name, v.astype(np.float32))
    engine.run()
    want = dict(zip(["ys", "dx", "dwi", "dwfb", "db"], _reference(*(values[k] for k in tensors))))
    want["ys2"] = want["ys"]
    for name in outs:
        np.testing.assert_allclose(engine.readTensor(name), want[name], rtol=1e-4, atol=1e-5, err_msg=name)
    assert rnn.getFwdFlops(S, B, IN, H) > rnn.getFwdFlops(S, B, IN, H, False) > 0
    assert rnn.getWuFlops(1, 1, 1, 1) == 5 and rnn.getBwdFlops(1, 1, 1, 1, False) == 1


def test_bad_arguments_name_them():
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    g = poplar.Graph(model.createDevice())
    with pytest.raises(PoplibsError, match="createInput: inputSize must be a positive integer"):
        rnn.createInput(g, S, B, 0, H, poplar.FLOAT)
    x = rnn.createInput(g, S, B, IN, H, poplar.FLOAT)
    w = rnn.createWeightsFeedback(g, B, H, poplar.FLOAT)
    with pytest.raises(PoplibsError, match=r"forwardWeightInput: weights must be shaped \[3, \*\]"):
        rnn.forwardWeightInput(g, x, w, prog.Sequence())
