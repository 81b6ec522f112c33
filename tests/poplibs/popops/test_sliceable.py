"""popops createSliceableTensor: whole columns (the elements of one position of the unsliced
dims) on one tile, spread over the tiles; slicing it gives numpy's results."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops
from poplibs_py.popops import _common
from poplibs_py.poputil import PoplibsError


def _column_tiles(graph, t, dims):
    """For each column of ``t`` (sliced dims first), the set of tiles holding it."""
    others = [d for d in range(t.rank()) if d not in dims]
    tiles = _common.element_tiles(graph, t).reshape(t.shape()).transpose(dims + others)
    tiles = tiles.reshape(-1, int(np.prod([t.dim(d) for d in others], dtype=np.int64)))
    return [set(tiles[:, c].tolist()) for c in range(tiles.shape[1])]


@pytest.mark.parametrize(("shape", "dims", "grain", "used"), [
    ([20, 8, 3], [0], 0, 4), ([20, 8, 3], [1], 0, 4), ([5, 6, 7], [0, 2], 0, 3), ([30, 16], [0], 8, 2),
])
def test_columns_stay_on_one_tile(harness, shape, dims, grain, used):
    h = harness(4)
    t = popops.createSliceableTensor(h.graph, poplar.FLOAT, shape, dims, [1] * len(dims), grain, "s")
    assert t.shape() == shape and t.name.startswith("s")
    # one variable, each column's elements consecutive in it: a tile's columns are one interval of it
    (index,) = {ref.index for ref, _ in t.getVarRegions()}
    var = h.graph.getVariable(index)
    assert all(len(ivs) == 1 for ivs in h.graph.getTileMapping(var) if ivs)
    columns = _column_tiles(h.graph, t, dims)
    assert all(len(c) == 1 for c in columns)
    assert len(set().union(*columns)) == used
    if grain:
        per_tile = [sum(iv.size() for iv in ivs) for ivs in h.graph.getTileMapping(t)]
        assert all(n % (grain * shape[0]) == 0 for n in per_tile)


def test_slicing_a_sliceable_tensor(harness):
    h = harness(4)
    a = np.random.default_rng(3).standard_normal((12, 5, 2)).astype(np.float32)
    t = popops.createSliceableTensor(h.graph, poplar.FLOAT, [12, 5, 2], [0], [1])
    h.write(t, a, "t")
    offsets = h.tensor(np.array([[3], [11], [0], [3]], np.uint32), mapping=0)
    out = popops.multiSlice(h.graph, t, offsets, [0], [1], h.seq)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, a[[3, 11, 0, 3]][:, None])


def test_all_dims_sliced_is_spread_linearly(harness):
    h = harness(4)
    t = popops.createSliceableTensor(h.graph, poplar.INT, [64, 2], [0, 1], [1, 1])
    assert sum(1 for ivs in h.graph.getTileMapping(t) if ivs) == 4


def test_bad_arguments_leave_the_graph_alone(harness):
    h = harness(2)
    before = len(h.graph.freeze().variables)
    with pytest.raises(PoplibsError, match="createSliceableTensor 'x': dim 3"):
        popops.createSliceableTensor(h.graph, poplar.FLOAT, [4, 4], [3], [1], 0, "x")
    with pytest.raises(PoplibsError, match="size 5"):
        popops.createSliceableTensor(h.graph, poplar.FLOAT, [4, 4], [0], [5])
    with pytest.raises(PoplibsError, match="one size each"):
        popops.createSliceableTensor(h.graph, poplar.FLOAT, [4, 4], [0, 1], [1])
    assert len(h.graph.freeze().variables) == before  # no variable was added
