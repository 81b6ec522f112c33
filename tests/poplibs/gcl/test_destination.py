"""gcl's ToDestination collectives (the result written into a tensor the caller gives) against
numpy over replicas, in groups, and their errors."""

import numpy as np
import pytest
from test_cross_replica import Replicated

import poplar_py as poplar
from poplibs_py import gcl, poputil
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError

Op = gcl.CollectiveOperator


def destination(h: Replicated, shape: list[int], tile: int) -> poplar.Tensor:
    t = h.graph.addVariable(poplar.FLOAT, shape, f"dest{tile}")
    h.graph.setTileMapping(t, tile)
    return t


@pytest.mark.parametrize("group", [None, gcl.CommGroup(gcl.CommGroupType.CONSECUTIVE, 2)], ids=str)
def test_results_land_in_the_destinations(group):
    h = Replicated(4)
    data = np.random.default_rng(5).standard_normal([4, 3, 5]).astype(np.float32)
    t = h.tensor(data)
    groups = (group or gcl.CommGroup()).groups(4)
    k = len(groups[0])
    grouped = [] if group is None else [group]
    reduced, shard, gathered = destination(h, [3, 5], 1), destination(h, [-(-15 // k)], 2), \
        destination(h, [k, 3, 5], 3)
    gcl.allReduceToDestinationCrossReplica(h.graph, t, reduced, Op.MAX, h.seq, *grouped)
    gcl.reduceScatterToDestinationCrossReplica(h.graph, t, shard, Op.ADD, h.seq, *grouped)
    gcl.allGatherToDestinationCrossReplica(h.graph, t, gathered, h.seq, *grouped, debugContext="gather")
    r_reduced, r_shard, r_gathered = h.run(reduced, shard, gathered)
    for members in groups:
        summed = np.zeros(k * -(-15 // k), np.float32)
        summed[:15] = data[list(members)].sum(0).ravel()
        for p, r in enumerate(members):
            np.testing.assert_array_equal(r_reduced[r], data[list(members)].max(0))
            size = -(-15 // k)
            np.testing.assert_allclose(r_shard[r], summed[p * size:(p + 1) * size], rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(r_gathered[r], data[list(members)])
    for tile, t in ((1, reduced), (2, shard), (3, gathered)):  # the destinations keep their mapping
        assert h.graph.getTileMapping(t)[tile] == [(0, t.numElements())]


def test_one_replica_copies_into_the_destination():
    h = Replicated(1)
    data = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    t = h.tensor(data)
    square, shard = destination(h, [2, 3], 0), destination(h, [6], 1)
    gcl.allReduceToDestinationCrossReplica(h.graph, t, square, Op.SQUARE_ADD, h.seq)
    gcl.reduceScatterToDestinationCrossReplica(h.graph, t, shard, Op.ADD, h.seq)
    r_square, r_shard = h.run(square, shard)
    np.testing.assert_array_equal(r_square[0], data[0] ** 2)
    np.testing.assert_array_equal(r_shard[0], data[0].ravel())


def test_a_wrong_destination_is_named():
    h = Replicated(2)
    t = h.tensor(np.zeros([2, 2, 3], np.float32))
    reduce, scatter = gcl.allReduceToDestinationCrossReplica, gcl.reduceScatterToDestinationCrossReplica
    with pytest.raises(PoplibsArgumentError, match=r"^allReduceToDestinationCrossReplica: destination must "
                                                   r"be a tensor, got list"):
        reduce(h.graph, t, [t], Op.ADD, h.seq)
    with pytest.raises(PoplibsError, match=r"^allReduceToDestinationCrossReplica: destination 'dest0' of "
                                           r"shape \[6\] must have shape \[2, 3\]"):
        reduce(h.graph, t, destination(h, [6], 0), Op.ADD, h.seq)
    with pytest.raises(PoplibsError, match=r"^reduceScatterToDestinationCrossReplica: destination 'dest1' of "
                                           r"shape \[6\] must have 3 elements"):
        scatter(h.graph, t, destination(h, [6], 1), Op.ADD, h.seq)
    with pytest.raises(PoplibsError, match=r"^allGatherToDestinationCrossReplica: .* must have shape "
                                           r"\[2, 2, 3\]"):
        gcl.allGatherToDestinationCrossReplica(h.graph, t, destination(h, [2, 6], 2), h.seq)
    constant = h.graph.addConstant(poplar.FLOAT, [2, 3], np.zeros([2, 3], np.float32), "c")
    poputil.mapTensorLinearly(h.graph, constant)
    with pytest.raises(PoplibsError, match="destination 'c' contains constants or aliased elements"):
        reduce(h.graph, t, constant, Op.ADD, h.seq)
    with pytest.raises(PoplibsError, match="ToDestinationCrossReplica: LOCAL is not a reduction"):
        scatter(h.graph, t, destination(h, [3], 3), Op.LOCAL, h.seq)
