"""The element-wise vertices popops generates from expressions (``popops::map::<hash>``,
poplibs_py/popops/expr_codegen.py), each alone on a tile, against numpy.

Worker w computes row w of ``out`` from row w of each vector input ``in<i>``; a scalar input is
one value for every element; in place, ``_1`` is ``out`` itself."""

import numpy as np

import poplar_py as poplar
from poplibs_py.popops import expr as pe
from poplibs_py.popops.expr_codegen import mapVertexClass

F, H, N, B = poplar.FLOAT, poplar.HALF, poplar.INT, poplar.BOOL
nan = np.nan

# name: (expression, input types, scalar inputs, in place, inputs, numpy reference)
MAPS = {
    "a * b + 3": (pe._1 * pe._2 + 3, [F, F], (), False, [[1.5, -2, 0.25, nan], [2, 4, -8, 1]],
                  lambda a, b: a * b + 3),
    "c ? a : b": (pe.Select(pe._1, pe._2, pe._3), [F, F, B], (), False,
                  [[1, 2, 3], [-1, -2, -3], [True, False, True]], lambda a, b, c: np.where(c, a, b)),
    "int a / b truncates": (pe._1 / pe._2, [N, N], (), False, [[7, -7, 7, -7, 0], [2, 2, -2, -2, 3]],
                            lambda a, b: np.trunc(a / b)),
    "int a % b takes the dividend's sign": (pe._1 % pe._2, [N, N], (), False,
                                            [[7, -7, 7, -7], [3, 3, -3, -3]], np.fmod),
    "max with NaN gives NaN": (pe.Max(pe._1, pe._2), [F, F], (), False, [[1, nan, 3, -0.5], [2, 0, nan, -1]],
                               np.maximum),
    "a + scalar, in place": (pe._1 + pe._2, [F, F], (2,), True, [[1, 2, 3, 4, 5], [0.5]],
                             lambda a, b: a + b),
    "half sqrt": (pe.Sqrt(pe._1), [H], (), False, [[4, 2, 0.01, 65504]], np.sqrt),
    "float to int": (pe.Cast(pe._1 * 2, N), [F], (), False, [[1.7, -1.7, 3.0]], lambda a: np.trunc(a * 2)),
}


def test_generated_map_vertices(vertices):
    """Each expression over rows of its inputs: as many rows as workers, one empty."""
    h = vertices()
    cases = h.cases
    cut = [0, 1, 1, 2, 3, 4, None]  # six rows: worker w takes elements [cut[w], cut[w + 1])
    for tile, (name, (e, types, scalars, in_place, inputs, reference)) in enumerate(MAPS.items()):
        arrays = [np.array(x, t.dtype) for x, t in zip(inputs, types)]
        out_t = pe.inferType(e, types)
        cls = mapVertexClass(e, types, frozenset(scalars), in_place, out_t)
        h.graph.addCodelets(cls)
        fields = {}
        for i, a in enumerate(arrays, start=1):
            rows = [a[cut[w]:cut[w + 1]] for w in range(6)]
            if i in scalars:
                fields[f"in{i}"] = a.reshape(())
            elif in_place and i == 1:
                fields["out"] = rows
            else:
                fields[f"in{i}"] = rows
        if not in_place:
            fields["out"] = [np.full_like(r, 9, dtype=out_t.dtype) for r in fields["in1"]]
        v = h.vertex(cls.vertexName, tile=tile % 4, **fields)
        with np.errstate(invalid="ignore"):
            want = reference(*(a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays))
        want = np.asarray(want).astype(out_t.dtype)
        cases[name] = (v["out"], [want[cut[w]:cut[w + 1]] for w in range(6)], 1e-3 if out_t == H else 0)
    h.check()
