"""gcl's cross-replica collectives against numpy, per replica, and their errors."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import GraphReplicationError
from poplibs_py import gcl, popops, poputil
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError

Op = gcl.CollectiveOperator


class Replicated:
    """R replicas of ``ipus_per_replica`` IPUs of 8 tiles; each replica's input written from numpy."""

    def __init__(self, replicas: int, ipus_per_replica: int = 1) -> None:
        model = poplar.IPUModel()
        model.numIPUs, model.tilesPerIPU = replicas * ipus_per_replica, 8
        self.device = model.createDevice()
        self.graph = poplar.Graph(self.device, replication_factor=replicas)
        popops.addCodelets(self.graph)
        self.replicas = replicas
        self.seq = prog.Sequence()
        self.inputs: list[tuple[str, np.ndarray]] = []

    def tensor(self, per_replica: np.ndarray, type_=poplar.FLOAT) -> poplar.Tensor:
        name = f"in{len(self.inputs)}"
        t = self.graph.addVariable(type_, list(per_replica.shape[1:]), name)
        poputil.mapTensorLinearly(self.graph, t)
        self.graph.createHostWrite(name, t)
        self.inputs.append((name, per_replica))
        return t

    def run(self, *outputs: poplar.Tensor) -> list[list[np.ndarray]]:
        """Per output, its value on each replica."""
        for i, t in enumerate(outputs):
            self.graph.createHostRead(f"out{i}", t)
        self.engine = poplar.Engine(self.graph, self.seq)
        self.engine.load(self.device)
        for name, values in self.inputs:
            for r in range(self.replicas):
                self.engine.writeTensor(name, values[r], replicaIndex=r)
        self.engine.run(0)
        return [[self.engine.readTensor(f"out{i}", replicaIndex=r) for r in range(self.replicas)]
                for i in range(len(outputs))]


REFERENCE = {
    Op.ADD: lambda x: x.sum(0), Op.MEAN: lambda x: x.mean(0), Op.MUL: lambda x: x.prod(0),
    Op.MIN: lambda x: x.min(0), Op.MAX: lambda x: x.max(0), Op.SQUARE_ADD: lambda x: (x * x).sum(0),
}


@pytest.mark.parametrize("replicas,ipus", [(2, 1), (3, 1), (4, 1), (8, 1), (2, 2)])
@pytest.mark.parametrize("shape", [[10], [3, 7], [1]])
def test_all_reduce_matches_numpy(replicas, ipus, shape):
    h = Replicated(replicas, ipus)
    data = np.random.default_rng(replicas).uniform(0.5, 1.5, [replicas, *shape]).astype(np.float32)
    t = h.tensor(data)
    outs = [gcl.allReduceCrossReplica(h.graph, t, op, h.seq) for op in REFERENCE]
    results = h.run(*outs)
    for op, per_replica in zip(REFERENCE, results):
        for value in per_replica:
            np.testing.assert_allclose(value, REFERENCE[op](data), rtol=1e-5, err_msg=str(op))
        # Every replica holds the same bits (one reduction order, then copies).
        assert all(np.array_equal(per_replica[0], v) for v in per_replica)


def test_logical_all_reduce_and_local():
    h = Replicated(4)
    flags = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=bool)
    b = h.tensor(flags, poplar.BOOL)
    x = h.tensor(np.arange(12, dtype=np.int32).reshape(4, 3), poplar.INT)
    both = gcl.allReduceCrossReplica(h.graph, b, Op.LOGICAL_AND, h.seq)
    either = gcl.allReduceCrossReplica(h.graph, b, Op.LOGICAL_OR, h.seq)
    local = gcl.allReduceCrossReplica(h.graph, x, Op.LOCAL, h.seq)
    total = gcl.allReduceCrossReplica(h.graph, x, Op.ADD, h.seq)
    r_both, r_either, r_local, r_total = h.run(both, either, local, total)
    for r in range(4):
        np.testing.assert_array_equal(r_both[r], flags.all(0))
        np.testing.assert_array_equal(r_either[r], flags.any(0))
        np.testing.assert_array_equal(r_local[r], np.arange(12).reshape(4, 3)[r])
        np.testing.assert_array_equal(r_total[r], [18, 22, 26])


def test_all_reduce_in_place():
    h = Replicated(4)
    data = np.arange(4 * 9, dtype=np.float32).reshape(4, 9)
    t = h.tensor(data)
    gcl.allReduceInPlaceCrossReplica(h.graph, t, Op.MEAN, h.seq)
    (result,) = h.run(t)
    for value in result:
        np.testing.assert_allclose(value, data.mean(0))


@pytest.mark.parametrize("replicas", [2, 4, 5])
def test_all_gather_reduce_scatter_broadcast(replicas):
    h = Replicated(replicas)
    n = 11
    data = np.random.default_rng(1).standard_normal([replicas, n]).astype(np.float32)
    t = h.tensor(data)
    gathered = gcl.allGatherCrossReplica(h.graph, t, h.seq)
    assert gathered.shape() == [replicas, n]
    shard = gcl.reduceScatterCrossReplica(h.graph, t, Op.ADD, h.seq)
    chunk = -(-n // replicas)
    assert shard.shape() == [chunk]
    root = replicas - 2
    copied = gcl.broadcastCrossReplica(h.graph, t, h.seq, rootReplica=root)
    r_gather, r_shard, r_copied = h.run(gathered, shard, copied)
    padded = np.zeros(replicas * chunk, np.float32)
    padded[:n] = data.sum(0)
    for r in range(replicas):
        np.testing.assert_array_equal(r_gather[r], data)
        np.testing.assert_allclose(r_shard[r], padded[r * chunk:(r + 1) * chunk], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(r_copied[r], data[root])


def test_collectives_cross_the_links_in_ring_steps():
    h = Replicated(4)
    t = h.tensor(np.ones([4, 4096], np.float32))
    gcl.allReduceInPlaceCrossReplica(h.graph, t, Op.ADD, h.seq)
    h.run(t)
    steps = h.engine.getProfile()["execution"]["steps"]
    ring = [s for s in steps if s["name"].startswith("CrossReplicaCopy")]
    assert len(ring) == 2 * (4 - 1)
    # Each step moves a quarter of the 16 KB over the links: 4 KB on each hop's 2 links.
    link_bytes_per_cycle = 2 * 32e9 / 1.33e9
    assert all(s["globalExchange"] == int(np.ceil(4096 / link_bytes_per_cycle)) for s in ring)
    assert all(s["count"] == 1 for s in ring)


def test_a_tensor_of_another_graph_is_named():
    h, other = Replicated(2), Replicated(2)
    foreign = other.graph.addVariable(poplar.FLOAT, [4], "foreign")
    with pytest.raises(PoplibsArgumentError, match=r"allReduceCrossReplica: .*'foreign' belongs to another"):
        gcl.allReduceCrossReplica(h.graph, foreign, Op.ADD, h.seq)
    with pytest.raises(PoplibsArgumentError, match=r"allGatherCrossReplica: .*'foreign' belongs to another"):
        gcl.allGatherCrossReplica(h.graph, foreign, h.seq)
    with pytest.raises(PoplibsArgumentError, match=r"broadcastCrossReplica: .*must be a tensor"):
        gcl.broadcastCrossReplica(h.graph, [1.0], h.seq)


def test_bad_operators_and_roots_are_named():
    h = Replicated(2)
    t = h.tensor(np.zeros([2, 3], np.float32))
    with pytest.raises(PoplibsArgumentError, match=r"op must be a gcl\.CollectiveOperator, got 'ADD'"):
        gcl.allReduceCrossReplica(h.graph, t, "ADD", h.seq)
    with pytest.raises(PoplibsError, match="LOCAL is not a reduction"):
        gcl.reduceScatterCrossReplica(h.graph, t, Op.LOCAL, h.seq)
    with pytest.raises(GraphReplicationError, match="rootReplica 2 is out of range"):
        gcl.broadcastCrossReplica(h.graph, t, h.seq, rootReplica=2)


def _steps(h: Replicated) -> list[str]:
    return [s["name"] for s in h.engine.getProfile()["execution"]["steps"]]


@pytest.mark.parametrize("op", list(REFERENCE) + [Op.LOCAL])
def test_one_replica_builds_only_a_copy_or_a_square(op):
    h = Replicated(1)
    data = np.random.default_rng(3).uniform(0.5, 1.5, [1, 3, 7]).astype(np.float32)
    t = h.tensor(data)
    out = gcl.allReduceCrossReplica(h.graph, t, op, h.seq, "out")
    expected = data[0] * data[0] if op is Op.SQUARE_ADD else data[0]
    (result,) = h.run(out)
    np.testing.assert_array_equal(result[0], expected)
    assert out.shape() == [3, 7] and h.graph.getTileMapping(out) == h.graph.getTileMapping(t)
    assert _steps(h) == (["out/square"] if op is Op.SQUARE_ADD else ["Copy(in0 -> out/out)"])
    tiles = sum(1 for intervals in h.graph.getTileMapping(t) if intervals)
    assert h.graph.getNumVertices() == (tiles if op is Op.SQUARE_ADD else 0)  # a MultiVertex per tile of t


@pytest.mark.parametrize("op", [Op.MEAN, Op.SQUARE_ADD])
def test_one_replica_in_place_changes_only_what_the_operator_does(op):
    h = Replicated(1)
    data = np.arange(1, 22, dtype=np.float32).reshape(1, 21)
    t = h.tensor(data)
    gcl.allReduceInPlaceCrossReplica(h.graph, t, op, h.seq, "mean")
    (result,) = h.run(t)
    np.testing.assert_array_equal(result[0], data[0] ** (2 if op is Op.SQUARE_ADD else 1))
    assert _steps(h) == (["mean/square"] if op is Op.SQUARE_ADD else [])


def test_one_replica_scatters_gathers_and_broadcasts_by_copies():
    h = Replicated(1)
    data = np.random.default_rng(4).standard_normal([1, 2, 5]).astype(np.float32)
    t = h.tensor(data)
    shard = gcl.reduceScatterCrossReplica(h.graph, t, Op.ADD, h.seq, "shard")
    gathered = gcl.allGatherCrossReplica(h.graph, t, h.seq, "gathered")
    copied = gcl.broadcastCrossReplica(h.graph, t, h.seq, 0, "copied")
    assert (shard.shape(), gathered.shape(), copied.shape()) == ([10], [1, 2, 5], [2, 5])
    r_shard, r_gathered, r_copied = h.run(shard, gathered, copied)
    np.testing.assert_array_equal(r_shard[0], data[0].ravel())
    np.testing.assert_array_equal(r_gathered[0], data)
    np.testing.assert_array_equal(r_copied[0], data[0])
    assert h.graph.getNumVertices() == 0 and len(_steps(h)) == 3
    with pytest.raises(GraphReplicationError, match="rootReplica 1 is out of range"):
        gcl.broadcastCrossReplica(h.graph, t, h.seq, rootReplica=1)
    with pytest.raises(PoplibsError, match="LOCAL is not a reduction"):
        gcl.reduceScatterCrossReplica(h.graph, t, Op.LOCAL, h.seq)


@pytest.mark.parametrize("replicas", [1, 2])
def test_in_place_on_constants_or_aliases_is_named(replicas):
    h = Replicated(replicas)
    c = h.graph.addConstant(poplar.FLOAT, [4], np.ones(4, np.float32), "c")
    h.graph.setTileMapping(c, 0)
    v = h.graph.addVariable(poplar.FLOAT, [1], "v")
    h.graph.setTileMapping(v, 0)
    for t, name in [(c, "c"), (v.broadcast(4, 0), r"v\.broadcast\(4,0\)")]:
        with pytest.raises(PoplibsError, match=f"allReduceInPlaceCrossReplica: tensor '{name}' contains "
                                               "constants or aliased elements"):
            gcl.allReduceInPlaceCrossReplica(h.graph, t, Op.MEAN, h.seq)
    gcl.allReduceInPlaceCrossReplica(h.graph, c, Op.LOCAL, h.seq)  # LOCAL writes nothing
    assert h.graph.getNumVertices() == 0
