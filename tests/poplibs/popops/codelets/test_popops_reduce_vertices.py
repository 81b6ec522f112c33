"""popops' Reduce, ScaledReduce and ReduceAddInPlace vertices with each operation policy
(ReduceAdd, ReduceSquareAdd, ReduceMul, ReduceMax, ReduceMin, ReduceLogicalAnd,
ReduceLogicalOr, ReduceLogAdd), each alone on a tile, against numpy (codelets/popops/reduce.py).

Output region r (``out[r]``, ``width`` elements) reduces the next ``numPartials[r]`` entries
of ``partials``; element j of an entry belongs to output element ``j % width``."""

import math

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

F, H, N, U, B = poplar.FLOAT, poplar.HALF, poplar.INT, poplar.UNSIGNED_INT, poplar.BOOL

# (width, entry lengths): whole rows (width 1, lengths not multiples of 4), columns (entries of
# several rows), eight-column blocks and a leftover column (width 9), no entries (the identity),
# runs of one-row entries (ReduceAddInPlace adds up to four at a time) and entries of many rows
REGIONS = [(1, [5, 8, 1]), (3, [6, 3]), (9, [18, 9]), (2, []), (3, [3, 3, 3, 3, 3]),
           (2, [2, 2, 2, 18, 8, 2, 2])]


def ints(rng, n, values=range(-4, 5)):
    return rng.choice(np.array(values, np.float64), n)


def with_nan(rng, n):
    x = ints(rng, n)
    x[n // 2] = math.nan
    return x


# operation: (numpy reduction of the rows, values, identity for float and for integer accumulators)
OPS = {
    "Add": (np.sum, ints, 0, 0),
    "SquareAdd": (lambda r, axis: np.sum(r * r, axis=axis), ints, 0, 0),
    "Mul": (np.prod, lambda rng, n: ints(rng, n, [1, -1, 2, 1, 1, 0.5]), 1, 1),
    "Max": (np.max, with_nan, -math.inf, np.iinfo(np.int32).min),
    "Min": (np.min, lambda rng, n: ints(rng, n, range(100)), math.inf, np.iinfo(np.uint32).max),
    "LogicalAnd": (np.all, lambda rng, n: rng.random(n) < 0.9, True, True),
    "LogicalOr": (np.any, lambda rng, n: rng.random(n) < 0.1, False, False),
    "LogAdd": (np.logaddexp.reduce, lambda rng, n: rng.uniform(-3, 0, n), -math.inf, 0),
}

# (vertex, operation, T, AccT, OutT, update): every policy once, in a representative set of types
# (half partials accumulate in float; integers and bools in their own type)
INSTANCES = [
    ("Reduce", "Add", F, F, F, None), ("Reduce", "Add", H, F, H, None),
    ("Reduce", "SquareAdd", H, F, F, None),
    ("Reduce", "Mul", N, N, N, None), ("Reduce", "Max", F, F, F, None), ("Reduce", "Min", U, U, U, None),
    ("Reduce", "LogicalAnd", B, B, B, None), ("Reduce", "LogicalOr", B, B, B, None),
    ("Reduce", "LogAdd", F, F, F, None),
    ("ScaledReduce", "Add", F, F, F, False), ("ScaledReduce", "SquareAdd", H, F, F, True),
    ("ScaledReduce", "LogAdd", F, F, F, True),
    ("ReduceAddInPlace", "Add", F, F, F, None), ("ReduceAddInPlace", "Add", H, F, F, None),
]

K = 0.5  # ScaledReduce's scale


def scaled(op: str, value, old, update: bool):
    """``k * value`` (added to ``old`` with ``update``); for LogAdd, logarithms: ``value + k``,
    log-added to ``old``."""
    if op == "LogAdd":
        return np.logaddexp(old, value + K) if update else value + K
    return old + K * value if update else K * value


@pytest.mark.parametrize("vertex", ["Reduce", "ScaledReduce", "ReduceAddInPlace"])
def test_reduce_vertices(vertices, vertex):
    h = vertices()
    cases = h.cases
    rng = np.random.default_rng(1)
    for tile, (name, op, t, acc, out_t, update) in enumerate(i for i in INSTANCES if i[0] == vertex):
        reduce, values, identity, int_identity = OPS[op]
        identity = identity if acc.dtype.kind in "fb" else int_identity
        params = [f"popops::Reduce{op}", t, acc, out_t] if name != "ReduceAddInPlace" else [t, acc]
        if name == "ScaledReduce":
            params.append(update)
        label = f"{name}<{','.join(map(str, params))}>".replace("popops::Reduce", "")
        for half, regions in enumerate((REGIONS[:3], REGIONS[3:])):  # two vertices, half each
            entries = [values(rng, n).astype(t.dtype) for _, lengths in regions for n in lengths]
            old = [ints(rng, w).astype(out_t.dtype) for w, _ in regions]
            fields = dict(partials=entries, out=old, initial={"identity": identity, "numPartials": np.array(
                [len(lengths) for _, lengths in regions], np.int32)})
            if name == "ScaledReduce":
                fields["k"] = np.array(K, np.float32)
            v = h.vertex(templateVertex(f"popops::{name}", *params), tile=(tile + half) % 4, **fields)
            want, it = [], iter(entries)
            for (w, lengths), before in zip(regions, old):
                rows = [np.full(w, identity, np.float64)]
                rows += [next(it).astype(np.float64).reshape(-1, w) for _ in lengths]
                result = reduce(np.vstack(rows), axis=0)
                if name == "ScaledReduce":
                    result = scaled(op, result, before.astype(np.float64), update)
                want.append(result.astype(out_t.dtype))
            cases[f"{label} half {half}"] = (v["out"], want, 1e-6 if op == "LogAdd" else 0)
    h.check()
