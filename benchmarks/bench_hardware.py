"""The hardware path against published hardware measurements.

    python benchmarks/bench_hardware.py [--bert]

Runs each microbenchmark as a user would, on a device from ``DeviceManager`` (the hardware path,
``poplar_py/cycles/calibration.py``) of the architecture the measurement was made on, and prints the
published figure, its source, the simulated figure and their ratio. Rows 1-9 are what the
calibration was fitted on or checked against (target: every ratio 0.8-1.25); the all-reduce row
checks that big transfers keep the links' bandwidth with the links' latency (target: within 1.3x
of the ring bound, latency included). ``--bert`` adds the model-level rows, which validate and are
never fitted: tutorial 10's BERT-Base on a Bow Pod16 (``--bert-base``, its steady state at
Graphcore's micro-batch of 32; about 40 minutes at a peak of 20 GB) against Graphcore's published
throughput (target: within 15%), and what the micro-batch does to one layer's pace (8 and 16
against the 32 the Pod16 row runs; about 4 minutes at 5 GB).

Sources: [TIPU] TessellateIPU's "IPU Peak Flops" notebook, run on a Bow IPU (its stored
output); [Jia] Jia, Tillman, Maggioni, Scarpazza, "Dissecting the Graphcore IPU Architecture via
Microbenchmarking" (arXiv:1912.03413), Mk1 C2 card at 1.6 GHz; [T6] the hardware profile in
Graphcore's tutorial 6 README (tutorial 7 here), Mk2, ``10000 1000 --device ipu``; [GC] Graphcore's
performance results, BERT Base Ph1 Pre-Training (SL128), Bow Pod16, SDK 3.1, PopART: 16,391
sequences/s (https://www.graphcore.ai/performance-results).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import subprocess
import sys

from bench_collectives import all_reduce, ring_link_bytes_per_cycle
from timing import ROOT

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.target import setModelDefaults
from poplibs_py import poplin, popops, poputil
from poplibs_py.poplin.plan import REGISTER_TILE

TUTORIAL = ROOT / "tutorials" / "tut7_matrix_vector_opt"
GPT = ROOT / "tutorials" / "tut10_gpt" / "gpt.py"


def hardware(arch: str, ipus: int = 1, tiles: int | None = None) -> poplar.Device:
    """An attached DeviceManager device of ``ipus`` IPUs of ``arch`` (the hardware path)."""
    setModelDefaults(IPUVersion=arch, tilesPerIPU=tiles)
    try:
        device = poplar.DeviceManager.createDeviceManager().getDevices(poplar.TargetType.IPU, ipus)[0]
    finally:
        setModelDefaults()
    device.attach()
    return device


def run(graph: poplar.Graph, device: poplar.Device, program: prog.Program) -> dict:
    engine = poplar.Engine(graph, program)
    engine.load(device)
    engine.run()
    return engine.getProfile()


def compute_cycles(profile: dict, name: str) -> int:
    """The compute phase of compute set ``name`` (its slowest tile)."""
    return next(s["compute"] for s in profile["execution"]["steps"] if s.get("computeSet") == name)


def amp_tflops(n: int) -> float:
    """Every tile of a Bow IPU multiplies its own [n, 16] by [16, 16] half matrices (half
    partials) on its AMP, as the TessellateIPU notebook does: TFLOPS over the compute phase."""
    device = hardware("ipu21")
    target = device.getTarget()
    graph = poplar.Graph(device)
    poplin.addCodelets(graph)
    tiles = target.getNumTiles()
    a = graph.addVariable(poplar.HALF, [tiles, n * 16], "a")
    b = graph.addVariable(poplar.HALF, [tiles, 16 * 16], "b")
    out = graph.addVariable(poplar.HALF, [tiles, n * 16], "out")
    cs = graph.addComputeSet("amp")
    vertex = poputil.templateVertex("poplin::MatMulBlock", poplar.HALF, poplar.HALF, *REGISTER_TILE)
    for t in range(tiles):
        for x in (a, b, out):
            graph.setTileMapping(x[t], t)
        graph.setTileMapping(graph.addVertex(cs, vertex, {"a": a[t], "b": b[t], "out": out[t]}), t)
    cycles = compute_cycles(run(graph, device, prog.Execute(cs)), "amp")
    return 2 * n * 16 * 16 * tiles / (cycles / target.getTileClockFrequency()) / 1e12


def write_tbs() -> float:
    """popops.zero of 48 KB a tile on a Mk1 IPU: bytes over the compute phase, TB/s."""
    device = hardware("ipu1")
    target = device.getTarget()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    n = target.getNumTiles() * 12 * 1024
    t = graph.addVariable(poplar.FLOAT, [n], "t")
    poputil.mapTensorLinearly(graph, t)
    program = prog.Sequence()
    popops.zero(graph, t, program, "zero")
    profile = run(graph, device, program)
    cycles = sum(s["compute"] for s in profile["execution"]["steps"] if s.get("computeSet"))
    return 4 * n / (cycles / target.getTileClockFrequency()) / 1e12


READ_CPP = """
#include <poplar/Vertex.hpp>
using namespace poplar;

class ReadBest : public Vertex {  // 128-bit loads (ld128), as hand-written assembly reads
public:
  Input<Vector<float, VectorLayout::SPAN, 16>> in;
  Output<Vector<float>> out;
  bool compute() {
    const float4 *p = reinterpret_cast<const float4 *>(&in[0]);
    float4 acc = {0, 0, 0, 0};
    for (unsigned i = 0; i < COUNT / 4; ++i) acc += p[i];
    for (unsigned k = 0; k < 4; ++k) out[k] = acc[k];
    return true;
  }
};

class ReadPlain : public Vertex {  // the loop as written: a float at a time
public:
  Input<Vector<float>> in;
  Output<float> out;
  bool compute() {
    float acc = 0;
    for (unsigned i = 0; i < COUNT; ++i) acc += in[i];
    *out = acc;
    return true;
  }
};
"""


def read_tbs(vertex: str, count: int = 4092) -> float:
    """Every worker of every tile of a Mk1 IPU reads ``count`` floats with ``vertex``: bytes over
    the compute phase, TB/s."""
    device = hardware("ipu1")
    target = device.getTarget()
    graph = poplar.Graph(device)
    graph.addCodelets(READ_CPP.replace("COUNT", str(count)), poplar.CodeletFileType.CppSource)
    tiles, workers = target.getNumTiles(), target.getNumWorkerContexts()
    data = graph.addVariable(poplar.FLOAT, [tiles, workers, count], "data")
    out = graph.addVariable(poplar.FLOAT, [tiles, workers, 4], "out")
    cs = graph.addComputeSet("read")
    for t in range(tiles):
        graph.setTileMapping(data[t], t)
        graph.setTileMapping(out[t], t)
        for w in range(workers):
            fields = {"in": data[t][w], "out": out[t][w] if vertex == "ReadBest" else out[t][w][0]}
            graph.setTileMapping(graph.addVertex(cs, vertex, fields), t)
    cycles = compute_cycles(run(graph, device, prog.Execute(cs)), "read")
    return 4 * tiles * workers * count / (cycles / target.getTileClockFrequency()) / 1e12


def link_latency(senders: int, nbytes: int = 256) -> int:
    """Global exchange cycles of ``senders`` tiles of IPU 0 of a C2 card (two Mk1 IPUs) each sending
    ``nbytes`` to the same tile of IPU 1."""
    device = hardware("ipu1", ipus=2)
    graph = poplar.Graph(device)
    per_ipu = device.getTarget().getTilesPerIPU()
    n = nbytes // 4
    src = graph.addVariable(poplar.FLOAT, [senders, n], "src")
    dst = graph.addVariable(poplar.FLOAT, [senders, n], "dst")
    for t in range(senders):
        graph.setTileMapping(src[t], t)
        graph.setTileMapping(dst[t], per_ipu + t)
    profile = run(graph, device, prog.Copy(src, dst))
    return max(s["globalExchange"] for s in profile["execution"]["steps"])


def tutorial6() -> dict:
    """Tutorial 7 here (Graphcore's tutorial 6), 10000 x 1000 with ``--device ipu``: its profile."""
    argv, cwd = sys.argv, os.getcwd()
    sys.argv = ["tut7.py", "10000", "1000", "--device", "ipu"]
    os.chdir(TUTORIAL)
    captured = io.StringIO()
    engines: list = []
    original = poplar.Engine.run

    def keep(self, *args, **kwargs):
        engines.append(self)
        return original(self, *args, **kwargs)

    poplar.Engine.run = keep
    try:
        with contextlib.redirect_stdout(captured), contextlib.suppress(SystemExit):
            runpy.run_path("tut7.py", run_name="__main__")
    finally:
        poplar.Engine.run = original
        sys.argv = argv
        os.chdir(cwd)
    return engines[0].getProfile()


def all_reduce_ratio(nbytes: int = 16 * 2**20, replicas: int = 16) -> tuple[int, int]:
    """An ADD all-reduce of ``nbytes`` over ``replicas`` one-IPU replicas of a Mk2 Pod on the
    hardware path (736 tiles an IPU), and its ring bound: the bandwidth bound plus each step's
    syncs and link latency."""
    cycles, _, target = all_reduce(replicas, nbytes, 736, device=hardware("ipu2", ipus=replicas, tiles=736))
    steps = 2 * (replicas - 1)
    latency = target.calibration.link_latency * target.getTileClockFrequency()
    per_step = target.syncCycles + target.globalSyncCycles + latency
    return cycles, int(steps * (nbytes / replicas / ring_link_bytes_per_cycle(target, replicas) + per_step))


def bert_base() -> tuple[float, float]:
    """Tutorial 10's ``--bert-base`` on Bow IPUs, as a user runs it (its own process): its steady
    state's (sequences/s, model TFLOPS per IPU)."""
    command = [sys.executable, "-m", "poplar_py.cli", "run", "--arch", "ipu21", str(GPT), "--bert-base",
               "--steps", "1"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("steady state"))
    sequences, tflops = re.search(r"([\d,.]+) sequences/s.* ([\d.]+) model TFLOPS", line).groups()
    return float(sequences.replace(",", "")), float(tflops)


def bert_layer_cycles_a_token(batch: int) -> float:
    """One BERT-Base layer (outlined, recomputed, half) alone on IPU 1 of a Bow pipeline, the
    embedding and head on IPU 0 (tutorial 10's ``--bert-base`` cut to one layer, one replica,
    vocabulary 256): IPU 1's busy cycles a token in the pipelined passes at micro-batch ``batch``."""
    command = [sys.executable, "-m", "poplar_py.cli", "run", "--arch", "ipu21", str(GPT), "--bert-base",
               "--layers", "1", "--pp", "2", "--dp", "1", "--layers-per-ipu", "0,1", "--accum", "2",
               "--vocab", "256", "--batch", str(batch), "--steps", "1", "--steady", "2"]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    pace = re.search(r"IPU 1 ([\d,]+)", next(line for line in out.splitlines() if "the pace" in line))
    return int(pace.group(1).replace(",", "")) / (batch * 128)


def micro_batch_effect() -> None:
    """What the micro-batch does to a layer's pace: 8 and 16 against Graphcore's 32, which the
    Pod16 row runs."""
    paces = {batch: bert_layer_cycles_a_token(batch) for batch in (8, 16, 32)}
    print("\none BERT-Base layer on a Bow IPU, cycles a token: " + ", ".join(
        f"micro-batch {batch} {pace:,.0f} ({pace / paces[32]:.2f}x micro-batch 32's)"
        for batch, pace in paces.items()))


def model_rows() -> list[tuple[str, float, float, str, str]]:
    """The model-level rows (validation, never fitted)."""
    sequences, tflops = bert_base()
    bert = "BERT-Base pre-training SL128, Bow Pod16 (steady state):"
    return [
        (f"{bert} sequences/s", 16_391, sequences, "GC", "validation"),
        (f"{bert} model TFLOPS per IPU", 71.6, tflops, "GC", "validation"),
    ]


def rows() -> list[tuple[str, float, float, str, str]]:
    """(what, published, simulated, source, use) of every row: "fitted" where a calibration figure
    was derived from the row's measurement, "checked" where the row only tests the model."""
    t6 = tutorial6()["execution"]
    avg = t6["tileAverages"]
    t6_host = 40_044_000 / avg["host"] * 1.33e9 / 1e9  # the stream copies' bytes, GB/s
    links = link_latency(1216) / link_latency(1)
    tut6 = "tutorial 6, Mk2:"
    return [
        ("AMP matMul a tile, [16,16]x[16,16] half, Bow, TFLOPS", 55.5, amp_tflops(16), "TIPU", "checked"),
        ("AMP matMul a tile, [2048,16]x[16,16] half, Bow, TFLOPS", 334.9, amp_tflops(2048), "TIPU",
         "checked"),
        ("write bandwidth (popops.zero), Mk1, TB/s", 15.5, write_tbs(), "Jia", "checked"),
        (f"{tut6} total cycles", 25_444_984, t6["totalCycles"], "T6", "fitted"),
        (f"{tut6} tile average sync cycles", 135_849.6, avg["sync"], "T6", "fitted"),
        (f"{tut6} host-to-IPU bandwidth, GB/s", 20.2, t6_host, "T6", "fitted"),
        (f"{tut6} tile average compute cycles (kernels' count)", 28_300.3, avg["compute"], "T6", "checked"),
        ("local-memory read bandwidth, 128-bit loads, Mk1, TB/s", 30.7, read_tbs("ReadBest"), "Jia",
         "checked"),
        ("local-memory read bandwidth, plain loop, Mk1, TB/s", 7.6, read_tbs("ReadPlain"), "Jia", "checked"),
        ("IPU-Link latency, full load over no load, Mk1", 5.55, links, "Jia (4.0-7.7x)", "fitted"),
    ]


def main() -> int:
    print(f"{'what':64} {'hardware':>12} {'simulated':>12} {'ratio':>6}  {'use':7}  source")
    for what, published, simulated, source, use in rows() + (model_rows() if "--bert" in sys.argv else []):
        ratio = simulated / published
        print(f"{what:64} {published:>12,.1f} {simulated:>12,.1f} {ratio:>6.2f}  {use:7}  {source}")
    cycles, bound = all_reduce_ratio()
    print(f"\nall-reduce of 16 MB over 16 Mk2 replicas (hardware path): {cycles:,} cycles, ring bound "
          f"{bound:,} (latency included): {cycles / bound:.2f}x")
    if "--bert" in sys.argv:
        micro_batch_effect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
