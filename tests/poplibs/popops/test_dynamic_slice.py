"""popops dynamicSlice/dynamicUpdate and multiSlice/multiUpdate/multiUpdateAdd against numpy."""

import numpy as np
import pytest
from support import spread

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError

# PopLibs' DynamicSliceTest data: t[i][j][k] = 100 (i+1) + 10 (j+1) + (k+1)
SMALL = np.array([[[100 * i + 10 * j + k for k in (1, 2)] for j in range(1, 5)] for i in range(1, 4)],
                 dtype=np.float32)


def _indices(shape, offsets, dims, sizes):
    """np.ix_ indices of the window: wrapping past the end, an offset >= the size acting as 0."""
    axes = [np.arange(n) for n in shape]
    for d, o, s in zip(dims, offsets, sizes):
        o = o if o < shape[d] else 0
        axes[d] = (o + np.arange(s)) % shape[d]
    return np.ix_(*axes)


def ref_slice(a, offsets, dims, sizes):
    return a[_indices(a.shape, offsets, dims, sizes)]


def ref_update(a, s, offsets, dims, sizes):
    a = a.copy()
    a[_indices(a.shape, offsets, dims, sizes)] = s
    return a




@pytest.mark.parametrize(("dims", "sizes", "offsets"), [
    ([0], [2], [2]),          # wraps to row 0
    ([1], [3], [1]),
    ([2], [1], [1]),
    ([0, 1], [2, 2], [1, 3]),
    ([1, 2], [4, 2], [2, 1]),  # whole dims, rotated
    ([2, 0], [1, 3], [0, 5]),  # offset past the end acts as 0
])
def test_small_3x4x2(harness, dims, sizes, offsets):
    h = harness(4)
    t = h.tensor(SMALL)
    off = h.tensor(np.array(offsets, np.uint32))
    out = popops.dynamicSlice(h.graph, t, off, dims, sizes, h.seq)
    update = -np.arange(np.prod(out.shape()), dtype=np.float32).reshape(out.shape()) - 1
    s = h.tensor(update)
    popops.dynamicUpdate(h.graph, t, s, off, dims, sizes, h.seq)
    got, updated = h.run(out, t)
    np.testing.assert_array_equal(got, ref_slice(SMALL, offsets, dims, sizes))
    np.testing.assert_array_equal(updated, ref_update(SMALL, update, offsets, dims, sizes))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint32, np.bool_])
def test_odd_shapes_spread_over_tiles(harness, dtype):
    rng = np.random.default_rng(1)
    shape = (7, 5, 3)
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    h = harness(6)
    t = h.tensor(a, mapping=spread)
    cases = [([0], [4], [5]), ([1], [5], [3]), ([2, 0], [2, 7], [2, 6])]
    outs = []
    for k, (dims, sizes, offsets) in enumerate(cases):
        off = h.tensor(np.array(offsets, np.uint32), name=f"off{k}", mapping=k)
        outs.append(popops.dynamicSlice(h.graph, t, off, dims, sizes, h.seq))
    results = h.run(*outs)
    for (dims, sizes, offsets), got in zip(cases, results):
        np.testing.assert_array_equal(got, ref_slice(a, offsets, dims, sizes))
    assert len({tile for tile, iv in enumerate(h.graph.getTileMapping(outs[0])) if iv}) > 1


def test_offsets_change_at_run_time(harness):
    h = harness(3)
    a = np.arange(20, dtype=np.int32).reshape(10, 2)
    t = h.tensor(a)
    off = h.tensor(np.array([0], np.uint32))
    out = popops.dynamicSlice(h.graph, t, off, [0], [3], h.seq)
    h.run(out)
    for offset in (0, 8, 9, 10, 4000000000):
        h.engine.writeTensor("in1", np.array([offset], np.uint32))
        h.engine.run()
        np.testing.assert_array_equal(h.engine.readTensor("out0"), ref_slice(a, [offset], [0], [3]))


def test_update_spread_tensor(harness):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((9, 4, 5)).astype(np.float32)
    upd = rng.standard_normal((9, 3, 2)).astype(np.float32)
    h = harness(5)
    t = h.tensor(a, mapping=spread)
    s = h.tensor(upd)
    off = h.tensor(np.array([2, 4], np.uint32))
    popops.dynamicUpdate(h.graph, t, s, off, [1, 2], [3, 2], h.seq)
    (got,) = h.run(t)
    np.testing.assert_array_equal(got, ref_update(a, upd, [2, 4], [1, 2], [3, 2]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_multi_slice(harness, dtype):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((11, 3, 4)) * 8).astype(dtype)
    idx = np.array([3, 0, 10, 3, 11, 7, 4294967295], np.uint32)
    h = harness(6)
    t = h.tensor(a, mapping=spread)
    offsets = h.tensor(idx.reshape(-1, 1))
    out0 = popops.multiSlice(h.graph, t, offsets, [0], [1], h.seq)
    out2 = popops.multiSlice(h.graph, t, offsets, 2, None, h.seq, popops.SlicePlan(), {})
    got0, got2 = h.run(out0, out2)
    assert out0.shape() == [7, 1, 3, 4] and out2.shape() == [7, 11, 3, 1]
    expect0 = np.stack([a[i:i + 1] if i < 11 else np.zeros_like(a[:1]) for i in idx])
    expect2 = np.stack([a[:, :, i:i + 1] if i < 4 else np.zeros_like(a[:, :, :1]) for i in idx])
    np.testing.assert_array_equal(got0, expect0)
    np.testing.assert_array_equal(got2, expect2)


def test_multi_update_last_repeat_wins_and_skips_out_of_range(harness):
    a = np.arange(24, dtype=np.float32).reshape(6, 4)
    idx = np.array([1, 5, 1, 6, 100], np.uint32)
    upd = -np.arange(1, 21, dtype=np.float32).reshape(5, 1, 4)
    h = harness(4)
    t = h.tensor(a, mapping=spread)
    s = h.tensor(upd)
    popops.multiUpdate(h.graph, t, s, h.tensor(idx.reshape(-1, 1)), [0], [1], h.seq)
    (got,) = h.run(t)
    expect = a.copy()
    for i, row in zip(idx, upd[:, 0]):
        if i < 6:
            expect[i] = row
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize(("dtype", "scale"), [(np.float32, 0.5), (np.float16, -2.0), (np.int32, 3)])
def test_multi_update_add_accumulates_repeats(harness, dtype, scale):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((5, 7)) * 4).astype(dtype)
    idx = np.array([2, 2, 0, 9, 2, 4], np.uint32)
    upd = (rng.standard_normal((6, 5, 1)) * 4).astype(dtype)
    h = harness(4)
    t = h.tensor(a, mapping=spread)
    s = h.tensor(upd)
    popops.multiUpdateAdd(h.graph, t, s, h.tensor(idx.reshape(-1, 1)), scale, [1], [1], h.seq)
    (got,) = h.run(t)
    expect = a.astype(np.float64)
    for i, col in zip(idx, upd[:, :, 0].astype(np.float64)):
        if i < 7:
            expect[:, i] += scale * col
    tol = 1e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), expect, rtol=tol, atol=tol)


def test_multi_update_add_scale_tensor(harness):
    h = harness(2)
    t = h.tensor(np.zeros((3, 2), np.float16))
    s = h.tensor(np.ones((2, 1, 2), np.float16))
    scale = h.tensor(np.array(0.25, np.float32))
    popops.multiUpdateAdd(h.graph, t, s, h.tensor(np.array([[1], [1]], np.uint32)), scale, [0], [1], h.seq)
    (got,) = h.run(t)
    np.testing.assert_array_equal(got, [[0, 0], [0.5, 0.5], [0, 0]])


def test_misuse_raises(harness):
    h = harness(2)
    g = h.graph
    t = h.tensor(np.zeros((4, 3), np.float32))
    off = h.tensor(np.zeros(1, np.uint32))
    with pytest.raises(PoplibsError, match="UNSIGNED_INT"):
        popops.dynamicSlice(g, t, h.tensor(np.zeros(1, np.int32)), [0], [1], h.seq)
    with pytest.raises(PoplibsError, match="shape"):
        popops.dynamicSlice(g, t, h.tensor(np.zeros(2, np.uint32)), [0], [1], h.seq)
    with pytest.raises(PoplibsError, match="differ in length"):
        popops.dynamicSlice(g, t, off, [0], [1, 1], h.seq)
    with pytest.raises(PoplibsError, match="larger"):
        popops.dynamicSlice(g, t, off, [1], [4], h.seq)
    with pytest.raises(PoplibsError, match="out of range"):
        popops.dynamicSlice(g, t, off, [2], [1], h.seq)
    with pytest.raises(PoplibsError, match="expected"):
        popops.dynamicUpdate(g, t, h.tensor(np.zeros((2, 3), np.float32)), off, [0], [1], h.seq)
    with pytest.raises(PoplibsError, match="parallel"):
        popops.dynamicUpdate(g, t.broadcast(2, 0), h.tensor(np.zeros((1, 3), np.float32)), off, [0], [1],
                             h.seq)
    offsets = h.tensor(np.zeros((2, 1), np.uint32))
    with pytest.raises(PoplibsError, match="numLookups"):
        popops.multiSlice(g, t, h.tensor(np.zeros(2, np.uint32)), [0], [1], h.seq)
    with pytest.raises(PoplibsError, match="size 1"):
        popops.multiSlice(g, t, offsets, [0], [2], h.seq)
    with pytest.raises(PoplibsError, match="parallel"):
        popops.multiUpdate(g, t.broadcast(2, 0), h.tensor(np.zeros((2, 1, 3), np.float32)), offsets, [0],
                           [1], h.seq)
    with pytest.raises(PoplibsError, match="scale"):
        popops.multiUpdateAdd(g, t, h.tensor(np.zeros((2, 1, 3), np.float32)), offsets,
                              h.tensor(np.zeros(1, np.int32)), [0], [1], h.seq)


def test_types_other_than_unsigned_are_rejected_before_building(harness):
    h = harness(1)
    t = h.tensor(np.zeros(3, np.float32))
    with pytest.raises(PoplibsError):
        popops.dynamicSlice(h.graph, t, h.graph.addConstant(poplar.FLOAT, [1], 0.0), [0], [1], h.seq)
