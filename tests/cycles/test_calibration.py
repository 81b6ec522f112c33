"""The two calibrations: an IPUModel() device keeps Graphcore's IPU Model's figures; a device from
DeviceManager (the hardware path) costs host I/O, syncs, perf estimates and IPU-Links as the
hardware does."""

from __future__ import annotations

import math

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.cycles.calibration import (
    HARDWARE,
    HOST_BANDWIDTH,
    HOST_PREPARE_BANDWIDTH,
    HOST_SYNC,
    IPU_MODEL,
    LINK_LATENCY,
)
from poplar_py.profile.report import expand

CLOCK = 1.33e9

CODELET = """from poplar_py import InOut, Vector, Vertex


class Bump(Vertex):
    v: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.v)):
            self.v[i] += 1.0
        return True
"""


def hardware(ipus: int = 1, tiles: int = 4) -> poplar.Device:
    return poplar.DeviceManager().getDevices(poplar.TargetType.IPU, ipus)[0].createVirtualDevice(tiles)


def model(ipus: int = 1, tiles: int = 4) -> poplar.Device:
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = ipus, tiles
    return m.createDevice()


def _profile(device: poplar.Device, build) -> dict:
    graph = poplar.Graph(device)
    program, connect = build(graph)
    engine = poplar.Engine(graph, program)
    engine.load(device)
    connect(engine)
    engine.run()
    return engine.getProfile()


def test_each_path_has_its_calibration():
    assert model().getTarget().calibration is IPU_MODEL
    assert hardware().getTarget().calibration is HARDWARE
    assert hardware().getTarget().getTargetType() == poplar.TargetType.IPU


def _bump(graph: poplar.Graph, tmp_path, estimate: int | None = None):
    src = tmp_path / "bump.py"
    src.write_text(CODELET)
    graph.addCodelets(str(src))
    v = graph.addVariable(poplar.FLOAT, [10], "v")
    graph.setTileMapping(v, 0)
    cs = graph.addComputeSet("bump")
    vertex = graph.addVertex(cs, "Bump", {"v": v})
    graph.setTileMapping(vertex, 0)
    if estimate is not None:
        graph.setPerfEstimate(vertex, estimate)
    return prog.Execute(cs), lambda engine: None


@pytest.mark.parametrize("path", ["model", "hardware"])
def test_set_perf_estimate_costs_a_vertex_on_the_ipu_model_only(tmp_path, path):
    device = model() if path == "model" else hardware()
    counted = _profile(device, lambda g: _bump(g, tmp_path))["execution"]["vertexTypes"][0]["cycles"]
    estimated = _profile(device, lambda g: _bump(g, tmp_path, 1000))["execution"]["vertexTypes"][0]["cycles"]
    # the kernel's own count: 10 + 11 tests + 10 x (the step, the load and store beside the add)
    assert counted == 10 + 11 + 10 * 3
    assert estimated == (1000 if path == "model" else counted)


@pytest.mark.parametrize("path", ["model", "hardware"])
def test_a_tiles_wait_for_slower_tiles_is_sync_on_hardware(tmp_path, path):
    device = model() if path == "model" else hardware()
    profile = _profile(device, lambda g: _bump(g, tmp_path))["execution"]
    sync, compute = profile["cyclesByTile"]["sync"], profile["cyclesByTile"]["compute"]
    barrier = device.getTarget().syncCycles
    assert compute[0] == 6 * 51 and compute[1:] == [0, 0, 0]
    waits = [0] + [compute[0]] * 3 if path == "hardware" else [0] * 4
    assert sync == [barrier + w for w in waits]  # one barrier: nothing comes in or goes out
    assert expand(profile["steps"][0]["tileCycles"]["sync"], 4).tolist() == sync  # the viewer's too
    assert profile["totalCycles"] == barrier + compute[0]  # the step takes as long on both paths


@pytest.mark.parametrize("path", ["model", "hardware"])
def test_stream_copies_on_hardware_pay_the_host_sync_preparation_and_link(path):
    device = model() if path == "model" else hardware()
    n = 2**18

    def build(graph):
        t = graph.addVariable(poplar.FLOAT, [n], "t")
        for tile in range(4):
            graph.setTileMapping(t[tile * n // 4:(tile + 1) * n // 4], tile)
        fifo = graph.addHostToDeviceFIFO("in", poplar.FLOAT, n)
        return prog.Copy(fifo, t), lambda engine: engine.connectStream("in", np.ones(n, np.float32))

    step = _profile(device, build)["execution"]["steps"][0]
    nbytes, barrier = 4 * n, device.getTarget().syncCycles
    if path == "model":
        assert (step["host"], step["sync"], step["streamCopyBegin"]) == (math.ceil(nbytes / 6), barrier, 0)
    else:
        assert step["host"] == math.ceil(nbytes / (HOST_BANDWIDTH / CLOCK))
        assert step["sync"] == barrier + round(HOST_SYNC * CLOCK)
        assert step["streamCopyBegin"] == math.ceil(nbytes / (HOST_PREPARE_BANDWIDTH / CLOCK))
    assert step["cycles"] == step["sync"] + step["exchange"] + step["host"] + step["streamCopyBegin"]


@pytest.mark.parametrize("path", ["model", "hardware"])
def test_bytes_crossing_ipus_pay_the_link_latency_on_hardware(path):
    device = model(2) if path == "model" else hardware(2)

    def build(graph):
        src = graph.addVariable(poplar.FLOAT, [4, 256], "src")
        dst = graph.addVariable(poplar.FLOAT, [4, 256], "dst")
        for t in range(4):
            graph.setTileMapping(src[t], t)
            graph.setTileMapping(dst[t], 4 + t)
        return prog.Copy(src, dst), lambda engine: None

    step = _profile(device, build)["execution"]["steps"][0]
    # 4 KB over the rung's 4 links at 32 GB/s each, then (hardware) one hop's latency
    links = 4096 / (4 * 32e9 / CLOCK)
    latency = LINK_LATENCY * CLOCK if path == "hardware" else 0
    assert step["globalExchange"] == math.ceil(links + latency)


def test_the_profile_names_the_device_kind(tmp_path):
    kinds = [_profile(device, lambda g: _bump(g, tmp_path))["compilation"]["target"]["type"]
             for device in (model(), hardware())]
    assert kinds == ["IpuModel", "Ipu"]
