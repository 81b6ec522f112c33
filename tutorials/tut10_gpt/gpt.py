"""Tutorial 10 (a poplar-py addition): train a GPT with tensor, pipeline and data parallelism and
Adam's state sharded in Streaming Memory, on a simulated Bow Pod.

The model (``model.py``): byte-level tokens (vocabulary 256), learned positions, L pre-layer-norm
decoder blocks of causal multi-head attention and a GELU MLP (4x hidden), a final layer norm and
an output projection tied to the token embedding, softmax cross-entropy. It learns to predict
the next byte of a public-domain English text (``data/``); with ``--predictions K`` it is a masked
model instead, as BERT is pre-trained: attention both ways, K bytes of each sequence masked
(replaced by byte 0) and predicted from the rest.

The Pod's IPUs are ``pp x tp x dp``: a replica is ``pp`` IPUs (the layers cut into pipeline
stages, one per IPU); ``tp`` consecutive replicas split every layer (tensor parallelism: heads and
MLP units, an all-reduce in the group after each row-split product); ``dp`` such groups train on
different micro-batches (data parallelism, over ORTHOGONAL groups), and shard Adam's state between
them in Streaming Memory (``optimiser.py``). A step runs ``accum`` micro-batches per replica; with
``pp > 1`` in GPipe's schedule (every micro-batch forward through the stages, then every one
backward), whose stages run side by side on their IPUs; the head is a stage of its own after the
last, on the first IPU beside the token embedding its projection shares (as Graphcore places
BERT's heads).

    poplar-py run tutorials/tut10_gpt/gpt.py [--pod 16|64|256] [--tp T] [--pp P] [--dp D]
        [--accum G] [--steps N] [--layers L] [--hidden H] [--heads A] [--seq S] [--batch B]
        [--lr ETA] [--seed K] [--layers-per-ipu N,N,...] [--phased] [--half] [--predictions K]
        [--vocab V] [--recompute] [--outlined] [--memory-proportion P] [--embedding-serialization K]
        [--device model|ipu] [--steady G] [--bert-base]

``--layers-per-ipu`` places the layers on the stages (``0,4,4,4``: the embeddings alone on the first
IPU, as Graphcore pipelines BERT); ``--half`` keeps weights, activations and gradients in half and
multiplies with half partials (as Graphcore trains BERT on Pods); Adam's master weights and moments
stay float. ``--memory-proportion`` is PopLibs' ``availableMemoryProportion`` for the products;
``--embedding-serialization K`` runs the head's products over the vocabulary as K products over
slices of it (Graphcore's ``embedding_serialization_factor``). ``--outlined`` gives every layer of a
stage one block's code (the layers' weights copied into it for each call) and ``--recompute`` keeps
only each block's input for the backward pass. ``--bert-base`` is BERT-Base pre-training as
Graphcore runs it on a Bow Pod16 (run it with ``poplar-py run --arch ipu21``): it prints the step
projected to Graphcore's 512 micro-batches (``--steady``) beside Graphcore's published throughput.

Each step prints its loss (nats per byte, the mean over the step's predictions), the simulated step
time, the Pod's sequences and tokens per second and the model FLOPs per IPU a second
(``Sizes.flops_per_token``).
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import breakdown
import numpy as np
import pipeline
from model import Sizes, Stage, parameter_shapes, tp_all_reduce
from optimiser import ShardedAdam, corrections

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, poplin, popnn, popops, poputil

DATA = Path(__file__).resolve().parent / "data" / "genesis_exodus.txt"
#: ``--bert-base``: BERT-Base pre-training (phase 1) as Graphcore runs it on a Bow Pod16 (the
#: Hugging Face model card of Graphcore/bert-base-uncased): 4 replicas of a 4-IPU pipeline, the
#: embeddings alone on the first IPU, half with half partials, micro-batches of 32, the head's
#: products over the vocabulary serialised (in 4). Graphcore accumulates 512 micro-batches; the
#: run here takes one step of 4 and projects the step to 512 (``--steady``). Flags given
#: explicitly win.
BERT_BASE = dict(layers=12, hidden=768, heads=12, seq=128, predictions=20, vocab=30522, half=True, tp=1,
                 pp=4, dp=4, layers_per_ipu=(0, 4, 4, 4), recompute=True, outlined=True, batch=32, accum=4,
                 embedding_serialization=4, steps=1, steady=512, device="ipu")
#: Graphcore's published throughput of that configuration (micro-batch 32, 512 micro-batches,
#: 65,536 sequences a step; SDK 3.1, PopART): https://www.graphcore.ai/performance-results
GRAPHCORE_BERT_BASE_SEQUENCES = 16_391
BOW_CLOCK = 1.85e9
#: the default split of each Bow Pod: (tp, pp, dp)
PODS = {16: (2, 2, 4), 64: (4, 2, 8), 256: (4, 2, 32)}


@dataclass(frozen=True)
class Split:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    accum: int = 1
    layers_per_ipu: tuple[int, ...] | None = None  # layers of each stage (None: as even as can be)

    def stage_layers(self, layers: int) -> list[range]:
        """The layers of each pipeline stage."""
        counts = self.layers_per_ipu or [(i + 1) * layers // self.pp - i * layers // self.pp
                                         for i in range(self.pp)]
        ends = np.cumsum([0, *counts]).tolist()
        return [range(a, b) for a, b in itertools.pairwise(ends)]

    @property
    def replicas(self) -> int:
        return self.tp * self.dp

    @property
    def ipus(self) -> int:
        return self.pp * self.replicas


def check(s: Sizes, split: Split, pod: int | None, phased: bool = False, outlined: bool = False) -> None:
    """A clear message naming the flags for a split that cannot run, before any graph is built."""
    problems = []
    if phased and outlined:
        problems.append("--phased stages already run one block's code for every layer (their weights from "
                        "Streaming Memory); --outlined keeps the weights on the tiles: give one of them")
    if pod is not None and split.ipus != pod:
        problems.append(
            f"--pp {split.pp} x --tp {split.tp} x --dp {split.dp} = {split.ipus} IPUs, but a Pod{pod} "
            f"has {pod}"
        )
    if s.heads % split.tp or s.mlp % split.tp:
        problems.append(f"--tp {split.tp} must divide --heads {s.heads} and the MLP's {s.mlp} units")
    if split.layers_per_ipu is None and split.pp > s.layers:
        problems.append(f"--pp {split.pp} is more stages than --layers {s.layers}")
    if split.layers_per_ipu is not None and (
        len(split.layers_per_ipu) != split.pp or sum(split.layers_per_ipu) != s.layers
        or min(split.layers_per_ipu) < 0
    ):
        problems.append(
            f"--layers-per-ipu {','.join(map(str, split.layers_per_ipu))} must give each of the --pp "
            f"{split.pp} stages a number of layers, {s.layers} (--layers) in all"
        )
    if split.pp > 1 and split.accum < split.pp:
        problems.append(
            f"--accum {split.accum} is fewer micro-batches than the --pp {split.pp} stages a pipeline needs"
        )
    if s.hidden % s.heads:
        problems.append(f"--heads {s.heads} must divide --hidden {s.hidden}")
    if s.vocab < 256:
        problems.append(f"--vocab {s.vocab} must hold the text's 256 bytes")
    if not 1 <= s.serialization <= s.vocab:
        problems.append(f"--embedding-serialization {s.serialization} must be from 1 to --vocab {s.vocab}")
    if not 0 <= s.predictions <= s.seq:
        problems.append(f"--predictions {s.predictions} must be 0 (a causal model) to --seq {s.seq}")
    if problems:
        raise SystemExit("gpt.py: " + "; ".join(problems))


class Trainer:
    """The training step on every replica, compiled and loaded."""

    def __init__(
        self,
        s: Sizes,
        split: Split,
        lr: float,
        device: poplar.Device | None = None,
        phased: bool = False,
        recompute: bool = False,
        outlined: bool = False,
    ) -> None:
        self.s, self.split, self.lr = s, split, lr
        if device is None:
            model = poplar.IPUModel("ipu21")
            model.numIPUs = split.ipus
            device = model.createDevice()
        self.device = device
        graph = self.graph = poplar.Graph(device, replication_factor=split.replicas)
        for lib in (popops, poplin, popnn):
            lib.addCodelets(graph)
        tiles = graph.getTarget().getNumTiles() // split.pp
        self.stages = []
        micros = split.accum if split.pp > 1 else 1  # micro-batches in flight
        for i, layers in enumerate(split.stage_layers(s.layers)):
            g = graph if split.pp == 1 else graph.createVirtualGraph(i * tiles, (i + 1) * tiles)
            self.stages.append(
                Stage(
                    g, s, split.tp, layers, i == 0, i == split.pp - 1, tp_all_reduce(g, split.tp), i, phased,
                    micros, recompute, outlined,
                )
            )
        first = self.stages[0]
        self.seq = prog.Sequence(name="step")
        self.hyper = first.graph.addVariable(poplar.FLOAT, [2], "adam/hyper")
        first.graph.setTileMapping(self.hyper, 0)
        self.seq.add(prog.Copy(graph.addHostToDeviceFIFO("adam", poplar.FLOAT, 2), self.hyper))
        self.tokens_in = graph.addHostToDeviceFIFO("tokens", poplar.UNSIGNED_INT, s.tokens)
        self.targets_in = graph.addHostToDeviceFIFO("targets", poplar.UNSIGNED_INT, s.targets)
        self.positions_in = None if s.causal else graph.addHostToDeviceFIFO(
            "positions", poplar.UNSIGNED_INT, s.targets)
        self.pipeline: set[str] = set()  # the names of the micro-batches' steps (pipelined or not)
        self.loss = first.graph.addVariable(poplar.FLOAT, [1], "loss")
        first.graph.setTileMapping(self.loss, 0)
        popops.zero(first.graph, self.loss, self.seq, "loss/zero")
        if split.pp == 1:
            body = prog.Sequence(name="microBatch")
            self._micro_batch(body)
            self.seq.add(prog.Repeat(split.accum, body))
            self.pipeline = {prog.step_label(p) for p in prog.walk([body])}
        else:
            self._gpipe()
        dp_group = gcl.CommGroup(gcl.CommGroupType.ORTHOGONAL, split.dp)
        self.optimisers: dict[str, ShardedAdam] = {}  # by the name of what each updates
        for st in self.stages:
            hyper = self._hyper_on(st)
            for name, (lo, hi) in st.update_ranges().items():
                self.optimisers[name] = ShardedAdam(
                    st.graph, st.params.slice(lo, hi), st.grads.slice(lo, hi), hyper, dp_group, name, self.seq
                )
            for layer in st.layers if st.phased else ():  # each layer's update between its load and store
                st.load(layer, self.seq, grads=True)
                self.optimisers[f"stage{st.index}/l{layer}"] = ShardedAdam(
                    st.graph, st.work, st.work_grads, hyper, dp_group, f"stage{st.index}/l{layer}", self.seq
                )
                st.store(layer, self.seq)
        self.seq.add(prog.Copy(self.loss, graph.addDeviceToHostFIFO("loss", poplar.FLOAT, 1)))
        for st in self.stages:
            if st.params.numElements():
                graph.createHostWrite(f"stage{st.index}/params", st.params)
                graph.createHostRead(f"stage{st.index}/params/read", st.params)
        self.engine = poplar.Engine(graph, self.seq)
        self.engine.load(device)

    def _hyper_on(self, stage: Stage) -> poplar.Tensor:
        """The step's Adam numbers, on the stage's IPU."""
        if stage.index == 0:
            return self.hyper
        moved = stage.graph.addVariable(poplar.FLOAT, [2], f"stage{stage.index}/adam/hyper")
        stage.graph.setTileMapping(moved, 0)
        self.seq.add(prog.Copy(self.hyper, moved))
        return moved

    def _tokens(self, seq: prog.Sequence, name: str) -> poplar.Tensor:
        """A micro-batch's tokens from the host, on the first stage."""
        first = self.stages[0]
        tokens = first.graph.addVariable(poplar.UNSIGNED_INT, [self.s.tokens, 1], f"{name}/tokens")
        poputil.mapTensorLinearly(first.graph, tokens)
        seq.add(prog.Copy(self.tokens_in, tokens.flatten()))
        return tokens

    def _targets(self, seq: prog.Sequence, name: str) -> tuple[poplar.Tensor, poplar.Tensor | None]:
        """A micro-batch's targets and (a masked model) the positions that predict them, from the
        host, on the first stage (the head's)."""
        first = self.stages[0]
        targets = first.graph.addVariable(poplar.UNSIGNED_INT, [self.s.targets], f"{name}/targets")
        poputil.mapTensorLinearly(first.graph, targets)
        seq.add(prog.Copy(self.targets_in, targets))
        positions = None
        if self.positions_in is not None:
            positions = first.graph.addVariable(poplar.UNSIGNED_INT, [self.s.targets, 1], f"{name}/positions")
            poputil.mapTensorLinearly(first.graph, positions)
            seq.add(prog.Copy(self.positions_in, positions.flatten()))
        return targets, positions

    @property
    def scale(self) -> float:
        """d loss / d logits' factor: the loss is the mean over a replica's step's predictions."""
        return 1 / (self.s.targets * self.split.accum)

    def _micro_batch(self, seq: prog.Sequence) -> None:
        """One stage: a micro-batch forward and backward, accumulating its gradients."""
        stage = self.stages[0]
        stage.select(0, seq)
        tokens = self._tokens(seq, "microBatch")
        targets, positions = self._targets(seq, "microBatch")
        x, saved = stage.forward_layers(stage.embed(tokens, seq), seq)
        loss, head = stage.head(x, targets, positions, seq, self.scale)
        d = stage.head_backward(head, seq)
        popops.addInPlace(stage.graph, self.loss, loss.reshape([1]), seq, "loss/acc")
        d = stage.backward_layers(d, saved, seq)
        stage.embed_backward(tokens, d, seq)

    def _arrival(self, like: poplar.Tensor, stage: Stage, name: str) -> poplar.Tensor:
        """Where a tensor like ``like`` from a neighbouring stage arrives on ``stage``'s IPU."""
        t = stage.graph.addVariable(like.elementType(), like.shape(), name)
        poputil.mapTensorLinearly(stage.graph, t)
        return t

    def _gpipe(self) -> None:
        """The stages' passes, each built once (``pipeline``), in GPipe's schedule; the head is a
        pipeline stage of its own after the last, on the first stage's IPU beside the token
        embedding its output projection shares (Graphcore's placement of BERT's heads)."""
        passes: list[pipeline.StagePasses] = []
        bodies: list[prog.Program] = []
        first = self.stages[0]
        x_in: poplar.Tensor | None = None
        for st in self.stages:
            forward, backward = prog.Sequence(name=f"stage{st.index}/forward"), prog.Sequence(
                name=f"stage{st.index}/backward")
            kept: list[poplar.Tensor] = []
            if st.first:
                tokens = self._tokens(forward, f"stage{st.index}")
                x = st.embed(tokens, forward)
                kept.append(tokens)
            else:
                assert x_in is not None
                x = x_in
            x_out, saved = st.forward_layers(x, forward)
            kept += [t for layer in saved for t in layer.values()]
            d_in = self._arrival(x_out, st, f"stage{st.index}/outGrad")
            d = st.backward_layers(d_in, saved, backward)
            if st.first:
                st.embed_backward(tokens, d, backward)
            passes.append(pipeline.StagePasses(
                st.graph.addFunction(forward), st.graph.addFunction(backward),
                pipeline.Stash(st.graph, kept, self.split.accum, f"stage{st.index}"), st.select,
                x_in=None if st.first else x, x_out=x_out, d_in=d_in, d_out=None if st.first else d,
            ))
            bodies += [forward, backward]
            x_in = self._arrival(x_out, self.stages[st.index + 1] if not st.last else first,
                                 f"stage{st.index + 1}/in" if not st.last else "head/in")
        assert x_in is not None
        head, head_bodies = self._head_passes(first, x_in)
        passes.append(head)
        bodies += head_bodies
        schedule = pipeline.gpipe(passes, self.split.accum, self.seq)
        self.pipeline = {prog.step_label(p) for p in prog.walk([*schedule, *bodies])}

    def _head_passes(self, first: Stage, x_in: poplar.Tensor
                     ) -> tuple[pipeline.StagePasses, list[prog.Program]]:
        """The head's pipeline stage on the first stage's IPU (the loss of the last stage's output
        ``x_in`` forward, the gradient of that output backward), and its two bodies."""
        forward, backward = prog.Sequence(name="head/forward"), prog.Sequence(name="head/backward")
        targets, positions = self._targets(forward, "head")
        loss, head = first.head(x_in, targets, positions, forward, self.scale)
        popops.addInPlace(first.graph, self.loss, loss.reshape([1]), forward, "loss/acc")
        d_out = first.head_backward(head, backward)
        kept = [t for t in head.values() if t is not None]
        return pipeline.StagePasses(
            first.graph.addFunction(forward), first.graph.addFunction(backward),
            pipeline.Stash(first.graph, kept, self.split.accum, "head"), pipeline.no_slot,
            x_in=x_in, d_out=d_out,
        ), [forward, backward]

    # ---- the host's side ---------------------------------------------------------------------
    def replica_tp(self, r: int) -> int:
        return r % self.split.tp

    def write_parameters(self, full: dict[str, np.ndarray]) -> None:
        """Every replica's shard of ``full`` (the whole model's parameters) into its stages' buffers
        (phased: its layers' rows in Streaming Memory), and each optimiser's shard of them into its
        row of master weights."""
        groups = gcl.CommGroup(gcl.CommGroupType.ORTHOGONAL, self.split.dp).groups(self.split.replicas)
        for r in range(self.split.replicas):
            place, rank = next(g.index(r) for g in groups if r in g), self.replica_tp(r)
            for st in self.stages:
                if st.params.numElements():
                    flat = flat_of(st.offsets, full, st.tp, rank, st.params.numElements(), st.flat_value)
                    self.engine.writeTensor(f"stage{st.index}/params", flat, replicaIndex=r)
                    for name, (lo, hi) in st.update_ranges().items():
                        self._write_master(name, flat[lo:hi], place, r)
                for layer in st.layers if st.phased else ():
                    names = {f"l{layer}.{k}": v for k, v in st.layer_offsets.items()}
                    row = flat_of(names, full, st.tp, rank, st.layer_size, st.flat_value)
                    self.engine.copyToRemoteBuffer(
                        row.astype(self.s.dtype.dtype), f"stage{st.index}/l{layer}", 0, replicaIndex=r
                    )
                    self._write_master(f"stage{st.index}/l{layer}", row, place, r)

    def _write_master(self, name: str, flat: np.ndarray, place: int, r: int) -> None:
        """Replica ``r``'s shard (its ``place`` in its data-parallel group) of the master weights
        that optimiser ``name`` updates, from their values ``flat``."""
        adam = self.optimisers[name]
        master = np.zeros(adam.shard, np.float32)
        part = flat[place * adam.shard : (place + 1) * adam.shard]
        master[: part.size] = part
        self.engine.copyToRemoteBuffer(master, f"{name}/adam", 0, replicaIndex=r)

    def read_parameters(self, r: int) -> dict[str, np.ndarray]:
        """Replica ``r``'s parameters, by name (its tensor-parallel shard of each)."""
        out = {}
        for st in self.stages:
            if st.params.numElements():
                flat = self.engine.readTensor(f"stage{st.index}/params/read", replicaIndex=r)
                out.update({name: st.value_of(name, flat[lo:hi]) for name, (lo, hi) in st.offsets.items()})
            for layer in st.layers if st.phased else ():
                row = np.empty(st.layer_size, self.s.dtype.dtype)
                self.engine.copyFromRemoteBuffer(f"stage{st.index}/l{layer}", row, 0, replicaIndex=r)
                out.update(
                    {
                        f"l{layer}.{k}": row[lo:hi].reshape(st.layer_shapes[k])
                        for k, (lo, hi) in st.layer_offsets.items()
                    }
                )
        return out

    def step(self, batches: Batches, number: int) -> float:
        """One training step on ``batches``: the mean loss over every prediction of the step."""
        losses = np.zeros([self.split.replicas, 1], np.float32)
        hyper = corrections(self.lr, number)
        for r in range(self.split.replicas):
            streams = {"tokens": batches.tokens[r], "targets": batches.targets[r]}
            if self.positions_in is not None:
                streams["positions"] = batches.flat_positions(r)
            for name, values in streams.items():
                self.engine.connectStream(name, values.astype(np.uint32).reshape(-1).copy(), replicaIndex=r)
            self.engine.connectStream("adam", hyper, replicaIndex=r)
            self.engine.connectStream("loss", losses[r], replicaIndex=r)
        self.engine.run()
        return float(losses.sum() / (self.split.replicas * self.s.targets * self.split.accum))


def flat_of(
    offsets: dict[str, tuple[int, int]],
    full: dict[str, np.ndarray],
    tp: int,
    rank: int,
    size: int,
    flat_value: Callable[[str, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Parameters laid out flat at ``offsets`` (rank ``rank``'s shard of each, in the buffer's order
    of its elements, ``flat_value``), cut from ``full``."""
    out = np.zeros(size, np.float32)
    for name, (lo, hi) in offsets.items():
        out[lo:hi] = flat_value(name, shard_of(name, full[name], tp, rank))
    return out


def shard_of(name: str, value: np.ndarray, tp: int, rank: int) -> np.ndarray:
    """Rank ``rank``'s part of a parameter: the columns of the query, key, value and first MLP
    projections (and their biases), the rows of the attention output and second MLP projections."""
    short = name.split(".", 1)[-1]
    if short in ("wq", "wk", "wv", "w1", "bq", "bk", "bv", "b1"):
        n = value.shape[-1] // tp
        return value[..., rank * n : (rank + 1) * n]
    if short in ("wo", "w2"):
        n = value.shape[0] // tp
        return value[rank * n : (rank + 1) * n]
    return value


def initial_parameters(s: Sizes, seed: int) -> dict[str, np.ndarray]:
    """GPT-2's initialisation: normal weights (0.02), zero biases, unit layer-norm gains."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in parameter_shapes(s, 1, range(s.layers), True).items():
        short = name.split(".")[-1]
        if short == "g":
            out[name] = np.ones(shape, np.float32)
        elif short.startswith("b"):
            out[name] = np.zeros(shape, np.float32)
        else:
            out[name] = (0.02 * rng.standard_normal(shape)).astype(np.float32)
    return out


#: the token a masked model reads in place of a token it predicts (the text has no byte 0)
MASK = 0


@dataclass(frozen=True)
class Batches:
    """A step's micro-batches, each ``[replica, micro-batch, batch, ...]``: the tokens read, the
    targets predicted, and (a masked model) the positions in a sequence that predict them."""

    tokens: np.ndarray
    targets: np.ndarray
    positions: np.ndarray | None = None

    def flat_positions(self, r: int) -> np.ndarray:
        """Replica ``r``'s positions as indices of its micro-batches' tokens (sequence after sequence)."""
        assert self.positions is not None
        seq = self.tokens.shape[-1]
        return self.positions[r] + seq * np.arange(self.positions.shape[2])[:, None]

    def replica(self, r: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """Replica ``r``'s micro-batches: (tokens, targets, flat positions or None) each."""
        flat = None if self.positions is None else self.flat_positions(r)
        return [(self.tokens[r, j].reshape(-1), self.targets[r, j].reshape(-1),
                 None if flat is None else flat[j].reshape(-1)) for j in range(self.tokens.shape[1])]


def batches(text: bytes, s: Sizes, split: Split, rng: np.random.Generator) -> Batches:
    """A step's micro-batches of the text: replicas of one tensor-parallel group read the same ones,
    groups of the data-parallel dimension their own. A causal model reads ``seq`` bytes and
    predicts each next one; a masked model reads ``seq`` bytes with ``predictions`` of them masked
    and predicts those."""
    data = np.frombuffer(text, np.uint8)
    starts = rng.integers(0, data.size - s.seq - 1, [split.dp, split.accum, s.batch])
    # replica r reads group r // tp's
    seqs = np.repeat(data[starts[..., None] + np.arange(s.seq + 1)], split.tp, axis=0)
    if s.causal:
        return Batches(seqs[..., :-1], seqs[..., 1:])
    tokens = seqs[..., :-1].copy()
    order = rng.random([split.dp, split.accum, s.batch, s.seq]).argsort(axis=-1)  # a random order a sequence
    positions = np.repeat(np.sort(order[..., : s.predictions], axis=-1), split.tp, axis=0)
    targets = np.take_along_axis(tokens, positions, axis=-1)
    np.put_along_axis(tokens, positions, MASK, axis=-1)
    return Batches(tokens, targets, positions)


def unigram_entropy(text: bytes) -> float:
    counts = np.bincount(np.frombuffer(text, np.uint8), minlength=256)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pod", type=int, choices=sorted(PODS), default=None)
    p.add_argument("--device", choices=("model", "ipu"), default="model",
                   help="model: a Bow IPU Model; ipu: attach to the Pod's IPUs from the DeviceManager (the "
                        "hardware path; `poplar-py run --arch ipu21` makes them Bow IPUs)")
    for flag in ("tp", "pp", "dp", "accum"):
        p.add_argument(f"--{flag}", type=int, default=None)
    p.add_argument("--layers-per-ipu", type=lambda v: tuple(int(n) for n in v.split(",")), default=None,
                   help="the layers of each pipeline stage, as 0,4,4,4 (the embedding's stage may have none)")
    p.add_argument("--phased", action="store_true", help="keep each layer's weights in Streaming Memory")
    p.add_argument("--half", action="store_true", help="weights, activations and gradients in half")
    p.add_argument("--recompute", action="store_true",
                   help="keep each block's input only and run the block forward again before its backward")
    p.add_argument("--outlined", action="store_true",
                   help="one block's code for every layer of a stage, its weights copied in for each call")
    p.add_argument("--vocab", type=int, default=256,
                   help="the token embedding's rows (the text's bytes use the first 256: 30522 is BERT's)")
    p.add_argument("--predictions", type=int, default=0,
                   help="a masked model (BERT): the masked positions a sequence predicts (0: a causal model)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--memory-proportion", type=float, default=None,
                   help="PopLibs' availableMemoryProportion for the products (Graphcore's BERT: 0.28)")
    p.add_argument("--embedding-serialization", type=int, default=1,
                   help="the head's products over the vocabulary as this many, each over a slice of it "
                        "(Graphcore's embedding_serialization_factor)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steady", type=int, default=None,
                   help="also print the step projected to this many micro-batches (the pipeline full)")
    p.add_argument("--bert-base", action="store_true",
                   help="BERT-Base as Graphcore trains it on a Bow Pod16 (flags given explicitly win)")
    args = p.parse_args(argv)
    if args.bert_base:
        p.set_defaults(**BERT_BASE)  # flags given explicitly still win, even at their usual default
        args = p.parse_args(argv)
    return args


def split_of(args: argparse.Namespace) -> Split:
    """The split: a Pod's default (Pod16 unless --pod or a flag says otherwise), flags overriding."""
    explicit = {k: getattr(args, k) for k in ("tp", "pp", "dp") if getattr(args, k) is not None}
    pod = args.pod if args.pod is not None or explicit else 16
    tp, pp, dp = PODS[pod] if pod is not None else (1, 1, 1)
    base = {"tp": tp, "pp": pp, "dp": dp, **explicit}
    accum = args.accum if args.accum is not None else base["pp"]
    return Split(base["tp"], base["pp"], base["dp"], accum, args.layers_per_ipu)


def sizes_of(args: argparse.Namespace) -> Sizes:
    return Sizes(hidden=args.hidden, heads=args.heads, layers=args.layers, seq=args.seq, batch=args.batch,
                 half=args.half, predictions=args.predictions, vocab=args.vocab,
                 memory_proportion=args.memory_proportion, serialization=args.embedding_serialization)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    s, split = sizes_of(args), split_of(args)
    check(s, split, args.pod, args.phased, args.outlined)
    text = DATA.read_bytes()
    print(
        f"{'GPT' if s.causal else f'BERT-style masked model ({s.predictions} predictions a sequence)'}: "
        f"{s.layers} layers, hidden {s.hidden}, {s.heads} heads, sequence {s.seq}, "
        f"vocabulary {s.vocab}, {s.dtype}; tp {split.tp} x pp {split.pp} x dp {split.dp} = "
        f"{split.ipus} IPUs, {split.accum} micro-batch(es) of {s.batch} per replica and step"
    )
    print(
        f"text: {DATA.name}, {len(text):,} bytes, unigram entropy {unigram_entropy(text):.3f} nats per byte"
    )
    device = attach(split.ipus) if args.device == "ipu" else None
    if args.bert_base and device is not None and device.getTarget().getTileClockFrequency() != BOW_CLOCK:
        raise SystemExit("gpt.py: --bert-base compares with a Bow Pod16: run it as "
                         "`poplar-py run --arch ipu21 tutorials/tut10_gpt/gpt.py --bert-base`")
    trainer = Trainer(s, split, args.lr, device, args.phased, args.recompute, args.outlined)
    full = initial_parameters(s, args.seed)
    trainer.write_parameters(full)
    target = trainer.device.getTarget()
    describe_memory(trainer, sum(v.size for v in full.values()), args.phased)
    rng = np.random.default_rng(args.seed)
    for step in range(1, args.steps + 1):
        trainer.engine.resetExecutionProfile()  # the profile holds one step (the last, at the end)
        loss = trainer.step(batches(text, s, split, rng), step)
        execution = trainer.engine.getProfile()["execution"]
        figures = throughput(s, split, execution["totalCycles"], split.accum, target)
        print(f"step {step} loss {loss:.4f}  {figures}")
        print("  " + describe_cycles(execution, trainer))
    if args.steady is not None:
        cycles = breakdown.steady_state(
            execution, trainer.pipeline, range(split.pp), split.accum, args.steady
        )
        print(f"steady state, {args.steady} micro-batches a step (each past the {split.accum} run at the "
              f"busiest stage's pace): {throughput(s, split, cycles, args.steady, target)}")
        _, busy = breakdown.pipeline_busy(execution, trainer.pipeline, range(split.pp))
        print("  the pace, busy cycles a micro-batch: " + ", ".join(
            f"IPU {ipu} {cycles // split.accum:,}" for ipu, cycles in busy.items()))
    if args.bert_base:
        flops = s.flops_per_token * s.seq * GRAPHCORE_BERT_BASE_SEQUENCES
        print(f"Graphcore's Bow Pod16 (micro-batch 32, 512 micro-batches): "
              f"{GRAPHCORE_BERT_BASE_SEQUENCES:,} sequences/s, {flops / 16 / 1e12:.1f} model TFLOPS per IPU")


def attach(ipus: int) -> poplar.Device:
    """The first free device of ``ipus`` IPUs from the DeviceManager, attached."""
    print(f"Trying to attach to {ipus} IPUs")
    devices = poplar.DeviceManager.createDeviceManager().getDevices(poplar.TargetType.IPU, ipus)
    device = next((d for d in devices if d.attach()), None)
    if device is None:
        raise SystemExit(f"gpt.py: no device of {ipus} IPUs to attach to")
    clock = device.getTarget().getTileClockFrequency()
    print(f"Attached to device {device.getId()}: {ipus} IPUs at {clock / 1e9:.2f} GHz")
    return device


def throughput(s: Sizes, split: Split, cycles: int, micros: int, target: poplar.Target) -> str:
    """A step of ``cycles`` on ``micros`` micro-batches a replica: its time, the Pod's sequences
    and tokens a second, the model FLOPs per IPU a second (``Sizes.flops_per_token``)."""
    seconds = cycles / target.getTileClockFrequency()
    sequences = s.batch * micros * split.dp  # the tensor-parallel replicas of a group read the same ones
    tokens = sequences * s.seq
    return (
        f"{seconds * 1e3:.3f} ms simulated, {sequences / seconds:,.1f} sequences/s, {tokens / seconds:,.0f} "
        f"tokens/s, {s.flops_per_token * tokens / seconds / split.ipus / 1e12:.2f} model TFLOPS per IPU"
    )


def describe_memory(trainer: Trainer, params: int, phased: bool) -> None:
    """The model's size against the Pod's SRAM, and each IPU's SRAM and Streaming Memory."""
    target = trainer.device.getTarget()
    sram, per_ipu = (
        target.getNumTiles() * target.getBytesPerTile(),
        target.getTilesPerIPU() * target.getBytesPerTile(),
    )
    print(
        f"parameters: {params:,} ({4 * params / 2**20:,.1f} MiB in float, "
        f"{12 * params / 2**20:,.1f} MiB with Adam's moments); the Pod's SRAM: {sram / 2**20:,.1f} MiB"
        + ("; each layer's weights in Streaming Memory (--phased)" if phased else "")
    )
    for k, (tile_bytes, remote) in enumerate(
        breakdown.memory(trainer.engine.getProfile()["compilation"], trainer.split.pp)
    ):
        print(
            f"  IPU {k} of each replica (stage {k}): SRAM {tile_bytes / 2**20:,.1f} of "
            f"{per_ipu / 2**20:,.1f} MiB, Streaming Memory {remote / 2**20:,.1f} MiB"
        )


def describe_cycles(execution: dict, trainer: Trainer) -> str:
    """Where a step's cycles went (``breakdown``)."""
    shares = breakdown.work(execution)
    links = {k.removeprefix("links: "): v for k, v in shares.items() if k.startswith("links: ")}
    bubble = breakdown.bubble(execution, trainer.pipeline, range(trainer.split.pp))
    return (
        f"cycles: compute {shares['compute']:.1%}, exchange {shares['exchange']:.1%}, IPU-Links "
        f"{sum(links.values()):.1%} ({', '.join(f'{k} {v:.1%}' for k, v in links.items())}), Streaming "
        f"Memory {shares['streaming memory']:.1%}, host {shares['host']:.1%}, sync {shares['sync']:.1%}; "
        f"pipeline bubble {bubble:.1%}"
    )


if __name__ == "__main__":
    main()
