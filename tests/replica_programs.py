"""Replicated programs whose profiles are kept as golden files (tests/data/replica_profiles.json.gz).

Each builder runs one program on a replicated graph (replica index constants, per-replica and
broadcast streams, cross-replica copies, gcl collectives, virtual graphs, control flow, prints,
compute whose measured cycles differ per replica) and returns what it computed and the full
profile report. The goldens were written by the compiler that expanded every replica into the
graph; the one-replica compiler must give every figure exactly as it did.

    python tests/replica_programs.py tests/data/replica_profiles.json.gz [NAME ...]  # rewrite goldens

The goldens of the programs using PopLibs were written again after this test had shown the
one-replica compiler's figures equal to the expanding compiler's for all seven, when PopLibs'
vertices changed: poplin's costed as the AMP's (``tutorial5``), popops' as one MultiVertex per
tile (``virtual_graph_control``, ``collectives``, ``collectives_two_ipus``, ``tutorial5``), and
gcl's rotations as one MultiVertex per tile, in place (``collectives``, ``collectives_two_ipus``,
``tutorial5``: fewer vertices, less vertex state, one work buffer; cycles unchanged), and when the loss's
vertices got PopLibs' estimators (``tutorial5``: one-hot encoding, arg max, accuracy). With
per-IPU timelines (cycles/timeline.py) a tile counts only the steps its IPU takes part in:
``index_scale``, ``virtual_graph_control`` and ``collectives_two_ipus`` have steps on some IPUs
only (a print from replica 0, work on each replica's first IPU), so the tile averages of the
others got shorter (sync, host, global exchange); every total stayed as it was, and the
reports gained each IPU's clock and waiting. ``collectives`` again when gcl's all-gather marked
its work buffer undefined before filling it (a WriteUndef: the buffer is packed by liveness
instead of always live, 100 bytes less of variables, 512 more of control code for the program).
``index_scale`` again when the kernels' count issued floating-point operations beside the main
pipeline's and costed a loop's step (its codelet's compute cycles, 780 to 708 on its busiest tile);
``tutorial5`` when popops' reductions took the estimates of PopLibs' single-input and strided
vertices where their shapes are those (its cycles only). All of them when vertex state was
counted as the IPU stores it (32-bit pointers, a list's rows in their layouts) and popops' map
vertices took rows of several pieces a worker (their generated names and code sizes): memory
figures only, every cycle as it was. ``tutorial5`` when popops' row sums of float accumulators
took one ``float4`` a turn (the reduce vertices' modelled code: memory figures only, no cycle).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, popops, poputil

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "data" / "replica_profiles.json.gz"

CODELETS = '''
from poplar_py import Vertex, Input, Output, Vector

class Scale(Vertex):
    x: Input[Vector[float]]
    k: Input[int]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            s = self.x[i]
            for j in range(self.k):  # more work on later replicas: their measured cycles differ
                s += self.x[i]
            self.out[i] = s
'''


def _device(ipus: int, tiles: int) -> poplar.Device:
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = ipus, tiles
    return m.createDevice()


def _run(graph: poplar.Graph, programs, device, before: Callable | None = None, runs: int = 1
         ) -> tuple[poplar.Engine, str]:
    engine = poplar.Engine(graph, programs)
    engine.load(device)
    out = io.StringIO()
    engine.setPrintTensorStream(out)
    if before is not None:
        before(engine)
    for _ in range(runs):
        engine.run(0)
    return engine, out.getvalue()


def index_scale() -> tuple[dict, dict]:
    """A user codelet reading the replica index, spread over two IPUs per replica."""
    device = _device(4, 4)
    graph = poplar.Graph(device, replication_factor=2)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scale.py"
        path.write_text(CODELETS)
        graph.addCodelets(str(path))
    idx = graph.addReplicationIndexConstant("r")
    x = graph.addVariable(poplar.FLOAT, [12], "x")
    y = graph.addVariable(poplar.FLOAT, [12], "y")
    graph.setTileMapping(x, 1)
    graph.setTileMapping(y, 6)  # the replica's second IPU: the compute set crosses IPU-Links
    cs = graph.addComputeSet("scale")
    for half in range(2):
        v = graph.addVertex(cs, "Scale", {"x": x[half * 6:(half + 1) * 6], "k": idx.reinterpret(poplar.INT),
                                          "out": y[half * 6:(half + 1) * 6]})
        graph.setTileMapping(v, 3 + 4 * half)
    graph.createHostWrite("x", x)
    graph.createHostRead("y", y)
    data = np.arange(12, dtype=np.float32)

    def write(engine: poplar.Engine) -> None:
        engine.writeTensor("x", data)
        engine.writeTensor("x", data * 10, replicaIndex=1)

    program = prog.Sequence([prog.Execute(cs), prog.PrintTensor("y", y)])
    engine, _ = _run(graph, program, device, write, runs=2)
    return {"y": [engine.readTensor("y", replicaIndex=r) for r in range(2)]}, engine.getProfile()


def streams() -> tuple[dict, dict]:
    """Per-replica and broadcast host-to-device streams, and a device-to-host stream per replica."""
    device = _device(4, 4)
    graph = poplar.Graph(device, replication_factor=4)
    x = graph.addVariable(poplar.FLOAT, [3], "x")
    z = graph.addVariable(poplar.FLOAT, [3], "z")
    graph.setTileMapping(x, 0)
    graph.setTileMapping(z, 2)
    ins = graph.addHostToDeviceFIFO("in", poplar.FLOAT, 3)
    every = graph.addHostToDeviceFIFO("every", poplar.FLOAT, 3, poplar.ReplicatedStreamMode.BROADCAST)
    outs = graph.addDeviceToHostFIFO("out", poplar.FLOAT, 3)
    program = prog.Sequence([prog.Copy(ins, x), prog.Copy(every, z), prog.Copy(x, outs)])
    got = [np.zeros(3, np.float32) for _ in range(4)]

    def connect(engine: poplar.Engine) -> None:
        engine.connectStream("in", np.arange(6, dtype=np.float32))
        engine.connectStream("in", np.full(3, 7, np.float32), replicaIndex=3)
        engine.connectStream("every", np.arange(3, dtype=np.float32))
        for r in range(4):
            engine.connectStream("out", got[r], replicaIndex=r)

    engine, _ = _run(graph, program, device, connect, runs=2)
    return {"out": got}, engine.getProfile()


def cross_replica_copies() -> tuple[dict, dict]:
    """A permutation of four replicas, and a swap of two replicas' halves in place."""
    device = _device(4, 4)
    graph = poplar.Graph(device, replication_factor=4)
    src = graph.addVariable(poplar.INT, [5], "src")
    dst = graph.addVariable(poplar.INT, [5], "dst")
    graph.setTileMapping(src, 0)
    graph.setTileMapping(dst, 3)
    graph.createHostWrite("src", src)
    graph.createHostRead("dst", dst)
    graph.createHostRead("src_r", src)
    program = prog.Sequence([prog.CrossReplicaCopy(src, dst, {0: 2, 1: 0, 2: 3, 3: 1}),
                             prog.CrossReplicaCopy(src, src, {0: 1, 1: 0, 2: 3, 3: 2}),
                             prog.AssumeEqualAcrossReplicas(dst)])
    data = np.arange(20, dtype=np.int32).reshape(4, 5)

    def write(engine: poplar.Engine) -> None:
        for r in range(4):
            engine.writeTensor("src", data[r], replicaIndex=r)

    engine, _ = _run(graph, program, device, write)
    return ({"dst": [engine.readTensor("dst", replicaIndex=r) for r in range(4)],
             "src": [engine.readTensor("src_r", replicaIndex=r) for r in range(4)]}, engine.getProfile())


def virtual_graph_control() -> tuple[dict, dict]:
    """A virtual graph of each replica's second IPU, a loop and a branch on replica 0's values."""
    device = _device(4, 4)
    graph = poplar.Graph(device, replication_factor=2)
    popops.addCodelets(graph)
    ipu1 = graph.createVirtualGraph(4, 8)
    idx = ipu1.addReplicationIndexConstant()
    y = graph.addVariable(poplar.UNSIGNED_INT, [], "y")
    graph.setTileMapping(y, 0)
    count = graph.addVariable(poplar.INT, [], "count")
    graph.setTileMapping(count, 5)
    limit = graph.addConstant(poplar.INT, [], 3, "limit")
    graph.setTileMapping(limit, 5)
    one = graph.addConstant(poplar.INT, [], 1, "one")
    graph.setTileMapping(one, 2)
    body = prog.Sequence()
    popops.addInPlace(graph, count, one, body)
    cond = prog.Sequence()
    going = popops.lt(graph, count, limit, cond)
    program = prog.Sequence([prog.Copy(idx, y), prog.RepeatWhileTrue(cond, going, body),
                             prog.If(going, prog.Sequence(), prog.PrintTensor("count", count))])
    graph.createHostRead("y", y)
    graph.createHostRead("count", count)
    engine, printed = _run(graph, program, device)
    return ({"y": [engine.readTensor("y", replicaIndex=r) for r in range(2)],
             "count": [engine.readTensor("count", replicaIndex=r) for r in range(2)], "printed": printed},
            engine.getProfile())


def collectives() -> tuple[dict, dict]:
    """gcl's all-reduce (in place and not), all-gather, reduce-scatter and broadcast."""
    replicas = 4
    device = _device(replicas, 8)
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    seq = prog.Sequence()
    t = graph.addVariable(poplar.FLOAT, [3, 7], "t")
    poputil.mapTensorLinearly(graph, t)
    graph.createHostWrite("t", t)
    outputs = {"sum": gcl.allReduceCrossReplica(graph, t, gcl.CollectiveOperator.ADD, seq),
               "max": gcl.allReduceCrossReplica(graph, t, gcl.CollectiveOperator.MAX, seq),
               "gathered": gcl.allGatherCrossReplica(graph, t, seq),
               "scattered": gcl.reduceScatterCrossReplica(graph, t, gcl.CollectiveOperator.ADD, seq),
               "root": gcl.broadcastCrossReplica(graph, t, seq, rootReplica=2)}
    gcl.allReduceInPlaceCrossReplica(graph, t, gcl.CollectiveOperator.MEAN, seq)
    outputs["t_mean"] = t
    for name, out in outputs.items():
        graph.createHostRead(name, out)
    data = np.random.default_rng(7).uniform(-1, 1, [replicas, 3, 7]).astype(np.float32)

    def write(engine: poplar.Engine) -> None:
        for r in range(replicas):
            engine.writeTensor("t", data[r], replicaIndex=r)

    engine, _ = _run(graph, seq, device, write)
    return ({name: [engine.readTensor(name, replicaIndex=r) for r in range(replicas)] for name in outputs},
            engine.getProfile())


def collectives_two_ipus() -> tuple[dict, dict]:
    """An all-reduce over replicas of two IPUs each (the ring crosses the ladder's rungs)."""
    replicas = 2
    device = _device(4, 4)
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    seq = prog.Sequence()
    t = graph.addVariable(poplar.FLOAT, [40], "t")
    poputil.mapTensorLinearly(graph, t)
    graph.createHostWrite("t", t)
    out = gcl.allReduceCrossReplica(graph, t, gcl.CollectiveOperator.MEAN, seq)
    graph.createHostRead("out", out)
    data = np.arange(80, dtype=np.float32).reshape(2, 40)

    def write(engine: poplar.Engine) -> None:
        for r in range(replicas):
            engine.writeTensor("t", data[r], replicaIndex=r)

    engine, _ = _run(graph, seq, device, write)
    return {"out": [engine.readTensor("out", replicaIndex=r) for r in range(replicas)]}, engine.getProfile()


def tutorial5() -> tuple[dict, dict]:
    """Tutorial 5's data-parallel training on four replicas, as a user runs it."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "profile.json"
        demo = "tutorials/tut5_ml/regression_demo.py"
        done = subprocess.run([sys.executable, "-m", "poplar_py.cli", "run", demo, "1", "40",
                               "--replicas", "4", "--tiles", "16", "--profile", str(report)],
                              cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
        return {"stdout": done.stdout}, json.loads(report.read_text())


PROGRAMS: dict[str, Callable[[], tuple[dict, dict]]] = {
    f.__name__: f for f in (index_scale, streams, cross_replica_copies, virtual_graph_control, collectives,
                            collectives_two_ipus, tutorial5)}


def plain(results: dict) -> dict:
    """Results as JSON data."""
    def one(v):
        if isinstance(v, list):
            return [one(x) for x in v]
        return np.asarray(v).tolist() if isinstance(v, np.ndarray | np.generic) else v
    return {k: one(v) for k, v in results.items()}


def normalised(results: dict, profile: dict) -> tuple[dict, dict]:
    """Results and profile as JSON data, without what the one-replica compiler added (the
    per-replica memory figures) so that both compilers' outputs compare."""
    results, profile = plain(results), json.loads(json.dumps(profile))
    if "stdout" in results:
        added = r"  Per Replica \(each of \d+ alike\):\n    Including Gaps: +[\d,]+ B\n"
        results["stdout"] = re.sub(added, "", results["stdout"])
    profile["compilation"]["memory"].pop("perReplica", None)
    return results, profile


def load_goldens() -> dict:
    with gzip.open(GOLDEN, "rt") as f:
        return json.load(f)


if __name__ == "__main__":  # rewrite the goldens of the programs named (all without names)
    goldens = load_goldens() if GOLDEN.exists() else {}
    for name in sys.argv[2:] or list(PROGRAMS):
        results, profile = normalised(*PROGRAMS[name]())
        goldens[name] = {"results": results, "profile": profile}
        print(name, "ok", file=sys.stderr)
    Path(sys.argv[1]).parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(sys.argv[1], "wt") as f:
        json.dump(goldens, f, sort_keys=True)
