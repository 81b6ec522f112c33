"""popops' ...WithOutput operations whose output overlaps an input: the result goes through a
temporary and equals numpy's on copies of the inputs (poplin's matMul: test_matmul.py)."""

import numpy as np
import pytest

from poplibs_py import popops
from poplibs_py.poputil import PoplibsError


def test_elementwise_outputs_over_shifted_and_transposed_inputs(harness):
    h = harness(4)
    x = np.arange(1, 13, dtype=np.float32)
    X = h.tensor(x)
    popops.addWithOutput(h.graph, X.slice(0, 11), X.slice(1, 12), X.slice(1, 12), h.seq)  # x[1:] += x[:-1]
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    M = h.tensor(m)
    popops.mulWithOutput(h.graph, M, 2.0, M.transpose(), h.seq)  # M.T = 2 M
    s = np.arange(5, dtype=np.int32)
    S = h.tensor(s)
    popops.mapWithOutput(h.graph, popops.expr._1 * popops.expr._2, [S, S[2]], S, h.seq)  # S[2] broadcast
    same = h.tensor(np.arange(6, dtype=np.float32))
    popops.negWithOutput(h.graph, same, same, h.seq)  # element for element: in place
    got_x, got_m, got_s, got_same = h.run(X, M, S, same)
    expected = x.copy()
    expected[1:] = x[:-1] + x[1:]
    np.testing.assert_array_equal(got_x, expected)
    np.testing.assert_array_equal(got_m, (2 * m).T)
    np.testing.assert_array_equal(got_s, s * s[2])
    np.testing.assert_array_equal(got_same, -np.arange(6, dtype=np.float32))


def test_cast_and_reduce_into_their_input(harness):
    h = harness(4)
    r = np.arange(12, dtype=np.int32)
    R = h.tensor(r)
    popops.castWithOutput(h.graph, R, R.reverse(0), h.seq)
    t = np.arange(12, dtype=np.float32).reshape(3, 4)
    T = h.tensor(t)
    popops.reduceWithOutput(h.graph, T, T[0], [0], popops.Operation.ADD, h.seq)
    u = np.arange(12, dtype=np.float32).reshape(3, 4)
    U = h.tensor(u)
    popops.reduceWithOutput(h.graph, U, U[2], [0], popops.ReduceParams(popops.Operation.ADD, True), h.seq)
    got_r, got_t, got_u = h.run(R, T, U)
    np.testing.assert_array_equal(got_r, r[::-1])
    np.testing.assert_array_equal(got_t, np.concatenate([t.sum(0, keepdims=True), t[1:]]))
    np.testing.assert_array_equal(got_u[2], u[2] + u.sum(0))  # update: out += the sum
    np.testing.assert_array_equal(got_u[:2], u[:2])


def test_an_aliased_output_in_a_compute_set_raises(harness):
    h = harness(2)
    X = h.tensor(np.arange(4, dtype=np.float32))
    cs = h.graph.addComputeSet("cs")
    with pytest.raises(PoplibsError, match=r"^x: output 'in0.* overlaps input 'in0.*needs a program"):
        popops.addWithOutput(h.graph, X.slice(0, 3), X.slice(1, 4), X.slice(1, 4), cs, debugName="x")
