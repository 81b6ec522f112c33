"""popops scatter (XLA's, the one-dimension case) against numpy."""

import numpy as np
import pytest

from poplibs_py import popops
from poplibs_py.poputil import PoplibsError

A = np.arange(1, 10, dtype=np.float32).reshape(3, 3)


def test_poplibs_scatter_rows(harness):
    h = harness(4)
    t = h.tensor(A)
    idx = h.tensor(np.array([[0], [2]], np.uint32))
    upd = h.tensor(np.array([[10, 20, 30], [70, 80, 90]], np.float32))
    popops.scatter(h.graph, t, idx, upd, 1, [1], [0], [0], h.seq)
    (got,) = h.run(t)
    np.testing.assert_array_equal(got.ravel(), [10, 20, 30, 4, 5, 6, 70, 80, 90])


def test_scatter_columns_scalar_indices_and_window_dims_first(harness):
    h = harness(4)
    t = h.tensor(A)
    idx = h.tensor(np.array([2, 0], np.int32))
    upd = np.array([[10, 20], [30, 40], [50, 60]], np.float32)       # window dim 0, scatter dim 1
    popops.scatter(h.graph, t, idx, h.tensor(upd), 1, [0], [1], [1], h.seq)
    (got,) = h.run(t)
    want = A.copy()
    want[:, 2], want[:, 0] = upd[:, 0], upd[:, 1]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_3d_with_short_window_repeats_and_out_of_range(harness, dtype):
    rng = np.random.default_rng(2)
    a = rng.integers(-50, 50, (4, 6, 5)).astype(dtype)
    idx = np.array([[5, 1], [9, 1]], np.uint32)                     # 9: skipped; 1 twice: last wins
    upd = rng.integers(100, 200, (2, 2, 3, 4)).astype(dtype)        # window [3, 4] of dims 0 and 2
    h = harness(6)
    t = h.tensor(a)
    popops.scatter(h.graph, t, h.tensor(idx), h.tensor(upd), 2, [2, 3], [1], [1], h.seq)
    (got,) = h.run(t)
    want = a.copy()
    for (i, j) in np.ndindex(2, 2):
        if idx[i, j] < 6:
            want[:3, idx[i, j], :4] = upd[i, j]
    np.testing.assert_array_equal(got, want)


def test_unsupported_and_bad_arguments(harness):
    h = harness(2)
    t = h.tensor(A, name="op")
    idx = h.tensor(np.zeros((2, 2), np.uint32), name="idx")
    upd = h.tensor(np.zeros((2, 3), np.float32), name="upd")
    with pytest.raises(PoplibsError, match="only one scatter dimension"):
        popops.scatter(h.graph, t, idx, upd, 1, [], [0, 1], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match="'idx' must have size 1 in indexVectorDim"):
        popops.scatter(h.graph, t, idx, upd, 1, [1], [0], [0], h.seq)
    with pytest.raises(PoplibsError, match="must match indices"):
        popops.scatter(h.graph, t, idx.slice(0, 1, 1), h.tensor(np.zeros((3, 3), np.float32)), 1, [1], [0],
                       [0], h.seq)
    with pytest.raises(PoplibsError, match="updateComputation overload"):
        popops.scatter(h.graph, t, idx, upd, 1, [1], [0], [0], h.seq, lambda *a: None)
