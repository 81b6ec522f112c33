"""Seeded fuzz family of gcl's replica groups (for tests/test_fuzz.py), in the worlds of
fuzz_replicas.py: cross-replica collectives within random CommGroups checked against numpy on
every replica (the groups worked out here from GCL's definitions, not by CommGroup), and bad
inputs (CommGroups of wrong kinds, sizes and strides that do not fit the replicas, groups of
wrong kinds, roots outside the group, other bad arguments beside a group), each a PoplarError
naming its culprit that leaves the graph as it was.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
from fuzz_cases import Case
from fuzz_replicas import BAD_ARGUMENTS, CROSS, OPS, REDUCING, SCATTERING, Pod, _data, _reduced, pod, same

from poplar_py.errors import GraphReplicationError
from poplibs_py import gcl
from poplibs_py.poputil import PoplibsArgumentError

SEED = 20260611
Op, Group, Type = gcl.CollectiveOperator, gcl.CommGroup, gcl.CommGroupType
SHAPES = [(2, 1), (4, 1), (8, 1), (8, 1), (2, 2), (4, 2), (4, 2)]  # (replicas, IPUs per replica)


def members(kind: Type, size: int, stride: int, replicas: int) -> list[list[int]]:
    """The groups of GCL's definitions: ALL one group; CONSECUTIVE blocks of ``size x stride``
    replicas, lane j of block b ``{b size stride + j + stride i}``; ORTHOGONAL ``{i, i + m, ...}``
    for m = replicas / size."""
    size = size or replicas
    if kind is Type.ALL:
        return [list(range(replicas))]
    if kind is Type.ORTHOGONAL:
        m = replicas // size
        return [[i + m * j for j in range(size)] for i in range(m)]
    block = size * (stride or 1)
    return [[b * block + j + (stride or 1) * i for i in range(size)]
            for b in range(replicas // block) for j in range(stride or 1)]


def _group(rng: random.Random, replicas: int) -> tuple[Type, int, int]:
    """A group shape that fits ``replicas``: (type, size, stride), 0 for the defaults now and then;
    mostly groups of neither one nor every replica, where the types differ."""
    kind = rng.choice([Type.ALL] + [Type.CONSECUTIVE] * 3 + [Type.ORTHOGONAL] * 2)
    divisors = [d for d in range(1, replicas + 1) if replicas % d == 0]
    proper = divisors[1:-1]
    size = rng.choice(proper if proper and rng.random() < 0.75 else divisors + [0])
    if kind is Type.CONSECUTIVE:
        strides = [s for s in range(1, replicas + 1) if replicas % ((size or replicas) * s) == 0]
        return kind, size, rng.choice(strides + [0] * (1 in strides))
    return kind, size, rng.choice([0, 1])


def _collective(w: Pod, function: str, op: Op, dtype: type, shape: list[int], seed: int,
                shape_of_group: tuple[Type, int, int], root: int, by_keyword: bool) -> None:
    """One collective within groups on random data; every replica's result against numpy."""
    R = w.replicas
    kind, size, stride = shape_of_group
    group = Group(kind, size, stride)
    data = _data(np.random.default_rng(seed), dtype, [R, *shape])
    t = w.input("t", data)
    args: list[Any] = [w.graph, t] + ([op] if function in REDUCING else []) + [w.seq]
    keywords: dict[str, Any] = {"rootReplica": root} if function == "broadcastCrossReplica" else {}
    if by_keyword:
        keywords["group"] = group
    else:
        args.append(group)
    out = getattr(gcl, function)(*args, **keywords)
    (got,) = w.run(t if function == "allReduceInPlaceCrossReplica" else out)
    for rows in members(kind, size, stride, R):
        k, mine = len(rows), data[rows]
        for p, r in enumerate(rows):
            if function == "reduceScatterCrossReplica":
                chunk = -(-data[0].size // k)
                padded = np.zeros(k * chunk, data.dtype)
                padded[:data[0].size] = _reduced(op, mine.reshape(k, -1), p)
                expected = padded[p * chunk:(p + 1) * chunk]
            elif function == "allGatherCrossReplica":
                expected = mine
            elif function == "broadcastCrossReplica":
                expected = mine[root]
            else:
                expected = _reduced(op, mine, p)
            same(got[r], expected, f"{function}({op}) in {group!r} on replica {r}")


def _collectives(rng: random.Random) -> Iterator[Case]:
    for k in range(50):
        function = CROSS[k % len(CROSS)]
        replicas, ipus = rng.choice(SHAPES)
        shape_of_group = _group(rng, replicas)
        size = len(members(*shape_of_group, replicas)[0])
        dtype = rng.choice([np.float32, np.int32] + [np.bool_] * (function in REDUCING))
        op = rng.choice([o for o in OPS[dtype] if o is not Op.LOCAL or function not in SCATTERING])
        shape = [rng.randint(1, 9)] + ([rng.randint(1, 3)] if rng.random() < 0.3 else [])
        if rng.random() < 0.3:
            shape = [ipus, *shape]
        root, seed, by_keyword = rng.randrange(size), rng.randrange(2**32), rng.random() < 0.5
        yield Case(f"gcl-group-{function}-{k}", None,
                   lambda w, f=function, o=op, d=dtype, s=shape, seed=seed, g=shape_of_group, r=root,
                   kw=by_keyword: _collective(w, f, o, d, s, seed, g, r, kw), world=pod(replicas, ipus))


#: CommGroup(...) arguments of a wrong kind, and the parameter the message names
BAD_GROUPS: list[tuple[tuple, str]] = [
    *[((v,), "type") for v in ["ALL", None, 0, 1.0, Op.ADD, [Type.ALL], "CONSECUTIVE", True]],
    *[((Type.CONSECUTIVE, v), "replicaGroupSize")
      for v in [-1, -4, 2.0, 2.5, True, False, "2", None, [2], np.float32(2), np.int64(-2), object()]],
    *[((Type.CONSECUTIVE, 2, v), "replicaGroupStride")
      for v in [-1, 1.0, True, "1", None, (1,), np.float64(1), np.int32(-3)]],
    *[((Type.ORTHOGONAL, 2, v), "replicaGroupStride 2" if v == 2 else "replicaGroupStride")
      for v in [2, np.uint8(2), 4, -2]],
    *[((Type.ALL, 0, v), "replicaGroupStride") for v in [-1, 0.5]],
]


def _bad_constructions(rng: random.Random) -> Iterator[Case]:
    for k, (args, culprit) in enumerate(BAD_GROUPS):
        yield Case(f"gcl-group-bad-commgroup-{k}", ("CommGroup", culprit), lambda w, a=args: Group(*a),
                   world=pod(2), error=PoplibsArgumentError)


def _call(w: Pod, function: str, group: Any, by_keyword: bool, **changes: Any) -> Any:
    """``function`` on ``w.x`` into ``w.seq`` within ``group``, with some arguments changed."""
    args = {"graph": w.graph, "t": w.x, "op": Op.ADD, "prog": w.seq, **changes}
    keywords = {k: args[k] for k in ("debugContext", "options", "rootReplica") if k in args}
    positional = [args["graph"], args["t"], *([args["op"]] if function in REDUCING else []), args["prog"]]
    if by_keyword:
        keywords["group"] = group
    else:
        positional.append(group)
    return getattr(gcl, function)(*positional, **keywords)


def _not_fitting(rng: random.Random, replicas: int) -> tuple[Group, tuple[str, ...]]:
    """A CommGroup whose size or stride does not fit ``replicas``, and what the message names."""
    size = rng.choice([s for s in (3, 5, 6, 7, 16, 2 * replicas, replicas + 1) if replicas % s])
    if rng.random() < 0.5:
        kind = rng.choice([Type.CONSECUTIVE, Type.ORTHOGONAL])
        return Group(kind, size), (f"replicaGroupSize {size}", f"replication factor {replicas}")
    size = rng.choice([s for s in (1, 2, 4, 0) if replicas % (s or replicas) == 0])
    stride = rng.choice([s for s in (2, 3, 4, 5, 8, 16) if replicas % ((size or replicas) * s)])
    return Group(Type.CONSECUTIVE, size, stride), (f"replicaGroupStride {stride}", f"{replicas}")


def _bad_groups(rng: random.Random) -> Iterator[Case]:
    for k in range(50):
        function, replicas = CROSS[k % len(CROSS)], rng.choice([2, 4, 8])
        group, culprit = _not_fitting(rng, replicas)
        by_keyword = rng.random() < 0.5
        yield Case(f"gcl-group-unfit-{function}-{k}", (function, *culprit),
                   lambda w, f=function, g=group, kw=by_keyword: _call(w, f, g, kw),
                   world=pod(replicas, rng.choice([1, 2])), error=GraphReplicationError)
    wrong: list[Any] = [Type.ALL, Type.ORTHOGONAL, 2, "ALL", [2], (Type.CONSECUTIVE, 2), Op.ADD, 1.5,
                        {"type": Type.ALL}, np.int64(2)]
    for k in range(25):
        function, group = CROSS[k % len(CROSS)], wrong[k % len(wrong)]
        # a CommGroupType is named as a group in either place; anything else only as group=
        by_keyword = not isinstance(group, Type) or rng.random() < 0.5
        yield Case(f"gcl-group-kind-{function}-{k}", (function, "group must be a gcl.CommGroup"),
                   lambda w, f=function, g=group, kw=by_keyword: _call(w, f, g, kw), world=pod(2),
                   error=PoplibsArgumentError)


def _bad_roots(rng: random.Random) -> Iterator[Case]:
    for k in range(30):
        replicas = rng.choice([2, 4, 8])
        shape_of_group = _group(rng, replicas)
        size = len(members(*shape_of_group, replicas)[0])
        root = rng.choice([size, size + 1, -1, replicas, 10**9, 1.0, True, "0", None])
        culprit = f"rootReplica {root}" if isinstance(root, int) and not isinstance(root, bool) \
            else "rootReplica must be an integer"
        by_keyword = rng.random() < 0.5
        yield Case(f"gcl-group-root-{k}", ("broadcastCrossReplica", culprit),
                   lambda w, g=shape_of_group, r=root, kw=by_keyword:
                   _call(w, "broadcastCrossReplica", Group(*g), kw, rootReplica=r), world=pod(replicas))


def _bad_arguments_beside_a_group(rng: random.Random) -> Iterator[Case]:
    for k in range(30):
        function = CROSS[k % len(CROSS)]
        bad = rng.choice([n for n in BAD_ARGUMENTS if (not n.startswith("op-") or function in REDUCING)
                          and (not n.startswith("root-") or function == "broadcastCrossReplica")])
        culprit, changes = BAD_ARGUMENTS[bad]
        replicas = rng.choice([2, 4])
        group, by_keyword = Group(*_group(rng, replicas)), rng.random() < 0.5
        yield Case(f"gcl-group-bad-{function}-{bad}-{k}", (function, culprit),
                   lambda w, c, f=function, g=group, kw=by_keyword: _call(w, f, g, kw, **c),
                   prepare=changes, world=pod(replicas))


GENERATORS = [_collectives, _bad_constructions, _bad_groups, _bad_roots, _bad_arguments_beside_a_group]


def cases() -> list[Case]:
    """Every replica-group case, generated from SEED (the same list on every run)."""
    rng = random.Random(SEED)
    return [c for gen in GENERATORS for c in gen(rng)]
