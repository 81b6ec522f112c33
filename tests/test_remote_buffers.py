"""Remote buffers in Streaming Memory: rows copied by programs and by the host, per replica,
checked against a numpy model of the rows; their errors; their cost and place in the profile."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import (
    GraphMemoryAllocationError,
    GraphReplicationError,
    InvalidArgumentError,
    ProgramArgumentError,
    ProgramError,
    RemoteBufferError,
)
from poplibs_py import popops, poputil


def device(replicas: int = 1, arch: str = "ipu2", tiles: int = 8) -> poplar.Device:
    m = poplar.IPUModel(arch)
    m.tilesPerIPU, m.numIPUs = tiles, replicas
    return m.createDevice()


class Rows:
    """A graph with remote buffer ``rb`` (``repeats`` rows of ``n`` floats), a tensor ``t`` of one
    row and ``u`` of ``k`` rows, offsets ``off`` (scalar) and ``offs`` (k), all host-accessible."""

    def __init__(self, replicas: int = 1, n: int = 12, repeats: int = 5, k: int = 3) -> None:
        self.device = device(replicas)
        self.graph = g = poplar.Graph(self.device, replication_factor=replicas)
        self.replicas, self.n, self.repeats, self.k = replicas, n, repeats, k
        self.rb = g.addRemoteBuffer("rb", poplar.FLOAT, n, repeats=repeats)
        self.t = g.addVariable(poplar.FLOAT, [n], "t")
        self.u = g.addVariable(poplar.FLOAT, [k, n], "u")
        poputil.mapTensorLinearly(g, self.t)
        poputil.mapTensorLinearly(g, self.u)
        self.off = g.addVariable(poplar.UNSIGNED_INT, [], "off")
        self.offs = g.addVariable(poplar.UNSIGNED_INT, [k], "offs")
        g.setTileMapping(self.off, 3)
        g.setTileMapping(self.offs, 5)
        for name in ("t", "u", "off", "offs"):
            g.createHostWrite(name, getattr(self, name))
            g.createHostRead(name + "/r", getattr(self, name))

    def engine(self, programs: list[prog.Program]) -> poplar.Engine:
        e = poplar.Engine(self.graph, programs)
        e.load(self.device)
        return e

    def row(self, e: poplar.Engine, row: int, replica: int = 0) -> np.ndarray:
        out = np.empty(self.n, np.float32)
        e.copyFromRemoteBuffer("rb", out, row, replicaIndex=replica)
        return out


def test_the_targets_with_streaming_memory():
    assert device(arch="ipu2").supportsRemoteBuffers() and device(arch="ipu21").supportsRemoteBuffers()
    assert not device(arch="ipu1").supportsRemoteBuffers()
    t = poplar.IPUModel("ipu21").createDevice().getTarget()
    assert t.getTileClockFrequency() == 1.85e9 and t.getTilesPerIPU() == 1472
    assert t.getStreamingMemoryBytesPerIPU() == 64 * 2**30 and t.getIPUsPerMachine() == 4
    assert t.getStreamingMemoryBandwidth() == pytest.approx(15.75e9, rel=1e-3)
    with pytest.raises(RemoteBufferError, match=r"ipu1.*no Streaming Memory"):
        poplar.Graph(device(arch="ipu1")).addRemoteBuffer("rb", poplar.FLOAT, 4)
    m = poplar.IPUModel()
    m.streamingMemoryBandwidth = 0
    with pytest.raises(poplar.InvalidMachineModelError, match="streamingMemoryBandwidth"):
        m.createDevice()


def test_a_buffer_says_what_it_holds():
    g = poplar.Graph(device())
    rb = g.addRemoteBuffer("w", poplar.HALF, 10, repeats=3, rearrangeOnHost=True)
    assert (rb.handle(), rb.elementType(), rb.numElements(), rb.getRepeats()) == ("w", poplar.HALF, 10, 3)
    assert rb.isRearrangeOnHost() and not rb.isOptimisedForMemory()
    assert isinstance(rb, poplar.RemoteBuffer)


@pytest.mark.parametrize("args,error,culprit", [
    (("rb", poplar.FLOAT, 0), InvalidArgumentError, "numElements"),
    (("rb", poplar.FLOAT, "4"), InvalidArgumentError, "numElements"),
    (("rb", poplar.FLOAT, 4, 0), InvalidArgumentError, "repeats"),
    (("rb", poplar.FLOAT, 4, 2.0), InvalidArgumentError, "repeats"),
    (("rb", poplar.FLOAT, 4, 1, "yes"), InvalidArgumentError, "rearrangeOnHost"),
    (("rb", "floaty", 4), InvalidArgumentError, "floaty"),
    ((7, poplar.FLOAT, 4), InvalidArgumentError, "handle"),
    (("used", poplar.FLOAT, 4), RemoteBufferError, "'used' is already used"),
    (("fifo", poplar.FLOAT, 4), RemoteBufferError, "'fifo' is already used"),
])
def test_bad_declarations_name_their_culprit_and_add_nothing(args, error, culprit):
    g = poplar.Graph(device())
    g.addRemoteBuffer("used", poplar.FLOAT, 4)
    g.addHostToDeviceFIFO("fifo", poplar.FLOAT, 4)
    with pytest.raises(error, match=culprit):
        g.addRemoteBuffer(*args)
    assert [b.handle() for b in g.freeze().remote_buffers.values()] == ["used"]


def test_rows_move_as_the_offsets_say_and_match_numpy():
    h = Rows()
    rng = np.random.default_rng(1)
    model = rng.standard_normal([h.repeats, h.n]).astype(np.float32)
    load, store = prog.Copy(h.rb, h.t, h.off), prog.Copy(h.t, h.rb, h.off)
    gather, scatter = prog.Copy(h.rb, h.u, h.offs), prog.Copy(h.u, h.rb, h.offs)
    e = h.engine([load, store, gather, scatter, prog.Copy(h.rb, h.t), prog.Copy(h.t, h.rb)])
    for r in range(h.repeats):
        e.copyToRemoteBuffer(model[r], "rb", r)
    for step in range(40):
        kind = int(rng.integers(6))
        off, offs = int(rng.integers(h.repeats)), rng.integers(h.repeats, size=h.k).astype(np.uint32)
        e.writeTensor("off", np.uint32(off))
        e.writeTensor("offs", offs)
        t, u = rng.standard_normal(h.n).astype(np.float32), rng.standard_normal([h.k, h.n]).astype(np.float32)
        e.writeTensor("t", t)
        e.writeTensor("u", u)
        e.run(kind)
        if kind == 0:
            t = model[off].copy()
        elif kind == 1:
            model[off] = t
        elif kind == 2:
            u = model[offs]
        elif kind == 3:
            for i, o in enumerate(offs):  # a row named twice keeps the last
                model[o] = u[i]
        elif kind == 4:
            t = model[0].copy()
        else:
            model[0] = t
        np.testing.assert_array_equal(e.readTensor("t/r"), t, err_msg=f"step {step}")
        np.testing.assert_array_equal(e.readTensor("u/r"), u, err_msg=f"step {step}")
        for r in range(h.repeats):
            np.testing.assert_array_equal(h.row(e, r), model[r], err_msg=f"step {step} row {r}")


def test_an_offset_of_one_element_picks_a_row_for_a_tensor_of_any_shape():
    h = Rows()
    one = h.graph.addVariable(poplar.UNSIGNED_INT, [1], "one")
    h.graph.setTileMapping(one, 0)
    h.graph.createHostWrite("one", one)
    e = h.engine([prog.Copy(h.rb, h.t.reshape([3, 4]), one), prog.Copy(h.rb, h.u[1:2], one)])
    e.copyToRemoteBuffer(np.arange(12, dtype=np.float32), "rb", 2)
    e.writeTensor("one", np.array([2], np.uint32))
    e.run(0)
    e.run(1)
    np.testing.assert_array_equal(e.readTensor("t/r"), np.arange(12))
    np.testing.assert_array_equal(e.readTensor("u/r")[1], np.arange(12))


def test_a_row_never_written_reads_zeros():
    h = Rows()
    e = h.engine([prog.Copy(h.rb, h.u, h.offs)])
    e.writeTensor("u", np.ones([h.k, h.n], np.float32))
    e.writeTensor("offs", np.array([4, 0, 2], np.uint32))
    e.run(0)
    np.testing.assert_array_equal(e.readTensor("u/r"), np.zeros([h.k, h.n], np.float32))
    np.testing.assert_array_equal(h.row(e, 3), np.zeros(h.n, np.float32))


def test_each_replica_has_rows_of_its_own():
    h = Rows(replicas=4)
    e = h.engine([prog.Sequence([prog.Copy(h.rb, h.t, h.off), prog.Copy(h.t, h.rb, h.offs[0])])])
    for r in range(4):
        for row in range(h.repeats):
            e.copyToRemoteBuffer(np.full(h.n, 10 * r + row, np.float32), "rb", row, replicaIndex=r)
        e.writeTensor("off", np.uint32(r), replicaIndex=r)
        e.writeTensor("offs", np.array([4 - r, 0, 0], np.uint32), replicaIndex=r)
    e.run(0)
    for r in range(4):
        np.testing.assert_array_equal(e.readTensor("t/r", replicaIndex=r), np.full(h.n, 10 * r + r))
        expected = [10 * r + (r if row == 4 - r else row) for row in range(h.repeats)]
        assert [h.row(e, row, r)[0] for row in range(h.repeats)] == expected


def test_an_offset_out_of_range_names_buffer_offset_and_replica_and_copies_nothing():
    h = Rows(replicas=2)
    e = h.engine([prog.Copy(h.rb, h.u, h.offs), prog.Copy(h.u, h.rb, h.offs)])
    for r in range(2):
        e.writeTensor("u", np.full([h.k, h.n], r + 1, np.float32), replicaIndex=r)
    e.writeTensor("offs", np.array([0, 1, 2], np.uint32), replicaIndex=0)
    e.writeTensor("offs", np.array([1, h.repeats, 0], np.uint32), replicaIndex=1)
    for program in (0, 1):
        with pytest.raises(RemoteBufferError, match=rf"'rb': offset {h.repeats} .* on replica 1 .* 0\.\.4"):
            e.run(program)
    for r in range(2):  # nothing written on any replica: not the tensor, not a row
        np.testing.assert_array_equal(e.readTensor("u/r", replicaIndex=r), np.full([h.k, h.n], r + 1))
        for row in range(h.repeats):
            assert not h.row(e, row, r).any()
    assert e.getProfile()["execution"]["steps"] == []


@pytest.mark.parametrize("make,error,culprit", [
    (lambda h: prog.Copy(h.rb, h.graph.addVariable(poplar.INT, [12], "i")), RemoteBufferError, "INT|int"),
    (lambda h: prog.Copy(h.rb, h.u), RemoteBufferError, "a row has 12"),
    (lambda h: prog.Copy(h.u, h.rb, h.off), RemoteBufferError, "'u' has 36"),
    (lambda h: prog.Copy(h.rb, h.t, h.offs), RemoteBufferError, r"shape \[3, 12\]"),
    (lambda h: prog.Copy(h.rb, h.t, h.graph.addVariable(poplar.INT, [], "o")), RemoteBufferError,
     "offset 'o' must be an UNSIGNED_INT"),
    (lambda h: prog.Copy(h.rb, h.u, h.offs.reshape([3, 1])), RemoteBufferError, "scalar or 1-D"),
    (lambda h: prog.Copy(h.rb, h.t, 3), ProgramArgumentError, "offset must be a tensor"),
    (lambda h: prog.Copy(h.rb, h.rb), ProgramArgumentError, "other end must be a tensor"),
    (lambda h: prog.Copy(h.rb, h.graph.addConstant(poplar.FLOAT, [12], 0.0, "c")), ProgramError, "'c'"),
    (lambda h: prog.Copy(h.rb, h.t.slice(0, 6).broadcast(2, 0)), ProgramError, "aliased"),
    (lambda h: prog.Copy(h.t, h.t, offset=h.off), ProgramArgumentError, "only with a remote buffer"),
])
def test_copies_that_do_not_fit_the_buffer_are_refused(make, error, culprit):
    with pytest.raises(error, match=culprit):
        make(Rows())


def test_a_buffer_of_another_graph_is_refused_when_the_engine_is_built():
    h, other = Rows(), Rows()
    with pytest.raises(RemoteBufferError, match="'rb' was not added to this graph"):
        poplar.Engine(h.graph, prog.Copy(other.rb, h.t))


def test_a_vertex_cannot_be_connected_to_a_remote_buffer():
    h = Rows()
    popops.addCodelets(h.graph)
    cs = h.graph.addComputeSet("cs")
    v = h.graph.addVertex(cs, "popops::Fill<float>")
    with pytest.raises(poplar.GraphConnectionError, match=r"remote buffer 'rb'.*prog\.Copy"):
        h.graph.connect(v["out"], h.rb)


@pytest.mark.parametrize("call,error,culprit", [
    (lambda e: e.copyToRemoteBuffer(np.zeros(12, np.float32), "nope", 0), RemoteBufferError,
     "no remote buffer 'nope'"),
    (lambda e: e.copyToRemoteBuffer(np.zeros(12, np.float32), "rb", 5), RemoteBufferError, "row 5 .* 0..4"),
    (lambda e: e.copyToRemoteBuffer(np.zeros(12, np.float32), "rb", -1), RemoteBufferError, "row -1"),
    (lambda e: e.copyToRemoteBuffer(np.zeros(12, np.float32), "rb", 1.0), RemoteBufferError, "row 1.0"),
    (lambda e: e.copyToRemoteBuffer(np.zeros(12, np.float32), "rb", 0, replicaIndex=2), GraphReplicationError,
     "'rb'.*replica index 2"),
    (lambda e: e.copyToRemoteBuffer(np.zeros(11, np.float32), "rb", 0), RemoteBufferError, "11 float32"),
    (lambda e: e.copyToRemoteBuffer(np.zeros(12, np.int32), "rb", 0), RemoteBufferError, "int32"),
    (lambda e: e.copyToRemoteBuffer([0.0] * 12, "rb", 0), InvalidArgumentError, "numpy array"),
    (lambda e: e.copyFromRemoteBuffer("rb", np.zeros(13, np.float32), 0), RemoteBufferError, "13 float32"),
    (lambda e: e.copyFromRemoteBuffer("rb", _read_only(), 0), RemoteBufferError, "read-only"),
    (lambda e: e.copyFromRemoteBuffer(3, np.zeros(12, np.float32), 0), InvalidArgumentError, "handle"),
])
def test_bad_host_accesses_name_buffer_and_value(call, error, culprit):
    h = Rows(replicas=2)
    e = h.engine([prog.Sequence()])
    with pytest.raises(error, match=culprit):
        call(e)


def _read_only() -> np.ndarray:
    a = np.zeros(12, np.float32)
    a.flags.writeable = False
    return a


def test_host_accesses_need_a_loaded_engine():
    h = Rows()
    e = poplar.Engine(h.graph, prog.Sequence())
    with pytest.raises(poplar.PoplarError, match="not loaded"):
        e.copyToRemoteBuffer(np.zeros(12, np.float32), "rb", 0)


def test_buffers_larger_than_streaming_memory_fail_the_build_naming_the_largest():
    g = poplar.Graph(device())
    g.addRemoteBuffer("small", poplar.FLOAT, 1024)
    g.addRemoteBuffer("big", poplar.FLOAT, 2**28, repeats=65)  # 65 GiB: over one IPU's 64 GiB
    with pytest.raises(GraphMemoryAllocationError, match=r"Streaming Memory.*largest: 'big' 69,793,218,560"):
        poplar.Engine(g, prog.Sequence())
    e = poplar.Engine(g, prog.Sequence(), {"debug.allowOutOfMemory": "true"})
    assert e.getProfile()["compilation"]["memory"]["streamingMemory"]["perReplica"] == 65 * 2**30 + 4096


def test_a_remote_copy_costs_latency_and_bytes_at_the_bandwidth_the_machine_shares():
    for replicas in (1, 4):
        h = Rows(replicas=replicas, n=30000, repeats=2)
        e = h.engine([prog.Copy(h.rb, h.t)])
        e.run(0)
        report = e.getProfile()
        (step,) = report["execution"]["steps"]
        target = h.device.getTarget()
        per_cycle = target.getStreamingMemoryBandwidth() / target.getTileClockFrequency()
        moved = replicas * 30000 * 4  # the 4 replicas' IPUs are one IPU-Machine's: they share it
        expected = target.getStreamingMemoryLatencyCycles() + int(np.ceil(moved / per_cycle))
        assert step["type"] == "RemoteBufferCopy" and step["streamingMemory"] == expected
        assert step["cycles"] == expected + step["sync"] + step["exchange"]
        assert report["execution"]["tileAverages"]["streamingMemory"] == expected
        memory = report["compilation"]["memory"]
        assert memory["streamingMemory"]["total"] == replicas * 2 * 30000 * 4
        assert memory["streamingMemory"]["buffers"][0] == {
            "handle": "rb", "type": "float", "numElements": 30000, "repeats": 2, "bytes": 240000}
        assert memory["total"] == sum(memory["byCategory"].values())  # tile memory only


def test_the_summary_shows_streaming_memory_only_where_there_is_some(capsys):
    h = Rows()
    e = h.engine([prog.Copy(h.rb, h.t)])
    e.run(0)
    e.printProfileSummary()
    out = capsys.readouterr().out
    assert "Tile average Streaming Memory cycles:" in out and "Streaming Memory (remote buffers" in out
    g = poplar.Graph(device())
    e = poplar.Engine(g, prog.Sequence())
    e.load(device())
    e.printProfileSummary()
    assert "Streaming Memory" not in capsys.readouterr().out


def test_a_tensor_loaded_from_a_remote_buffer_is_live_only_while_it_is_used():
    d = device()
    g = poplar.Graph(d)
    popops.addCodelets(g)
    rb = g.addRemoteBuffer("weights", poplar.FLOAT, 4096, repeats=2)
    acc = g.addVariable(poplar.FLOAT, [4096], "acc")
    poputil.mapTensorLinearly(g, acc)
    g.createHostRead("acc", acc)
    seq = prog.Sequence()
    popops.zero(g, acc, seq)
    for k in range(2):  # two phases, each loading its own weights: they can share tile memory
        w = g.addVariable(poplar.FLOAT, [4096], f"w{k}")
        poputil.mapTensorLinearly(g, w)
        off = g.addConstant(poplar.UNSIGNED_INT, [], k, f"row{k}")
        g.setTileMapping(off, 0)
        seq.add(prog.Copy(rb, w, off))
        popops.addInPlace(g, acc, w, seq)
    e = poplar.Engine(g, seq)
    e.load(d)
    for k in range(2):
        e.copyToRemoteBuffer(np.full(4096, k + 1, np.float32), "weights", k)
    e.run(0)
    np.testing.assert_array_equal(e.readTensor("acc"), np.full(4096, 3.0))
    memory = e.getProfile()["compilation"]["memory"]
    # both loaded tensors are packed into the same bytes: the variables take acc and one of them
    assert memory["notAlwaysLive"] == 4096 * 4
    assert memory["byCategory"]["variables"] == 2 * 4096 * 4


def test_an_executable_keeps_its_remote_buffers(tmp_path):
    h = Rows()
    exe = poplar.compileGraph(h.graph, [prog.Copy(h.rb, h.t, h.off)])
    exe.serialize(tmp_path / "exe")
    e = poplar.Engine(poplar.Executable.deserialize(tmp_path / "exe"))
    e.load(h.device)
    assert e.listRemoteBuffers() == ["rb"]
    e.copyToRemoteBuffer(np.arange(12, dtype=np.float32), "rb", 3)
    e.writeTensor("off", np.uint32(3))
    e.run(0)
    np.testing.assert_array_equal(e.readTensor("t/r"), np.arange(12))
