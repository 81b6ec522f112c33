"""Workloads several benchmarks run: each built, loaded and given random inputs, ready to run."""

from __future__ import annotations

import os
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, poplin, popnn, popops, poputil

ROOT = Path(__file__).resolve().parent.parent


def tut7(rows: int, cols: int, options: dict | None = None, cpp: bool = False
         ) -> tuple[poplar.Engine, np.ndarray, np.ndarray]:
    """Tutorial 7's matrix-vector program (its own codelets, the C++ ones with ``cpp``, default
    tiles): the engine, the matrix and the vector; the product is read with ``readTensor("out")``."""
    tut = ROOT / "tutorials" / "tut7_matrix_vector_opt"
    ns = runpy.run_path(str(tut / "tut7.py"), run_name="tut7")
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(str(tut / ("matrix_mul_codelets.cpp" if cpp else "matrix_mul_codelets.py")))
    matrix = graph.addVariable(poplar.FLOAT, [rows, cols], "matrix")
    inp = graph.addVariable(poplar.FLOAT, [cols], "inputVector")
    out = graph.addVariable(poplar.FLOAT, [rows], "outputVector")
    with open(os.devnull, "w") as quiet:  # the tutorial prints its cost model's choice
        stdout, sys.stdout = sys.stdout, quiet
        try:
            program = ns["buildMultiplyProgram"](graph, matrix, inp, out, "in" if cpp else "inp")
        finally:
            sys.stdout = stdout
    for name, t in (("matrix", matrix), ("in", inp)):
        graph.createHostWrite(name, t)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, program, options)
    engine.load(device)
    rng = np.random.default_rng(0)
    m = rng.standard_normal((rows, cols)).astype(np.float32)
    v = rng.standard_normal(cols).astype(np.float32)
    engine.writeTensor("matrix", m)
    engine.writeTensor("in", v)
    return engine, m, v


def matmul(size: int, options: dict | None = None, replicas: int = 1
           ) -> tuple[poplar.Engine, np.ndarray, np.ndarray]:
    """poplin.matMul of two ``size``-square matrices (operands from createMatMulInputLHS/RHS), on
    ``replicas`` replicas of one IPU each: the engine and the operands, written to every replica;
    the product is read with ``readTensor("c")``."""
    model = poplar.IPUModel()
    model.numIPUs = replicas
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget(), replication_factor=replicas)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    seq = prog.Sequence()
    a = poplin.createMatMulInputLHS(graph, poplar.FLOAT, [size, size], [size, size], "A")
    b = poplin.createMatMulInputRHS(graph, poplar.FLOAT, [size, size], [size, size], "B")
    c = poplin.matMul(graph, a, b, seq, "C")
    graph.createHostWrite("a", a)
    graph.createHostWrite("b", b)
    graph.createHostRead("c", c)
    engine = poplar.Engine(graph, seq, options)
    engine.load(device)
    rng = np.random.default_rng(0)
    ha, hb = (rng.standard_normal((size, size)).astype(np.float32) for _ in range(2))
    engine.writeTensor("a", ha)
    engine.writeTensor("b", hb)
    return engine, ha, hb


@dataclass(frozen=True)
class BertSizes:
    """The sizes of one encoder layer (BERT-base by default)."""

    hidden: int = 768
    heads: int = 12
    ffn: int = 3072
    seq: int = 128
    eps: float = 1e-12  # layer norm
    lr: float = 0.01  # the SGD step on the FFN's second weight


BERT_BASE = BertSizes()


@dataclass
class BertLayer:
    """A built BERT encoder layer: the graph, its program, the host data to write and the reference.

    ``weights`` go to every replica, ``inputs[r]`` (``x`` and the FFN output gradient ``z``) to
    replica ``r``; the program writes the layer's output ``out`` and updates ``w2`` in place.
    """

    graph: poplar.Graph
    program: prog.Sequence
    sizes: BertSizes
    weights: dict[str, np.ndarray]
    inputs: list[dict[str, np.ndarray]]

    def write(self, engine: poplar.Engine) -> None:
        for name, value in self.weights.items():
            engine.writeTensor(name, value)
        for r, feeds in enumerate(self.inputs):
            for name, value in feeds.items():
                engine.writeTensor(name, value, replicaIndex=r)

    def reference(self) -> tuple[list[np.ndarray], np.ndarray]:
        """numpy's outputs of every replica (float32) and the updated ``w2`` (float64)."""
        w = {k: v.astype(np.float64) for k, v in self.weights.items()}
        outs, grad = [], np.zeros_like(w["w2"])  # a running sum: R gradients would take R x 19 MB
        for feeds in self.inputs:
            out, a1 = _bert_forward(w, feeds["x"].astype(np.float64), self.sizes)
            outs.append(out.astype(np.float32))
            grad += a1.T @ feeds["z"].astype(np.float64)
        return outs, w["w2"] - self.sizes.lr * grad / len(self.inputs)

    def check(self, engine: poplar.Engine, rtol: float = 2e-3, atol: float = 2e-3) -> None:
        """Raise AssertionError unless every replica's output and the updated ``w2`` match numpy."""
        outs, w2 = self.reference()
        for r, expected in enumerate(outs):
            for handle, value in (("out", expected), ("w2/updated", w2)):
                np.testing.assert_allclose(engine.readTensor(handle, replicaIndex=r), value, rtol=rtol,
                                           atol=atol, err_msg=f"replica {r}: {handle}")


def _gelu(x: np.ndarray) -> np.ndarray:
    """popnn's GELU (the tanh approximation)."""
    return 0.5 * x * (1 + np.tanh(0.7978845608 * x * (1 + 0.044715 * x * x)))


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    var = (x * x).mean(axis=1, keepdims=True) - mean * mean
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _bert_forward(w: dict[str, np.ndarray], x: np.ndarray, s: BertSizes) -> tuple[np.ndarray, np.ndarray]:
    """The layer's output and the GELU activations ``a1`` (numpy)."""
    d = s.hidden // s.heads

    def heads(t: np.ndarray) -> np.ndarray:  # [seq, hidden] -> [heads, seq, d]
        return t.reshape(s.seq, s.heads, d).transpose(1, 0, 2)

    q, k, v = (heads(x @ w[f"w{n}"] + w[f"b{n}"]) for n in "qkv")
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    probs = np.exp(scores - scores.max(axis=2, keepdims=True))
    probs /= probs.sum(axis=2, keepdims=True)
    ctx = (probs @ v).transpose(1, 0, 2).reshape(s.seq, s.hidden)
    h1 = _layer_norm(x + ctx @ w["wo"] + w["bo"], w["gamma1"], w["beta1"], s.eps)
    a1 = _gelu(h1 @ w["w1"] + w["b1"])
    out = _layer_norm(h1 + a1 @ w["w2"] + w["b2"], w["gamma2"], w["beta2"], s.eps)
    return out, a1


def bert_layer(target: poplar.Target, replicas: int = 1, sizes: BertSizes = BERT_BASE,
               seed: int = 0) -> BertLayer:
    """One BERT encoder layer (post-layer-norm, GELU FFN, float) built with the library on
    ``Graph(target, replication_factor=replicas)`` (``target`` has one IPU per replica): the
    forward pass, the FFN's second weight gradient ``a1^T z`` averaged over the replicas with
    ``gcl.allReduceInPlaceCrossReplica(MEAN)`` and one ``popops.scaledAddTo`` SGD step on ``w2``."""
    s = sizes
    graph = poplar.Graph(target, replication_factor=replicas)
    for lib in (popops, poplin, popnn):
        lib.addCodelets(graph)
    seq = prog.Sequence()
    d = s.hidden // s.heads
    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}
    params: dict[str, poplar.Tensor] = {}

    def param(name: str, shape: list[int], scale: float = 0.02, offset: float = 0.0) -> poplar.Tensor:
        if len(shape) == 2:
            t = poplin.createMatMulInputRHS(graph, poplar.FLOAT, [s.seq, shape[0]], shape, name)
        else:
            t = graph.addVariable(poplar.FLOAT, shape, name)
            poputil.mapTensorLinearly(graph, t)
        graph.createHostWrite(name, t)
        weights[name] = (offset + scale * rng.standard_normal(shape)).astype(np.float32)
        params[name] = t
        return t

    def dense(a: poplar.Tensor, n: str, cols: int) -> poplar.Tensor:
        y = poplin.matMul(graph, a, param(f"w{n}", [a.dim(1), cols]), seq, f"dense{n}")
        popops.addInPlace(graph, y, param(f"b{n}", [cols]), seq, f"bias{n}")
        return y

    def layer_norm(t: poplar.Tensor, n: str) -> poplar.Tensor:
        mean, isd = popnn.ln.layerNormStatistics(graph, t, s.eps, seq, debugName=f"ln{n}/stats")
        gamma, beta = param(f"gamma{n}", [s.hidden], 0.1, 1.0), param(f"beta{n}", [s.hidden], 0.1)
        return popnn.ln.layerNormalise(graph, t, gamma, beta, mean, isd, seq, f"ln{n}")[0]

    x = poplin.createMatMulInputLHS(graph, poplar.FLOAT, [s.seq, s.hidden], [s.hidden, s.hidden], "x")
    z = poplin.createMatMulInputRHS(graph, poplar.FLOAT, [s.ffn, s.seq], [s.seq, s.hidden], "z")
    graph.createHostWrite("x", x)
    graph.createHostWrite("z", z)
    q, k, v = (dense(x, n, s.hidden).reshape([s.seq, s.heads, d]) for n in "qkv")
    scores = poplin.matMulGrouped(graph, q.dimShuffle([1, 0, 2]), k.dimShuffle([1, 2, 0]), seq, "scores")
    popops.mulInPlace(graph, scores, 1 / np.sqrt(d), seq, "scale")
    probs = popnn.nonLinearity(graph, popnn.NonLinearityType.SOFTMAX_STABLE, scores, seq, "softmax")
    ctx = poplin.matMulGrouped(graph, probs, v.dimShuffle([1, 0, 2]), seq, "context")
    attn = dense(ctx.dimShuffle([1, 0, 2]).reshape([s.seq, s.hidden]), "o", s.hidden)
    popops.addInPlace(graph, attn, x, seq, "residual1")
    h1 = layer_norm(attn, "1")
    a1 = popnn.nonLinearity(graph, popnn.NonLinearityType.GELU, dense(h1, "1", s.ffn), seq, "gelu")
    f = dense(a1, "2", s.hidden)
    popops.addInPlace(graph, f, h1, seq, "residual2")
    out = layer_norm(f, "2")
    graph.createHostRead("out", out)
    grad = poplin.matMul(graph, a1.transpose(), z, seq, "w2Grad")
    gcl.allReduceInPlaceCrossReplica(graph, grad, gcl.CollectiveOperator.MEAN, seq, "w2Grad/mean")
    popops.scaledAddTo(graph, params["w2"], grad, -s.lr, seq, "sgd")
    graph.createHostRead("w2/updated", params["w2"])
    inputs = [{"x": rng.standard_normal((s.seq, s.hidden)).astype(np.float32),
               "z": (0.1 * rng.standard_normal((s.seq, s.hidden))).astype(np.float32)}
              for _ in range(replicas)]
    return BertLayer(graph, seq, s, weights, inputs)
