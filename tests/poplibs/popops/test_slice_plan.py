"""popops embedding plans, the tensors made for slicing, multiUpdateMax and the grouped
multi-slice family, against numpy."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.popops import _common
from poplibs_py.poputil import PoplibsError


def _tiles(graph, t):
    return _common.element_tiles(graph, t).reshape(t.shape())


def test_plan_lays_out_the_matrix_its_slices_and_indices(harness):
    h = harness(4)
    plan = popops.embedding.plan(h.graph, poplar.FLOAT, 10, 8, [3], {"usedForUpdate": "false"})
    assert plan == popops.embedding.plan(h.graph, poplar.FLOAT, 10, 8, [3], {"usedForUpdate": False})
    assert plan != popops.SlicePlan() and popops.SlicePlan() < plan and "numEntries=10" in str(plan)
    t = popops.createSliceableTensor(h.graph, poplar.FLOAT, [10, 8], [0], [1], plan, {}, "t")
    np.testing.assert_array_equal(_tiles(h.graph, t), np.repeat([[0, 0, 1, 1, 2, 2, 3, 3]], 10, 0))
    s = popops.createSliceTensor(h.graph, poplar.FLOAT, [10, 8], [0], [1], 3, plan, {}, "s")
    assert s.shape() == [3, 1, 8]
    np.testing.assert_array_equal(_tiles(h.graph, s)[:, 0], np.repeat([[0, 0, 1, 1, 2, 2, 3, 3]], 3, 0))
    idx = popops.createIndicesTensor(h.graph, [0], 3, plan, {}, "idx")
    assert idx.shape() == [3, 1] and idx.elementType() == poplar.UNSIGNED_INT
    assert _tiles(h.graph, idx).ravel().tolist() == [0, 1, 2]

    a = np.random.default_rng(1).standard_normal((10, 8)).astype(np.float32)
    h.write(t, a)
    h.write(idx, np.array([[7], [2], [7]]))
    out = popops.multiSlice(h.graph, t, idx, [0], [1], h.seq, plan, {})
    assert _tiles(h.graph, out)[:, 0].tolist() == _tiles(h.graph, s)[:, 0].tolist()
    # a slice tensor for t, by introspection, and multiUpdateMax on a copy of t
    like = popops.createSliceTensor(h.graph, t, [0], [1], 3, "like")
    np.testing.assert_array_equal(_tiles(h.graph, like), _tiles(h.graph, s))
    u = h.graph.clone(t, "u")
    h.seq.add(poplar.program.Copy(t, u))
    upd = np.random.default_rng(2).standard_normal((3, 1, 8)).astype(np.float32)
    h.write(like, upd)
    popops.multiUpdateMax(h.graph, u, like, idx, [0], [1], h.seq, plan, {})
    got_slice, got_max = h.run(out, u)
    np.testing.assert_array_equal(got_slice, a[[7, 2, 7]][:, None])
    want = a.copy()
    for i, r in enumerate([7, 2, 7]):
        want[r] = np.maximum(want[r], upd[i, 0])
    np.testing.assert_array_equal(got_max, want)


def test_grouped_lookups_and_updates(harness):
    h = harness(4)
    groups, entries, width, lookups = 2, 6, 4, 3
    plan = popops.embedding.plan(h.graph, poplar.FLOAT, groups, entries, width, [lookups], {})
    rng = np.random.default_rng(5)
    a = rng.standard_normal((groups, entries, width)).astype(np.float32)
    s = rng.standard_normal((groups, lookups, 1, width)).astype(np.float32)
    offs = np.array([[[1], [5], [1]], [[0], [0], [9]]], np.uint32)  # 9: out of range
    idx = h.write(popops.createGroupedIndicesTensor(h.graph, groups, [0], lookups, plan, {}), offs)
    ts = []
    for k in range(4):
        t = popops.createGroupedSliceableTensor(h.graph, poplar.FLOAT, groups, [entries, width], [0], [1],
                                                plan, {}, f"t{k}")
        ts.append(h.write(t, a))
    assert _tiles(h.graph, ts[0])[:, 0].tolist() == [[0, 0, 1, 1], [2, 2, 3, 3]]
    sub = h.write(popops.createGroupedSliceTensor(h.graph, poplar.FLOAT, groups, [entries, width], [0], [1],
                                                  lookups, plan, {}), s)
    assert sub.shape() == [groups, lookups, 1, width]
    out = popops.groupedMultiSlice(h.graph, ts[0], idx, [0], [1], h.seq, plan, {})
    popops.groupedMultiUpdate(h.graph, ts[1], sub, idx, [0], [1], h.seq, plan, {})
    popops.groupedMultiUpdateAdd(h.graph, ts[2], sub, idx, 0.5, [0], [1], h.seq, plan, {})
    popops.groupedMultiUpdateMax(h.graph, ts[3], sub, idx, [0], [1], h.seq, plan, {})
    got = h.run(out, *ts[1:])
    want_slice = np.zeros((groups, lookups, 1, width), np.float32)
    want = [a.copy() for _ in range(3)]
    for g in range(groups):
        for i, r in enumerate(offs[g, :, 0]):
            if r < entries:
                want_slice[g, i, 0] = a[g, r]
                want[0][g, r] = s[g, i, 0]
                want[1][g, r] += np.float32(0.5) * s[g, i, 0]
                want[2][g, r] = np.maximum(want[2][g, r], s[g, i, 0])
    np.testing.assert_array_equal(got[0], want_slice)
    for g, w in zip(got[1:], want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_sliceable_tensor_from_a_slice_is_mapped_as_the_slice():
    graph = poplar.Graph(_device(4))
    s = graph.addVariable(poplar.HALF, [2, 3, 4], "s")
    for k in range(4):
        graph.setTileMapping(s[:, :, k], k)
    t = popops.createSliceableTensorFromSlice(graph, s, [0, 2], [3, 2], "t")
    assert t.shape() == [6, 3, 8]
    tiles = _tiles(graph, t)
    for i in range(3):
        for j in range(2):
            np.testing.assert_array_equal(tiles[2 * i:2 * i + 2, :, 4 * j:4 * j + 4], _tiles(graph, s))


def _device(tiles):
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    return model.createDevice()


def test_bad_plans_and_arguments():
    graph = poplar.Graph(_device(4))
    with pytest.raises(PoplibsError, match="usedForSlice and usedForUpdate"):
        popops.embedding.plan(graph, poplar.FLOAT, 4, 4, [1],
                              {"usedForSlice": "false", "usedForUpdate": "false"})
    with pytest.raises(PoplibsError, match="operationForUpdate"):
        popops.embedding.plan(graph, poplar.FLOAT, 4, 4, [1], {"operationForUpdate": "sub"})
    with pytest.raises(PoplibsError, match="numEntries"):
        popops.embedding.plan(graph, poplar.FLOAT, -1, 4, [1], {})
    plan = popops.embedding.plan(graph, poplar.FLOAT, 4, 4, [1], {})
    with pytest.raises(PoplibsError, match="does not fit the plan"):
        popops.createSliceableTensor(graph, poplar.FLOAT, [5, 4], [0], [1], plan, {})
    with pytest.raises(PoplibsError, match="plan is for float"):
        popops.createSliceTensor(graph, poplar.HALF, [4, 4], [0], [1], 2, plan, {})
    with pytest.raises(PoplibsError, match="needs a plan"):
        popops.createGroupedSliceableTensor(graph, poplar.FLOAT, 1, [4, 4], [0], [1], popops.SlicePlan(), {})
    with pytest.raises(PoplibsError, match="groupSize 2"):
        popops.createGroupedIndicesTensor(graph, 2, [0], 3, plan, {})
    t = popops.createSliceableTensor(graph, poplar.FLOAT, [4, 4], [0], [1], plan, {})
    idx = popops.createIndicesTensor(graph, [0], 2, plan, {})
    with pytest.raises(PoplibsError, match="update tensor"):
        popops.multiUpdateMax(graph, t, t, idx, [0], [1], poplar.program.Sequence(), plan, {})
