"""poplin's cycle estimators: PopLibs' AMP and reduction formulas, the profile's FLOPs, the
throughput they give (never above the device's peak) and the user's overrides."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.profile.report import summary
from poplibs_py import poplin, popops
from poplibs_py.poplin.perf_estimation import (
    AmpFigures,
    ampBlockCycles,
    blockShape,
    castCycles,
    conv1x1Cycles,
    conv1x1WorkerCycles,
    reduceCycles,
    workerShares,
)
from poplibs_py.poputil import PoplibsError


def target(arch="ipu2", tiles=None):
    m = poplar.IPUModel(arch)
    if tiles:
        m.tilesPerIPU = tiles
    return m.createDevice().getTarget()


def test_worker_shares_follow_poplibs_partition():
    assert workerShares(14, 6).tolist() == [2, 2, 3, 2, 2, 3]
    assert workerShares(4, 6).tolist() == [0, 1, 1, 0, 1, 1]
    assert workerShares(np.array([6, 0]), 6).tolist() == [[1] * 6, [0] * 6]


def test_conv1x1_by_hand_half_float_partials_mk2():
    # 8 units (half in, float partials on Mk2), 12 field positions (2 per worker), one in and one
    # out group. Worker: 40 + 1 (zeroing) - 7 retained = 34, x 6 = 204, tag: 218. Weights:
    # 8 units x 16 halves x 2 bytes / 8 bytes a cycle = 32. Supervisor: 50 + 6 x 7 + 12 + 1
    # (first group) + 10 + 1 + (19 - 1 + 7 + 32 + 218).
    amp = AmpFigures.of(target(), poplar.HALF, poplar.FLOAT)
    assert (amp.numConvUnits, amp.weightsPerConvUnit, amp.weightLoadCycles) == (8, 16, 32)
    assert conv1x1WorkerCycles(2, amp, True) == 34
    assert conv1x1Cycles(12, 16, 8, amp) == 391
    # a second input group adds 3 x 6 retained cycles, 15 - 1 + 1, and a pass without zeroing:
    # 19 + 6 + 32 weight loads + workers (40 + 2 - 7 = 35, x 6 = 210, tag 224)
    assert conv1x1Cycles(12, 32, 8, amp) == 391 + 18 + 15 + 19 + 6 + 32 + 224


@pytest.mark.parametrize("arch,type_,partials,units,loads", [
    ("ipu1", poplar.HALF, poplar.FLOAT, 8, 64), ("ipu2", poplar.HALF, poplar.HALF, 16, 64),
    ("ipu2", poplar.FLOAT, poplar.FLOAT, 16, 64), ("ipu1", poplar.FLOAT, poplar.FLOAT, 8, 64)])
def test_amp_figures_per_architecture(arch, type_, partials, units, loads):
    amp = AmpFigures.of(target(arch), type_, partials)
    # coefficient loads at half the target's rate (use128BitConvUnitLoad off, PopLibs' default)
    assert amp.numConvUnits == units and amp.weightLoadCycles == loads
    assert AmpFigures.of(target(arch), poplar.INT, poplar.INT) is None


def test_core_loop_float_is_eight_cycles_half_four():
    t = target()
    half, flt = AmpFigures.of(t, poplar.HALF, poplar.HALF), AmpFigures.of(t, poplar.FLOAT, poplar.FLOAT)
    assert conv1x1WorkerCycles(103, half, False) - conv1x1WorkerCycles(3, half, False) == 400
    assert conv1x1WorkerCycles(103, flt, False) - conv1x1WorkerCycles(3, flt, False) == 800


def test_reduce_estimate_by_hand():
    # 100 float sums of 4 partials: 25 loops of 4, 5 on the busiest worker, each 3 x 4 + 7.
    assert reduceCycles(100, 4, poplar.FLOAT, poplar.FLOAT, 6) == 6 * (32 + 5 * 19)
    # one row of partials is a cast: 171 per worker, 86 float loads, 43 half stores, + 26
    assert reduceCycles(1024, 1, poplar.FLOAT, poplar.HALF, 6) == (86 + 26) * 6
    assert castCycles(1024, poplar.FLOAT, poplar.HALF, 6) == (86 + 26) * 6
    assert reduceCycles(60, 3, poplar.INT, poplar.INT, 6) == 6 * (12 + 10 * 5)


def run_matmul(arch, tiles, m, k, n, type_, options=None, before_run=None):
    device = poplar.IPUModel(arch)
    device.tilesPerIPU = tiles
    device = device.createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    seq = prog.Sequence()
    a = poplin.createMatMulInputLHS(graph, type_, [m, k], [k, n], "A", options=options)
    b = poplin.createMatMulInputRHS(graph, type_, [m, k], [k, n], "B", options=options)
    c = poplin.matMul(graph, a, b, seq, options=options)
    for name, t in (("a", a), ("b", b)):
        graph.createHostWrite(name, t)
    graph.createHostRead("c", c)
    if before_run:
        before_run(graph)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k)).astype(type_.dtype)
    y = rng.standard_normal((k, n)).astype(type_.dtype)
    engine.writeTensor("a", x)
    engine.writeTensor("b", y)
    engine.run()
    return engine, x, y, engine.readTensor("c")


SWEEP = [(1, 1, 1), (7, 5, 3), (64, 64, 64), (16, 512, 16), (512, 16, 16), (16, 16, 512), (200, 300, 100),
         (256, 256, 256)]


@pytest.mark.parametrize("arch", ["ipu1", "ipu2"])
@pytest.mark.parametrize("type_", [poplar.HALF, poplar.FLOAT])
def test_throughput_never_above_peak(arch, type_):
    for m, k, n in SWEEP:
        engine, x, y, c = run_matmul(arch, 8, m, k, n, type_)
        ex = engine.getProfile()["execution"]
        flops = ex["flops"]
        # half products accumulate in float by default: their FLOPs count against the FP16.32 units
        kind = "half.float" if type_ == poplar.HALF else "float"
        assert flops["flops"] == 2 * m * k * n == flops["flopsByType"][kind]
        assert 0 < flops["all"]["peakShare"] < flops["compute"]["peakShare"] < 1, (m, k, n)
        for row in ex["computeSets"]:
            assert row.get("peakShare", 0) < 1
        np.testing.assert_allclose(c, x.astype(np.float64) @ y, rtol=2e-2 if type_ == poplar.HALF else 1e-5,
                                   atol=5e-2 if type_ == poplar.HALF else 1e-4)


@pytest.mark.parametrize("arch", ["ipu1", "ipu2"])
@pytest.mark.parametrize("type_,partials", [(poplar.HALF, poplar.HALF), (poplar.FLOAT, poplar.FLOAT)])
def test_large_block_reaches_most_of_the_peak(arch, type_, partials):
    # one tile's 480x512x256 block: the AMP's overheads are a small part of it
    t = target(arch, tiles=1)
    cycles = ampBlockCycles(480, 512, 256, AmpFigures.of(t, type_, partials))
    share = 2 * 480 * 512 * 256 / t.getPeakFlopsPerCycle(type_) / cycles
    assert 0.8 < share < 1


def test_profile_flops_per_compute_set_and_summary():
    engine, *_ = run_matmul("ipu2", 4, 32, 48, 64, poplar.FLOAT)
    ex = engine.getProfile()["execution"]
    rows = {r["name"]: r for r in ex["computeSets"]}
    product = rows["matMul/matmul"]
    assert product["flops"] == 2 * 32 * 48 * 64
    t = target(tiles=4)
    assert product["peakShare"] == pytest.approx(2 * 32 * 48 * 64 / t.getPeakFlopsPerCycle(poplar.FLOAT)
                                                 / product["compute"])
    clock = t.getTileClockFrequency()
    assert ex["flops"]["compute"]["throughput"] == pytest.approx(
        2 * 32 * 48 * 64 * clock / ex["tileAverages"]["compute"])
    text = summary(engine.getProfile())
    assert "FLOPs (estimated vertices):" in text and "TFLOPS" in text and "% of peak" in text


def test_user_estimator_and_perf_estimate_win():
    name = "poplin::MatMulBlock<float,float,6,16>"
    engine, *_ = run_matmul("ipu2", 2, 12, 8, 16, poplar.FLOAT,
                            before_run=lambda g: g.registerPerfEstimator(name, lambda v, t: 1234))
    assert {v["type"]: v["cycles"] for v in engine.getProfile()["execution"]["vertexTypes"]}[name] == 2 * 1234
    # setPerfEstimate on the vertex wins over every estimator
    device = poplar.IPUModel()
    device.tilesPerIPU = 1
    graph = poplar.Graph(device.createDevice())
    poplin.addCodelets(graph)
    cs = graph.addComputeSet("block")
    a, b = graph.addVariable(poplar.FLOAT, [4], "a"), graph.addVariable(poplar.FLOAT, [4], "b")
    out = graph.addVariable(poplar.FLOAT, [2, 2], "out")
    for t in (a, b, out):
        graph.setTileMapping(t, 0)
    v = graph.addVertex(cs, name, {"a": a, "b": b, "out": out.flatten()})
    graph.setTileMapping(v, 0)
    graph.setPerfEstimate(v, 77)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device.createDevice())
    engine.run()
    assert {v["type"]: v["cycles"] for v in engine.getProfile()["execution"]["vertexTypes"]}[name] == 77


def test_half_partials_option_uses_the_16_16_units():
    default, *_ = run_matmul("ipu2", 4, 96, 64, 96, poplar.HALF)
    engine, x, y, c = run_matmul("ipu2", 4, 96, 64, 96, poplar.HALF, {"partialsType": "half"})
    np.testing.assert_allclose(c, x.astype(np.float64) @ y, rtol=2e-2, atol=1e-1)
    fast, slow = (e.getProfile()["execution"]["flops"] for e in (engine, default))
    assert fast["compute"]["throughput"] > slow["compute"]["throughput"]
    # each against the peak of the units it runs on: 16 FP16.16 units, 8 FP16.32 ones
    t = target(tiles=4)
    assert fast["peakFlopsPerCycle"] == {"half": t.getPeakFlopsPerCycle(poplar.HALF)}
    assert slow["peakFlopsPerCycle"] == {"half.float": t.getPeakFlopsPerCycle(poplar.HALF) // 2}
    types = {v["type"] for v in engine.getProfile()["execution"]["vertexTypes"]}
    assert "poplin::MatMulBlock<half,half,6,16>" in types
    with pytest.raises(PoplibsError, match="partialsType"):
        run_matmul("ipu2", 4, 8, 8, 8, poplar.HALF, {"partialsType": "double"})


def test_a_block_shape_follows_from_its_field_sizes():
    for m, k, n in [(1, 1, 1), (6, 16, 16), (7, 5, 3), (1, 300, 1), (480, 512, 256), (3, 1, 4096),
                    (4096, 7, 2)]:
        assert blockShape(m * k, k * n, m * n) == (m, k, n)
    assert blockShape(0, 0, 12) == (1, 0, 12)  # no inner dimension: a row of zeros
    assert blockShape(0, 0, 0) == (0, 0, 0)
    assert blockShape(6, 10, 16) == (0, 0, 0)  # no m, k, n fit these sizes


@pytest.mark.parametrize("rows,inner,cols,ok", [(2, 3, 4, True), (3, 0, 5, True), (2, 3, 5, False)])
def test_a_matmul_block_runs_any_shape_and_fails_on_sizes_of_none(rows, inner, cols, ok):
    device = poplar.IPUModel()
    device.tilesPerIPU = 1
    graph = poplar.Graph(device.createDevice())
    poplin.addCodelets(graph)
    cs = graph.addComputeSet("block")
    out_size = rows * cols if ok else rows * cols + 1
    a = graph.addVariable(poplar.FLOAT, [rows * inner], "a")
    b = graph.addVariable(poplar.FLOAT, [inner * cols], "b")
    out = graph.addVariable(poplar.FLOAT, [out_size], "out")
    v = graph.addVertex(cs, "poplin::MatMulBlock<float,float,6,16>", {"a": a, "b": b, "out": out})
    for t in (a, b, out, v):
        graph.setTileMapping(t, 0)
    for name, t in (("a", a), ("b", b)):
        graph.createHostWrite(name, t)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device.createDevice())
    x = np.arange(rows * inner, dtype=np.float32).reshape(rows, inner)
    y = np.arange(inner * cols, dtype=np.float32).reshape(inner, cols) - 3
    engine.writeTensor("a", x.reshape(-1))
    engine.writeTensor("b", y.reshape(-1))
    if not ok:
        with pytest.raises(poplar.VertexError, match="returned False"):
            engine.run()
        return
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("out").reshape(rows, cols), x @ y)
