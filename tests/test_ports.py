"""Patterns of Poplar C++ programs ported line by line (issue 23), each in a compact form."""

from __future__ import annotations

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
