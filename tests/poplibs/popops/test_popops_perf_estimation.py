"""popops' and popnn's vertices are costed as PopLibs' estimators cost them at the data-path width.

The expected figures are written here from PopLibs' formulas (popopsCycleEstimators.cpp,
PerformanceEstimation.cpp, popnnCycleEstimators.cpp), with the per-op figures of its tables, and
compared with the compute cycles the profile gives for one tile of a real run.
"""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popnn, popops

W = 6  # worker contexts


def _run(n: int, type_, build, arch: str = "ipu2", check=None):
    """The compute cycles of the one compute set ``build(graph, [t0, t1], seq)`` adds, the operands
    ``n`` elements of ``type_`` on tile 0, and the values it computed."""
    m = poplar.IPUModel(arch)
    m.tilesPerIPU = 1
    device = m.createDevice()
    graph = poplar.Graph(device.getTarget())
    popops.addCodelets(graph)
    ts = []
    for i in range(2):
        t = graph.addVariable(type_, [n], f"t{i}")
        graph.setTileMapping(t, 0)
        graph.createHostWrite(f"t{i}", t)
        ts.append(t)
    seq = poplar.program.Sequence()
    out = build(graph, ts, seq)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    x = (np.arange(n) % 7 + 1).astype(type_.dtype)
    for i in range(2):
        engine.writeTensor(f"t{i}", x)
    engine.run()
    steps = [s for s in engine.getProfile()["execution"]["steps"] if s.get("compute")]
    assert len(steps) == 1, steps
    return steps[0]["compute"], x, engine.readTensor("out")


def _row(n: int, width: int) -> int:
    """The longest worker row: the tile's vectors shared out in whole vectors (tile_rows)."""
    vectors = _ceil(n, width)
    return min(n, _ceil(vectors, W) * width)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


SIZES = [2, 7, 64, 1000, 6000]  # (one element is a scalar operand: another vertex)
TYPES = [(poplar.FLOAT, 2), (poplar.HALF, 4)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("type_,width", TYPES)
def test_binary_op_1d(n, type_, width):
    # BinaryOp1D, float/half ADD: 29 (float) or 26 per worker, 1 + 2 cycles per vector
    cycles, x, got = _run(n, type_, lambda g, ts, seq: popops.add(g, ts[0], ts[1], seq))
    worker = 29 if type_ == poplar.FLOAT else 26
    assert cycles == W * (worker + 3 * _ceil(_row(n, width), width)) + 11
    np.testing.assert_array_equal(got, x + x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("type_,width", TYPES)
def test_binary_op_1d_in_place_comparison_free_ops(n, type_, width):
    # BinaryOp1DInPlace, MAXIMUM: 58 per worker; float {4, unroll 2}, half {4, unroll 4}
    def build(g, ts, seq):
        popops.maxInPlace(g, ts[0], ts[1], seq)
        return ts[0]

    cycles, x, got = _run(n, type_, build)
    assert cycles == W * (58 + 4 * _ceil(_row(n, width), width)) + 11
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("type_,width,exp_cycles,unroll", [(poplar.FLOAT, 2, 6, 2), (poplar.HALF, 4, 4, 4)])
def test_unary_op_1d_exponent(n, type_, width, exp_cycles, unroll):
    # UnaryOp1D, EXPONENT: 33 per worker, {6, unroll 2} float, {4, unroll 4} half; 9 + 11
    cycles, x, got = _run(n, type_, lambda g, ts, seq: popops.exp(g, ts[0], seq))
    assert cycles == W * (33 + exp_cycles * _ceil(_row(n, width), unroll)) + 9 + 11
    np.testing.assert_allclose(got, np.exp(x.astype(np.float32)), rtol=2e-3)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("type_,width", TYPES)
def test_unary_op_1d_vectorised(n, type_, width):
    # UnaryOp1D, FLOOR: {2, natural}: (2 + 4) cycles per vector, as (c * (n + w - 1)) // w
    cycles, x, got = _run(n, type_, lambda g, ts, seq: popops.floor(g, ts[0], seq))
    row = _row(n, width)
    assert cycles == W * (17 + 6 * (row + width - 1) // width) + 9 + 11
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("type_,width", TYPES)
def test_broadcast_scalar(n, type_, width):
    # BroadcastScalar1D, MULTIPLY by a scalar: 20 per worker, 1 + 1 per vector
    def build(g, ts, seq):
        return popops.mul(g, ts[0], 3, seq)

    cycles, x, got = _run(n, type_, build)
    assert cycles == W * (20 + 2 * _ceil(_row(n, width), width)) + 11
    np.testing.assert_array_equal(got, x * 3)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("type_,width", TYPES)
def test_fused_expression(n, type_, width):
    # ExpressionGenerator's MultiVertex: 20 + per vector input and op (n / w + n % w), rounded to 6
    e = popops.expr._1 * popops.expr._2 + popops.expr._1
    cycles, x, got = _run(n, type_, lambda g, ts, seq: popops.map(g, e, ts, seq))
    assert cycles == _ceil(20 + 2 * 2 * (n // width + n % width), W) * W
    np.testing.assert_array_equal(got, x * x + x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("src,dst", [(poplar.FLOAT, poplar.HALF), (poplar.HALF, poplar.FLOAT)])
def test_cast(n, src, dst):
    # Cast1D: 12 + W (19 + cycles per vector + a check per remainder bit, 2 more if set + 18);
    # the vector is the fewer of two loads' and one store's elements: float->half 4 (two 64-bit
    # loads: 2 cycles), half->float 2 (one store: 1 cycle)
    cycles, x, got = _run(n, src, lambda g, ts, seq: popops.cast(g, ts[0], dst, seq))
    row = _row(n, 4 if dst == poplar.HALF else 2)  # rows are cut in vectors of the output
    if src == poplar.FLOAT:
        worker = 19 + 2 * (row // 4) + 2 + 2 * bin(row % 4).count("1")
    else:
        worker = 19 + row // 2 + 1 + 2 * (row % 2)
    assert cycles == 12 + W * (worker + 18)
    np.testing.assert_array_equal(got, x.astype(dst.dtype))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.HALF, poplar.INT])
def test_zero(n, type_):
    # Fill: float/int 16 + n / 2 + 6 + (n % 2 == 1) + 1; half 15, 21, else 26 + n / 4
    def build(g, ts, seq):
        popops.zero(g, ts[0], seq)
        return ts[0]

    cycles, x, got = _run(n, type_, build)
    row = _row(n, 4 if type_ == poplar.HALF else 2)
    if type_ == poplar.HALF:
        fill = {1: 15, 2: 21}.get(row, 26 + row // 4)
    else:
        fill = 16 + row // 2 + 6 + (row % 2 == 1) + 1
    assert cycles == W * fill
    np.testing.assert_array_equal(got, np.zeros_like(x))


@pytest.mark.parametrize("n", [12, 600, 6000])
@pytest.mark.parametrize("type_,width", TYPES)
def test_scaled_add(n, type_, width):
    # ScaledAddSupervisor (same types): 21 + 11 + (7 | 13) + 12 + 6; per worker 15 + 6 + 3 (v - 1) + 2,
    # the remainder worker + 1 (+ 8 float / 5.. half), + 1 exit
    def build(g, ts, seq):
        popops.scaledAddTo(g, ts[0], ts[1], 0.5, seq)
        return ts[0]

    cycles, x, got = _run(n, type_, build)
    vectors, rest = divmod(n, width)
    per, extra = divmod(vectors, W)
    half_tail = 5 + (7 if rest >= 2 else 0) + (6 if rest == 3 else 0)
    tail = (8 if type_ == poplar.FLOAT else half_tail) if rest else 0
    loop = 6 + 3 * (per - 1) if per else 0
    workers = [15 + loop + 2 + (1 + tail if w == extra else 0) + 1 for w in range(W)]
    assert cycles == 21 + 11 + (13 if rest else 7) + 12 + 6 + W * max(workers)
    np.testing.assert_allclose(got, x + 0.5 * x, rtol=1e-3)


@pytest.mark.parametrize("n", [8, 96, 1000])
@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.HALF])
def test_reduce_add_rows(n, type_):
    # a column sum of [4, n / 4] on one tile: Reduce over each worker's regions (getCyclesEstimateForReduce)
    cycles, x, got = _run(n, type_, lambda g, ts, seq: popops.reduce(
        g, ts[0].reshape([4, n // 4]), [0], popops.Operation.ADD, seq))
    np.testing.assert_allclose(got, x.reshape(4, -1).astype(np.float32).sum(0), rtol=1e-3)
    assert cycles > 0


@pytest.mark.parametrize("n", [7, 96, 1001])
@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.HALF])
def test_reduce_a_row_to_one_output_is_the_single_input_vertex(n, type_):
    # SCALAR_OUTPUT_SINGLE_INPUT (getCyclesEstimateForSingleInput): the accumulators' vector (4
    # floats, 8 halves) in two 64-bit loads a loop; 1 + 2 + 6 + 2 a loop + 5 + 1 a remainder
    # element + 3, and 5 to store a half; one worker does it all
    cycles, x, got = _run(n, type_, lambda g, ts, seq: popops.reduce(g, ts[0], [0], popops.Operation.ADD,
                                                                     seq))
    per_loop = 4 if type_ == poplar.FLOAT else 8
    worker = 1 + 2 + 6 + 2 * n // per_loop + 5 + n % per_loop + 3 + (5 if type_ == poplar.HALF else 0)
    assert cycles == W * worker
    np.testing.assert_allclose(got, x.astype(np.float32).sum(), rtol=1e-3)


@pytest.mark.parametrize("cols", [100, 64, 1000])
@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.HALF])
def test_reduce_columns_is_the_strided_vertex(cols, type_):
    # STRIDED_REDUCE (getCyclesEstimateForStridedReduce): a column sum of [4, cols] on one tile, the
    # columns cut for the workers at 64-bit grains; per worker 3 + 2 + 6 + 5, then per 64-bit
    # vector of outputs 3 + the store (float 3 + 2, half 1 + 7) + 3 + a cycle per row after the first
    cycles, x, got = _run(4 * cols, type_, lambda g, ts, seq: popops.reduce(
        g, ts[0].reshape([4, cols]), [0], popops.Operation.ADD, seq))
    grain = 2 if type_ == poplar.FLOAT else 4
    grains = _ceil(cols, grain)
    chunks = min(W, grains)
    widths = [min(grains * (c + 1) // chunks * grain, cols) - min(grains * c // chunks * grain, cols)
              for c in range(chunks)]
    store = 3 + 2 if type_ == poplar.FLOAT else 1 + 7
    worker = max(16 + _ceil(w, grain) * (3 + store + 3 + 3) for w in widths)
    assert cycles == W * worker
    np.testing.assert_allclose(got, x.reshape(4, -1).astype(np.float32).sum(0), rtol=1e-3)


def test_simple_ops_reach_the_vector_width():
    # doubling a large tile's elements adds one 3-cycle pass (1 + 2) per vector per worker:
    # 2 floats or 4 halves per pass, 64 bits
    for type_, width in TYPES:
        small, _, _ = _run(W * width * 100, type_, lambda g, ts, seq: popops.add(g, ts[0], ts[1], seq))
        large, _, _ = _run(W * width * 200, type_, lambda g, ts, seq: popops.add(g, ts[0], ts[1], seq))
        assert large - small == W * 3 * 100


@pytest.mark.parametrize("n", [6, 100, 6000])
@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.HALF])
def test_nonlinearity_relu(n, type_):
    # NonLinearity1D, RELU (1 cycle per element and per vector): 9 + W * worker
    cycles, x, got = _run(n, type_, lambda g, ts, seq: popnn.nonLinearity(g, popnn.NonLinearityType.RELU,
                                                                         ts[0], seq))
    width = 2 if type_ == poplar.FLOAT else 4
    vectors, rest = divmod(n, width)
    per = _ceil(vectors, W)
    worker = 20 + ((2 + 1 + (per - 1) + 1 + 1) if per else 0)
    if type_ == poplar.FLOAT:
        worker += 3 + (2 + 1) * (rest & 1)
    else:
        worker += 4 + 3 * bool(rest & 2) + 4 * (rest & 1)
    assert cycles == 9 + W * worker
    np.testing.assert_array_equal(got, np.maximum(x, 0))


def test_user_estimators_still_win():
    # a registered estimator for the generated vertex, or setPerfEstimate, replaces the library's
    m = poplar.IPUModel()
    m.tilesPerIPU = 1
    device = m.createDevice()
    graph = poplar.Graph(device.getTarget())
    popops.addCodelets(graph)
    graph.registerPerfEstimator("popops::Fill2d<float>", lambda v, t: 1234)
    popops.addCodelets(graph)  # a second registration of the library does not replace it
    t = graph.addVariable(poplar.FLOAT, [100], "t")
    graph.setTileMapping(t, 0)
    seq = poplar.program.Sequence()
    popops.zero(graph, t, seq)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.run()
    (step,) = [s for s in engine.getProfile()["execution"]["steps"] if s.get("compute")]
    assert step["compute"] == 1234


def _compute_sets(build, shape, type_):
    """The compute cycles of each compute set that runs when ``build(graph, t, seq)`` works on
    ``t`` (``shape``, ``type_``) on one tile, and what it wrote to the tensor it returns."""
    m = poplar.IPUModel()
    m.tilesPerIPU = 1
    device = m.createDevice()
    graph = poplar.Graph(device.getTarget())
    popops.addCodelets(graph)
    popnn.addCodelets(graph)
    t = graph.addVariable(type_, shape, "t")
    graph.setTileMapping(t, 0)
    graph.createHostWrite("t", t)
    seq = poplar.program.Sequence()
    out = build(graph, t, seq)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    x = (np.arange(int(np.prod(shape))) * 7 % 11).reshape(shape).astype(type_.dtype)
    engine.writeTensor("t", x)
    engine.run()
    return [s["compute"] for s in engine.getProfile()["execution"]["steps"] if s.get("compute")], x, \
        engine.readTensor("out")


@pytest.mark.parametrize("out_type,per_index", [(poplar.FLOAT, 100), (poplar.HALF, 74)])
def test_encode_one_hot(out_type, per_index):
    # 6 rows of 8 shared between the 6 workers: a row each, PopLibs' figure an index
    def build(graph, t, seq):
        encoded = graph.addVariable(out_type, [6, 8], "encoded")
        graph.setTileMapping(encoded, 0)
        popops.encodeOneHot(graph, t, encoded, seq)
        return encoded

    (cycles,), x, got = _compute_sets(build, [6], poplar.UNSIGNED_INT)
    assert cycles == W * per_index
    np.testing.assert_array_equal(got, np.eye(9)[np.minimum(x, 8)][:, :8])  # 8 and over: a row of zeros


def test_iota():
    # 48 INTs, 8 a worker: entry, a region's set-up and 3 cycles a vector of 2
    def build(graph, t, seq):
        popops.iota(graph, t, 5, seq)
        return t

    (cycles,), _, got = _compute_sets(build, [48], poplar.INT)
    assert cycles == W * (10 + 4 + 3 * 4)
    np.testing.assert_array_equal(got, np.arange(5, 53))


@pytest.mark.parametrize("type_,per_row", [(poplar.FLOAT, 17 + 3 * 9 + 13), (poplar.INT, 22 + 6 * 10 + 25)])
def test_arg_max_rows(type_, per_row):
    # 12 rows of 10: two a worker, each a ReduceMaxClassGather worker pass; the supervisor's 9
    (cycles,), x, got = _compute_sets(lambda g, t, seq: popnn.argMax(g, t, seq), [12, 10], type_)
    assert cycles == 9 + W * 2 * per_row
    np.testing.assert_array_equal(got, x.argmax(axis=1))


def test_calc_accuracy():
    # the count: entry and set-up, 4 cycles a row, on one worker of the tile
    def build(graph, t, seq):
        labels = graph.addConstant(poplar.UNSIGNED_INT, [12], np.arange(12) % 10, "labels")
        zero = graph.addConstant(poplar.UNSIGNED_INT, [1], 0, "zero")
        correct = graph.addVariable(poplar.UNSIGNED_INT, [1], "correct")
        for v in (labels, zero, correct):
            graph.setTileMapping(v, 0)
        seq.add(poplar.program.Copy(zero, correct))
        seq.add(popnn.calcAccuracy(graph, t, labels, correct))
        return correct

    cycles, x, got = _compute_sets(build, [12, 10], poplar.FLOAT)
    assert cycles[-1] == W * (5 + 8 + 4 * 12 + 1)
    assert int(got[0]) == int((x.argmax(axis=1) == np.arange(12) % 10).sum())
