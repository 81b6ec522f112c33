"""Programs that tests/test_mpi.py runs under ``mpiexec -n K``: ``python mpi_programs.py MODE OUT``.

Every rank R writes what it reports to the file ``OUT.R``.
"""

import os
import resource
import sys

import numpy as np

import poplar_py as poplar
from poplar_py import InOut, Input, Output, Vector, Vertex
from poplar_py import program as prog

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
    """4 IPUs with about 240 MB of variables each (loading zeroes every page a rank holds)."""
    device = model(736, 4)
    graph = poplar.Graph(device)
    per_tile = 240_000_000 // 736 // 4
    x = graph.addVariable(poplar.FLOAT, [4 * 736, per_tile], "x")
    for t in range(4 * 736):
        graph.setTileMapping(x[t], t)
    engine = poplar.Engine(graph, prog.Sequence())
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


if __name__ == "__main__":
    {"control": control, "vertex_error": vertex_error, "different_graphs": different_graphs,
     "different_programs": different_programs,
     "memory": memory, "callback_error": callback_error, "one_rank_raises": one_rank_raises,
     "raises_before_engine": raises_before_engine, "spin": spin}[sys.argv[1]]()
