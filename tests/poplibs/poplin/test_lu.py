"""poplin.experimental.LUFactorization (no pivoting) against numpy's Doolittle elimination, for
square, wide and tall matrices, float and half; its misuse."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poplin.linalg_estimation import luBlockCycles
from poplibs_py.poputil import PoplibsError


def doolittle(a):
    """L [m, m] unit lower and U [m, n] upper with L U = a, by elimination without pivoting."""
    m, n = a.shape
    u, low = a.astype(np.float64).copy(), np.eye(m)
    for j in range(min(m, n)):
        low[j + 1:, j] = u[j + 1:, j] / u[j, j]
        u[j + 1:] -= np.outer(low[j + 1:, j], u[j])
    return low, np.triu(u)


def matrix(rng, m, n, dtype=np.float32):
    a = rng.standard_normal((m, n))
    e = min(m, n)
    a[:e, :e] += 5 * np.eye(e)  # diagonally dominant: elimination without pivoting is stable
    return a.astype(dtype)


def factor_and_check(h, shapes):
    poplin.addCodelets(h.graph)
    rng = np.random.default_rng(2)
    inputs = [matrix(rng, m, n) for m, n in shapes]
    lu = poplin.experimental.LUFactorization
    results = h.run(*(t for a in inputs for t in lu(h.graph, h.tensor(a), h.seq, "lu")))
    for i, a in enumerate(inputs):
        low, up = results[2 * i], results[2 * i + 1]
        ref_low, ref_up = doolittle(a)
        assert low.shape == ref_low.shape and up.shape == ref_up.shape and low.dtype == np.float32
        np.testing.assert_allclose(low, ref_low, atol=1e-5)
        np.testing.assert_allclose(up, ref_up, atol=1e-5)


def test_one_step_matches_doolittle(harness):
    factor_and_check(harness(4), [(3, 3), (4, 2)])


@pytest.mark.parametrize("mode", ["native"])
def test_blocked_matches_doolittle(harness):
    factor_and_check(harness(4), [(10, 10), (9, 13), (13, 7), (1, 4)])


@pytest.mark.parametrize("mode", ["native"])
def test_half_input_is_factored_in_float(harness):
    h = harness(4)
    poplin.addCodelets(h.graph)
    a = matrix(np.random.default_rng(3), 5, 5, np.float16)
    low, up = h.run(*poplin.experimental.LUFactorization(h.graph, h.tensor(a), h.seq))
    ref_low, ref_up = doolittle(a.astype(np.float32))
    np.testing.assert_allclose(low, ref_low, atol=1e-5)
    np.testing.assert_allclose(up, ref_up, atol=1e-5)
    assert luBlockCycles(1) == 10


def test_misuse():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    seq = poplar.program.Sequence()
    with pytest.raises(PoplibsError, match="non-empty matrix"):
        poplin.experimental.LUFactorization(graph, graph.addVariable(poplar.FLOAT, [2, 3, 3]), seq)
    with pytest.raises(PoplibsError, match="floating-point"):
        poplin.experimental.LUFactorization(graph, graph.addVariable(poplar.INT, [3, 3]), seq)
    with pytest.raises(PoplibsError, match="LUFactorization: input"):
        poplin.experimental.LUFactorization(graph, None, seq)
