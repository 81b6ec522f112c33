"""Malformed C++ codelet sources, made by seeded mutation of valid ones: truncated files, fields of
types the engine cannot lay out, statements the checked mode must catch, code that cannot run.

Each case is added to a graph and, when that succeeds, run with every field connected; it must
either work or raise a PoplarError, never crash or hang. Run as a script (``fuzz_cxx.py NAME...``)
it prints ``START name`` before and ``OK name`` or ``FAIL name why`` after each case, so that a
process that dies names the case it died in (test_cxx_fuzz.py runs it so).
"""

from __future__ import annotations

import random
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import poplar_py as poplar
from poplar_py.cxx import module as cxx
from poplar_py.vertex import Direction, FieldKind

SEED = 38
VALID = [
    """#include <poplar/Vertex.hpp>
using namespace poplar;
class Sum : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;
  bool compute() {
    float s = 0;
    for (unsigned i = 0; i < in.size(); ++i) s += in[i];
    *out = s;
    return true;
  }
};
""",
    """#include <poplar/Vertex.hpp>
#include <cmath>
using namespace poplar;
template <typename T>
class Scale : public MultiVertex {
public:
  InOut<Vector<T>> data;
  Vector<Input<Vector<T>>> rows;
  T factor;
  bool compute(unsigned w) {
    for (unsigned i = w; i < data.size(); i += numWorkers()) data[i] = data[i] * factor;
    for (unsigned r = 0; r < rows.size(); ++r)
      for (unsigned j = 0; j < rows[r].size() && w == 0; ++j) data[0] += rows[r][j];
    return true;
  }
};
template class Scale<float>;
template class Scale<int>;
""",
    """#include <poplar/Vertex.hpp>
#include <poplar/HalfFloat.hpp>
using namespace poplar;
class Half4 : public Vertex {
public:
  Input<Vector<half, VectorLayout::ONE_PTR, 8>> in;
  Output<Vector<half, VectorLayout::SPAN, 8>> out;
  unsigned count;
  bool compute() {
    const half4 *a = reinterpret_cast<const half4 *>(&in[0]);
    half4 *b = reinterpret_cast<half4 *>(&out[0]);
    for (unsigned i = 0; i < out.size() / 4 && i < count; ++i) b[i] = a[i] * (half)2;
    return true;
  }
};
""",
]
FIELD_TYPES = ["double", "long", "float *", "int[4]", "Input<double>", "Input<Vector<Vector<float>>>",
               "Output<Vector<long>>", "VectorList<float>", "Input<float2>", "std::size_t", "bool",
               "Input<Vector<float, VectorLayout::ONE_PTR>>", "Vector<Output<float>>", "unsigned char",
               "Input<int>", "InOut<Vector<half>>", "Vector<Input<Vector<int>>>", "struct { int a; }",
               "Input<Vector<float>> &", "const int", "static int", "virtual int", "Undeclared"]
STATEMENTS = [
    "in[in.size()] = 0;", "float z = in[in.size() + 3];", "int q = 7 / (int)(in.size() - in.size());",
    "int m = -2147483647 - 1; int d = (int)in.size() - (int)in.size() - 1; int r = m / d; (void)r;",
    "assert(false);", "abort();", "__builtin_trap();", "return false;", 'asm volatile("nop");',
    "for (int i = 0; i < 3; ++i) (void)in[i * 1000];", "float buf[300000]; buf[1] = 0; (void)buf[2];",
    "static int k = 0; ++k;", "throw 1;", "goto end; end:;", "auto f = &Sum::compute; (void)f;",
    "int (*p)(int) = nullptr; if (in.size() > 100) p(1);", "unsigned u = in.size(); u = u % 0;",
    "float x = in[0]; x = x / 0.0f; (void)x;", "(void)__builtin_ipu_get_vertex_base();",
    "printf(\"%d\\n\", 1);", "*out = in.data()[2];", "long long big = 1LL << 62; (void)big;",
    "char c[3] = {1, 2, 3}; (void)c[5];", "while (false) {}", "return;", "int u;",
]


@dataclass(frozen=True)
class Case:
    name: str
    source: str


def cases() -> list[Case]:
    """The seeded cases (at least 200), each with its own name."""
    rng = random.Random(SEED)
    out: list[Case] = []
    for k in range(90):  # truncated files
        base = rng.choice(VALID)
        out.append(Case(f"truncated-{k}", base[:rng.randrange(1, len(base))]))
    for k in range(60):  # a field of another type
        field = f"{rng.choice(FIELD_TYPES)} extra;" if k % 2 else f"{rng.choice(FIELD_TYPES)} in;"
        base = VALID[0].replace("Input<Vector<float>> in;", f"Input<Vector<float>> in;\n  {field}")
        if k % 2 == 0:
            base = VALID[0].replace("Input<Vector<float>> in;", field)
        out.append(Case(f"field-{k}", base))
    for k in range(70):  # statements in compute, some several at once
        chosen = " ".join(rng.choice(STATEMENTS) for _ in range(rng.randint(1, 3)))
        text = VALID[0].replace("    float s = 0;", f"    {chosen}\n    float s = 0;")
        out.append(Case(f"statement-{k}", "#include <cassert>\n#include <cstdio>\n#include <cstdlib>\n"
                        "#include <ipu_builtins.h>\n" + text))
    for k in range(20):  # tokens dropped or doubled
        base = rng.choice(VALID)
        words = base.split(" ")
        i = rng.randrange(len(words))
        words[i] = "" if rng.random() < 0.5 else words[i] * 2
        out.append(Case(f"tokens-{k}", " ".join(words)))
    return out


def run_case(case: Case, folder: Path) -> str | None:
    """None when the case worked or raised a PoplarError; otherwise what went wrong."""
    path = folder / f"{case.name}.cpp"
    path.write_text(case.source)
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget())
    try:
        graph.addCodelets(str(path))
        cs = graph.addComputeSet("cs")
        for cls in cxx.load(str(path), None, ""):  # the classes addCodelets registered
            _connected_vertex(graph, cs, cls)
        engine = poplar.Engine(graph, poplar.program.Execute(cs))
        engine.load(device)
        engine.run()
    except poplar.PoplarError:
        return None
    except Exception:
        return traceback.format_exc(limit=3).replace("\n", " | ")
    return None


def _connected_vertex(graph: poplar.Graph, cs: poplar.ComputeSet, cls: type) -> None:
    """A vertex of ``cls`` with every field connected to a fresh tensor or given a value."""
    name = cls.vertexName
    v = graph.addVertex(cs, name)
    graph.setTileMapping(v, 1)
    for field, spec in cls.fields.items():
        if spec.direction is Direction.STATE:
            value = 1 if spec.kind is FieldKind.SCALAR else np.ones(4)
            graph.setInitialValue(v[field], value)
            continue
        if spec.kind is FieldKind.VECTOR_LIST:
            rows = [graph.addVariable(spec.type, [n], f"{name}.{field}{n}") for n in (3, 5)]
            for t in rows:
                graph.setTileMapping(t, 1)
            graph.connect(v[field], rows)
            continue
        t = graph.addVariable(spec.type, [] if spec.kind is FieldKind.SCALAR else [8], f"{name}.{field}")
        graph.setTileMapping(t, 1)
        graph.connect(v[field], t)


def main(names: list[str]) -> None:
    wanted = set(names)
    with tempfile.TemporaryDirectory() as scratch:
        for case in cases():
            if wanted and case.name not in wanted:
                continue
            print(f"START {case.name}", flush=True)
            problem = run_case(case, Path(scratch))
            print(f"OK {case.name}" if problem is None else f"FAIL {case.name} {problem}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
