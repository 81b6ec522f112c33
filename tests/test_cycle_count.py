"""poplar.cycleCount and poplar.cycleStamp (Poplar's CycleCount.hpp): counters read on the tiles
from the profile's cycle model."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import InvalidArgumentError
from poplibs_py import popops, poputil


def _graph(tiles: int = 4, replicas: int = 1):
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = replicas, tiles
    device = m.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    x = graph.addVariable(poplar.FLOAT, [400], "x")
    poputil.mapTensorLinearly(graph, x)
    return device, graph, x


def _cycles(words: np.ndarray) -> int:
    return int(words[0]) | int(words[1]) << 32


def _steps(engine: poplar.Engine, *names: str) -> int:
    """The profile's cycles of the steps named."""
    steps = engine.getProfile()["execution"]["steps"]
    return sum(s["cycles"] * s["count"] for s in steps if s["name"] in names)


@pytest.mark.parametrize("replicas", [1, 2])
def test_cycle_count_is_the_profiles_figure_for_the_timed_programs(replicas):
    device, graph, x = _graph(replicas=replicas)
    timed = prog.Sequence()
    popops.mulInPlace(graph, x, 2.0, timed, "double")
    popops.addInPlace(graph, x, 1.0, timed, "increment")
    count = poplar.cycleCount(graph, timed, 3, poplar.SyncType.INTERNAL, "timed")
    assert count.shape() == [2] and count.elementType() == poplar.UNSIGNED_INT
    assert graph.getTileMapping(count)[3] == [(0, 2)]
    graph.createHostRead("count", count)
    before = prog.Sequence()
    popops.subInPlace(graph, x, 1.0, before, "before")
    engine = poplar.Engine(graph, prog.Sequence([before, timed]))
    engine.load(device)
    for run in range(2):
        engine.run()
        # the timed programs, and the sync of the first read
        timed_cycles = _steps(engine, "timed/start", "double", "increment") // (run + 1)
        for r in range(replicas):
            assert _cycles(engine.readTensor("count", replicaIndex=r)) == timed_cycles > 0


def test_cycle_stamps_read_the_cycles_run_so_far():
    device, graph, x = _graph()
    seq = prog.Sequence()
    popops.mulInPlace(graph, x, 2.0, seq, "first")
    first = poplar.cycleStamp(graph, seq, 1)
    popops.addInPlace(graph, x, 1.0, seq, "second")
    second = poplar.cycleStamp(graph, seq, 2, poplar.SyncType.GLOBAL, "second stamp")
    graph.createHostRead("first", first)
    graph.createHostRead("second", second)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.run()
    a, b = _cycles(engine.readTensor("first")), _cycles(engine.readTensor("second"))
    assert a == _steps(engine, "first") > 0
    assert b == a + _steps(engine, "cycleStamp", "second") > a  # a stamp costs a sync
    engine.run()  # the counter goes on from run to run
    assert _cycles(engine.readTensor("first")) == b + _steps(engine, "second stamp") // 2 + a


def test_bad_arguments_are_named():
    _, graph, _ = _graph()
    seq = prog.Sequence()
    with pytest.raises(InvalidArgumentError, match="cycleCount: tile 4 is out of range: the graph has 4"):
        poplar.cycleCount(graph, seq, 4, poplar.SyncType.INTERNAL)
    with pytest.raises(InvalidArgumentError, match=r"cycleStamp: prog must be a program\.Sequence, got Exe"):
        poplar.cycleStamp(graph, prog.Execute(graph.addComputeSet("cs")), 0)
    with pytest.raises(InvalidArgumentError, match=r"syncType must be a poplar\.SyncType"):
        poplar.cycleStamp(graph, seq, 0, 3)
    both = "a debug prefix in syncType's place and a debugContext too"
    with pytest.raises(InvalidArgumentError, match=both):
        poplar.cycleCount(graph, seq, 0, "timed", "again")
    with pytest.raises(InvalidArgumentError, match=r"graph must be a poplar\.Graph"):
        poplar.cycleCount(None, seq, 0)


def test_the_older_overload_takes_a_debug_prefix_fourth():
    device, graph, x = _graph()
    timed = prog.Sequence()
    popops.mulInPlace(graph, x, 2.0, timed, "double")
    count = poplar.cycleCount(graph, timed, 2, "timed")
    stamp = poplar.cycleStamp(graph, timed, 1, poplar.DebugContext("stamp"))
    graph.createHostRead("count", count)
    graph.createHostRead("stamp", stamp)
    engine = poplar.Engine(graph, timed)
    engine.load(device)
    engine.run()
    timed_cycles = _steps(engine, "timed/start", "double")
    assert _cycles(engine.readTensor("count")) == timed_cycles > 0
    assert _cycles(engine.readTensor("stamp")) == timed_cycles + _steps(engine, "timed") > timed_cycles
