"""The rest of Poplar's API that programs call: version, profiling switch, introspection,
Target and Device getters, half constants, AbortOnCondition, host functions."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.vertex import Vertex


class Est(Vertex):
    """A vertex whose estimator the tests inspect (never compiled: engines here run no compute)."""

    rows: poplar.Input[poplar.VectorList[float]]
    out: poplar.Output[float]
    scale: int
    taps: poplar.Vector[float]

    def compute(self) -> bool:
        self.out = self.rows[0][0] * self.scale
        return True


# ---- versionString, packageHash -------------------------------------------------------------
def test_version_string_and_package_hash_describe_poplar_py():
    assert poplar.versionString() == f"poplar-py {poplar.__version__} (simulated IPU)"
    assert re.fullmatch(r"[0-9a-f]{10}", poplar.packageHash())
    assert poplar.packageHash() == poplar.packageHash()


# ---- enableExecutionProfiling / disableExecutionProfiling ------------------------------------
def _copy_engine():
    device, graph = make_graph(4)
    a, b = graph.addVariable(poplar.FLOAT, [8], "a"), graph.addVariable(poplar.FLOAT, [8], "b")
    stamp = graph.addVariable(poplar.UNSIGNED_INT, [2], "stamp")
    for t, tile in ((a, 0), (b, 1), (stamp, 2)):
        graph.setTileMapping(t, tile)
    graph.createHostRead("stamp", stamp)
    seq = prog.Sequence([prog.Copy(a, b), prog.CycleStamp(stamp)])
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    return engine


def test_disabled_profiling_leaves_runs_out_of_the_profile_but_not_the_clock():
    engine = _copy_engine()
    engine.run()
    one = engine.getExecutionProfile()
    first = int(engine.readTensor("stamp")[0])
    engine.disableExecutionProfiling()
    engine.run()
    engine.run()
    assert engine.getExecutionProfile() == one  # the unprofiled runs left no trace
    second = int(engine.readTensor("stamp")[0])
    assert second > first  # the device's counter ran on through them
    engine.enableExecutionProfiling()
    engine.run()
    two = engine.getExecutionProfile()
    assert len(two["runs"]) == 2 and two["totalCycles"] == 2 * one["totalCycles"]
    assert int(engine.readTensor("stamp")[0]) > second


# ---- VertexIntrospector ---------------------------------------------------------------------
def test_perf_estimator_sees_fields_through_the_vertex_introspector():
    graph = make_graph(4)[1]
    graph.addCodelets(Est)
    cs = graph.addComputeSet("scaled")
    rows = graph.addVariable(poplar.FLOAT, [3, 4], "rows")
    v = graph.addVertex(cs, "Est", {"rows": [rows[0, :2], rows[1], rows[2, :3]],
                                    "out": graph.addVariable(poplar.FLOAT, [], "out")})
    graph.setInitialValue(v["scale"], 3)
    graph.setInitialValue(v["taps"], [0.5, 1.5])
    graph.setTileMapping(v, 1)
    seen = {}

    def estimator(vertex: poplar.VertexIntrospector, target: poplar.Target) -> poplar.VertexPerfEstimate:
        f = vertex.getFieldInfo("rows")
        seen.update(rank=f.rank(), n=f.size(), sizes=[f.getSizeAtIndex(i) for i in range(f.size())],
                    second=f[1].size(), out=vertex.getFieldInfo("out").size(),
                    scale=vertex.getFieldInfo("scale").getInitialValue(target),
                    scale_f=vertex.getFieldInfo("scale").getInitialValue(target, poplar.FLOAT),
                    taps=vertex.getFieldInfo("taps").getInitialValues(target),
                    cs=vertex.getComputeSet(), target=vertex.getTarget() is target)
        for bad, error, match in ((lambda: vertex.getFieldInfo("nope"), poplar.UnknownFieldError, "'nope'"),
                                  (lambda: f.getSizeAtIndex(3), poplar.InvalidArgumentError, "index i"),
                                  (lambda: vertex.getFieldInfo("out").getInitialValue(target),
                                   poplar.InvalidArgumentError, "no value"),
                                  (lambda: vertex.getFieldInfo("scale").getInitialValue(7),
                                   poplar.InvalidArgumentError, "target")):
            with pytest.raises(error, match=match):
                bad()
        return poplar.VertexPerfEstimate(100 * f.size(), 8)

    graph.registerPerfEstimator("Est", estimator)
    poplar.Engine(graph, prog.Execute(cs), {"codelets.mode": "interpreter"})
    assert seen == dict(rank=2, n=3, sizes=[2, 4, 3], second=4, out=1, scale=3, scale_f=3.0, taps=[0.5, 1.5],
                        cs=cs, target=True)
    assert isinstance(seen["scale_f"], float)


# ---- getSortedContiguousRegions ---------------------------------------------------------------
def test_sorted_contiguous_regions_group_intervals_by_memory_order():
    graph = make_graph(4)[1]
    a, b = graph.addVariable(poplar.FLOAT, [4, 3], "a"), graph.addVariable(poplar.FLOAT, [5], "b")
    t = poplar.concat([a.transpose().flatten(), b.reverse(0), a[0]])  # a[0] again at 17..19
    # b reversed at 12..16 runs backwards in memory: one sequence of single intervals
    assert graph.getSortedContiguousRegions(t, [(12, 15), (0, 3)]) == [[(0, 1)], [(1, 2)], [(2, 3)],
                                                                       [(14, 15), (13, 14), (12, 13)]]
    whole = graph.getSortedContiguousRegions(t, [poplar.Interval(0, 20)])
    assert whole[0] == [(0, 1), (4, 5), (8, 9), (1, 2), (5, 6), (9, 10), (2, 3), (6, 7), (10, 11), (3, 4),
                        (7, 8), (11, 12)]
    assert whole[1] == [(17, 20)] and whole[2] == [(16, 17), (15, 16), (14, 15), (13, 14), (12, 13)]
    aliases = [99]
    kept = graph.getSortedContiguousRegions(t, [(0, 20)], True, aliases)
    assert kept == [whole[0], whole[2]] and aliases == [0]  # 17..19 alias a[0], from interval 0 on
    # every element named is covered, in memory order within each sequence (numpy reference)
    ids = np.concatenate([np.arange(12).reshape(4, 3).T.reshape(-1), 12 + np.arange(5)[::-1], np.arange(3)])
    for seq in kept:
        covered = np.concatenate([ids[b:e] for b, e in seq])
        assert (np.diff(covered) == 1).all()
    for bad, match in (([(3, 2)], "region"), ([(0, 21)], "region"), ("x", "regions"),
                       ([(0, 1.5)], "regions")):
        with pytest.raises(poplar.InvalidArgumentError, match=match):
            graph.getSortedContiguousRegions(t, bad)
    with pytest.raises(poplar.InvalidArgumentError, match="removeAliasedIntervals"):
        graph.getSortedContiguousRegions(t, [(0, 1)], "yes")
    with pytest.raises(poplar.InvalidArgumentError, match="aliases"):
        graph.getSortedContiguousRegions(t, [(0, 1)], True, ())


# ---- Abort, AbortOnCondition ----------------------------------------------------------------------
def test_abort_on_condition_stops_the_run_where_the_predicate_is_true():
    device, graph = make_graph(4)
    a, b, c = (graph.addVariable(poplar.FLOAT, [6], name) for name in "abc")
    pred = graph.addVariable(poplar.UNSIGNED_INT, [], "pred")
    for t, tile in ((a, 0), (b, 1), (c, 2), (pred, 3)):
        graph.setTileMapping(t, tile)
        graph.createHostWrite(t.name, t)
        graph.createHostRead(f"{t.name}.out", t)
    checked = prog.Sequence([prog.Copy(a, b), prog.AbortOnCondition(pred, "pred was set"), prog.Copy(b, c)])
    engine = poplar.Engine(graph, [checked, prog.Abort("always")])
    engine.load(device)
    x = np.arange(6, dtype=np.float32)
    engine.writeTensor("a", x)
    engine.writeTensor("c", np.zeros(6, np.float32))
    engine.writeTensor("pred", np.uint32(0))
    engine.run(0)
    assert np.array_equal(engine.readTensor("c.out"), x)
    engine.writeTensor("a", 2 * x)
    engine.writeTensor("pred", np.uint32(7))
    with pytest.raises(poplar.ApplicationRuntimeError, match=r"predicate 'pred' is true\): pred was set"):
        engine.run(0)
    # what ran before the abort is done, what follows it is not
    assert np.array_equal(engine.readTensor("b.out"), 2 * x) and np.array_equal(engine.readTensor("c.out"), x)
    with pytest.raises(poplar.ApplicationRuntimeError, match="aborted: always"):
        engine.run(1)
    with pytest.raises(poplar.ProgramError, match="one element"):
        prog.AbortOnCondition(a, "x")
    with pytest.raises(poplar.ProgramArgumentError, match="predicate"):
        prog.AbortOnCondition("pred")
    with pytest.raises(poplar.ProgramArgumentError, match="message"):
        prog.AbortOnCondition(pred, 3)


# ---- setInitialValueHalf, addConstantHalf ---------------------------------------------------------
def test_half_values_given_as_their_bits_reach_tile_memory_unchanged():
    device, graph = make_graph(4)
    bits = np.array([0x3C00, 0xC000, 0x7E01, 0x8000, 0x0001, 0x7BFF], np.uint16)  # 1, -2, NaN, -0, tiny, max
    t = graph.addVariable(poplar.HALF, [2, 3], "t")
    graph.setInitialValueHalf(t, bits)
    k = graph.addConstantHalf(poplar.HALF, [2, 3], bits[::-1].copy(), "k")
    one = graph.addConstantHalf("half", [4], 0x3C00)
    out_k = graph.addVariable(poplar.HALF, [2, 3], "out_k")
    out_one = graph.addVariable(poplar.HALF, [4], "o1")
    for x, tile in ((t, 0), (k, 1), (one, 2), (out_k, 3), (out_one, 3)):
        graph.setTileMapping(x, tile)
    for x in (t, out_k, out_one):
        graph.createHostRead(x.name, x)
    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(k, out_k), prog.Copy(one, out_one)]))
    engine.load(device)
    engine.run()
    assert np.array_equal(engine.readTensor("t").view(np.uint16).reshape(-1), bits)
    assert np.array_equal(engine.readTensor("out_k").view(np.uint16).reshape(-1), bits[::-1])
    assert np.array_equal(engine.readTensor("o1"), np.ones(4, np.float16))
    with pytest.raises(poplar.PoplarTypeError, match="HALF"):
        graph.setInitialValueHalf(graph.addVariable(poplar.FLOAT, [2]), [0, 1])
    with pytest.raises(poplar.PoplarTypeError, match="HALF"):
        graph.addConstantHalf(poplar.FLOAT, [2], 0)
    for bad, match in (([1.5] * 6, "integers"), ([70000] * 6, "0..65535"), ([-1] * 6, "0..65535"),
                       (None, "values")):
        with pytest.raises(poplar.InvalidArgumentError, match=match):
            graph.setInitialValueHalf(t, bad)
    with pytest.raises(poplar.TensorCreationError, match="3 values given for 6"):
        graph.setInitialValueHalf(t, [0, 1, 2])


# ---- addHostFunction, Call(hostFunction, ...), connectHostFunction --------------------------------
def test_host_function_gets_the_inputs_and_fills_the_outputs_during_the_run():
    m = poplar.IPUModel()
    m.tilesPerIPU, m.numIPUs = 4, 2
    device = m.createDevice()
    graph = poplar.Graph(device, poplar.replication_factor(2))
    f = graph.addHostFunction("axpy", [(poplar.FLOAT, 6), (poplar.INT, 1)], [(poplar.FLOAT, 6)])
    x, k, y = graph.addVariable(poplar.FLOAT, [2, 3], "x"), graph.addVariable(poplar.INT, [], "k"), \
        graph.addVariable(poplar.FLOAT, [6], "y")
    z = graph.addVariable(poplar.FLOAT, [6], "z")
    for t, tile in ((x, 0), (k, 1), (y, 2), (z, 3)):
        graph.setTileMapping(t, tile)
    for t in (x, k):
        graph.createHostWrite(t.name, t)
    graph.createHostRead("z", z)
    engine = poplar.Engine(graph, prog.Sequence([prog.Call(f, [x, k], [y]), prog.Copy(y, z)]))
    engine.load(device)
    data = np.arange(6, dtype=np.float32)
    engine.writeTensor("x", data.reshape(2, 3))
    engine.writeTensor("k", np.int32(3))
    with pytest.raises(poplar.StreamError, match="'axpy' is not connected"):
        engine.run()
    calls = []

    def on_replica(r):
        def axpy(inputs, outputs):
            calls.append(r)
            assert not inputs[0].flags.writeable and inputs[1].dtype == np.int32
            outputs[0][:] = inputs[0] * inputs[1][0] + r
        return axpy

    engine.connectHostFunction("axpy", 0, on_replica(0))
    engine.connectHostFunction("axpy", on_replica(1), 1)  # the other order
    engine.run()
    assert calls == [0, 1]
    for r in range(2):
        assert np.array_equal(engine.readTensor("z", replicaIndex=r), data * 3 + r)
    step = next(s for s in engine.getExecutionProfile()["steps"] if s["name"].startswith("Call(axpy"))
    assert step["type"] == "StreamCopy"
    engine.connectHostFunction("axpy", None, lambda ins, outs: outs.__setitem__(0, np.ones(2)))
    with pytest.raises(poplar.StreamError, match="filled in place"):
        engine.run()
    with pytest.raises(poplar.StreamError, match=r"no host function .nope.*axpy"):
        engine.connectHostFunction("nope", 0, print)
    with pytest.raises(poplar.StreamArgumentError, match="callback"):
        engine.connectHostFunction("axpy", 0, 5)
    with pytest.raises(poplar.GraphReplicationError, match="replica index 2"):
        engine.connectHostFunction("axpy", 2, print)


def test_host_function_arguments_are_checked():
    graph = make_graph(4)[1]
    f = graph.addHostFunction("f", [(poplar.FLOAT, 2)], [])
    a = graph.addVariable(poplar.FLOAT, [2], "a")
    assert isinstance(f, poplar.HostFunction) and f.handle() == "f"
    with pytest.raises(poplar.PoplarError, match="'f' is already used"):
        graph.addHostToDeviceFIFO("f", poplar.FLOAT, 2)
    for inputs, error, match in (("x", poplar.InvalidArgumentError, "inputs"),
                                 ([(poplar.FLOAT,)], poplar.InvalidArgumentError, r"inputs\[0\]"),
                                 ([("float", -1)], poplar.InvalidArgumentError, "numElements"),
                                 ([(None, 1)], poplar.InvalidArgumentError, "element type")):
        with pytest.raises(error, match=match):
            graph.addHostFunction("g", inputs, [])
    with pytest.raises(poplar.ProgramError, match="given, the host function takes 1"):
        prog.Call(f, [a, a], [])
    with pytest.raises(poplar.ProgramError, match="takes 2 float"):
        prog.Call(f, [a[:1]], [])
    with pytest.raises(poplar.ProgramArgumentError, match="list of tensors"):
        prog.Call(f, a, [])
    g = graph.addHostFunction("g", [], [(poplar.FLOAT, 2)])
    with pytest.raises(poplar.ProgramError, match="constants or aliased"):
        prog.Call(g, [], [a[:1].broadcast(2, 0)])
    other = make_graph(4)[1]
    with pytest.raises(poplar.ProgramError, match="not added to this graph"):
        poplar.Engine(other, prog.Call(f, [other.addVariable(poplar.FLOAT, [2])], []))


# ---- Target, Device, DataStream and Engine getters --------------------------------------------------
def test_target_getters_give_the_simulated_figures():
    m = poplar.IPUModel()
    m.tilesPerIPU, m.numIPUs, m.minIPUSyncDelay = 100, 2, 5
    t = m.createDevice().getTarget()
    assert (t.getRptCountMax(), t.getNumStrideBits(), t.getTilesPerSharedExchangeBus()) == (4095, 10, 2)
    assert (t.getMinIPUSyncDelay(), t.getMaxIPUSyncDelay(), t.getIpuLinkDomainSize()) == (5, 5, 2)
    m.relativeSyncDelay = poplar.IPUModel.RelativeSyncDelayType.AUTO
    assert m.createDevice().getTarget().getMaxIPUSyncDelay() == 5 + 99 // 32
    assert t.getGlobalSyncCycles() == t.globalSyncCycles > 0
    assert t.getTargetSystemString() == "ipu2 x 2 (poplar-py simulated IPU_MODEL)"
    create = poplar.Target.createIPUTarget
    assert create(2, 100).hash() == create(2, 100).hash() != create(1).hash()
    cpu = poplar.Target.createCPUTarget(numIPUs=2)
    assert (cpu.getTargetType(), cpu.getNumTiles(), cpu.getTilesPerIPU()) == (poplar.TargetType.CPU, 2, 1)
    assert poplar.Device.createCPUDevice().getTarget() == poplar.Target.createCPUTarget()
    with pytest.raises(poplar.InvalidArgumentError, match="numIPUs"):
        poplar.Target.createCPUTarget(numIPUs=0)


def test_device_getters_say_what_a_simulated_device_has():
    manager = poplar.DeviceManager.createDeviceManager()
    assert manager.getDevice(3).getDriverIDs() == [3]
    assert manager.getDevice(65).getDriverIDs() == [2, 3]  # the second pair
    assert manager.getDevice(126).getDriverIDs() == list(range(64))
    assert manager.getDevice(65).createVirtualDevice(4).getDriverIDs() == [2, 3]
    model = poplar.IPUModel()
    model.numIPUs = 2
    device = model.createDevice()
    assert device.getDriverIDs() == [0, 1]
    assert device.getDriverVersion() == tuple(int(x) for x in poplar.__version__.split("."))
    attributes = device.getAttributes()
    assert attributes["type"] == "IPU_MODEL" and attributes["IPU version"] == "ipu2"
    assert attributes["driver"].startswith("poplar-py")


def test_data_stream_type_and_engine_options():
    graph = make_graph(4)[1]
    to = graph.addHostToDeviceFIFO("in", poplar.FLOAT, 4)
    back = graph.addDeviceToHostFIFO("out", poplar.HALF, 4)
    assert (to.type(), back.type()) == (poplar.DataStreamType.HostToDeviceFIFO,
                                        poplar.DataStreamType.DeviceToHostFIFO)
    engine = poplar.Engine(graph, prog.Sequence(), {"debug.floatPointOpException": "false"})
    options = engine.getEngineOptions()
    assert options["debug.floatPointOpException"] == "false" and options["codelets.mode"] == "native"
    options["codelets.mode"] = "x"  # a copy
    assert engine.getEngineOptions()["codelets.mode"] == "native"
    assert sorted(engine.listStreams()) == ["in", "out"]


def test_engine_prepare_deploy_and_device_getters():
    device, graph = make_graph(4)
    a = graph.addVariable(poplar.FLOAT, [2], "a")
    graph.setTileMapping(a, 0)
    graph.setInitialValue(a, [1.5, 2.5])
    graph.createHostRead("a", a)
    engine = poplar.Engine(graph, prog.Sequence())
    with pytest.raises(poplar.PoplarError, match="not loaded"):
        engine.getDevice()
    with pytest.raises(poplar.PoplarError, match="no device is prepared"):
        engine.deploy()
    with pytest.raises(poplar.InvalidArgumentError, match="prepare needs a Device"):
        engine.prepare("ipu")
    engine.prepare(device)
    engine.deploy()
    assert engine.getDevice() is device and np.array_equal(engine.readTensor("a"), [1.5, 2.5])
    assert engine.getTileClockFrequency() == device.getTarget().getTileClockFrequency()
    assert device.getAttribute("IPU version") == "ipu2"
    with pytest.raises(poplar.InvalidArgumentError, match="no attribute 'colour'"):
        device.getAttribute("colour")
    assert device.reset() is None
