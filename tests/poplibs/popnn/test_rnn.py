"""popnn.lstm and popnn.gru: forward passes against numpy, backward passes (input, state and
weight gradients) against finite differences of the numpy forward pass."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popnn, popops
from poplibs_py.popnn import gru, lstm
from poplibs_py.poputil import PoplibsError, mapTensorLinearly

T, B, IN, H = 3, 2, 3, 4  # time steps, batch, input size, output size


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_reference(x, wi, wo, b, h, c):
    """Outputs [T, B, H] and the last cell state, in float64."""
    outs = []
    for t in range(x.shape[0]):
        z = np.einsum("bi,gih->bgh", x[t], wi) + np.einsum("bj,gjh->bgh", h, wo) + b
        f, i, g, o = _sigmoid(z[:, 0]), _sigmoid(z[:, 1]), np.tanh(z[:, 2]), _sigmoid(z[:, 3])
        c = f * c + i * g
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs), c


def gru_reference(x, wi, wo, b, h):
    outs = []
    for t in range(x.shape[0]):
        zx = np.einsum("bi,gih->bgh", x[t], wi) + b
        r = _sigmoid(zx[:, 0] + h @ wo[0])
        u = _sigmoid(zx[:, 1] + h @ wo[1])
        c = np.tanh(zx[:, 2] + (r * h) @ wo[2])
        h = u * h + (1 - u) * c
        outs.append(h)
    return np.stack(outs)


def _values(rng, gates):
    return {"x": rng.standard_normal((T, B, IN)), "wi": 0.5 * rng.standard_normal((gates, IN, H)),
            "wo": 0.5 * rng.standard_normal((gates, H, H)), "b": 0.2 * rng.standard_normal((gates, H)),
            "h0": rng.standard_normal((B, H)), "c0": rng.standard_normal((B, H))}


def _finite_differences(loss, values, eps=1e-6):
    grads = {}
    for name, v in values.items():
        g = np.zeros_like(v)
        for k in np.ndindex(v.shape):
            old = v[k]
            v[k] = old + eps
            up = loss(values)
            v[k] = old - eps
            down = loss(values)
            v[k] = old
            g[k] = (up - down) / (2 * eps)
        grads[name] = g
    return grads


class Layer:
    """A graph with one LSTM or GRU layer, its inputs written from numpy arrays."""

    def __init__(self, module, mode="native"):
        model = poplar.IPUModel()
        model.tilesPerIPU = 16
        self.device = model.createDevice()
        self.graph = g = poplar.Graph(self.device)
        for lib in (popops, poplin, popnn):
            lib.addCodelets(g)
        self.mode, self.seq, self.module = mode, prog.Sequence(), module
        cls = lstm.LstmParams if module is lstm else gru.GruParams
        self.params = cls(poplar.FLOAT, B, T, [IN, H])
        self.x = module.createInput(g, self.params)
        self.weights = module.createWeights(g, self.params)
        self.tensors = {"x": self.x, "wi": self.weights.inputWeights, "wo": self.weights.outputWeights,
                        "b": self.weights.biases}
        if module is lstm:
            self.state = lstm.createInitialState(g, self.params)
            self.tensors.update(h0=self.state.output, c0=self.state.cellState)
        else:
            self.state = gru.createInitialState(g, self.params)
            self.tensors["h0"] = self.state
        for name, t in self.tensors.items():
            g.createHostWrite(name, t)

    def run(self, values, outputs):
        for name, t in outputs.items():
            self.graph.createHostRead(f"out:{name}", t)
        engine = poplar.Engine(self.graph, self.seq, {"codelets.mode": self.mode})
        engine.load(self.device)
        for name in self.tensors:
            engine.writeTensor(name, values[name].astype(np.float32))
        for name, value in values.items():
            if name.startswith("in:"):
                engine.writeTensor(name, value.astype(np.float32))
        engine.run()
        return {name: engine.readTensor(f"out:{name}") for name in outputs}


def test_lstm_forward_matches_numpy(mode):
    layer = Layer(lstm, mode)
    values = _values(np.random.default_rng(0), 4)
    out, cell = lstm.lstmFwd(layer.graph, layer.params, layer.state, layer.x, layer.weights, None, layer.seq)
    got = layer.run(values, {"out": out, "cell": cell})
    want_out, want_cell = lstm_reference(values["x"], values["wi"], values["wo"], values["b"], values["h0"],
                                         values["c0"])
    np.testing.assert_allclose(got["out"], want_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["cell"], want_cell, rtol=1e-5, atol=1e-5)


def test_gru_forward_matches_numpy(mode):
    layer = Layer(gru, mode)
    values = _values(np.random.default_rng(1), 3)
    out = gru.gruFwd(layer.graph, layer.params, layer.state, layer.x, layer.weights, None, layer.seq)
    got = layer.run(values, {"out": out})
    want = gru_reference(values["x"], values["wi"], values["wo"], values["b"], values["h0"])
    np.testing.assert_allclose(got["out"], want, rtol=1e-5, atol=1e-5)


def _grad_input(layer, name, shape):
    """A gradient from the next layer, written from the host."""
    t = layer.graph.addVariable(poplar.FLOAT, shape, name)
    mapTensorLinearly(layer.graph, t)
    layer.graph.createHostWrite(name, t)
    return t


def test_lstm_backward_with_weight_update_matches_finite_differences():
    layer = Layer(lstm)
    rng = np.random.default_rng(2)
    values = _values(rng, 4)
    r_out, r_cell = rng.standard_normal((T, B, H)), rng.standard_normal((B, H))
    inter = []
    out, _ = lstm.lstmFwd(layer.graph, layer.params, layer.state, layer.x, layer.weights, inter, layer.seq)
    d_out = _grad_input(layer, "in:dOut", [T, B, H])
    d_cell = _grad_input(layer, "in:dCell", [B, H])
    input_grad, weights_grad = [], []
    state_grad = lstm.lstmBwdWithWU(layer.graph, layer.params, layer.seq, layer.state, inter[0],
                                    layer.weights, layer.x, out, d_out, d_cell, input_grad, weights_grad)
    w = weights_grad[0]
    got = layer.run({**values, "in:dOut": r_out, "in:dCell": r_cell},
                    {"x": input_grad[0], "wi": w.inputWeights, "wo": w.outputWeights, "b": w.biases,
                     "h0": state_grad.output, "c0": state_grad.cellState})

    def loss(v):
        o, c = lstm_reference(v["x"], v["wi"], v["wo"], v["b"], v["h0"], v["c0"])
        return float((o * r_out).sum() + (c * r_cell).sum())

    want = _finite_differences(loss, values)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-3, atol=2e-4, err_msg=name)


def test_gru_backward_with_weight_update_matches_finite_differences():
    layer = Layer(gru)
    rng = np.random.default_rng(3)
    values = _values(rng, 3)
    del values["c0"]
    r_out = rng.standard_normal((T, B, H))
    inter = []
    out = gru.gruFwd(layer.graph, layer.params, layer.state, layer.x, layer.weights, inter, layer.seq)
    d_out = _grad_input(layer, "in:dOut", [T, B, H])
    input_grad, weights_grad = [], []
    h0_grad = gru.gruBwdWithWU(layer.graph, layer.params, layer.seq, layer.state, inter[0], layer.weights,
                               layer.x, out, d_out, input_grad, weights_grad)
    w = weights_grad[0]
    got = layer.run({**values, "in:dOut": r_out},
                    {"x": input_grad[0], "wi": w.inputWeights, "wo": w.outputWeights, "b": w.biases,
                     "h0": h0_grad})

    def loss(v):
        return float((gru_reference(v["x"], v["wi"], v["wo"], v["b"], v["h0"]) * r_out).sum())

    want = _finite_differences(loss, values)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-3, atol=2e-4, err_msg=name)


def test_lstm_backward_of_the_last_output_only():
    layer = Layer(lstm)
    layer.params = lstm.LstmParams(poplar.FLOAT, B, T, [IN, H], outputFullSequence=False)
    rng = np.random.default_rng(4)
    values = _values(rng, 4)
    r_last = rng.standard_normal((B, H))
    inter = []
    last, _ = lstm.lstmFwd(layer.graph, layer.params, layer.state, layer.x, layer.weights, inter, layer.seq)
    assert last.shape() == [B, H]
    d_last = _grad_input(layer, "in:dLast", [B, H])
    input_grad = []
    state_grad = lstm.lstmBwd(layer.graph, layer.params, layer.seq, layer.state, inter[0], layer.weights,
                              layer.x, last, d_last, None, input_grad, None)
    got = layer.run({**values, "in:dLast": r_last}, {"x": input_grad[0], "h0": state_grad.output})

    def loss(v):
        o, _ = lstm_reference(v["x"], v["wi"], v["wo"], v["b"], v["h0"], v["c0"])
        return float((o[-1] * r_last).sum())

    want = _finite_differences(loss, values)
    np.testing.assert_allclose(got["x"], want["x"], rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(got["h0"], want["h0"], rtol=2e-3, atol=2e-4)


def test_bad_arguments_raise_poplibs_errors():
    layer = Layer(lstm)
    with pytest.raises(PoplibsError, match=r"layerSizes must be \[inputSize, outputSize\]"):
        lstm.LstmParams(poplar.FLOAT, B, T, [IN])
    wrong = layer.graph.addVariable(poplar.FLOAT, [T, B, IN + 1], "wrong")
    with pytest.raises(PoplibsError, match=r"lstmFwd: input must be a tensor of shape \[3, 2, 3\]"):
        lstm.lstmFwd(layer.graph, layer.params, layer.state, wrong, layer.weights, None, layer.seq)
    with pytest.raises(PoplibsError, match=r"params must be popnn\.gru\.GruParams"):
        gru.gruFwd(layer.graph, layer.params, layer.state.output, layer.x, layer.weights, None, layer.seq)


def test_cell_orders_state_as_tensor_and_zero_initial_state():
    assert lstm.getDefaultBasicLstmCellOrder() == [0, 1, 2, 3]
    assert gru.getDefaultBasicGruCellOrder() == [0, 1, 2]
    layer = Layer(lstm)
    lstm.zeroInitialState(layer.graph, layer.state, layer.seq)
    both = layer.state.getAsTensor()
    assert both.shape() == [2, B, H]
    values = _values(np.random.default_rng(5), 4)
    got = layer.run(values, {"state": both})
    assert not got["state"].any()
