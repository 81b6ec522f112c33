"""gcl's collectives given lists of tensors (GCL's multi-tensor overloads): one collective for
all, a result for each, against numpy over replicas in groups; and their errors."""

import numpy as np
import pytest
from test_cross_replica import Replicated

import poplar_py as poplar
from poplibs_py import gcl
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError

Op = gcl.CollectiveOperator
SHAPES = [[2, 3], [5]]


def shards(values: np.ndarray, k: int) -> list[np.ndarray]:
    """The flattened values cut in k chunks of ceil(n / k), zero-padded."""
    size = -(-values.size // k)
    padded = np.zeros(k * size, values.dtype)
    padded[:values.size] = values.ravel()
    return [padded[p * size:(p + 1) * size] for p in range(k)]


@pytest.mark.parametrize("replicas,group", [(2, None), (4, gcl.CommGroup(gcl.CommGroupType.CONSECUTIVE, 2)),
                                            (4, gcl.CommGroup(gcl.CommGroupType.ORTHOGONAL, 4))], ids=str)
def test_lists_of_tensors_match_numpy(replicas, group):
    h = Replicated(replicas)
    rng = np.random.default_rng(replicas)
    data = [rng.standard_normal([replicas, *shape]).astype(np.float32) for shape in SHAPES]
    ts = [h.tensor(d) for d in data]
    grouped = [group] if group else []
    groups = (group or gcl.CommGroup()).groups(replicas)
    k = len(groups[0])
    in_place = [h.tensor(d) for d in data]

    def variables(shapes, name):
        out = [h.graph.addVariable(poplar.FLOAT, s, f"{name}{i}") for i, s in enumerate(shapes)]
        for i, t in enumerate(out):
            h.graph.setTileMapping(t, i)
        return out

    summed = gcl.allReduceCrossReplica(h.graph, ts, Op.ADD, h.seq, *grouped)
    gcl.allReduceInPlaceCrossReplica(h.graph, tuple(in_place), Op.MAX, h.seq, *grouped)
    reduced = variables(SHAPES, "reduced")
    gcl.allReduceToDestinationCrossReplica(h.graph, ts, reduced, Op.MIN, h.seq, *grouped)
    scattered = gcl.reduceScatterCrossReplica(h.graph, ts, Op.ADD, h.seq, *grouped)
    into = variables([[-(-int(np.prod(s)) // k)] for s in SHAPES], "shard")
    gcl.reduceScatterToDestinationCrossReplica(h.graph, ts, into, Op.MEAN, h.seq, *grouped)
    gathered = gcl.allGatherCrossReplica(h.graph, ts, h.seq, *grouped)
    gathered_into = variables([[k, *s] for s in SHAPES], "gathered")
    gcl.allGatherToDestinationCrossReplica(h.graph, ts, gathered_into, h.seq, *grouped)
    outputs = [*summed, *in_place, *reduced, *scattered, *into, *gathered, *gathered_into]
    results = h.run(*outputs)
    n = len(SHAPES)
    for members in groups:
        for p, r in enumerate(members):
            for i, d in enumerate(data):
                mine = d[list(members)]
                got = [results[j * n + i][r] for j in range(len(outputs) // n)]
                np.testing.assert_allclose(got[0], mine.sum(0), rtol=1e-5, atol=1e-6)
                np.testing.assert_array_equal(got[1], mine.max(0))
                np.testing.assert_array_equal(got[2], mine.min(0))
                np.testing.assert_allclose(got[3], shards(mine.sum(0), k)[p], rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(got[4], shards(mine.mean(0), k)[p], rtol=1e-5, atol=1e-6)
                np.testing.assert_array_equal(got[5], mine)
                np.testing.assert_array_equal(got[6], mine)


def test_a_wrong_list_is_named():
    h = Replicated(2)
    a = h.tensor(np.zeros([2, 3], np.float32))
    b = h.tensor(np.zeros([2, 3], np.int32), poplar.INT)
    with pytest.raises(PoplibsArgumentError, match=r"^allReduceCrossReplica: data is an empty list"):
        gcl.allReduceCrossReplica(h.graph, [], Op.ADD, h.seq)
    with pytest.raises(PoplibsArgumentError, match=r"^allGatherCrossReplica: data\[1\] must be a tensor"):
        gcl.allGatherCrossReplica(h.graph, [a, 3], h.seq)
    with pytest.raises(PoplibsError, match=r"reduceScatterCrossReplica: data\[1\] 'in1' is of type int, "
                                           r"data\[0\] 'in0' of type float"):
        gcl.reduceScatterCrossReplica(h.graph, [a, b], Op.ADD, h.seq)
    with pytest.raises(PoplibsArgumentError, match="destination must be a list of tensors, one for each"):
        gcl.allReduceToDestinationCrossReplica(h.graph, [a], a, Op.ADD, h.seq)
    with pytest.raises(PoplibsError, match=r"2 destination\(s\) for 1 tensor\(s\) of data"):
        gcl.allGatherToDestinationCrossReplica(h.graph, [a], [a, a], h.seq)
    with pytest.raises(PoplibsError, match=r"destination\[0\] 'in0' of shape \[3\] must have 2 elements"):
        gcl.reduceScatterToDestinationCrossReplica(h.graph, [a], [a], Op.ADD, h.seq)
