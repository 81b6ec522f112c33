"""Field declarations and templated codelets."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import InOut, Input, Output, Vector, VectorList, Vertex
from poplar_py import program as prog
from poplar_py.vertex import Direction, FieldKind, TypeParam

T = TypeParam("T")


class Forms(Vertex):
    a: Input[float]
    b: Output[Vector[int]]
    c: InOut[VectorList[poplar.HALF]]
    d: Vector[Input[Vector[poplar.UNSIGNED_INT]]]
    e: Vector[Output[float]]
    f: bool
    g: Vector[poplar.SHORT]

    def compute(self):
        pass


class Fill(Vertex):
    vertexName = "test::Fill"
    out: Output[Vector[T]]
    value: T

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = self.value


def test_field_forms():
    f = Forms.fields
    expected = {
        "a": (Direction.INPUT, FieldKind.SCALAR, poplar.FLOAT),
        "b": (Direction.OUTPUT, FieldKind.VECTOR, poplar.INT),
        "c": (Direction.INOUT, FieldKind.VECTOR_LIST, poplar.HALF),
        "d": (Direction.INPUT, FieldKind.VECTOR_LIST, poplar.UNSIGNED_INT),
        "e": (Direction.OUTPUT, FieldKind.VECTOR, poplar.FLOAT),
        "f": (Direction.STATE, FieldKind.SCALAR, poplar.BOOL),
        "g": (Direction.STATE, FieldKind.VECTOR, poplar.SHORT),
    }
    assert {k: (s.direction, s.kind, s.type) for k, s in f.items()} == expected
    assert list(f) == list("abcdefg")


class LaidOut(Vertex):
    x: Input[Vector[float, poplar.VectorLayout.ONE_PTR, 8]]
    y: Output[Vector[float, poplar.VectorLayout.COMPACT_PTR]]
    z: InOut[VectorList[int, poplar.VectorListLayout.DELTANELEMENTS]]

    def compute(self):
        for i in range(len(self.y)):
            self.y[i] = self.x[i] * 2.0
        for j in range(len(self.z)):
            for i in range(len(self.z[j])):
                self.z[j][i] += 1


def test_vector_layouts_are_taken_and_stored_alike():
    assert {k: (s.kind, s.type) for k, s in LaidOut.fields.items()} == {
        "x": (FieldKind.VECTOR, poplar.FLOAT), "y": (FieldKind.VECTOR, poplar.FLOAT),
        "z": (FieldKind.VECTOR_LIST, poplar.INT)}
    m = poplar.IPUModel()
    m.tilesPerIPU = 1
    g = poplar.Graph(m.createDevice())
    g.addCodelets(LaidOut)
    x, y = g.addVariable(poplar.FLOAT, [3]), g.addVariable(poplar.FLOAT, [3])
    z = g.addVariable(poplar.INT, [5])
    for t in (x, y, z):
        g.setTileMapping(t, 0)
    cs = g.addComputeSet("c")
    g.setTileMapping(g.addVertex(cs, "LaidOut", {"x": x, "y": y, "z": [z[:2], z[2:]]}), 0)
    for name, t in (("x", x), ("y", y), ("z", z)):
        (g.createHostWrite if name == "x" else g.createHostRead)(name, t)
    e = poplar.Engine(g, prog.Execute(cs))
    e.load(m.createDevice())
    e.writeTensor("x", np.array([1, 2, 3], np.float32))
    e.run()
    assert e.readTensor("y").tolist() == [2, 4, 6] and e.readTensor("z").tolist() == [1] * 5
    # as the IPU stores them: x and y 32-bit pointers, z a pointer and count and a 32-bit
    # (offset, size) word a row
    memory = e.getProfile()["compilation"]["tiles"][0]["memory"]["byCategory"]
    assert memory["vertex state"] == 4 + 4 + 8 + 2 * 4


class Nested(Vertex):
    rows: Vector[Input[Vector[float]]]
    packed: Vector[Input[Vector[float, poplar.VectorLayout.ONE_PTR]]]
    scale: poplar.HALF
    offs: Vector[int]
    out: Output[float]

    def compute(self):
        total = 0.0
        for j in range(len(self.rows)):
            total += self.rows[j][self.offs[j]] * self.packed[j][0]
        self.out = total * self.scale


def test_vertex_state_is_counted_as_the_ipu_stores_it():
    assert [s.record_bytes for s in Nested.fields.values()] == [8, 8, 2, 8, 4]
    assert [Nested.fields[f].row_bytes for f in ("rows", "packed")] == [8, 4]  # a SPAN, a pointer
    assert poplar.vertex.state_record_bytes(Nested.fields.values()) == 32  # offs aligned at 20
    m = poplar.IPUModel()
    m.tilesPerIPU = 1
    g = poplar.Graph(m.createDevice())
    g.addCodelets(Nested)
    x, out = g.addConstant(poplar.FLOAT, [3, 2], np.arange(6.0)), g.addVariable(poplar.FLOAT, [])
    g.setTileMapping(x, 0)
    g.setTileMapping(out, 0)
    cs = g.addComputeSet("c")
    v = g.addVertex(cs, "Nested", {"rows": x, "packed": x, "out": out})
    g.setInitialValue(v["scale"], 0.5)
    g.setInitialValue(v["offs"], [1, 0, 1])
    g.setTileMapping(v, 0)
    g.createHostRead("out", out)
    e = poplar.Engine(g, prog.Execute(cs))
    e.load(m.createDevice())
    e.run()
    assert float(e.readTensor("out")) == (1 * 0 + 2 * 2 + 5 * 4) * 0.5
    memory = e.getProfile()["compilation"]["tiles"][0]["memory"]["byCategory"]
    # the record; the two tables and offs, 8-byte aligned together
    assert memory["vertex state"] == 32 + (3 * 8 + 3 * 4 + 16 + 4)


def test_memory_constraints_are_checked_and_recorded():
    @poplar.constraint("elem(*x) != elem(*y)")
    class Constrained(Vertex):
        x: Input[Vector[float]]
        y: Output[Vector[float]]

        def compute(self):
            for i in range(len(self.y)):
                self.y[i] = self.x[i] + 1.0

    assert Constrained.memoryConstraints == ("elem(*x) != elem(*y)",)
    assert set(Constrained.fields) == {"x", "y"}
    m = poplar.IPUModel()
    m.tilesPerIPU = 1
    g = poplar.Graph(m.createDevice())
    g.addCodelets(Constrained)
    x, y = g.addConstant(poplar.FLOAT, [2], [1.0, 2.0]), g.addVariable(poplar.FLOAT, [2])
    g.setTileMapping(x, 0)
    g.setTileMapping(y, 0)
    cs = g.addComputeSet("c")
    g.setTileMapping(g.addVertex(cs, "Constrained", {"x": x, "y": y}), 0)
    g.createHostRead("y", y)
    e = poplar.Engine(g, prog.Execute(cs))
    e.load(m.createDevice())
    e.run()
    assert e.readTensor("y").tolist() == [2.0, 3.0]
    with pytest.raises(poplar.CodeletCompileError, match="Constrained has no field 'z'"):
        poplar.constraint("elem(*x) != elem(*z)")(Constrained)
    with pytest.raises(poplar.InvalidArgumentError, match="is not of the form"):
        poplar.constraint("x != y")


def test_bad_vector_layouts():
    with pytest.raises(poplar.CodeletCompileError, match=r"expected Vector\[T\], Vector\[T, VectorLayout"):
        class Bad(Vertex):
            x: Input[Vector[float, poplar.VectorListLayout.DELTAN]]
    with pytest.raises(poplar.CodeletCompileError, match="alignment in bytes"):
        class Bad2(Vertex):
            x: Input[Vector[float, poplar.VectorLayout.SPAN, "8"]]


def test_bad_annotation_names_the_field():
    with pytest.raises(poplar.CodeletCompileError, match=r"Bad\.x.*unsupported annotation"):
        class Bad(Vertex):
            x: Input[str]


def test_template_instantiation_and_names():
    assert Fill.typeParams == ("T",)
    f = Fill.instantiate(poplar.FLOAT)
    assert f.vertexName == "test::Fill<float>" and f.typeParams == ()
    assert f.fields["value"].type == poplar.FLOAT
    assert Fill.instantiate("float") is f
    assert Fill.instantiate(poplar.UNSIGNED_INT).vertexName == "test::Fill<unsigned int>"
    with pytest.raises(poplar.CodeletCompileError, match="takes 1 template argument"):
        Fill.instantiate(poplar.FLOAT, poplar.INT)


@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.INT, poplar.UNSIGNED_INT, poplar.HALF, poplar.BOOL])
def test_templated_vertex_by_name(type_):
    m = poplar.IPUModel()
    m.tilesPerIPU = 2
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Fill)
    t = graph.addVariable(type_, [5], "t")
    graph.setTileMapping(t, 1)
    cs = graph.addComputeSet()
    v = graph.addVertex(cs, f"test::Fill<{type_}>", {"out": t})
    graph.setInitialValue(v["value"], 1)
    graph.setTileMapping(v, 1)
    assert graph.hasCodelet(f"test::Fill<{type_}>")
    graph.createHostRead("t", t)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("t"), np.ones(5, type_.dtype))


def test_template_name_errors():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    graph.addCodelets(Fill)
    cs = graph.addComputeSet()
    with pytest.raises(poplar.UnknownVertexTypeError, match="is a template"):
        graph.addVertex(cs, "test::Fill")
    with pytest.raises(poplar.UnknownVertexTypeError, match="not a poplar element type"):
        graph.addVertex(cs, "test::Fill<quaternion>")
    with pytest.raises(poplar.CodeletCompileError, match="takes 1 template argument"):
        graph.addVertex(cs, "test::Fill<float,int>")
    with pytest.raises(poplar.UnknownVertexTypeError, match="unknown vertex type 'Nope<float>'"):
        graph.addVertex(cs, "Nope<float>")
