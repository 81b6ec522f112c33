"""Vertex state written in compute(): kept in tile memory for the next run, per replica, reset
by Engine.load; in both codelet modes."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import numpy as np
import pytest
from codelet_harness import isolated_cache, load_module  # noqa: F401

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.codelet.codelet_compiler import check_codelet, codelet_info
from poplar_py.errors import CodeletCompileError
from poplar_py.types import FLOAT, UNSIGNED_INT
from poplar_py.vertex import Input, Output, Vector, Vertex

ENGINE_MODES = ("native", "interpreter")
HISTORY = 4


def put(v, k, x):
    """Writes a state vector through a helper's parameter (an alias of the field)."""
    v[k] = x


class CountRuns(Vertex):
    """Prim-style: counts its runs in vertex state, keeps the last few steps in a state vector."""

    step: Input[UNSIGNED_INT]
    out: Output[Vector[UNSIGNED_INT]]
    total: Output[float]
    count: UNSIGNED_INT
    history: Vector[UNSIGNED_INT]
    acc: float
    odd: bool

    def bump(self):
        self.count += self.step + 1

    def compute(self):
        put(self.history, self.count % len(self.history), self.count)
        self.bump()
        self.acc = self.acc * 0.5 + 1.0
        self.odd = not self.odd
        for i in range(len(self.out)):
            self.out[i] = self.history[i] + (1000 if self.odd else 0)
        self.total = self.acc + self.count


def _reference(start: int, step: int, runs: int) -> tuple[np.ndarray, float]:
    """What a CountRuns vertex outputs after ``runs`` runs (numpy, float32 like the field)."""
    count, history, acc, odd = start, np.zeros(HISTORY, np.uint32), np.float32(0), False
    for _ in range(runs):
        history[count % HISTORY] = count
        count += step + 1
        acc = acc * np.float32(0.5) + np.float32(1)
        odd = not odd
    return history + (1000 if odd else 0), float(np.float32(acc + count))


def _counting_graph(replicas: int = 2) -> tuple[poplar.Device, poplar.Graph, prog.Program]:
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = replicas, 4
    device = model.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    graph.addCodelets(CountRuns)
    index = graph.addReplicationIndexConstant("index")
    out = graph.addVariable(UNSIGNED_INT, [3, HISTORY], "out")
    total = graph.addVariable(FLOAT, [3], "total")
    for t in (index, out, total):
        graph.setTileMapping(t, 0)
    cs = graph.addComputeSet("count")
    for k in range(3):  # three vertices (strict mode would run two of them in lockstep lanes)
        v = graph.addVertex(cs, "CountRuns", {"step": index, "out": out[k], "total": total[k]})
        graph.setInitialValue(v["count"], 10 * k)
        graph.setInitialValue(v["history"], np.zeros(HISTORY, np.uint32))
        graph.setInitialValue(v["acc"], 0.0)
        graph.setInitialValue(v["odd"], False)
        graph.setTileMapping(v, k)
    graph.createHostRead("out", out)
    graph.createHostRead("total", total)
    return device, graph, prog.Execute(cs)


def _check(engine: poplar.Engine, runs: int, replicas: int = 2) -> None:
    for r in range(replicas):
        expected = [_reference(10 * k, r, runs) for k in range(3)]
        np.testing.assert_array_equal(engine.readTensor("out", replicaIndex=r), [e[0] for e in expected])
        np.testing.assert_array_equal(engine.readTensor("total", replicaIndex=r),
                                      np.float32([e[1] for e in expected]))


@pytest.mark.parametrize("mode", ENGINE_MODES)
def test_state_written_in_compute_is_kept_across_runs_per_replica(mode):
    device, graph, program = _counting_graph()
    engine = poplar.Engine(graph, program, {"codelets.mode": mode})
    engine.load(device)
    for runs in (1, 2, 3):
        engine.run()
        _check(engine, runs)  # each replica counts with its own step: its own copy of the state
    engine.load(device)  # reloading writes the initial values again
    engine.run()
    _check(engine, 1)


def test_a_compute_set_run_twice_in_one_program_sees_its_own_writes():
    device, graph, program = _counting_graph(replicas=1)
    engine = poplar.Engine(graph, prog.Repeat(2, program))
    engine.load(device)
    engine.run()
    _check(engine, 2, replicas=1)


def test_a_deserialized_executable_keeps_state_in_its_own_memory():
    device, graph, program = _counting_graph()
    buffer = io.BytesIO()
    poplar.compileGraph(graph, [program]).serialize(buffer)
    buffer.seek(0)
    engine = poplar.Engine(poplar.Executable.deserialize(buffer))
    engine.load(device)
    engine.run()
    engine.run()
    _check(engine, 2)


def test_only_written_state_leaves_the_record():
    info = codelet_info(CountRuns)
    assert info.written_state == ("count", "history", "acc", "odd")
    assert info.state_dtype["count"] == np.dtype("<u8")  # an address, as an edge's

    class ReadsState(Vertex):
        out: Output[float]
        scale: float

        def compute(self):
            self.out = self.scale * 2

    assert codelet_info(ReadsState).written_state == ()
    assert codelet_info(ReadsState).state_dtype["scale"] == np.dtype(np.float32)  # the value itself


TEMPLATE = """
from poplar_py.vertex import Const

class Tm(Vertex):
    out: Output[float]
    R: Const[int]
    n: int
    flag: BOOL

    def compute(self):
        {body}
"""


@pytest.mark.parametrize("body, message", [
    ("self.R = 3  # HERE", "cannot assign to template constant 'R'"),
    ("self.n = self.out  # HERE", None),  # a number into an int field: converts, as for edges
    ("self.flag += 1  # HERE", "arithmetic on bool values is not supported"),
])
def test_state_writes_follow_the_field_rules(tmp_path: Path, body: str, message: str | None):
    module = load_module(tmp_path, textwrap.dedent(TEMPLATE).replace("{body}", body))
    cls = module.Tm.instantiate(2)
    if message is None:
        check_codelet(cls)
        assert codelet_info(cls).written_state == ("n",)
        return
    line = next(i + 1 for i, text in enumerate(Path(module.__file__).read_text().splitlines())
                if "# HERE" in text)
    with pytest.raises(CodeletCompileError, match=message) as info:
        check_codelet(cls)
    assert str(info.value).startswith(f"{module.__file__}:{line}: ")

