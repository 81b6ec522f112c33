"""gcl's replica groups (CommGroup): the groups each type makes, every cross-replica collective
within groups against numpy per replica, their errors, and what groups cost on the links."""

import numpy as np
import pytest
from test_cross_replica import Replicated

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import GraphReplicationError
from poplibs_py import gcl, popops, poputil
from poplibs_py.poputil import PoplibsArgumentError

Op = gcl.CollectiveOperator
Group, Type = gcl.CommGroup, gcl.CommGroupType
ALL, CONSECUTIVE, ORTHOGONAL = Type.ALL, Type.CONSECUTIVE, Type.ORTHOGONAL


@pytest.mark.parametrize("group,replicas,expected", [
    (Group(ALL), 4, [[0, 1, 2, 3]]),
    (Group(ALL, 2), 4, [[0, 1, 2, 3]]),  # ALL ignores the size
    (Group(CONSECUTIVE), 4, [[0, 1, 2, 3]]),
    (Group(CONSECUTIVE, 2), 8, [[0, 1], [2, 3], [4, 5], [6, 7]]),
    (Group(CONSECUTIVE, 4), 8, [[0, 1, 2, 3], [4, 5, 6, 7]]),
    (Group(CONSECUTIVE, 2, 2), 8, [[0, 2], [1, 3], [4, 6], [5, 7]]),
    (Group(CONSECUTIVE, 2, 4), 8, [[0, 4], [1, 5], [2, 6], [3, 7]]),
    (Group(CONSECUTIVE, 1), 3, [[0], [1], [2]]),
    (Group(ORTHOGONAL, 2), 8, [[0, 4], [1, 5], [2, 6], [3, 7]]),
    (Group(ORTHOGONAL, 4), 8, [[0, 2, 4, 6], [1, 3, 5, 7]]),
    (Group(ORTHOGONAL, 4, 0), 16, [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]),
])
def test_the_groups_of_each_type(group, replicas, expected):
    assert group.groups(replicas) == tuple(map(tuple, expected))
    assert group.groups(np.int64(replicas)) == tuple(map(tuple, expected))


def test_a_group_reads_compares_and_hashes_as_its_values():
    g = Group(CONSECUTIVE, 4)
    assert repr(g) == "CommGroup(CONSECUTIVE, 4)"
    assert repr(Group(ORTHOGONAL, 2, 0)) == "CommGroup(ORTHOGONAL, 2)"
    assert repr(Group(CONSECUTIVE, np.uint8(2), 4)) == "CommGroup(CONSECUTIVE, 2, 4)"
    assert (g.type, g.replicaGroupSize, g.replicaGroupStride) == (CONSECUTIVE, 4, 1)
    assert g == Group(CONSECUTIVE, 4, 0) == Group(type=CONSECUTIVE, replicaGroupSize=4, replicaGroupStride=1)
    assert g != Group(ORTHOGONAL, 4) and g != Group(CONSECUTIVE, 2) and Group() == Group(ALL, 0)
    assert len({g, Group(CONSECUTIVE, 4, 1), Group(ALL)}) == 2
    with pytest.raises(AttributeError):
        g.replicaGroupSize = 2
    # size: as given, or the size of each group a replication factor makes
    sizes = (g.size(), g.size(8), Group().size(), Group().size(8), Group(ORTHOGONAL, 0).size(4))
    assert sizes == (4, 4, 0, 8, 4)
    with pytest.raises(GraphReplicationError, match="replicaGroupSize 4 does not divide the replication"):
        g.size(6)


def _reference(op, rows):
    """``rows`` (one per replica of a group) combined by op, in their type."""
    combine = {Op.ADD: lambda x: x.sum(0), Op.MEAN: lambda x: x.mean(0), Op.MAX: lambda x: x.max(0),
               Op.SQUARE_ADD: lambda x: (x * x).sum(0)}
    return combine[op](rows).astype(rows.dtype)


def _same(got, expected, what):
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-7, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)


GROUPS = [Group(ALL), Group(CONSECUTIVE, 1), Group(CONSECUTIVE, 2), Group(CONSECUTIVE, 4),
          Group(CONSECUTIVE, 2, 2), Group(ORTHOGONAL, 2), Group(ORTHOGONAL, 4)]


@pytest.mark.parametrize("replicas,ipus", [(4, 1), (8, 1), (4, 2)])
@pytest.mark.parametrize("group", GROUPS, ids=repr)
def test_every_collective_within_groups_matches_numpy(replicas, ipus, group):
    h = Replicated(replicas, ipus)
    rng = np.random.default_rng(replicas * 10 + ipus)
    floats = rng.uniform(0.5, 1.5, [replicas, 3, 5]).astype(np.float32)
    ints = rng.integers(-9, 10, [replicas, 7]).astype(np.int32)
    x, i = h.tensor(floats), h.tensor(ints, poplar.INT)
    g, seq = h.graph, h.seq
    groups = group.groups(replicas)
    k = len(groups[0])
    root = k - 1
    # The group by position (GCL's place) and as group=, alternately.
    reduced = {(Op.ADD, "x"): gcl.allReduceCrossReplica(g, x, Op.ADD, seq, group),
               (Op.MEAN, "x"): gcl.allReduceCrossReplica(g, x, Op.MEAN, seq, group=group, debugContext="m"),
               (Op.SQUARE_ADD, "x"): gcl.allReduceCrossReplica(g, x, Op.SQUARE_ADD, seq, group, "squares"),
               (Op.LOCAL, "i"): gcl.allReduceCrossReplica(g, i, Op.LOCAL, seq, group=group),
               (Op.MAX, "i"): gcl.allReduceCrossReplica(g, i, Op.MAX, seq, group)}
    scattered = {Op.ADD: gcl.reduceScatterCrossReplica(g, i, Op.ADD, seq, group),
                 Op.MEAN: gcl.reduceScatterCrossReplica(g, x, Op.MEAN, seq, group=group)}
    gathered = [gcl.allGatherCrossReplica(g, x, seq, group),
                gcl.allGatherCrossReplica(g, i, seq, group=group)]
    assert gathered[0].shape() == [k, 3, 5] and scattered[Op.ADD].shape() == [-(-7 // k)]
    copies = [gcl.broadcastCrossReplica(g, x, seq, group, root),
              gcl.broadcastCrossReplica(g, i, seq, group=group, rootReplica=0)]
    in_place = h.graph.clone(x, "inPlace")
    seq.add(prog.Copy(x, in_place))
    gcl.allReduceInPlaceCrossReplica(g, in_place, Op.ADD, seq, group)
    results = h.run(*reduced.values(), *scattered.values(), *gathered, *copies, in_place)
    data = {"x": floats, "i": ints}
    for members in groups:
        for p, r in enumerate(members):
            out = iter(results)
            for op, name in reduced:
                rows = data[name][list(members)]
                _same(next(out)[r], rows[p] if op is Op.LOCAL else _reference(op, rows), f"{op} on {r}")
            for op, rows in ((Op.ADD, ints), (Op.MEAN, floats)):
                chunk = -(-rows[0].size // k)
                padded = np.zeros(k * chunk, rows.dtype)
                padded[:rows[0].size] = _reference(op, rows[list(members)].reshape(k, -1))
                _same(next(out)[r], padded[p * chunk:(p + 1) * chunk], f"reduceScatter {op} on {r}")
            for rows in (floats, ints):
                np.testing.assert_array_equal(next(out)[r], rows[list(members)], f"allGather on {r}")
            for rows, j in ((floats, root), (ints, 0)):
                np.testing.assert_array_equal(next(out)[r], rows[members[j]], f"broadcast on {r}")
            _same(next(out)[r], floats[list(members)].sum(0), f"in place on {r}")
            # Every replica of a group holds the same bits (one reduction order, then copies).
            assert np.array_equal(results[0][r], results[0][members[0]])


def test_calls_without_a_group_are_as_before():
    h = Replicated(4)
    data = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    t = h.tensor(data)
    total = gcl.allReduceCrossReplica(h.graph, t, Op.ADD, h.seq, "total", {"method": "auto"})
    first = gcl.broadcastCrossReplica(h.graph, t, h.seq, 1, "first")
    second = gcl.broadcastCrossReplica(h.graph, t, h.seq, Group(CONSECUTIVE, 2), 1, "second")
    assert total.name == "total/out" and first.name == "first/out"
    r_total, r_first, r_second = h.run(total, first, second)
    for r in range(4):
        np.testing.assert_array_equal(r_total[r], data.sum(0))
        np.testing.assert_array_equal(r_first[r], data[1])
        np.testing.assert_array_equal(r_second[r], data[r // 2 * 2 + 1])


def snapshot(graph, seq):
    return graph.freeze().text(10**6), graph.getNumVertices(), len(prog.children(seq))


CROSS = ["allReduceCrossReplica", "allReduceInPlaceCrossReplica", "reduceScatterCrossReplica",
         "allGatherCrossReplica", "broadcastCrossReplica"]


def call(function, h, t, *group, **keywords):
    """``function`` on ``t`` into ``h.seq`` (ADD where it takes an operator)."""
    operator = [Op.ADD] if function in CROSS[:3] else []
    return getattr(gcl, function)(h.graph, t, *operator, h.seq, *group, **keywords)


@pytest.mark.parametrize("function", CROSS)
@pytest.mark.parametrize("group,error,message", [
    (Group(CONSECUTIVE, 3), GraphReplicationError,
     r"CommGroup\(CONSECUTIVE, 3\): replicaGroupSize 3 does not divide the replication factor 8"),
    (Group(ORTHOGONAL, 16), GraphReplicationError,
     "replicaGroupSize 16 does not divide the replication factor 8"),
    (Group(CONSECUTIVE, 2, 3), GraphReplicationError,
     "replicaGroupStride 3 does not fit: replicaGroupSize 2 x replicaGroupStride 3 = 6 does not divide "
     "the replication factor 8"),
    (Group(CONSECUTIVE, 4, 4), GraphReplicationError, "replicaGroupStride 4 does not fit"),
    (Group(CONSECUTIVE, 0, 2), GraphReplicationError, "replicaGroupSize 8 x replicaGroupStride 2 = 16"),
    (Type.CONSECUTIVE, PoplibsArgumentError, "group must be a gcl.CommGroup, got CommGroupType"),
    (4, PoplibsArgumentError, "group must be a gcl.CommGroup, got int 4"),
    ("ALL", PoplibsArgumentError, "group must be a gcl.CommGroup, got str 'ALL'"),
])
def test_a_group_that_does_not_fit_is_named_and_changes_nothing(function, group, error, message):
    h = Replicated(8)
    t = h.tensor(np.zeros([8, 5], np.float32))
    before = snapshot(h.graph, h.seq)
    with pytest.raises(error, match=f"^{function}: (CommGroup.*: )?{message}"):
        call(function, h, t, group=group)
    assert snapshot(h.graph, h.seq) == before


@pytest.mark.parametrize("function", CROSS)
def test_a_group_type_in_the_group_place_is_named(function):
    h = Replicated(2)
    t = h.tensor(np.zeros([2, 5], np.float32))
    with pytest.raises(PoplibsArgumentError, match=f"^{function}: group must be a gcl.CommGroup"):
        call(function, h, t, Type.ALL)


def test_the_root_is_an_index_within_the_group():
    h = Replicated(8)
    t = h.tensor(np.zeros([8, 5], np.float32))
    before = snapshot(h.graph, h.seq)
    for group, root, message in [
            (Group(CONSECUTIVE, 2), 2, r"rootReplica 2 is out of range: each group of "
                                       r"CommGroup\(CONSECUTIVE, 2\) has 2 replica\(s\), 0..1"),
            (Group(ORTHOGONAL, 4), np.int64(-1), r"rootReplica -1 is out of range: each group of "),
            (Group(CONSECUTIVE, 1), 1, r"rootReplica 1 is out of range: .* has 1 replica\(s\), 0..0"),
            (Group(ALL), 8, r"rootReplica 8 is out of range: the graph has 8 replica\(s\), 0..7"),
            (Group(CONSECUTIVE, 8), 8, r"rootReplica 8 is out of range: the graph has 8 replica\(s\)")]:
        with pytest.raises(GraphReplicationError, match=f"^broadcastCrossReplica: {message}"):
            gcl.broadcastCrossReplica(h.graph, t, h.seq, group, root)
    for root in (1.0, "1", True, None):
        with pytest.raises(PoplibsArgumentError, match=r"^broadcastCrossReplica: rootReplica must be an int"):
            gcl.broadcastCrossReplica(h.graph, t, h.seq, group=Group(CONSECUTIVE, 2), rootReplica=root)
    assert snapshot(h.graph, h.seq) == before


@pytest.mark.parametrize("arguments,message", [
    (("ALL",), "type must be a gcl.CommGroupType, got str 'ALL'"),
    ((None,), "type must be a gcl.CommGroupType, got NoneType"),
    ((Op.ADD,), "type must be a gcl.CommGroupType, got CollectiveOperator"),
    ((CONSECUTIVE, -1), "replicaGroupSize must be at least 0, got -1"),
    ((CONSECUTIVE, 2.0), "replicaGroupSize must be an integer, got float 2.0"),
    ((CONSECUTIVE, True), "replicaGroupSize must be an integer, got bool True"),
    ((CONSECUTIVE, "2"), "replicaGroupSize must be an integer, got str '2'"),
    ((CONSECUTIVE, None), "replicaGroupSize must be an integer, got NoneType"),
    ((CONSECUTIVE, 2, np.int8(-2)), "replicaGroupStride must be at least 0, got -2"),
    ((CONSECUTIVE, 2, 1.5), "replicaGroupStride must be an integer, got float 1.5"),
    ((ALL, 0, False), "replicaGroupStride must be an integer, got bool False"),
    ((ORTHOGONAL, 2, 2), "replicaGroupStride 2 is not supported by ORTHOGONAL groups"),
])
def test_a_group_of_a_wrong_kind_is_named_when_built(arguments, message):
    with pytest.raises(PoplibsArgumentError, match=f"^CommGroup: {message}"):
        Group(*arguments)


@pytest.mark.parametrize("factor", [0, -4, 2.0, "4", None, True])
def test_groups_need_a_replication_factor(factor):
    with pytest.raises(PoplibsArgumentError, match=r"^CommGroup\.groups: replicationFactor must be an int"):
        Group(CONSECUTIVE, 2).groups(factor)


def test_consecutive_groups_are_cheaper_on_the_links_than_orthogonal_ones():
    """On a Pod16 of one IPU per replica, the ring of a CONSECUTIVE group of 4 (0, 1, 3, 2) hops
    over a rung, a rail, a rung and a rail, each link group carrying one group's flow; an
    ORTHOGONAL group of 4 ({i, i + 4, i + 8, i + 12}) hops 2 to 4 rungs along a rail, and groups
    0 and 2 (1 and 3) share the even (odd) rail's links, so their hops take twice as long."""
    exchange = {}
    for kind in (CONSECUTIVE, ORTHOGONAL):
        model = poplar.IPUModel()
        model.numIPUs, model.tilesPerIPU = 16, 8
        device = model.createDevice()
        graph = poplar.Graph(device, replication_factor=16)
        popops.addCodelets(graph)
        t = graph.addVariable(poplar.FLOAT, [1 << 16], "t")  # 256 KB: the links dominate
        poputil.mapTensorLinearly(graph, t)
        seq = prog.Sequence()
        gcl.allReduceInPlaceCrossReplica(graph, t, Op.ADD, seq, Group(kind, 4))
        engine = poplar.Engine(graph, seq)
        engine.load(device)
        engine.run(0)
        execution = engine.getProfile()["execution"]
        hops = [s["globalExchange"] for s in execution["steps"] if s["name"].startswith("CrossReplicaCopy")]
        assert len(hops) == 2 * (4 - 1)
        exchange[kind] = execution["tileAverages"]["globalExchange"]
    # a quarter of 256 KB a hop: on 2 rail links, 64 KB / (2 x 32 GB/s / 1.33 GHz) = 1362 cycles
    assert exchange[CONSECUTIVE] == 6 * 1362
    assert exchange[ORTHOGONAL] == 2 * exchange[CONSECUTIVE]
