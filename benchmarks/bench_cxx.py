"""C++ codelets: compile time per file, and run time against their Python twins and numpy.

    python benchmarks/bench_cxx.py [--quick]

Prints, each measured in this run (children on one core: ``POPLAR_PY_THREADS=1``):

1. Compile time of C++ codelet files (tutorial 3's, tutorial 7's, a templated MultiVertex file
   with two instantiations), from ``addCodelets`` to a linked kernel: cold (an empty kernel cache,
   a fresh process: two clang runs, inlining, instrumenting, LLVM -O3) and cached (a fresh process,
   the same cache: a hash, the manifest, the object linked). Targets: cached under 50 ms, cold
   under 2 s.
2. Tutorial 7's program (10000x1000; ``--quick``: 2000x500) run with its C++ codelets against the
   same with its Python codelets, and against numpy's ``m @ v``, best of 7 runs each, with the
   results compared bit for bit. Target: C++ within 1.2x of Python, identical results.
3. Peak RSS of each child.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

import numpy as np
from timing import ROOT, best, child_json

FILES = {
    "tut3": ROOT / "tutorials" / "tut3_vertices" / "tut3_codelets.cpp",
    "tut7": ROOT / "tutorials" / "tut7_matrix_vector_opt" / "matrix_mul_codelets.cpp",
    "template": None,  # written to a temporary folder (TEMPLATE below)
}
TEMPLATE = """#include <poplar/Vertex.hpp>
#include <cmath>
using namespace poplar;
template <typename T>
class Scale : public MultiVertex {
public:
  InOut<Vector<T>> data;
  Vector<Input<Vector<T>>> rows;
  T factor;
  bool compute(unsigned w) {
    for (unsigned i = w; i < data.size(); i += numWorkers())
      data[i] = data[i] * factor + T(std::sqrt(float(data[i])));
    for (unsigned r = 0; r < rows.size(); ++r)
      for (unsigned j = w; j < rows[r].size(); j += numWorkers()) data[j] += rows[r][j];
    return true;
  }
};
template class Scale<float>;
template class Scale<half>;
"""


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _compile_child(path: str) -> None:
    """addCodelets of one file, then its kernel: seconds, and peak RSS."""
    import poplar_py as poplar
    from poplar_py.codelet.codelet_compiler import KernelOptions
    from poplar_py.cxx import module
    from poplar_py.vertex_types.backends import compile_codelet

    graph = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    start = time.perf_counter()
    graph.addCodelets(path)
    for cls in module.load(path, None, ""):
        compile_codelet(cls, KernelOptions())
    print(json.dumps({"seconds": time.perf_counter() - start, "rss": _peak_mb()}))


def _run_child(rows: int, cols: int, cpp: bool) -> None:
    """Tutorial 7's program: best run seconds, numpy's, the result's bytes (hex digest), peak RSS."""
    import hashlib

    from workloads import tut7

    engine, m, v = tut7(rows, cols, cpp=cpp)
    seconds = best(lambda: engine.run(0), repeat=7)
    out = engine.readTensor("out")
    numpy = best(lambda: m @ v, repeat=7)
    print(json.dumps({"seconds": seconds, "numpy": numpy, "digest": hashlib.sha256(out.tobytes()).hexdigest(),
                      "error": float(np.max(np.abs(out - m.astype(np.float64) @ v))), "rss": _peak_mb()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "compile":
            _compile_child(args.child[1])
        else:
            _run_child(int(args.child[1]), int(args.child[2]), args.child[3] == "cpp")
        return
    me = [sys.executable, __file__, "--child"]
    folder = tempfile.mkdtemp()
    FILES["template"] = f"{folder}/template_codelets.cpp"
    with open(FILES["template"], "w") as f:
        f.write(TEMPLATE)
    print("1. compile time per file (addCodelets to a linked kernel), fresh processes")
    print(f"   {'file':10} {'cold (s)':>9} {'cached (ms)':>12} {'peak RSS (MB)':>14}   "
          "targets: < 2 s, < 50 ms")
    for name, path in FILES.items():
        cache = tempfile.mkdtemp()
        os.environ["POPLAR_PY_CACHE_DIR"] = cache
        cold = child_json([*me, "compile", str(path)])
        cached = child_json([*me, "compile", str(path)])
        shutil.rmtree(cache, ignore_errors=True)
        if isinstance(cold, str) or isinstance(cached, str):
            print(f"   {name}: failed\n{cold if isinstance(cold, str) else cached}")
            continue
        print(f"   {name:10} {cold['seconds']:9.2f} {cached['seconds'] * 1000:12.1f} {cached['rss']:14.0f}")
    os.environ.pop("POPLAR_PY_CACHE_DIR", None)
    rows, cols = (2000, 500) if args.quick else (10000, 1000)
    print(f"2. tutorial 7's program at {rows}x{cols}, best of 7 runs, one core")
    results = {lang: child_json([*me, "run", str(rows), str(cols), lang]) for lang in ("python", "cpp")}
    for lang, r in results.items():
        if isinstance(r, str):
            print(f"   {lang}: failed\n{r}")
            return
    py, cpp = results["python"], results["cpp"]
    print(f"   Python codelets {py['seconds'] * 1000:8.2f} ms   (numpy m @ v {py['numpy'] * 1000:.3f} ms, "
          f"{py['seconds'] / py['numpy']:.0f}x)   peak RSS {py['rss']:.0f} MB")
    print(f"   C++ codelets    {cpp['seconds'] * 1000:8.2f} ms   ({cpp['seconds'] / py['seconds']:.2f}x "
          f"Python; target <= 1.2x)   peak RSS {cpp['rss']:.0f} MB")
    same = "identical" if py["digest"] == cpp["digest"] else "DIFFERENT"
    print(f"   results: {same}; largest error against float64 numpy {cpp['error']:.2e}")


if __name__ == "__main__":
    main()
