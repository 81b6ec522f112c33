"""Patterns of real Poplar programs ported line by line (issue 23), each checked exactly or
against numpy."""

import runpy

import numpy as np
from support import make_graph

import poplar_py as poplar
from poplar_py import Input, LocalArray, Output, Vector, Vertex, cdiv
from poplar_py import program as prog
from poplibs_py import poplin, popops, poprand, poputil


def run(device, graph, seq, *outputs, inputs=()):
    """Build an engine, write ``inputs`` (handle, values), run ``seq``, read ``outputs``."""
    for k, t in enumerate(outputs):
        graph.createHostRead(f"out{k}", t)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    for name, values in inputs:
        engine.writeTensor(name, values)
    engine.run()
    return [engine.readTensor(f"out{k}") for k in range(len(outputs))], engine


def test_seed_none_draws_continue_the_generator():
    """An MCMC sampler draws with seed=None in a loop: each call gives new numbers."""
    device, g = make_graph(4)
    poprand.addCodelets(g)
    ref = g.addVariable(poplar.FLOAT, [64], "ref")
    poputil.mapTensorLinearly(g, ref)
    seq = prog.Sequence()
    r1 = poprand.uniform(g, None, 0, ref, poplar.FLOAT, 0, 1, seq)
    r2 = poprand.uniform(g, None, 0, ref, poplar.FLOAT, 0, 1, seq)
    (a, b), engine = run(device, g, seq, r1, r2)
    assert not np.array_equal(a, b)
    assert ((a >= 0) & (a <= 1)).all() and ((b >= 0) & (b <= 1)).all()
    engine.load(device)  # loading again: the same draws
    engine.run()
    assert np.array_equal(engine.readTensor("out0"), a)


def test_aliased_matmul_output():
    """PopLibs' QR test: ``matMulWithOutput(graph, Q, A, A, prog)`` is ``A = Q @ A``."""
    device, g = make_graph(4)
    poplin.addCodelets(g)
    q = np.arange(16, dtype=np.float32).reshape(4, 4) / 8
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    Q, A = g.addVariable(poplar.FLOAT, [4, 4], "Q"), g.addVariable(poplar.FLOAT, [4, 3], "A")
    poputil.mapTensorLinearly(g, Q)
    poputil.mapTensorLinearly(g, A)
    g.createHostWrite("q", Q)
    g.createHostWrite("a", A)
    seq = prog.Sequence()
    poplin.matMulWithOutput(g, Q, A, A, seq)
    (got,), _ = run(device, g, seq, A, inputs=[("q", q), ("a", a)])
    np.testing.assert_allclose(got, q @ a, rtol=1e-6)


def test_qr_factorization():
    device, g = make_graph(4)
    popops.addCodelets(g)
    poplin.addCodelets(g)
    A, Q = poplin.experimental.createQRFactorizationMatrices(g, poplar.FLOAT, 6, 4, "qr")
    g.createHostWrite("a", A)
    g.createHostWrite("q", Q)
    seq = prog.Sequence()
    poplin.experimental.QRFactorization(g, A, Q, seq, "qr", {"rowsPerIteration": "2"})
    a = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    (r, q), _ = run(device, g, seq, A, Q, inputs=[("a", a), ("q", np.eye(6, dtype=np.float32))])
    q_ref, r_ref = np.linalg.qr(a.astype(np.float64), "complete")
    np.testing.assert_allclose(r, r_ref, atol=1e-5)
    np.testing.assert_allclose(q, q_ref, atol=1e-5)


class Sorter(poplar.Vertex):
    """C++ vertex style: a member function reading fields, an out-parameter, C division."""

    keys: poplar.Input[poplar.Vector[int]]
    out: poplar.Output[poplar.Vector[int]]

    def bucket(self, k, counts):
        b = poplar.cmod(self.keys[k], 4)
        counts[b + 4 * int(b < 0)] += 1
        return cdiv(self.keys[k], 4)

    def compute(self):
        counts = LocalArray(int, 4)
        for k in range(len(self.keys)):
            self.out[k] = self.bucket(k, counts)
        for b in range(4):
            self.out[len(self.keys) + b] = counts[b]


def test_codelet_member_functions_and_c_division():
    device, g = make_graph(1)
    g.addCodelets(Sorter)
    keys = np.array([-9, -4, -1, 0, 3, 7, 10], np.int32)
    t, out = g.addVariable(poplar.INT, [7], "keys"), g.addVariable(poplar.INT, [11], "out")
    g.setTileMapping(t, 0)
    g.setTileMapping(out, 0)
    g.createHostWrite("keys", t)
    cs = g.addComputeSet("sort")
    g.setTileMapping(g.addVertex(cs, "Sorter", {"keys": t, "out": out}), 0)
    seq = prog.Sequence([prog.Execute(cs)])
    (got,), _ = run(device, g, seq, out, inputs=[("keys", keys)])
    c_div = [int(k / 4) for k in keys]  # truncation toward zero, as C++'s int division
    counts = np.bincount([k - 4 * int(k / 4) + 4 * (k - 4 * int(k / 4) < 0) for k in keys], minlength=4)
    assert got.tolist() == c_div + counts.tolist()


class Scale(Vertex):
    x: Input[Vector[int]]
    y: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = self.x[i] * 3


def test_the_hardware_path_finds_a_device():
    # auto dm = DeviceManager::createDeviceManager();
    # auto devices = dm.getDevices(TargetType::IPU, 4);
    # auto it = std::find_if(devices.begin(), devices.end(), [](Device &d) { return d.attach(); });
    manager = poplar.DeviceManager.createDeviceManager()
    devices = manager.getDevices(poplar.TargetType.IPU, 4)
    device = next(d for d in devices if d.attach())
    assert device.getTarget().getNumIPUs() == 4 and device.getTarget().getNumTiles() == 4 * 1472
    graph = poplar.Graph(device.getTarget())
    graph.addCodelets(Scale)
    x = graph.addConstant(poplar.INT, [4], [1, -2, 3, 4], "x")
    y = graph.addVariable(poplar.INT, [4], "y")
    for t in (x, y):
        graph.setTileMapping(t, 5000)
    cs = graph.addComputeSet("scale")
    graph.setTileMapping(graph.addVertex(cs, "Scale", {"x": x, "y": y}), 5000)
    graph.createHostRead("y", y)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    engine.run(0)
    device.detach()
    np.testing.assert_array_equal(engine.readTensor("y"), [3, -6, 9, 12])


def test_streams_by_object_and_host_buffers_as_void_pointers():
    # engine.connectStream(inStream, hostIn.data()); engine.readTensor("y", hostOut.data());
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device.getTarget())
    graph.addCodelets(Scale)
    x = graph.addVariable(poplar.INT, [4], "x")
    y = graph.addVariable(poplar.INT, [4], "y")
    for t in (x, y):
        graph.setTileMapping(t, 3)
    cs = graph.addComputeSet("scale")
    graph.setTileMapping(graph.addVertex(cs, "Scale", {"x": x, "y": y}), 3)
    fifo_in = graph.addHostToDeviceFIFO("in", poplar.INT, 4)
    fifo_out = graph.addDeviceToHostFIFO("out", poplar.INT, 4)
    graph.createHostRead("y", y)
    program = prog.Sequence([prog.Copy(fifo_in, x), prog.Execute(cs), prog.Copy(y, fifo_out)])
    engine = poplar.Engine(graph, program)
    engine.load(device)
    host_in = np.array([1, -2, 3, 4], np.int32)
    host_out = np.zeros(4, np.uint32)
    engine.connectStream(fifo_in, host_in)
    engine.connectStream(fifo_out, host_out)
    engine.run(0)
    np.testing.assert_array_equal(host_out.view(np.int32), host_in * 3)
    np.testing.assert_array_equal(engine.readTensor("y", np.zeros(8, np.uint16)).view(np.int32), host_in * 3)


def test_profiling_options_dumps_and_profile_parts(tmp_path):
    # Engine engine(graph, prog, {{"debug.instrument", "true"},
    #                             {"target.workerStackSizeInBytes", "0x400"}, ...});
    # graph.outputVertexGraph(dotFile); engine.getExecutionProfile();
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device.getTarget())
    graph.addCodelets(Scale)
    x = graph.addConstant(poplar.INT, [4], [1, 2, 3, 4], "x")
    y = graph.addVariable(poplar.INT, [4], "y")
    graph.setTileMapping(x, 0)
    graph.setTileMapping(y, 0)
    cs = graph.addComputeSet("scale")
    graph.setTileMapping(graph.addVertex(cs, "Scale", {"x": x, "y": y}), 0)
    options = {"debug.instrument": "true", "debug.instrumentCompute": "true",
               "debug.computeInstrumentationLevel": "tile", "debug.outputAllSymbols": "true",
               "debug.loweredVarDumpFile": str(tmp_path / "vars.capnp"),
               "target.workerStackSizeInBytes": "0x400"}
    engine = poplar.Engine(graph, prog.Execute(cs), options)
    graph.outputVertexGraph(tmp_path / "vertices.dot")
    engine.load(device)
    engine.run(0)
    assert 'var0 -> v0 [label="x"];' in (tmp_path / "vertices.dot").read_text()
    steps = engine.getExecutionProfile()["steps"]
    assert [s["computeSet"] for s in steps] == ["scale"] and steps[0]["cycles"] > 0
    assert engine.getGraphProfile()["graph"]["numVertices"] == 1


PROGRAM = '''
import sys
import numpy as np
import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog

OFFSET = 10


class AddOffset(Vertex):
    x: Input[Vector[int]]
    y: Output[Vector[int]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = self.x[i] + OFFSET


graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
graph.addCodelets(AddOffset)
x = graph.addConstant(poplar.INT, [6], np.arange(6), "x")
y = graph.addVariable(poplar.INT, [6], "y")
graph.setTileMapping(x, 0)
graph.setTileMapping(y, 0)
cs = graph.addComputeSet("add")
for part, (a, b) in zip(x.slices([0, 1, (2, 6)]), [(0, 1), (1, 2), (2, 6)]):
    graph.setTileMapping(graph.addVertex(cs, "AddOffset", {"x": part, "y": y.slice(a, b)}), 0)
graph.createHostRead("y", y)
poplar.compileGraph(graph, prog.Execute(cs)).serialize(sys.argv[1])
'''


def test_a_program_with_its_codelet_inline_compiles_ahead_of_time(tmp_path, monkeypatch):
    # Executable exe = compileGraph(graph, {prog}); exe.serialize(out);
    # ... Engine engine(Executable::deserialize(in));
    (tmp_path / "port.py").write_text(PROGRAM)
    monkeypatch.setattr("sys.argv", ["port.py", str(tmp_path / "port.exe")])
    runpy.run_path(str(tmp_path / "port.py"), run_name="__main__")
    engine = poplar.Engine(poplar.Executable.deserialize(tmp_path / "port.exe"))
    engine.load(poplar.IPUModel().createDevice())
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("y"), np.arange(6) + 10)


class Relax(Vertex):
    """A lattice-Boltzmann style update: a cell's value relaxed with weights given as values."""

    w: Input[Vector[float]]
    f: Input[Vector[float]]
    out: Output[float]

    def compute(self):
        s = 0.0
        for i in range(len(self.w)):
            s += self.w[i] * self.f[i]
        self.out = s


def test_values_connected_before_the_vertices_are_mapped_stay_on_their_tiles():
    # for (chunk...) { auto v = graph.addVertex(cs, "Relax", {{"w", weights}, ...}); }  then
    # graph.setTileMapping(v, tile) for each: the weights' constants go with their vertices
    # (2,880 chunks of 9 weights put 103 KB on tile 0 before, and an LBM at 120x120 overflowed it)
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Relax)
    chunks, tiles = 2880, device.getTarget().getNumTiles()
    f = graph.addVariable(poplar.FLOAT, [chunks, 9], "f")
    out = graph.addVariable(poplar.FLOAT, [chunks], "out")
    cs = graph.addComputeSet("relax")
    weights = np.asarray([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4)
    vertices = [graph.addVertex(cs, "Relax", {"w": weights, "f": f[c], "out": out[c]}) for c in range(chunks)]
    for c, v in enumerate(vertices):
        for thing in (v, f[c], out[c]):
            graph.setTileMapping(thing, c % tiles)
    graph.createHostWrite("f", f)
    (got,), engine = run(device, graph, prog.Execute(cs), out,
                         inputs=[("f", np.arange(chunks * 9, dtype=np.float32).reshape(chunks, 9))])
    expected = np.arange(chunks * 9, dtype=np.float64).reshape(chunks, 9) @ weights
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    profile = engine.getProfile()
    constants = [t["memory"]["byCategory"].get("constants", 0) for t in profile["compilation"]["tiles"]]
    assert max(constants) <= 2 * 9 * 4 * 2  # two chunks' weights at most per tile
    assert profile["execution"]["steps"][0]["exchange"] == 0  # every vertex reads its own tile
