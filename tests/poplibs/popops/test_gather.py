"""popops gather (numpy's take along an axis) and createGatherInput."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError

A = np.arange(1, 10, dtype=np.float32).reshape(3, 3)


@pytest.mark.parametrize(("idx", "axis", "want"), [
    ([0, 2], 0, [1, 2, 3, 7, 8, 9]), ([0, 2], 1, [1, 3, 4, 6, 7, 9]),
    ([0, 2, 2, 1], 0, [1, 2, 3, 7, 8, 9, 7, 8, 9, 4, 5, 6]),
])
def test_poplibs_gather_simple_cases(harness, idx, axis, want):
    h = harness(4)
    t = h.tensor(A)
    out = popops.gather(h.graph, t, h.tensor(np.array(idx, np.uint32)), axis, h.seq, popops.GatherParams())
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, np.take(A, idx, axis))
    np.testing.assert_array_equal(got.ravel(), want)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_gather_matches_take(harness, axis, dtype):
    rng = np.random.default_rng(axis)
    a = (rng.standard_normal((6, 5, 4)) * 10).astype(dtype)
    idx = rng.integers(0, a.shape[axis], (2, 3)).astype(np.uint32)
    h = harness(6)
    t = popops.createGatherInput(h.graph, poplar.types.asType(a.dtype), list(a.shape), axis)
    h.write(t, a, "a")
    out = popops.gather(h.graph, t, h.tensor(idx), axis, h.seq)
    assert out.shape() == list(np.take(a, idx, axis).shape)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, np.take(a, idx, axis))


def test_out_of_range_and_int_indices_give_zeros(harness):
    h = harness(2)
    idx = np.array([2, -1, 7, 0], np.int32)
    out = popops.gather(h.graph, h.tensor(A), h.tensor(idx), 0, h.seq)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, [A[2], [0, 0, 0], [0, 0, 0], A[0]])


def test_create_gather_input_keeps_columns_whole(harness):
    h = harness(4)
    t = popops.createGatherInput(h.graph, poplar.FLOAT, [10, 8], 0)
    for col in range(8):
        assert sum(1 for ivs in h.graph.getTileMapping(t.slice(col, col + 1, 1))
                   if ivs) == 1
    assert sum(1 for ivs in h.graph.getTileMapping(t) if ivs) == 4


def test_bad_arguments(harness):
    h = harness(2)
    t = h.tensor(A, name="a")
    with pytest.raises(PoplibsError, match="axis 2 must be a dimension"):
        popops.gather(h.graph, t, h.tensor(np.zeros(2, np.uint32)), 2, h.seq)
    with pytest.raises(PoplibsError, match="indices 'f' must be UNSIGNED_INT or INT"):
        popops.gather(h.graph, t, h.tensor(np.zeros(2, np.float32), name="f"), 0, h.seq)
    with pytest.raises(PoplibsError, match="axis 3 must be a dimension"):
        popops.createGatherInput(h.graph, poplar.FLOAT, [2, 2], 3)
