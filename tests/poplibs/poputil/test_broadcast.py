"""poputil Broadcast.hpp (broadcastToMatch's overloads against numpy's broadcasting, on the device),
createBroadcastOperand (mapped where the full tensor uses it) and TensorUseTracker."""

import itertools

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops, poputil
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError, TensorUseTracker


def _graph(tiles=8, ipus=1):
    model = poplar.IPUModel()
    model.tilesPerIPU, model.numIPUs = tiles, ipus
    device = model.createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    return device, graph


def tiles_of(graph, t):
    """The tile of each element of flattened t."""
    out = np.full(t.numElements(), -1)
    for tile, ivs in enumerate(graph.getTileMapping(t)):
        for iv in ivs:
            out[iv.begin():iv.end()] = tile
    return out


SHAPES = [([3, 1], [1, 4]), ([5], [2, 5]), ([2, 1, 4], [3, 1]), ([1], [2, 3]), ([2, 3], [2, 3]), ([], [4])]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_broadcast_to_match_pairs_as_numpy(harness, sa, sb):
    h = harness(2)
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    x, y = rng.integers(0, 100, sa).astype(np.int32), rng.integers(0, 100, sb).astype(np.int32)
    a, b = h.tensor(x), h.tensor(y)
    assert poputil.canBroadcastToMatch(a, b)
    ba, bb = poputil.broadcastToMatch(a, b)
    want_a, want_b = np.broadcast_arrays(x, y)
    assert ba.shape() == list(want_a.shape) == bb.shape()
    outs = [h.graph.clone(v) for v in (ba, bb)]
    for v, o in zip((ba, bb), outs):
        h.seq.add(prog.Copy(v, o))
    got_a, got_b = h.run(*outs)
    np.testing.assert_array_equal(got_a, want_a)
    np.testing.assert_array_equal(got_b, want_b)


def test_broadcast_to_match_three_and_shape(harness):
    h = harness(2)
    x, y, z = (np.arange(n, dtype=np.float32).reshape(s) for n, s in ((3, [3, 1, 1]), (4, [4, 1]), (5, [5])))
    a, b, c = h.tensor(x), h.tensor(y), h.tensor(z)
    ba, bb, bc = poputil.broadcastToMatch(a, b, c)
    assert ba.shape() == bb.shape() == bc.shape() == [3, 4, 5]
    to = poputil.broadcastToMatch(b, [2, 4, 5])
    assert to.shape() == [2, 4, 5]
    out = popops.add(h.graph, popops.add(h.graph, ba, bb, h.seq), bc, h.seq)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, x + y + z)


def test_broadcast_errors_and_can_broadcast():
    _, g = _graph()
    a, b = g.addVariable(poplar.FLOAT, [2, 3], "a"), g.addVariable(poplar.FLOAT, [4, 3], "b")
    assert not poputil.canBroadcastToMatch(a, b)
    for sa, sb in itertools.product([[2, 3], [1, 3], [3], [2, 1], [], [4, 2, 3], [0, 3]], repeat=2):
        x, y = g.addVariable(poplar.FLOAT, sa), g.addVariable(poplar.FLOAT, sb)
        try:
            np.broadcast_shapes(tuple(sa), tuple(sb))
            ok = True
        except ValueError:
            ok = False
        assert poputil.canBroadcastToMatch(x, y) == ok, (sa, sb)
    with pytest.raises(PoplibsError, match="match dimension 0"):
        poputil.broadcastToMatch(a, b)
    with pytest.raises(PoplibsError, match="dimension 1 is 3"):
        poputil.broadcastToMatch(a, [2, 4])
    with pytest.raises(PoplibsError, match="more dimensions"):
        poputil.broadcastToMatch(a, [3])
    with pytest.raises(PoplibsArgumentError, match="b must be a tensor"):
        poputil.broadcastToMatch(a, [2, 3], "c")
    ea, eb = poputil.expandToMatchRanks(a, g.addVariable(poplar.FLOAT, [5, 1, 2, 3]))
    assert ea.shape() == [1, 1, 2, 3] and eb.shape() == [5, 1, 2, 3]


def test_create_broadcast_operand_is_where_it_is_used():
    _, g = _graph(8)
    full = g.addVariable(poplar.FLOAT, [4, 16], "full")
    for col in range(16):  # columns 2k, 2k+1 on tile k
        g.setTileMapping(full.slice(col, col + 1, 1), col // 2)
    op = poputil.createBroadcastOperand(g, full, poplar.FLOAT, 1, False, "bias")
    assert op.shape() == [16] and op.name == "bias"
    np.testing.assert_array_equal(tiles_of(g, op), np.arange(16) // 2)
    rows = poputil.createBroadcastOperand(g, full, poplar.HALF, 0)
    assert rows.elementType() == poplar.HALF and rows.shape() == [4]
    # every row is on every tile: the 4 elements shared between tiles that use them
    assert set(tiles_of(g, rows).tolist()) <= set(range(8))


def test_create_broadcast_operand_grain_and_dither():
    _, g = _graph(8)
    full = g.addVariable(poplar.FLOAT, [3, 32], "full")
    poputil.mapTensorLinearly(g, full, 32, 32)  # one row a tile, tiles 0-2: every tile uses all columns
    op = poputil.createBroadcastOperand(g, full, poplar.FLOAT, 1)
    t = tiles_of(g, op)
    assert set(t.tolist()) == {0, 1, 2}  # only tiles that use it, in grains of the data path width
    assert all(len(set(t[i:i + 2].tolist())) == 1 for i in range(0, 32, 2))
    d = poputil.createBroadcastOperand(g, full, poplar.FLOAT, 1, True)
    shift = poputil.chooseMappingOffset(8, [3, 32])
    np.testing.assert_array_equal(tiles_of(g, d), (t + shift) % 8)
    empty = g.addVariable(poplar.FLOAT, [0, 5], "e")
    assert tiles_of(g, poputil.createBroadcastOperand(g, empty, poplar.FLOAT, 1)).min() >= 0  # linearly
    with pytest.raises(PoplibsArgumentError, match="dim 2"):
        poputil.createBroadcastOperand(g, full, poplar.FLOAT, 2)


def test_create_broadcast_operand_in_an_operation(harness):
    h = harness(8)
    x = np.arange(6 * 10, dtype=np.float32).reshape(6, 10)
    a = h.tensor(x)
    bias = poputil.createBroadcastOperand(h.graph, a, poplar.FLOAT, 1, debugContext="bias")
    b = np.linspace(-1, 1, 10).astype(np.float32)
    h.write(bias, b)
    out = popops.add(h.graph, a, bias, h.seq)
    (got,) = h.run(out)
    np.testing.assert_allclose(got, x + b)


def test_tracker_maps_by_use():
    _, g = _graph(4)
    v = g.addVariable(poplar.FLOAT, [40], "v")
    tracker = TensorUseTracker(4)
    assert tracker.empty()
    tracker.add(g, 0, v.slice(0, 10))
    tracker.add(g, 1, v.slice(10, 20))
    tracker.add(g, 2, v.slice(20, 40))
    tracker.add(g, 3, v.slice(20, 40))   # shared by tiles 2 and 3
    tracker.add(g, 3, g.addConstant(poplar.FLOAT, [2], 1.0, "c"))  # constants are not tracked
    tracker.mapTensorsByUse(g, 1, 0)
    t = tiles_of(g, v)
    assert (t[:10] == 0).all() and (t[10:20] == 1).all()
    assert set(t[20:40].tolist()) == {2, 3} and (t[20:30] == 2).all()


def test_tracker_extend_halo_and_merge():
    _, g = _graph(4)
    v = g.addVariable(poplar.FLOAT, [30], "v")
    tracker = TensorUseTracker(4)
    tracker.add(g, 0, v.slice(0, 12))
    tracker.add(g, 1, v.slice(10, 22))   # 10-12 is a halo of tiles 0 and 1
    copy = TensorUseTracker(tracker)
    tracker.mapTensorsByUse(g, 1, 0, True, TensorUseTracker.MappingMethod.OptimizeHaloRegions)
    t = tiles_of(g, v)  # the halo goes with the region before it; the unused end with the last region
    assert (t[:12] == 0).all() and (t[12:] == 1).all()
    w = g.addVariable(poplar.FLOAT, [30], "w")
    other = TensorUseTracker(4)
    other.add(g, 2, w.slice(0, 30))
    copy.add(other)
    copy.mapTensorsByUse(g, 1, 0, False, TensorUseTracker.MappingMethod.ConstrainMappingToUsedTiles)
    assert (tiles_of(g, w) == 2).all()
    with pytest.raises(PoplibsError, match="different number of tiles"):
        copy.add(TensorUseTracker(3))


def test_tracker_start_tile_and_errors():
    _, g = _graph(4)
    v = g.addVariable(poplar.FLOAT, [8], "v")
    tracker = TensorUseTracker(4, 1)
    tracker.add(g, 0, v.slice(0, 4))
    tracker.add(g, 3, v.slice(4, 8))
    tracker.mapTensorsByUse(g, 1, 0)
    np.testing.assert_array_equal(tiles_of(g, v), [1] * 4 + [0] * 4)  # tracker tile k is tile (k + 1) % 4
    with pytest.raises(PoplibsArgumentError, match="tile 4"):
        tracker.add(g, 4, v)
    with pytest.raises(PoplibsArgumentError, match="mappingMethod"):
        tracker.resolve(g, 1, 0, False, "halo")
    with pytest.raises(PoplibsArgumentError, match="takes"):
        tracker.add(g, v)
