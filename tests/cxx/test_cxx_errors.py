"""What a C++ codelet cannot do is refused with a PoplarError naming file and line, never a crash:
compile-time refusals, the graph's own checks on C++ fields, and failures while running."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest
from cxx_harness import Vertex, run, write_source

import poplar_py as poplar
from poplar_py import CodeletError, GraphConnectionError, PoplarTypeError, VertexError
from poplar_py.cxx import toolchain
from poplar_py.types import FLOAT, INT

BODY = """
class V : public Vertex {{
public:
  Input<Vector<float>> in;
  Output<float> out;
  bool compute() {{
{body}
    return true;
  }}
}};
"""


def _vertex(tmp_path, body: str) -> object:
    return write_source(tmp_path, BODY.format(body=body))


def _run(src, x=None, options=None):
    x = np.arange(4, dtype=np.float32) if x is None else x
    return run(src, [Vertex("V", {"in": x}, {"out": ((), FLOAT)})], options=options)


@pytest.mark.parametrize("index", ["in.size()", "in.size() + 100", "-1"])
def test_out_of_bounds_names_vertex_field_index_size_and_line(tmp_path, index):
    src = _vertex(tmp_path, f"    *out = in[{index}];")
    with pytest.raises(VertexError) as err:
        _run(src)
    text = str(err.value)
    assert "field 'in'" in text and "of size 4" in text and f"{src.name}:9" in text
    assert "V::compute" in text and "tile 0" in text


def test_out_of_bounds_in_a_row_of_a_list(tmp_path):
    src = write_source(tmp_path, """
class L : public Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Output<float> out;
  bool compute() { *out = rows[1][7]; return true; }
};
""")
    rows = [np.ones(3, np.float32), np.ones(2, np.float32)]
    with pytest.raises(VertexError, match=r"index 7 is out of bounds for field 'rows' of size 2"):
        run(src, [Vertex("L", {"rows": rows}, {"out": ((), FLOAT)})])


def test_unchecked_mode_drops_the_checks_not_the_count(tmp_path):
    src = _vertex(tmp_path, "    float s = 0;\n    for (unsigned i = 0; i < in.size(); ++i) s += in[i];\n"
                            "    *out = s;")
    checked = _run(src)
    unchecked = _run(src, options={"codelets.checkBounds": "false"})
    assert checked.cycles == unchecked.cycles
    assert checked.outputs == unchecked.outputs


@pytest.mark.parametrize(("body", "match"), [
    ("    assert(in[0] > 100);", "assertion failed in V::compute"),
    ("    int z = (int)in[0];\n    *out = 5 / z;", "integer division by zero"),
    ("    int m = -2147483647 - 1;\n    int d = (int)in[1] - 2;\n    *out = m / d;", "division by zero"),
    ("    if (in[0] == 0) abort();", "abort"),
    ("    if (in[0] == 0) __builtin_trap();", "trap"),
    ("    if (in[0] == 0) return false;", "returned false"),
])
def test_failures_raise_vertex_error(tmp_path, body, match):
    src = write_source(tmp_path, "#include <cassert>\n#include <cstdlib>\n" + BODY.format(body=body))
    with pytest.raises(VertexError, match=match):
        _run(src)


@pytest.mark.parametrize(("body", "match"), [
    ('    asm volatile("nop");', r"inline assembly: IPU assembly cannot run on the simulator"),
    ('    __asm__("runall %0, %1, 0" :: "r"(0), "r"(0));', r"inline assembly"),
    ("    *out = undefined_name;", r"undeclared identifier 'undefined_name'"),
    ("    *out = 1.0f +;", r"expected expression"),
    ('    *out = __builtin_ipu_f32v2axpy(float2{1, 2}, float2{3, 4})[0];', r"__builtin_ipu_f32v2axpy"),
])
def test_refused_when_added_naming_file_and_line(tmp_path, body, match):
    src = write_source(tmp_path, "#include <ipu_builtins.h>\n" + BODY.format(body=body))
    graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    with pytest.raises(CodeletError, match=match) as err:
        graph.addCodelets(str(src))
    assert f"{src.name}:10" in str(err.value)


def test_inline_assembly_refused_before_any_run(tmp_path):
    src = _vertex(tmp_path, '    asm volatile("nop");')
    with pytest.raises(CodeletError, match=rf"{src.name}:9: inline assembly"):
        _run(src)


@pytest.mark.parametrize(("decl", "match"), [
    ("double d;", "type double"),
    ("long n;", "type long"),
    ("Input<Vector<double>> v;", "cannot lay out"),
    ("unsigned bits : 3;", "bit-field"),
    ("virtual void f() {}", "virtual functions"),
])
def test_field_types_the_engine_cannot_lay_out(tmp_path, decl, match):
    src = write_source(tmp_path, f"class W : public Vertex {{ public: {decl} "
                                 "bool compute() { return true; } };\n")
    graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    with pytest.raises(CodeletError, match=match):
        graph.addCodelets(str(src))


def test_missing_compute_and_no_vertex(tmp_path):
    graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    none = write_source(tmp_path, "class NotAVertex { public: int x; };\n")
    with pytest.raises(CodeletError, match="defines no vertex classes"):
        graph.addCodelets(str(none))
    missing = write_source(tmp_path, "class NoCompute : public Vertex { public: Output<int> o; };\n")
    with pytest.raises(CodeletError, match=r"NoCompute.*compute"):
        graph.addCodelets(str(missing))


def test_missing_file_bad_flags_and_name_clash(tmp_path):
    graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    with pytest.raises(poplar.PoplarError, match=r"no codelet file 'nowhere\.cpp'"):
        graph.addCodelets("nowhere.cpp")
    src = write_source(tmp_path, BODY.format(body=""))
    with pytest.raises(CodeletError, match=r"--no-such-flag"):
        graph.addCodelets(str(src), "--no-such-flag")
    py = tmp_path / "clash.py"
    py.write_text("from poplar_py import Output, Vertex\n\n\nclass V(Vertex):\n    out: Output[float]\n\n"
                  "    def compute(self):\n        self.out = 1.0\n")
    graph.addCodelets(str(py))
    with pytest.raises(CodeletError, match=r"vertex 'V' of .*codelets_\d+\.cpp is already defined by"):
        graph.addCodelets(str(src))


def test_graph_checks_apply_to_cxx_fields(tmp_path):
    src = _vertex(tmp_path, "    *out = in[0];")
    graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    graph.addCodelets(str(src))
    cs = graph.addComputeSet("cs")
    v = graph.addVertex(cs, "V")
    graph.setTileMapping(v, 0)
    wrong = graph.addVariable(INT, [4], "ints")
    graph.setTileMapping(wrong, 0)
    with pytest.raises(PoplarTypeError, match="in"):
        graph.connect(v["in"], wrong)
    good = graph.addVariable(FLOAT, [4], "floats")
    graph.setTileMapping(good, 0)
    graph.connect(v["in"], good)
    with pytest.raises(GraphConnectionError, match="out"):
        poplar.Engine(graph, poplar.program.Execute(cs))


def test_the_toolchain_says_what_to_install(monkeypatch):
    toolchain.clang.cache_clear()
    try:
        monkeypatch.setattr(toolchain, "llvm", SimpleNamespace(llvm_version_info=(21, 1, 0)))
        with pytest.raises(CodeletError, match=r"built on LLVM 22 but llvmlite on LLVM 21.*pip install "
                                               r"'ziglang==0\.17\.1'"):
            toolchain.clang()
        toolchain.clang.cache_clear()
        monkeypatch.setitem(sys.modules, "ziglang", None)
        with pytest.raises(CodeletError, match=r"install the cxx extra \(pip install 'poplar-py\[cxx\]'"):
            toolchain.clang()
    finally:
        monkeypatch.undo()
        toolchain.clang.cache_clear()
    assert toolchain.clang().version.startswith("22.")
