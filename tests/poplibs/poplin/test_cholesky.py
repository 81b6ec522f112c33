"""poplin.cholesky / choleskyInPlace against numpy's Cholesky factor, blocked and not, lower and
upper, batched; the products it preplans; its misuse."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poplin.linalg_estimation import choleskyBlockCycles
from poplibs_py.poputil import PoplibsError


def spd(rng, shape):
    m = rng.standard_normal(shape)
    n = shape[-1]
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(np.float32)


def test_blocked_factors_match_numpy(harness):
    h = harness(4)
    poplin.addCodelets(h.graph)
    rng = np.random.default_rng(0)
    a = spd(rng, (2, 10, 10))
    A = poplin.createCholeskyInput(h.graph, poplar.FLOAT, [2, 10, 10], True, "A")
    h.write(A, a)
    L = poplin.cholesky(h.graph, A, True, h.seq, "lower", {"blockSize": 4})
    U = poplin.cholesky(h.graph, A, False, h.seq, "upper", {"blockSize": 3})
    low, up, a_after = h.run(L, U, A)
    ref = np.linalg.cholesky(a.astype(np.float64))
    np.testing.assert_allclose(low, ref, atol=1e-5)
    np.testing.assert_allclose(up, np.swapaxes(ref, 1, 2), atol=1e-5)
    assert np.all(np.triu(low, 1) == 0) and np.all(np.tril(up, -1) == 0)
    np.testing.assert_array_equal(a_after, a)  # cholesky leaves its input alone


@pytest.mark.parametrize("mode", ["native"])
def test_in_place_one_block_and_half(harness):
    h = harness(4)
    poplin.addCodelets(h.graph)
    rng = np.random.default_rng(1)
    a, b = spd(rng, (5, 5)), spd(rng, (3, 4, 4))
    A, B = h.tensor(a), h.tensor(b.astype(np.float16))
    poplin.choleskyInPlace(h.graph, A, True, h.seq)  # one block (the default is 8 rows)
    poplin.choleskyInPlace(h.graph, B, False, h.seq, "half", {"blockSize": 2})
    low, up = h.run(A, B)
    np.testing.assert_allclose(low, np.linalg.cholesky(a.astype(np.float64)), atol=1e-5)
    ref = np.swapaxes(np.linalg.cholesky(b.astype(np.float16).astype(np.float64)), 1, 2)
    np.testing.assert_allclose(up.astype(np.float64), ref, atol=2e-2, rtol=1e-2)
    assert choleskyBlockCycles(8, poplar.FLOAT) == 512 + 102 * 64 + 808 + 102


def test_pre_plan_parameters_are_the_products_run():
    target = poplar.Graph(poplar.IPUModel().createDevice()).getTarget()
    params = poplin.getCholeskyMatMulPrePlanParameters(poplar.FLOAT, [2, 10, 10], True, {"blockSize": 4})
    assert [(p.aShape, p.bShape) for p, _ in params] == [((2, 6, 4), (2, 4, 6)), ((2, 2, 4), (2, 4, 2))]
    assert params[0][1] == {}
    cache = poplin.PlanningCache()
    poplin.preplanMatMuls([(target, p, o) for p, o in params], cache)
    assert cache.size() == 2
    assert poplin.getCholeskyMatMulPrePlanParameters(poplar.FLOAT, [3, 3], False) == []


def test_misuse():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    seq = poplar.program.Sequence()
    with pytest.raises(PoplibsError, match="must be square"):
        poplin.cholesky(graph, graph.addVariable(poplar.FLOAT, [3, 4]), True, seq)
    with pytest.raises(PoplibsError, match="rank of 2 or higher"):
        poplin.createCholeskyInput(graph, poplar.FLOAT, [3], True, "a")
    with pytest.raises(PoplibsError, match="floating-point"):
        poplin.choleskyInPlace(graph, graph.addVariable(poplar.INT, [3, 3]), True, seq)
    with pytest.raises(PoplibsError, match="blockSize must be a positive integer"):
        poplin.cholesky(graph, graph.addVariable(poplar.FLOAT, [3, 3]), True, seq, "c", {"blockSize": 0})
    with pytest.raises(PoplibsError, match="not writeable in place"):
        poplin.choleskyInPlace(graph, graph.addConstant(poplar.FLOAT, [2, 2], 1.0), True, seq)
    with pytest.raises(PoplibsError, match="cholesky: a"):
        poplin.cholesky(graph, np.eye(3), True, seq)
