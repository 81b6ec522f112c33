"""Bad arguments to the graph, tensor and program API raise PoplarErrors naming the culprit."""

from __future__ import annotations

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog
from poplar_py.errors import (
    GraphConnectionError,
    GraphMemoryAllocationError,
    InvalidArgumentError,
    InvalidTileMappingError,
    PoplarError,
    ProgramError,
    TensorCreationError,
)


class Twice(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = self.x[i] * 2.0


@pytest.fixture
def device():
    return poplar.IPUModel().createDevice()


@pytest.fixture
def graph(device):
    g = poplar.Graph(device)
    g.addCodelets(Twice)
    return g


@pytest.mark.parametrize("shape", [[2.5], [2.0, 2], None, "4", [None], 4, [True, 2]])
def test_shapes_must_be_lists_of_integers(graph, shape):
    with pytest.raises(InvalidArgumentError, match="'v'"):
        graph.addVariable(poplar.FLOAT, shape, "v")


def test_a_negative_dimension_is_a_tensor_creation_error(graph):
    with pytest.raises(TensorCreationError, match="negative"):
        graph.addVariable(poplar.FLOAT, [2, -1], "v")


@pytest.mark.parametrize("bad", [None, object(), 3.5, [poplar.FLOAT]])
def test_element_types_are_checked(graph, bad):
    with pytest.raises(InvalidArgumentError, match="element type"):
        graph.addVariable(bad, [4])
    with pytest.raises(TypeError):  # the builtin meaning is kept
        graph.addVariable(bad, [4])


@pytest.mark.parametrize("values", [None, "abc", [1.0, None], [object(), 1]])
def test_constants_need_numbers(graph, values):
    with pytest.raises(InvalidArgumentError, match=r"'c'.*numbers"):
        graph.addConstant(poplar.FLOAT, [2], values, "c")


def test_views_reject_floats(graph):
    t = graph.addVariable(poplar.FLOAT, [4, 2], "t")
    for call in (lambda: t.reshape([2.0, 4]), lambda: t.dimShuffle([1.0, 0]), lambda: t.expand([0.5]),
                 lambda: t.squeeze([None]), lambda: t.reshapePartial(0, 1, [2.0, 2]),
                 lambda: t[0.5:2], lambda: poplar.concat([t, t], 0.0)):
        with pytest.raises(InvalidArgumentError):
            call()
    assert t.reshape(np.array([8])).shape() == [8]  # numpy integers are integers


def test_concat_names_what_is_not_a_tensor(graph):
    t = graph.addVariable(poplar.FLOAT, [4], "t")
    with pytest.raises(InvalidArgumentError, match="item 1 is a int"):
        poplar.concat([t, 3])
    with pytest.raises(InvalidArgumentError, match="list of tensors"):
        poplar.concat("ab")


@pytest.mark.parametrize("mapping", ["1", None, 1.5, [[0, 1]], [["ab"]], [[(0, 1.5)]], True])
def test_tile_mappings_are_tiles_or_interval_lists(graph, mapping):
    t = graph.addVariable(poplar.FLOAT, [4], "t")
    with pytest.raises(InvalidArgumentError, match="'t'"):
        graph.setTileMapping(t, mapping)
    with pytest.raises(InvalidTileMappingError, match="out of range"):
        graph.setTileMapping(t, 10**6)


def test_a_vertex_tile_must_be_an_integer(graph):
    v = graph.addVertex(graph.addComputeSet("cs"), "Twice")
    with pytest.raises(InvalidArgumentError, match="Twice"):
        graph.setTileMapping(v, "1")


def test_huge_tensors_are_refused_before_anything_is_allocated(graph):
    with pytest.raises(GraphMemoryAllocationError, match=r"'big'.*1472 tiles"):
        graph.addVariable(poplar.FLOAT, [10**12], "big")
    t = graph.addVariable(poplar.FLOAT, [4], "t")
    with pytest.raises(TensorCreationError, match=r"'t'.*broadcast"):
        t.broadcast(10**9, 0)
    with pytest.raises(TensorCreationError, match="upsample"):
        t.upsample(10**9, 0)
    with pytest.raises(GraphMemoryAllocationError, match="cloneN"):
        graph.cloneN(t, 10**9)
    assert t.broadcast(1000, 0).numElements() == 4000


def test_none_is_not_a_constant_value(graph):
    cs = graph.addComputeSet("cs")
    y = graph.addVariable(poplar.FLOAT, [2], "y")
    with pytest.raises(GraphConnectionError, match=r"field 'x'.*None"):
        graph.addVertex(cs, "Twice", {"x": None, "y": y})


def test_handles_of_another_graph_are_refused(device, graph):
    other = poplar.Graph(device)
    other.addCodelets(Twice)
    ocs = other.addComputeSet("theirs")
    ov = other.addVertex(ocs, "Twice")
    mine = graph.addVariable(poplar.FLOAT, [2], "mine")
    theirs = other.addVariable(poplar.FLOAT, [2], "theirs")
    cs = graph.addComputeSet("cs")
    for call in (lambda: graph.addVertex(ocs, "Twice"), lambda: graph.setTileMapping(ov, 0),
                 lambda: graph.connect(ov["x"], mine), lambda: graph.setFieldSize(ov["x"], 2),
                 lambda: graph.setPerfEstimate(ov, 10), lambda: graph.addVertex(cs, "Twice", {"x": theirs}),
                 lambda: graph.createHostWrite("w", theirs), lambda: graph.createHostRead("r", theirs),
                 lambda: graph.setTileMapping(theirs, 0), lambda: graph.clone(theirs)):
        with pytest.raises(PoplarError, match=r"another graph|not a compute set of this graph"):
            call()
    assert graph.getNumVertices() == 0  # nothing changed
    with pytest.raises(ProgramError, match="'theirs' belongs to another graph"):
        poplar.Engine(graph, prog.Execute(ocs))
    f = other.addFunction(prog.Sequence())
    with pytest.raises(ProgramError, match="not added to this graph"):
        poplar.Engine(graph, prog.Call(f))


def test_recursive_programs_are_refused_when_the_engine_is_built(graph):
    loop = prog.Sequence(name="loop")
    loop.add(loop)
    with pytest.raises(ProgramError, match="'loop' contains itself"):
        poplar.Engine(graph, loop)
    body = prog.Sequence()
    f = graph.addFunction(body)
    body.add(prog.If(graph.addConstant(poplar.INT, [], 1), prog.Call(f)))
    with pytest.raises(ProgramError, match="function 0 calls itself"):
        poplar.Engine(graph, prog.Call(f))


def test_shared_programs_and_repeated_calls_are_not_recursion(device):
    graph = poplar.Graph(device)
    shared = prog.Sequence()
    f = graph.addFunction(prog.Sequence([shared, shared]))
    poplar.Engine(graph, prog.Sequence([prog.Call(f), prog.Call(f), shared]))


def test_debug_contexts_name_things(graph):
    dc = poplar.DebugContext(poplar.DebugContext("layer1"), "weights")
    assert dc.getPathName() == "layer1/weights"
    assert graph.addVariable(poplar.FLOAT, [2], dc).name == "layer1/weights"
    assert graph.addVariable(poplar.FLOAT, [2], name="kw").name == "kw"
    assert graph.addVariable(poplar.FLOAT, [2], debugContext=poplar.DebugNameAndId("id")).name == "id"
    t = graph.addVariable(poplar.FLOAT, [2], poplar.VariableMappingMethod.LINEAR, debugContext="lin")
    assert t.name == "lin"
    assert graph.addConstant(poplar.FLOAT, [1], 1.0, debugContext=dc).name == "layer1/weights"
    assert graph.addComputeSet(poplar.DebugContext("cs1")).name == "cs1"
    copy = prog.Copy(t, graph.clone(t), dontOutline=True, debugContext=dc)
    assert copy.name == "layer1/weights"
    assert prog.Sequence(debugContext="s").name == "s"
    with pytest.raises(InvalidArgumentError, match="debug name"):
        graph.addVariable(poplar.FLOAT, [2], 3.5)


def test_replication_factor_is_checked(device):
    with pytest.raises(poplar.GraphReplicationError, match=r"replication factor 4 does not divide .* 1 IPUs"):
        poplar.Graph(device, replication_factor=4)
    with pytest.raises(InvalidArgumentError, match="replication_factor"):
        poplar.Graph(device, replication_factor=2.0)
    with pytest.raises(InvalidArgumentError, match="Target or a Device"):
        poplar.Graph(None)


def test_counts_are_integers(graph):
    with pytest.raises(ProgramError, match="Repeat count"):
        prog.Repeat(2.0, prog.Sequence())
    with pytest.raises(InvalidArgumentError, match="numElements"):
        graph.addHostToDeviceFIFO("in", poplar.FLOAT, 4.5)
    v = graph.addVertex(graph.addComputeSet("cs"), "Twice")
    with pytest.raises(InvalidArgumentError, match="setPerfEstimate"):
        graph.setPerfEstimate(v, "10")


def test_slices_take_indices_and_name_what_is_not_an_interval(graph):
    t = graph.addVariable(poplar.FLOAT, [6, 2], "t")
    first, last = t.slices([1, 5])  # Poplar's overload of indices: slices of size 1
    assert first.shape() == [1, 2] and last == t.slice(5, 6)
    assert t.slices([1], 1)[0] == t.slice(1, 2, 1)
    with pytest.raises(InvalidArgumentError, match=r"'t'.*slices: 2.5 is not an interval"):
        t.slices([2.5])
    with pytest.raises(InvalidArgumentError, match=r"'t'.*slices needs a list"):
        t.slices(3)
    with pytest.raises(TensorCreationError, match=r"'t'.*slice \[6, 7\) is out of range"):
        t.slices([6])


def test_wrong_kinds_keep_their_domain_error_and_are_argument_errors(graph):
    """Errors of the wrong kind are InvalidArgumentError (a TypeError) and still the class callers
    of that domain catch."""
    cs = graph.addComputeSet("cs")
    calls = ((lambda: prog.Execute("cs"), ProgramError), (lambda: prog.Repeat(2, None), ProgramError),
             (lambda: graph.addVertex(cs, "Twice", {"x": None}), GraphConnectionError))
    for call, domain in calls:
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert isinstance(info.value, domain) and isinstance(info.value, TypeError)
