"""Tutorial 5: a basic machine-learning example (a port of Graphcore's ``tut5_ml/regression-demo.cpp``).

Trains logistic regression, ``softmax(W x + b)`` with a cross-entropy loss, by per-example SGD on
the device: ``Repeat(batchSize, ...)`` streams one image and its label at a time, runs the
model (``poplin.matMul``, ``popops.add``, ``popnn.nonLinearity(SOFTMAX)``), ``popnn.calcLoss``
(which also counts correct predictions into ``numCorrect``) and updates ``b`` and ``W`` with
``popops.scaledAddTo``. The host runs the program once per batch and prints the running accuracy.

    poplar-py run tutorials/tut5_ml/regression_demo.py [-IPU] [epochs] [percent] [--data DIR]
                                                      [--replicas R]

* ``-IPU``: the original's hardware path: the first device of 1 IPU (R with ``--replicas``) that
  ``DeviceManager`` lists and that attaches, here a simulated Mk2 IPU of 1472 tiles.
* ``epochs`` (default 50) and ``percent`` of the images to use (default 100), as the original:
  the percentage is only read when both are given.
* ``--data DIR`` (anywhere on the line): a directory holding MNIST's ``train-images-idx3-ubyte``
  and ``train-labels-idx1-ubyte``. Without it the program trains on the shipped 8x8 digits
  (``data/``, 1,797 images of 64 pixels; see ``data/README.md``).
* ``--replicas R`` (a poplar-py addition): data-parallel training on R replicas of one IPU each
  (the device gets R IPUs). Every replica takes its share of each batch (``batchSize // R``
  consecutive images of it) from its own stream, computes the gradients of its image, and the
  replicas average them with ``gcl.allReduceInPlaceCrossReplica(MEAN)`` before each replica makes
  the same update, so the weights stay identical on every replica. One update now averages R
  images, so ``eta`` is multiplied by R (the linear scaling rule) to cover the same distance in an
  epoch. The accuracy counts every replica's correct predictions.

Differences from the original, all because of the smaller default data set:

* Sizes come from the IDX headers (64 pixels instead of 784).
* ``batchSize`` is the original's 300, but at most half the images used, so that a small
  subset still gives two batches per epoch (as the official tests' 1% MNIST run).
  Batches per epoch and the status-line threshold use the original's formulas
  (``numberOfImages / batchSize`` and ``numberOfImages / 20``, integer divisions). On the digits
  that gives 5 batches per epoch and a line after each, ending at ``100%``.
* The learning rate ``eta`` is the original's 0.0009 on MNIST (``--data``) but 0.1 on the digits:
  one epoch there is 33 times fewer updates, from the same N(0, 1) initial weights.
* The initial weights are N(0, 1) draws from ``numpy.random.default_rng(5489)`` (5489 is
  ``std::mt19937``'s default seed; the values differ from libstdc++'s), W first, then b.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, poplin, popnn, popops, poputil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mnist import readMNISTData, readMNISTLabels  # the tutorial's own reader

DIGITS = Path(__file__).resolve().parent / "data"
ETA_MNIST = 0.0009  # the original's learning rate
ETA_DIGITS = 0.1
SEED = 5489


def parse_args(argv: list[str]) -> tuple[bool, int, float, Path, int]:
    """(useIPU, epochs, percent, data directory, replicas), read as the original reads argv."""
    args = list(argv[1:])
    data, replicas = DIGITS, 1
    for flag in ("--data", "--replicas"):
        if flag in args:
            i = args.index(flag)
            if i + 1 >= len(args):
                sys.exit("usage: regression_demo.py [-IPU] [epochs] [percent] [--data DIR] [--replicas R]")
            if flag == "--data":
                data = Path(args[i + 1])
            else:
                replicas = int(args[i + 1])
            del args[i:i + 2]
    use_ipu = bool(args) and args[0] == "-IPU"
    if use_ipu:
        args = args[1:]
    epochs = int(args[0]) if args else 50
    percent = float(args[1]) if len(args) == 2 else 100.0
    return use_ipu, epochs, percent, data, replicas


def createRandomInitializers(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` draws from N(0, 1), as floats."""
    return rng.standard_normal(n).astype(np.float32)


def main(argv: list[str]) -> int:
    use_ipu, epochs, percent, data_dir, replicas = parse_args(argv)
    device = None
    if use_ipu:
        print("Using the IPU")
        manager = poplar.DeviceManager.createDeviceManager()
        device = next((d for d in manager.getDevices(poplar.TargetType.IPU, replicas) if d.attach()), None)
        if device is None:
            print(f"No device of {replicas} IPUs could be attached", file=sys.stderr)
            return 1
    else:
        print("Using the IPU Model")
    train(epochs, percent, data_dir, replicas, device)
    if device is not None:
        device.detach()
    return 0


def train(epochs: int, percent: float, data_dir: Path, replicas: int = 1,
          device: poplar.Device | None = None) -> poplar.Engine:
    """Build the model on ``device`` (by default an IPU Model of ``replicas`` IPUs of 4 tiles),
    train it, print the status lines and return the engine (``weightsOut`` and ``biasesOut``
    read W and b back, on any replica)."""
    if device is None:
        ipuModel = poplar.IPUModel()
        ipuModel.numIPUs = replicas
        ipuModel.tilesPerIPU = 4
        device = ipuModel.createDevice()

    data, total, pixels = readMNISTData(data_dir / "train-images-idx3-ubyte")
    labels = readMNISTLabels(data_dir / "train-labels-idx1-ubyte")
    numberOfImages = int(np.floor(percent / 100.0 * total))
    eta = (ETA_DIGITS if data_dir == DIGITS else ETA_MNIST) * replicas
    batchSize = max(1, min(300, numberOfImages // 2))
    share = batchSize // replicas  # images of each batch that one replica trains on
    if replicas > 1:
        print(f"Training on {replicas} replicas: each takes {share} images of every batch of {batchSize}; "
              "gradients all-reduced (MEAN) before each update")

    graph = poplar.Graph(device.getTarget(), replication_factor=replicas)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    popnn.addCodelets(graph)

    # The model: y = softmax(W x + b), with the weights and biases written from the host.
    x = graph.addVariable(poplar.FLOAT, [pixels, 1], "x")
    W = graph.addVariable(poplar.FLOAT, [10, pixels], "W")
    b = graph.addVariable(poplar.FLOAT, [10, 1], "b")
    numCorrect = graph.addVariable(poplar.UNSIGNED_INT, [1], "numCorrect")
    expected = graph.addVariable(poplar.UNSIGNED_INT, [1], "expected")
    loss = graph.addVariable(poplar.FLOAT, [1], "loss")
    delta = graph.addVariable(poplar.FLOAT, [1, 10], "delta")
    for t in (x, W, b, numCorrect, expected, loss, delta):
        poputil.mapTensorLinearly(graph, t)
    graph.createHostWrite("weights", W)
    graph.createHostWrite("biases", b)
    graph.createHostRead("weightsOut", W)
    graph.createHostRead("biasesOut", b)

    # One SGD step for the image in x and the label in expected.
    mProg = prog.Sequence()
    t = poplin.matMul(graph, W, x, mProg, "Wx")
    y = popops.add(graph, t, b, mProg, "Wx+b")
    softmaxY = popnn.nonLinearity(graph, popnn.NonLinearityType.SOFTMAX, y.transpose(), mProg,
                                  "softmax(Wx+b)")
    mProg.add(popnn.calcLoss(graph, softmaxY, expected, loss, delta, numCorrect, popnn.CROSS_ENTROPY_LOSS,
                             "dE/d(Wx+b)"))
    if replicas == 1:
        popops.scaledAddTo(graph, b, delta.transpose(), -eta, mProg, debugName="b += -eta * dE/db")
        wGrad = poplin.matMul(graph, delta.transpose(), x.transpose(), mProg, "dE/dW")
    else:
        # Every replica's gradients, averaged over the replicas, then the same update everywhere.
        wGrad = poplin.matMul(graph, delta.transpose(), x.transpose(), mProg, "dE/dW")
        gradients = poplar.concat([wGrad.flatten(), delta.flatten()])
        gcl.allReduceInPlaceCrossReplica(graph, gradients, gcl.CollectiveOperator.MEAN, mProg,
                                         "mean gradients")
        popops.scaledAddTo(graph, b, delta.transpose(), -eta, mProg, debugName="b += -eta * dE/db")
    popops.scaledAddTo(graph, W, wGrad, -eta, mProg, debugName="W += -eta * dE/dW")

    # Streams: images and labels in, the number of correct predictions out.
    dataIn = graph.addHostToDeviceFIFO("data", poplar.FLOAT, pixels)
    labelIn = graph.addHostToDeviceFIFO("labels", poplar.UNSIGNED_INT, 1)
    numCorrectOut = graph.addDeviceToHostFIFO("hostNumCorrect", poplar.UNSIGNED_INT, 1)

    # Train on one batch, counting the correct predictions.
    zero = graph.addConstant(poplar.UNSIGNED_INT, [1], 0)
    graph.setTileMapping(zero, 0)
    trainProg = prog.Sequence([
        prog.Copy(zero, numCorrect),
        prog.Repeat(share, prog.Sequence([prog.Copy(dataIn, x), prog.Copy(labelIn, expected), mProg])),
        prog.Copy(numCorrect, numCorrectOut),
    ])

    engine = poplar.Engine(graph, trainProg, {"debug.retainDebugInformation": "true"})
    engine.load(device)
    batches = numberOfImages // batchSize
    images = data[:numberOfImages * pixels].reshape(numberOfImages, pixels)
    hNumCorrect = np.zeros((replicas, 1), dtype=np.uint32)
    if replicas == 1:
        engine.connectStream("data", np.ascontiguousarray(data[:numberOfImages * pixels]))
        engine.connectStream("labels", np.ascontiguousarray(labels[:numberOfImages]))
        engine.connectStream("hostNumCorrect", hNumCorrect[0])
    else:
        for r in range(replicas):  # replica r: images [r * share, (r + 1) * share) of every batch
            mine = np.concatenate([np.arange(k * batchSize + r * share, k * batchSize + (r + 1) * share)
                                   for k in range(batches)])
            engine.connectStream("data", np.ascontiguousarray(images[mine]).reshape(-1), replicaIndex=r)
            engine.connectStream("labels", np.ascontiguousarray(labels[mine]), replicaIndex=r)
            engine.connectStream("hostNumCorrect", hNumCorrect[r], replicaIndex=r)

    rng = np.random.default_rng(SEED)
    engine.writeTensor("weights", createRandomInitializers(rng, 10 * pixels).reshape(10, pixels))
    engine.writeTensor("biases", createRandomInitializers(rng, 10).reshape(10, 1))

    totalCorrect = totalTested = 0
    for epoch in range(1, epochs + 1):
        for batch in range(1, batches + 1):
            engine.run(0)
            totalCorrect += int(hNumCorrect.sum())
            totalTested += share * replicas
            if epoch == 1 and batch == 1:
                engine.printProfileSummary(sys.stdout)
            # Status line: all divisions are integer divisions, as in the original.
            if totalTested > numberOfImages // 20:
                print(f"Epoch {epoch} ({batch * 100 // batches}%), accuracy "
                      f"{totalCorrect * 100 // totalTested}%", flush=True)
                totalCorrect = totalTested = 0
    return engine


if __name__ == "__main__":
    sys.exit(main(sys.argv))
