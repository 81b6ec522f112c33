"""The same GPT (or BERT) and Adam step in numpy (float64): what the tests compare the simulated Pod with."""

from __future__ import annotations

import math

import numpy as np
from model import MASKED, Sizes
from optimiser import BETA1, BETA2, corrections


def _gelu(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PopLibs' GELU (the tanh form) and its derivative."""
    c = math.sqrt(2 / math.pi)
    inner = c * (x + 0.044715 * x**3)
    t = np.tanh(inner)
    return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _ln(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> tuple[np.ndarray, tuple]:
    mean = x.mean(axis=-1, keepdims=True)
    isd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)
    white = (x - mean) * isd
    return white * g + b, (white, isd, g)


def _ln_back(dy: np.ndarray, saved: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    white, isd, g = saved
    dwhite = dy * g
    dx = isd * (
        dwhite - dwhite.mean(axis=-1, keepdims=True) - white * (dwhite * white).mean(axis=-1, keepdims=True)
    )
    return dx, (dy * white).sum(axis=0), dy.sum(axis=0)


def loss_and_grads(
    p: dict[str, np.ndarray], s: Sizes, tokens: np.ndarray, targets: np.ndarray, positions: np.ndarray | None
) -> tuple[float, dict[str, np.ndarray]]:
    """The summed cross-entropy of a micro-batch (its tokens read, flat; the targets predicted, at
    ``positions`` of the tokens, or each at its own position) and its gradients."""
    n, h, a, hd = s.tokens, s.hidden, s.heads, s.head_dim
    mask = np.triu(np.full([s.seq, s.seq], MASKED), 1) if s.causal else 0.0
    grads = {k: np.zeros_like(v, dtype=np.float64) for k, v in p.items()}
    x = p["wte"][tokens] + np.tile(p["wpe"], (s.batch, 1))
    saved = []

    def heads(t: np.ndarray) -> np.ndarray:
        return t.reshape(s.batch, s.seq, a, hd).transpose(0, 2, 1, 3)

    def merge(t: np.ndarray) -> np.ndarray:
        return t.transpose(0, 2, 1, 3).reshape(n, h)

    for layer in range(s.layers):
        q = f"l{layer}."
        y, ln1 = _ln(x, p[q + "ln1.g"], p[q + "ln1.b"], s.eps)
        qq, kk, vv = (y @ p[q + f"w{c}"] + p[q + f"b{c}"] for c in "qkv")
        probs = _softmax(heads(qq) @ heads(kk).transpose(0, 1, 3, 2) / math.sqrt(hd) + mask)
        ctx = merge(probs @ heads(vv))
        o = ctx @ p[q + "wo"] + p[q + "bo"] + x
        m, ln2 = _ln(o, p[q + "ln2.g"], p[q + "ln2.b"], s.eps)
        u = m @ p[q + "w1"] + p[q + "b1"]
        act, dgelu = _gelu(u)
        x = act @ p[q + "w2"] + p[q + "b2"] + o
        saved.append((y, ln1, qq, kk, vv, probs, ctx, m, ln2, u, act, dgelu))
    hf, lnf = _ln(x, p["lnf.g"], p["lnf.b"], s.eps)
    rows = np.arange(n) if positions is None else positions
    probs = _softmax(hf[rows] @ p["wte"].T)
    picked = np.arange(rows.size)
    loss = float(-np.log(probs[picked, targets]).sum())
    d_logits = probs.copy()
    d_logits[picked, targets] -= 1
    grads["wte"] += d_logits.T @ hf[rows]
    d_hf = np.zeros_like(hf)
    np.add.at(d_hf, rows, d_logits @ p["wte"])
    d, grads["lnf.g"], grads["lnf.b"] = _ln_back(d_hf, lnf)
    for layer in reversed(range(s.layers)):
        q = f"l{layer}."
        y, ln1, qq, kk, vv, probs, ctx, m, ln2, u, act, dgelu = saved[layer]
        grads[q + "b2"], grads[q + "w2"] = d.sum(axis=0), act.T @ d
        du = (d @ p[q + "w2"].T) * dgelu
        grads[q + "b1"], grads[q + "w1"] = du.sum(axis=0), m.T @ du
        dm, grads[q + "ln2.g"], grads[q + "ln2.b"] = _ln_back(du @ p[q + "w1"].T, ln2)
        do = dm + d
        grads[q + "bo"], grads[q + "wo"] = do.sum(axis=0), ctx.T @ do
        dctx = heads(do @ p[q + "wo"].T)
        dprobs = dctx @ heads(vv).transpose(0, 1, 3, 2)
        dv = probs.transpose(0, 1, 3, 2) @ dctx
        dscores = probs * (dprobs - (dprobs * probs).sum(axis=-1, keepdims=True)) / math.sqrt(hd)
        dq, dk = dscores @ heads(kk), dscores.transpose(0, 1, 3, 2) @ heads(qq)
        dy = np.zeros_like(y)
        for c, dc in (("q", dq), ("k", dk), ("v", dv)):
            dc = merge(dc)
            grads[q + f"b{c}"], grads[q + f"w{c}"] = dc.sum(axis=0), y.T @ dc
            dy += dc @ p[q + f"w{c}"].T
        dx, grads[q + "ln1.g"], grads[q + "ln1.b"] = _ln_back(dy, ln1)
        d = dx + do
    np.add.at(grads["wte"], tokens, d)
    grads["wpe"] = d.reshape(s.batch, s.seq, h).sum(axis=0)
    return loss, grads


def train_step(
    p: dict[str, np.ndarray],
    state: dict[str, tuple[np.ndarray, np.ndarray]],
    s: Sizes,
    groups: list[np.ndarray],
    lr: float,
    step: int,
) -> tuple[float, dict[str, np.ndarray]]:
    """One step of data-parallel training: ``groups`` holds each data-parallel replica's micro-batches
    ((tokens, targets, positions) each: ``Batches.replica``); the gradients of each replica's mean
    loss are averaged over the replicas and Adam (``state``: each parameter's moments, updated) makes
    the step. The mean loss and the new parameters."""
    total, grads = 0.0, {k: np.zeros_like(v, dtype=np.float64) for k, v in p.items()}
    count = len(groups) * len(groups[0]) * s.targets
    for micro_batches in groups:
        for tokens, targets, positions in micro_batches:
            loss, g = loss_and_grads(p, s, tokens, targets, positions)
            total += loss
            for k in grads:  # each replica's mean, then the mean over the replicas: the mean over all
                grads[k] += g[k] / count
    lr_t, eps_t = corrections(lr, step).astype(np.float64)
    out = {}
    for k, w in p.items():
        m, v = state.get(k, (np.zeros_like(w, dtype=np.float64), np.zeros_like(w, dtype=np.float64)))
        g = grads[k]
        m, v = BETA1 * m + (1 - BETA1) * g, BETA2 * v + (1 - BETA2) * g * g
        state[k] = (m, v)
        out[k] = w - lr_t * m / (np.sqrt(v) + eps_t)
    return total / count, out
