"""Tutorial 9 (a poplar-py addition): train BERT-base encoder layers data-parallel on a simulated Pod.

The model, per replica, on a micro-batch of ``--batch`` sequences of ``--seq`` tokens whose
embeddings (``[batch * seq, 768]``) arrive from a host stream at every step, with a fixed target
(random normal, 16 numbers per token; each replica keeps its own micro-batch, so the loss falls
from step to step)::

    L x encoder layer (hidden 768, 12 heads, FFN 3072 with GELU, residuals, post-layer-norm)
    -> linear head (768 -> 16) -> mean-squared error against the target

Forward and backward run on the tiles with PopLibs: ``poplin.matMul`` for the projections,
``poplin.matMulGrouped`` for attention's scores and context (and their gradients),
``popnn.nonLinearity`` (SOFTMAX_STABLE, GELU) and ``nonLinearityInputGradient``,
``popnn.ln`` layer norms and their gradients, ``popops.reduce`` for the biases' gradients.
Every parameter is a slice of one ``params`` buffer and every gradient a slice of one
``grads`` buffer, so the replicas average their gradients with one
``gcl.allReduceInPlaceCrossReplica(MEAN)`` and one ``popops.scaledAddTo`` makes the SGD step.

Each step prints its loss (the mean over replicas), the simulated time of the step at the
target's clock, the Pod's throughput in sequences per second, and how the step's cycles split
between compute, exchange on the IPUs, the IPU-Link exchange of the all-reduce, host transfers
and syncs (each phase of a program step lasts as long as its slowest tile).

    poplar-py run tutorials/tut9_bert/bert.py [--replicas R] [--seq S] [--layers L] [--steps N]
                                              [--batch B] [--half] [--lr ETA] [--ipus-per-replica I]

Defaults: a Bow Pod16 (16 replicas of one IPU each), S=128, L=1, N=3, B=1. A replica of several
IPUs (I, by default one IPU per three layers) runs each layer on its IPU's virtual graph and
passes activations and gradients on over the IPU-Links (model sharding, without pipelining). ``--half`` keeps
weights and activations in half, with float partials in the matMuls and float statistics in the
layer norms, as PopLibs does.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, poplin, popnn, popops, poputil
from poplibs_py.popops import expr as pe

NL = popnn.NonLinearityType
#: encoder layers (float, with their gradients and activations) that fit one IPU's tile memory
LAYERS_PER_IPU = 3


@dataclass(frozen=True)
class Sizes:
    """The encoder's sizes (BERT-base by default) and the micro-batch."""

    hidden: int = 768
    heads: int = 12
    ffn: int = 3072
    seq: int = 128
    layers: int = 1
    batch: int = 1
    outputs: int = 16  # the linear head's width
    eps: float = 1e-6  # layer norm

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def parameter_shapes(s: Sizes) -> dict[str, list[int]]:
    """Every parameter's name and shape, in the order they lie in the ``params`` buffer."""
    shapes: dict[str, list[int]] = {}
    for layer in range(s.layers):
        p = f"l{layer}."
        for n in "qkvo":
            shapes[p + f"w{n}"], shapes[p + f"b{n}"] = [s.hidden, s.hidden], [s.hidden]
        shapes[p + "g1"], shapes[p + "be1"] = [s.hidden], [s.hidden]
        shapes[p + "w1"], shapes[p + "b1"] = [s.hidden, s.ffn], [s.ffn]
        shapes[p + "w2"], shapes[p + "b2"] = [s.ffn, s.hidden], [s.hidden]
        shapes[p + "g2"], shapes[p + "be2"] = [s.hidden], [s.hidden]
    shapes["head.w"], shapes["head.b"] = [s.hidden, s.outputs], [s.outputs]
    return shapes


def initial_parameters(s: Sizes, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights drawn as BERT's (normal, 0.02), biases zero, layer-norm gains one."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in parameter_shapes(s).items():
        short = name.split(".")[-1]
        if short.startswith("g"):
            out[name] = np.ones(shape, np.float32)
        elif short.startswith("b"):
            out[name] = np.zeros(shape, np.float32)
        else:
            out[name] = (0.02 * rng.standard_normal(shape)).astype(np.float32)
    return out


class Bert:
    """The graph's tensors and the training step's program, for one replica."""

    def __init__(self, graph: poplar.Graph, s: Sizes, lr: float, half: bool = False, ipus: int = 1) -> None:
        self.top, self.s = graph, s
        tiles = graph.getTarget().getNumTiles() // ipus
        # the replica's IPUs, each a virtual graph of its tiles: layer l runs on IPU l * ipus // L
        self.shards = [graph] if ipus == 1 else [graph.createVirtualGraph(i * tiles, (i + 1) * tiles)
                                                 for i in range(ipus)]
        self.graph = self.shards[0]  # the IPU the model is being built on
        self.dtype = poplar.HALF if half else poplar.FLOAT
        self.seq = prog.Sequence(name="step")
        shapes = parameter_shapes(s)
        total = sum(math.prod(shape) for shape in shapes.values())
        self.params = graph.addVariable(self.dtype, [total], "params")
        self.grads = graph.addVariable(self.dtype, [total], "grads")
        self.param, self.grad, self.offsets = {}, {}, {}
        at = 0
        for name, shape in shapes.items():
            n = math.prod(shape)
            self.offsets[name] = (at, at + n)
            for t in (self.params, self.grads):  # on the IPU of the parameter's layer
                poputil.mapTensorLinearly(self.shard(name), t.slice(at, at + n))
            self.param[name] = self.params.slice(at, at + n).reshape(shape)
            self.grad[name] = self.grads.slice(at, at + n).reshape(shape)
            at += n
        self.x_in = graph.addHostToDeviceFIFO("embeddings", self.dtype, s.tokens * s.hidden)
        self.y_in = graph.addHostToDeviceFIFO("target", self.dtype, s.tokens * s.outputs)
        self.loss_out = graph.addDeviceToHostFIFO("loss", poplar.FLOAT, 1)
        self.x = poplin.createMatMulInputLHS(graph, self.dtype, [s.tokens, s.hidden], [s.hidden, s.hidden],
                                             "x")
        self.y = graph.addVariable(self.dtype, [s.tokens, s.outputs], "y")
        poputil.mapTensorLinearly(self.shards[-1], self.y)
        self.seq.add(prog.Copy(self.x_in, self.x))
        self.seq.add(prog.Copy(self.y_in, self.y))
        self._build(lr)

    def shard(self, name: str) -> poplar.Graph:
        """The IPU (virtual graph) of parameter ``name``'s layer; the head's is the last."""
        layer = int(name[1:name.index(".")]) if name.startswith("l") else self.s.layers - 1
        return self.shards[layer * len(self.shards) // self.s.layers]

    def onto(self, shard: poplar.Graph, t: poplar.Tensor, name: str) -> poplar.Tensor:
        """Build on ``shard`` from now on; ``t``, made on the IPU before, copied to it over the
        IPU-Links when that is another IPU (as sharded models pass activations on)."""
        if shard is self.graph:
            return t
        self.graph = shard
        moved = shard.addVariable(t.elementType(), t.shape(), name)
        poputil.mapTensorLinearly(shard, moved)
        self.seq.add(prog.Copy(t, moved))
        return moved

    # ---- building blocks -------------------------------------------------------------------
    def mm(self, a: poplar.Tensor, b: poplar.Tensor, name: str) -> poplar.Tensor:
        return poplin.matMul(self.graph, a, b, self.seq, name, {"partialsType": "float"})

    def mm_into(self, a: poplar.Tensor, b: poplar.Tensor, out: poplar.Tensor, name: str) -> None:
        poplin.matMulWithOutput(self.graph, a, b, out, self.seq, name, {"partialsType": "float"})

    def mm_grouped(self, a: poplar.Tensor, b: poplar.Tensor, name: str) -> poplar.Tensor:
        return poplin.matMulGrouped(self.graph, a, b, self.seq, name, {"partialsType": "float"})

    def heads(self, t: poplar.Tensor) -> poplar.Tensor:
        """``[tokens, hidden]`` as ``[batch * heads, seq, head_dim]``."""
        s = self.s
        return t.reshape([s.batch, s.seq, s.heads, s.head_dim]).dimShuffle([0, 2, 1, 3]).reshape(
            [s.batch * s.heads, s.seq, s.head_dim])

    def merge(self, t: poplar.Tensor) -> poplar.Tensor:
        """``[batch * heads, seq, head_dim]`` as ``[tokens, hidden]``."""
        s = self.s
        return t.reshape([s.batch, s.heads, s.seq, s.head_dim]).dimShuffle([0, 2, 1, 3]).reshape(
            [s.tokens, s.hidden])

    def dense(self, a: poplar.Tensor, w: str, b: str) -> poplar.Tensor:
        y = self.mm(a, self.param[w], w)
        popops.addInPlace(self.graph, y, self.param[b], self.seq, f"{b}/add")
        return y

    def dense_backward(self, a: poplar.Tensor, dy: poplar.Tensor, w: str, b: str) -> poplar.Tensor:
        """``dW = a^T dy`` and ``db = sum(dy)`` into the gradient buffer; returns ``dy W^T``."""
        self.mm_into(a.transpose(), dy, self.grad[w], f"{w}/grad")
        # reduced where the columns lie, then copied into the buffer (a reduction straight into a
        # slice of it would gather every tile's partial sums on the slice's one or two tiles)
        db = popops.reduce(self.graph, dy, [0], popops.Operation.ADD, self.seq, f"{b}/grad")
        self.seq.add(prog.Copy(db, self.grad[b]))
        return self.mm(dy, self.param[w].transpose(), f"{w}/inputGrad")

    def layer_norm(self, t: poplar.Tensor, g: str, b: str) -> tuple[poplar.Tensor, ...]:
        """(output, whitened, inverse standard deviation)."""
        ln = popnn.ln
        mean, isd = ln.layerNormStatistics(self.graph, t, self.s.eps, self.seq, debugName=f"{g}/stats")
        out, whitened = ln.layerNormalise(self.graph, t, self.param[g], self.param[b], mean, isd, self.seq,
                                          f"{g}/normalise")
        return out, whitened, isd

    def layer_norm_backward(self, whitened: poplar.Tensor, isd: poplar.Tensor, dy: poplar.Tensor, g: str,
                            b: str) -> poplar.Tensor:
        dg, db = popnn.ln.layerNormParamGradients(self.graph, whitened, dy, self.seq, f"{g}/paramGrads")
        self.seq.add(prog.Copy(dg, self.grad[g]))
        self.seq.add(prog.Copy(db, self.grad[b]))
        return popnn.ln.layerNormGradients(self.graph, whitened, dy, isd, self.param[g], self.seq,
                                           f"{g}/grads")

    # ---- the model -------------------------------------------------------------------------
    def _layer(self, x: poplar.Tensor, p: str) -> tuple[poplar.Tensor, dict]:
        g, s, seq = self.graph, self.s, self.seq
        q, k, v = (self.dense(x, p + f"w{n}", p + f"b{n}") for n in "qkv")
        scores = self.mm_grouped(self.heads(q), self.heads(k).dimShuffle([0, 2, 1]), p + "scores")
        popops.mulInPlace(g, scores, 1 / math.sqrt(s.head_dim), seq, p + "scale")
        probs = popnn.nonLinearity(g, NL.SOFTMAX_STABLE, scores, seq, p + "softmax")
        ctx = self.merge(self.mm_grouped(probs, self.heads(v), p + "context"))
        attn = self.dense(ctx, p + "wo", p + "bo")
        popops.addInPlace(g, attn, x, seq, p + "residual1")
        h1, white1, isd1 = self.layer_norm(attn, p + "g1", p + "be1")
        u = self.dense(h1, p + "w1", p + "b1")
        a = popnn.nonLinearity(g, NL.GELU, u, seq, p + "gelu")
        f = self.dense(a, p + "w2", p + "b2")
        popops.addInPlace(g, f, h1, seq, p + "residual2")
        out, white2, isd2 = self.layer_norm(f, p + "g2", p + "be2")
        saved = dict(x=x, q=q, k=k, v=v, probs=probs, ctx=ctx, h1=h1, white1=white1, isd1=isd1, u=u, a=a,
                     white2=white2, isd2=isd2)
        return out, saved

    def _layer_backward(self, d_out: poplar.Tensor, p: str, t: dict) -> poplar.Tensor:
        g, s, seq = self.graph, self.s, self.seq
        d_f = self.layer_norm_backward(t["white2"], t["isd2"], d_out, p + "g2", p + "be2")
        d_a = self.dense_backward(t["a"], d_f, p + "w2", p + "b2")
        d_u = popnn.nonLinearityInputGradient(g, NL.GELU, t["u"], d_a, seq, p + "gelu/grad")
        d_h1 = self.dense_backward(t["h1"], d_u, p + "w1", p + "b1")
        popops.addInPlace(g, d_h1, d_f, seq, p + "residual2/grad")
        d_attn = self.layer_norm_backward(t["white1"], t["isd1"], d_h1, p + "g1", p + "be1")
        d_ctx = self.heads(self.dense_backward(t["ctx"], d_attn, p + "wo", p + "bo"))
        d_probs = self.mm_grouped(d_ctx, self.heads(t["v"]).dimShuffle([0, 2, 1]), p + "probs/grad")
        d_v = self.mm_grouped(t["probs"].dimShuffle([0, 2, 1]), d_ctx, p + "v/grad")
        d_scores = popnn.nonLinearityInputGradient(g, NL.SOFTMAX_STABLE, t["probs"], d_probs, seq,
                                                   p + "softmax/grad")
        popops.mulInPlace(g, d_scores, 1 / math.sqrt(s.head_dim), seq, p + "scale/grad")
        d_q = self.mm_grouped(d_scores, self.heads(t["k"]), p + "q/grad")
        d_k = self.mm_grouped(d_scores.dimShuffle([0, 2, 1]), self.heads(t["q"]), p + "k/grad")
        d_x = d_attn  # the residual
        for n, d in (("q", d_q), ("k", d_k), ("v", d_v)):
            d_in = self.dense_backward(t["x"], self.merge(d), p + f"w{n}", p + f"b{n}")
            popops.addInPlace(g, d_x, d_in, seq, p + f"{n}/inputGrad/add")
        return d_x

    def _build(self, lr: float) -> None:
        g, s, seq = self.graph, self.s, self.seq
        h, saved = self.x, []
        for layer in range(s.layers):
            h = self.onto(self.shard(f"l{layer}."), h, f"l{layer}.in")
            g = self.graph
            h, t = self._layer(h, f"l{layer}.")
            saved.append(t)
        pred = self.dense(h, "head.w", "head.b")
        # loss = mean((pred - y)^2); its gradient 2 (pred - y) / n
        n = s.tokens * s.outputs
        diff = popops.sub(g, pred, self.y, seq, "loss/diff")
        square = popops.map(g, pe.Cast(pe._1 * pe._1, poplar.FLOAT), [diff], seq, "loss/square")
        loss = popops.reduce(g, square.flatten(), [0], popops.Operation.ADD, seq, "loss/sum")
        popops.mulInPlace(g, loss, 1 / n, seq, "loss/mean")
        seq.add(prog.Copy(loss.reshape([1]), self.loss_out))
        popops.mulInPlace(g, diff, 2 / n, seq, "loss/grad")
        d = self.dense_backward(h, diff, "head.w", "head.b")
        for layer in reversed(range(s.layers)):
            d = self.onto(self.shard(f"l{layer}."), d, f"l{layer}.out/grad")
            d = self._layer_backward(d, f"l{layer}.", saved[layer])
        self.graph = g = self.top
        gcl.allReduceInPlaceCrossReplica(g, self.grads, gcl.CollectiveOperator.MEAN, seq, "grads/mean")
        popops.scaledAddTo(g, self.params, self.grads, -lr, seq, "sgd")

    def flat(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """Named arrays laid out as the ``params``/``grads`` buffer."""
        out = np.zeros(self.params.numElements(), self.dtype.dtype)
        for name, (lo, hi) in self.offsets.items():
            out[lo:hi] = values[name].reshape(-1)
        return out

    def unflat(self, buffer: np.ndarray) -> dict[str, np.ndarray]:
        shapes = parameter_shapes(self.s)
        return {name: buffer[lo:hi].reshape(shapes[name]) for name, (lo, hi) in self.offsets.items()}


def build(sizes: Sizes, replicas: int, lr: float, half: bool = False,
          device: poplar.Device | None = None, ipus: int = 1) -> tuple[Bert, poplar.Engine, poplar.Device]:
    """The model on ``replicas`` replicas of ``ipus`` IPUs each, compiled and loaded."""
    if device is None:
        model = poplar.IPUModel()
        model.numIPUs = replicas * ipus
        device = model.createDevice()
    graph = poplar.Graph(device.getTarget(), replication_factor=replicas)
    for lib in (popops, poplin, popnn):
        lib.addCodelets(graph)
    bert = Bert(graph, sizes, lr, half, ipus)
    graph.createHostWrite("params", bert.params)
    graph.createHostRead("params/read", bert.params)
    graph.createHostRead("grads", bert.grads)
    engine = poplar.Engine(graph, bert.seq)
    engine.load(device)
    return bert, engine, device


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicas", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--ipus-per-replica", type=int, default=None,
                   help=f"IPUs a replica's layers are split over (default: one per {LAYERS_PER_IPU} layers)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--half", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def split(execution: dict) -> dict[str, float]:
    """The shares of one step's cycles: compute, exchange on the IPUs, the IPU-Links' global
    exchange, host transfers and syncs (each program step's phases, which add up to its cycles)."""
    total = execution["totalCycles"] or 1
    phases = {"compute": "compute", "exchange": "exchange", "links": "globalExchange", "host": "host",
              "sync": "sync"}
    return {share: sum(row["count"] * row[key] for row in execution["steps"]) / total
            for share, key in phases.items()}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    s = Sizes(seq=args.seq, layers=args.layers, batch=args.batch)
    ipus = args.ipus_per_replica or -(-s.layers // LAYERS_PER_IPU)
    print(f"BERT-base: {s.layers} encoder layer(s), hidden {s.hidden}, {s.heads} heads, FFN {s.ffn}, "
          f"sequence {s.seq}, {'half' if args.half else 'float'}; {args.replicas} replica(s) of "
          f"{'one IPU' if ipus == 1 else f'{ipus} IPUs'}, {s.batch} sequence(s) each")
    bert, engine, device = build(s, args.replicas, args.lr, args.half, ipus=ipus)
    target = device.getTarget()
    rng = np.random.default_rng(args.seed)
    dtype = bert.dtype.dtype
    engine.writeTensor("params", bert.flat(initial_parameters(s, args.seed)))
    # every replica its own micro-batch, and a fixed target for it, read again at every step
    for r in range(args.replicas):
        x = rng.standard_normal((s.tokens, s.hidden)).astype(dtype)
        y = rng.standard_normal((s.tokens, s.outputs)).astype(dtype)
        engine.connectStream("embeddings", x, replicaIndex=r)
        engine.connectStream("target", y, replicaIndex=r)
    losses = [np.zeros(args.steps, np.float32) for _ in range(args.replicas)]
    for r in range(args.replicas):
        engine.connectStream("loss", losses[r], replicaIndex=r)
    clock = target.getTileClockFrequency()
    for step in range(args.steps):
        engine.resetExecutionProfile()
        engine.run(0)
        execution = engine.getProfile()["execution"]
        seconds = execution["totalCycles"] / clock
        loss = float(np.mean([x[step] for x in losses]))
        shares = split(execution)
        print(f"step {step} loss {loss:.6f}  {seconds * 1e3:.3f} ms simulated, "
              f"{args.replicas * s.batch / seconds:,.0f} sequences/s; compute {shares['compute']:.1%}, "
              f"exchange {shares['exchange']:.1%}, IPU-Links {shares['links']:.1%}, "
              f"host {shares['host']:.1%}, sync {shares['sync']:.1%}")


if __name__ == "__main__":
    main()
