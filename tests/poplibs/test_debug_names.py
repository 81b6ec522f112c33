"""PopLibs take a debug name positionally or by keyword, as a string or a poplar.DebugContext."""

from __future__ import annotations

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popops


def test_debug_contexts_name_poplibs_results():
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    a = graph.addVariable(poplar.FLOAT, [4], poplar.VariableMappingMethod.LINEAR, debugContext="a")
    seq = prog.Sequence(debugContext=poplar.DebugContext("main"))
    layer = poplar.DebugContext("layer")
    added = popops.add(graph, a, a, seq, poplar.DebugContext(layer, "add"))
    total = popops.reduce(graph, a, [0], popops.Operation.ADD, seq, poplar.DebugNameAndId("sum"))
    square = poplin.matMul(graph, a.reshape([2, 2]), a.reshape([2, 2]), seq, poplar.DebugContext("mm"))
    popops.scaledAddTo(graph, added, a, 2.0, seq, poplar.DebugContext("axpy"))
    assert added.name == "layer/add" and total.name.startswith("sum") and square.name.startswith("mm")
    graph.createHostWrite("a", a)
    graph.createHostRead("added", added)
    graph.createHostRead("total", total)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.writeTensor("a", np.arange(4, dtype=np.float32))
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("added"), np.arange(4) * 4)
    assert float(engine.readTensor("total")) == 6.0
