"""Programs that tests/test_mpi.py runs under ``mpiexec -n K``: ``python mpi_programs.py MODE OUT``.

Every rank R writes what it reports to the file ``OUT.R``.
"""

import os
import random
import resource
import sys
from collections.abc import Callable

import numpy as np

import poplar_py as poplar
from poplar_py import InOut, Input, Output, Vector, Vertex
from poplar_py import program as prog
from poplibs_py import gcl, popops, poputil

RANK = int(os.environ.get("PMI_RANK", "0"))


def model(tiles: int, ipus: int = 1) -> poplar.Device:
    m = poplar.IPUModel()
    m.tilesPerIPU, m.numIPUs = tiles, ipus
    return m.createDevice()


def say(*what: object) -> None:
    with open(f"{sys.argv[2]}.{RANK}", "a") as f:
        print(*what, file=f)


class Scale(Vertex):
    x: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] = self.x[i] * 2.0 + 1.0
        return True


class Count(Vertex):
    n: InOut[int]
    more: Output[bool]

    def compute(self):
        self.n = self.n + 1
        self.more = self.n < 5
        return True


def control() -> None:
    """Copies across ranks, a RepeatWhile whose predicate lives on the last tile, an If, host
    streams with a callback, and readTensor on every rank."""
    device = model(8)
    graph = poplar.Graph(device)
    graph.addCodelets([Scale, Count])
    x = graph.addVariable(poplar.FLOAT, [8, 4], "x")
    for t in range(8):
        graph.setTileMapping(x[t], t)
    n = graph.addVariable(poplar.INT, [], "n")
    more = graph.addVariable(poplar.BOOL, [], "more")
    graph.setTileMapping(n, 7)
    graph.setTileMapping(more, 7)
    cs = graph.addComputeSet("scale")
    for t in range(8):
        graph.setTileMapping(graph.addVertex(cs, "Scale", {"x": x[t]}), t)
    count = graph.addComputeSet("count")
    graph.setTileMapping(graph.addVertex(count, "Count", {"n": n, "more": more}), 7)
    inp = graph.addHostToDeviceFIFO("in", poplar.FLOAT, 32)
    out = graph.addDeviceToHostFIFO("out", poplar.FLOAT, 32)
    rotated = graph.addVariable(poplar.FLOAT, [8, 4], "rotated")
    for t in range(8):
        graph.setTileMapping(rotated[t], 7 - t)
    body = prog.Sequence([prog.Execute(cs), prog.Copy(x, rotated), prog.Copy(rotated, x)])
    seq = prog.Sequence([
        prog.Copy(inp, x),
        prog.RepeatWhileTrue(prog.Execute(count), more, body),
        prog.If(more, prog.Execute(cs), prog.Copy(x.reverse(0), rotated)),
        prog.Copy(rotated, out),
        prog.PrintTensor("rotated", rotated),
    ])
    graph.createHostRead("x", x)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    fetched = []

    def fill(buffer: np.ndarray) -> None:
        fetched.append(RANK)
        buffer[:] = np.arange(32, dtype=np.float32)

    engine.connectStreamToCallback("in", fill)
    host_out = np.zeros(32, np.float32)
    engine.connectStream("out", host_out)
    engine.run()
    say("x", engine.readTensor("x").reshape(-1).tolist())
    say("out", host_out.tolist())
    say("callback calls", len(fetched))


class Check(Vertex):
    x: Input[Vector[float]]

    def compute(self):
        return self.x[0] < 100.0


def vertex_error() -> None:
    """A vertex on the last tile (the last rank's) fails: every rank raises the same error."""
    device = model(8)
    graph = poplar.Graph(device)
    graph.addCodelets(Check)
    x = graph.addVariable(poplar.FLOAT, [8, 2], "x")
    cs = graph.addComputeSet("check")
    for t in range(8):
        graph.setTileMapping(x[t], t)
        graph.setTileMapping(graph.addVertex(cs, "Check", {"x": x[t]}), t)
    graph.createHostWrite("x", x)
    engine = poplar.Engine(graph, prog.Execute(cs))
    engine.load(device)
    values = np.zeros((8, 2), np.float32)
    values[7, 0] = 500
    engine.writeTensor("x", values)
    try:
        engine.run()
    except poplar.VertexError as e:
        say("VertexError", e)


def different_graphs() -> None:
    """Rank 1 builds a bigger variable than the others."""
    device = model(8)
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [8 + RANK], "x")
    graph.setTileMapping(x, 0)
    try:
        poplar.Engine(graph, prog.Sequence())
    except poplar.PoplarError as e:
        say("PoplarError", e)


def different_programs() -> None:
    """The same graph, but rank 1 repeats its program once more."""
    device = model(8)
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [8], "x")
    graph.setTileMapping(x, 0)
    try:
        poplar.Engine(graph, prog.Repeat(2 + RANK, prog.Copy(x, x)))
    except poplar.PoplarError as e:
        say("PoplarError", e)


def memory() -> None:
    """4 IPUs with about 240 MB of variables each, every element written by a fill on its tile
    (pages of tile memory are taken when first written)."""
    device = model(736, 4)
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    per_tile = 240_000_000 // 736 // 4
    x = graph.addVariable(poplar.FLOAT, [4 * 736, per_tile], "x")
    for t in range(4 * 736):
        graph.setTileMapping(x[t], t)
    seq = prog.Sequence()
    popops.fill(graph, x, seq, 1.0)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.run()
    say("peak RSS MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)


def _small_engine(to_device: bool) -> tuple[poplar.Engine, poplar.Device]:
    device = model(8)
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [8, 4], "x")
    for t in range(8):
        graph.setTileMapping(x[t], t)
    if to_device:
        fifo = graph.addHostToDeviceFIFO("in", poplar.FLOAT, 32)
        program = prog.Copy(fifo, x)
    else:
        program = prog.Copy(x[0:4], x[4:8])
    engine = poplar.Engine(graph, program)
    engine.load(device)
    return engine, device


def callback_error() -> None:
    """The callback of a stream (called on rank 0 alone) raises: every rank raises its error."""
    engine, _ = _small_engine(to_device=True)

    def fail(buffer: np.ndarray) -> None:
        raise ValueError("no more data")

    engine.connectStreamToCallback("in", fail)
    try:
        engine.run()
    except ValueError as e:
        say("ValueError", e)


def one_rank_raises() -> None:
    """Rank 1 fails outside poplar-py while rank 0 runs a program that needs it: the job ends."""
    engine, _ = _small_engine(to_device=False)
    if RANK == 1:
        raise RuntimeError("rank 1 gives up")
    while True:
        engine.run()


def raises_before_engine() -> None:
    """Rank ``argv[3]`` maps a tile out of range (uncaught) while the others build an Engine
    (waiting in MPI start-up for it): the job ends."""
    device = model(8)
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    graph.setTileMapping(x, 9 if int(sys.argv[3]) == RANK else 0)
    poplar.Engine(graph, prog.Sequence())
    say("built")


def spin() -> None:
    """Runs until interrupted (Ctrl-C reaches every rank through mpiexec)."""
    engine, _ = _small_engine(to_device=False)
    say("ready")
    while True:
        engine.run()


def _replicated(replicas: int, ipus_per_replica: int, connected: Callable[[int], bool] = lambda r: True
                ) -> tuple[poplar.Engine, dict[int, int]]:
    """Every replica scales its own x, all-reduces it with gcl, passes it round with a
    CrossReplicaCopy and round again in place (each replica's copy read before any is written),
    and takes y from its own host end (a callback counting its calls here)."""
    device = model(4, replicas * ipus_per_replica)
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    graph.addCodelets([Scale])
    x = graph.addVariable(poplar.FLOAT, [8 * ipus_per_replica, 3], "x")
    poputil.mapTensorLinearly(graph, x)
    y = graph.addVariable(poplar.FLOAT, [5], "y")
    graph.setTileMapping(y, graph.getTarget().getNumTiles() - 1)
    cs = graph.addComputeSet("scale")
    for t in range(x.dim(0)):
        graph.setTileMapping(graph.addVertex(cs, "Scale", {"x": x[t]}), t % graph.getTarget().getNumTiles())
    seq = prog.Sequence([prog.Execute(cs)])
    total = gcl.allReduceCrossReplica(graph, x, gcl.CollectiveOperator.ADD, seq)
    turned = graph.clone(x, "turned")
    ring = {r: (r + 1) % replicas for r in range(replicas)}
    seq.add(prog.CrossReplicaCopy(x, turned, ring))
    seq.add(prog.CrossReplicaCopy(turned, turned, ring))
    seq.add(prog.Copy(graph.addHostToDeviceFIFO("y", poplar.FLOAT, 5), y))
    for name, t in (("x", x), ("total", total), ("turned", turned), ("y", y)):
        graph.createHostRead(name + "/read", t)
    graph.createHostWrite("x", x)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    calls = dict.fromkeys(range(replicas), 0)

    def fill(r: int):
        def callback(buffer: np.ndarray) -> None:
            calls[r] += 1
            buffer[:] = 10 * r + calls[r]
        return callback

    for r in range(replicas):
        engine.writeTensor("x", np.arange(x.numElements(), dtype=np.float32) * (r + 1), replicaIndex=r)
        if connected(r):
            engine.connectStreamToCallback("y", fill(r), replicaIndex=r)
    return engine, calls


def replicas() -> None:
    """A replicated program (R and IPUs per replica from argv): every replica's values, the
    cycles, and how often this rank called each replica's host end."""
    count, per = int(sys.argv[3]), int(sys.argv[4])
    engine, calls = _replicated(count, per)
    engine.run()
    engine.run()
    for r in range(count):
        say(r, *(engine.readTensor(f"{name}/read", replicaIndex=r).tolist()
                 for name in ("x", "total", "turned", "y")))
    say("cycles", engine.getProfile()["execution"]["totalCycles"])
    say("calls", *calls.values())


def unconnected_elsewhere() -> None:
    """Only rank 0 connects replica 3's host end, which rank 1 holds: every rank raises."""
    engine, _ = _replicated(4, 1, lambda r: r != 3 or RANK == 0)
    try:
        engine.run()
    except poplar.PoplarError as e:
        say(type(e).__name__, e)


def _failing_rank() -> int:
    """The rank that fails: argv[3] is "first" or "last"."""
    return 0 if sys.argv[3] == "first" else int(os.environ.get("PMI_SIZE", "1")) - 1


def host_code_fails() -> None:
    """Host code fails on one rank only (argv[4]: a device-to-host callback, a StreamCallback's
    complete, or a prefetch returning a bad value): every rank raises the same error."""
    kind, failing = sys.argv[4], _failing_rank()

    class Feed(poplar.StreamCallback):
        def prefetch(self, p):
            bad = kind == "prefetch" and failing == RANK
            return "maybe" if bad else poplar.StreamCallback.Result.NotAvailable

        def fetch(self, p):
            p[:] = 1.0

        def complete(self):
            if kind == "complete" and failing == RANK:
                raise ValueError(f"complete failed on rank {RANK}")

    def take(p):
        if failing == RANK:
            raise ValueError(f"no room on rank {RANK}")

    if kind == "to_host":
        engine = _to_host_engine(take)
    else:  # the host end is called on the rank holding the destination: tile 0 or tile 7
        device = model(8)
        graph = poplar.Graph(device)
        x = graph.addVariable(poplar.FLOAT, [8, 4], "x")
        for t in range(8):
            graph.setTileMapping(x[t], t)
        fifo = graph.addHostToDeviceFIFO("in", poplar.FLOAT, 4)
        engine = poplar.Engine(graph, prog.Copy(fifo, x[7 if sys.argv[3] == "last" else 0]),
                               {"exchange.enablePrefetch": "true", "exchange.streamBufferOverlap": "none"})
        engine.load(device)
        engine.connectStreamToCallback("in", Feed())
    try:
        engine.run()
        say("no error")
    except Exception as e:
        say(type(e).__name__, str(e).split(" on rank")[0])


def _to_host_engine(take: Callable[[np.ndarray], None]) -> poplar.Engine:
    device = model(8)
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [8, 4], "x")
    for t in range(8):
        graph.setTileMapping(x[t], t)
    engine = poplar.Engine(graph, prog.Copy(x, graph.addDeviceToHostFIFO("out", poplar.FLOAT, 32)))
    engine.load(device)
    engine.connectStreamToCallback("out", take)
    return engine


def exit_in_callback() -> None:
    """sys.exit(3) in a stream callback on one rank ends the job."""
    failing = _failing_rank()

    def take(p):
        if failing == RANK:
            sys.exit(3)

    engine = _to_host_engine(take)
    while True:
        engine.run()


if RANK == 1 and sys.argv[1:2] == ["values_differ"] and sys.argv[3:4] == ["codelet"]:
    class Twice(Vertex):  # the same name, other code, on rank 1
        x: InOut[Vector[float]]

        def compute(self):
            for i in range(len(self.x)):
                self.x[i] = self.x[i] * 3.0
            return True
else:
    class Twice(Vertex):
        x: InOut[Vector[float]]

        def compute(self):
            for i in range(len(self.x)):
                self.x[i] = self.x[i] * 2.0
            return True


def values_differ() -> None:
    """Ranks whose graphs differ only in values (argv[3]: initial values, a constant's values or a
    codelet's code) are refused on every rank."""
    kind = sys.argv[3]
    device = model(4)
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [2], "x")
    graph.setTileMapping(x, 3)
    c = graph.addConstant(poplar.FLOAT, [2], [RANK if kind == "constant" else 0, 1], "c")
    graph.setTileMapping(c, 0)
    graph.setInitialValue(x, [RANK if kind == "initial" else 0] * 2)
    graph.addCodelets(Twice)
    cs = graph.addComputeSet("twice")
    graph.setTileMapping(graph.addVertex(cs, "Twice", {"x": x}), 3)
    try:
        poplar.Engine(graph, prog.Sequence([prog.Copy(c, x), prog.Execute(cs)]))
        say("built")
    except poplar.PoplarError as e:
        say(type(e).__name__, str(e).split(" (frozen")[0])


def fuzz() -> None:
    """A program drawn from a seed (argv[3]): R replicas of one or two IPUs, a random mix of a
    compute set, gcl collectives, a cross-replica permutation and per-replica streams, and maybe
    a replica's host callback failing (on the one rank that calls it). Every rank reports every
    replica's values and the cycles, or the error; the same for any rank count."""
    rng = random.Random(int(sys.argv[3]))
    replicas, per = rng.choice([1, 2, 4]), rng.choice([1, 2])
    device = model(4, replicas * per)
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    graph.addCodelets([Scale])
    x = graph.addVariable(poplar.FLOAT, [rng.randint(1, 12), 3], "x")
    poputil.mapTensorLinearly(graph, x)
    seq, outputs = prog.Sequence(), {"x": x}
    ops = rng.sample(["scale", "reduce", "gather", "broadcast", "permute", "stream"], rng.randint(2, 5))
    for op in ops:
        if op == "scale":
            cs = graph.addComputeSet("scale")
            for row in range(x.dim(0)):
                v = graph.addVertex(cs, "Scale", {"x": x[row]})
                graph.setTileMapping(v, rng.randrange(graph.getTarget().getNumTiles()))
            seq.add(prog.Execute(cs))
        elif op == "reduce":
            ops_ = gcl.CollectiveOperator
            kind = rng.choice([ops_.ADD, ops_.MAX, ops_.MEAN])
            outputs["reduced"] = gcl.allReduceCrossReplica(graph, x, kind, seq)
        elif op == "gather":
            outputs["gathered"] = gcl.allGatherCrossReplica(graph, x, seq)
        elif op == "broadcast":
            outputs["root"] = gcl.broadcastCrossReplica(graph, x, seq, rootReplica=rng.randrange(replicas))
        elif op == "permute":
            order = list(range(replicas))
            rng.shuffle(order)
            turned = graph.clone(x, "turned")
            seq.add(prog.CrossReplicaCopy(x, turned, dict(enumerate(order))))
            outputs["turned"] = turned
        else:
            y = graph.addVariable(poplar.FLOAT, [4], "y")
            graph.setTileMapping(y, rng.randrange(graph.getTarget().getNumTiles()))
            seq.add(prog.Copy(graph.addHostToDeviceFIFO("in", poplar.FLOAT, 4), y))
            outputs["y"] = y
    for name, t in outputs.items():
        graph.createHostRead(name + "/read", t)
    graph.createHostWrite("x", x)
    failing = rng.choice([None, None, 0, replicas - 1])  # a replica whose host end fails (on its rank)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    for r in range(replicas):
        engine.writeTensor("x", np.arange(x.numElements(), dtype=np.float32) * (r + 1) - 5, replicaIndex=r)
        if "stream" in ops:
            def fill(p, r=r):
                if r == failing:
                    raise ValueError("the host has no data")
                p[:] = r + 0.5
            engine.connectStreamToCallback("in", fill, replicaIndex=r)
    try:
        engine.run()
    except Exception as e:
        say(type(e).__name__, e)
        return
    for r in range(replicas):
        say(r, *(engine.readTensor(f"{name}/read", replicaIndex=r).tolist() for name in outputs))
    say("cycles", engine.getProfile()["execution"]["totalCycles"])


def remote_buffers() -> None:
    """Rows of a remote buffer per replica (R from argv, over 2 IPUs each so that one replica may
    span ranks): written by the host, gathered into a tensor by offsets, changed and scattered
    back; every replica's rows and tensor, the cycles; then an offset out of range on the last
    replica, raised on every rank."""
    replicas = int(sys.argv[3])
    device = model(4, 2 * replicas)
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    rb = graph.addRemoteBuffer("rows", poplar.FLOAT, 10, repeats=4)
    u = graph.addVariable(poplar.FLOAT, [2, 10], "u")
    poputil.mapTensorLinearly(graph, u)
    offs = graph.addVariable(poplar.UNSIGNED_INT, [2], "offs")
    graph.setTileMapping(offs, graph.getTarget().getNumTiles() - 1)  # on the replica's last IPU
    graph.createHostWrite("offs", offs)
    graph.createHostRead("u", u)
    seq = prog.Sequence([prog.Copy(rb, u, offs)])
    popops.addInPlace(graph, u, 0.5, seq)
    seq.add(prog.Copy(u, rb, offs))
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    for r in range(replicas):
        for row in range(4):
            engine.copyToRemoteBuffer(np.arange(10, dtype=np.float32) + 100 * r + 10 * row, "rows", row,
                                      replicaIndex=r)
        engine.writeTensor("offs", np.array([r % 4, 3], np.uint32), replicaIndex=r)
    engine.run()
    out = np.empty(10, np.float32)
    for r in range(replicas):
        rows = []
        for row in range(4):
            engine.copyFromRemoteBuffer("rows", out, row, replicaIndex=r)
            rows.append(out.tolist())
        say(r, engine.readTensor("u", replicaIndex=r).tolist(), rows)
    say("cycles", engine.getProfile()["execution"]["totalCycles"])
    engine.writeTensor("offs", np.array([0, 9], np.uint32), replicaIndex=replicas - 1)
    try:
        engine.run()
    except poplar.PoplarError as e:
        say(type(e).__name__, e)


if __name__ == "__main__":
    {"control": control, "vertex_error": vertex_error, "different_graphs": different_graphs,
     "different_programs": different_programs,
     "memory": memory, "callback_error": callback_error, "one_rank_raises": one_rank_raises,
     "spin": spin, "replicas": replicas, "unconnected_elsewhere": unconnected_elsewhere,
     "host_code_fails": host_code_fails, "exit_in_callback": exit_in_callback,
     "values_differ": values_differ, "raises_before_engine": raises_before_engine,
     "fuzz": fuzz, "remote_buffers": remote_buffers}[sys.argv[1]]()
