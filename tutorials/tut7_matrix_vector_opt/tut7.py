"""Tutorial 7: matrix-vector multiplication optimisation (Graphcore's tut7_matrix_vector_opt,
SDK 2.4+'s tut6).

Each row is split into segments; a hand-written cycle-cost model, computed from the
target's figures, picks the split. Partial dot products are spread over all tiles and
a second compute set reduces them. Prints the profile summary at the end.
Usage: ``poplar-py run tutorials/tut7_matrix_vector_opt/tut7.py numRows numCols
[--device {model-ipu1,model-ipu2,ipu}] [--cpp]``. ``ipu`` attaches to an IPU from the
DeviceManager: the hardware path, whose profile is calibrated against Graphcore's hardware run
(the cycle estimates the program sets are not read there); ``--cpp`` takes the vertices from
matrix_mul_codelets.cpp, their C++ twins.
"""

import sys

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog


def ceilDiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def estimateCycles(target: poplar.Target, numRows: int, numCols: int, split: int):
    """The tutorial's cost model of one split: (total, compute, exchange, reduce exchange, reduce compute)."""
    T = target.getNumTiles()
    W = target.getNumWorkerContexts()
    E = target.getExchangeBytesPerCycle()
    maxVerticesPerTile = max(ceilDiv(numRows * split, T), 1)
    cyclesPerVertex = 5 + (ceilDiv(numCols, split) + 1) // 2
    computeCycles = ceilDiv(maxVerticesPerTile, W) * W * cyclesPerVertex
    exchangeCycles = ceilDiv(maxVerticesPerTile, numRows) * ceilDiv(numCols, split) * 4 // E
    maxReduceVerticesPerTile = max(ceilDiv(numRows, T), 1)
    cyclesPerReduceVertex = 5 + (split + 1) // 2
    reduceComputeCycles = ceilDiv(maxReduceVerticesPerTile, W) * W * cyclesPerReduceVertex
    reduceExchangeCycles = maxReduceVerticesPerTile * split * 4 // E
    total = computeCycles + exchangeCycles + reduceComputeCycles + reduceExchangeCycles
    return total, computeCycles, exchangeCycles, reduceExchangeCycles, reduceComputeCycles


def calcOptimalColAxisSplit(target: poplar.Target, numRows: int, numCols: int) -> int:
    best, bestCost, worst = 1, None, 0
    for split in range(1, numCols):
        cost = estimateCycles(target, numRows, numCols, split)
        if bestCost is None or cost[0] < bestCost[0]:
            best, bestCost = split, cost
        worst = max(worst, cost[0])
    if bestCost is None:
        bestCost = estimateCycles(target, numRows, numCols, 1)
        worst = bestCost[0]
    total, compute, exchange, redExchange, redCompute = bestCost
    print("Best split chosen:")
    print(f"colsAxisSplit={best}, total cost={total} (compute cost={compute}, exchange cost={exchange}, "
          f"reduce exchange cost={redExchange}, reduce compute cost={redCompute})")
    print(f"Worst cost seen: {worst}")
    return best


def buildMultiplyProgram(graph: poplar.Graph, matrix: poplar.Tensor, inp: poplar.Tensor,
                         out: poplar.Tensor, reduceInput: str = "inp") -> prog.Program:
    """``reduceInput``: the ReduceVertex's input field (``in`` in C++, ``inp`` in Python)."""
    numRows, numCols = matrix.dim(0), matrix.dim(1)
    target = graph.getTarget()
    numTiles = target.getNumTiles()
    colAxisSplit = calcOptimalColAxisSplit(target, numRows, numCols)

    partials = graph.addVariable(poplar.FLOAT, [numRows, colAxisSplit], "partials")
    for i in range(numCols):
        graph.setTileMapping(inp[i], i * numTiles // numCols)

    mulCS = graph.addComputeSet("mulCS")
    for i in range(colAxisSplit):
        beginCol = i * numCols // colAxisSplit
        endCol = (i + 1) * numCols // colAxisSplit
        if beginCol == endCol:
            continue
        for row in range(numRows):
            v = graph.addVertex(mulCS, "DotProductVertex",
                                {"a": matrix[row].slice(beginCol, endCol),
                                 "b": inp.slice(beginCol, endCol), "out": partials[row][i]})
            tile = (i * numRows + row) * numTiles // (colAxisSplit * numRows)
            graph.setTileMapping(v, tile)
            graph.setTileMapping(matrix[row].slice(beginCol, endCol), tile)
            graph.setTileMapping(partials[row][i], tile)
            graph.setPerfEstimate(v, 5 + ((endCol - beginCol) + 1) // 2)

    reduceCS = graph.addComputeSet("reduceCS")
    for row in range(numRows):
        v = graph.addVertex(reduceCS, "ReduceVertex", {reduceInput: partials[row], "out": out[row]})
        tile = row * numTiles // numRows
        graph.setTileMapping(v, tile)
        graph.setTileMapping(out[row], tile)
        graph.setPerfEstimate(v, 5 + (partials[row].numElements() + 1) // 2)
    return prog.Sequence([prog.Execute(mulCS), prog.Execute(reduceCS)])


def parseArgs(argv: list[str]):
    device, positional = "model-ipu2", []
    args = iter(argv)
    for arg in args:
        if arg == "--cpp":
            continue
        if arg == "--device":
            device = next(args, None)
            if device is None:
                raise ValueError("Missing argument following --device")
            if device not in ("model-ipu1", "model-ipu2", "ipu"):
                raise ValueError(f"Unrecognised device {device}")
        else:
            positional.append(arg)
    if len(positional) < 2:
        raise ValueError("Missing rows/cols arguments")
    if len(positional) > 2:
        raise ValueError("Unexpected arguments")
    names = ("numRows", "numCols")
    values = []
    for name, text in zip(names, positional):
        if not text.isdigit():
            raise ValueError(f"Malformed {name} argument")
        values.append(int(text))
    return device, values[0], values[1]


def main() -> int:
    try:
        deviceName, numRows, numCols = parseArgs(sys.argv[1:])
    except ValueError as error:
        print(error)
        print("Failed to parse arguments")
        print(f"usage: {sys.argv[0]} numRows numCols --device {{model-ipu1,model-ipu2,ipu}} [--cpp]",
              file=sys.stderr)
        return -1

    print(f"Device {deviceName}")
    print(f"Multiplying matrix of size {numRows}x{numCols} by vector of size {numCols}")
    print("Constructing compute graph and control program")

    if deviceName == "ipu":
        devices = poplar.DeviceManager.createDeviceManager().getDevices(poplar.TargetType.IPU, 1)
        print("Trying to attach to IPU")
        device = next((d for d in devices if d.attach()), None)
        if device is None:
            print("Error attaching to device", file=sys.stderr)
            return 1
        print(f"Attached to IPU {device.getId()}")
    else:
        ipuModel = poplar.IPUModel("ipu1" if deviceName == "model-ipu1" else "ipu2")
        ipuModel.minIPUSyncDelay = 0
        ipuModel.relativeSyncDelay = poplar.IPUModel.RelativeSyncDelayType.NO_DELAY
        device = ipuModel.createDevice()
    graph = poplar.Graph(device)
    cpp = "--cpp" in sys.argv[1:]
    graph.addCodelets("matrix_mul_codelets.cpp" if cpp else "matrix_mul_codelets.py")

    matrix = graph.addVariable(poplar.FLOAT, [numRows, numCols], "matrix")
    inputVector = graph.addVariable(poplar.FLOAT, [numCols], "inputVector")
    outputVector = graph.addVariable(poplar.FLOAT, [numRows], "outputVector")

    hMatrix = np.fromfunction(lambda r, c: r * c, (numRows, numCols), dtype=np.float32).astype(np.float32)
    hInput = np.arange(numCols, dtype=np.float32)
    hOutput = np.zeros(numRows, dtype=np.float32)

    mulProg = buildMultiplyProgram(graph, matrix, inputVector, outputVector, "in" if cpp else "inp")

    inStreamV = graph.addHostToDeviceFIFO("inputVector", poplar.FLOAT, numCols)
    inStreamM = graph.addHostToDeviceFIFO("inputMatrix", poplar.FLOAT, numCols * numRows)
    outStream = graph.addDeviceToHostFIFO("out", poplar.FLOAT, numRows)

    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(inStreamV, inputVector),
                                                 prog.Copy(inStreamM, matrix), mulProg,
                                                 prog.Copy(outputVector, outStream)]),
                           {"autoReport.all": "true"})
    engine.load(device)
    engine.connectStream("inputVector", hInput)
    engine.connectStream("inputMatrix", hMatrix)
    engine.connectStream("out", hOutput)

    print("Running graph program to multiply matrix by vector")
    engine.run()

    expected = hMatrix.astype(np.float64) @ hInput.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.abs(1 - expected / hOutput)
    bad = np.flatnonzero(relative > 1e-5)  # row 0: 0/0 is NaN and passes, as in the original
    if bad.size:
        row = int(bad[0])
        print(f"ERROR: output {row}: expected={expected[row]}, actual={hOutput[row]}, "
              f"relative error={relative[row]}")
        return 1
    print("Multiplication result OK")
    engine.printProfileSummary(sys.stdout, {"showExecutionSteps": "true"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
