"""Tutorial 9 (BERT encoder layers trained data-parallel on a simulated Pod): every gradient and
the loss against numpy, and the default command's loss falling."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import poplar_py as poplar

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tutorials/tut9_bert/bert.py"
_spec = importlib.util.spec_from_file_location("tut9_bert", SCRIPT)
assert _spec is not None and _spec.loader is not None
bert = importlib.util.module_from_spec(_spec)
sys.modules["tut9_bert"] = bert  # its dataclasses look their module up
_spec.loader.exec_module(bert)

ALPHA, BETA = np.sqrt(2 / np.pi), 0.044715


def _gelu(u):
    return 0.5 * u * (1 + np.tanh(ALPHA * u * (1 + BETA * u * u)))


def _gelu_grad(u):
    t = np.tanh(ALPHA * u * (1 + BETA * u * u))
    return 0.5 * (1 + t + (1 - t * t) * u * (ALPHA + 3 * ALPHA * BETA * u * u))


def _layer_norm(x, g, b, eps):
    mean = x.mean(-1, keepdims=True)
    isd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    white = (x - mean) * isd
    return white * g + b, white, isd


def _layer_norm_grad(dy, white, isd, g):
    h = dy * g
    dx = isd * (h - h.mean(-1, keepdims=True) - white * (h * white).mean(-1, keepdims=True))
    return dx, (dy * white).sum(0), dy.sum(0)


def reference(p: dict, x: np.ndarray, y: np.ndarray, s) -> tuple[float, dict]:
    """The loss and every parameter's gradient of one replica's micro-batch (float64)."""
    p = {k: v.astype(np.float64) for k, v in p.items()}
    nb, sq, nh, d = s.batch, s.seq, s.heads, s.head_dim

    def heads(t):
        return t.reshape(nb, sq, nh, d).transpose(0, 2, 1, 3)

    def merge(t):
        return t.transpose(0, 2, 1, 3).reshape(nb * sq, nh * d)

    h, saved, grads = x.astype(np.float64), [], {}
    for layer in range(s.layers):
        w = {k.split(".", 1)[1]: v for k, v in p.items() if k.startswith(f"l{layer}.")}
        q, k, v = (h @ w[f"w{n}"] + w[f"b{n}"] for n in "qkv")
        scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) / np.sqrt(d)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        ctx = merge(probs @ heads(v))
        h1, white1, isd1 = _layer_norm(h + ctx @ w["wo"] + w["bo"], w["g1"], w["be1"], s.eps)
        u = h1 @ w["w1"] + w["b1"]
        a = _gelu(u)
        out, white2, isd2 = _layer_norm(h1 + a @ w["w2"] + w["b2"], w["g2"], w["be2"], s.eps)
        saved.append((w, h, q, k, v, probs, ctx, h1, white1, isd1, u, a, white2, isd2))
        h = out
    pred = h @ p["head.w"] + p["head.b"]
    diff = pred - y
    loss = float((diff ** 2).mean())
    dy = 2 * diff / diff.size
    grads["head.w"], grads["head.b"] = h.T @ dy, dy.sum(0)
    dh = dy @ p["head.w"].T
    for layer in reversed(range(s.layers)):
        w, x_in, q, k, v, probs, ctx, h1, white1, isd1, u, a, white2, isd2 = saved[layer]
        g = {}
        df, g["g2"], g["be2"] = _layer_norm_grad(dh, white2, isd2, w["g2"])
        g["w2"], g["b2"] = a.T @ df, df.sum(0)
        du = (df @ w["w2"].T) * _gelu_grad(u)
        g["w1"], g["b1"] = h1.T @ du, du.sum(0)
        dh1 = du @ w["w1"].T + df
        dattn, g["g1"], g["be1"] = _layer_norm_grad(dh1, white1, isd1, w["g1"])
        g["wo"], g["bo"] = ctx.T @ dattn, dattn.sum(0)
        dctx = heads(dattn @ w["wo"].T)
        dprobs = dctx @ heads(v).transpose(0, 1, 3, 2)
        dv = probs.transpose(0, 1, 3, 2) @ dctx
        dscores = probs * (dprobs - (dprobs * probs).sum(-1, keepdims=True)) / np.sqrt(d)
        dq, dk = dscores @ heads(k), dscores.transpose(0, 1, 3, 2) @ heads(q)
        dx = dattn.copy()
        for n, dn in (("q", dq), ("k", dk), ("v", dv)):
            g[f"w{n}"], g[f"b{n}"] = x_in.T @ merge(dn), merge(dn).sum(0)
            dx += merge(dn) @ w[f"w{n}"].T
        grads.update({f"l{layer}.{name}": value for name, value in g.items()})
        dh = dx
    return loss, grads


@pytest.mark.parametrize("layers,ipus", [(1, 1), (2, 1), (3, 2)])
def test_loss_and_every_gradient_match_numpy_on_two_replicas(layers, ipus):
    """Two replicas, of one IPU or of two (the layers split between the IPUs)."""
    s = bert.Sizes(hidden=16, heads=2, ffn=32, seq=8, layers=layers, batch=2, outputs=4)
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = 2 * ipus, 16
    lr = 0.1
    net, engine, _ = bert.build(s, 2, lr, device=model.createDevice(), ipus=ipus)
    params = bert.initial_parameters(s, 1)
    params = {k: v + 0.1 * np.random.default_rng(2).standard_normal(v.shape).astype(np.float32)
              for k, v in params.items()}  # away from zero biases and unit gains
    engine.writeTensor("params", net.flat(params))
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((s.tokens, s.hidden)).astype(np.float32) for _ in range(2)]
    ys = [rng.standard_normal((s.tokens, s.outputs)).astype(np.float32) for _ in range(2)]
    losses = [np.zeros(1, np.float32) for _ in range(2)]
    for r in range(2):
        engine.connectStream("embeddings", xs[r], replicaIndex=r)
        engine.connectStream("target", ys[r], replicaIndex=r)
        engine.connectStream("loss", losses[r], replicaIndex=r)
    engine.run(0)
    expected = [reference(params, xs[r], ys[r], s) for r in range(2)]
    for r in range(2):
        assert abs(losses[r][0] - expected[r][0]) <= 1e-3 * abs(expected[r][0])
    got = net.unflat(engine.readTensor("grads"))
    for name in got:
        want = (expected[0][1][name] + expected[1][1][name]) / 2  # the all-reduce's mean
        if name.endswith(".bk"):  # zero: a key bias shifts a row of scores, which softmax ignores
            assert np.abs(got[name]).max() <= 1e-6, name
            continue
        error = np.abs(got[name] - want).max() / np.abs(want).max()
        assert error <= 1e-3, (name, error)
    for r in range(2):  # every replica made the same SGD step
        updated = net.unflat(engine.readTensor("params/read", replicaIndex=r))
        for name in updated:
            np.testing.assert_allclose(updated[name], params[name] - lr * got[name], rtol=1e-5, atol=1e-6)


def test_the_default_command_trains_on_a_pod16(tmp_path):
    done = subprocess.run([sys.executable, "-m", "poplar_py.cli", "run", str(SCRIPT)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = re.findall(r"^step (\d) loss ([\d.]+) +([\d.]+) ms simulated, ([\d,]+) sequences/s; "
                       r"compute ([\d.]+)%, exchange ([\d.]+)%, IPU-Links ([\d.]+)%, host ([\d.]+)%, "
                       r"sync ([\d.]+)%$",
                       done.stdout, re.M)
    assert [int(s[0]) for s in steps] == [0, 1, 2], done.stdout
    losses = [float(s[1]) for s in steps]
    assert losses[2] < losses[1] < losses[0]
    for s in steps:
        shares = [float(x) for x in s[4:]]
        assert 99.5 <= sum(shares) <= 100.5 and float(s[6]) > 0  # the all-reduce crosses the IPU-Links
