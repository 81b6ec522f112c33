"""Tutorial 3: writing vertex code (a port of Graphcore's tut3_vertices).

Four SumVertex instances, one per tile, each sum a suffix of v1 into one element of
v2. The codelet lives in tut3_codelets.py; ``in`` is a Python keyword, so its input
field is called ``inp``. Run with ``poplar-py run tutorials/tut3_vertices/tut3.py``; with
``--cpp`` the same vertex comes from tut3_codelets.cpp, in C++ as Poplar programs keep it (its
input field is ``in``, as in Graphcore's original).
"""

import sys

import poplar_py as poplar
from poplar_py import program as prog


def main() -> None:
    cpp = "--cpp" in sys.argv[1:]
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device.getTarget())

    # Add the codelets: the path is relative to this file or the working directory.
    graph.addCodelets("tut3_codelets.cpp" if cpp else "tut3_codelets.py")
    inField = "in" if cpp else "inp"

    v1 = graph.addVariable(poplar.FLOAT, [4], "v1")
    v2 = graph.addVariable(poplar.FLOAT, [4], "v2")
    for i in range(4):
        graph.setTileMapping(v1[i], i)
        graph.setTileMapping(v2[i], i)

    seq = prog.Sequence()
    c1 = graph.addConstant(poplar.FLOAT, [4], [1.0, 1.5, 2.0, 2.5])
    graph.setTileMapping(c1, 0)
    seq.add(prog.Copy(c1, v1))

    # One vertex per tile: vertex i sums v1[i:4] into v2[i].
    computeSet = graph.addComputeSet("computeSet")
    for i in range(4):
        vtx = graph.addVertex(computeSet, "SumVertex")
        graph.connect(vtx[inField], v1.slice(i, 4))
        graph.connect(vtx["out"], v2[i])
        graph.setTileMapping(vtx, i)
        graph.setPerfEstimate(vtx, 20)

    seq.add(prog.Execute(computeSet))
    seq.add(prog.PrintTensor("v2", v2))

    engine = poplar.Engine(graph, seq)
    engine.load(device)

    print("Running program", flush=True)
    engine.run(0)
    print("Program complete")


if __name__ == "__main__":
    main()
