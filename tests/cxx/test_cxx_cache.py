"""C++ codelet files are compiled once: cached on disk by their text, the files they include and
the flags; executables carry the source, so they run where the file is gone."""

from __future__ import annotations

import io

import numpy as np
import pytest
from cxx_harness import Vertex, run, write_source

import poplar_py as poplar
from poplar_py.cxx import module, toolchain
from poplar_py.types import INT


def _never(*_args, **_kwargs):
    raise AssertionError("clang ran for a cached file")


def test_a_cached_file_does_not_run_clang(tmp_path, monkeypatch):
    src = write_source(tmp_path, "class C : public Vertex { public: Output<int> o; "
                                 "bool compute() { *o = 3; return true; } };\n")
    first = module.load(str(src), None, "")
    monkeypatch.setattr(module, "_loaded", {})
    monkeypatch.setattr(toolchain.Clang, "run", _never)
    again = module.load(str(src), None, "")
    assert [c.vertexName for c in again] == [c.vertexName for c in first] == ["C"]
    assert again[0].fields == first[0].fields


def test_an_included_header_is_part_of_the_key(tmp_path, monkeypatch):
    (tmp_path / "value.h").write_text("#define VALUE 1\n")
    src = write_source(tmp_path, '#include "value.h"\nclass H : public Vertex { public: Output<int> o; '
                                 "bool compute() { *o = VALUE; return true; } };\n")
    assert run(src, [Vertex("H", {}, {"o": ((), INT)})]).outputs[0]["o"] == 1
    (tmp_path / "value.h").write_text("#define VALUE 2\n")
    monkeypatch.setattr(module, "_loaded", {})
    assert run(src, [Vertex("H", {}, {"o": ((), INT)})]).outputs[0]["o"] == 2


def test_flags_are_part_of_the_key(tmp_path):
    src = write_source(tmp_path, "class F : public Vertex { public: Output<int> o; "
                                 "bool compute() { *o = N; return true; } };\n")
    assert run(src, [Vertex("F", {}, {"o": ((), INT)})], flags="-DN=4").outputs[0]["o"] == 4
    assert run(src, [Vertex("F", {}, {"o": ((), INT)})], flags="-DN=5").outputs[0]["o"] == 5


@pytest.mark.parametrize("as_text", [False, True])
def test_an_executable_carries_its_cxx_codelets(tmp_path, as_text):
    text = ("#include <poplar/Vertex.hpp>\nclass E : public poplar::Vertex { public: poplar::InOut<int> v; "
            "bool compute() { *v = *v * 7; return true; } };\n")
    path = tmp_path / "e.cpp"
    path.write_text(text)
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget())
    if as_text:
        graph.addCodelets(text, poplar.CodeletFileType.CppSource)
    else:
        graph.addCodelets(str(path))
    t = graph.addVariable(INT, [], "t")
    graph.setTileMapping(t, 1)
    cs = graph.addComputeSet("cs")
    graph.setTileMapping(graph.addVertex(cs, "E", {"v": t}), 1)
    graph.createHostWrite("w", t)
    graph.createHostRead("r", t)
    buffer = io.BytesIO()
    poplar.compileGraph(graph, [poplar.program.Execute(cs)]).serialize(buffer)
    path.unlink()
    engine = poplar.Engine(poplar.Executable.deserialize(io.BytesIO(buffer.getvalue())))
    engine.load(device)
    engine.writeTensor("w", np.array(6, np.int32))
    engine.run(0)
    out = np.zeros((), np.int32)
    engine.readTensor("r", out)
    assert out == 42
