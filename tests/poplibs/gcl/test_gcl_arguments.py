"""Every argument of every gcl function is checked before the graph changes: a wrong kind
raises an InvalidArgumentError naming the function and the argument."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import GraphReplicationError, InvalidArgumentError
from poplibs_py import gcl, popops
from poplibs_py.poputil import PoplibsArgumentError

Op = gcl.CollectiveOperator

#: name: call(graph, t, prog, **keywords), with a valid operator where the function takes one
FUNCTIONS = {
    "allReduceCrossReplica": lambda g, t, p, **k: gcl.allReduceCrossReplica(g, t, Op.ADD, p, **k),
    "allReduceInPlaceCrossReplica":
        lambda g, t, p, **k: gcl.allReduceInPlaceCrossReplica(g, t, Op.MAX, p, **k),
    "reduceScatterCrossReplica": lambda g, t, p, **k: gcl.reduceScatterCrossReplica(g, t, Op.MEAN, p, **k),
    "allGatherCrossReplica": lambda g, t, p, **k: gcl.allGatherCrossReplica(g, t, p, **k),
    "broadcastCrossReplica": lambda g, t, p, **k: gcl.broadcastCrossReplica(g, t, p, **k),
    "allReduceWithinReplica": lambda g, t, p, **k: gcl.allReduceWithinReplica(g, t, Op.MUL, p, **k),
    "allGatherWithinReplica": lambda g, t, p, **k: gcl.allGatherWithinReplica(g, t, p, **k),
    "allToAllCrossReplica": lambda g, t, p, **k: gcl.allToAllCrossReplica(g, t, p, **k),
    "reduceScatterWithinReplica": lambda g, t, p, **k: gcl.reduceScatterWithinReplica(g, t, Op.ADD, p, **k),
}

#: bad argument: (call(function, graph, t, seq), what the message says after the function's name)
BAD = {
    "graph": (lambda f, g, t, s: f(None, t, s), "graph must be a poplar Graph, got NoneType"),
    "tensor": (lambda f, g, t, s: f(g, None, s), "the tensor must be a tensor, got NoneType"),
    "tensor-array": (lambda f, g, t, s: f(g, np.zeros([2, 3]), s),
                     "the tensor must be a tensor, got ndarray"),
    "prog-none": (lambda f, g, t, s: f(g, t, None), "prog must be a program Sequence .* got NoneType"),
    "prog-execute": (lambda f, g, t, s: f(g, t, prog.Execute(g.addComputeSet("cs"))),
                     "prog must be a program Sequence .* got Execute"),
    "prog-list": (lambda f, g, t, s: f(g, t, [s]), "prog must be a program Sequence .* got list"),
    "debugContext": (lambda f, g, t, s: f(g, t, s, debugContext=3), "debugContext: a debug name must be"),
    "options": (lambda f, g, t, s: f(g, t, s, options=["a"]), "options must be a dict of strings, got list"),
    "option-value": (lambda f, g, t, s: f(g, t, s, options={"method": 2}),
                     "options must be a dict of strings: option 'method' is 2"),
}


def replicated():
    """2 replicas of 2 IPUs of 4 tiles, a [2, 3] float tensor whose row i lives on IPU i."""
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = 4, 4
    device = model.createDevice()
    graph = poplar.Graph(device, replication_factor=2)
    popops.addCodelets(graph)
    t = graph.addVariable(poplar.FLOAT, [2, 3], "t")
    graph.setTileMapping(t[0], 0)
    graph.setTileMapping(t[1], 4)
    return device, graph, t


def state(graph, seq):
    """What a failed call must leave as it was."""
    return graph.freeze().text(10**6), graph.getNumVertices(), len(prog.children(seq))


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("function", list(FUNCTIONS))
def test_a_bad_argument_is_named_and_changes_nothing(function, bad):
    _, graph, t = replicated()
    seq = prog.Sequence()
    call, message = BAD[bad]
    before = state(graph, seq) if bad != "prog-execute" else None
    with pytest.raises(InvalidArgumentError, match=f"^{function}: {message}"):
        call(FUNCTIONS[function], graph, t, seq)
    if before is not None:
        assert state(graph, seq) == before


@pytest.mark.parametrize("function", ["allReduceCrossReplica", "allReduceInPlaceCrossReplica",
                                      "reduceScatterCrossReplica", "allReduceWithinReplica",
                                      "reduceScatterWithinReplica"])
def test_operators_are_checked_against_the_element_type(function):
    _, graph, t = replicated()
    flags = graph.addVariable(poplar.BOOL, [2, 3], "flags")
    graph.setTileMapping(flags, 0)
    call = getattr(gcl, function)
    seq = prog.Sequence()
    before = state(graph, seq)
    with pytest.raises(PoplibsArgumentError, match=f"^{function}: op must be a gcl.CollectiveOperator"):
        call(graph, t, None, seq)
    with pytest.raises(PoplibsArgumentError, match=f"^{function}: LOGICAL_OR cannot combine tensor 't' of "
                                                   "type float"):
        call(graph, t, Op.LOGICAL_OR, seq)
    for op in (Op.ADD, Op.SQUARE_ADD, Op.MEAN, Op.MUL):
        with pytest.raises(PoplibsArgumentError, match=f"{op.name} cannot combine tensor 'flags' of type"):
            call(graph, flags, op, seq)
    assert state(graph, seq) == before


def test_the_root_replica_is_an_integer_in_range():
    _, graph, t = replicated()
    seq = prog.Sequence()
    for root in (2.0, True, "1", None, np.float32(1)):
        with pytest.raises(PoplibsArgumentError, match=r"^broadcastCrossReplica: rootReplica must be an int"):
            gcl.broadcastCrossReplica(graph, t, seq, rootReplica=root)
    for root in (2, -1, np.int64(2)):
        with pytest.raises(GraphReplicationError, match=rf"^broadcastCrossReplica: rootReplica {root} is out "
                                                        r"of range: the graph has 2 replica\(s\), 0..1"):
            gcl.broadcastCrossReplica(graph, t, seq, rootReplica=root)


@pytest.mark.parametrize("root", [np.int64(1), np.uint8(0), np.int32(1)])
def test_a_numpy_root_replica_broadcasts_that_replica(root):
    device, graph, t = replicated()
    graph.createHostWrite("t", t)
    seq = prog.Sequence()
    out = gcl.broadcastCrossReplica(graph, t, seq, rootReplica=root, debugContext="b",
                                    options={"method": "auto"})
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    data = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    for r in range(2):
        engine.writeTensor("t", data[r], replicaIndex=r)
    engine.run()
    for r in range(2):
        np.testing.assert_array_equal(engine.readTensor("out", replicaIndex=r), data[int(root)])
