"""Lowering: a program object placed in many parents becomes one step tree, whose leaves the
profile counts once per run, as Poplar's profile counts a program's runs by its id."""

import numpy as np
from support import make_graph

import poplar_py as poplar
from poplar_py import InOut, Vector, Vertex
from poplar_py import program as prog


class AddOne(Vertex):
    x: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] = self.x[i] + 1.0
        return True


def _build(shared: bool, parents: int = 6):
    device, graph = make_graph(4)
    graph.addCodelets(AddOne)
    a = graph.addVariable(poplar.FLOAT, [8], "a")
    b = graph.addVariable(poplar.FLOAT, [8], "b")
    graph.setTileMapping(a, 0)
    graph.setTileMapping(b, 3)
    cs = graph.addComputeSet("add one")
    graph.setTileMapping(graph.addVertex(cs, "AddOne", {"x": a}), 1)  # a is exchanged in and out

    def body():
        return prog.Sequence([prog.Execute(cs), prog.Copy(a, b), prog.Copy(b, a)])

    inner = body()
    program = prog.Sequence([prog.Sequence([inner if shared else body()]) for _ in range(parents)])
    graph.createHostWrite("a", a)
    graph.createHostRead("b", b)
    return device, poplar.Engine(graph, program)


def _run(device, engine):
    engine.load(device)
    engine.writeTensor("a", np.arange(8, dtype=np.float32))
    engine.run()
    return engine.readTensor("b"), engine.getProfile()["execution"]


def test_a_sequence_in_many_parents_is_lowered_once_and_counted_per_run():
    shared_out, shared = _run(*_build(shared=True))
    apart_out, apart = _run(*_build(shared=False))
    np.testing.assert_array_equal(shared_out, np.arange(8) + 6)
    np.testing.assert_array_equal(apart_out, shared_out)
    assert [(s["name"], s["count"]) for s in shared["steps"]] == [
        ("add one", 6), ("Copy(a -> b)", 6), ("Copy(b -> a)", 6)]
    assert len(apart["steps"]) == 18 and {s["count"] for s in apart["steps"]} == {1}
    assert shared["totalCycles"] == apart["totalCycles"]
    for row in shared["steps"]:  # each shared step costs what each of its separate copies costs
        copies = [s for s in apart["steps"] if s["name"] == row["name"]]
        assert {s["cycles"] for s in copies} == {row["cycles"]}
