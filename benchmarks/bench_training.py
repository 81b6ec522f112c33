"""One training step of tutorial 8's CNN on the tiles, beside the same step in numpy.

    taskset -c 0 env POPLAR_PY_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        python benchmarks/bench_training.py [--batch B]

The step is the tutorial's: stream a batch of 8x8 digits, conv 3x3 (8 channels) + bias, relu,
max-pool 2x2, fully connected, softmax cross-entropy, the backward pass and the SGD update of
every weight (``Model.train_step`` in ``tutorials/tut8_cnn/cnn.py``), as one ``engine.run``.
numpy does the same arithmetic in float32 (im2col for the convolution). Times are the best of
several runs; the ratio is engine over numpy.
"""

from __future__ import annotations

import argparse
import resource
import runpy
from pathlib import Path

import numpy as np
from timing import best

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popnn, popops

ROOT = Path(__file__).resolve().parent.parent
CNN = runpy.run_path(str(ROOT / "tutorials" / "tut8_cnn" / "cnn.py"), run_name="cnn")
C, SIDE, CLASSES, LR = CNN["CHANNELS"], CNN["SIDE"], CNN["CLASSES"], 0.02


def engine_step(batch: int, x: np.ndarray, y: np.ndarray) -> float:
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    for lib in (popops, poplin, popnn):
        lib.addCodelets(graph)
    model = CNN["Model"](graph, batch, LR)
    images = graph.addHostToDeviceFIFO("images", poplar.FLOAT, x.size)
    labels = graph.addHostToDeviceFIFO("labels", poplar.UNSIGNED_INT, batch)
    step = prog.Sequence([prog.Copy(images, model.images.reshape([x.size])), prog.Copy(labels, model.labels),
                          model.train_step()])
    engine = poplar.Engine(graph, step)
    engine.load(device)
    engine.connectStream("images", x)
    engine.connectStream("labels", y)
    return best(engine.run, 10)


def numpy_step(batch: int, x: np.ndarray, y: np.ndarray) -> float:
    rng = np.random.default_rng(0)
    k = rng.normal(0, 0.5, (C, 9)).astype(np.float32)
    w = rng.normal(0, 0.1, (C * (SIDE // 2) ** 2, CLASSES)).astype(np.float32)
    bc, bf = np.zeros(C, np.float32), np.zeros(CLASSES, np.float32)
    images = x.reshape(batch, SIDE, SIDE)

    def step() -> None:
        nonlocal k, w, bc, bf
        padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
        cols = np.stack([padded[:, i:i + SIDE, j:j + SIDE].reshape(batch, -1) for i in range(3)
                         for j in range(3)], 1)
        z = np.einsum("ck,bkp->bcp", k, cols) + bc[None, :, None]
        a = np.maximum(z, 0).reshape(batch, C, SIDE, SIDE)
        windows = a.reshape(batch, C, SIDE // 2, 2, SIDE // 2, 2)
        p = windows.max(axis=(3, 5))
        f = p.reshape(batch, -1)
        logits = f @ w + bf
        e = np.exp(logits - logits.max(1, keepdims=True))
        d = e / e.sum(1, keepdims=True)
        d[np.arange(batch), y] -= 1
        dw, dbf, dp = f.T @ d, d.sum(0), (d @ w.T).reshape(p.shape)
        da = ((windows == p[:, :, :, None, :, None]) * dp[:, :, :, None, :, None]).reshape(a.shape)
        dz = (da * (a > 0)).reshape(batch, C, -1)
        dk, dbc = np.einsum("bcp,bkp->ck", dz, cols), dz.sum((0, 2))
        s = np.float32(LR / batch)
        w, bf, k, bc = w - s * dw, bf - s * dbf, k - s * dk, bc - s * dbc

    return best(step, 50)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=50)
    batch = parser.parse_args().batch
    rng = np.random.default_rng(1)
    x = rng.random((batch, SIDE * SIDE), dtype=np.float32)
    y = rng.integers(0, CLASSES, batch).astype(np.uint32)
    ours, ref = engine_step(batch, x, y), numpy_step(batch, x, y)
    print(f"CNN training step, batch {batch}: engine {ours * 1e3:.2f} ms, numpy {ref * 1e3:.3f} ms, "
          f"ratio {ours / ref:.1f}x")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
