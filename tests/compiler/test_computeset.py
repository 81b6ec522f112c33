"""Compute sets through the engine: state tables, exchange buffers, checks, both codelet modes."""

import io

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import InOut, Input, MultiVertex, Output, Vector, VectorList, Vertex
from poplar_py import program as prog

MODES = ["native", "interpreter"]


class Scale(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]
    k: float

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = self.x[i] * self.k
        return True


class RowSums(Vertex):
    rows: Input[VectorList[float]]
    out: Output[Vector[float]]

    def compute(self):
        for r in range(len(self.rows)):
            s = 0.0
            for v in self.rows[r]:
                s += v
            self.out[r] = s


class Accumulate(Vertex):
    acc: InOut[int]
    step: int

    def compute(self):
        self.acc += self.step


class Gather(Vertex):
    src: Input[Vector[int]]
    idx: Vector[int]
    out: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.idx)):
            self.out[i] = self.src[self.idx[i]]


class Halves(MultiVertex):
    x: InOut[Vector[float]]

    def compute(self, workerId):
        n = len(self.x)
        for i in range(workerId, n, self.numWorkers()):
            self.x[i] = self.x[i] * 0.5


class Fails(Vertex):
    x: Input[float]

    def compute(self):
        return self.x < 0.0


CODELETS = [Scale, RowSums, Accumulate, Gather, Halves, Fails]


def make(tiles: int = 8):
    m = poplar.IPUModel()
    m.tilesPerIPU = tiles
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(CODELETS)
    return device, graph


def run(device, graph, program, mode, reads=(), **options):
    engine = poplar.Engine(graph, program, {"codelets.mode": mode, **options})
    engine.load(device)
    engine.run(0)
    return engine, {name: engine.readTensor(name) for name in reads}


@pytest.mark.parametrize("mode", MODES)
def test_remote_and_strided_inputs_are_exchanged(mode):
    device, graph = make()
    a = graph.addVariable(poplar.FLOAT, [8, 6], "a")
    for r in range(8):
        graph.setTileMapping(a[r], r)
    out = graph.addVariable(poplar.FLOAT, [6, 8], "out")
    graph.setTileMapping(out, 7)
    cs = graph.addComputeSet("scale")
    for c in range(6):  # column c of a is strided and spread over all tiles
        v = graph.addVertex(cs, "Scale", {"x": a.transpose()[c], "y": out[c]})
        graph.setInitialValue(v["k"], float(c + 1))
        graph.setTileMapping(v, c)
    graph.createHostWrite("a", a)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    engine.load(device)
    host = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    engine.writeTensor("a", host)
    engine.run()
    expected = host.T * np.arange(1, 7, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(engine.readTensor("out"), expected)


@pytest.mark.parametrize("mode", MODES)
def test_vector_list_from_2d_tensor_and_list(mode):
    device, graph = make()
    m = graph.addVariable(poplar.FLOAT, [3, 5], "m")
    graph.setTileMapping(m, 1)
    out2 = graph.addVariable(poplar.FLOAT, [3], "out2")
    out3 = graph.addVariable(poplar.FLOAT, [3], "out3")
    graph.setTileMapping(out2, 2)
    graph.setTileMapping(out3, 3)
    cs = graph.addComputeSet()
    v1 = graph.addVertex(cs, "RowSums", {"rows": m, "out": out2})
    graph.setTileMapping(v1, 1)
    v2 = graph.addVertex(cs, "RowSums")
    graph.connect(v2["rows"], [m[0].slice(0, 2), m[1], m[2].reverse(0)])
    graph.connect(v2["out"], out3)
    graph.setTileMapping(v2, 3)
    graph.createHostWrite("m", m)
    for name, t in (("out2", out2), ("out3", out3)):
        graph.createHostRead(name, t)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    engine.load(device)
    host = np.arange(15, dtype=np.float32).reshape(3, 5)
    engine.writeTensor("m", host)
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("out2"), host.sum(axis=1))
    np.testing.assert_array_equal(engine.readTensor("out3"), [1.0, host[1].sum(), host[2].sum()])


def test_a_compute_set_without_the_list_vertices_of_another():
    """Each compute set reserves the list tables of the classes it holds: here one of RowSums
    (a list field) and one of Scale alone."""
    device, graph = make()
    m = graph.addVariable(poplar.FLOAT, [2, 3], "m")
    sums, scaled = (graph.addVariable(poplar.FLOAT, [2], name) for name in ("sums", "scaled"))
    for t in (m, sums, scaled):
        graph.setTileMapping(t, 0)
    first, second = graph.addComputeSet("sums"), graph.addComputeSet("scale")
    graph.setTileMapping(graph.addVertex(first, "RowSums", {"rows": m, "out": sums}), 0)
    v = graph.addVertex(second, "Scale", {"x": sums, "y": scaled})
    graph.setInitialValue(v["k"], 2.0)
    graph.setTileMapping(v, 0)
    graph.setInitialValue(m, np.arange(6, dtype=np.float32).reshape(2, 3))
    graph.createHostRead("scaled", scaled)
    _, out = run(device, graph, prog.Sequence([prog.Execute(first), prog.Execute(second)]), "native",
                 reads=("scaled",))
    np.testing.assert_array_equal(out["scaled"], [6.0, 24.0])


def test_vector_list_from_a_concatenation_of_nine_views():
    """A window with a halo, as a stencil builds it: each row's runs are cut from the view's
    runs (not found row by row), and every row reads its own elements."""
    device, graph = make()
    f = graph.addVariable(poplar.FLOAT, [6, 8], "f")
    graph.setTileMapping(f, [[(0, 16)], [(16, 40)], [(40, 48)]])
    ft = f.transpose()  # [8, 6]
    def row(*views):
        return poplar.concat([t.reshape([t.numElements(), 1]) if t.rank() == 1 else t for t in views], 1)

    top = row(f[5, 7].reshape([1, 1]), f[5, 2:6].reshape([1, 4]), f[5, 6].reshape([1, 1]))
    mid = row(ft[1, 1:5], f[1:5, 2:6].reverse(1), f[1:5, 0])
    bottom = row(f[0, ::7][1:].reshape([1, 1]), f[0, 2:6].reshape([1, 4]), f[0, 1].reshape([1, 1]))
    window = poplar.concat([top, mid, bottom], 0)  # [6, 6]
    assert window.block is None  # not one strided block: boxes
    out = graph.addVariable(poplar.FLOAT, [6], "out")
    graph.setTileMapping(out, 2)
    cs = graph.addComputeSet()
    v = graph.addVertex(cs, "RowSums", {"rows": window, "out": out})
    graph.setTileMapping(v, 2)
    ir = graph.freeze()
    e = ir.edges
    rows = e.row[(e.vertex == v.id) & (e.field == 0)]
    assert rows.tolist() == sorted(rows.tolist()) and set(rows.tolist()) == set(range(6))
    graph.createHostWrite("f", f)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    host = np.arange(48, dtype=np.float32).reshape(6, 8) ** 1.5
    engine.writeTensor("f", host)
    engine.run()
    expected = np.concatenate([
        np.concatenate([[[host[5, 7]]], host[5:6, 2:6], [[host[5, 6]]]], 1),
        np.concatenate([host.T[1:2, 1:5].T, host[1:5, 2:6][:, ::-1], host[1:5, 0:1]], 1),
        np.concatenate([[[host[0, 7]]], host[0:1, 2:6], [[host[0, 1]]]], 1)], 0)
    np.testing.assert_allclose(engine.readTensor("out"), expected.sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_inout_state_and_repeat(mode):
    device, graph = make()
    acc = graph.addVariable(poplar.INT, [4], "acc")
    for i in range(4):
        graph.setTileMapping(acc[i], i)
    graph.setInitialValue(acc, [0, 10, 20, 30])
    cs = graph.addComputeSet()
    for i in range(4):
        v = graph.addVertex(cs, "Accumulate", {"acc": acc[i]})
        graph.setInitialValue(v["step"], i + 1)
        graph.setTileMapping(v, (i + 1) % 4)  # remote in-out: exchanged in and out
    graph.createHostRead("acc", acc)
    _, got = run(device, graph, prog.Repeat(5, prog.Execute(cs)), mode, ["acc"])
    np.testing.assert_array_equal(got["acc"], [5, 20, 35, 50])


@pytest.mark.parametrize("mode", MODES)
def test_state_vector_and_multivertex(mode):
    device, graph = make()
    src = graph.addVariable(poplar.INT, [10], "src")
    graph.setTileMapping(src, 0)
    graph.setInitialValue(src, np.arange(10) * 3)
    out = graph.addVariable(poplar.INT, [4], "out")
    graph.setTileMapping(out, 0)
    x = graph.addVariable(poplar.FLOAT, [13], "x")
    graph.setTileMapping(x, 2)
    graph.setInitialValue(x, np.arange(13))
    cs = graph.addComputeSet()
    v = graph.addVertex(cs, "Gather", {"src": src, "out": out})
    graph.setInitialValue(v["idx"], [9, 0, 4, 4])
    graph.setTileMapping(v, 0)
    h = graph.addVertex(cs, "Halves", {"x": x})
    graph.setTileMapping(h, 2)
    graph.createHostRead("out", out)
    graph.createHostRead("x", x)
    _, got = run(device, graph, prog.Execute(cs), mode, ["out", "x"])
    np.testing.assert_array_equal(got["out"], [27, 0, 12, 12])
    np.testing.assert_array_equal(got["x"], np.arange(13, dtype=np.float32) * 0.5)


@pytest.mark.parametrize("mode", MODES)
def test_out_of_bounds_raises_vertex_error(mode):
    device, graph = make()
    src = graph.addVariable(poplar.INT, [4], "src")
    out = graph.addVariable(poplar.INT, [2], "out")
    graph.setTileMapping(src, 5)
    graph.setTileMapping(out, 5)
    cs = graph.addComputeSet("gathering")
    v = graph.addVertex(cs, "Gather", {"src": src, "out": out})
    graph.setInitialValue(v["idx"], [1, 7])
    graph.setTileMapping(v, 5)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    engine.load(device)
    with pytest.raises(poplar.VertexError) as info:
        engine.run()
    message = str(info.value)
    assert "Gather" in message and "src" in message and "7" in message and "tile 5" in message


@pytest.mark.parametrize("mode", MODES)
def test_compute_returning_false_names_the_vertex(mode):
    device, graph = make()
    x = graph.addConstant(poplar.FLOAT, [3], [-1.0, 2.0, -3.0])
    graph.setTileMapping(x, 0)
    cs = graph.addComputeSet("checks")
    for i in range(3):
        v = graph.addVertex(cs, "Fails", {"x": x[i]})
        graph.setTileMapping(v, i)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": mode})
    engine.load(device)
    with pytest.raises(poplar.VertexError, match=r"vertex 1 \(Fails.*tile 1"):
        engine.run()


def test_unconnected_field_and_uninitialised_state():
    _device, graph = make()
    cs = graph.addComputeSet()
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    graph.setTileMapping(x, 0)
    v = graph.addVertex(cs, "Scale", {"x": x})
    graph.setTileMapping(v, 0)
    with pytest.raises(poplar.GraphConnectionError, match=r"field 'y'.*not connected"):
        poplar.Engine(graph, prog.Execute(cs))
    graph.connect(v["y"], graph.addVariable(poplar.FLOAT, [4], "y"))
    with pytest.raises(poplar.GraphConnectionError, match=r"field 'k'.*not initialised"):
        poplar.Engine(graph, prog.Execute(cs))


def test_field_type_and_rank_mismatch():
    _, graph = make()
    cs = graph.addComputeSet()
    v = graph.addVertex(cs, "Scale")
    with pytest.raises(poplar.PoplarTypeError, match=r"field 'x'.*int"):
        graph.connect(v["x"], graph.addVariable(poplar.INT, [4], "ints"))
    with pytest.raises(poplar.GraphConnectionError, match="rank-1"):
        graph.connect(v["x"], graph.addVariable(poplar.FLOAT, [2, 2], "square"))
    const = graph.addConstant(poplar.FLOAT, [4], 1.0)
    with pytest.raises(poplar.GraphConnectionError, match="constants"):
        graph.connect(v["y"], const)
    with pytest.raises(poplar.UnknownFieldError, match="no field 'z'"):
        v["z"]
    with pytest.raises(poplar.UnknownVertexTypeError, match="Nope"):
        graph.addVertex(cs, "Nope")


def test_write_write_race_is_graph_cycle_error():
    _device, graph = make()
    y = graph.addVariable(poplar.FLOAT, [4], "y")
    graph.setTileMapping(y, 0)
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    graph.setTileMapping(x, 0)
    cs = graph.addComputeSet("racy")
    for i in range(2):
        v = graph.addVertex(cs, "Scale", {"x": x, "y": y})
        graph.setInitialValue(v["k"], 1.0)
        graph.setTileMapping(v, i)
    with pytest.raises(poplar.GraphCycleError, match=r"racy.*Scale\.y.*variable 'y'"):
        poplar.Engine(graph, prog.Execute(cs))


def test_read_write_race_is_graph_cycle_error():
    _, graph = make()
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    graph.setTileMapping(x, 0)
    cs = graph.addComputeSet("rw")
    v = graph.addVertex(cs, "Scale", {"x": x, "y": graph.addVariable(poplar.FLOAT, [4], "y")})
    graph.setInitialValue(v["k"], 1.0)
    w = graph.addVertex(cs, "Halves", {"x": x.slice(2, 4)})
    graph.setTileMapping(v, 0)
    graph.setTileMapping(w, 0)
    with pytest.raises(poplar.GraphCycleError, match="reads"):
        poplar.Engine(graph, prog.Execute(cs))


def test_perf_estimates_drive_compute_cycles():
    # 12 vertices with estimate 20 on one tile: 6 workers x 2 rounds x 20 = 240 cycles.
    device, graph = make(tiles=2)
    acc = graph.addVariable(poplar.INT, [12], "acc")
    graph.setTileMapping(acc, 0)
    cs = graph.addComputeSet("twelve")
    for i in range(12):
        v = graph.addVertex(cs, "Accumulate", {"acc": acc[i]})
        graph.setInitialValue(v["step"], 1)
        graph.setTileMapping(v, 0)
        graph.setPerfEstimate(v, 20)
    engine, _ = run(device, graph, prog.Execute(cs), "native")
    step = next(s for s in engine.getProfile()["execution"]["steps"] if s["name"] == "twelve")
    assert step["compute"] == 240


def test_native_kernels_count_cycles_without_estimates():
    device, graph = make(tiles=1)
    x = graph.addVariable(poplar.FLOAT, [64], "x")
    y = graph.addVariable(poplar.FLOAT, [64], "y")
    cs = graph.addComputeSet("counted")
    v = graph.addVertex(cs, "Scale", {"x": x, "y": y})
    graph.setInitialValue(v["k"], 2.0)
    engine, _ = run(device, graph, prog.Execute(cs), "native")
    step = next(s for s in engine.getProfile()["execution"]["steps"] if s["name"] == "counted")
    assert step["compute"] >= 6 * 64  # one worker slot per vertex, several cycles per element


def test_connect_value_to_input_and_print(capsys):
    device, graph = make()
    out = graph.addVariable(poplar.FLOAT, [3], "out")
    graph.setTileMapping(out, 4)
    cs = graph.addComputeSet()
    v = graph.addVertex(cs, "Scale", {"x": [1.0, 2.0, 3.0], "y": out})
    graph.setInitialValue(v["k"], 2.0)
    graph.setTileMapping(v, 4)
    engine = poplar.Engine(graph, prog.Sequence([prog.Execute(cs), prog.PrintTensor("out", out)]))
    stream = io.StringIO()
    engine.setPrintTensorStream(stream)
    engine.load(device)
    engine.run()
    assert stream.getvalue() == "out: [2.0000000 4.0000000 6.0000000]\n"


def test_automatic_vertex_mapping_goes_to_the_data():
    device, graph = make()
    x = graph.addVariable(poplar.FLOAT, [16], "x")
    graph.setTileMapping(x, 6)
    y = graph.addVariable(poplar.FLOAT, [16], "y")
    graph.setTileMapping(y, 6)
    cs = graph.addComputeSet("auto")
    v = graph.addVertex(cs, "Scale", {"x": x, "y": y})
    graph.setInitialValue(v["k"], 1.0)
    engine, _ = run(device, graph, prog.Execute(cs), "native")
    step = next(s for s in engine.getProfile()["execution"]["steps"] if s["name"] == "auto")
    assert step["cycles"] > 0
    with pytest.raises(poplar.InvalidTileMappingError, match="Scale"):
        poplar.Engine(graph, prog.Execute(cs), {"tileMapping.strict": "true"})


class PickHalf(Vertex):
    x: Input[Vector[poplar.HALF]]
    idx: Input[Vector[poplar.UNSIGNED_INT]]
    out: Output[Vector[poplar.HALF]]

    def compute(self):
        for i in range(len(self.idx)):
            self.out[i] = self.x[self.idx[i]]


@pytest.mark.parametrize("mode", MODES)
def test_scattered_fields_of_different_element_sizes(mode):
    # Strided views of 2-byte and 4-byte elements are staged together in one compute set.
    device, graph = make()
    graph.addCodelets(PickHalf)
    x = graph.addVariable(poplar.HALF, [4, 3], "x")
    idx = graph.addVariable(poplar.UNSIGNED_INT, [3, 2], "idx")
    out = graph.addVariable(poplar.HALF, [3], "out")
    for t in (x, idx, out):
        graph.setTileMapping(t, 2)
    graph.setInitialValue(x, np.arange(12))
    graph.setInitialValue(idx, [[0, 9], [3, 9], [1, 9]])
    cs = graph.addComputeSet()
    v = graph.addVertex(cs, "PickHalf", {"x": x.transpose()[1], "idx": idx.transpose()[0], "out": out})
    graph.setTileMapping(v, 2)
    graph.createHostRead("out", out)
    _, got = run(device, graph, prog.Execute(cs), mode, ["out"])
    np.testing.assert_array_equal(got["out"], np.array([1, 10, 4], np.float16))


@pytest.mark.parametrize("failing", [[25, 33], [7, 25], [39]])
def test_first_failing_vertex_is_reported_with_parallel_chunks(failing):
    # Native kernels run a compute set in chunks on several threads; the error must still
    # name the first failing vertex in order, as a sequential run would.
    device, graph = make(tiles=2)
    values = -np.ones(40, np.float32)  # Fails succeeds on negative values
    values[failing] = 1.0
    x = graph.addConstant(poplar.FLOAT, [40], values)
    graph.setTileMapping(x, 0)
    cs = graph.addComputeSet("many")
    for i in range(40):
        graph.setTileMapping(graph.addVertex(cs, "Fails", {"x": x[i]}), 0)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    with pytest.raises(poplar.VertexError, match=rf"vertex {failing[0]} \(Fails"):
        engine.run()


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    results = []
    for threads in ("1", "3"):
        monkeypatch.setenv("POPLAR_PY_THREADS", threads)
        device, graph = make()
        a = graph.addVariable(poplar.FLOAT, [64, 7], "a")
        graph.setInitialValue(a, np.arange(448) % 13 - 6.5)
        out = graph.addVariable(poplar.FLOAT, [64, 7], "out")
        cs = graph.addComputeSet()
        for r in range(64):
            graph.setTileMapping(a[r], r % 8)
            graph.setTileMapping(out[r], r % 8)
            v = graph.addVertex(cs, "Scale", {"x": a[r], "y": out[r]})
            graph.setInitialValue(v["k"], r / 3)
            graph.setTileMapping(v, r % 8)
        graph.createHostRead("out", out)
        engine, got = run(device, graph, prog.Execute(cs), "native", ["out"])
        results.append((got["out"], engine.getProfile()["execution"]["totalCycles"]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


# ---- planning on runs: races, shared buffers, exchange traffic ---------------------------------

def test_interleaved_strided_writes_are_not_races():
    device, graph = make(tiles=2)
    x = graph.addVariable(poplar.FLOAT, [12], "x")
    y = graph.addVariable(poplar.FLOAT, [12], "y")
    graph.setTileMapping(x, 0)
    graph.setTileMapping(y, 1)
    cs = graph.addComputeSet("evenodd")
    for k in range(2):  # even and odd elements: the spans overlap, the elements do not
        v = graph.addVertex(cs, "Scale", {"x": x.subSample(2, 0) if k == 0 else x[1::2],
                                          "y": y.subSample(2, 0) if k == 0 else y[1::2]})
        graph.setInitialValue(v["k"], 2.0 + k)
        graph.setTileMapping(v, k)
    graph.createHostWrite("x", x)
    graph.createHostRead("y", y)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    engine.writeTensor("x", np.arange(12, dtype=np.float32))
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("y"), np.arange(12) * np.tile([2.0, 3.0], 6))
    # A third vertex writing every third element does meet them.
    w = graph.addVertex(cs, "Scale", {"x": x[::3], "y": y[::3]})
    graph.setInitialValue(w["k"], 1.0)
    graph.setTileMapping(w, 0)
    conflict = r"element 0 of variable 'y'.*\(4 element\(s\) conflict\)"
    with pytest.raises(poplar.GraphCycleError, match=conflict):
        poplar.Engine(graph, prog.Execute(cs))


def test_readers_of_the_same_elements_share_one_buffer_whatever_the_view():
    """Two views with the same elements (built differently) read on one tile: one buffer."""
    _, graph = make(tiles=2)
    x = graph.addVariable(poplar.FLOAT, [4, 4], "x")
    graph.setTileMapping(x, 0)
    out = graph.addVariable(poplar.FLOAT, [2, 5], "out")
    graph.setTileMapping(out, 1)
    f = x.flatten()
    # elements 0 1 2 4 6, as (0 1 2)(4 6) and as (0 1)(2 4 6): the runs differ, the elements do not
    same = [poplar.concat([f[0:3], f[4:7:2]]), poplar.concat([f[0:2], f[2:7:2]])]
    assert [len(v.runs()) for v in same] == [2, 2] and same[0].runs().count.tolist() == [3, 2]
    np.testing.assert_array_equal(*(np.stack(v.runs().elements()) for v in same))
    cs = graph.addComputeSet("shared")
    for i, view in enumerate(same):
        v = graph.addVertex(cs, "Scale", {"x": view, "y": out[i]})
        graph.setInitialValue(v["k"], 1.0)
        graph.setTileMapping(v, 1)
    engine = poplar.Engine(graph, prog.Execute(cs))
    buffers = engine.getProfile()["compilation"]["tiles"][1]["memory"]["byCategory"]["exchange buffers"]
    assert buffers == 5 * 4  # one buffer of five floats, not two


def test_readers_share_only_equal_elements_when_fingerprints_collide():
    """{0,3,5,6} and {1,2,4,7} have equal counts, sums and sums of squares: the elements decide."""
    _, graph = make(tiles=2)
    x = graph.addVariable(poplar.FLOAT, [8], "x")
    graph.setTileMapping(x, 0)
    out = graph.addVariable(poplar.FLOAT, [3, 4], "out")
    graph.setTileMapping(out, 1)
    views = [poplar.concat([x[0:1], x[3:4], x[5:7]]),
             poplar.concat([x[1:3], x[4:8:3]]),  # 1 2 4 7 as (1 2)(4 7)
             poplar.concat([x[1:2], x[2:5:2], x[7:8]])]  # and as (1)(2 4)(7)
    assert [len(v.runs()) for v in views] == [2, 2, 3]
    cs = graph.addComputeSet("collide")
    for i, view in enumerate(views):
        v = graph.addVertex(cs, "Scale", {"x": view, "y": out[i]})
        graph.setInitialValue(v["k"], 1.0)
        graph.setTileMapping(v, 1)
    engine = poplar.Engine(graph, prog.Execute(cs))
    buffers = engine.getProfile()["compilation"]["tiles"][1]["memory"]["byCategory"]["exchange buffers"]
    assert buffers == 2 * 4 * 4  # {0,3,5,6} alone, {1,2,4,7} shared


@pytest.mark.parametrize("collide", [False, True])
def test_segments_of_several_runs_share_a_placement_only_when_their_runs_are_equal(monkeypatch, collide):
    """Every multi-run segment made a candidate of the first (a hash collision everywhere):
    the runs are compared, and each vertex still reads its own elements."""
    from poplar_py.regions import arrays

    if collide:  # only the search among rows of different lengths (two columns: length, hash)
        first_equal = arrays.first_equal
        monkeypatch.setattr(arrays, "first_equal", lambda columns: np.zeros(columns[0].size, np.int64)
                            if len(columns) == 2 else first_equal(columns))
    device, graph = make(tiles=2)
    x = graph.addVariable(poplar.FLOAT, [8], "x")
    graph.setTileMapping(x, 0)
    graph.createHostWrite("x", x)
    out = graph.addVariable(poplar.FLOAT, [3, 4], "out")
    graph.setTileMapping(out, 1)
    graph.createHostRead("out", out)
    views = [poplar.concat([x[a:a + 2], x[a + 5:a + 7]]) for a in (0, 1, 0)]
    cs = graph.addComputeSet("multi")
    for i, view in enumerate(views):
        v = graph.addVertex(cs, "Scale", {"x": view, "y": out[i]})
        graph.setInitialValue(v["k"], 2.0)
        graph.setTileMapping(v, 1)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    values = np.arange(8, dtype=np.float32)
    engine.writeTensor("x", values)
    engine.run(0)
    expected = 2 * np.stack([values[[0, 1, 5, 6]], values[[1, 2, 6, 7]], values[[0, 1, 5, 6]]])
    np.testing.assert_array_equal(engine.readTensor("out"), expected)


def test_a_broadcast_read_crosses_the_exchange_once():
    """Tiles reading one remote element: each receives it, its tile sends it once."""
    device, graph = make(tiles=4)
    x = graph.addVariable(poplar.FLOAT, [1], "x")
    graph.setTileMapping(x, 0)
    y = graph.addVariable(poplar.FLOAT, [3, 5], "y")
    cs = graph.addComputeSet("bcast")
    for tile in (1, 2, 3):
        graph.setTileMapping(y[tile - 1], tile)
        v = graph.addVertex(cs, "Scale", {"x": x.broadcast(5, 0), "y": y[tile - 1]})
        graph.setInitialValue(v["k"], 1.0)
        graph.setTileMapping(v, tile)
    engine, _ = run(device, graph, prog.Execute(cs), "native")
    step = engine.getProfile()["execution"]["steps"][0]
    # tile 0 sends 4 bytes; each reader receives 5 x 4 bytes: the busiest tile waits 20 bytes / 4 per cycle
    assert step["exchange"] == 5


def test_host_write_into_a_tensor_that_repeats_elements_keeps_the_last_value():
    device, graph = make(tiles=2)
    x = graph.addVariable(poplar.INT, [3], "x")
    graph.setTileMapping(x, 1)
    view = poplar.concat([x, x[1].expand([0]), x.reverse(0)])  # x0 x1 x2 x1 x2 x1 x0
    graph.createHostWrite("w", view)
    graph.createHostRead("r", x)
    engine = poplar.Engine(graph, prog.Sequence())
    engine.load(device)
    engine.writeTensor("w", np.array([1, 2, 3, 4, 5, 6, 7], np.int32))
    host = np.zeros(7, np.int32)
    host[[0, 1, 2, 1, 2, 1, 0]] = [1, 2, 3, 4, 5, 6, 7]  # numpy: the last write wins
    np.testing.assert_array_equal(engine.readTensor("r"), host[:3])


# ---- planning and the interpreter need no LLVM; code memory from the codelet's own body ---------

class Offset(Vertex):
    """Only ever built in interpreter mode here."""

    x: InOut[Vector[float]]
    k: float

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] += self.k


def _offset_graph(tiles):
    device, graph = make(tiles=tiles)
    graph.addCodelets(Offset)
    x = graph.addVariable(poplar.FLOAT, [tiles, 4], "x")
    cs = graph.addComputeSet("offset")
    for t in range(tiles):
        graph.setTileMapping(x[t], t)
        for half in (0, 2):
            v = graph.addVertex(cs, "Offset", {"x": x[t].slice(half, half + 2)})
            graph.setInitialValue(v["k"], 1.5)
            graph.setTileMapping(v, t)
    return device, graph, x, cs


def test_interpreter_mode_compiles_no_codelet(monkeypatch):
    from poplar_py.codelet import codelet_compiler as codelets
    from poplar_py.compiler import compute_set_tables
    from poplar_py.runtime import compute_sets

    def no_llvm(*args, **kwargs):
        raise AssertionError("a codelet was compiled")

    for module in (codelets, compute_set_tables, compute_sets):
        monkeypatch.setattr(module, "compile_codelet", no_llvm)
    monkeypatch.setattr(codelets, "generate_ir", no_llvm)
    monkeypatch.setattr(codelets.CompiledCodelet, "__init__", no_llvm)
    device, graph, x, cs = _offset_graph(2)
    graph.createHostRead("x", x)
    engine = poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": "interpreter"})
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("x"), np.full((2, 4), 1.5))


def test_vertex_code_is_charged_once_per_tile_from_the_modelled_size():
    from poplar_py.codelet.codelet_compiler import codelet_info

    _, graph, _, cs = _offset_graph(3)
    engine = poplar.Engine(graph, prog.Execute(cs))
    tiles = engine.getProfile()["compilation"]["tiles"]
    size = codelet_info(Offset).code_bytes
    # entry, plus per element: the loop (test, step), two element accesses, an add, a field read
    assert 64 < size < 256
    assert [t["memory"]["byCategory"]["vertex code"] for t in tiles] == [size] * 3
