"""Compiled executables: compileGraph, serialize, deserialize (also in a fresh process), Engine(exe)."""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import re
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import ExecutableError, InvalidArgumentError, InvalidOptionError
from poplar_py.executable import FORMAT_VERSION
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


def _file(payload: bytes) -> bytes:
    """An executable file's bytes around ``payload``: magic, format, CRC-32 and length."""
    header = struct.pack("<IIQ", FORMAT_VERSION, zlib.crc32(payload), len(payload))
    return b"POPLAR_PY_EXECUTABLE\n" + header + payload


def test_files_of_the_wrong_kind_are_invalid_arguments(tmp_path):
    _, graph, seq = _build(tmp_path)
    exe = poplar.compileGraph(graph, seq)
    text = open(tmp_path / "text.exe", "w")  # noqa: SIM115 (closed below)
    for bad in (None, 3, b"prog.exe", io.StringIO(), text, [tmp_path / "x.exe"]):
        with pytest.raises(InvalidArgumentError, match=r"^Executable\.serialize: file "):
            exe.serialize(bad)
    text.close()
    data = io.BytesIO()
    exe.serialize(data)
    with open(tmp_path / "text.exe", "w") as f:
        f.write("text")
    with open(tmp_path / "text.exe") as text:
        for bad in (None, 3, data.getvalue(), bytearray(b"xy"), io.StringIO("POPLAR"), text):
            with pytest.raises(InvalidArgumentError, match=r"^Executable\.deserialize: file "):
                poplar.Executable.deserialize(bad)


def test_files_that_cannot_be_written_or_read_are_named(tmp_path):
    _, graph, seq = _build(tmp_path)
    exe = poplar.compileGraph(graph, seq)
    for path in (tmp_path / "missing" / "prog.exe", tmp_path):
        with pytest.raises(ExecutableError, match=f"cannot write the executable '{re.escape(str(path))}'"):
            exe.serialize(path)
    closed = open(tmp_path / "closed.exe", "wb")  # noqa: SIM115
    closed.close()
    with pytest.raises(ExecutableError, match=r"cannot write the executable '.*closed\.exe'"):
        exe.serialize(closed)
    with pytest.raises(ExecutableError, match=r"cannot read the executable '.*closed\.exe'"):
        poplar.Executable.deserialize(closed)
    with open(tmp_path / "w.exe", "wb") as write_only, \
            pytest.raises(ExecutableError, match=r"cannot read the executable '.*w\.exe'"):
        poplar.Executable.deserialize(write_only)
    with pytest.raises(ExecutableError, match=f"cannot read the executable '{re.escape(str(tmp_path))}'"):
        poplar.Executable.deserialize(tmp_path)
    assert not (tmp_path / "missing").exists()


def test_trailing_bytes_are_named(tmp_path):
    _, graph, seq = _build(tmp_path)
    data = io.BytesIO()
    poplar.compileGraph(graph, seq).serialize(data)
    size = len(data.getvalue()) - len(_file(b""))
    with pytest.raises(ExecutableError, match=rf"'<stream>' has 3 trailing bytes after its {size}-byte "):
        poplar.Executable.deserialize(io.BytesIO(data.getvalue() + b"abc"))


def test_a_payload_that_is_not_an_executable_is_named(tmp_path):
    """A valid header and checksum around other pickles: ExecutableError, never AttributeError."""
    _, graph, seq = _build(tmp_path)
    exe = poplar.compileGraph(graph, seq)
    ir, compiled, options = exe.ir, exe.compiled, exe.options
    payloads = {
        "number": (pickle.dumps(3), "payload is of type int, not tuple"),
        "short": (pickle.dumps((1, 2)), "payload has 2 items, not 3"),
        "strings": (pickle.dumps(("a", "b", "c")), r"payload\[0\] is of type str, not GraphIR"),
    }
    for name, (payload, message) in payloads.items():
        (tmp_path / f"{name}.exe").write_bytes(_file(payload))
        with pytest.raises(ExecutableError, match=rf"'.*{name}\.exe' does not hold an executable: {message}"):
            poplar.Executable.deserialize(tmp_path / f"{name}.exe")
    lowered = dataclasses.replace(compiled.lowered, tables=[*compiled.lowered.tables, "tables"])
    forged = {
        "layout": (dataclasses.replace(compiled, layout=None), r"payload\[1\]\.layout is of type NoneType"),
        "tables": (dataclasses.replace(compiled, lowered=lowered), r"payload\[1\]\.lowered\.tables item is "
                   "of type str, not ComputeSetTables"),
        "arena": (dataclasses.replace(compiled, layout=dataclasses.replace(compiled.layout, tile_base=None)),
                  "its compiled graph has no tile memory"),
    }
    for name, (bad, message) in forged.items():
        poplar.Executable(ir, bad, options).serialize(tmp_path / f"{name}.exe")
        with pytest.raises(ExecutableError, match=rf"'.*{name}\.exe' does not hold an executable: {message}"):
            poplar.Executable.deserialize(tmp_path / f"{name}.exe")
INLINE_PROGRAM = textwrap.dedent('''
    """A program whose codelet is written in it: compiled and serialized when run as __main__."""
    from __future__ import annotations

    import math
    import sys

    import numpy as np

    import poplar_py as poplar
    from poplar_py import Input, Output, Vector, Vertex
    from poplar_py import program as prog

    SCALE = 3.0
    HOOK = lambda v: v  # noqa: E731 (a global that cannot travel)


    def double(v: float) -> float:
        return v * 2.0


    twice = double  # known by another name


    class Transform(Vertex):
        x: Input[Vector[float]]
        y: Output[Vector[float]]

        def compute(self):
            for i in range(len(self.x)):
                self.y[i] = twice(self.x[i]) * SCALE + math.floor(self.x[i])


    class Hooked(Transform):
        hook = HOOK


    if __name__ == "__main__":
        model = poplar.IPUModel()
        model.tilesPerIPU = 4
        graph = poplar.Graph(model.createDevice())
        graph.addCodelets(Hooked if sys.argv[2:] == ["hooked"] else Transform)
        x = graph.addConstant(poplar.FLOAT, [5], np.linspace(-2.5, 2.5, 5), "x")
        y = graph.addVariable(poplar.FLOAT, [5], "y")
        graph.setTileMapping(x, 2)
        graph.setTileMapping(y, 2)
        cs = graph.addComputeSet("transform")
        kind = "Hooked" if sys.argv[2:] == ["hooked"] else "Transform"
        graph.setTileMapping(graph.addVertex(cs, kind, {"x": x, "y": y}), 2)
        graph.createHostRead("y", y)
        try:
            poplar.compileGraph(graph, prog.Execute(cs)).serialize(sys.argv[1])
        except poplar.ExecutableError as exc:
            print(exc)
    ''')

LOAD_AND_RUN = textwrap.dedent("""
    import sys, numpy as np, poplar_py as poplar
    model = poplar.IPUModel(); model.tilesPerIPU = 4
    device = model.createDevice()
    exe = poplar.Executable.deserialize(sys.argv[1])
    if len(sys.argv) > 3:
        exe.serialize(sys.argv[3])  # the rebuilt class travels on
    engine = poplar.Engine(exe)
    engine.load(device)
    engine.run(0)
    np.save(sys.argv[2], engine.readTensor("y"))
    """)


def test_codelets_of_the_programs_main_travel_in_the_executable(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))

    def run(*args: str) -> str:
        result = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                                cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    (tmp_path / "inline_prog.py").write_text(INLINE_PROGRAM)
    run("-m", "poplar_py.cli", "run", "inline_prog.py", "a.exe")  # as __main__, through poplar-py run
    run("inline_prog.py", "b.exe")  # and by python itself
    (tmp_path / "inline_prog.py").unlink()  # the executables carry the codelet's source
    run("-c", LOAD_AND_RUN, "a.exe", "a.npy", "c.exe")
    run("-c", LOAD_AND_RUN, "b.exe", "b.npy")
    run("-c", LOAD_AND_RUN, "c.exe", "c.npy")  # serialized again by the process that loaded it
    x = np.linspace(-2.5, 2.5, 5).astype(np.float32)
    for name in ("a", "b", "c"):
        np.testing.assert_array_equal(np.load(tmp_path / f"{name}.npy"), x * 2 * 3 + np.floor(x))


def test_a_main_codelet_using_what_cannot_travel_is_named(tmp_path):
    (tmp_path / "inline_prog.py").write_text(INLINE_PROGRAM)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    result = subprocess.run([sys.executable, "inline_prog.py", "h.exe", "hooked"], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "cannot serialize class Hooked of __main__: it uses a lambda" in result.stdout
    assert not (tmp_path / "h.exe").exists()


def test_progress_callback_is_told_each_pass(tmp_path):
    _, g, p = _build(tmp_path)
    calls = []
    poplar.compileGraph(g, [p], {}, lambda done, total: calls.append((done, total)), "compiled")
    total = calls[0][1]
    assert total > 5 and calls == [(i, total) for i in range(total + 1)]


def test_engine_progress_callback_and_debug_context(tmp_path):
    _, g, p = _build(tmp_path)
    calls = []
    e = poplar.Engine(g, p, None, lambda done, total: calls.append(done), poplar.DebugContext("mine"))
    assert e.name == "mine" and calls[-1] == len(calls) - 1 > 0


def test_progress_callback_must_be_callable(tmp_path):
    _, g, p = _build(tmp_path)
    with pytest.raises(InvalidArgumentError, match="compileGraph: progressCallback must be callable"):
        poplar.compileGraph(g, p, {}, "bar")
    with pytest.raises(InvalidArgumentError, match="compileGraph: debugContext"):
        poplar.compileGraph(g, p, {}, None, 3)
    exe = poplar.compileGraph(g, p)
    with pytest.raises(InvalidArgumentError, match="compiled already: give progressCallback to compileGraph"):
        poplar.Engine(exe, None, None, print)
