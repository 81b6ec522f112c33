"""poplin.triangularSolve (every side, triangle and diagonal, blocked), triangularMask and the
solver's tensor creators against numpy; the products it preplans; its misuse."""

import itertools

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poputil import PoplibsError


def reference(a, b, left, lower, unit):
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t[..., np.arange(a.shape[-1]), np.arange(a.shape[-1])] = 1
    t = t.astype(np.float64)
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


@pytest.mark.parametrize("mode", ["native"])
def test_every_form_matches_numpy(harness):
    h = harness(4)
    poplin.addCodelets(h.graph)
    rng = np.random.default_rng(0)
    n, k = 7, 3
    a = (rng.standard_normal((2, n, n)) + 4 * np.eye(n)).astype(np.float32)
    A = poplin.createTriangularSolveInputLHS(h.graph, poplar.FLOAT, poplar.FLOAT, [2, n, n], [2, n, k], True,
                                             "A")
    h.write(A, a)
    cases, outputs = [], []
    for left, lower, unit in itertools.product((True, False), repeat=3):
        b = rng.standard_normal((2, n, k) if left else (2, k, n)).astype(np.float32)
        X = poplin.triangularSolve(h.graph, A, h.tensor(b), left, lower, unit, h.seq, "ts", {"blockSize": 3})
        assert X.shape() == list(b.shape)
        cases.append(reference(a, b, left, lower, unit))
        outputs.append(X)
    for x, ref in zip(h.run(*outputs), cases):
        np.testing.assert_allclose(x, ref, rtol=1e-5, atol=1e-5)


def test_unblocked_solve_and_mask(harness):
    h = harness(4)
    poplin.addCodelets(h.graph)
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((5, 5)) + 4 * np.eye(5)).astype(np.float32)
    b = rng.standard_normal((5, 2)).astype(np.float32)
    B = poplin.createTriangularSolveInputRHS(h.graph, poplar.FLOAT, poplar.FLOAT, [5, 5], [5, 2], True, "B")
    h.write(B, b)
    X = poplin.triangularSolve(h.graph, h.tensor(a), B, True, True, False, h.seq)  # one block
    masks = [poplin.triangularMask(h.graph, h.tensor(a), lower, unit, h.seq)
             for lower, unit in ((True, True), (False, False))]
    x, lower_unit, upper = h.run(X, *masks)
    np.testing.assert_allclose(x, reference(a, b, True, True, False), rtol=1e-5, atol=1e-5)
    expected = np.tril(a)
    np.fill_diagonal(expected, 1)
    np.testing.assert_array_equal(lower_unit, expected)
    np.testing.assert_array_equal(upper, np.triu(a))


def test_pre_plan_parameters_are_the_products_run():
    plan = poplin.getTriangularSolveMatMulPrePlanParameters
    params = plan(poplar.FLOAT, poplar.FLOAT, [2, 7, 7], [2, 3, 7], False, True, {"blockSize": 3})
    assert [(p.aShape, p.bShape) for p, _ in params] == [((2, 3, 3), (2, 3, 4)), ((2, 3, 3), (2, 3, 1))]
    assert poplin.getTriangularSolveMatMulPrePlanParameters(poplar.FLOAT, poplar.FLOAT, [4, 4], [4, 2],
                                                            True, True) == []


def test_misuse():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    seq = poplar.program.Sequence()
    a, b = graph.addVariable(poplar.FLOAT, [2, 4, 4]), graph.addVariable(poplar.FLOAT, [2, 4, 3])
    with pytest.raises(PoplibsError, match="must have A's 4 columns"):
        poplin.triangularSolve(graph, a, b, False, True, False, seq)
    with pytest.raises(PoplibsError, match="batch dimensions"):
        poplin.triangularSolve(graph, a, graph.addVariable(poplar.FLOAT, [3, 4, 3]), True, True, False, seq)
    with pytest.raises(PoplibsError, match="ranks of tensors"):
        poplin.triangularSolve(graph, a, graph.addVariable(poplar.FLOAT, [4, 3]), True, True, False, seq)
    with pytest.raises(PoplibsError, match=r"b '.*' is half"):
        poplin.triangularSolve(graph, a, graph.addVariable(poplar.HALF, [2, 4, 3]), True, True, False, seq)
    with pytest.raises(PoplibsError, match="unrecognised option 'bogus'"):
        poplin.triangularSolve(graph, a, b, True, True, False, seq, "ts", {"bogus": 1})
    with pytest.raises(PoplibsError, match="triangularMask: a"):
        poplin.triangularMask(graph, b, True, False, seq)
    with pytest.raises(PoplibsError, match="createTriangularSolveInputLHS: outputType"):
        poplin.createTriangularSolveInputLHS(graph, poplar.FLOAT, "quad", [4, 4], [4, 1], True, "A")
