"""gcl's collectives across the IPUs of one replica, against numpy."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, popops
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError

Op = gcl.CollectiveOperator


def graph_of(ipus: int, replicas: int = 1):
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = ipus * replicas, 4
    device = model.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    return device, graph


def partials(graph, shape, name="t"):
    """A [numIPUs, *shape] tensor whose row i lives on IPU i's tiles."""
    ipus, per_ipu = graph.getTarget().getNumIPUs(), graph.getTarget().getTilesPerIPU()
    t = graph.addVariable(poplar.FLOAT, [ipus, *shape], name)
    for i in range(ipus):
        graph.setTileMapping(t[i], i * per_ipu + i % per_ipu)
    graph.createHostWrite(name, t)
    return t


def run(device, graph, seq, inputs, outputs, replica=0):
    for i, t in enumerate(outputs):
        graph.createHostRead(f"out{i}", t)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    for name, values in inputs.items():
        engine.writeTensor(name, values)
    engine.run(0)
    return engine, [engine.readTensor(f"out{i}", replicaIndex=replica) for i in range(len(outputs))]


@pytest.mark.parametrize("ipus", [1, 2, 3, 4])
@pytest.mark.parametrize("op,reference", [(Op.ADD, np.sum), (Op.MEAN, np.mean), (Op.MAX, np.max),
                                          (Op.SQUARE_ADD, lambda x, axis: (x * x).sum(axis))])
def test_all_reduce_within_replica(ipus, op, reference):
    device, graph = graph_of(ipus)
    t = partials(graph, [2, 5])
    seq = prog.Sequence()
    out = gcl.allReduceWithinReplica(graph, t, op, seq)
    data = np.random.default_rng(ipus).standard_normal([ipus, 2, 5]).astype(np.float32)
    engine, (result,) = run(device, graph, seq, {"t": data}, [out])
    for i in range(ipus):
        np.testing.assert_allclose(result[i], reference(data, axis=0), rtol=1e-5, atol=1e-6)
    assert graph.getTileMapping(out) == graph.getTileMapping(t)
    if ipus > 1:  # the ring steps crossed the IPU-Links
        assert engine.getProfile()["execution"]["tileAverages"]["globalExchange"] > 0
    else:  # one partial: a copy, squared for SQUARE_ADD (one MultiVertex on t's tile)
        assert graph.getNumVertices() == (op is Op.SQUARE_ADD)


def test_all_gather_within_replica_of_a_replicated_graph():
    device, graph = graph_of(2, replicas=2)
    t = partials(graph, [3])
    seq = prog.Sequence()
    out = gcl.allGatherWithinReplica(graph, t, seq)
    assert out.shape() == [2, 2, 3]
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    _, (result,) = run(device, graph, seq, {"t": data}, [out], replica=1)
    np.testing.assert_array_equal(result, np.stack([data, data]))
    per_ipu = graph.getTarget().getTilesPerIPU()
    for i in range(2):  # IPU i's copy lives on IPU i
        tiles = [k for k, iv in enumerate(graph.getTileMapping(out[i])) if iv]
        assert all(k // per_ipu == i for k in tiles)


def test_within_replica_errors_name_the_tensor():
    _, graph = graph_of(2)
    seq = prog.Sequence()
    with pytest.raises(PoplibsError, match=r"tensor 'x' of shape \[3, 4\] needs an outer dimension of 2"):
        gcl.allReduceWithinReplica(graph, graph.addVariable(poplar.FLOAT, [3, 4], "x"), Op.ADD, seq)
    _, other = graph_of(2)
    with pytest.raises(PoplibsArgumentError, match=r"allGatherWithinReplica: .*'y' belongs to another graph"):
        gcl.allGatherWithinReplica(graph, other.addVariable(poplar.FLOAT, [2], "y"), seq)


@pytest.mark.parametrize("ipus", [1, 3, 4])
def test_reduce_scatter_within_replica_gives_chunks_an_all_gather_puts_together(ipus):
    device, graph = graph_of(ipus)
    t = partials(graph, [2, 5])
    seq = prog.Sequence()
    scattered = gcl.reduceScatterWithinReplica(graph, t, Op.MEAN, seq, "rs")
    assert scattered.originalInput is t and len(scattered.chunks) == ipus
    size = -(-10 // ipus)
    per_ipu = graph.getTarget().getTilesPerIPU()
    for i, chunk in enumerate(scattered.chunks):  # chunk i is IPU i's: a 1-D piece of the result
        first = chunk.index * size
        assert chunk.tensor.shape() == [max(0, min(size, 10 - first))] and chunk.offset == 0
        assert all(k // per_ipu == i for k, iv in enumerate(graph.getTileMapping(chunk.tensor)) if iv)
    assert sorted(c.index for c in scattered.chunks) == list(range(ipus))
    gathered = gcl.allGatherWithinReplica(graph, scattered, seq)
    data = np.random.default_rng(ipus).standard_normal([ipus, 2, 5]).astype(np.float32)
    _, results = run(device, graph, seq, {"t": data}, [gathered] + [c.tensor for c in scattered.chunks])
    mean = data.mean(0)
    np.testing.assert_allclose(results[0], np.broadcast_to(mean, [ipus, 2, 5]), rtol=1e-5, atol=1e-6)
    assert graph.getTileMapping(gathered) == graph.getTileMapping(t)
    for chunk, value in zip(scattered.chunks, results[1:]):
        np.testing.assert_allclose(value, mean.ravel()[chunk.index * size:][:size], rtol=1e-5, atol=1e-6)


def test_chunks_made_by_hand_are_gathered_in_index_order():
    """As frameworks build them: one chunk per IPU, the indices naming their order."""
    device, graph = graph_of(2)
    a, b = (graph.addVariable(poplar.FLOAT, [n], name) for n, name in ((2, "a"), (3, "b")))
    graph.setTileMapping(a, 0)
    graph.setTileMapping(b, 5)
    for name, v in (("a", a), ("b", b)):
        graph.createHostWrite(name, v)
    reference = graph.addVariable(poplar.FLOAT, [2, 5], "reference")
    graph.setTileMapping(reference[0], 1)
    graph.setTileMapping(reference[1], 6)
    chunks = gcl.Chunks(2)
    chunks.originalInput = reference
    chunks.chunks[0] = gcl.Chunk(a, 1, 0)  # IPU 0's chunk goes second
    chunks.chunks[1] = gcl.Chunk(b, 0, 0)
    seq = prog.Sequence()
    out = gcl.allGatherWithinReplica(graph, chunks, seq)
    _, (result,) = run(device, graph, seq, {"a": np.array([1, 2], np.float32),
                                           "b": np.array([3, 4, 5], np.float32)}, [out])
    np.testing.assert_array_equal(result, [[3, 4, 5, 1, 2]] * 2)
    with pytest.raises(PoplibsError, match="allGatherWithinReplica: 1 chunks for 2 IPUs"):
        gcl.allGatherWithinReplica(graph, gcl.Chunks(originalInput=reference, chunks=[gcl.Chunk(a)]), seq)
    with pytest.raises(PoplibsError, match=r"the chunks hold 4 elements; each IPU's part of originalInput"):
        gcl.allGatherWithinReplica(graph, gcl.Chunks(originalInput=reference, chunks=[gcl.Chunk(a)] * 2), seq)
    with pytest.raises(PoplibsArgumentError, match=r"chunks\[1\]\.index must be a non-negative integer"):
        gcl.allGatherWithinReplica(graph, gcl.Chunks(originalInput=reference,
                                                     chunks=[gcl.Chunk(a), gcl.Chunk(b, -1)]), seq)
    with pytest.raises(PoplibsArgumentError, match=r"chunks\[0\]\.tensor must be a tensor, got NoneType"):
        gcl.allGatherWithinReplica(graph, gcl.Chunks(2, reference), seq)
    with pytest.raises(PoplibsArgumentError, match=r"chunks\.originalInput must be a tensor, got NoneType"):
        gcl.allGatherWithinReplica(graph, gcl.Chunks(2), seq)
    with pytest.raises(PoplibsError, match="reduceScatterWithinReplica: LOCAL is not a reduction"):
        gcl.reduceScatterWithinReplica(graph, reference, Op.LOCAL, seq)
    with pytest.raises(PoplibsArgumentError, match="Chunks: size must be a non-negative integer"):
        gcl.Chunks(-1)
