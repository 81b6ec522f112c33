"""Replicated tensor sharding of optimiser state, written as user code: a linear model trained
with momentum SGD by data-parallel groups of replicas, once with the optimiser state whole on
every replica and once sharded across each group (laid out by gcl.CollectiveBalancedReorder) and
kept in Streaming Memory. Both reach the same weights, which are numpy's; the shards in Streaming
Memory, put together on the host, are the weights too."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, poplin, popops
from poplibs_py.popops import expr as pe

REPLICAS, FEATURES, BATCH, STEPS = 4, 31, 8, 5
W_TILES = [(0, 13), (13, 14), (14, 31)]  # w over three tiles, unevenly: the shards need padding
LR, BETA = 0.05, 0.9


def gradient(graph: poplar.Graph, x: poplar.Tensor, y: poplar.Tensor, w: poplar.Tensor,
             seq: prog.Sequence) -> poplar.Tensor:
    """This replica's gradient of the mean squared error of ``x @ w`` against ``y``."""
    pred = poplin.matMul(graph, x, w.reshape([FEATURES, 1]), seq, debugName="pred")
    err = popops.sub(graph, pred.flatten(), y, seq)
    grad = poplin.matMul(graph, x.transpose(), err.reshape([BATCH, 1]), seq, debugName="grad").flatten()
    popops.mulInPlace(graph, grad, 2.0 / BATCH, seq)
    return grad


def momentum(graph: poplar.Graph, m: poplar.Tensor, w: poplar.Tensor, g: poplar.Tensor,
             seq: prog.Sequence) -> None:
    """m = BETA m + g; w -= LR m, on the tiles holding them."""
    a, b = pe.PlaceHolder(1), pe.PlaceHolder(2)
    popops.mapInPlace(graph, pe.Add(pe.Mul(pe.Const(BETA), a), b), [m, g], seq)
    popops.mapInPlace(graph, pe.Sub(a, pe.Mul(pe.Const(LR), b)), [w, m], seq)


def train(group: gcl.CommGroup, sharded: bool, data: tuple[np.ndarray, np.ndarray, np.ndarray]
          ) -> list[np.ndarray]:
    """STEPS steps of momentum SGD, the gradients averaged over each data-parallel group; every
    replica's weights at the end."""
    x_data, y_data, w0 = data
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = REPLICAS, 16
    device = m.createDevice()
    graph = poplar.Graph(device, replication_factor=REPLICAS)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    x = poplin.createMatMulInputLHS(graph, poplar.FLOAT, [BATCH, FEATURES], [FEATURES, 1], "x")
    y = graph.addVariable(poplar.FLOAT, [BATCH], "y")
    graph.setTileMapping(y, 0)
    w = graph.addVariable(poplar.FLOAT, [FEATURES], "w")
    for k, (a, b) in enumerate(W_TILES):
        graph.setTileMapping(w.slice(a, b), k + 1)
    init, step = prog.Sequence(), prog.Sequence()
    grad = gradient(graph, x, y, w, step)
    if sharded:
        # The pattern: lay the gradients out as the balanced reorder of w says (each replica's shard
        # spread over w's tiles), reduce-scatter them in the group, update this replica's shard of
        # the master weights and momentum (rows 0 and 1 of its own rows in Streaming Memory), gather
        # the new weights and view them in w's order.
        cbr = gcl.CollectiveBalancedReorder(graph, w, len(group.groups(REPLICAS)[0]), "w")
        collectives = cbr.createCollectivesTensor(poplar.FLOAT, "grad")
        popops.zero(graph, collectives, init)  # the padding, never written again
        step.add(prog.Copy(grad, cbr.undoRearrangeForCollective(collectives)))
        g = gcl.reduceScatterCrossReplica(graph, collectives, gcl.CollectiveOperator.MEAN, step, group)
        shard = g.numElements()
        state = graph.addRemoteBuffer("optimiser", poplar.FLOAT, shard, repeats=2)
        rows = graph.addConstant(poplar.UNSIGNED_INT, [2], [0, 1], "rows")
        graph.setTileMapping(rows, 0)
        held = poplar.concat([cbr.createReplicaSlice(poplar.FLOAT).expand([0]) for _ in range(2)])
        step.add(prog.Copy(state, held, rows))
        momentum(graph, held[1], held[0], g, step)
        step.add(prog.Copy(held, state, rows))
        gathered = gcl.allGatherCrossReplica(graph, held[0], step, group)
        step.add(prog.Copy(cbr.undoRearrangeForCollective(gathered), w))
    else:
        g = gcl.allReduceCrossReplica(graph, grad, gcl.CollectiveOperator.MEAN, step, group)
        velocity = graph.addVariable(poplar.FLOAT, [FEATURES], "momentum")
        graph.setTileMapping(velocity, 3)
        graph.setInitialValue(velocity, np.zeros(FEATURES, np.float32))
        momentum(graph, velocity, w, g, step)
    for name, t in (("x", x), ("y", y), ("w", w)):
        graph.createHostWrite(name, t)
    graph.createHostRead("w/r", w)
    engine = poplar.Engine(graph, prog.Sequence([init, prog.Repeat(STEPS, step)]))
    engine.load(device)
    groups = group.groups(REPLICAS)
    for r in range(REPLICAS):
        engine.writeTensor("x", x_data[r], replicaIndex=r)
        engine.writeTensor("y", y_data[r], replicaIndex=r)
        engine.writeTensor("w", w0, replicaIndex=r)
    if sharded:  # each replica's shard of the master weights; its momentum starts at zero (never written)
        host = cbr.getHostRearrangement()
        shards = host.rearrangeForCollective(w0, np.zeros(host.getNumRearrangedTensorElems(), np.float32), 4)
        for members in groups:
            for p, r in enumerate(members):
                engine.copyToRemoteBuffer(shards[p * shard:(p + 1) * shard].copy(), "optimiser", 0,
                                          replicaIndex=r)
    engine.run()
    if sharded:  # the master weights in Streaming Memory, gathered on the host, are the weights
        for members in groups:
            master = np.zeros([len(members), shard], np.float32)
            for p, r in enumerate(members):
                engine.copyFromRemoteBuffer("optimiser", master[p], 0, replicaIndex=r)
            weights = host.undoRearrangeForCollective(master, np.zeros(FEATURES, np.float32), 4)
            np.testing.assert_array_equal(weights, engine.readTensor("w/r", replicaIndex=members[0]))
    return [engine.readTensor("w/r", replicaIndex=r) for r in range(REPLICAS)]


def reference(group: gcl.CommGroup, data: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[np.ndarray]:
    """The same training in numpy (float64), every replica's weights."""
    x, y, w0 = data
    out = [np.zeros(FEATURES)] * REPLICAS
    for members in group.groups(REPLICAS):
        w, m = w0.astype(np.float64), np.zeros(FEATURES)
        for _ in range(STEPS):
            grads = [2.0 / BATCH * x[r].T @ (x[r] @ w - y[r]) for r in members]
            m = BETA * m + np.mean(grads, axis=0)
            w = w - LR * m
        for r in members:
            out[r] = w
    return out


@pytest.mark.parametrize("group", [gcl.CommGroup(gcl.CommGroupType.ALL),
                                   gcl.CommGroup(gcl.CommGroupType.CONSECUTIVE, 2),
                                   gcl.CommGroup(gcl.CommGroupType.ORTHOGONAL, 2)], ids=str)
def test_sharded_optimiser_state_in_streaming_memory_trains_as_the_whole_state(group):
    rng = np.random.default_rng(7)
    data = (rng.standard_normal([REPLICAS, BATCH, FEATURES]).astype(np.float32),
            rng.standard_normal([REPLICAS, BATCH]).astype(np.float32),
            rng.standard_normal(FEATURES).astype(np.float32))
    whole, sharded, expected = train(group, False, data), train(group, True, data), reference(group, data)
    for r in range(REPLICAS):
        np.testing.assert_allclose(sharded[r], whole[r], rtol=1e-5, atol=1e-6, err_msg=f"replica {r}")
        np.testing.assert_allclose(sharded[r], expected[r], rtol=1e-4, atol=1e-5, err_msg=f"replica {r}")
    if group.type is not gcl.CommGroupType.ALL:  # the groups trained apart, on their own data
        assert not np.allclose(sharded[0], sharded[1]) or not np.allclose(sharded[0], sharded[2])
