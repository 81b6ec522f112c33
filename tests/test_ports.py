"""Patterns of Poplar C++ programs ported line by line (issue 23), each in a compact form."""

from __future__ import annotations

import runpy

import numpy as np

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog


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
