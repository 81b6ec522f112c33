"""popnn.ctc (loss and gradient) and popnn.ctc_infer (beam search) against numpy references
on tiny problems: CTC forward-backward in float64 for the loss and gradient (checked by
finite differences too), a plain prefix beam search for the decoder."""

import itertools

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popnn, popops
from poplibs_py.popnn import ctc, ctc_infer
from poplibs_py.poputil import PoplibsError

T, B, C, L, BLANK = 5, 3, 4, 2, 0


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _ctc_probability(logp, labels):
    """P(labels | logp [t, C]) by summing over every alignment (tiny sizes only)."""
    total = 0.0
    for path in itertools.product(range(C), repeat=logp.shape[0]):
        collapsed = [k for i, k in enumerate(path) if k != BLANK and (i == 0 or path[i - 1] != k)]
        if collapsed == list(labels):
            total += np.exp(sum(logp[i, k] for i, k in enumerate(path)))
    return total


def ctc_reference(logits, labels, data_len, label_len):
    """Loss per entry and the gradient w.r.t. the logits, by forward-backward (float64)."""
    logp = _log_softmax(logits)
    loss, grad = np.zeros(logits.shape[1]), np.zeros_like(logits)
    for b in range(logits.shape[1]):
        t_n, lab = data_len[b], labels[b, :label_len[b]]
        ext = [BLANK]
        for k in lab:
            ext += [k, BLANK]
        s_n = len(ext)
        y = np.exp(logp[:t_n, b])
        alpha, beta = np.zeros((t_n, s_n)), np.zeros((t_n, s_n))
        alpha[0, :2] = y[0, ext[:2]]
        for t in range(1, t_n):
            for s in range(s_n):
                a = alpha[t - 1, s] + (alpha[t - 1, s - 1] if s else 0)
                if s >= 2 and ext[s] != BLANK and ext[s] != ext[s - 2]:
                    a += alpha[t - 1, s - 2]
                alpha[t, s] = a * y[t, ext[s]]
        beta[-1, -2:] = y[-1, ext[-2:]] if s_n > 1 else y[-1, ext[-1:]]
        for t in range(t_n - 2, -1, -1):
            for s in range(s_n):
                v = beta[t + 1, s] + (beta[t + 1, s + 1] if s + 1 < s_n else 0)
                if s + 2 < s_n and ext[s + 2] != BLANK and ext[s + 2] != ext[s]:
                    v += beta[t + 1, s + 2]
                beta[t, s] = v * y[t, ext[s]]
        p = alpha[-1, -1] + (alpha[-1, -2] if s_n > 1 else 0)
        assert np.isclose(p, _ctc_probability(logp[:t_n, b], lab))
        loss[b] = -np.log(p)
        for t in range(t_n):
            occ = np.zeros(C)
            for s in range(s_n):
                occ[ext[s]] += alpha[t, s] * beta[t, s]
            grad[t, b] = y[t] - occ / (p * y[t])
    return loss, grad


def beam_search_reference(logp, beamwidth, top):
    """Prefix beam search: beams (prefix, pb, pnb) in log space, candidates merged in order."""
    beams = [((), 0.0, -np.inf)]
    for row in logp:
        cands = []
        for prefix, pb, pnb in beams:
            last = prefix[-1] if prefix else None
            cands.append([prefix, np.logaddexp(pb, pnb) + row[BLANK], pnb + row[last] if prefix else -np.inf])
            for c in range(C):
                if c != BLANK:
                    ext = pb + row[c] if c == last else np.logaddexp(pb + row[c], pnb + row[c])
                    cands.append([prefix + (c,), -np.inf, ext])
        merged = []
        for cand in cands:
            same = next((m for m in merged if m[0] == cand[0]), None)
            if same is None:
                merged.append(cand)
            else:
                same[1], same[2] = np.logaddexp(same[1], cand[1]), np.logaddexp(same[2], cand[2])
        merged.sort(key=lambda m: -np.logaddexp(m[1], m[2]))
        beams = [tuple(m) for m in merged[:beamwidth]]
    return [(list(p), np.logaddexp(pb, pnb)) for p, pb, pnb in beams[:top]]


def _graph():
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    device = model.createDevice()
    g = poplar.Graph(device)
    popops.addCodelets(g)
    popnn.addCodelets(g)
    return device, g


def _lengths(g, name, tile=0):
    t = g.addVariable(poplar.UNSIGNED_INT, [B], name)
    g.setTileMapping(t, tile)
    g.createHostWrite(name, t)
    return t


def _run(device, g, seq, values, outs):
    for name, t in outs.items():
        g.createHostRead(name, t)
    engine = poplar.Engine(g, seq)
    engine.load(device)
    for name, v in values.items():
        engine.writeTensor(name, v)
    engine.run()
    return {name: engine.readTensor(name) for name in outs}


def test_ctc_loss_and_gradient_match_forward_backward():
    device, g = _graph()
    p = ctc.plan(g, poplar.FLOAT, poplar.FLOAT, B, T, L, C)
    assert p == ctc.plan(g, poplar.FLOAT, poplar.FLOAT, B, T, L, C) and "batch 3" in str(p)
    logits = ctc.createDataInput(g, poplar.FLOAT, B, T, C, p)
    labels = ctc.createLabelsInput(g, poplar.UNSIGNED_INT, B, L, p)
    data_len, label_len = _lengths(g, "dataLen"), _lengths(g, "labelLen", 1)
    g.createHostWrite("logits", logits)
    g.createHostWrite("labels", labels)
    seq = prog.Sequence()
    loss, grad = ctc.calcLossAndGradientLogits(g, poplar.FLOAT, logits, labels, data_len, label_len, seq,
                                               BLANK, p)
    # entry 2 cannot align "1 1" to 2 steps: zeroInfinity gives loss 0 and no gradient
    loss_z, grad_z = ctc.calcLossAndGradientLogits(g, poplar.FLOAT, logits, labels, data_len, label_len, seq,
                                                   BLANK, p, "zeroInf", {"zeroInfinity": "true"})
    rng = np.random.default_rng(0)
    v_logits = rng.standard_normal((T, B, C)).astype(np.float32)
    v_labels = np.array([[1, 2], [3, 3], [1, 1]], np.uint32)
    v_data, v_label = np.array([5, 4, 2], np.uint32), np.array([2, 2, 2], np.uint32)
    got = _run(device, g, seq, {"logits": v_logits, "labels": v_labels, "dataLen": v_data,
                                "labelLen": v_label},
               {"loss": loss, "grad": grad, "lossZ": loss_z, "gradZ": grad_z})
    want_loss, want_grad = ctc_reference(v_logits[:, :2].astype(np.float64), v_labels, v_data, v_label)
    np.testing.assert_allclose(got["loss"][:2], want_loss, rtol=1e-5)
    np.testing.assert_allclose(got["grad"][:, :2], want_grad[:, :2], rtol=1e-4, atol=1e-6)
    assert np.isinf(got["loss"][2]) and got["lossZ"][2] == 0 and not got["gradZ"][:, 2].any()
    np.testing.assert_allclose(got["lossZ"][:2], want_loss[:2], rtol=1e-5)
    # the gradient is the loss's derivative: check one entry by finite differences
    eps, b = 1e-4, 0
    for t, c in ((0, 1), (3, 2)):
        up, down = v_logits[:, :1].astype(np.float64), v_logits[:, :1].astype(np.float64)
        up[t, b, c] += eps
        down[t, b, c] -= eps
        fd = (ctc_reference(up, v_labels, v_data, v_label)[0][b] - ctc_reference(down, v_labels, v_data,
                                                                                  v_label)[0][b]) / (2 * eps)
        assert got["grad"][t, b, c] == pytest.approx(fd, rel=1e-3, abs=1e-5)


def test_beam_search_decoder_matches_prefix_beam_search():
    device, g = _graph()
    width, top = 3, 2
    p = ctc_infer.plan(g, poplar.FLOAT, B, T, C, width)
    logp = ctc_infer.createDataInput(g, poplar.FLOAT, B, T, C, p)
    g.createHostWrite("logp", logp)
    data_len = _lengths(g, "dataLen")
    seq = prog.Sequence()
    probs, lengths, decoded = ctc_infer.beamSearchDecoderLogProbabilities(g, logp, data_len, seq, BLANK,
                                                                          width,
                                                                          top, p)
    rng = np.random.default_rng(1)
    v = _log_softmax(2 * rng.standard_normal((T, B, C))).astype(np.float32)
    v_len = np.array([5, 3, 1], np.uint32)
    got = _run(device, g, seq, {"logp": v, "dataLen": v_len}, {"p": probs, "n": lengths, "d": decoded})
    assert got["n"][0].min() > 0
    for b in range(B):
        want = beam_search_reference(v[:v_len[b], b].astype(np.float64), width, top)
        for k, (labels, logprob) in enumerate(want):
            assert got["n"][b, k] == len(labels)
            assert list(got["d"][b, k, :len(labels)]) == labels and not got["d"][b, k, len(labels):].any()
            assert got["p"][b, k] == pytest.approx(logprob, rel=1e-5)


def test_bad_arguments_name_them():
    _, g = _graph()
    with pytest.raises(PoplibsError, match="ctc::plan: maxLabelLength must be a positive integer"):
        ctc.plan(g, poplar.FLOAT, poplar.FLOAT, B, T, 0, C)
    with pytest.raises(PoplibsError, match="outType must be FLOAT or HALF"):
        ctc.plan(g, poplar.FLOAT, poplar.INT, B, T, L, C)
    p = ctc_infer.plan(g, poplar.FLOAT, B, T, C, 2)
    logp = ctc_infer.createDataInput(g, poplar.FLOAT, B, T, C, p)
    with pytest.raises(PoplibsError, match=r"topPaths \(3\) must not exceed beamwidth \(2\)"):
        ctc_infer.beamSearchDecoderLogProbabilities(g, logp, _lengths(g, "n"), prog.Sequence(), BLANK, 2, 3,
                                                    p)
    with pytest.raises(PoplibsError, match="blankClass must be a class"):
        ctc_infer.beamSearchDecoderLogProbabilities(g, logp, _lengths(g, "m"), prog.Sequence(), C, 2, 1, p)
