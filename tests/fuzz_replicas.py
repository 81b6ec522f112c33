"""Seeded fuzz families around replication (for tests/test_fuzz.py): replicated graphs, their
factors, CrossReplicaCopy maps, replica indices, gcl's collectives with good and bad
arguments, and virtual graphs of replicated graphs.

A valid case runs its program on every replica and compares each replica's result with
numpy (exactly, except float reductions, whose order differs); a bad case must raise a
PoplarError naming its culprit and leave the graph as it was.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_cases import Case
from fuzz_cases import snapshot as graph_snapshot

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, popops

SEED = 20260426
Op = gcl.CollectiveOperator
TILES = 4  # per IPU


class Pod:
    """A graph of ``replicas`` replicas of ``ipus`` IPUs of 4 tiles, with popops' codelets and a
    program ``seq``; inputs are written per replica from numpy."""

    def __init__(self, tmp: Path, replicas: int = 2, ipus: int = 1) -> None:
        model = poplar.IPUModel()
        model.numIPUs, model.tilesPerIPU = replicas * ipus, TILES
        self.device = model.createDevice()
        self.graph = poplar.Graph(self.device, replication_factor=replicas)
        popops.addCodelets(self.graph)
        self.replicas, self.ipus = replicas, ipus
        self.seq = prog.Sequence()
        self.inputs: dict[str, np.ndarray] = {}  # name: one array per replica
        self.x = self.input("x", np.arange(replicas * ipus * 3, dtype=np.float32).reshape(replicas, ipus, 3))

    def snapshot(self) -> tuple:
        return graph_snapshot(self.graph)

    def input(self, name: str, per_replica: np.ndarray, graph: poplar.Graph | None = None) -> poplar.Tensor:
        """A variable holding ``per_replica[r]`` on replica r; row i (of a tensor of rank 2 and
        more with one row per IPU) spread over IPU i's tiles, else spread over every tile."""
        graph = graph or self.graph
        shape = list(per_replica.shape[1:])
        t = graph.addVariable(per_replica.dtype, shape, name)
        tiles = graph.getTarget().getNumTiles()
        rows = [t[i] for i in range(self.ipus)] if len(shape) > 1 and shape[0] == self.ipus else [t]
        for i, row in enumerate(rows):
            flat, first = row.flatten(), i * tiles // len(rows)
            n, spread = flat.numElements(), tiles // len(rows)
            for k in range(spread):
                graph.setTileMapping(flat.slice(n * k // spread, n * (k + 1) // spread), first + k)
        graph.createHostWrite(name, t)
        self.inputs[name] = per_replica
        return t

    def run(self, *outputs: poplar.Tensor) -> list[list[np.ndarray]]:
        """Build and run ``seq``: per output, its value on each replica."""
        for k, t in enumerate(outputs):
            self.graph.createHostRead(f"out{k}", t)
        engine = poplar.Engine(self.graph, self.seq)
        engine.load(self.device)
        for name, values in self.inputs.items():
            for r in range(self.replicas):
                engine.writeTensor(name, values[r], replicaIndex=r)
        engine.run(0)
        return [[engine.readTensor(f"out{k}", replicaIndex=r) for r in range(self.replicas)]
                for k in range(len(outputs))]


def pod(replicas: int, ipus: int = 1) -> Callable[[Path], Pod]:
    return functools.partial(Pod, replicas=replicas, ipus=ipus)


def same(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Exactly equal, or for floats within the rounding of another reduction order."""
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)


# ---- collectives against numpy -----------------------------------------------------------------
REDUCE: dict[Op, Callable[[np.ndarray], np.ndarray]] = {
    Op.ADD: lambda a: a.sum(0), Op.MEAN: lambda a: a.mean(0), Op.MUL: lambda a: a.prod(0),
    Op.MIN: lambda a: a.min(0), Op.MAX: lambda a: a.max(0), Op.SQUARE_ADD: lambda a: (a * a).sum(0),
    Op.LOGICAL_AND: lambda a: a.all(0), Op.LOGICAL_OR: lambda a: a.any(0),
}
OPS = {np.float32: [Op.ADD, Op.MEAN, Op.MUL, Op.MIN, Op.MAX, Op.SQUARE_ADD, Op.LOCAL],
       np.int32: [Op.ADD, Op.MUL, Op.MIN, Op.MAX, Op.SQUARE_ADD, Op.LOCAL],
       np.bool_: [Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOCAL]}


def _data(rng: np.random.Generator, dtype: type, shape: list[int]) -> np.ndarray:
    if dtype is np.float32:
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if dtype is np.int32:
        return rng.integers(-3, 4, shape).astype(np.int32)
    return rng.random(shape) < 0.6


def _reduced(op: Op, data: np.ndarray, r: int) -> np.ndarray:
    """Replica r's result of reducing ``data`` (one row per replica) by ``op``."""
    return data[r] if op is Op.LOCAL else REDUCE[op](data).astype(data.dtype)


def _collective(w: Pod, function: str, op: Op, dtype: type, shape: list[int], seed: int, root: Any) -> None:
    """Run one collective on random data and compare every replica's result with numpy."""
    R = w.replicas
    data = _data(np.random.default_rng(seed), dtype, [R, *shape])
    t = w.input("t", data)
    g, seq = w.graph, w.seq
    if function == "allReduceCrossReplica":
        (out,) = w.run(gcl.allReduceCrossReplica(g, t, op, seq))
        expected = [_reduced(op, data, r) for r in range(R)]
    elif function == "allReduceInPlaceCrossReplica":
        gcl.allReduceInPlaceCrossReplica(g, t, op, seq)
        (out,) = w.run(t)
        expected = [_reduced(op, data, r) for r in range(R)]
    elif function == "reduceScatterCrossReplica":
        (out,) = w.run(gcl.reduceScatterCrossReplica(g, t, op, seq))
        chunk = -(-data[0].size // R)
        padded = np.zeros(R * chunk, data.dtype)
        padded[:data[0].size] = REDUCE[op](data.reshape(R, -1)).astype(data.dtype)
        expected = [padded[r * chunk:(r + 1) * chunk] for r in range(R)]
    elif function == "allGatherCrossReplica":
        (out,) = w.run(gcl.allGatherCrossReplica(g, t, seq))
        expected = [data] * R
    elif function == "broadcastCrossReplica":
        (out,) = w.run(gcl.broadcastCrossReplica(g, t, seq, rootReplica=root))
        expected = [data[int(root)]] * R
    elif function == "allReduceWithinReplica":
        (out,) = w.run(gcl.allReduceWithinReplica(g, t, op, seq))
        expected = [data[r] if op is Op.LOCAL else np.stack([_reduced(op, data[r], 0)] * w.ipus)
                    for r in range(R)]
    else:
        (out,) = w.run(gcl.allGatherWithinReplica(g, t, seq))
        expected = [np.stack([data[r]] * w.ipus) for r in range(R)]
    for r in range(R):
        same(out[r], expected[r], f"{function}({op}) on replica {r}")


CROSS = ["allReduceCrossReplica", "allReduceInPlaceCrossReplica", "reduceScatterCrossReplica",
         "allGatherCrossReplica", "broadcastCrossReplica"]
WITHIN = ["allReduceWithinReplica", "allGatherWithinReplica"]
SCATTERING = {"reduceScatterCrossReplica"}  # (LOCAL is no reduction there)
REDUCING = {"allReduceCrossReplica", "allReduceInPlaceCrossReplica", "reduceScatterCrossReplica",
            "allReduceWithinReplica"}


def _collectives(rng: random.Random) -> Iterator[Case]:
    for k in range(24):
        function = (CROSS + WITHIN)[k % 7]
        within = function in WITHIN
        replicas, ipus = rng.choice([(1, 2), (2, 2)] if within else [(2, 1), (3, 1), (4, 1), (2, 2), (4, 2)])
        dtype = rng.choice([np.float32, np.int32] + [np.bool_] * (function in REDUCING))
        op = rng.choice([o for o in OPS[dtype] if o is not Op.LOCAL or function not in SCATTERING])
        inner = [rng.randint(1, 9)] + ([rng.randint(1, 3)] if rng.random() < 0.3 else [])
        shape = [ipus, *inner] if within or rng.random() < 0.5 else inner
        root = rng.choice([int, np.int64, np.uint8])(rng.randrange(replicas))
        seed = rng.randrange(2**32)
        yield Case(f"gcl-{function}-{k}", None,
                   lambda w, f=function, o=op, d=dtype, s=shape, seed=seed, root=root:
                   _collective(w, f, o, d, s, seed, root), world=pod(replicas, ipus))


def _foreign(w: Pod) -> poplar.Tensor:
    other = poplar.Graph(w.device, replication_factor=w.replicas)
    return other.addVariable(poplar.FLOAT, [3], "foreign")


#: bad arguments of a collective: name: (what the message names, set-up making the changed arguments)
BAD_ARGUMENTS: dict[str, tuple[str, Callable[[Pod], dict[str, Any]]]] = {
    "graph-none": ("graph", lambda w: {"graph": None}),
    "graph-target": ("graph", lambda w: {"graph": w.device.getTarget()}),
    "tensor-none": ("tensor", lambda w: {"t": None}),
    "tensor-list": ("tensor", lambda w: {"t": [1.0, 2.0]}),
    "tensor-foreign": ("'foreign'", lambda w: {"t": _foreign(w)}),
    "prog-none": ("prog", lambda w: {"prog": None}),
    "prog-execute": ("prog", lambda w: {"prog": prog.Execute(w.graph.addComputeSet("cs"))}),
    "prog-repeat": ("prog", lambda w: {"prog": prog.Repeat(2, prog.Sequence())}),
    "prog-list": ("prog", lambda w: {"prog": [w.seq]}),
    "debug": ("debugContext", lambda w: {"debugContext": 7}),
    "options": ("options", lambda w: {"options": "fast"}),
    "option-value": ("option 'x'", lambda w: {"options": {"x": 1}}),
    "op-none": ("op", lambda w: {"op": None}),
    "op-string": ("op", lambda w: {"op": "ADD"}),
    "op-type": ("cannot combine tensor 'x'", lambda w: {"op": Op.LOGICAL_AND}),
    "root-float": ("rootReplica", lambda w: {"rootReplica": 1.0}),
    "root-bool": ("rootReplica", lambda w: {"rootReplica": True}),
    "root-range": ("rootReplica", lambda w: {"rootReplica": w.replicas}),
    "root-negative": ("rootReplica", lambda w: {"rootReplica": np.int64(-1)}),
}


def _call(function: str, w: Pod, changes: dict[str, Any]) -> Any:
    """``function`` on ``w.x`` into ``w.seq``, with some arguments changed."""
    args = {"graph": w.graph, "t": w.x, "op": Op.ADD, "prog": w.seq, **changes}
    keywords = {k: args[k] for k in ("debugContext", "options", "rootReplica") if k in args}
    operator = [args["op"]] if function in REDUCING else []
    return getattr(gcl, function)(args["graph"], args["t"], *operator, args["prog"], **keywords)


def _bad_collectives(rng: random.Random) -> Iterator[Case]:
    for k in range(48):
        function = (CROSS + WITHIN)[k % 7]
        bad = rng.choice([n for n in BAD_ARGUMENTS if (not n.startswith("op-") or function in REDUCING)
                          and (not n.startswith("root-") or function == "broadcastCrossReplica")])
        culprit, changes = BAD_ARGUMENTS[bad]
        yield Case(f"gcl-bad-{function}-{bad}-{k}", (function, culprit),
                   lambda w, c, f=function: _call(f, w, c), prepare=changes,
                   world=pod(rng.choice([2, 4]), 2 if function in WITHIN else 1))


# ---- replication factors, cross-replica copies, replica indices --------------------------------
def _factors(rng: random.Random) -> Iterator[Case]:
    bad: list[tuple[Any, str]] = [(0, "replication_factor"), (-2, "replication_factor"),
                                  (3, "replication factor 3"), (8, "replication factor 8"),
                                  (2.0, "replication_factor"), ("2", "replication_factor"),
                                  (None, "replication_factor"), (True, "replication_factor"),
                                  (np.float64(2), "replication_factor"), ([2], "replication_factor")]
    for k, (factor, culprit) in enumerate(bad):
        yield Case(f"replication-factor-{k}", (culprit,),
                   lambda w, x=factor: poplar.Graph(w.device, replication_factor=x), world=pod(4))


def _copy_across(w: Pod, mapping: dict) -> None:
    """``x`` of replica r to ``y`` of replica ``mapping[r]``: each replica's y against numpy."""
    y = w.graph.clone(w.x, "y")
    w.seq.add(prog.CrossReplicaCopy(w.x, y, mapping))
    (out,) = w.run(y)
    for r, to in mapping.items():
        np.testing.assert_array_equal(out[int(to)], w.inputs["x"][int(r)], err_msg=f"{mapping}")


def _cross_replica_copies(rng: random.Random) -> Iterator[Case]:
    for k in range(8):
        replicas = rng.choice([2, 3, 4, 8])
        order = list(range(replicas))
        rng.shuffle(order)
        kind = rng.choice([int, np.int64, np.int32])
        mapping = {kind(r): kind(to) for r, to in enumerate(order)}
        yield Case(f"replication-copy-{k}", None, lambda w, m=mapping: _copy_across(w, m),
                   world=pod(replicas))
    bad: list[tuple[Callable[[Pod], Any], tuple[str, ...]]] = [
        (lambda w: {0: 0, 1: 0}, ("not a permutation",)),
        (lambda w: {0: 1}, ("not a permutation",)),
        (lambda w: {0: 2, 2: 0}, ("{0: 2, 2: 0}", "permutation")),
        (lambda w: {0: 1, 1: 0, 2: 2}, ("permutation",)),
        (lambda w: [1, 0], ("replica map",)),
        (lambda w: None, ("replica map",)),
        (lambda w: {"0": 1, "1": 0}, ("replica map",)),
        (lambda w: {0.0: 1, 1: 0}, ("replica map",)),
        (lambda w: {0: True, 1: False}, ("replica map",)),
    ]
    def pair(w: Pod) -> tuple[poplar.Tensor, poplar.Tensor]:
        return w.x, w.graph.clone(w.x, "y")

    for k, (mapping, culprit) in enumerate(bad):
        yield Case(f"replication-copy-bad-{k}", ("CrossReplicaCopy", *culprit),
                   lambda w, xy, m=mapping: poplar.Engine(w.graph, prog.CrossReplicaCopy(*xy, m(w))),
                   prepare=pair, world=pod(2))
    yield Case("replication-copy-types", ("'x'", "'i'"),
               lambda w, i: prog.CrossReplicaCopy(w.x, i, {0: 1, 1: 0}),
               prepare=lambda w: w.graph.addVariable(poplar.INT, [w.ipus, 3], "i"), world=pod(2))


def _loaded(w: Pod) -> poplar.Engine:
    w.graph.createHostRead("xr", w.x)
    w.graph.addDeviceToHostFIFO("out", poplar.FLOAT, 3)
    engine = poplar.Engine(w.graph, w.seq)
    engine.load(w.device)
    return engine


def _replica_indices(rng: random.Random) -> Iterator[Case]:
    calls: list[tuple[str, Callable[[poplar.Engine, Any], Any]]] = [
        ("read", lambda e, r: e.readTensor("xr", replicaIndex=r)),
        ("write", lambda e, r: e.writeTensor("x", np.zeros([1, 3], np.float32), replicaIndex=r)),
        ("connect", lambda e, r: e.connectStream("out", np.zeros(3, np.float32), replicaIndex=r)),
    ]
    for name, call in calls:
        for k, index in enumerate([2, -1, np.int64(5), 1.0, "1", True]):
            yield Case(f"replication-index-{name}-{k}", ("replica index",),
                       lambda w, e, c=call, x=index: c(e, x), prepare=_loaded, world=pod(2))


# ---- virtual graphs of replicated graphs -------------------------------------------------------
def _virtual_add(w: Pod, lower: int, upper: int, seed: int) -> None:
    """popops.add on a virtual graph of tiles [lower, upper) of each replica, against numpy;
    every element on those tiles."""
    v = w.graph.createVirtualGraph(lower, upper)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    a = w.input("a", rng.standard_normal([w.replicas, n]).astype(np.float32), graph=v)
    b = w.input("b", rng.standard_normal([w.replicas, n]).astype(np.float32), graph=v)
    out = popops.add(v, a, b, w.seq)
    used = {t for t, iv in enumerate(w.graph.getTileMapping(out)) if iv}
    assert used and used <= set(range(lower, upper)), (used, lower, upper)
    (result,) = w.run(out)
    for r in range(w.replicas):
        np.testing.assert_array_equal(result[r], w.inputs["a"][r] + w.inputs["b"][r])


def _virtual_graphs(rng: random.Random) -> Iterator[Case]:
    for k in range(6):
        replicas, ipus = rng.choice([(2, 1), (2, 2), (4, 1)])
        lower = rng.randrange(ipus * TILES)
        upper = rng.randint(lower + 1, ipus * TILES)
        seed = rng.randrange(2**32)
        yield Case(f"virtual-replicated-{k}", None,
                   lambda w, a=lower, b=upper, s=seed: _virtual_add(w, a, b, s), world=pod(replicas, ipus))
    bad: list[tuple[tuple, tuple[str, ...]]] = [
        ((0, 10**12), ("[0, 1000000000000)", "out of range")), ((0, 10**7), ("out of range",)),
        ((-5, 2), ("[-5, 2)", "out of range")), ((3, 3), ("lowerTile 3", "upperTile 3")),
        ((0, TILES + 1), ("out of range",)),  # tiles of the next replica are not this graph's
        (([0, 10**15],), ("tile 1000000000000000",)), (([1, 2, 1],), ("distinct",)),
        ((10**12,), ("tiles per IPU",)), ((0,), ("numTilesPerIPU",)), ((np.arange(3) * 2.0,), ("tiles",)),
        ((1, 2, 3), ("takes",)), (("0", 2), ("lowerTile",)), ((0, None), ("upperTile",)),
    ]
    for k, (args, culprit) in enumerate(bad):
        yield Case(f"virtual-replicated-bad-{k}", ("createVirtualGraph", *culprit),
                   lambda w, a=args: w.graph.createVirtualGraph(*a), world=pod(2))
    yield Case("virtual-replicated-tile", ("tile 2",), lambda w, v: v.setTileMapping(w.x, 2),
               prepare=lambda w: w.graph.createVirtualGraph(1, 3), world=pod(2))


GENERATORS = [_collectives, _bad_collectives, _factors, _cross_replica_copies, _replica_indices,
              _virtual_graphs]


def cases() -> list[Case]:
    """Every replication case, generated from SEED (the same list on every run)."""
    rng = random.Random(SEED)
    return [c for gen in GENERATORS for c in gen(rng)]
