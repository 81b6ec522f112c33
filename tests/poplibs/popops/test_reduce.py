"""popops.reduce / reduceWithOutput / reduceMany against numpy, in both codelet modes."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops
from poplibs_py.poputil import PoplibsError

reduce_module = importlib.import_module("poplibs_py.popops.reduce")  # popops.reduce is the function

Op = popops.Operation

# (shape, dims, mapping): rows over many tiles, column reductions, mixed dims, copies.
CASES = [
    ([31, 201], [1], "linear"),
    ([31, 201], [0], "linear"),
    ([100, 100], [0], "linear"),
    ([2, 3, 4], [0, 2], "linear"),
    ([2, 3, 4], [1], "linear"),
    ([2, 3, 4], [0, 1, 2], "linear"),
    ([2, 3, 4], [], "linear"),
    ([17, 23], [1], "scattered"),  # element i on tile i % 16: every run is one element long
    ([17, 23], [0], "scattered"),
    ([5, 40], [0, 1], 3),  # all on one tile: one stage
]

DTYPES = {
    Op.ADD: ["float", "half", "int", "unsigned int"],
    Op.SQUARE_ADD: ["float", "half", "int", "unsigned int"],
    Op.MUL: ["float", "half", "int", "unsigned int"],
    Op.MAX: ["float", "half", "int", "unsigned int"],
    Op.MIN: ["float", "half", "int", "unsigned int"],
    Op.LOG_ADD: ["float", "half"],
    Op.LOGICAL_AND: ["bool"],
    Op.LOGICAL_OR: ["bool"],
}


def scattered(graph, t):
    n = t.numElements()
    graph.setTileMapping(t, [[(i, i + 1) for i in range(tile, n, 16)] for tile in range(16)])


def mapping_of(m):
    return scattered if m == "scattered" else m


def data(op: Op, dtype: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < (0.9 if op is Op.LOGICAL_AND else 0.1)
    if op is Op.MUL:
        if dtype in ("float", "half"):
            return rng.uniform(0.9, 1.1, shape)
        return rng.choice([1, 1, 1, 3, 2 if dtype == "unsigned int" else -2], shape)  # wraps, as numpy's
    if dtype in ("int",):
        return rng.integers(-50, 50, shape)
    if dtype == "unsigned int":
        return rng.integers(0, 100, shape)
    return rng.uniform(-2, 2, shape)


def reference(op: Op, x: np.ndarray, dims, out_dtype) -> np.ndarray:
    axes = tuple(dims)
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x
    if op is Op.ADD:
        r = wide.sum(axis=axes, dtype=wide.dtype if x.dtype.kind == "f" else x.dtype)
    elif op is Op.SQUARE_ADD:
        r = (wide * wide).sum(axis=axes, dtype=wide.dtype if x.dtype.kind == "f" else x.dtype)
    elif op is Op.MUL:
        r = wide.prod(axis=axes, dtype=wide.dtype if x.dtype.kind == "f" else x.dtype)
    elif op is Op.MAX:
        r = x.max(axis=axes) if x.size else None
    elif op is Op.MIN:
        r = x.min(axis=axes) if x.size else None
    elif op is Op.LOG_ADD:
        r = np.logaddexp.reduce(wide, axis=axes) if axes else wide
    elif op is Op.LOGICAL_AND:
        r = x.all(axis=axes)
    else:
        r = x.any(axis=axes)
    return np.asarray(r).astype(out_dtype)


def check(got, want, dtype: str, n: int = 1):
    if dtype == "half":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=1e-2)
    elif dtype == "float":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(n, 1))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.name)
def test_every_operation_and_type(harness, op):
    for dtype in DTYPES[op]:
        h = harness()
        type_ = poplar.types.asType(dtype)
        outs, wants = [], []
        for k, (shape, dims, mapping) in enumerate(CASES):
            x = data(op, dtype, shape, seed=k).astype(type_.dtype)
            t = h.tensor(x, type_, mapping=mapping_of(mapping))
            outs.append(popops.reduce(h.graph, t, dims, popops.ReduceParams(op), h.seq))
            wants.append((reference(op, x, dims, type_.dtype), int(np.prod([shape[d] for d in dims]))))
        for got, (want, n), (shape, dims, _) in zip(h.run(*outs), wants, CASES):
            assert list(got.shape) == [s for d, s in enumerate(shape) if d not in dims]
            check(got, want, dtype, n)


@pytest.mark.parametrize("shape,dims,out_shape", [
    ([2, 1, 2, 3], [1, 2], [2, 3]),
    ([2, 2], [0, 1], []),
    ([0, 1, 2], [], [0, 1, 2]),
    ([3, 0, 2], [0], [0, 2]),
])
def test_edge_case_shapes(harness, shape, dims, out_shape):
    h = harness()
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = h.tensor(x)
    out = popops.reduce(h.graph, t, dims, Op.ADD, h.seq)
    assert out.shape() == out_shape
    if out.numElements():
        (got,) = h.run(out)
        np.testing.assert_array_equal(got, x.sum(axis=tuple(dims)))


IDENTITIES = [
    (Op.ADD, "float", 0.0), (Op.MUL, "float", 1.0), (Op.MAX, "float", -np.inf), (Op.MIN, "float", np.inf),
    (Op.SQUARE_ADD, "half", 0.0), (Op.LOG_ADD, "float", -np.inf), (Op.MAX, "int", np.iinfo(np.int32).min),
    (Op.MIN, "unsigned int", np.iinfo(np.uint32).max), (Op.MUL, "int", 1),
    (Op.LOGICAL_AND, "bool", True), (Op.LOGICAL_OR, "bool", False),
]


@pytest.mark.parametrize("op,dtype,identity", IDENTITIES, ids=lambda x: getattr(x, "name", str(x)))
def test_zero_sized_reduced_dim_fills_identity(harness, op, dtype, identity):
    h = harness()
    type_ = poplar.types.asType(dtype)
    t = h.graph.addVariable(type_, [3, 0, 5], "empty")
    out = popops.reduce(h.graph, t, [1], op, h.seq)
    assert out.shape() == [3, 5]
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, np.full([3, 5], identity, dtype=type_.dtype))


def test_zero_sized_with_scale_and_update(harness):
    h = harness()
    t = h.graph.addVariable(poplar.FLOAT, [4, 0], "empty")
    scaled = popops.reduce(h.graph, t, [1], popops.ReduceParams(Op.ADD, scale=3.0), h.seq)
    kept = h.tensor(np.arange(4, dtype=np.float32))
    popops.reduceWithOutput(h.graph, t, kept, [1], popops.ReduceParams(Op.ADD, update=True), h.seq)
    got, same = h.run(scaled, kept)
    np.testing.assert_array_equal(got, np.zeros(4))
    np.testing.assert_array_equal(same, np.arange(4))


@pytest.mark.parametrize("op", [Op.ADD, Op.SQUARE_ADD, Op.LOG_ADD], ids=lambda o: o.name)
def test_scale_and_update(harness, op):
    h = harness()
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (31, 201)).astype(np.float32)
    before = rng.uniform(-1, 1, 201).astype(np.float32)
    t = h.tensor(x)
    k = h.tensor(np.float32(0.75), name="k")
    scaled = popops.reduce(h.graph, t, [0], popops.ReduceParams(op, scale=k), h.seq)
    acc = h.tensor(before, name="acc")
    popops.reduceWithOutput(h.graph, t, acc, [0], popops.ReduceParams(op, True, 2.0), h.seq)
    got_scaled, got_acc = h.run(scaled, acc)
    r = reference(op, x, [0], np.float64)
    if op is Op.LOG_ADD:  # logarithms: the scale adds, the update log-adds
        want_scaled, want_acc = r + 0.75, np.logaddexp(before, r + 2.0)
    else:
        want_scaled, want_acc = r * 0.75, before + 2.0 * r
    np.testing.assert_allclose(got_scaled, want_scaled, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got_acc, want_acc, rtol=1e-5, atol=1e-4)


def test_update_without_scale_single_stage(harness):
    h = harness()
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = h.tensor(x, mapping=5)
    acc = h.tensor(np.array([100, 200, 300], np.int32), mapping=5)
    popops.reduceWithOutput(h.graph, t, acc, [1], popops.ReduceParams(Op.ADD, update=True), h.seq)
    (got,) = h.run(acc)
    np.testing.assert_array_equal(got, [106, 222, 338])


@pytest.mark.parametrize("in_type,out_type", [("half", "float"), ("float", "half"), ("half", "half")])
def test_output_type_and_half_accumulation(harness, in_type, out_type):
    h = harness()
    # 4096 ones and a big value: a half accumulator would stop at 2048 + ...
    x = np.ones((2, 4096), np.float16)
    t = h.tensor(x, in_type)
    out = popops.reduce(h.graph, t, poplar.types.asType(out_type), [1], Op.ADD, h.seq)
    sq = popops.reduce(h.graph, t, poplar.types.asType(out_type), [1], Op.SQUARE_ADD, h.seq, "sq")
    assert out.elementType() == poplar.types.asType(out_type)
    got, got_sq = h.run(out, sq)
    np.testing.assert_array_equal(got, [4096, 4096])
    np.testing.assert_array_equal(got_sq, [4096, 4096])


def test_views_as_inputs(harness):
    h = harness()
    rng = np.random.default_rng(2)
    x = rng.integers(-9, 9, (20, 30)).astype(np.int32)
    v = rng.integers(-9, 9, (7,)).astype(np.int32)
    t = h.tensor(x)
    tv = h.tensor(v)
    outs = [
        popops.reduce(h.graph, t.transpose(), [1], Op.ADD, h.seq),
        popops.reduce(h.graph, t.slice([3, 5], [17, 26]), [0], Op.MAX, h.seq),
        popops.reduce(h.graph, t.subSample(3, 1).reverse(0), [0, 1], Op.MIN, h.seq),
        popops.reduce(h.graph, tv.expand([0]).broadcast(5, 0), [0], Op.ADD, h.seq),
        popops.reduce(h.graph, tv.expand([1]).broadcast(4, 1), [1], Op.ADD, h.seq),
    ]
    got = h.run(*outs)
    np.testing.assert_array_equal(got[0], x.T.sum(1))
    np.testing.assert_array_equal(got[1], x[3:17, 5:26].max(0))
    np.testing.assert_array_equal(got[2], x[:, ::3][::-1].min())
    np.testing.assert_array_equal(got[3], 5 * v)
    np.testing.assert_array_equal(got[4], 4 * v)


def test_reduce_many_shares_compute_sets(harness):
    h = harness()
    x = np.arange(31 * 201, dtype=np.float32).reshape(31, 201) % 7
    t = h.tensor(x)
    outputs: list[poplar.Tensor] = []
    popops.reduceMany(h.graph, [popops.SingleReduceOp(t, [0], Op.ADD),
                                popops.SingleReduceOp(t, [1], popops.ReduceParams(Op.MAX)),
                                popops.SingleReduceOp(t, [0, 1], Op.ADD, poplar.HALF)], outputs, h.seq)
    assert [o.shape() for o in outputs] == [[201], [31], []]
    assert all(isinstance(p, prog.Execute) for p in h.seq.programs) and len(h.seq.programs) == 2
    got = h.run(*outputs)
    np.testing.assert_array_equal(got[0], x.sum(0))
    np.testing.assert_array_equal(got[1], x.max(1))
    assert got[2] == np.float16(x.sum())


def test_data_over_tiles_is_reduced_in_two_stages(harness):
    h = harness()
    x = np.ones((31, 201), np.float32)
    t = h.tensor(x)
    out = popops.reduce(h.graph, t, [0], Op.ADD, h.seq, "colsum")
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, np.full(201, 31.0))
    sets = h.engine.getProfile()["compilation"]["computeSets"]
    assert [cs["name"] for cs in sets] == ["colsum/stage1", "colsum/stage2"]
    assert len(h.seq.programs) == 2
    tiles = {h.graph.getTileMapping(t)[i] != [] for i in range(16)}
    assert tiles == {True}  # the input really spans all 16 tiles


def test_data_on_one_tile_is_one_stage(harness):
    h = harness()
    t = h.tensor(np.ones((8, 9), np.float32), mapping=2)
    out = popops.reduce(h.graph, t, [0], Op.ADD, h.seq)
    (got,) = h.run(out)
    np.testing.assert_array_equal(got, np.full(9, 8.0))
    assert len(h.seq.programs) == 1
    assert {tile for tile, iv in enumerate(h.graph.getTileMapping(out)) if iv} == {2}


def test_row_outputs_are_mapped_with_their_rows(harness):
    h = harness()
    t = h.tensor(np.ones((64, 50), np.float32))
    out = popops.reduce(h.graph, t, [1], Op.ADD, h.seq)
    mapping = h.graph.getTileMapping(t)
    for r in range(64):
        row_tile = next(tile for tile, ivs in enumerate(mapping) for b, e in ivs if b <= r * 50 < e)
        assert h.graph.getTileMapping(out[r])[row_tile]


@pytest.mark.parametrize("dims", [[2], [0, 0], [-1]])
def test_bad_dims_raise(harness, dims):
    h = harness()
    t = h.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(PoplibsError, match="dimension"):
        popops.reduce(h.graph, t, dims, Op.ADD, h.seq)


@pytest.mark.parametrize("op,dtype,out_type", [
    (Op.LOG_ADD, "int", None), (Op.LOGICAL_AND, "float", None), (Op.ADD, "bool", None),
    (Op.MAX, "float", "half"), (Op.ADD, "int", "float"), (Op.LOGICAL_OR, "bool", "int"),
])
def test_bad_types_raise(harness, op, dtype, out_type):
    h = harness()
    t = h.graph.addVariable(poplar.types.asType(dtype), [4, 4], "t")
    args = [poplar.types.asType(out_type)] if out_type else []
    with pytest.raises(PoplibsError, match="does not support"):
        popops.reduce(h.graph, t, *args, [0], op, h.seq)


def test_bad_params_raise(harness):
    h = harness()
    t = h.tensor(np.ones((4, 4), np.float32))
    with pytest.raises(PoplibsError, match="scale and update"):
        popops.reduce(h.graph, t, [0], popops.ReduceParams(Op.MUL, scale=2.0), h.seq)
    with pytest.raises(PoplibsError, match="scale and update"):
        popops.reduce(h.graph, t, [0], popops.ReduceParams(Op.MAX, update=True), h.seq)
    bad_scale = h.graph.addVariable(poplar.INT, [], "k")
    with pytest.raises(PoplibsError, match="0-D FLOAT"):
        popops.reduce(h.graph, t, [0], popops.ReduceParams(Op.ADD, scale=bad_scale), h.seq)
    wrong = h.graph.addVariable(poplar.FLOAT, [3], "wrong")
    with pytest.raises(PoplibsError, match="shape"):
        popops.reduceWithOutput(h.graph, t, wrong, [0], Op.ADD, h.seq)


# Column reductions (an outer dimension of row-major data): stage 1 adds each tile's row
# segments into partial rows, eight columns at a time plus a remainder; stage 2 gathers each
# output block's partials from every tile as one strided entry.
@pytest.mark.parametrize("shape,tiles", [
    ([37, 301], 64),  # a few rows per tile, rows cut at odd places: regions of odd widths
    ([5, 1003], 64),  # rows longer than a tile's share: partials cover part of the columns
    ([200, 9], 16),  # many whole rows per tile, narrow
    ([3, 7, 45], 32),  # reduced over the two outer dimensions
])
def test_column_reductions_over_many_tiles(harness, shape, tiles):
    h = harness(tiles)
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    xi = rng.integers(-40, 40, shape).astype(np.int32)
    dims = list(range(len(shape) - 1))
    t, ti = h.tensor(x), h.tensor(xi)
    k = h.tensor(np.float32(-0.5), name="k")
    before = rng.uniform(-1, 1, shape[-1]).astype(np.float32)
    acc = h.tensor(before, name="acc")
    outs = [
        popops.reduce(h.graph, t, dims, Op.ADD, h.seq),
        popops.reduce(h.graph, ti, dims, Op.ADD, h.seq),
        popops.reduce(h.graph, t, dims, popops.ReduceParams(Op.ADD, scale=k), h.seq),
        popops.reduce(h.graph, t, poplar.HALF, dims, Op.ADD, h.seq),
        popops.reduce(h.graph, t, dims, Op.MAX, h.seq),
    ]
    popops.reduceWithOutput(h.graph, t, acc, dims, popops.ReduceParams(Op.ADD, True, 2.0), h.seq)
    got = h.run(*outs, acc)
    want = x.astype(np.float64).sum(axis=tuple(dims))
    n = int(np.prod(shape[:-1]))
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6 * n)
    np.testing.assert_array_equal(got[1], xi.sum(axis=tuple(dims)))
    np.testing.assert_allclose(got[2], -0.5 * want, rtol=1e-5, atol=1e-6 * n)
    np.testing.assert_allclose(got[3].astype(np.float64), want, rtol=2e-3, atol=1e-2)
    np.testing.assert_array_equal(got[4], x.max(axis=tuple(dims)))
    np.testing.assert_allclose(got[5], before + 2.0 * want, rtol=1e-5, atol=1e-5 * n)


def test_column_reduction_matches_sequential_float_sums(harness):
    """Eight columns at a time add each output's elements in their order: bit-exact float32."""
    h = harness(8)
    x = (np.random.default_rng(4).standard_normal((40, 77)) * 1e3).astype(np.float32)
    t = h.tensor(x, mapping=5)  # one tile: one stage, pieces are whole rows in order
    (got,) = h.run(popops.reduce(h.graph, t, [0], Op.ADD, h.seq))
    want = np.zeros(77, np.float32)
    for row in x:
        want += row
    np.testing.assert_array_equal(got, want)


def test_column_reduction_of_concatenated_variables(harness):
    """Input runs cross variables and tiles: pieces stop at every edge."""
    h = harness(16)
    rng = np.random.default_rng(5)
    a = rng.integers(-9, 9, (13, 40)).astype(np.int32)
    b = rng.integers(-9, 9, (6, 40)).astype(np.int32)
    ta, tb = h.tensor(a), h.tensor(b, mapping=7)
    both = poplar.concat([ta, tb, ta.slice(2, 5)])
    (got,) = h.run(popops.reduce(h.graph, both, [0], Op.ADD, h.seq))
    np.testing.assert_array_equal(got, a.sum(0) + b.sum(0) + a[2:5].sum(0))


@pytest.mark.parametrize("rows", [1, 3, 13, 40])
def test_column_reduction_rows_in_place(harness, rows):
    """Stage 1 adds up to four row pieces a pass, stage 2 eight, four, then one partial row a
    pass: every count of rows per tile and of tiles gives the sums (int: exact in any order)."""
    h = harness(16)
    x = np.random.default_rng(rows).integers(-99, 99, (rows, 37)).astype(np.int32)
    t = h.tensor(x)
    (got,) = h.run(popops.reduce(h.graph, t, [0], Op.ADD, h.seq))
    np.testing.assert_array_equal(got, x.sum(0))


def test_reductions_add_to_a_list_of_compute_sets_as_poplibs_css_form(harness):
    """Graphcore's advanced example: reduceWithOutput(g, t, out, {1}, ADD, reductionSets, ...)."""
    h = harness()
    x = np.random.default_rng(3).standard_normal((40, 30)).astype(np.float32)
    t = h.tensor(x)
    out = h.tensor(np.zeros(40, np.float32))
    reduction_sets: list = []
    popops.reduceWithOutput(h.graph, t, out, [1], popops.ReduceParams(popops.Operation.ADD), reduction_sets,
                            "reduction")
    assert reduction_sets and all(isinstance(cs, poplar.ComputeSet) for cs in reduction_sets)
    for cs in reduction_sets:
        h.seq.add(prog.Execute(cs))
    more = popops.reduce(h.graph, t, [0], popops.Operation.MAX, reduction_sets)  # reuses the stages
    (got, most) = h.run(out, more)
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(most, x.max(axis=0))


@pytest.mark.parametrize("op", [Op.ADD, Op.MAX, Op.SQUARE_ADD])
def test_outputs_with_many_partials_get_an_intermediate_stage(harness, op):
    # a column reduction of data spread over 256 tiles: each output has a partial on ~128 tiles,
    # which the last stage alone would reduce on the output's few tiles
    h = harness(tiles=256)
    x = (np.arange(128 * 96, dtype=np.float32).reshape(128, 96) % 13) - 6
    t = h.tensor(x)
    out = popops.reduce(h.graph, t, [0], popops.ReduceParams(op, scale=2.0) if op is Op.ADD else op, h.seq,
                        "bias")
    (got,) = h.run(out)
    want = {Op.ADD: 2 * x.sum(0), Op.MAX: x.max(0), Op.SQUARE_ADD: (x * x).sum(0)}[op]
    np.testing.assert_array_equal(got, want)
    steps = {s["name"]: s for s in h.engine.getProfile()["execution"]["steps"]}
    assert list(steps) == ["bias/stage1", "bias/stage2", "bias/stage3"]
    assert steps["bias/stage3"]["compute"] < steps["bias/stage2"]["compute"] * 4


@pytest.mark.parametrize("mode", ["native"])  # a whole IPU's reduction: the interpreter adds 9 s
def test_the_intermediate_stage_spreads_a_bias_gradient(harness, monkeypatch):
    # a bias gradient over a whole IPU: without the intermediate stage the outputs' 24 tiles
    # each reduce ~180 partials per output; with it, two stages of ~39 (2.5x faster)
    def gradient() -> int:
        h = harness(tiles=1472)
        t = h.tensor(np.ones((256, 768), np.float32))
        out = popops.reduce(h.graph, t, [0], Op.ADD, h.seq, "grad")
        (got,) = h.run(out)
        np.testing.assert_array_equal(got, np.full(768, 256.0))
        return sum(s["compute"] for s in h.engine.getProfile()["execution"]["steps"])

    spread = gradient()
    monkeypatch.setattr(reduce_module, "intermediate_group", lambda *_: 0)
    assert spread * 2 < gradient()


def test_many_small_reductions_of_mixed_kinds_match_numpy(harness):
    """reduceMany plans the reductions of one kind together: rows, columns, scalars and scaled
    sums of views of a few inputs, of several operations and types, each as numpy has it."""
    h = harness()
    rng = np.random.default_rng(5)
    xf = rng.uniform(-2, 2, (24, 30)).astype(np.float32)
    xi = rng.integers(-9, 9, (24, 4, 6)).astype(np.int32)
    xh = rng.uniform(-1, 1, (12, 10)).astype(np.float16)
    f, i, hf = h.tensor(xf), h.tensor(xi), h.tensor(xh)
    ops, want = [], []
    for k in range(24):
        kind = k % 6
        if kind == 0:
            ops.append(popops.SingleReduceOp(f[k], [0], Op.ADD))
            want.append(xf[k].sum())
        elif kind == 1:
            ops.append(popops.SingleReduceOp(f[k].reshape([5, 6]), [1], Op.MAX))
            want.append(xf[k].reshape(5, 6).max(1))
        elif kind == 2:
            ops.append(popops.SingleReduceOp(i[k], [0], Op.ADD))  # a column reduction
            want.append(xi[k].sum(0))
        elif kind == 3:
            ops.append(popops.SingleReduceOp(i[k].transpose(), [0, 1], Op.MIN))
            want.append(xi[k].min())
        elif kind == 4:
            ops.append(popops.SingleReduceOp(f[k:k + 2], [0], popops.ReduceParams(Op.ADD, scale=0.5)))
            want.append(0.5 * xf[k:k + 2].sum(0, dtype=np.float64))
        else:
            ops.append(popops.SingleReduceOp(hf[k // 2], [0], Op.SQUARE_ADD, poplar.FLOAT))
            want.append((xh[k // 2].astype(np.float64) ** 2).sum())
    outputs: list[poplar.Tensor] = []
    popops.reduceMany(h.graph, ops, outputs, h.seq, "many")
    assert len(h.seq.programs) == 2
    for got, expected in zip(h.run(*outputs), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


def test_reductions_of_one_kind_share_vertices(harness):
    # 48 rows on one tile: the rows' regions shared out over the tile's workers, not a vertex
    # (or six) per reduction
    h = harness()
    x = np.arange(48 * 20, dtype=np.float32).reshape(48, 20) % 11
    t = h.tensor(x, mapping=3)
    outputs: list[poplar.Tensor] = []
    popops.reduceMany(h.graph, [popops.SingleReduceOp(t[r], [0], Op.ADD) for r in range(48)], outputs, h.seq)
    assert len(h.seq.programs) == 1 and h.graph.getNumVertices() <= 12
    got = h.run(*outputs)
    np.testing.assert_array_equal(np.array(got), x.sum(1))


def test_given_outputs_mapped_or_not(harness):
    h = harness()
    x = np.random.default_rng(6).integers(-9, 9, (6, 40)).astype(np.int32)
    t = h.tensor(x)
    outs = [h.graph.addVariable(poplar.INT, [6], f"o{k}") for k in range(3)]
    h.graph.setTileMapping(outs[0], 5)  # mapped: stays where it is
    h.graph.setTileMapping(outs[1][:2], 7)  # partly mapped: mapped again
    popops.reduceMany(h.graph, [popops.SingleReduceOp(t, [1], op) for op in (Op.ADD, Op.MAX, Op.MIN)], outs,
                      h.seq)
    assert {tile for tile, iv in enumerate(h.graph.getTileMapping(outs[0])) if iv} == {5}
    got = h.run(*outs)
    np.testing.assert_array_equal(got[0], x.sum(1))
    np.testing.assert_array_equal(got[1], x.max(1))
    np.testing.assert_array_equal(got[2], x.min(1))


def test_a_reduction_needing_an_intermediate_stage_is_planned_alone(harness):
    # a bias gradient over 256 tiles among small sums: it gets its intermediate stage, they stay
    # in the first two stages
    h = harness(tiles=256)
    x = (np.arange(128 * 96, dtype=np.float32).reshape(128, 96) % 13) - 6
    t = h.tensor(x)
    ops = [popops.SingleReduceOp(t, [0], Op.ADD)]
    ops += [popops.SingleReduceOp(t[r], [0], Op.ADD) for r in range(4)]
    outputs: list[poplar.Tensor] = []
    popops.reduceMany(h.graph, ops, outputs, h.seq, "mixed")
    got = h.run(*outputs)
    np.testing.assert_array_equal(got[0], x.sum(0))
    np.testing.assert_array_equal(np.array(got[1:]), x[:4].sum(1))
    steps = [s["name"] for s in h.engine.getProfile()["execution"]["steps"]]
    assert steps == ["mixed/stage1", "mixed/stage2", "mixed/stage3"]


def test_an_unmapped_input_is_named(harness):
    h = harness()
    a = h.tensor(np.ones((4, 5), np.float32))
    b = h.graph.addVariable(poplar.FLOAT, [4, 5], "unmapped")
    h.graph.setTileMapping(b[:2], 1)
    with pytest.raises(poplar.InvalidTileMappingError, match="'unmapped'"):
        popops.reduceMany(h.graph, [popops.SingleReduceOp(t, [1], Op.ADD) for t in (a, b)], [], h.seq)
