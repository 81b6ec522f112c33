"""Tutorial 10's model: a GPT decoder built with PopLibs on one replica's share of the work.

A replica holds its tensor-parallel shard of every layer (``tp`` replicas of a CONSECUTIVE group
split the attention heads and the MLP's hidden units: the query, key, value and first MLP
projections by columns, the attention output and second MLP projections by rows, each row-split
product all-reduced in the group, forward and backward). Its layers may be split into pipeline
stages over its IPUs (virtual graphs); each stage keeps its parameters and their gradients in
one flat buffer of its own, updated by :mod:`optimiser`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, poplin, popnn, popops, poputil

NL = popnn.NonLinearityType
MASKED = -10_000.0  # added to the scores of future positions: exp() of it is 0 in float


@dataclass(frozen=True)
class Sizes:
    """The model's sizes, the micro-batch and the precision."""

    vocab: int = 256
    hidden: int = 128
    heads: int = 4
    layers: int = 2
    seq: int = 64
    batch: int = 1
    eps: float = 1e-5  # layer norm
    half: bool = False  # weights, activations and gradients in half, products with half partials
    #: 0: a causal language model, every position predicting the next token (GPT); k > 0: a masked
    #: language model, attention both ways and k masked positions a sequence predicting their
    #: tokens (BERT)
    predictions: int = 0
    #: PopLibs' ``availableMemoryProportion`` for the products (None: PopLibs' default)
    memory_proportion: float | None = None
    #: the head's products over the vocabulary run as this many, each over a slice of its rows
    #: (Graphcore's ``embedding_serialization_factor``): their exchange buffers and partials
    #: that much smaller, on the tiles of the first IPU that also holds the embedding
    serialization: int = 1

    @property
    def causal(self) -> bool:
        return self.predictions == 0

    @property
    def targets(self) -> int:
        """The positions of a micro-batch that predict a token."""
        return self.batch * (self.predictions or self.seq)

    @property
    def dtype(self) -> poplar.Type:
        return poplar.HALF if self.half else poplar.FLOAT

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def vocab_slices(self) -> list[slice]:
        """The vocabulary rows of each of the head's ``serialization`` products."""
        bounds = [self.vocab * k // self.serialization for k in range(self.serialization + 1)]
        return [slice(a, b) for a, b in itertools.pairwise(bounds)]

    @property
    def mlp(self) -> int:
        return 4 * self.hidden

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def flops_per_token(self) -> int:
        """The model FLOPs of training on one token (a multiply-add is 2; the backward pass twice
        the forward's products, no recomputation): per layer the four attention projections
        (``4 h^2``), the MLP's two (``2 h x 4h``) and the attention's scores and context
        (``2 x seq x h``), then the output projection (``h x vocab``) on the positions that predict."""
        h = self.hidden
        per_layer = 2 * (4 * h * h + 2 * h * self.mlp) + 2 * 2 * self.seq * h
        return 3 * (self.layers * per_layer) + 3 * 2 * h * self.vocab * self.targets // self.tokens


def layer_shapes(s: Sizes, tp: int) -> dict[str, list[int]]:
    """One layer's parameters on one tensor-parallel rank (column- and row-split ones 1/tp)."""
    h, part, mlp = s.hidden, s.hidden // tp, s.mlp // tp
    return {
        "ln1.g": [h],
        "ln1.b": [h],
        "wq": [h, part],
        "bq": [part],
        "wk": [h, part],
        "bk": [part],
        "wv": [h, part],
        "bv": [part],
        "wo": [part, h],
        "bo": [h],
        "ln2.g": [h],
        "ln2.b": [h],
        "w1": [h, mlp],
        "b1": [mlp],
        "w2": [mlp, h],
        "b2": [h],
    }


def parameter_shapes(s: Sizes, tp: int, layers: range, first: bool) -> dict[str, list[int]]:
    """A stage's parameters (its layers; on the first stage the embeddings and the head's final
    layer norm: the head runs there, beside the token embedding its output projection shares), in
    the order they lie in its buffer."""
    shapes: dict[str, list[int]] = {}
    if first:
        shapes["wte"], shapes["wpe"] = [s.vocab, s.hidden], [s.seq, s.hidden]
    for layer in layers:
        shapes.update({f"l{layer}.{k}": v for k, v in layer_shapes(s, tp).items()})
    if first:
        shapes["lnf.g"], shapes["lnf.b"] = [s.hidden], [s.hidden]
    return shapes


#: a row-split product's partial sums, all-reduced over the tensor-parallel group, in place
AllReduce = Callable[[poplar.Tensor, prog.Sequence, str], None]


@dataclass(frozen=True)
class LayerFunctions:
    """One block's code for every layer of a stage (phased or outlined), the buffers it reads and
    writes (``x``: the input, then the output; ``d``: the output's gradient, then the input's), what
    its backward pass needs as one row (``saved``: the activations, or recomputing, the input) and
    their stash, a row per micro-batch for each layer: in Streaming Memory (phased) or in the
    stage's tile memory."""

    forward: poplar.Function
    backward: poplar.Function
    x: poplar.Tensor
    d: poplar.Tensor
    saved: poplar.Tensor
    stashes: list[poplar.RemoteBuffer] | list[poplar.Tensor]


class Stage:
    """One pipeline stage of one replica: a virtual graph (an IPU) holding some layers, their
    parameters and gradients, and the builders of its forward and backward passes for one
    micro-batch.

    The embeddings and the final layer norm lie in flat buffers (``params``, ``grads``). So do the
    layers' parameters, after them; or, ``phased``, each layer's parameters and gradients live in
    Streaming Memory (rows 0 and 1 of its remote buffer) and are loaded into one layer's working
    buffers (``work``, ``work_grads``) just before the layer runs, so the IPU holds one layer at a
    time. Phased or ``outlined``, one block's code serves every layer (a forward and a backward
    function, called once per layer, as PopART outlines a model's identical layers); outlined, the
    layers stay in the flat buffers, each laid out alike, and are copied tile by tile into the
    working buffers (their gradients back) around each call. The activations the backward pass
    needs are stashed between the passes (phased in Streaming Memory, outlined on the tiles), so
    neither the code nor the memory grows with the layers. The stash has a row for each of
    ``micros`` micro-batches in flight; :meth:`select` picks the micro-batch's before its forward
    or backward pass runs, so the passes' code serves every micro-batch.

    With ``recompute`` the backward pass needs only each block's input: it runs the block forward
    again before its backward (Graphcore's recomputation checkpoints at each encoder layer), so a
    micro-batch in flight keeps one activation a layer instead of thirteen."""

    def __init__(
        self,
        graph: poplar.Graph,
        s: Sizes,
        tp: int,
        layers: range,
        first: bool,
        last: bool,
        tp_all_reduce: AllReduce,
        index: int,
        phased: bool = False,
        micros: int = 1,
        recompute: bool = False,
        outlined: bool = False,
    ) -> None:
        self.graph, self.s, self.tp, self.layers, self.micros = graph, s, tp, layers, micros
        self.recompute, self.outlined = recompute, outlined and not phased
        self.first, self.last, self.index, self.phased = first, last, index, phased
        self.shared = bool(layers) and (phased or self.outlined)  # one block's code for every layer
        self.all_reduce = tp_all_reduce
        self.shapes = parameter_shapes(s, tp, layers, first)
        self.layer_shapes = layer_shapes(s, tp)
        self.layer_offsets = _offsets(self.layer_shapes)
        self.layer_size = sum(math.prod(shape) for shape in self.layer_shapes.values())
        own = {k: v for k, v in self.shapes.items() if not (phased and in_layer(k))}
        self.offsets = _offsets(own)  # of what the flat buffers hold
        size = sum(math.prod(shape) for shape in own.values())
        self.params, self.grads = (self._buffer(size, f"stage{index}/{what}") for what in ("params", "grads"))
        #: the token embedding's column blocks, each block's rows on one tile
        self.blocks = column_blocks(s.hidden, graph.getTarget().getNumTiles())
        if "wte" in self.offsets:
            self._spread_blocks(self._where("wte", False))
            self._spread_blocks(self._where("wte", True))
        self.remote: dict[int, poplar.RemoteBuffer] = {}
        if self.outlined:
            for layer in layers:  # each layer's tiles hold the same parts of it
                for buffer in (self.params, self.grads):
                    poputil.mapTensorLinearly(graph, self._layer(buffer, layer))
        if self.shared:
            self.work, self.work_grads = (
                self._buffer(self.layer_size, f"stage{index}/{what}") for what in ("layer", "layerGrads")
            )
            self.pair = poplar.concat([self.work.expand([0]), self.work_grads.expand([0])])
            self.rows = graph.addConstant(poplar.UNSIGNED_INT, [2], [0, 1], f"stage{index}/layerRows")
            poputil.mapTensorLinearly(graph, self.rows)
            self.row0 = self.rows.slice(0, 1)
            self.slots = graph.addConstant(poplar.UNSIGNED_INT, [micros], np.arange(micros),
                                           f"stage{index}/slots")
            poputil.mapTensorLinearly(graph, self.slots)
            self.slot = graph.addVariable(poplar.UNSIGNED_INT, [1], f"stage{index}/slot")
            graph.setTileMapping(self.slot, 0)
            for layer in layers if phased else ():
                self.remote[layer] = graph.addRemoteBuffer(
                    f"stage{index}/l{layer}", s.dtype, self.layer_size, repeats=2
                )
        self._layer_functions: LayerFunctions | None = None
        self.mask: poplar.Tensor | None = None  # a causal model's, added to the attention scores
        if s.causal:
            self.mask = graph.addConstant(
                s.dtype,
                [s.seq, s.seq],
                np.triu(np.full([s.seq, s.seq], MASKED, np.float32), 1),
                "causalMask",
            )
            poputil.mapTensorLinearly(graph, self.mask)

    def _buffer(self, size: int, name: str) -> poplar.Tensor:
        t = self.graph.addVariable(self.s.dtype, [size], name)
        poputil.mapTensorLinearly(self.graph, t)
        return t

    def _spread_blocks(self, flat: poplar.Tensor) -> None:
        """The embedding table lies in its buffer block after block of columns, each block's rows
        together on one tile of the stage (PopLibs' ``createSliceableTensor`` layout), so a lookup
        or an update of a row reads and writes each tile's own columns: laid out by rows, every
        tile would hold a few rows of every column and one tile would gather them all."""
        tiles, size = self.graph.getTarget().getNumTiles(), flat.numElements() // self.blocks
        for k in range(self.blocks):
            self.graph.setTileMapping(flat.slice(k * size, (k + 1) * size), k * tiles // self.blocks)

    def _layer_range(self, layer: int) -> tuple[int, int]:
        lo = self.offsets[f"l{layer}.{next(iter(self.layer_shapes))}"][0]
        return lo, lo + self.layer_size

    def _layer(self, buffer: poplar.Tensor, layer: int) -> poplar.Tensor:
        """Outlined: layer ``layer``'s part of a flat buffer (its parameters lie together)."""
        return buffer.slice(*self._layer_range(layer))

    def update_ranges(self) -> dict[str, tuple[int, int]]:
        """The parts of the flat buffers each optimiser updates, by its name: the whole buffer, or
        outlined, each layer's part and the parts before and after the layers on their own, so the
        optimisers' state is loaded a layer at a time (phased layers are updated apart)."""
        size = self.params.numElements()
        if not size:
            return {}
        if not (self.outlined and self.layers):
            return {f"stage{self.index}": (0, size)}
        out = {f"stage{self.index}/l{layer}": self._layer_range(layer) for layer in self.layers}
        first, last = self._layer_range(self.layers[0])[0], self._layer_range(self.layers[-1])[1]
        for name, (lo, hi) in (("before", (0, first)), ("after", (last, size))):
            if hi > lo:
                out[f"stage{self.index}/{name}"] = (lo, hi)
        return out

    def _where(self, name: str, grads: bool) -> poplar.Tensor:
        if self.shared and in_layer(name):
            lo, hi = self.layer_offsets[name.split(".", 1)[1]]
            return (self.work_grads if grads else self.work).slice(lo, hi)
        lo, hi = self.offsets[name]
        return (self.grads if grads else self.params).slice(lo, hi)

    def _view(self, name: str, grads: bool) -> poplar.Tensor:
        flat = self._where(name, grads)
        if name != "wte":
            return flat.reshape(self.shapes[name])
        rows, cols = self.shapes[name]
        blocks = flat.reshape([self.blocks, rows, cols // self.blocks])
        return blocks.dimShuffle([1, 0, 2]).reshape([rows, cols])

    def param(self, name: str) -> poplar.Tensor:
        return self._view(name, False)

    def grad(self, name: str) -> poplar.Tensor:
        return self._view(name, True)

    def flat_value(self, name: str, value: np.ndarray) -> np.ndarray:
        """A parameter's value as its buffer holds it (the embedding table block-major)."""
        if name != "wte":
            return value.reshape(-1)
        rows, cols = value.shape
        return value.reshape(rows, self.blocks, cols // self.blocks).transpose(1, 0, 2).reshape(-1)

    def value_of(self, name: str, flat: np.ndarray) -> np.ndarray:
        """A parameter's value from its part of the buffer (:meth:`flat_value`'s inverse)."""
        shape = self.shapes[name]
        if name != "wte":
            return flat.reshape(shape)
        rows, cols = shape
        return flat.reshape(self.blocks, rows, cols // self.blocks).transpose(1, 0, 2).reshape(rows, cols)

    def load(self, layer: int, seq: prog.Sequence, grads: bool) -> None:
        """Phased or outlined: layer ``layer``'s parameters (and, ``grads``, its gradients so far)
        into the working buffers, from Streaming Memory or the flat buffers, before it runs."""
        if self.phased:
            seq.add(
                prog.Copy(self.remote[layer], self.pair, self.rows)
                if grads
                else prog.Copy(self.remote[layer], self.work, self.row0)
            )
        elif self.outlined:
            seq.add(prog.Copy(self._layer(self.params, layer), self.work))
            if grads:
                seq.add(prog.Copy(self._layer(self.grads, layer), self.work_grads))

    def select(self, micro: int, seq: prog.Sequence) -> None:
        """Phased or outlined: the stash row of micro-batch ``micro`` for the passes that follow."""
        if self.shared:
            seq.add(prog.Copy(self.slots.slice(micro, micro + 1), self.slot))

    # ---- the layers of a micro-batch ----------------------------------------------------------
    def forward_layers(self, x: poplar.Tensor, seq: prog.Sequence) -> tuple[poplar.Tensor, list[dict]]:
        """The stage's blocks on a micro-batch: (output, what backward needs)."""
        if not self.layers:
            return x, []
        if self.shared:
            functions = self._functions()
            seq.add(prog.Copy(x, functions.x))
            for k, layer in enumerate(self.layers):
                self.load(layer, seq, grads=False)
                if self.recompute:  # the input, before the block overwrites it
                    self._stash(functions, k, seq)
                seq.add(prog.Call(functions.forward))
                if not self.recompute:
                    self._stash(functions, k, seq)
            return functions.x, []
        saved = []
        for layer in self.layers:
            x_in = x
            x, t = self.block(x, f"l{layer}.", seq)
            saved.append({"x": x_in} if self.recompute else t)
        return x, saved

    def backward_layers(self, d: poplar.Tensor, saved: list[dict], seq: prog.Sequence) -> poplar.Tensor:
        """The blocks' backward pass on a micro-batch, accumulating their gradients."""
        if not self.layers:
            return d
        if self.shared:
            functions = self._functions()
            seq.add(prog.Copy(d, functions.d))
            for k, layer in reversed(list(enumerate(self.layers))):
                self.load(layer, seq, grads=True)
                self._unstash(functions, k, seq)
                seq.add(prog.Call(functions.backward))
                self.store(layer, seq)
            return functions.d
        for layer, t in zip(reversed(self.layers), reversed(saved)):
            if self.recompute:
                _, t = self.block(t["x"], f"l{layer}.", seq)
            d = self.block_backward(d, f"l{layer}.", t, seq)
        return d

    def _functions(self) -> LayerFunctions:
        """The block's forward and backward code, built once (on the first layer's names)."""
        if self._layer_functions is None:
            s, g = self.s, self.graph
            x, d = (
                g.addVariable(s.dtype, [s.tokens, s.hidden], f"stage{self.index}/{w}")
                for w in ("x", "d")
            )
            for t in (x, d):
                poputil.mapTensorLinearly(g, t)
            p = f"l{self.layers[0]}."
            forward, backward = prog.Sequence(), prog.Sequence()
            y, saved = self.block(x, p, forward)
            forward.add(prog.Copy(y, x))  # the next layer's input
            if self.recompute:  # the block again, from its input restored into x
                _, saved_again = self.block(x, p, backward)
                backward.add(prog.Copy(self.block_backward(d, p, saved_again, backward), d))
                flat = x.flatten().expand([0])
            else:
                backward.add(prog.Copy(self.block_backward(d, p, saved, backward), d))
                flat = poplar.concat([saved[k].flatten() for k in sorted(saved)]).expand([0])
            stashes: list[poplar.RemoteBuffer] | list[poplar.Tensor]
            if self.phased:
                stashes = [
                    g.addRemoteBuffer(f"stage{self.index}/activations/l{layer}", s.dtype, flat.numElements(),
                                      repeats=self.micros)
                    for layer in self.layers
                ]
            else:  # each row on the tiles of what it keeps
                stashes = [
                    poplar.concat([g.clone(flat, f"stage{self.index}/activations/l{layer}/{j}")
                                   for j in range(self.micros)])
                    for layer in self.layers
                ]
            self._layer_functions = LayerFunctions(
                g.addFunction(forward), g.addFunction(backward), x, d, flat, stashes
            )
        return self._layer_functions

    def _stash(self, functions: LayerFunctions, k: int, seq: prog.Sequence) -> None:
        """What the backward pass of the stage's ``k``-th layer needs, into the selected row."""
        stash = functions.stashes[k]
        if isinstance(stash, poplar.RemoteBuffer):
            seq.add(prog.Copy(functions.saved, stash, self.slot))
        else:
            popops.dynamicUpdate(self.graph, stash, functions.saved, self.slot, [0], [1], seq,
                                 f"stage{self.index}/stash")

    def _unstash(self, functions: LayerFunctions, k: int, seq: prog.Sequence) -> None:
        """The selected row of the ``k``-th layer's stash back into the block's buffers."""
        stash = functions.stashes[k]
        if isinstance(stash, poplar.RemoteBuffer):
            seq.add(prog.Copy(stash, functions.saved, self.slot))
        else:
            row = popops.dynamicSlice(self.graph, stash, self.slot, [0], [1], seq,
                                      f"stage{self.index}/unstash")
            seq.add(prog.Copy(row, functions.saved))

    def store(self, layer: int, seq: prog.Sequence) -> None:
        """Phased: layer ``layer``'s parameters and gradients back to Streaming Memory; outlined: its
        gradients back into the flat buffer."""
        if self.phased:
            seq.add(prog.Copy(self.pair, self.remote[layer], self.rows))
        elif self.outlined:
            seq.add(prog.Copy(self.work_grads, self._layer(self.grads, layer)))

    # ---- building blocks -------------------------------------------------------------------
    @property
    def options(self) -> dict[str, str]:
        """The products' options: half partials in half (Graphcore's ``enable_half_partials``), and
        the share of a tile's memory their temporaries may take."""
        options = {"partialsType": "half"} if self.s.half else {}
        if self.s.memory_proportion is not None:
            options["availableMemoryProportion"] = str(self.s.memory_proportion)
        return options

    def mm(self, a: poplar.Tensor, b: poplar.Tensor, seq: prog.Sequence, name: str) -> poplar.Tensor:
        return poplin.matMul(self.graph, a, b, seq, name, self.options)

    def grouped(self, a: poplar.Tensor, b: poplar.Tensor, seq: prog.Sequence, name: str) -> poplar.Tensor:
        return poplin.matMulGrouped(self.graph, a, b, seq, name, self.options)

    def mm_acc(
        self, into: poplar.Tensor, a: poplar.Tensor, b: poplar.Tensor, seq: prog.Sequence, name: str
    ) -> None:
        """``into += a @ b`` (gradients accumulate over micro-batches)."""
        poplin.matMulAcc(self.graph, into, 1.0, a, b, seq, name, self.options)

    def bias_grad(self, dy: poplar.Tensor, b: str, seq: prog.Sequence) -> None:
        db = popops.reduce(self.graph, dy, [0], popops.Operation.ADD, seq, f"{b}/grad")
        popops.addInPlace(self.graph, self.grad(b), db, seq, f"{b}/grad/acc")

    def dense(self, a: poplar.Tensor, w: str, b: str, seq: prog.Sequence) -> poplar.Tensor:
        y = self.mm(a, self.param(w), seq, w)
        popops.addInPlace(self.graph, y, self.param(b), seq, f"{b}/add")
        return y

    def heads(self, t: poplar.Tensor) -> poplar.Tensor:
        """``[tokens, local heads x head_dim]`` as ``[batch x local heads, seq, head_dim]``."""
        s = self.s
        local = s.heads // self.tp
        return (
            t.reshape([s.batch, s.seq, local, s.head_dim])
            .dimShuffle([0, 2, 1, 3])
            .reshape([s.batch * local, s.seq, s.head_dim])
        )

    def merge(self, t: poplar.Tensor) -> poplar.Tensor:
        s = self.s
        local = s.heads // self.tp
        return (
            t.reshape([s.batch, local, s.seq, s.head_dim])
            .dimShuffle([0, 2, 1, 3])
            .reshape([s.tokens, local * s.head_dim])
        )

    def layer_norm(self, t: poplar.Tensor, p: str, seq: prog.Sequence) -> tuple[poplar.Tensor, ...]:
        """(output, whitened, inverse standard deviation)."""
        mean, isd = popnn.ln.layerNormStatistics(self.graph, t, self.s.eps, seq, debugName=f"{p}/stats")
        out, whitened = popnn.ln.layerNormalise(
            self.graph, t, self.param(f"{p}.g"), self.param(f"{p}.b"), mean, isd, seq, f"{p}/normalise"
        )
        return out, whitened, isd

    def layer_norm_backward(
        self, whitened: poplar.Tensor, isd: poplar.Tensor, dy: poplar.Tensor, p: str, seq: prog.Sequence
    ) -> poplar.Tensor:
        g = self.graph
        dg, db = popnn.ln.layerNormParamGradients(g, whitened, dy, seq, f"{p}/paramGrads")
        popops.addInPlace(g, self.grad(f"{p}.g"), dg, seq, f"{p}.g/grad/acc")
        popops.addInPlace(g, self.grad(f"{p}.b"), db, seq, f"{p}.b/grad/acc")
        return popnn.ln.layerNormGradients(g, whitened, dy, isd, self.param(f"{p}.g"), seq, f"{p}/grads")

    # ---- a decoder block ---------------------------------------------------------------------
    def block(self, x: poplar.Tensor, p: str, seq: prog.Sequence) -> tuple[poplar.Tensor, dict]:
        """``x + attention(ln1(x))``, then ``+ mlp(ln2(.))``; what the backward pass needs."""
        g, s = self.graph, self.s
        a, white1, isd1 = self.layer_norm(x, p + "ln1", seq)
        q, k, v = (self.dense(a, p + f"w{n}", p + f"b{n}", seq) for n in "qkv")
        scores = self.grouped(self.heads(q), self.heads(k).dimShuffle([0, 2, 1]), seq, p + "scores")
        popops.mulInPlace(g, scores, 1 / math.sqrt(s.head_dim), seq, p + "scale")
        if self.mask is not None:
            mask = self.mask.expand([0]).broadcast(scores.dim(0), 0)
            popops.addInPlace(g, scores, mask, seq, p + "causal")
        probs = popnn.nonLinearity(g, NL.SOFTMAX_STABLE, scores, seq, p + "softmax")
        ctx = self.merge(self.grouped(probs, self.heads(v), seq, p + "context"))
        o = self.mm(ctx, self.param(p + "wo"), seq, p + "wo")
        self.all_reduce(o, seq, p + "wo/allReduce")
        popops.addInPlace(g, o, self.param(p + "bo"), seq, p + "bo/add")
        popops.addInPlace(g, o, x, seq, p + "residual1")
        m, white2, isd2 = self.layer_norm(o, p + "ln2", seq)
        u = self.dense(m, p + "w1", p + "b1", seq)
        act = popnn.nonLinearity(g, NL.GELU, u, seq, p + "gelu")
        f = self.mm(act, self.param(p + "w2"), seq, p + "w2")
        self.all_reduce(f, seq, p + "w2/allReduce")
        popops.addInPlace(g, f, self.param(p + "b2"), seq, p + "b2/add")
        popops.addInPlace(g, f, o, seq, p + "residual2")
        saved = dict(
            a=a,
            white1=white1,
            isd1=isd1,
            q=q,
            k=k,
            v=v,
            probs=probs,
            ctx=ctx,
            m=m,
            white2=white2,
            isd2=isd2,
            u=u,
            act=act,
        )
        return f, saved

    def block_backward(self, d_out: poplar.Tensor, p: str, t: dict, seq: prog.Sequence) -> poplar.Tensor:
        g, s = self.graph, self.s
        # the MLP: d_out reaches its output and, through the residual, its input
        self.bias_grad(d_out, p + "b2", seq)
        self.mm_acc(self.grad(p + "w2"), t["act"].transpose(), d_out, seq, p + "w2/grad")
        d_act = self.mm(d_out, self.param(p + "w2").transpose(), seq, p + "w2/inputGrad")
        d_u = popnn.nonLinearityInputGradient(g, NL.GELU, t["u"], d_act, seq, p + "gelu/grad")
        self.bias_grad(d_u, p + "b1", seq)
        self.mm_acc(self.grad(p + "w1"), t["m"].transpose(), d_u, seq, p + "w1/grad")
        d_m = self.mm(d_u, self.param(p + "w1").transpose(), seq, p + "w1/inputGrad")
        self.all_reduce(d_m, seq, p + "w1/inputGrad/allReduce")
        d_o = self.layer_norm_backward(t["white2"], t["isd2"], d_m, p + "ln2", seq)
        popops.addInPlace(g, d_o, d_out, seq, p + "residual2/grad")
        # attention
        self.bias_grad(d_o, p + "bo", seq)
        self.mm_acc(self.grad(p + "wo"), t["ctx"].transpose(), d_o, seq, p + "wo/grad")
        d_ctx = self.heads(self.mm(d_o, self.param(p + "wo").transpose(), seq, p + "wo/inputGrad"))
        d_probs = self.grouped(d_ctx, self.heads(t["v"]).dimShuffle([0, 2, 1]), seq, p + "probs/grad")
        d_v = self.grouped(t["probs"].dimShuffle([0, 2, 1]), d_ctx, seq, p + "v/grad")
        d_scores = popnn.nonLinearityInputGradient(
            g, NL.SOFTMAX_STABLE, t["probs"], d_probs, seq, p + "softmax/grad"
        )
        popops.mulInPlace(g, d_scores, 1 / math.sqrt(s.head_dim), seq, p + "scale/grad")
        d_q = self.grouped(d_scores, self.heads(t["k"]), seq, p + "q/grad")
        d_k = self.grouped(d_scores.dimShuffle([0, 2, 1]), self.heads(t["q"]), seq, p + "k/grad")
        d_a = None
        for n, d in (("q", d_q), ("k", d_k), ("v", d_v)):
            d = self.merge(d)
            self.bias_grad(d, p + f"b{n}", seq)
            self.mm_acc(self.grad(p + f"w{n}"), t["a"].transpose(), d, seq, p + f"w{n}/grad")
            d_in = self.mm(d, self.param(p + f"w{n}").transpose(), seq, p + f"w{n}/inputGrad")
            if d_a is None:
                d_a = d_in
            else:
                popops.addInPlace(g, d_a, d_in, seq, p + f"w{n}/inputGrad/add")
        assert d_a is not None
        self.all_reduce(d_a, seq, p + "qkv/inputGrad/allReduce")
        d_x = self.layer_norm_backward(t["white1"], t["isd1"], d_a, p + "ln1", seq)
        popops.addInPlace(g, d_x, d_o, seq, p + "residual1/grad")
        return d_x

    # ---- the ends ----------------------------------------------------------------------------
    def embed(self, tokens: poplar.Tensor, seq: prog.Sequence) -> poplar.Tensor:
        """``wte[tokens] + wpe`` for the micro-batch's tokens (``[tokens]`` UNSIGNED_INT)."""
        s, g = self.s, self.graph
        x = popops.multiSlice(g, self.param("wte"), tokens, [0], [1], seq, debugName="embed").reshape(
            [s.tokens, s.hidden]
        )
        pos = self.param("wpe").expand([0]).broadcast(s.batch, 0).reshape([s.tokens, s.hidden])
        out = popops.add(g, x, pos, seq, "embed/positions")
        return out

    def embed_backward(self, tokens: poplar.Tensor, d_x: poplar.Tensor, seq: prog.Sequence) -> None:
        s, g = self.s, self.graph
        popops.multiUpdateAdd(
            g,
            self.grad("wte"),
            d_x.reshape([s.tokens, 1, s.hidden]),
            tokens,
            1.0,
            [0],
            [1],
            seq,
            debugName="embed/grad",
        )
        d_pos = popops.reduce(
            g, d_x.reshape([s.batch, s.seq, s.hidden]), [0], popops.Operation.ADD, seq, "wpe/grad"
        )
        popops.addInPlace(g, self.grad("wpe"), d_pos, seq, "wpe/grad/acc")

    def head(
        self,
        x: poplar.Tensor,
        targets: poplar.Tensor,
        positions: poplar.Tensor | None,
        seq: prog.Sequence,
        scale: float,
    ) -> tuple[poplar.Tensor, dict]:
        """The final layer norm, logits ``x wte^T`` (a masked model's at its ``positions`` only,
        ``[targets, 1]`` indices of the micro-batch's tokens), softmax cross-entropy against
        ``targets``: (the micro-batch's summed loss, what :meth:`head_backward` needs: the gradient
        of ``scale`` x that loss w.r.t. the logits among it)."""
        g, s = self.graph, self.s
        h, white, isd = self.layer_norm(x, "lnf", seq)
        picked = h
        if positions is not None:  # gathered from a copy laid out for it (the positions vary)
            sliceable = self._sliceable("masked/input")
            seq.add(prog.Copy(h, sliceable))
            picked = popops.multiSlice(g, sliceable, positions, [0], [1], seq, debugName="masked").reshape(
                [s.targets, s.hidden]
            )
        wte = self.param("wte")
        logits = poplar.concat([self.mm(picked, wte[rows].transpose(), seq, name)
                                for rows, name in self._vocab_products("logits")], 1)
        probs = popnn.nonLinearity(g, NL.SOFTMAX_STABLE, logits, seq, "logits/softmax")
        losses = g.addVariable(s.dtype, [s.targets], "losses")
        deltas = g.clone(probs, "deltas")
        poputil.mapTensorLinearly(g, losses)
        seq.add(popnn.calcLoss(g, probs, targets, losses, deltas, popnn.CROSS_ENTROPY_LOSS, "loss"))
        loss = popops.reduce(g, losses, poplar.FLOAT, [0], popops.Operation.ADD, seq, "loss/sum")
        popops.mulInPlace(g, deltas, scale, seq, "loss/scale")  # d logits of the mean loss
        return loss, dict(picked=picked, positions=positions, white=white, isd=isd, deltas=deltas)

    def _vocab_products(self, name: str) -> list[tuple[slice, str]]:
        """The vocabulary rows of each of the head's products and its name (``name/k`` when
        serialised)."""
        slices = self.s.vocab_slices
        return [(rows, name if len(slices) == 1 else f"{name}/{k}") for k, rows in enumerate(slices)]

    def _sliceable(self, name: str) -> poplar.Tensor:
        """A ``[tokens, hidden]`` tensor whose columns lie whole on the tiles (PopLibs'
        ``createSliceableTensor``), so gathering or updating rows at positions known only on the
        tiles needs no exchange of it."""
        s = self.s
        return popops.createSliceableTensor(self.graph, s.dtype, [s.tokens, s.hidden], [0], [1], 0, name)

    def head_backward(self, t: dict, seq: prog.Sequence) -> poplar.Tensor:
        """The gradient w.r.t. the head's input (accumulating the projection's and the final layer
        norm's gradients); a masked model's reaches its positions only."""
        g, s = self.graph, self.s
        wte, deltas = self.param("wte"), t["deltas"]
        d_h = None
        for rows, name in self._vocab_products("logits"):
            self.mm_acc(self.grad("wte")[rows], deltas[:, rows].transpose(), t["picked"], seq, name + "/grad")
            if d_h is None:
                d_h = self.mm(deltas[:, rows], wte[rows], seq, name + "/inputGrad")
            else:
                self.mm_acc(d_h, deltas[:, rows], wte[rows], seq, name + "/inputGrad")
        assert d_h is not None
        if t["positions"] is not None:
            d_picked = d_h
            d_h = self._sliceable("masked/grad")
            popops.zero(g, d_h, seq, "masked/grad/zero")
            popops.multiUpdateAdd(g, d_h, d_picked.reshape([s.targets, 1, s.hidden]), t["positions"], 1.0,
                                  [0], [1], seq, debugName="masked/grad")
            # back to the layer norm's layout (rows whole on tiles): its reductions run along rows
            rows = g.clone(t["white"], "masked/grad/rows")
            seq.add(prog.Copy(d_h, rows))
            d_h = rows
        return self.layer_norm_backward(t["white"], t["isd"], d_h, "lnf", seq)


def column_blocks(cols: int, tiles: int) -> int:
    """The blocks an embedding table's ``cols`` columns are cut into: the most, of at most
    ``tiles``, that divide them evenly."""
    return max(k for k in range(1, min(cols, tiles) + 1) if cols % k == 0)


def in_layer(name: str) -> bool:
    """Whether parameter ``name`` is a decoder block's (``l<k>.``)."""
    return re.match(r"l\d+\.", name) is not None


def _offsets(shapes: dict[str, list[int]]) -> dict[str, tuple[int, int]]:
    """Where each of ``shapes`` lies in a flat buffer holding them in order."""
    out, at = {}, 0
    for name, shape in shapes.items():
        out[name] = (at, at + math.prod(shape))
        at += math.prod(shape)
    return out


def tp_all_reduce(graph: poplar.Graph, tp: int) -> AllReduce:
    """The all-reduce of a row-split product's partial sums in the CONSECUTIVE tensor-parallel
    group (nothing with one rank)."""
    group = gcl.CommGroup(gcl.CommGroupType.CONSECUTIVE, tp)

    def run(t: poplar.Tensor, seq: prog.Sequence, name: str) -> None:
        if tp > 1:
            gcl.allReduceInPlaceCrossReplica(graph, t, gcl.CollectiveOperator.ADD, seq, group, name)

    return run
