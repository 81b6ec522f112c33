"""popops scatter (XLA's) against numpy: the one-dimension case, then the general semantics."""

import numpy as np
import pytest
from xla_reference import scatter_ref

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


def _scatter(h, a, idx, upd, *config, fn=None):
    t = h.tensor(a)
    extra = (fn,) if fn is not None else ()
    popops.scatter(h.graph, t, h.tensor(idx), h.tensor(upd), *config, *extra, h.seq)
    (got,) = h.run(t)
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_two_index_dims_with_window_and_skipped_windows(harness, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(-9, 9, (5, 6, 4)).astype(dtype)
    idx = np.array([[0, 2], [4, 1], [2, 3], [1, 0], [-1, 0], [5, 0]], np.int32)  # 3 + 2 > 4, -1, 5: skipped
    upd = rng.integers(10, 99, (6, 6, 2)).astype(dtype)               # windows [1, 6, 2]
    config = (1, [1, 2], [0], [0, 2])
    got = _scatter(harness(4), a, idx, upd, *config)
    np.testing.assert_array_equal(got, scatter_ref(a, idx, upd, *config))


@pytest.mark.parametrize(("shape", "idx_shape", "upd_shape", "config"), [
    # indexVectorDim 0, index vectors [dim 2, dim 0] (reversed), window dims first in updates
    ((4, 3, 5), (2, 3), (2, 3, 3), (0, [0, 1], [0], [2, 0])),
    # every operand dim indexed, windows of 2x2 elements, batch of shape [2, 2]
    ((5, 6), (2, 2, 2), (2, 2, 2, 2), (2, [2, 3], [], [0, 1])),
    # windows covering the other dims whole, one index per window
    ((3, 4, 2), (3,), (3, 4, 2), (1, [1, 2], [0], [0])),
    # empty index vectors: every window starts at the origin, the last wins
    ((3, 4), (2, 0), (2, 2, 2), (1, [1, 2], [], [])),
    # batch dims after the window dims in updates, scalar indices
    ((6, 5), (2, 2), (3, 2, 2), (2, [0], [1], [1])),
])
def test_scatter_matches_xla_reference(harness, shape, idx_shape, upd_shape, config):
    rng = np.random.default_rng(len(shape) + len(idx_shape))
    a = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(-1, max(shape) + 1, idx_shape).astype(np.int32)
    upd = rng.standard_normal(upd_shape).astype(np.float32)
    got = _scatter(harness(5), a, idx, upd, *config)
    np.testing.assert_array_equal(got, scatter_ref(a, idx, upd, *config))


def test_scatter_add_accumulates_repeats(harness):
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    idx = np.array([[1, 2], [1, 2], [4, 0], [1, 3], [0, 5]], np.uint32)    # [0, 5]: window 2 wide, skipped
    upd = np.arange(20, dtype=np.float32).reshape(5, 2, 2)
    config = (1, [1, 2], [], [0, 1])
    got = _scatter(harness(4), a, idx, upd[:, :1, :], *config, fn=popops.add)
    np.testing.assert_array_equal(got, scatter_ref(a, idx, upd[:, :1, :], *config, combine=np.add))


@pytest.mark.parametrize(("fn", "combine"), [(popops.max, np.maximum), (popops.sub, np.subtract)])
def test_scatter_update_computation_runs_windows_in_order(harness, fn, combine):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 20, (4, 3, 2)).astype(np.float32)
    idx = np.array([2, 0, 2, 7, 2], np.uint32)                               # 7 skipped, 2 three times
    upd = rng.integers(0, 20, (5, 3, 2)).astype(np.float32)
    config = (1, [1, 2], [0], [0])
    got = _scatter(harness(3), a, idx, upd, *config,
                   fn=lambda g, cur, new, prog: fn(g, cur, new, prog))
    np.testing.assert_array_equal(got, scatter_ref(a, idx, upd, *config, combine=combine))


def test_update_computation_sees_window_shaped_tensors(harness):
    h = harness(2)
    seen = []

    def fn(graph, cur, new, prog):
        seen.append((cur.shape(), new.shape()))
        return new

    t = h.tensor(np.zeros((4, 5), np.float32))
    popops.scatter(h.graph, t, h.tensor(np.zeros((2, 1), np.uint32)), h.tensor(np.ones((2, 3), np.float32)),
                   1, [1], [0], [0], fn, h.seq)
    assert seen == [([1, 3], [1, 3])]


def test_bad_arguments(harness):
    h = harness(2)
    t = h.tensor(A, name="op")
    idx = h.tensor(np.zeros((2, 2), np.uint32), name="idx")
    upd = h.tensor(np.zeros((2, 3), np.float32), name="upd")
    with pytest.raises(PoplibsError, match=r"'idx' \[2, 2\] hold index vectors of 2 elements"):
        popops.scatter(h.graph, t, idx, upd, 1, [1], [0], [0], h.seq)
    with pytest.raises(PoplibsError, match="must match indices"):
        popops.scatter(h.graph, t, idx.slice(0, 1, 1), h.tensor(np.zeros((3, 3), np.float32)), 1, [1], [0],
                       [0], h.seq)
    with pytest.raises(PoplibsError, match=r"updateWindowDims .* and insertWindowDims .* one entry per dim"):
        popops.scatter(h.graph, t, idx, upd, 1, [1], [], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match=r"scatterDimsToOperandDims \[0, 0\] must be distinct"):
        popops.scatter(h.graph, t, idx, upd, 1, [1], [0], [0, 0], h.seq)
    with pytest.raises(PoplibsError, match=r"updateWindowDims \[1, 0\] must be increasing"):
        popops.scatter(h.graph, t, idx, upd, 1, [1, 0], [], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match="indexVectorDim 3 must be in"):
        popops.scatter(h.graph, t, idx, upd, 3, [1], [0], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match=r"the update window .* does not fit"):
        popops.scatter(h.graph, t, idx.slice(0, 1, 1), h.tensor(np.zeros((2, 4), np.float32)), 1, [1], [0],
                       [0], h.seq)
    with pytest.raises(PoplibsError, match="updates 'u' is int"):
        popops.scatter(h.graph, t, idx, h.tensor(np.zeros((2,), np.int32), name="u"), 1, [], [0, 1],
                       [0, 1], h.seq)
    with pytest.raises(PoplibsError, match="prog must be a Sequence"):
        popops.scatter(h.graph, t, idx, upd, 1, [], [0, 1], [0, 1])
    with pytest.raises(PoplibsError, match="updateComputation must return a tensor of the window's shape"):
        popops.scatter(h.graph, t, idx, h.tensor(np.zeros((2,), np.float32)), 1, [], [0, 1], [0, 1],
                       lambda *a: None, h.seq)
