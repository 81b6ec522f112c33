"""poplin's MatMulBlock, ReducePartials, ReducePartialsSameType and ScaledReducePartials vertices,
each alone on a tile, against numpy (codelets/poplin/matmul.py)."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

F, H = poplar.FLOAT, poplar.HALF
TILE = (6, 16)  # the planner's R x C register tile (poplin's REGISTER_TILE)

# (InT, OutT, M, K, N): rows enough for whole 6-row units and leftovers, with 16-column tiles and
# leftover columns; fewer rows than workers (columns cut between them); one column; an empty K;
# one row
BLOCKS = [(F, F, 13, 5, 19), (H, F, 2, 3, 10), (H, H, 4, 7, 1), (F, F, 3, 0, 4), (H, F, 7, 4, 17),
          (H, H, 1, 5, 3)]


def test_mat_mul_block(vertices):
    h, rng = vertices("poplin"), np.random.default_rng(5)
    cases = h.cases
    for tile, (in_t, out_t, m, k, n) in enumerate(BLOCKS):
        a, b = rng.integers(-3, 4, (m, k)), rng.integers(-3, 4, (k, n))  # products exact in half
        v = h.vertex(templateVertex("poplin::MatMulBlock", in_t, out_t, *TILE), tile=tile % 4,
                     a=a.ravel().astype(in_t.dtype), b=b.ravel().astype(in_t.dtype),
                     out=np.full(m * n, 9, out_t.dtype))
        cases[f"MatMulBlock<{in_t},{out_t}> {m}x{k} by {k}x{n}"] = (v["out"], (a @ b).ravel())
    h.check()


def test_mat_mul_block_sizes_that_fit_no_product_are_an_error(vertices):
    """Beside a vertex with a product's sizes (2x2 by 2x2), one whose sizes fit none."""
    h = vertices("poplin")
    for a, b, out in [(4, 4, 4), (5, 7, 3)]:
        h.vertex(templateVertex("poplin::MatMulBlock", F, F, *TILE), a=np.ones(a, np.float32),
                 b=np.ones(b, np.float32), out=np.zeros(out, np.float32))
    with pytest.raises(poplar.VertexError):
        h.run()


# (vertex, PartT, OutT): the partial sums of a K split, added element by element
REDUCTIONS = [("ReducePartials", F, H), ("ReducePartialsSameType", F, F), ("ScaledReducePartials", F, F),
              ("ScaledReducePartials", F, H)]


def test_reduce_partials(vertices):
    """Three partials of 60 elements (workers take 10: a block of 8 and single elements) and of 5
    (fewer elements than workers); the scaled reduction adds ``scale * sum`` to the output."""
    h, rng = vertices("poplin"), np.random.default_rng(6)
    cases = h.cases
    for tile, (name, part_t, out_t) in enumerate(REDUCTIONS):
        for n in (60, 5):
            partials = rng.integers(-8, 9, (3, n)) * 0.25
            old = rng.integers(-8, 9, n).astype(out_t.dtype)
            scaled = name == "ScaledReducePartials"
            types = (out_t,) if name == "ReducePartialsSameType" else (part_t, out_t)
            v = h.vertex(templateVertex(f"poplin::{name}", *types), tile=tile,
                         partials=list(partials.astype(part_t.dtype)), out=old,
                         initial={"scale": 0.5} if scaled else None)
            want = old + 0.5 * partials.sum(0) if scaled else partials.sum(0)
            cases[f"{name}<{part_t},{out_t}> of {n}"] = (v["out"], want)
    h.check()
