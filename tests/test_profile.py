"""The cycle model, memory accounting and the profile report on hand-computable programs."""

import io
import json
import subprocess
import sys

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import InOut, MultiVertex, Vertex
from poplar_py import program as prog
from poplar_py.profile.report import summary


class Bump(Vertex):
    x: InOut[int]

    def compute(self):
        self.x += 1


class BumpAll(MultiVertex):
    x: InOut[poplar.Vector[int]]

    def compute(self, workerId):
        for i in range(workerId, len(self.x), self.numWorkers()):
            self.x[i] += 1


def graph_for(tiles: int, **fields):
    m = poplar.IPUModel()
    m.tilesPerIPU = tiles
    for k, v in fields.items():
        setattr(m, k, v)
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets([Bump, BumpAll])
    return device, graph


def bumps(graph, cs, placement, estimate, tile_of_data=0):
    x = graph.addVariable(poplar.INT, [len(placement)])
    graph.setTileMapping(x, tile_of_data)
    for i, tile in enumerate(placement):
        v = graph.addVertex(cs, "Bump", {"x": x[i]})
        graph.setTileMapping(v, tile)
        graph.setPerfEstimate(v, estimate)
    return x


def step(engine, name):
    return next(s for s in engine.getProfile()["execution"]["steps"] if s["name"] == name)


def run(device, graph, program, **options):
    engine = poplar.Engine(graph, program, options)
    engine.load(device)
    engine.run()
    return engine


@pytest.mark.parametrize("count,expected", [(1, 120), (6, 120), (7, 240), (12, 240), (13, 360)])
def test_plain_vertices_share_six_workers(count, expected):
    # Worker slots issue round-robin: a tile takes 6 x the busiest worker's cycles.
    device, graph = graph_for(2)
    cs = graph.addComputeSet("cs")
    bumps(graph, cs, [0] * count, 20)
    engine = run(device, graph, prog.Execute(cs))
    s = step(engine, "cs")
    assert s["compute"] == expected
    assert s["exchange"] == 0 and s["sync"] == 150  # no exchange, so one barrier
    avg = engine.getProfile()["execution"]["tileAverages"]
    assert avg["computeActive"] == count * 20 / 2  # tile 1 idles


def test_multivertex_estimates_are_tile_cycles():
    device, graph = graph_for(1)
    cs = graph.addComputeSet("mixed")
    bumps(graph, cs, [0], 20)
    y = graph.addVariable(poplar.INT, [12])
    v = graph.addVertex(cs, "BumpAll", {"x": y})
    graph.setPerfEstimate(v, 50)
    assert step(run(device, graph, prog.Execute(cs)), "mixed")["compute"] == 6 * 20 + 50


def test_remote_vertex_data_costs_exchange_and_two_extra_syncs():
    device, graph = graph_for(4)
    cs = graph.addComputeSet("remote")
    bumps(graph, cs, [1] * 8, 10, tile_of_data=0)  # 8 ints live on tile 0, vertices on tile 1
    s = step(run(device, graph, prog.Execute(cs)), "remote")
    assert s["exchange"] == 8 * 4 // 4  # 32 bytes in (and back out) at 4 bytes per cycle
    assert s["sync"] == 3 * 150  # before exchange in, before compute, before exchange out
    assert s["cycles"] == s["sync"] + s["exchange"] + s["compute"]


def test_copy_between_tiles_and_broadcast():
    device, graph = graph_for(4)
    src = graph.addVariable(poplar.FLOAT, [100], "src")
    graph.setTileMapping(src, 0)
    dst = graph.addVariable(poplar.FLOAT, [100], "dst")
    graph.setTileMapping(dst, 1)
    wide = graph.addVariable(poplar.FLOAT, [3, 10], "wide")
    for i in range(3):
        graph.setTileMapping(wide[i], i + 1)
    program = prog.Sequence([prog.Copy(src, dst, name="move"),
                             prog.Copy(src.slice(0, 10).broadcast(3, 0), wide.flatten(), name="bcast")])
    engine = run(device, graph, program)
    move = step(engine, "move")
    assert (move["exchange"], move["sync"], move["cycles"]) == (100, 150, 250)
    # The sender puts its 40 bytes on the exchange once; each receiver takes 40 bytes.
    assert step(engine, "bcast")["exchange"] == 10


def test_on_tile_copy_is_compute_at_memcpy_rate():
    device, graph = graph_for(2)
    a = graph.addVariable(poplar.FLOAT, [64], "a")
    b = graph.addVariable(poplar.FLOAT, [64], "b")
    graph.setTileMapping(a, 1)
    graph.setTileMapping(b, 1)
    s = step(run(device, graph, prog.Copy(a, b, name="local")), "local")
    assert (s["exchange"], s["compute"]) == (0, 64 * 4 // 8)


def test_stream_copy_is_host_exchange():
    device, graph = graph_for(2)
    t = graph.addVariable(poplar.FLOAT, [150], "t")
    graph.setTileMapping(t.slice(0, 100), 0)
    graph.setTileMapping(t.slice(100, 150), 1)
    stream = graph.addHostToDeviceFIFO("in", poplar.FLOAT, 150)
    engine = poplar.Engine(graph, prog.Copy(stream, t, name="load"))
    engine.load(device)
    engine.connectStream("in", np.zeros(150, np.float32))
    engine.run()
    s = step(engine, "load")
    assert s["type"] == "StreamCopy" and s["host"] == 600 // 6 and s["exchange"] == 400 // 4
    assert engine.getProfile()["execution"]["tileAverages"]["host"] == 100


def test_sync_model_fields():
    device, graph = graph_for(64, syncCycles=10, minIPUSyncDelay=5)
    a = graph.addVariable(poplar.FLOAT, [1])
    graph.setTileMapping(a, 0)
    assert step(run(device, graph, prog.Copy(a, a, name="c")), "c")["sync"] == 15
    model = poplar.IPUModel()
    model.tilesPerIPU = 64
    model.relativeSyncDelay = poplar.IPUModel.RelativeSyncDelayType.AUTO
    device = model.createDevice()
    graph = poplar.Graph(device)
    a = graph.addVariable(poplar.FLOAT, [1])
    graph.setTileMapping(a, 0)
    engine = run(device, graph, prog.Copy(a, a, name="c"))
    assert step(engine, "c")["sync"] > 150  # far tiles wait longer
    by_tile = engine.getProfile()["execution"]["cyclesByTile"]["sync"]
    assert by_tile[0] == 150 and by_tile[63] > by_tile[0]


def test_repeat_multiplies_cycles_and_clock_gives_microseconds():
    device, graph = graph_for(2)
    cs = graph.addComputeSet("loop")
    bumps(graph, cs, [0], 20)
    engine = run(device, graph, prog.Repeat(10, prog.Execute(cs)))
    report = engine.getProfile()
    assert step(engine, "loop")["count"] == 10
    assert report["execution"]["totalCycles"] == 10 * (150 + 120)
    text = io.StringIO()
    engine.printProfileSummary(text)
    micro = 2700 / 1.33e9 * 1e6
    assert f"Total cycles:{'':<41}2,700 (approx {micro:,.1f} microseconds)" in text.getvalue()


def test_summary_sections_and_vertex_types():
    device, graph = graph_for(2)
    cs = graph.addComputeSet("cs")
    bumps(graph, cs, [0, 0, 1], 20)
    engine = run(device, graph, prog.Execute(cs))
    out = io.StringIO()
    engine.printProfileSummary(out, {"showExecutionSteps": "true"})
    text = out.getvalue()
    for label in ("Target:", "Graph:", "Memory Usage:", "Execution:", "Tile average compute cycles "
                  "(including idle threads)", "Tile average IPU exchange cycles", "Tile average sync cycles",
                  "Execution steps:", "OnTileExecute"):
        assert label in text
    assert "Bump  (3 runs):" in text and "Number of vertices:" in text


def test_summary_busiest_tile_and_binary_units():
    device, graph = graph_for(2)
    cs = graph.addComputeSet("cs")
    bumps(graph, cs, [0], 20)
    bumps(graph, cs, [1], 50)  # tile 1's vertex takes longer
    engine = run(device, graph, prog.Execute(cs))
    compute = engine.getProfile()["execution"]["cyclesByTile"]["compute"]
    out = io.StringIO()
    engine.printProfileSummary(out)
    text = out.getvalue()
    total = engine.getProfile()["execution"]["totalCycles"]
    label = "Busiest tile compute cycles (tile 1):"
    assert f"  {label:<54}{compute[1]:,} ({100 * compute[1] / total:.1f}% of total)\n" in text
    for line in ("Memory Per-Tile:        624.0 KiB\n", "Total Memory:           1.2 MiB\n",
                 "Range (KiB)", " B (0.1 KiB) on tile "):
        assert line in text
    assert " kB" not in text and " MB" not in text and "instances" not in text


def test_memory_categories_and_out_of_memory_report():
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    model.memoryBytesPerTile = 4096
    device = model.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets([Bump])
    big = graph.addVariable(poplar.FLOAT, [2000], "big")
    graph.setTileMapping(big, 2)
    small = graph.addConstant(poplar.INT, [10], 7, "small")
    graph.setTileMapping(small, 2)
    with pytest.raises(poplar.GraphMemoryAllocationError) as info:
        poplar.Engine(graph, prog.Sequence())
    message = str(info.value)
    assert "tile 2" in message and "variables 8,000" in message and "constants 40" in message
    engine = poplar.Engine(graph, prog.Sequence(), {"debug.allowOutOfMemory": "true"})
    report = engine.getProfile()["compilation"]
    assert report["tiles"][2]["memory"]["outOfMemory"] and not report["tiles"][0]["memory"]["outOfMemory"]
    assert report["memory"]["byCategory"]["variables"] == 8000


def test_vertex_state_code_and_buffers_are_counted():
    _device, graph = graph_for(2)
    cs = graph.addComputeSet("cs")
    bumps(graph, cs, [1] * 4, 20, tile_of_data=0)
    usage = poplar.Engine(graph, prog.Execute(cs)).getProfile()["compilation"]["tiles"][1]["memory"]
    assert usage["byCategory"]["exchange buffers"] >= 16
    # four records of one scalar edge: a 32-bit pointer each, as the IPU stores them
    assert usage["byCategory"]["vertex state"] == 4 * 4 and usage["byCategory"]["vertex code"] > 0
    assert usage["byCategory"]["control code"] == 16


def test_unmapped_variables_go_next_to_their_users_or_linearly():
    _device, graph = graph_for(4)
    cs = graph.addComputeSet("auto")
    x = graph.addVariable(poplar.INT, [4], "near")
    for i in range(4):
        v = graph.addVertex(cs, "Bump", {"x": x[i]})
        graph.setTileMapping(v, 3)
    lonely = graph.addVariable(poplar.FLOAT, [200], "lonely")
    engine = poplar.Engine(graph, prog.Sequence([prog.Execute(cs), prog.WriteUndef(lonely)]))
    report = engine.getProfile()["compilation"]
    assert set(report["autoMappedVariables"]) == {"near", "lonely"}
    # near goes to its users' tile 3; lonely is spread linearly, 50 floats per tile.
    assert [t["memory"]["byCategory"]["variables"] for t in report["tiles"]] == [200, 200, 200, 216]
    with pytest.raises(poplar.InvalidTileMappingError, match=r"near|lonely"):
        poplar.Engine(graph, prog.Execute(cs), {"tileMapping.strict": "true"})


def test_registered_perf_estimator():
    device, graph = graph_for(1)
    seen = []

    def estimator(vertex, target):
        seen.append(vertex.getFieldInfo("x").size())
        return 7 * target.getNumWorkerContexts(), 0

    graph.registerPerfEstimator("BumpAll", estimator)
    cs = graph.addComputeSet("est")
    graph.addVertex(cs, "BumpAll", {"x": graph.addVariable(poplar.INT, [5])})
    assert step(run(device, graph, prog.Execute(cs)), "est")["compute"] == 42 and seen == [5]


@pytest.mark.parametrize("partials,kind,units", [(None, "half", 16), (poplar.HALF, "half", 16),
                                                  (poplar.FLOAT, "half.float", 8)])
def test_estimated_flops_count_against_the_units_their_types_run_on(partials, kind, units):
    device, graph = graph_for(1)
    graph.registerPerfEstimator("BumpAll", lambda v, t: poplar.VertexPerfEstimate(100, 3000, poplar.HALF,
                                                                                  partials))
    cs = graph.addComputeSet("est")
    graph.addVertex(cs, "BumpAll", {"x": graph.addVariable(poplar.INT, [5])})
    rows = run(device, graph, prog.Execute(cs)).getProfile()["execution"]["computeSets"]
    row = next(r for r in rows if r["name"] == "est")
    # Mk2: 16 FP16.16 or 8 FP16.32 conv units of 16 weights, a field position every 4 cycles
    peak = graph.getTarget().getPeakFlopsPerCycle(poplar.HALF, partials)
    assert peak == units * 16 * 2 // 4
    assert row["flopsByType"] == {kind: 3000} and row["peakShare"] == pytest.approx(3000 / peak / 100)


def test_report_file_and_cli_profile(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    device, graph = graph_for(2)
    cs = graph.addComputeSet("cs")
    bumps(graph, cs, [0, 1], 20)
    engine = poplar.Engine(graph, prog.Execute(cs), {"autoReport.all": "true", "autoReport.directory": "rep"})
    engine.load(device)
    engine.run()
    expected = io.StringIO()
    engine.printProfileSummary(expected)
    del engine  # the final report is written when the engine goes away
    report = json.loads((tmp_path / "rep" / "profile.json").read_text())
    assert summary(report) == expected.getvalue()
    out = subprocess.run([sys.executable, "-m", "poplar_py.cli", "profile", "rep/profile.json"],
                         capture_output=True, text=True, check=True).stdout
    assert out == expected.getvalue()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = subprocess.run([sys.executable, "-m", "poplar_py.cli", "profile", str(bad)],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "not a poplar-py profile report" in result.stderr


def test_poplar_engine_options_env_turns_on_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": "env"}))
    _, graph = graph_for(1)
    poplar.Engine(graph, prog.Sequence())
    assert (tmp_path / "env" / "profile.json").exists()
