"""popops' Sort, SortKeyValue, TopK, TopKKeyValue and TopKMerge vertices, each alone on a tile,
against Python's stable sort (codelets/popops/sort.py).

Order: ascending with NaN after every number; top-k takes the largest (NaN largest) or smallest
first, equal keys in index order, and ``reverse`` turns the k round keeping equal keys in index
order."""

import math

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

nan = math.nan


def keys_row(rng, n: int, t: poplar.Type) -> np.ndarray:
    """``n`` keys with repeats (and a NaN and both zeros when float)."""
    x = rng.integers(-3, 4, n).astype(np.float64)
    if t.dtype.kind == "f" and n >= 4:
        x[[1, 2, 3]] = [nan, -0.0, 0.0]
    return x.astype(t.dtype)


SORT_LENGTHS = [7, 0, 1, 16, 2]


@pytest.mark.parametrize("types", [(poplar.FLOAT,), (poplar.INT,), (poplar.FLOAT, poplar.INT),
                                   (poplar.HALF, poplar.UNSIGNED_INT)], ids=str)
def test_sort_and_sort_key_value(vertices, types):
    """Each vertex sorts one row in place (odd, empty, one, a power of two, two); with values,
    a stable sort permutes them alike."""
    h, rng = vertices(), np.random.default_rng(2)
    cases = h.cases
    for tile, n in enumerate(SORT_LENGTHS):
        keys = keys_row(rng, n, types[0])
        order = np.argsort(keys, kind="stable")  # NaN last
        if len(types) == 1:
            v = h.vertex(templateVertex("popops::Sort", *types), tile=tile % 4, data=keys,
                         scratch=np.zeros_like(keys))
            cases[f"{n} keys"] = (v["data"], keys[order])
        else:
            values = (np.arange(n) * 3 + 1).astype(types[1].dtype)
            v = h.vertex(templateVertex("popops::SortKeyValue", *types), tile=tile % 4, keys=keys,
                         values=values, scratchKeys=np.zeros_like(keys), scratchValues=np.zeros_like(values))
            cases[f"{n} keys"] = (v["keys"], keys[order])
            cases[f"{n} values"] = (v["values"], values[order])
    h.check()


def rank(x: float, largest: bool) -> tuple:
    """A key's place in best-first order (equal keys compare equal, -0.0 too)."""
    if math.isnan(x):
        return (0 if largest else 1, 0.0)
    return (1 if largest else 0, -x if largest else x)


def top(keys: np.ndarray, k: int, largest: bool, reverse: bool) -> list[int]:
    """The positions of the best ``k`` keys in output order."""
    best = sorted(range(len(keys)), key=lambda i: (rank(float(keys[i]), largest), i))[:k]
    if reverse:  # Python's sort with reverse=True stays stable: equal keys keep index order
        best = sorted(best, key=lambda i: rank(float(keys[i]), largest), reverse=True)
    return best


# each row's length and k: seven rows, so worker 0 takes rows 0 and 6; k of 0 and of the whole row
TOPK_ROWS = [(8, 3), (5, 0), (6, 1), (5, 5), (9, 2), (7, 4), (6, 3)]
# (largest, reverse) and the key type of a vertex: every combination, each type twice
FLAGS = [(True, False, poplar.FLOAT), (False, False, poplar.FLOAT), (True, True, poplar.INT),
         (False, True, poplar.FLOAT), (False, False, poplar.INT)]


@pytest.mark.parametrize("vertex", ["TopK", "TopKKeyValue"])
def test_top_k_vertices(vertices, vertex):
    h, rng = vertices(), np.random.default_rng(3)
    cases = h.cases
    for tile, (largest, reverse, t) in enumerate(FLAGS):
        if vertex == "TopKKeyValue":
            t = poplar.FLOAT
        rows = [keys_row(rng, n, t) for n, _ in TOPK_ROWS]
        values = [(np.arange(n) + 100 * r).astype(np.int32) for r, (n, _) in enumerate(TOPK_ROWS)]
        chosen = [top(row, k, largest, reverse) for row, (_, k) in zip(rows, TOPK_ROWS)]
        offsets = np.array([10 * r for r in range(len(rows))], np.uint32)
        out = [np.zeros(k, t.dtype) for _, k in TOPK_ROWS]
        positions = [np.zeros(k, np.uint32) for _, k in TOPK_ROWS]
        state = {"largest": largest, "reverse": reverse}
        if vertex == "TopK":
            v = h.vertex(templateVertex("popops::TopK", t), tile=tile % 4, inp=rows, outValues=out,
                         outIndices=positions, initial={**state, "offsets": offsets})
            keys, second, want = v["outValues"], v["outIndices"], [o + c for o, c in zip(offsets, chosen)]
        else:
            v = h.vertex(templateVertex("popops::TopKKeyValue", t, poplar.INT), tile=tile % 4, keys=rows,
                         values=values, outKeys=out, outValues=[p.astype(np.int32) for p in positions],
                         positions=positions, initial=state)
            keys, second, want = v["outKeys"], v["outValues"], [val[c] for val, c in zip(values, chosen)]
        label = f"vertex {tile}: <{t}> largest={largest} reverse={reverse}"
        cases[f"{label} keys"] = (keys, [row[c] for row, c in zip(rows, chosen)])
        cases[f"{label} {'indices' if vertex == 'TopK' else 'values'}"] = (second, want)
    h.check()


def test_top_k_merge(vertices):
    """Two sorted results (a's from earlier in the row) merged into their best k: equal keys
    come from a first; k up to both lengths."""
    h, rng = vertices(), np.random.default_rng(4)
    cases = h.cases
    sizes = [(4, 3, 5), (3, 3, 6), (2, 0, 1), (0, 3, 2), (5, 4, 1), (3, 2, 4), (1, 1, 2)]  # len(a), len(b), k
    for tile, (largest, reverse, t) in enumerate(FLAGS):
        fields = {f: [] for f in ("aKeys", "aValues", "bKeys", "bValues", "outKeys", "outValues")}
        want_keys, want_values = [], []
        for r, (na, nb, k) in enumerate(sizes):
            row = keys_row(rng, na + nb, t)
            a = top(row[:na], na, largest, False)
            b = [na + i for i in top(row[na:], nb, largest, False)]
            values = np.arange(na + nb, dtype=np.uint32) + 100 * r
            for side, picked in (("a", a), ("b", b)):
                fields[f"{side}Keys"].append(row[picked])
                fields[f"{side}Values"].append(values[picked])
            fields["outKeys"].append(np.zeros(k, t.dtype))
            fields["outValues"].append(np.zeros(k, np.uint32))
            chosen = top(row, k, largest, reverse)  # positions in row order: a's before b's
            want_keys.append(row[chosen])
            want_values.append(values[chosen])
        v = h.vertex(templateVertex("popops::TopKMerge", t, poplar.UNSIGNED_INT), tile=tile % 4,
                     initial={"largest": largest, "reverse": reverse}, **fields)
        label = f"<{t}> largest={largest} reverse={reverse}"
        cases[f"{label} keys"] = (v["outKeys"], want_keys)
        cases[f"{label} values"] = (v["outValues"], want_values)
    h.check()
