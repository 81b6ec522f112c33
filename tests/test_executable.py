"""Compiled executables: compileGraph, serialize, deserialize (also in a fresh process), Engine(exe)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import ExecutableError, InvalidOptionError
from poplibs_py import poplin, popops

CODELET = textwrap.dedent("""
    from poplar_py import Input, Output, Vector, Vertex

    class Scale(Vertex):
        x: Input[Vector[float]]
        y: Output[Vector[float]]
        k: float

        def compute(self):
            for i in range(len(self.x)):
                self.y[i] = self.x[i] * self.k
    """)


def _build(tmp: Path) -> tuple[poplar.Device, poplar.Graph, prog.Program]:
    """A user codelet file, popops and poplin (templates), host handles and streams."""
    (tmp / "scale.py").write_text(CODELET)
    model = poplar.IPUModel()
    model.tilesPerIPU = 16
    device = model.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(str(tmp / "scale.py"))
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    seq = prog.Sequence()
    a = poplin.createMatMulInputLHS(graph, poplar.FLOAT, [12, 8], [8, 6], "a")
    b = poplin.createMatMulInputRHS(graph, poplar.FLOAT, [12, 8], [8, 6], "b")
    c = poplin.matMul(graph, a, b, seq, "c")
    flat = c.flatten()
    scaled = graph.addVariable(poplar.FLOAT, [72], "scaled")
    graph.setTileMapping(scaled, 3)
    cs = graph.addComputeSet("scale")
    v = graph.addVertex(cs, "Scale", {"x": flat, "y": scaled})
    graph.setInitialValue(v["k"], 0.5)
    graph.setTileMapping(v, 3)
    seq.add(prog.Execute(cs))
    popops.addInPlace(graph, scaled, scaled, seq)
    out = graph.addDeviceToHostFIFO("out", poplar.FLOAT, 72)
    bias = graph.addHostToDeviceFIFO("bias", poplar.FLOAT, 72)
    extra = graph.addVariable(poplar.FLOAT, [72], "extra")
    graph.setTileMapping(extra, 5)
    seq.add(prog.Copy(bias, extra))
    popops.addInPlace(graph, scaled, extra, seq)
    seq.add(prog.Copy(scaled, out))
    graph.createHostWrite("a", a)
    graph.createHostWrite("b", b)
    graph.createHostRead("c", c)
    return device, graph, seq


def _run(engine: poplar.Engine, device: poplar.Device) -> tuple[np.ndarray, np.ndarray, dict]:
    rng = np.random.default_rng(0)
    ha, hb = rng.standard_normal((12, 8)).astype(np.float32), rng.standard_normal((8, 6)).astype(np.float32)
    engine.load(device)
    engine.writeTensor("a", ha)
    engine.writeTensor("b", hb)
    out = np.zeros(72, np.float32)
    engine.connectStream("out", out)
    engine.connectStream("bias", np.arange(72, dtype=np.float32))
    engine.run(0)
    np.testing.assert_allclose(out, (ha @ hb).reshape(-1) + np.arange(72), rtol=1e-5, atol=1e-5)
    return engine.readTensor("c"), out, engine.getProfile()["execution"]


def test_a_deserialized_executable_gives_the_same_results_and_cycles(tmp_path):
    device, graph, seq = _build(tmp_path)
    direct = _run(poplar.Engine(graph, seq), device)
    exe = poplar.compileGraph(graph, seq)
    buffer = io.BytesIO()
    exe.serialize(buffer)
    loaded = poplar.Executable.deserialize(io.BytesIO(buffer.getvalue()))
    again = _run(poplar.Engine(loaded), device)
    assert direct[0].tobytes() == again[0].tobytes() and direct[1].tobytes() == again[1].tobytes()
    assert direct[2] == again[2]


def test_a_fresh_process_runs_a_serialized_executable(tmp_path):
    device, graph, seq = _build(tmp_path)
    expected = _run(poplar.Engine(graph, seq), device)
    poplar.compileGraph(graph, seq).serialize(tmp_path / "prog.exe")
    (tmp_path / "scale.py").unlink()  # the executable carries the codelet's source
    script = textwrap.dedent(f"""
        import sys, numpy as np, poplar_py as poplar
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_executable import _run
        model = poplar.IPUModel(); model.tilesPerIPU = 16
        device = model.createDevice()
        c, out, profile = _run(poplar.Engine(poplar.Executable.deserialize(sys.argv[1])), device)
        np.save(sys.argv[2], c)
        print(profile["totalCycles"] if "totalCycles" in profile else sorted(profile))
        """)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    args = [sys.executable, "-c", script, str(tmp_path / "prog.exe"), str(tmp_path / "c.npy")]
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert np.load(tmp_path / "c.npy").tobytes() == expected[0].tobytes()


def test_bad_files_are_named(tmp_path):
    _, graph, seq = _build(tmp_path)
    good = tmp_path / "good.exe"
    poplar.compileGraph(graph, seq).serialize(good)
    data = good.read_bytes()
    version = data.index(b"EXECUTABLE\n") + len(b"EXECUTABLE\n")  # the format version follows the magic
    cases = {"foreign.exe": b"\x7fELF" + data[4:], "truncated.exe": data[: len(data) // 2],
             "corrupt.exe": data[:-10] + bytes(10), "empty.exe": b"",
             "version.exe": data[:version] + (99).to_bytes(4, "little") + data[version + 4:]}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ExecutableError, match=name.replace(".", r"\.")):
            poplar.Executable.deserialize(tmp_path / name)
    with pytest.raises(ExecutableError, match=r"missing\.exe"):
        poplar.Executable.deserialize(tmp_path / "missing.exe")


def test_engine_options_of_an_executable(tmp_path):
    device, graph, seq = _build(tmp_path)
    exe = poplar.compileGraph(graph, seq, {"codelets.fastMath": "true"})
    with pytest.raises(InvalidOptionError, match=r"fastMath.*fixed when the executable was compiled"):
        poplar.Engine(exe, {"codelets.fastMath": "false"})
    _run(poplar.Engine(exe, {"debug.instrument": "true", "codelets.fastMath": "true"}), device)
    with pytest.raises(ExecutableError, match="already built an Engine"):
        poplar.Engine(exe)  # it would share the first engine's tile memories
