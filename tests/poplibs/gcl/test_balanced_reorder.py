"""gcl.CollectiveBalancedReorder and its host rearrangement against a numpy model of the balanced
layout, a reduce-scatter and all-gather through it on replicas, and its errors."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import InvalidTileMappingError
from poplibs_py import gcl, popops
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError

#: the reference tensor's flat intervals and their tiles: uneven, out of order, one tile empty
MAPPING = [((0, 5), 3), ((5, 12), 0), ((12, 13), 5), ((13, 17), 3), ((17, 27), 6)]
SHAPE = [3, 9]


def graph_with_reference(replicas: int) -> tuple[poplar.Device, poplar.Graph, poplar.Tensor]:
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = replicas, 8
    device = model.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    w = graph.addVariable(poplar.FLOAT, SHAPE, "w")
    for (a, b), tile in MAPPING:
        graph.setTileMapping(w.flatten().slice(a, b), tile)
    return device, graph, w


def balanced(shards: int) -> tuple[np.ndarray, int, dict[int, int]]:
    """numpy's model: the gathered index of each reference element, the slice length, and each
    tile's share of a slice. Each tile's elements in tensor order, cut in ``shards`` parts of
    ceil(n / shards); a slice is its part of every tile, tile after tile."""
    per_tile: dict[int, list[int]] = {}
    for (a, b), tile in sorted(MAPPING, key=lambda m: m[1]):
        per_tile.setdefault(tile, []).extend(range(a, b))
    share = {tile: -(-len(e) // shards) for tile, e in sorted(per_tile.items())}
    total = sum(share.values())
    gathered = np.zeros(27, np.int64)
    offset = 0
    for tile, elements in sorted(per_tile.items()):
        for j, e in enumerate(sorted(elements)):
            gathered[e] = (j // share[tile]) * total + offset + j % share[tile]
        offset += share[tile]
    return gathered, total, share


@pytest.mark.parametrize("shards", [2, 4])
def test_layout_and_host_rearrangement_match_numpy(shards):
    _, graph, w = graph_with_reference(4)
    cbr = gcl.CollectiveBalancedReorder(graph, w, shards, "w")
    gathered, total, share = balanced(shards)
    host = cbr.getHostRearrangement()
    assert (host.getReplicationFactor(), host.totalElementsPerReplica) == (shards, total)
    assert cbr.getNumRearrangedTensorElems() == host.getNumRearrangedTensorElems() == shards * total
    assert cbr.getReferenceShape() == SHAPE
    # a replica slice has the tile's share on each tile, tile after tile; so has each row of the
    # collectives tensor
    mapping = graph.getTileMapping(cbr.createReplicaSlice(poplar.HALF))
    assert {t: sum(b - a for a, b in iv) for t, iv in enumerate(mapping) if iv} == share
    collectives = cbr.createCollectivesTensor(poplar.FLOAT, "c")
    assert collectives.shape() == [shards, total]
    for r in range(shards):
        assert graph.getTileMapping(collectives[r]) == mapping
    # host: reference order to gathered order and back, bytes of any element size, padding kept
    data = np.arange(27, dtype=np.int16).reshape(SHAPE) + 1
    out = np.full(shards * total, -1, np.int16)
    assert host.rearrangeForCollective(data, out, 2) is out
    expected = np.full(shards * total, -1, np.int16)
    expected[gathered] = data.ravel()
    np.testing.assert_array_equal(out, expected)
    back = host.undoRearrangeForCollective(out, np.zeros(SHAPE, np.int16), 2)
    np.testing.assert_array_equal(back, data)
    # a host rearrangement rebuilt from its fields (as a serialised executable does) is the same
    copy = gcl.CollectiveBalancedHostRearrangement(shards, total, host.getGatheredToRefSlices())
    np.testing.assert_array_equal(copy.rearrangeForCollective(data, np.full_like(out, -1), 2), expected)


def test_reduce_scatter_and_all_gather_through_the_reorder_on_replicas():
    """Each replica's shard of the summed tensor, balanced over the tiles, and the tensor
    rebuilt from the gathered shards."""
    replicas = 4
    device, graph, w = graph_with_reference(replicas)
    popops.addCodelets(graph)
    cbr = gcl.CollectiveBalancedReorder(graph, w, replicas)
    seq = prog.Sequence()
    collectives = cbr.createCollectivesTensor(poplar.FLOAT, "c")
    popops.zero(graph, collectives, seq)
    seq.add(prog.Copy(w, cbr.undoRearrangeForCollective(collectives)))
    shard = gcl.reduceScatterCrossReplica(graph, collectives, gcl.CollectiveOperator.ADD, seq)
    # the shard is laid out as a replica slice: the collective moved nothing between tiles
    assert graph.getTileMapping(shard) == graph.getTileMapping(cbr.createReplicaSlice(poplar.FLOAT))
    whole = graph.clone(w, "whole")
    seq.add(prog.Copy(cbr.undoRearrangeForCollective(gcl.allGatherCrossReplica(graph, shard, seq)), whole))
    view = graph.addVariable(poplar.FLOAT, [cbr.getNumRearrangedTensorElems()], "view")
    graph.setTileMapping(view, 1)
    seq.add(prog.Copy(cbr.rearrangeForCollective(w), view))
    graph.createHostWrite("w", w)
    for name, t in (("shard", shard), ("whole", whole), ("view", view)):
        graph.createHostRead(name, t)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    data = np.random.default_rng(3).standard_normal([replicas, *SHAPE]).astype(np.float32)
    for r in range(replicas):
        engine.writeTensor("w", data[r], replicaIndex=r)
    engine.run()
    gathered, total, _ = balanced(replicas)
    host = cbr.getHostRearrangement()
    summed = host.rearrangeForCollective(data.sum(0), np.zeros(replicas * total, np.float32), 4)
    for r in range(replicas):
        np.testing.assert_allclose(engine.readTensor("shard", replicaIndex=r),
                                   summed[r * total:(r + 1) * total], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(engine.readTensor("whole", replicaIndex=r), data.sum(0),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(engine.readTensor("view", replicaIndex=r)[gathered], data[r].ravel())


def test_errors_name_the_argument():
    _, graph, w = graph_with_reference(2)
    with pytest.raises(PoplibsArgumentError, match="CollectiveBalancedReorder: graph must be a poplar Graph"):
        gcl.CollectiveBalancedReorder(None, w, 2)
    with pytest.raises(PoplibsArgumentError, match="CollectiveBalancedReorder: tensor must be a tensor"):
        gcl.CollectiveBalancedReorder(graph, np.zeros(3), 2)
    for bad in (0, 2.0, "2"):
        with pytest.raises(PoplibsArgumentError, match="replicationFactor must be a positive integer"):
            gcl.CollectiveBalancedReorder(graph, w, bad)
    with pytest.raises(InvalidTileMappingError, match="Reorder: tensor 'u' is not completely mapped"):
        gcl.CollectiveBalancedReorder(graph, graph.addVariable(poplar.FLOAT, [4], "u"), 2)
    cbr = gcl.CollectiveBalancedReorder(graph, w, 2)
    with pytest.raises(PoplibsArgumentError, match="createReplicaSlice: type must be a poplar element type"):
        cbr.createReplicaSlice("float33")
    with pytest.raises(PoplibsError, match="undoRearrangeForCollective: tensor 'w' has 27 elements, needs"):
        cbr.undoRearrangeForCollective(w)
    with pytest.raises(PoplibsArgumentError, match="rearrangeForCollective: tensor must be a tensor"):
        cbr.rearrangeForCollective([w])
    host = cbr.getHostRearrangement()
    data, out = np.zeros(27, np.float32), np.zeros(30, np.float32)
    with pytest.raises(PoplibsArgumentError, match="elemByteSize must be a positive integer"):
        host.rearrangeForCollective(data, out, 0)
    with pytest.raises(PoplibsArgumentError, match="out holds 27 elements of 4 bytes, needs 30"):
        host.rearrangeForCollective(data, data.copy(), 4)
    with pytest.raises(PoplibsArgumentError, match="in must be a C-contiguous numpy array, got list"):
        host.undoRearrangeForCollective([0.0] * 30, data, 4)
    out.flags.writeable = False
    with pytest.raises(PoplibsArgumentError, match="out is a read-only array"):
        host.rearrangeForCollective(data, out, 4)
    with pytest.raises(PoplibsArgumentError, match="totalElementsPerReplica must be a non-negative integer"):
        gcl.CollectiveBalancedHostRearrangement(2, -1)
    with pytest.raises(PoplibsArgumentError, match="gatheredToRefSlices must be intervals"):
        gcl.CollectiveBalancedHostRearrangement(2, 3, [5])
