"""Replicated graphs: every replica runs the same program on its own tile memories."""

import io

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import GraphReplicationError, InvalidTileMappingError, ProgramError, StreamError

CODELETS = '''
from poplar_py import Vertex, Input, Output, Vector

class Scale(Vertex):
    x: Input[Vector[float]]
    k: Input[int]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.out[i] = self.x[i] * (self.k + 1)
'''


def model(ipus: int = 4, tiles: int = 4) -> poplar.Device:
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = ipus, tiles
    return m.createDevice()


def test_a_replicated_graph_sees_one_replica():
    device = model(4)
    graph = poplar.Graph(device.getTarget(), replication_factor=2)
    assert graph.getReplicationFactor() == 2
    assert graph.getTarget().getNumIPUs() == 2 and graph.getTarget().getNumTiles() == 8
    positional = poplar.Graph(device, poplar.replication_factor(4))
    assert positional.getReplicationFactor() == 4 and positional.getTarget().getNumTiles() == 4
    assert poplar.Graph(device).getReplicationFactor() == 1


def test_replication_factor_must_divide_the_ipus():
    with pytest.raises(GraphReplicationError, match=r"factor 3 does not divide the target.s 4 IPUs"):
        poplar.Graph(model(4), replication_factor=3)


def _engine(graph, programs, device):
    engine = poplar.Engine(graph, programs)
    engine.load(device)
    return engine


def test_each_replica_has_its_own_memory_and_index(tmp_path):
    device = model(4)
    graph = poplar.Graph(device, replication_factor=4)
    codelets = tmp_path / "scale.py"
    codelets.write_text(CODELETS)
    graph.addCodelets(str(codelets))
    idx = graph.addReplicationIndexConstant("r")
    assert idx.elementType() == poplar.UNSIGNED_INT and idx.shape() == []
    x = graph.addVariable(poplar.FLOAT, [6], "x")
    y = graph.addVariable(poplar.FLOAT, [6], "y")
    graph.setTileMapping(x, 1)
    graph.setTileMapping(y, 2)
    cs = graph.addComputeSet("scale")
    v = graph.addVertex(cs, "Scale", {"x": x, "k": idx.reinterpret(poplar.INT), "out": y})
    graph.setTileMapping(v, 3)
    graph.createHostWrite("x", x)
    graph.createHostRead("y", y)
    engine = _engine(graph, prog.Execute(cs), device)
    data = np.arange(6, dtype=np.float32)
    engine.writeTensor("x", data)  # every replica
    engine.writeTensor("x", data * 10, replicaIndex=2)
    engine.run(0)
    for r in range(4):
        expected = (data * 10 if r == 2 else data) * (r + 1)
        np.testing.assert_array_equal(engine.readTensor("y", replicaIndex=r), expected)
    np.testing.assert_array_equal(engine.readTensor("y"), data)  # replica 0 by default


def test_replica_index_out_of_range_is_named():
    device = model(2)
    graph = poplar.Graph(device, replication_factor=2)
    x = graph.addVariable(poplar.FLOAT, [2], "x")
    graph.setTileMapping(x, 0)
    graph.createHostWrite("xw", x)
    graph.createHostRead("xr", x)
    graph.addHostToDeviceFIFO("in", poplar.FLOAT, 2)
    engine = _engine(graph, prog.Sequence(), device)
    with pytest.raises(GraphReplicationError, match=r"writeTensor\('xw'\): replica index 2 is out of range"):
        engine.writeTensor("xw", np.zeros(2, np.float32), replicaIndex=2)
    with pytest.raises(GraphReplicationError, match=r"readTensor\('xr'\): replica index -1 is out of range"):
        engine.readTensor("xr", replicaIndex=-1)
    with pytest.raises(GraphReplicationError, match=r"connectStream\('in'\): replica index 5 .* 2 replica"):
        engine.connectStream("in", np.zeros(2, np.float32), replicaIndex=5)
    with pytest.raises(GraphReplicationError, match="replica index 'a'"):
        engine.connectStreamToCallback("in", lambda p: None, replicaIndex="a")


CHECK = """
from poplar_py import Vertex, Input, InOut, UNSIGNED_INT

class Check(Vertex):
    replica: Input[UNSIGNED_INT]
    steps: InOut[UNSIGNED_INT]
    failOn: UNSIGNED_INT

    def compute(self):
        self.steps += 1
        assert self.replica != self.failOn
"""


def _checks(tmp_path, fail_on: list[int]):
    """A replicated graph of one compute set per entry of ``fail_on``, each counting into
    ``steps`` and failing on replica ``fail_on[i]``."""
    device = model(4)
    graph = poplar.Graph(device, replication_factor=4)
    (tmp_path / "check.py").write_text(CHECK)
    graph.addCodelets(str(tmp_path / "check.py"))
    index = graph.addReplicationIndexConstant("index")
    steps = graph.addVariable(poplar.UNSIGNED_INT, [], "steps")
    graph.setTileMapping(index, 0)
    graph.setTileMapping(steps, 0)
    graph.createHostRead("steps", steps)
    programs = []
    for i, replica in enumerate(fail_on):
        cs = graph.addComputeSet(f"check{i}")
        v = graph.addVertex(cs, "Check", {"replica": index, "steps": steps})
        graph.setInitialValue(v["failOn"], replica)
        graph.setTileMapping(v, 0)
        programs.append(prog.Execute(cs))
    return _engine(graph, prog.Sequence(programs), device)


def _counts(engine) -> dict[str, int]:
    return {row["name"]: row["count"] for row in engine.getProfile()["execution"]["steps"]}


def test_local_steps_raise_the_first_failure_by_step_then_replica(tmp_path):
    # compute sets run replica by replica; the error is the one running step by step meets first,
    # and a replica after a failing one stops at the failing step
    engine = _checks(tmp_path, [9, 3, 1, 0])
    with pytest.raises(poplar.VertexError, match=r"on tile 0 of replica 3 in compute set 'check1'"):
        engine.run()
    assert [int(engine.readTensor("steps", replicaIndex=r)) for r in range(4)] == [4, 3, 3, 2]
    assert _counts(engine) == {"check0": 1}  # the steps before the failing one


def test_local_steps_without_failures_run_every_step_on_every_replica(tmp_path):
    engine = _checks(tmp_path, [9, 9, 9])
    engine.run()
    engine.run()
    assert [int(engine.readTensor("steps", replicaIndex=r)) for r in range(4)] == [6] * 4
    assert _counts(engine) == {"check0": 2, "check1": 2, "check2": 2}


def _stream_graph(mode=None):
    device = model(4)
    graph = poplar.Graph(device, replication_factor=4)
    x = graph.addVariable(poplar.FLOAT, [3], "x")
    graph.setTileMapping(x, 0)
    args = [mode] if mode is not None else []
    ins = graph.addHostToDeviceFIFO("in", poplar.FLOAT, 3, *args)
    outs = graph.addDeviceToHostFIFO("out", poplar.FLOAT, 3)
    program = prog.Sequence([prog.Copy(ins, x), prog.Copy(x, outs)])
    return _engine(graph, program, device), ins


def test_replicated_streams_have_a_host_end_per_replica():
    engine, ins = _stream_graph()
    assert ins.replicatedMode() is poplar.ReplicatedStreamMode.REPLICATE and ins.replicationFactor() == 4
    shared = np.arange(6, dtype=np.float32)
    engine.connectStream("in", shared)  # every replica reads it, each from its own position
    engine.connectStream("in", np.full(3, 7, np.float32), replicaIndex=3)
    outs = [np.zeros(3, np.float32) for _ in range(4)]
    for r, out in enumerate(outs):
        engine.connectStream("out", out, replicaIndex=r)
    engine.run(0)
    engine.run(0)
    for r in range(3):
        np.testing.assert_array_equal(outs[r], shared[3:])
    np.testing.assert_array_equal(outs[3], [7, 7, 7])


def test_one_host_array_for_every_replica_of_a_device_to_host_stream():
    engine, _ = _stream_graph()
    engine.connectStream("in", np.full(3, 5, np.float32))
    engine.connectStream("in", 2, np.full(3, 2, np.float32))  # Poplar's (handle, replicaIndex, buffer)
    both = np.zeros(6, np.float32)
    engine.connectStream("out", both)  # every replica writes it, each at its own position
    engine.run(0)
    np.testing.assert_array_equal(both, [5, 5, 5, 0, 0, 0])  # replica 3, last, read 5s
    engine.connectStream("in", 3, np.full(3, 2, np.float32))
    engine.run(0)
    np.testing.assert_array_equal(both, [5, 5, 5, 2, 2, 2])  # the second transfer, from replica 3


def test_callbacks_in_poplars_argument_order():
    engine, _ = _stream_graph()
    got = {}
    for r in range(4):
        engine.connectStreamToCallback("in", r, lambda p, r=r: p.__setitem__(slice(None), r))
        engine.connectStreamToCallback("out", r, lambda p, r=r: got.__setitem__(r, p.copy()))
    engine.run(0)
    assert {r: v.tolist() for r, v in got.items()} == {r: [r] * 3 for r in range(4)}
    with pytest.raises(poplar.GraphReplicationError, match="replica index 4 is out of range"):
        engine.connectStreamToCallback("in", 4, print)


def test_a_replica_left_unconnected_is_named():
    engine, _ = _stream_graph()
    engine.connectStream("in", np.zeros(3, np.float32), replicaIndex=0)
    with pytest.raises(StreamError, match="stream 'in' is not connected for replica 1"):
        engine.run(0)


def test_broadcast_streams_feed_every_replica_from_one_host_end():
    engine, ins = _stream_graph(poplar.ReplicatedStreamMode.BROADCAST)
    assert ins.replicatedMode() is poplar.ReplicatedStreamMode.BROADCAST
    calls = []

    def fill(p):
        calls.append(len(calls))
        p[:] = len(calls)

    engine.connectStreamToCallback("in", fill)
    with pytest.raises(StreamError, match="BROADCAST: one host end"):
        engine.connectStream("in", np.zeros(3, np.float32), replicaIndex=1)
    seen = {}
    for r in range(4):
        engine.connectStreamToCallback("out", lambda p, r=r: seen.__setitem__(r, p.copy()), replicaIndex=r)
    engine.run(0)
    assert calls == [0]  # one transfer for the four replicas
    for r in range(4):
        np.testing.assert_array_equal(seen[r], [1, 1, 1])


def _ring_graph(replicas: int, ipus: int, mapping):
    device = model(ipus)
    graph = poplar.Graph(device, replication_factor=replicas)
    src = graph.addVariable(poplar.INT, [5], "src")
    dst = graph.addVariable(poplar.INT, [5], "dst")
    graph.setTileMapping(src, 0)
    graph.setTileMapping(dst, graph.getTarget().getNumTiles() - 1)
    graph.createHostWrite("src", src)
    graph.createHostRead("dst", dst)
    program = prog.Sequence([prog.CrossReplicaCopy(src, dst, mapping), prog.AssumeEqualAcrossReplicas(dst)])
    return graph, program, device


def test_cross_replica_copy_follows_the_map():
    mapping = {0: 2, 1: 0, 2: 3, 3: 1}
    graph, program, device = _ring_graph(4, 4, mapping)
    engine = _engine(graph, program, device)
    data = np.arange(20, dtype=np.int32).reshape(4, 5)
    for r in range(4):
        engine.writeTensor("src", data[r], replicaIndex=r)
    engine.run(0)
    for r, to in mapping.items():
        np.testing.assert_array_equal(engine.readTensor("dst", replicaIndex=to), data[r])
    # Every replica's 20 bytes cross IPU-Links: a global exchange phase with a global sync.
    steps = engine.getProfile()["execution"]["steps"]
    assert steps[0]["globalExchange"] > 0 and steps[0]["type"] == "DoExchange"


def test_a_replica_map_that_is_not_a_permutation_is_refused():
    device = model(2)
    graph = poplar.Graph(device, replication_factor=2)
    a = graph.addVariable(poplar.FLOAT, [2], "a")
    b = graph.addVariable(poplar.FLOAT, [2], "b")
    with pytest.raises(GraphReplicationError, match=r"replica map \{0: 1, 1: 1\} is not a permutation"):
        prog.CrossReplicaCopy(a, b, {0: 1, 1: 1})
    with pytest.raises(GraphReplicationError, match="dict of replica index"):
        prog.CrossReplicaCopy(a, b, [1, 0])
    with pytest.raises(ProgramError, match="has 2 elements but destination"):
        prog.CrossReplicaCopy(a, graph.addVariable(poplar.FLOAT, [3], "c"), {0: 1, 1: 0})
    for t in (a, b):
        graph.setTileMapping(t, 0)
    with pytest.raises(GraphReplicationError, match=r"\{0: 2, 2: 0\} is not a permutation of the graph's 2"):
        poplar.Engine(graph, prog.CrossReplicaCopy(a, b, {0: 2, 2: 0}))


def test_virtual_graphs_of_a_replicated_graph_work_per_replica():
    device = model(4)
    graph = poplar.Graph(device, replication_factor=2)
    ipu1 = graph.createVirtualGraph(4, 8)  # the second IPU of each replica
    assert ipu1.getTarget().getNumTiles() == 4 and ipu1.getReplicationFactor() == 2
    with pytest.raises(InvalidTileMappingError, match="tile 4 is out of range"):
        ipu1.setTileMapping(ipu1.addVariable(poplar.FLOAT, [1], "z"), 4)
    x = ipu1.addVariable(poplar.FLOAT, [4], "x")
    ipu1.setTileMapping(x, 3)
    idx = ipu1.addReplicationIndexConstant()
    y = graph.addVariable(poplar.UNSIGNED_INT, [], "y")
    graph.setTileMapping(y, 0)
    graph.createHostRead("y", y)
    engine = _engine(graph, prog.Copy(idx, y), device)
    engine.run(0)
    assert [int(engine.readTensor("y", replicaIndex=r)) for r in range(2)] == [0, 1]
    assert graph.getTileMapping(x)[7] == [(0, 4)] and ipu1.getTileMapping(idx)[0] == [(0, 1)]
    # Replica 1's copy of x lives on tile 3 of its second IPU: device tile 8 + 4 + 3.
    memory = [t["memory"]["total"] for t in engine.getProfile()["compilation"]["tiles"]]
    assert memory[7] >= 16 and memory[15] >= 16 and memory[7] == memory[15]


def test_profile_describes_the_replicas():
    graph, program, device = _ring_graph(2, 4, {0: 1, 1: 0})
    engine = _engine(graph, program, device)
    engine.run(0)
    target = engine.getProfile()["compilation"]["target"]
    assert (target["numReplicas"], target["ipusPerReplica"], target["tilesPerReplica"]) == (2, 2, 8)
    assert target["memoryPerReplica"] == 8 * target["bytesPerTile"]
    out = io.StringIO()
    engine.printProfileSummary(out)
    text = out.getvalue()
    for line in ("Number of Replicas:     2", "IPUs per Replica:       2", "Tiles per Replica:      8",
                 "Memory per Replica:     4.9 MiB"):
        assert line in text
    assert len(engine.getProfile()["execution"]["ipus"]) == 4  # cycles per IPU, every replica's
    assert "    IPU 3: " in text and "Per IPU (memory;" in text


def test_a_replica_streams_on_its_own_host_link():
    # The same transfer per replica costs the same host cycles with 1 or 4 replicas.
    cycles = []
    for replicas in (1, 4):
        device = model(4)
        graph = poplar.Graph(device, replication_factor=replicas)
        x = graph.addVariable(poplar.FLOAT, [600], "x")
        graph.setTileMapping(x, 0)
        engine = _engine(graph, prog.Copy(graph.addHostToDeviceFIFO("in", poplar.FLOAT, 600), x), device)
        engine.connectStream("in", np.zeros(600, np.float32))
        engine.run(0)
        cycles.append(engine.getProfile()["execution"]["steps"][0]["host"])
    assert cycles[0] == cycles[1] == 400  # 2,400 bytes at 6 bytes per cycle


def test_a_replicated_executable_round_trips(tmp_path):
    graph, program, device = _ring_graph(2, 2, {0: 1, 1: 0})
    exe = poplar.compileGraph(graph, program)
    exe.serialize(tmp_path / "exe")
    engine = poplar.Engine(poplar.Executable.deserialize(tmp_path / "exe"))
    engine.load(device)
    engine.writeTensor("src", np.array([1, 2, 3, 4, 5], np.int32), replicaIndex=1)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("dst", replicaIndex=0), [1, 2, 3, 4, 5])


def test_a_replicated_matmul_computes_each_replicas_own_product():
    # poplin's blocks and reductions (enough vertices for the lockstep kernels) read their list
    # rows through tables every replica shares, at each replica's own memories
    from poplibs_py import poplin

    device = model(2, 64)
    graph = poplar.Graph(device, replication_factor=2)
    poplin.addCodelets(graph)
    seq = prog.Sequence()
    a = poplin.createMatMulInputLHS(graph, poplar.FLOAT, [64, 96], [96, 80], "a")
    b = poplin.createMatMulInputRHS(graph, poplar.FLOAT, [64, 96], [96, 80], "b")
    c = poplin.matMul(graph, a, b, seq, "c")
    graph.createHostWrite("a", a)
    graph.createHostWrite("b", b)
    graph.createHostRead("c", c)
    engine = _engine(graph, seq, device)
    rng = np.random.default_rng(0)
    lhs = [rng.standard_normal((64, 96)).astype(np.float32) for _ in range(2)]
    rhs = rng.standard_normal((96, 80)).astype(np.float32)
    for r in range(2):
        engine.writeTensor("a", lhs[r], replicaIndex=r)
    engine.writeTensor("b", rhs)
    engine.run()
    for r in range(2):
        np.testing.assert_allclose(engine.readTensor("c", replicaIndex=r), lhs[r] @ rhs, rtol=1e-4, atol=1e-4)


GATHER = '''
from poplar_py import Vertex, Input, Output, Vector, VectorList

class Gather(Vertex):
    rows: Input[VectorList[float]]
    x: Input[Vector[float]]
    k: Input[int]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.out)):
            s = self.x[i] * self.k
            for r in range(len(self.rows)):
                s += self.rows[r][i] * (r + 1)
            self.out[i] = s
'''


def _gather_graph(tmp_path, replicas: int, n: int, tiles: int = 16):
    """Vertices on tiles 8.. reading list rows, a vector and a scalar from other tiles (through
    exchange buffers), writing their output to yet another tile (through one too)."""
    device = model(replicas, tiles)
    graph = poplar.Graph(device, replication_factor=replicas)
    codelets = tmp_path / "gather.py"
    codelets.write_text(GATHER)
    graph.addCodelets(str(codelets))
    x = graph.addVariable(poplar.FLOAT, [4, n], "x")
    out = graph.addVariable(poplar.FLOAT, [tiles - 8, n], "out")
    k = graph.addVariable(poplar.INT, [], "k")
    for t in range(4):
        graph.setTileMapping(x[t], t)
    for j in range(tiles - 8):
        graph.setTileMapping(out[j], 4 + j % 4)
    graph.setTileMapping(k, 5)
    cs = graph.addComputeSet("gather")
    for j in range(tiles - 8):
        v = graph.addVertex(cs, "Gather", {"rows": [x[(j + r) % 4] for r in range(3)], "x": x[j % 4], "k": k,
                                           "out": out[j]})
        graph.setTileMapping(v, 8 + j)
    for name, t in (("x", x), ("k", k)):
        graph.createHostWrite(name, t)
    graph.createHostRead("out", out)
    return graph, prog.Execute(cs), device


def _gathered(x: np.ndarray, k: int, vertices: int) -> np.ndarray:
    return np.stack([x[j % 4] * k + sum(x[(j + r) % 4] * (r + 1) for r in range(3)) for j in range(vertices)])


@pytest.mark.parametrize("mode", ["native", "interpreter", "executable"])
def test_replicas_that_share_exchange_buffers_read_and_write_their_own_data(mode, tmp_path):
    graph, program, device = _gather_graph(tmp_path, 3, 40)
    options = {"codelets.mode": "interpreter"} if mode == "interpreter" else {}
    if mode == "executable":
        poplar.compileGraph(graph, program).serialize(tmp_path / "exe")
        engine = poplar.Engine(poplar.Executable.deserialize(tmp_path / "exe"))
    else:
        engine = poplar.Engine(graph, program, options)
    engine.load(device)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((4, 40)).astype(np.float32) for _ in range(3)]
    for r in range(3):
        engine.writeTensor("x", xs[r], replicaIndex=r)
        engine.writeTensor("k", np.int32(r + 2), replicaIndex=r)
    for _ in range(2):  # the replicas in turn, twice, through the same buffers
        engine.run()
        for r in range(3):
            np.testing.assert_allclose(engine.readTensor("out", replicaIndex=r), _gathered(xs[r], r + 2, 8),
                                       rtol=1e-5, atol=1e-5)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_replicas_keep_one_set_of_exchange_buffers_in_host_memory(tmp_path):
    # each of the 8 vertices stages 4 rows of 96 KiB in and one out: 3.75 MiB of exchange buffers
    # a replica, 30 MiB for 8 replicas were each to keep its own; its outputs take 6 MiB
    graph, program, device = _gather_graph(tmp_path, 8, 24 * 1024)
    engine = _engine(graph, program, device)
    before = _rss()
    engine.run()
    assert _rss() - before < 18 * 2**20


@pytest.mark.parametrize("replicas", [2, 4])
def test_a_cross_replica_copy_onto_its_own_source_reads_every_replica_first(replicas):
    # one piece per replica, written where the next replica reads: staged across the replicas
    device = model(replicas, 4)
    graph = poplar.Graph(device, replication_factor=replicas)
    x = graph.addVariable(poplar.INT, [5], "x")
    graph.setTileMapping(x, 1)
    graph.createHostWrite("x", x)
    graph.createHostRead("x/read", x)
    ring = {r: (r + 1) % replicas for r in range(replicas)}
    engine = _engine(graph, prog.CrossReplicaCopy(x, x, ring), device)
    for r in range(replicas):
        engine.writeTensor("x", np.arange(5, dtype=np.int32) + 10 * r, replicaIndex=r)
    engine.run()
    for r in range(replicas):
        np.testing.assert_array_equal(engine.readTensor("x/read", replicaIndex=r),
                                      np.arange(5) + 10 * ((r - 1) % replicas))
