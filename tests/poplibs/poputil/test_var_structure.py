"""poputil VarStructure.hpp: groupings detected from contiguity and tile mapping (the layouts
convolutions use), createPartitionableTensor's contiguous partitions, iterateTensorPartitions."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops, poputil
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError


def _graph(tiles=8):
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    device = model.createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    return device, graph


def grouped_nchw(graph, n, c, h, w, group, name="act"):
    """An [N, C, H, W] view of a variable laid out [N, C/group, H, W, group], each group of channels
    of one pixel together in memory, pixels spread over the tiles (a convolution's layout)."""
    var = graph.addVariable(poplar.FLOAT, [n, c // group, h, w, group], name)
    poputil.mapTensorLinearly(graph, var, group, group)
    return var.dimShufflePartial([4], [2]).reshapePartial(1, 3, [c])


def test_innermost_grouping_of_a_row_major_tensor():
    _, graph = _graph()
    t = graph.addVariable(poplar.FLOAT, [4, 6, 16], "t")
    poputil.mapTensorLinearly(graph, t, 16, 16)
    assert poputil.detectInnermostGrouping(graph, t) == 16
    u = graph.addVariable(poplar.FLOAT, [3, 10], "u")
    for i in range(30):
        graph.setTileMapping(u.flatten()[i], i % 8)  # every element on its own tile: no grouping
    assert poputil.detectInnermostGrouping(graph, u) == 1
    assert poputil.detectInnermostGrouping(graph, graph.addVariable(poplar.FLOAT, [0, 4], "e")) == 1
    with pytest.raises(PoplibsError, match="0-rank"):
        poputil.detectInnermostGrouping(graph, t[0][0][0])


def test_grouping_of_transposed_layouts():
    _, graph = _graph()
    t = graph.addVariable(poplar.FLOAT, [8, 12], "t")
    poputil.mapTensorLinearly(graph, t, 12, 12)
    assert poputil.detectInnermostGrouping(graph, t.transpose()) == 1  # columns are strided
    # 4 contiguous elements that live on different tiles two by two: the tile mapping limits it
    v = graph.addVariable(poplar.FLOAT, [6, 4], "v")
    graph.setTileMapping(v, 0)
    for r in range(6):
        graph.setTileMapping(v[r].slice(2, 4), 1)
    assert poputil.detectInnermostGrouping(graph, v) == 2


@pytest.mark.parametrize("group", [4, 8, 16])
def test_dim_groupings_find_grouped_channels(group):
    _, graph = _graph()
    act = grouped_nchw(graph, 2, 32, 3, 5, group)
    assert act.shape() == [2, 32, 3, 5]
    groupings = poputil.detectDimGroupings(graph, act)
    assert groupings[0] == (1, group)
    assert poputil.detectInnermostGrouping(graph, act.dimRoll(1, 3)) == group


def test_dim_groupings_nested_and_none():
    _, graph = _graph()
    t = graph.addVariable(poplar.FLOAT, [4, 6, 16], "t")
    poputil.mapTensorLinearly(graph, t, 16, 16)
    # 384 floats over 8 tiles, 48 a tile: 16 contiguous innermost, then 3 rows of dim 1 together
    assert poputil.detectDimGroupings(graph, t) == [(2, 16), (1, 3)]
    u = graph.addVariable(poplar.FLOAT, [5, 7], "u")
    for i in range(35):
        graph.setTileMapping(u.flatten()[i], i % 8)
    assert poputil.detectDimGroupings(graph, u) == []
    with pytest.raises(PoplibsError, match="0-rank"):
        poputil.detectDimGroupings(graph, u[0][0])


@pytest.mark.parametrize("shape,parts", [([10, 20], [3, 5]), ([12, 8], [4, 2]), ([7], [3]),
                                         ([5, 6, 7], [2, 3, 4]), ([4, 4], [8, 1])])
def test_partitionable_tensor_partitions_are_contiguous(shape, parts):
    _, graph = _graph()
    t = poputil.createPartitionableTensor(graph, poplar.FLOAT, shape, parts, "pt")
    assert t.shape() == shape and not t.containsAliases()
    seen = []

    def check(index, piece):
        seen.append(list(index))
        if piece.numElements():
            assert piece.isContiguous(), (index, piece.shape())

    poputil.iterateTensorPartitions(t, parts, check)
    assert len(seen) == int(np.prod(parts))
    assert seen[1][0] == (1 if parts[0] > 1 else 0)  # the first index changes fastest
    # fewest variables: 2 to the number of dimensions that do not divide evenly
    uneven = sum(1 for s, p in zip(shape, parts) if s % -(-s // p))
    assert len({ref.index for ref, _ in t.flatten().getVarRegions()}) == 2 ** uneven


def test_partitionable_tensor_holds_data(harness):
    h = harness(4)
    t = poputil.createPartitionableTensor(h.graph, poplar.INT, [6, 9], [4, 2], "pt")
    poputil.mapTensorLinearly(h.graph, t, 1, 1)
    x = np.arange(54, dtype=np.int32).reshape(6, 9)
    h.write(t, x)
    out = popops.add(h.graph, t, t, h.seq)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, 2 * x)


def test_partition_errors():
    _, graph = _graph()
    with pytest.raises(PoplibsError, match="nPartitions"):
        poputil.createPartitionableTensor(graph, poplar.FLOAT, [4, 4], [2])
    with pytest.raises(PoplibsError, match=r"nPartitions\[1\] is 0"):
        poputil.createPartitionableTensor(graph, poplar.FLOAT, [4, 4], [2, 0])
    assert poputil.createPartitionableTensor(graph, poplar.FLOAT, [0, 4], [2, 2]).shape() == [0, 4]
    t = graph.addVariable(poplar.FLOAT, [4, 4], "t")
    with pytest.raises(PoplibsError, match="rank 2"):
        poputil.iterateTensorPartitions(t, [2], lambda i, s: None)
    with pytest.raises(PoplibsArgumentError, match="callable"):
        poputil.iterateTensorPartitions(t, [2, 2], None)
    with pytest.raises(PoplibsArgumentError, match="shape"):
        poputil.createPartitionableTensor(graph, poplar.FLOAT, [4, -1], [2, 2])
