"""popops gather (numpy's take along an axis, and XLA's gather) and createGatherInput."""

import numpy as np
import pytest
from xla_reference import gather_ref

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


def test_xla_gather_header_example_and_rows(harness):
    h = harness(3)
    t = h.tensor(A)
    points = popops.gather(h.graph, t, h.tensor(np.array([[1, 1], [2, 1]], np.uint32)), 1, [], [1, 1], [0, 1],
                           [0, 1], h.seq)
    rows = popops.gather(h.graph, t, h.tensor(np.array([0, 2], np.int32)), 1, [1], [1, 3], [0], [0], h.seq)
    assert points.shape() == [2] and rows.shape() == [2, 3]
    got_points, got_rows = h.run(points, rows)
    np.testing.assert_array_equal(got_points, [5, 8])
    np.testing.assert_array_equal(got_rows, [[1, 2, 3], [7, 8, 9]])


@pytest.mark.parametrize(("shape", "idx_shape", "config"), [
    # index vectors [dim 2, dim 0], 2x5x2 slices, nothing collapsed, offset dims interleaved with batch
    ((6, 5, 4), (2, 3, 2), (2, [0, 2, 4], [2, 5, 2], [], [2, 0])),
    # indexVectorDim 0, dim 1 collapsed, offset dims last
    ((4, 7, 3), (2, 5), (0, [1, 2], [3, 1, 2], [1], [1, 2])),
    # scalar indices into dim 1, windows of 2 columns, offset dims first
    ((5, 6), (4,), (1, [0, 1], [5, 2], [], [1])),
    # every dim collapsed: single elements
    ((4, 5, 3), (6, 3), (1, [], [1, 1, 1], [0, 1, 2], [0, 1, 2])),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_xla_gather_matches_reference_with_clamping(harness, shape, idx_shape, config, dtype):
    rng = np.random.default_rng(len(shape) * 10 + len(idx_shape))
    a = rng.integers(-100, 100, shape).astype(dtype)
    idx = rng.integers(-2, max(shape) + 2, idx_shape).astype(np.int32)   # some out of range: clamped
    h = harness(5)
    out = popops.gather(h.graph, h.tensor(a), h.tensor(idx), *config, h.seq)
    want = gather_ref(a, idx, *config)
    assert out.shape() == list(want.shape)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, want)


def test_create_gather_input_for_start_index_map(harness):
    h = harness(4)
    t = popops.createGatherInput(h.graph, poplar.FLOAT, [6, 5, 4], [2, 5, 1], [2, 0], "x")
    assert t.shape() == [6, 5, 4]
    for col in range(5):   # the columns are the positions of dim 1, each whole on one tile
        assert sum(1 for ivs in h.graph.getTileMapping(t.slice(col, col + 1, 1)) if ivs) == 1
    a = np.arange(120, dtype=np.float32).reshape(6, 5, 4)
    h.write(t, a, "x")
    idx = np.array([[3, 1], [0, 5]], np.uint32)
    out = popops.gather(h.graph, t, h.tensor(idx), 1, [1, 2], [2, 5, 1], [2], [2, 0], h.seq)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, gather_ref(a, idx, 1, [1, 2], [2, 5, 1], [2], [2, 0]))


def test_xla_gather_bad_arguments(harness):
    h = harness(2)
    t = h.tensor(A, name="a")
    idx = h.tensor(np.zeros((2, 2), np.uint32), name="i")
    with pytest.raises(PoplibsError, match=r"sliceSizes \[1\] must have one entry per dim"):
        popops.gather(h.graph, t, idx, 1, [], [1], [0, 1], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match=r"sliceSizes \[4, 1\] does not fit"):
        popops.gather(h.graph, t, idx, 1, [1], [4, 1], [1], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match=r"collapsedSliceDims \[0\] must have size 1"):
        popops.gather(h.graph, t, idx, 1, [1], [2, 1], [0], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match=r"hold index vectors of 2 elements .* startIndexMap"):
        popops.gather(h.graph, t, idx, 1, [1], [1, 3], [0], [0], h.seq)
    with pytest.raises(PoplibsError, match=r"offsetDims \[0, 3\] must be increasing, distinct dims in"):
        popops.gather(h.graph, t, idx, 1, [0, 3], [1, 1], [], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match=r"offsetDims \[\] must have one entry per slice dim"):
        popops.gather(h.graph, t, idx, 1, [], [1, 1], [0], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match="indexVectorDim 5 must be in"):
        popops.gather(h.graph, t, idx, 5, [], [1, 1], [0, 1], [0, 1], h.seq)
    with pytest.raises(PoplibsError, match="prog must be a Sequence"):
        popops.gather(h.graph, t, idx, 1, [], [1, 1], [0, 1], [0, 1], None)
    with pytest.raises(PoplibsError, match=r"startIndexMap \[3\] must be distinct dims"):
        popops.createGatherInput(h.graph, poplar.FLOAT, [2, 2], [1, 1], [3])
