"""Tutorial 8 (a poplar-py addition): train a small CNN on the tiles, forward and backward.

The model, on the shipped 8x8 digits (tutorial 5's ``data/``; 1,797 images, 297 of them, drawn
once with a fixed seed, held out for testing)::

    conv 3x3 (8 channels, padding 1) + bias -> relu -> max-pool 2x2 -> fully connected (10)
    -> softmax cross-entropy

Every part runs on the tiles through PopLibs operations: ``poplin.convolution``, ``addBias``,
``popnn.nonLinearity``, ``popnn.pooling.pool``, ``poplin.matMul``, ``popnn.calcLoss``; and
backward ``poplin.matMul`` (the fully connected layer's gradients),
``popnn.pooling.poolInputGradient``, ``popnn.nonLinearityInputGradient``,
``poplin.calculateWeightDeltas`` (the convolution's weight gradient) and ``popops.reduce`` (the
biases'). Plain SGD updates the weights with ``popops.scaledAddTo``.

One program trains on every batch of an epoch (``Repeat``), streaming each batch's images and
labels from host arrays; another counts the correct test predictions. The host shuffles the
training images between epochs and prints ``accuracy N%`` after each.

    poplar-py run tutorials/tut8_cnn/cnn.py [epochs] [--batch B] [--lr ETA] [--seed S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popnn, popops, poputil

DATA = Path(__file__).resolve().parent.parent / "tut5_ml" / "data"
sys.path.insert(0, str(DATA.parent))
from mnist import readMNISTData, readMNISTLabels  # tutorial 5's reader  # noqa: E402

SIDE, CLASSES, CHANNELS, TEST = 8, 10, 8, 297


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("epochs", nargs="?", type=int, default=20)
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)


class Model:
    """The graph's tensors and the programs that train and test the model."""

    def __init__(self, graph: poplar.Graph, batch: int, lr: float) -> None:
        self.graph, self.batch = graph, batch
        g = graph
        self.conv = poplin.ConvParams(poplar.FLOAT, batch, [SIDE, SIDE], [3, 3], 1, CHANNELS,
                                      paddingLower=1, paddingUpper=1)
        self.images = poplin.createInput(g, self.conv, "images")
        self.labels = g.addVariable(poplar.UNSIGNED_INT, [batch], "labels")
        poputil.mapTensorLinearly(g, self.labels)
        self.kernel = poplin.createWeights(g, self.conv, "conv/weights")
        self.pool = popnn.pooling.PoolParams(popnn.PoolingType.MAX, [SIDE, SIDE], [2, 2], [2, 2], [0, 0],
                                             [0, 0], CHANNELS, batch)
        flat = CHANNELS * (SIDE // 2) ** 2
        self.fc = poplin.createMatMulInputRHS(g, poplar.FLOAT, [batch, flat], [flat, CLASSES], "fc/weights")
        self.fc_bias = g.addVariable(poplar.FLOAT, [CLASSES], "fc/bias")
        poputil.mapTensorLinearly(g, self.fc_bias)
        self.numCorrect = g.addVariable(poplar.UNSIGNED_INT, [], "numCorrect")
        g.setTileMapping(self.numCorrect, 0)
        self.lr = lr
        self.forward_seq = prog.Sequence()
        self.probs, self.acts = self._forward(self.forward_seq)

    def _forward(self, seq: prog.Sequence) -> tuple[poplar.Tensor, dict]:
        g = self.graph
        z = poplin.convolution(g, self.images, self.kernel, self.conv, False, seq, "conv")
        self.conv_bias = poplin.createBiases(g, z, "conv/bias")  # laid out like the channels it adds to
        poplin.addBias(g, z, self.conv_bias, seq, "conv/bias")
        a = popnn.nonLinearity(g, popnn.NonLinearityType.RELU, z, seq, "relu")
        p = popnn.pooling.pool(g, self.pool, a, seq, "pool")
        flat = p.reshape([self.batch, p.numElements() // self.batch])
        logits = poplin.matMul(g, flat, self.fc, seq, debugName="fc")
        popops.addInPlace(g, logits, self.fc_bias, seq, "fc/bias")
        probs = popnn.nonLinearity(g, popnn.NonLinearityType.SOFTMAX_STABLE, logits, seq, "softmax")
        return probs, {"a": a, "p": p, "flat": flat}

    def train_step(self) -> prog.Sequence:
        """Forward, loss, backward and the SGD update of one batch."""
        g, seq = self.graph, prog.Sequence()
        seq.add(self.forward_seq)
        loss = g.addVariable(poplar.FLOAT, [self.batch], "loss")
        deltas = g.addVariable(poplar.FLOAT, [self.batch, CLASSES], "deltas")
        for t in (loss, deltas):
            poputil.mapTensorLinearly(g, t)
        seq.add(popnn.calcLoss(g, self.probs, self.labels, loss, deltas, popnn.CROSS_ENTROPY_LOSS, "loss"))
        scale = -self.lr / self.batch
        a, p, flat = self.acts["a"], self.acts["p"], self.acts["flat"]
        d_flat = poplin.matMul(g, deltas, self.fc.transpose(), seq, debugName="fc/inputGrad")
        d_fc = poplin.matMul(g, flat.transpose(), deltas, seq, debugName="fc/weightsGrad")
        d_fc_bias = popops.reduce(g, deltas, [0], popops.Operation.ADD, seq, "fc/biasGrad")
        d_p = d_flat.reshape(p.shape())
        d_a = popnn.pooling.poolInputGradient(g, self.pool, a, p, d_p, False, seq, debugName="pool/grad")
        d_z = popnn.nonLinearityInputGradient(g, popnn.NonLinearityType.RELU, a, d_a, seq, "relu/grad")
        d_kernel = poplin.calculateWeightDeltas(g, d_z, self.images, self.conv, seq, "conv/weightsGrad")
        d_conv_bias = popops.reduce(g, d_z, [0, 2, 3], popops.Operation.ADD, seq, "conv/biasGrad")
        for weights, grad in ((self.fc, d_fc), (self.fc_bias, d_fc_bias), (self.kernel, d_kernel),
                              (self.conv_bias, d_conv_bias)):
            popops.scaledAddTo(g, weights, grad, scale, seq, debugName=f"{weights.name}/update")
        return seq

    def test_step(self) -> prog.Sequence:
        """Forward and the count of correct predictions of one batch."""
        g, seq = self.graph, prog.Sequence()
        seq.add(self.forward_seq)
        loss = g.addVariable(poplar.FLOAT, [self.batch], "testLoss")
        deltas = g.addVariable(poplar.FLOAT, [self.batch, CLASSES], "testDeltas")
        for t in (loss, deltas):
            poputil.mapTensorLinearly(g, t)
        seq.add(popnn.calcLoss(g, self.probs, self.labels, loss, deltas, self.numCorrect,
                               popnn.CROSS_ENTROPY_LOSS, "testLoss"))
        return seq


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    pixels, count, size = readMNISTData(DATA / "train-images-idx3-ubyte")
    labels = readMNISTLabels(DATA / "train-labels-idx1-ubyte")
    images = (pixels.reshape(count, size) * 256 / 16).astype(np.float32)  # the digits' 0..16 to 0..1
    held_out = np.random.default_rng(0).permutation(count)  # one fixed split, whatever --seed says
    images, labels = images[held_out], labels[held_out]
    train_x, test_x = images[:-TEST], images[-TEST:]
    train_y, test_y = labels[:-TEST], labels[-TEST:]
    batch = args.batch
    train_batches, test_batches = len(train_x) // batch, len(test_x) // batch

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    for lib in (popops, poplin, popnn):
        lib.addCodelets(graph)
    model = Model(graph, batch, args.lr)
    in_images = graph.addHostToDeviceFIFO("images", poplar.FLOAT, batch * size)
    in_labels = graph.addHostToDeviceFIFO("labels", poplar.UNSIGNED_INT, batch)
    feed = prog.Sequence([prog.Copy(in_images, model.images.reshape([batch * size])),
                          prog.Copy(in_labels, model.labels)])
    rng = np.random.default_rng(args.seed)
    init = {model.kernel: rng.normal(0, np.sqrt(2 / 9), model.kernel.shape()),
            model.fc: rng.normal(0, np.sqrt(1 / model.fc.dim(0)), model.fc.shape()),
            model.conv_bias: np.zeros(model.conv_bias.shape()), model.fc_bias: np.zeros(CLASSES)}
    for k, t in enumerate(init):
        graph.createHostWrite(f"init{k}", t)
    graph.createHostWrite("numCorrect", model.numCorrect)
    graph.createHostRead("correct", model.numCorrect)
    train = prog.Repeat(train_batches, prog.Sequence([feed, model.train_step()]))
    test = prog.Repeat(test_batches, prog.Sequence([feed, model.test_step()]))
    engine = poplar.Engine(graph, [train, test])
    engine.load(device)
    for k, values in enumerate(init.values()):
        engine.writeTensor(f"init{k}", values.astype(np.float32))

    host_x = np.empty((train_batches * batch, size), np.float32)
    host_y = np.empty(train_batches * batch, np.uint32)
    test_n = test_batches * batch
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(train_x))[:len(host_x)]
        host_x[:], host_y[:] = train_x[order], train_y[order]
        engine.connectStream("images", host_x)
        engine.connectStream("labels", host_y)
        engine.run(0)
        engine.writeTensor("numCorrect", np.zeros((), np.uint32))
        engine.connectStream("images", np.ascontiguousarray(test_x[:test_n]))
        engine.connectStream("labels", np.ascontiguousarray(test_y[:test_n]))
        engine.run(1)
        correct = int(engine.readTensor("correct"))
        print(f"Epoch {epoch}: accuracy {100 * correct / test_n:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
