"""poputil TileMapping.hpp: every calcLinearTileMapping and mapTensorLinearlyWithOffset overload
against a reference of PopLibs' algorithm, offsets and descending order, the new offset,
chooseMappingOffset, getTileImbalance, the tile index transforms, dimIsSplitOverTiles/IPUs."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops, poputil
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError


def _graph(tiles=16, ipus=1):
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = ipus, tiles
    device = model.createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    return device, graph


def reference_partitions(n, num_tiles, min_elems, grain):
    """PopLibs' splitRegions({{0, n}}, grain, numTiles, minElementsPerTile), written out."""
    num_grains = -(-n // grain)
    if num_grains == 0:
        return []
    per = -(-num_grains // num_tiles)
    if min_elems:
        min_grains = -(-min_elems // grain)
        per = max(per, -(-num_grains // max(1, num_grains // min_grains)))
    parts = -(-num_grains // per)
    return [(k * num_grains // parts * grain, min((k + 1) * num_grains // parts * grain, n))
            for k in range(parts)]


def reference_mapping(n, num_tiles, min_elems, grain, offset=0, ascending=True):
    mapping = [[] for _ in range(num_tiles)]
    for k, (b, e) in enumerate(reference_partitions(n, num_tiles, min_elems, grain)):
        tile = (offset + k) % num_tiles if ascending else (num_tiles - 1 - offset - k) % num_tiles
        mapping[tile].append((b, e))
    return mapping


def as_pairs(mapping):
    return [[(iv.begin(), iv.end()) for iv in ivs] for ivs in mapping]


@pytest.mark.parametrize("n,min_elems,grain", [(1000, 0, 1), (1000, 64, 8), (37, 4, 3), (5, 128, 2),
                                               (0, 1, 1), (4096, 32, 2)])
@pytest.mark.parametrize("offset,ascending", [(0, True), (5, True), (15, True), (0, False), (7, False),
                                              (40, True)])
def test_calc_linear_tile_mapping_shape_overload(n, min_elems, grain, offset, ascending):
    _, graph = _graph(16)
    want = reference_mapping(n, 16, min_elems, grain, offset, ascending)
    assert as_pairs(poputil.calcLinearTileMapping(graph, [n], min_elems, grain, offset, ascending)) == want
    assert as_pairs(poputil.calcLinearTileMapping(graph.getTarget(), [n], min_elems, grain, offset=offset,
                                                  ascendingOrder=ascending)) == want


@pytest.mark.parametrize("type_,shape", [(poplar.FLOAT, [10, 32]), (poplar.HALF, [3, 700]),
                                         (poplar.INT, [5])])
def test_calc_linear_tile_mapping_type_defaults(type_, shape):
    _, graph = _graph(16)
    target = graph.getTarget()
    t = graph.addVariable(type_, shape, "t")
    n = int(np.prod(shape))
    min_elems, grain = -(-128 // target.getTypeSize(type_)), target.getVectorWidth(type_)
    for offset, asc in [(0, True), (3, True), (2, False)]:
        want = reference_mapping(n, 16, min_elems, grain, offset, asc)
        assert as_pairs(poputil.calcLinearTileMapping(graph, t, offset, asc)) == want
        assert as_pairs(poputil.calcLinearTileMapping(target, shape, type_, offset, asc)) == want


def test_calc_linear_tile_mapping_and_new_offset():
    _, graph = _graph(8)
    # 4 partitions of 32 floats (128 bytes each): on 8 tiles, from offset 2 the next is 6, from 6 it is 2
    t = graph.addVariable(poplar.FLOAT, [128], "t")
    mapping, new = poputil.calcLinearTileMappingAndNewOffset(graph, t, 2)
    assert new == 6 and [i for i, ivs in enumerate(mapping) if ivs] == [2, 3, 4, 5]
    mapping, new = poputil.calcLinearTileMappingAndNewOffset(graph, t, 6)
    assert new == 2 and [i for i, ivs in enumerate(mapping) if ivs] == [0, 1, 6, 7]
    assert as_pairs(mapping)[6] == [(0, 32)] and as_pairs(mapping)[1] == [(96, 128)]
    with pytest.raises(PoplibsError, match="offset 8"):
        poputil.calcLinearTileMappingAndNewOffset(graph, t, 8)


def test_map_tensor_linearly_with_offset_both_overloads(harness):
    h = harness(8)
    data = np.arange(600, dtype=np.float32).reshape(20, 30)
    a = h.tensor(data, mapping=lambda g, t: poputil.mapTensorLinearlyWithOffset(g, t, 3))
    b = h.tensor(data, mapping=lambda g, t: poputil.mapTensorLinearlyWithOffset(g, t, 2, False))
    c = h.tensor(data, mapping=lambda g, t: poputil.mapTensorLinearlyWithOffset(g, t, 64, 4, 5))
    d = h.tensor(data, mapping=lambda g, t: poputil.mapTensorLinearlyWithOffset(g, t, 64, 4, 5, False))
    assert as_pairs(h.graph.getTileMapping(a)) == reference_mapping(600, 8, 32, 2, 3, True)
    assert as_pairs(h.graph.getTileMapping(b)) == reference_mapping(600, 8, 32, 2, 2, False)
    assert as_pairs(h.graph.getTileMapping(c)) == reference_mapping(600, 8, 64, 4, 5, True)
    assert as_pairs(h.graph.getTileMapping(d)) == reference_mapping(600, 8, 64, 4, 5, False)
    outs = [popops.add(h.graph, x, y, h.seq) for x, y in ((a, b), (c, d))]
    got = h.run(*outs)
    for g in got:
        np.testing.assert_array_equal(g, 2 * data)


def test_map_tensor_linearly_matches_offset_zero():
    _, graph = _graph(16)
    t = graph.addVariable(poplar.HALF, [999], "t")
    u = graph.addVariable(poplar.HALF, [999], "u")
    poputil.mapTensorLinearly(graph, t)
    poputil.mapTensorLinearlyWithOffset(graph, u)
    assert graph.getTileMapping(t) == graph.getTileMapping(u)
    poputil.mapTensorLinearly(graph, t, 10, 5)
    poputil.mapTensorLinearlyWithOffset(graph, u, 10, 5, 0)
    assert graph.getTileMapping(t) == graph.getTileMapping(u)


def test_linear_mapping_argument_errors():
    _, graph = _graph(4)
    t = graph.addVariable(poplar.FLOAT, [40], "t")
    with pytest.raises(PoplibsArgumentError, match="minElementsPerTile is needed"):
        poputil.calcLinearTileMapping(graph, [40])
    with pytest.raises(PoplibsArgumentError, match="grainSize must be at least 1"):
        poputil.calcLinearTileMapping(graph, [40], 1, 0)
    with pytest.raises(PoplibsArgumentError, match="offset"):
        poputil.calcLinearTileMapping(graph, t, -1)
    with pytest.raises(PoplibsArgumentError, match="ascendingOrder must be a bool"):
        poputil.calcLinearTileMapping(graph, t, 0, 1)
    with pytest.raises(PoplibsArgumentError, match="too many"):
        poputil.calcLinearTileMapping(graph, t, 0, True, 4)
    with pytest.raises(PoplibsArgumentError, match="Graph or Target"):
        poputil.calcLinearTileMapping("graph", t)
    with pytest.raises(PoplibsArgumentError, match="tensor or a shape"):
        poputil.calcLinearTileMapping(graph, 40)
    with pytest.raises(PoplibsArgumentError, match="offset is needed"):
        poputil.mapTensorLinearlyWithOffset(graph, t, minElementsPerTile=4, grainSize=2)
    with pytest.raises(PoplibsArgumentError, match="offset given both"):
        poputil.mapTensorLinearlyWithOffset(graph, t, 3, offset=2)
    with pytest.raises(PoplibsArgumentError, match="both minElementsPerTile and grainSize"):
        poputil.mapTensorLinearly(graph, t, 4)
    other = poplar.Graph(graph.getTarget()).addVariable(poplar.FLOAT, [4], "x")
    with pytest.raises(PoplibsArgumentError, match="another graph"):
        poputil.mapTensorLinearlyWithOffset(graph, other, 1)


def test_choose_mapping_offset():
    # boost's classic hash_combine over the dimensions, from the golden ratio seed, modulo the tiles
    def reference(num_tiles, shape, seed=0x9E3779B9):
        h = seed
        for d in shape:
            h ^= (d + 0x9E3779B9 + (h << 6) + (h >> 2)) & (2**64 - 1)
        return h % num_tiles

    for shape in ([10, 32], [1], [], [4, 5, 6, 7], [2**40, 3]):
        assert poputil.chooseMappingOffset(1472, shape) == reference(1472, shape)
        assert poputil.chooseMappingOffset(16, shape, 7) == reference(16, shape, 7)
        assert 0 <= poputil.chooseMappingOffset(13, shape) < 13
    offsets = {poputil.chooseMappingOffset(1472, [n, 64]) for n in range(1, 40)}
    assert len(offsets) > 30  # different shapes land on different tiles
    with pytest.raises(PoplibsError, match="zero tiles"):
        poputil.chooseMappingOffset(0, [3])
    with pytest.raises(PoplibsArgumentError, match="shape"):
        poputil.chooseMappingOffset(4, [2.5])


def test_get_tile_imbalance():
    assert poputil.getTileImbalance([[(0, 10)], [(10, 12)]]) == 4  # 10 against a balanced 6
    assert poputil.getTileImbalance([[(0, 6)], [(6, 12)]]) == 0
    assert poputil.getTileImbalance([[(0, 10)], [(10, 12)]], 8) == 2
    assert poputil.getTileImbalance([[(0, 10)], [(10, 12)]], grainSize=16) == 0
    assert poputil.getTileImbalance([]) == 0
    _, graph = _graph(4)
    t = graph.addVariable(poplar.FLOAT, [100], "t")
    graph.setTileMapping(t.slice(0, 70), 0)
    graph.setTileMapping(t.slice(70, 100), 3)
    assert poputil.getTileImbalance(graph, t) == 70 - 25
    assert poputil.getTileImbalance(graph, t, 0, 64) == 6
    poputil.mapTensorLinearly(graph, t, 1, 1)
    assert poputil.getTileImbalance(graph, t) == 0
    with pytest.raises(PoplibsArgumentError, match="tile 1"):
        poputil.getTileImbalance([[(0, 1)], ["x"]])
    with pytest.raises(PoplibsArgumentError, match="needs the tensor"):
        poputil.getTileImbalance(graph)


@pytest.mark.parametrize("ascending", [True, False])
def test_tile_index_transforms_are_inverse(ascending):
    n = 12
    for offset in range(n):
        for tile in range(n):
            k = poputil.transformTileIndex(tile, n, offset, ascending)
            assert poputil.invTransformTileIndex(k, n, offset, ascending) == tile
        # PopLibs' descending order starts at numTiles - offset (its code, not numTiles - 1 - offset)
        first = offset if ascending else (n - offset) % n
        assert poputil.transformTileIndex(first, n, offset, ascending) == 0
    # the k-th partition of an ascending offset mapping is on invTransformTileIndex(k)
    _, graph = _graph(n)
    mapping = poputil.calcLinearTileMapping(graph, [n * 10], 10, 1, 5, ascending)
    start = 5 if ascending else 6  # (2n - 6 - k) % n == (n - 1 - 5 - k) % n
    assert [mapping[poputil.invTransformTileIndex(k, n, start, ascending)][0].begin() for k in range(n)] == \
        [10 * k for k in range(n)]
    with pytest.raises(PoplibsArgumentError, match="numTiles"):
        poputil.transformTileIndex(0, 0, 0, True)


def test_dim_is_split_over_tiles():
    _, graph = _graph(4)
    t = graph.addVariable(poplar.FLOAT, [4, 6], "t")
    for row in range(4):
        graph.setTileMapping(t[row], row)  # each row on its own tile: dim 0 is split, dim 1 is not
    assert poputil.dimIsSplitOverTiles(graph, t, 0)
    assert not poputil.dimIsSplitOverTiles(graph, t, 1)
    for col in range(6):
        graph.setTileMapping(t.slice(col, col + 1, 1), col % 4)
    assert not poputil.dimIsSplitOverTiles(graph, t, 0)
    assert poputil.dimIsSplitOverTiles(graph, t, 1)
    assert not poputil.dimIsSplitOverTiles(graph, graph.addVariable(poplar.FLOAT, [0, 3], "e"), 0)
    with pytest.raises(PoplibsArgumentError, match="dimension 2 is out of range"):
        poputil.dimIsSplitOverTiles(graph, t, 2)


def test_dim_is_split_over_ipus():
    _, graph = _graph(4, ipus=2)
    t = graph.addVariable(poplar.FLOAT, [4, 6], "t")
    graph.setTileMapping(t.slice(0, 2), 1)    # rows 0-1 on IPU 0
    graph.setTileMapping(t.slice(2, 4), 6)    # rows 2-3 on IPU 1
    assert poputil.dimIsSplitOverIPUs(graph, t, 0)
    assert not poputil.dimIsSplitOverIPUs(graph, t, 1)
    graph.setTileMapping(t[0].slice(0, 3), 0)  # tiles 0 and 1: still one IPU
    assert not poputil.dimIsSplitOverIPUs(graph, t, 1)
    graph.setTileMapping(t[3].slice(0, 1), 0)  # row 3 now spans both IPUs
    assert poputil.dimIsSplitOverIPUs(graph, t, 1)
    _, single = _graph(4)
    u = single.addVariable(poplar.FLOAT, [4, 6], "u")
    poputil.mapTensorLinearly(single, u, 1, 1)
    assert not poputil.dimIsSplitOverIPUs(single, u, 0)


def test_offset_mapping_runs_on_device(harness):
    h = harness(8)
    x = np.arange(64, dtype=np.int32)
    t = h.tensor(x, mapping=lambda g, t: poputil.mapTensorLinearlyWithOffset(g, t, 8, 1, 6, False))
    assert [i for i, ivs in enumerate(h.graph.getTileMapping(t)) if ivs] == list(range(8))
    out = popops.mul(h.graph, t, t, h.seq)
    h.seq.add(prog.Sequence())
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, x * x)
