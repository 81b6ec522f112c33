"""Tutorial 6: matrix-vector multiplication (Graphcore's tut6_matrix_vector, SDK 2.4+'s tut5).

One DotProductVertex per matrix row, each on its own tile; the matrix, vector and
result travel through host FIFOs and the host checks the result.
Usage: ``poplar-py run tutorials/tut6_matrix_vector/tut6.py numRows numCols [--cpp]``; with
``--cpp`` the vertex comes from matrix_mul_codelets.cpp, its C++ twin.
"""

import sys

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poputil


def buildMultiplyProgram(graph: poplar.Graph, matrix: poplar.Tensor, inp: poplar.Tensor,
                         out: poplar.Tensor) -> prog.Program:
    """One vertex per row computes the dot product of that row with ``inp``."""
    mulCS = graph.addComputeSet("mulCS")
    numTiles = graph.getTarget().getNumTiles()
    for i in range(matrix.dim(0)):
        v = graph.addVertex(mulCS, "DotProductVertex", {"a": matrix[i], "b": inp, "out": out[i]})
        graph.setTileMapping(v, i % numTiles)
        graph.setPerfEstimate(v, 20)
    return prog.Execute(mulCS)


def checkResult(matrix: np.ndarray, inp: np.ndarray, output: np.ndarray) -> bool:
    """Recompute each row sequentially in float32 and compare exactly, as the original does."""
    # add.accumulate sums left to right, rounding to float32 at each step like the C++ loop.
    expected = np.add.accumulate(matrix * inp, axis=1, dtype=np.float32)[:, -1] if matrix.size \
        else np.zeros(matrix.shape[0], np.float32)
    for row in np.flatnonzero(output != expected)[:1].tolist():
        print(f"ERROR: output {row}: expected={expected[row]}, actual={output[row]}")
        return False
    print("Multiplication result OK")
    return True


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--cpp"]
    if len(args) != 2:
        print(f"usage: {sys.argv[0]} numRows numCols [--cpp]", file=sys.stderr)
        return 1
    numRows, numCols = int(args[0]), int(args[1])
    print(f"Multiplying matrix of size {numRows}x{numCols} by vector of size {numCols}")

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device.getTarget())

    print("Creating new graph object and compiling vertex program additions")
    graph.addCodelets("matrix_mul_codelets.cpp" if "--cpp" in sys.argv[1:] else "matrix_mul_codelets.py")

    print("Constructing full compute graph and control program")
    matrix = graph.addVariable(poplar.FLOAT, [numRows, numCols], "matrix")
    inputVector = graph.addVariable(poplar.FLOAT, [numCols], "inputVector")
    outputVector = graph.addVariable(poplar.FLOAT, [numRows], "outputVector")
    poputil.mapTensorLinearly(graph, matrix)
    poputil.mapTensorLinearly(graph, inputVector)
    poputil.mapTensorLinearly(graph, outputVector)

    hMatrix = np.fromfunction(lambda r, c: r * c, (numRows, numCols), dtype=np.float32).astype(np.float32)
    hInput = np.arange(numCols, dtype=np.float32)
    hOutput = np.zeros(numRows, dtype=np.float32)

    inStreamV = graph.addHostToDeviceFIFO("inputVector", poplar.FLOAT, numCols)
    inStreamM = graph.addHostToDeviceFIFO("inputMatrix", poplar.FLOAT, numCols * numRows)
    outStream = graph.addDeviceToHostFIFO("out", poplar.FLOAT, numRows)

    mulProg = buildMultiplyProgram(graph, matrix, inputVector, outputVector)
    seq = prog.Sequence([prog.Copy(inStreamV, inputVector), prog.Copy(inStreamM, matrix), mulProg,
                         prog.Copy(outputVector, outStream)])

    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.connectStream("inputVector", hInput)
    engine.connectStream("inputMatrix", hMatrix)
    engine.connectStream("out", hOutput)

    print("Running graph program to multiply matrix by vector")
    engine.run()

    return 0 if checkResult(hMatrix, hInput, hOutput) else 1


if __name__ == "__main__":
    sys.exit(main())
