"""poplin.matMul and friends against numpy, compiled and interpreted."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, poputil
from poplibs_py.poplin.blocks import block_major_operand
from poplibs_py.poputil import PoplibsError


def make(harness, tiles=16):
    h = harness(tiles)
    poplin.addCodelets(h.graph)
    return h


def operands(shape_a, shape_b, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, shape_a).astype(dtype), rng.integers(-9, 10, shape_b).astype(dtype)
    return rng.standard_normal(shape_a).astype(dtype), rng.standard_normal(shape_b).astype(dtype)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 7, 3), (40, 39, 38), (33, 100, 17), (5, 0, 4), (0, 3, 4)])
def test_matmul_float(harness, m, k, n):
    h = make(harness)
    a, b = operands((m, k), (k, n))
    C = poplin.matMul(h.graph, h.tensor(a), h.tensor(b), h.seq, "C")
    assert C.shape() == [m, n] and C.elementType() == poplar.FLOAT
    (c,) = h.run(C)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_one_tile_register_tiles_and_edges(harness, dtype):
    # On one tile 30 rows of 19 columns: five 6x16 register tiles (one worker idles), each
    # with its 3-column edge.
    h = make(harness, tiles=1)
    a, b = operands((30, 20), (20, 19), dtype)
    plan = poplin.getMatMulPlan(h.graph.getTarget(), poplar.types.asType(dtype), [30, 20], [20, 19])
    assert (plan.splitM, plan.splitN, plan.splitK) == (1, 1, 1)
    (c,) = h.run(poplin.matMul(h.graph, h.tensor(a), h.tensor(b), h.seq))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def sequential_f32(a, b):
    """Each output summed in k order from 0 in float32, every product and sum rounded."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for q in range(a.shape[1]):
        acc = acc + a[:, q:q + 1] * b[q:q + 1, :]
    return acc


def test_one_tile_float_is_the_sequential_sum_in_every_register_tile(harness):
    # One tile, 47 rows of 43 columns: 6x16 tiles with an axpy column edge, then on the last
    # worker a 4-row tile (4x16, 4x8, axpy) and a leftover row (1x16, axpy). Every path keeps
    # each output's float32 sum in k order, so the result is bit-identical to the sequential sum.
    h = make(harness, tiles=1)
    a, b = operands((47, 13), (13, 43))
    plan = poplin.getMatMulPlan(h.graph.getTarget(), poplar.FLOAT, [47, 13], [13, 43])
    assert (plan.splitM, plan.splitN, plan.splitK) == (1, 1, 1)
    (c,) = h.run(poplin.matMul(h.graph, h.tensor(a), h.tensor(b), h.seq))
    np.testing.assert_array_equal(c, sequential_f32(a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_matmul_integers_exact(harness, dtype):
    h = make(harness, tiles=7)
    a, b = operands((9, 13), (13, 6), dtype)
    (c,) = h.run(poplin.matMul(h.graph, h.tensor(a), h.tensor(b), h.seq))
    np.testing.assert_array_equal(c, a @ b)


def test_views_as_operands(harness):
    # A is a transposed view, B a strided slice of a bigger variable: no copies on the host.
    h = make(harness)
    at, big = operands((11, 6), (25, 20))
    A = h.tensor(at).transpose()
    B = h.tensor(big).slice([3, 1], [14, 20]).subSample(2, 1)
    (c,) = h.run(poplin.matMul(h.graph, A, B, h.seq))
    np.testing.assert_allclose(c, at.T @ big[3:14, 1:20:2], rtol=1e-5, atol=1e-5)


def _copies(seq) -> list:
    return [p for p in prog.walk([seq]) if isinstance(p, prog.Copy)]


def test_an_operand_whose_rows_are_not_contiguous_is_rearranged_by_one_copy(harness):
    """As PopLibs rearranges an operand that does not suit the plan: the transposed A goes
    through a Copy into the plan's layout (its blocks as createMatMulInputLHS lays them out,
    each shared among the tiles that read it); the contiguous B is read where it lies."""
    h = make(harness)
    at, b = operands((11, 6), (11, 5))
    before = {id(c) for c in _copies(h.seq)}
    C = poplin.matMul(h.graph, h.tensor(at).transpose(), h.tensor(b), h.seq, "C")
    added = [c for c in _copies(h.seq) if id(c) not in before]
    assert [{v.name for v, _ in c.dst.getVarRegions()} for c in added] == [{"C/arrangedLHS"}]
    plan = poplin.getMatMulPlan(h.graph.getTarget(), poplar.FLOAT, [6, 11], [11, 5])
    like = block_major_operand(h.graph, plan, poplar.FLOAT, True, "like", spread=True)
    arranged, like = (h.graph.getVariable(t.getVarRegions()[0][0]) for t in (added[0].dst, like))
    assert h.graph.getTileMapping(arranged) == h.graph.getTileMapping(like)
    (c,) = h.run(C)
    np.testing.assert_allclose(c, at.T @ b, rtol=1e-5, atol=1e-5)
    poplin.matMul(h.graph, h.tensor(b.T.copy()), h.tensor(at), h.seq, "D")
    assert len(_copies(h.seq)) == len(before) + 1


@pytest.mark.parametrize("mode", ["native"])  # a product too big to interpret quickly
def test_a_weight_sliced_from_a_linear_buffer_is_rearranged_when_its_blocks_rows_lie_apart(harness):
    """A [1024, 512] weight sliced from a linearly mapped buffer: each block of the plan (4
    N-splits) would be read as 128 rows of 128 elements; it is copied once into the plan's
    layout instead, while the small contiguous A and a [64, 64] weight are read where they lie."""
    h = make(harness, tiles=64)
    a, w = operands((64, 1024), (1024, 512))
    buffer = h.graph.addVariable(poplar.FLOAT, [w.size + 64 * 64], "buffer")
    poputil.mapTensorLinearly(h.graph, buffer)
    W = buffer.slice(0, w.size).reshape([1024, 512])
    small = buffer.slice(w.size, w.size + 64 * 64).reshape([64, 64])
    A = h.tensor(a)
    before = len(_copies(h.seq))
    C = poplin.matMul(h.graph, A, W, h.seq, "C")
    added = _copies(h.seq)[before:]
    assert [{v.name for v, _ in c.dst.getVarRegions()} for c in added] == [{"C/arrangedRHS"}]
    poplin.matMul(h.graph, A.slice(0, 64, 1), small, h.seq, "D")
    assert len(_copies(h.seq)) == before + 1
    h.graph.setInitialValue(W, w)
    h.graph.setInitialValue(small, np.zeros((64, 64), np.float32))
    (c,) = h.run(C)
    np.testing.assert_allclose(c, a @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["native"])  # a product too big to interpret quickly
def test_a_transposed_weight_is_rearranged_in_the_order_it_lies_in_memory(harness):
    """``A @ W^T`` with W [512, 1024] mapped linearly: the copy into the plan's layout reads W
    row by row (long runs on each tile), writing the transposed blocks, rather than reading
    a strided element of W for every element it writes."""
    h = make(harness, tiles=64)
    a, w = operands((64, 1024), (512, 1024))
    W = h.graph.addVariable(poplar.FLOAT, [512, 1024], "W")
    poputil.mapTensorLinearly(h.graph, W)
    before = len(_copies(h.seq))
    C = poplin.matMul(h.graph, h.tensor(a), W.transpose(), h.seq, "C")
    (copy,) = _copies(h.seq)[before:]
    assert copy.src.isContiguous() and copy.src.shape() == [1, 512, 1024]
    assert {v.name for v, _ in copy.dst.getVarRegions()} == {"C/arrangedRHS"}
    h.graph.setInitialValue(W, w)
    (c,) = h.run(C)
    np.testing.assert_allclose(c, a @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["native"])  # the test runs both modes itself
def test_half_inputs_float_output_alike_in_both_modes(harness):
    """Products and sums in float (``OutT(a)``): the same bits compiled and interpreted."""
    a, b = operands((6, 40), (40, 5), np.float16)
    results = []
    for mode in ("native", "interpreter"):
        h = type(harness())(16, mode)
        poplin.addCodelets(h.graph)
        C = poplin.matMul(h.graph, h.tensor(a), h.tensor(b), h.seq, poplar.FLOAT, "C")
        assert C.elementType() == poplar.FLOAT
        results.append(h.run(C)[0])
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tiles,g", [(16, 3), (4, 6)])
def test_matmul_grouped(harness, tiles, g):
    h = make(harness, tiles)
    a, b = operands((g, 7, 5), (g, 5, 9))
    C = poplin.matMulGrouped(h.graph, h.tensor(a), h.tensor(b), h.seq)
    (c,) = h.run(C)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_acc_and_with_output(harness):
    h = make(harness)
    a, b = operands((8, 30), (30, 7))
    c0 = np.arange(56, dtype=np.float32).reshape(8, 7)
    C = h.tensor(c0)
    poplin.matMulAcc(h.graph, C, -0.5, h.tensor(a), h.tensor(b), h.seq)
    out = h.graph.addVariable(poplar.FLOAT, [8, 7], "out")
    poplin.matMulWithOutput(h.graph, h.tensor(a), h.tensor(b), out, h.seq)
    acc, plain = h.run(C, out)
    np.testing.assert_allclose(acc, c0 - 0.5 * (a @ b), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(plain, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tiles", [1, 4])
def test_aliased_outputs_go_through_a_temporary(harness, tiles):
    """``matMulWithOutput(g, Q, A, A, s)`` is ``A = Q @ A`` (PopLibs' QR test does it); also
    ``A = A @ B`` into a view, a grouped product into its LHS, and matMulAcc into an operand."""
    h = make(harness, tiles)
    (q, a), (b, c) = operands((6, 6), (6, 5)), operands((5, 5), (5, 5), seed=1)
    Q, A, B = h.tensor(q), h.tensor(a), h.tensor(b)
    poplin.matMulWithOutput(h.graph, Q, A, A, h.seq)
    poplin.matMulWithOutput(h.graph, A, B, A, h.seq)
    gq, ga = operands((2, 4, 4), (2, 4, 3))
    GQ = h.tensor(gq)
    poplin.matMulGroupedWithOutput(h.graph, GQ, h.tensor(ga), GQ.slice(0, 3, 2), h.seq)
    C = h.tensor(c)
    poplin.matMulAcc(h.graph, C, 2.0, C, C, h.seq)
    got_a, got_g, got_c = h.run(A, GQ, C)
    np.testing.assert_allclose(got_a, q @ a @ b, rtol=1e-5, atol=1e-5)
    expected_g = gq.copy()
    expected_g[:, :, :3] = gq @ ga
    np.testing.assert_allclose(got_g, expected_g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_c, c + 2.0 * (c @ c), rtol=1e-5, atol=1e-5)


def test_created_inputs_sit_on_their_tiles(harness):
    h = make(harness)
    shape_a, shape_b = [24, 64], [64, 20]
    A = poplin.createMatMulInputLHS(h.graph, poplar.FLOAT, shape_a, shape_b, "A")
    B = poplin.createMatMulInputRHS(h.graph, poplar.FLOAT, shape_a, shape_b, "B")
    plan = poplin.getMatMulPlan(h.graph.getTarget(), poplar.FLOAT, shape_a, shape_b)
    k0, k1 = plan.ranges(64, plan.splitK, 0)
    m0, m1 = plan.ranges(24, plan.splitM, 0)
    first = h.graph.getTileMapping(A.slice([m0, k0], [m1, k1]))
    assert [t for t, ivs in enumerate(first) if ivs] == [plan.tile(0, 0, 0, 0)]
    a, b = operands(shape_a, shape_b)
    h.write(A, a, "a")
    h.write(B, b, "b")
    C = poplin.matMul(h.graph, A, B, h.seq, "C")
    (c,) = h.run(C)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    steps = [s["name"] for s in h.engine.getProfile()["execution"]["steps"]]
    assert any(name.startswith("C/matmul") for name in steps)


@pytest.mark.parametrize("shape_a,shape_b,message", [
    ([4], [4, 2], "not a matrix"),
    ([3, 4], [5, 2], "Inner dimensions"),
])
def test_shape_errors(shape_a, shape_b, message):
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    A, B = graph.addVariable(poplar.FLOAT, shape_a), graph.addVariable(poplar.FLOAT, shape_b)
    with pytest.raises(PoplibsError, match=message):
        poplin.matMul(graph, A, B, poplar.program.Sequence())


def test_type_and_option_errors():
    graph = poplar.Graph(poplar.IPUModel().createDevice())
    seq = poplar.program.Sequence()
    A, B = graph.addVariable(poplar.FLOAT, [2, 3]), graph.addVariable(poplar.INT, [3, 2])
    with pytest.raises(PoplibsError, match="different types"):
        poplin.matMul(graph, A, B, seq)
    with pytest.raises(PoplibsError, match="Unrecognised matmul option"):
        poplin.matMul(graph, A, graph.addVariable(poplar.FLOAT, [3, 2]), seq, options={"bogus": "1"})
    with pytest.raises(PoplibsError, match="group"):
        poplin.matMulGrouped(graph, graph.addVariable(poplar.FLOAT, [2, 2, 3]),
                             graph.addVariable(poplar.FLOAT, [3, 3, 2]), seq)
