"""gcl.allToAllCrossReplica against numpy over replicas, in groups, and its errors."""

import numpy as np
import pytest
from test_cross_replica import Replicated

import poplar_py as poplar
from poplibs_py import gcl
from poplibs_py.poputil import PoplibsError

Type = gcl.CommGroupType


def reference(data: np.ndarray, groups: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """Slice j on a group's i-th replica: slice i of the group's j-th replica's data."""
    out = np.empty_like(data)
    for members in groups:
        for i, r in enumerate(members):
            out[r] = np.stack([data[s][i] for s in members])
    return out


@pytest.mark.parametrize("replicas,group,shape", [
    (2, None, [2, 5]),
    (4, None, [4, 3, 2]),
    (4, gcl.CommGroup(Type.CONSECUTIVE, 2), [2, 7]),
    (4, gcl.CommGroup(Type.ORTHOGONAL, 2), [2, 1, 3]),
], ids=str)
def test_all_to_all_matches_numpy(replicas, group, shape):
    h = Replicated(replicas)
    data = np.arange(replicas * np.prod(shape), dtype=np.float32).reshape(replicas, *shape)
    t = h.tensor(data)
    out = gcl.allToAllCrossReplica(h.graph, t, h.seq, *([group] if group else []), debugContext="a2a")
    assert out.shape() == shape and h.graph.getTileMapping(out) == h.graph.getTileMapping(t)
    (result,) = h.run(out)
    expected = reference(data, (group or gcl.CommGroup()).groups(replicas))
    for r in range(replicas):
        np.testing.assert_array_equal(result[r], expected[r], err_msg=f"replica {r}")
    steps = [s["name"] for s in h.engine.getProfile()["execution"]["steps"]]
    steps = [s for s in steps if s.startswith("CrossReplicaCopy")]
    assert len(steps) == shape[0] - 1  # one cross-replica copy of one slice per other member


def test_the_outer_dimension_is_the_group_size_and_one_replica_copies():
    h = Replicated(4)
    t = h.tensor(np.zeros([4, 4, 3], np.float32))
    with pytest.raises(PoplibsError, match=r"^allToAllCrossReplica: data 'in0' of shape \[4, 3\] needs an "
                                           r"outermost dimension of 2, one slice per replica \(each group"):
        gcl.allToAllCrossReplica(h.graph, t, h.seq, gcl.CommGroup(Type.CONSECUTIVE, 2))
    scalar = h.graph.addVariable(poplar.FLOAT, [], "s")
    with pytest.raises(PoplibsError, match=r"data 's' of shape \[\] needs an outermost dimension of 4"):
        gcl.allToAllCrossReplica(h.graph, scalar, h.seq)
    one = Replicated(1)
    data = np.arange(6, dtype=np.float32).reshape(1, 1, 6)
    out = gcl.allToAllCrossReplica(one.graph, one.tensor(data), one.seq)
    (result,) = one.run(out)
    np.testing.assert_array_equal(result[0], data[0])
