"""popnn.in_ (instance norm), Norms.hpp's parameter helpers and FLOP counts, and
spatialSoftMax2D, against numpy."""

import numpy as np
import pytest

from poplibs_py import poplin, popnn
from poplibs_py.popnn import in_
from poplibs_py.poputil import PoplibsError

EPS = 1e-3


@pytest.fixture
def nn(harness):
    def make(tiles=4):
        h = harness(tiles)
        popnn.addCodelets(h.graph)
        poplin.addCodelets(h.graph)
        return h
    return make


def _instance_norm(x, gamma, beta):
    """Normalised acts, whitened acts, mean and inverse std per (batch, channel)."""
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axes, keepdims=True)
    isd = 1 / np.sqrt(((x - mean) ** 2).mean(axes, keepdims=True) + EPS)
    white = (x - mean) * isd
    shape = [1, -1] + [1] * (x.ndim - 2)
    return white * gamma.reshape(shape) + beta.reshape(shape), white, mean.reshape(-1), isd.reshape(-1)


def test_instance_norm_forward_gradients_and_update(nn):
    h = nn()
    rng = np.random.default_rng(0)
    x = rng.normal(size=[2, 3, 2, 2]).astype(np.float64)
    g = rng.normal(size=x.shape)
    gamma, beta = rng.normal(size=3), rng.normal(size=3)
    tx, tg = h.tensor(x.astype(np.float32)), h.tensor(g.astype(np.float32))
    tgamma, tbeta = popnn.createNormParams(h.graph, tx)
    h.write(tgamma, gamma)
    h.write(tbeta, beta)
    mean, isd = in_.instanceNormStatistics(h.graph, tx, EPS, h.seq, False)
    out, white = in_.instanceNormalise(h.graph, tx, tgamma, tbeta, mean, isd, h.seq)
    gd, bd = in_.instanceNormParamGradients(h.graph, tx, tg, mean, isd, h.seq)  # whitens first
    dx = in_.instanceNormGradients(h.graph, white, tg, isd, tgamma, h.seq)
    dx2 = in_.instanceNormGradients(h.graph, tx, tg, mean, isd, tgamma, h.seq)
    got = h.run(mean, isd, out, white, gd, bd, dx, dx2)
    want_out, want_white, want_mean, want_isd = _instance_norm(x, gamma, beta)
    for arr, want in zip(got[:4], [want_mean, want_isd, want_out, want_white]):
        np.testing.assert_allclose(arr, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[4], (g * want_white).sum((0, 2, 3)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[5], g.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)
    step, flat, want_dx = 1e-5, x.reshape(-1), np.zeros(x.size)
    for i in range(flat.size):
        d = np.zeros_like(flat)
        d[i] = step
        up = np.sum(g * _instance_norm((flat + d).reshape(x.shape), gamma, beta)[0])
        down = np.sum(g * _instance_norm((flat - d).reshape(x.shape), gamma, beta)[0])
        want_dx[i] = (up - down) / (2 * step)
    np.testing.assert_allclose(got[6], want_dx.reshape(x.shape), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got[7], got[6], rtol=1e-4, atol=1e-5)


def test_instance_norm_param_update_and_flops(nn):
    h = nn()
    gamma, beta = h.tensor(np.ones(3, np.float32)), h.tensor(np.zeros(3, np.float32))
    gd, bd = h.tensor(np.arange(3, dtype=np.float32)), h.tensor(np.ones(3, np.float32))
    in_.instanceNormParamUpdate(h.graph, gd, bd, -0.5, gamma, beta, h.seq)
    got_gamma, got_beta = h.run(gamma, beta)
    np.testing.assert_allclose(got_gamma, [1, 0.5, 0])
    np.testing.assert_allclose(got_beta, [-0.5] * 3)
    assert popnn.getNormFwdFlops(3, 30) == 4 * 30 + 15 + 2 * 30 and popnn.getNormFwdFlops(3, 30, False) == 60
    assert popnn.getNormBwdFlops(3, 30) == 8 * 30 + 6 and popnn.getNormWuFlops(3, 30) == 90 + 12
    assert in_.getFwdFlops(3, 10, True) == popnn.getNormFwdFlops(3, 30)
    with pytest.raises(PoplibsError, match="createNormGamma: acts must be"):
        popnn.createNormGamma(h.graph, gamma)
    with pytest.raises(PoplibsError, match="instanceNormGradients: expected"):
        in_.instanceNormGradients(h.graph, gamma, h.seq)


@pytest.mark.parametrize("softmax", [True, False])
def test_spatial_softmax_gives_expected_coordinates(nn, softmax):
    h = nn()
    rng = np.random.default_rng(1)
    fields = rng.normal(size=[3, 3, 4]).astype(np.float32)
    tf = h.tensor(fields)
    coords, temp = popnn.spatialSoftMax2D(h.graph, h.seq, tf, 0.5, not softmax)
    got, got_temp = h.run(coords, temp)
    scaled = fields.reshape(3, -1) / 0.5
    if softmax:
        scaled = np.exp(scaled - scaled.max(1, keepdims=True))
        scaled /= scaled.sum(1, keepdims=True)
    ys, xs = np.meshgrid(np.linspace(-1, 1, 3), np.linspace(-1, 1, 4), indexing="ij")
    want = scaled @ np.stack([ys.ravel(), xs.ravel()], 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got_temp == 0.5
    with pytest.raises(PoplibsError, match="fields must be a FLOAT or HALF tensor of rank 3"):
        popnn.spatialSoftMax2D(h.graph, h.seq, tf[0], 1.0)
