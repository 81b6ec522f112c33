"""poplin.experimental's QR factorization against numpy, compiled and interpreted, and its
misuse; also PopLibs' own check of it, run on the device (matMulWithOutput(Q, A, A))."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin, popops, poputil
from poplibs_py.poputil import PoplibsError

qr = poplin.experimental


def make(harness, tiles):
    h = harness(tiles)
    poplin.addCodelets(h.graph)
    return h


def factorize(h, a, rows_per_iteration=None, created=True):
    """R and Q from the device for ``a``; A and Q made by createQRFactorizationMatrices, or (not
    ``created``) mapped linearly by the caller's code."""
    m, n = a.shape
    if created:
        A, Q = qr.createQRFactorizationMatrices(h.graph, poplar.FLOAT, m, n, "qr")
        h.write(A, a)
        h.write(Q, np.eye(m, dtype=np.float32))
    else:
        A, Q = h.tensor(a), h.tensor(np.eye(m, dtype=np.float32))
    options = {} if rows_per_iteration is None else {"rowsPerIteration": rows_per_iteration}
    qr.QRFactorization(h.graph, A, Q, h.seq, "qr", options)
    return h.run(A, Q)


def numpy_qr(a):
    """numpy's complete QR with PopLibs' signs: for m == n the last reflection (which LAPACK
    skips) negates R's last row and Q's last column."""
    q, r = np.linalg.qr(a.astype(np.float64), "complete")
    if a.shape[0] == a.shape[1]:
        q[:, -1], r[-1] = -q[:, -1], -r[-1]
    return q, r


@pytest.mark.parametrize("m, n, tiles, rows", [(1, 1, 1, None), (5, 3, 4, 2), (6, 6, 3, None), (20, 7, 8, 3),
                                               (33, 33, 16, 8), (40, 9, 2, 4)])
def test_factors_match_numpy(harness, m, n, tiles, rows):
    a = np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32)
    r, q = factorize(make(harness, tiles), a, rows)
    assert np.all(np.tril(r, -1) == 0)  # exactly upper triangular
    q_ref, r_ref = numpy_qr(a)
    tol = 8 * m * np.finfo(np.float32).eps
    np.testing.assert_allclose(r, r_ref, atol=tol * np.abs(a).max())
    np.testing.assert_allclose(q, q_ref, atol=tol)
    np.testing.assert_allclose(q @ r, a, atol=tol * np.abs(a).max())
    np.testing.assert_allclose(q @ q.T, np.eye(m), atol=tol)


def zero_column(rng):
    a = rng.standard_normal((7, 4)).astype(np.float32)
    a[:, 1] = 0.0
    return a


@pytest.mark.parametrize("make_input", [zero_column, lambda rng: np.triu(rng.standard_normal((5, 5)) + 3)
                                        .astype(np.float32)])
def test_caller_mapped_matrices_and_degenerate_columns(harness, make_input):
    """A laid out by the caller (mapped linearly, not transposed); a zero column (no reflection)
    and a triangular A (nothing below any pivot: reflected all the same): no NaN, Q R is A."""
    a = make_input(np.random.default_rng(3))
    m = a.shape[0]
    r, q = factorize(make(harness, 4), a, 2, created=False)
    assert np.isfinite(r).all() and np.isfinite(q).all()
    assert np.all(np.tril(r, -1) == 0)
    np.testing.assert_allclose(q @ r, a, atol=1e-5 * np.abs(a).max())
    np.testing.assert_allclose(q @ q.T, np.eye(m), atol=1e-5)
    np.testing.assert_allclose(np.abs(r), np.abs(numpy_qr(a)[1]), atol=1e-5 * np.abs(a).max())


def test_poplibs_check_on_the_device(harness):
    """PopLibs' QR test: ||A - Q R|| / ||A|| and ||I - Q Q^T|| computed on the tiles, with
    ``matMulWithOutput(Q, A, A)`` (A = Q @ R, through a temporary) and ``Q = Q^T @ Q``."""
    m, n = 24, 10
    h = make(harness, 6)
    g = h.graph
    A, Q = qr.createQRFactorizationMatrices(g, poplar.FLOAT, m, n, "qr")
    a = (1 + (np.arange(m * n) % 8) / 8.0).reshape(m, n).astype(np.float32)  # PopLibs' input
    a += np.random.default_rng(0).standard_normal((m, n)).astype(np.float32)  # (full rank)
    h.write(A, a)
    h.write(Q, np.eye(m, dtype=np.float32))
    a_ref, q_ref = g.clone(A, "ARef"), g.clone(Q, "QRef")
    h.seq.add(poplar.program.Copy(A, a_ref))
    h.seq.add(poplar.program.Copy(Q, q_ref))
    qr.QRFactorization(g, A, Q, h.seq, "qr", {"rowsPerIteration": 4, "allocProperlyMappedTensors": "true"})
    poplin.matMulWithOutput(g, Q, A, A, h.seq)
    popops.subWithOutput(g, a_ref, A, A, h.seq)
    norm = popops.reduce(g, popops.mul(g, A, A, h.seq), poplar.FLOAT, [0, 1], popops.Operation.ADD, h.seq)
    norm_ref = popops.reduce(g, popops.mul(g, a_ref, a_ref, h.seq), poplar.FLOAT, [0, 1],
                             popops.Operation.ADD, h.seq)
    err_a = popops.div(g, norm, norm_ref, h.seq)
    poplin.matMulWithOutput(g, Q.transpose(), Q, Q, h.seq)
    popops.subWithOutput(g, q_ref, Q, Q, h.seq)
    err_q = popops.reduce(g, popops.mul(g, Q, Q, h.seq), poplar.FLOAT, [0, 1], popops.Operation.ADD, h.seq)
    got_a, got_q = h.run(err_a, err_q)
    assert 0 <= got_a < m * np.finfo(np.float32).eps and 0 <= got_q < m * np.finfo(np.float32).eps


def test_created_layout():
    """A is a transposed view; the n + m columns of A and rows of Q are spread evenly and whole."""
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    g = poplar.Graph(model.createDevice())
    A, Q = qr.createQRFactorizationMatrices(g, poplar.FLOAT, 6, 2, "qr")
    assert A.shape() == [6, 2] and Q.shape() == [6, 6] and not A.isContiguous()
    work = [len(ivs) for ivs in g.getTileMapping(A.transpose())]
    assert work == [1, 0, 0, 0]  # A's 2 columns on tile 0 (each contiguous)
    rows = [sum(iv.size() for iv in ivs) // 6 for ivs in g.getTileMapping(Q)]
    assert rows == [0, 2, 2, 2]


def test_misuse_raises(harness):
    h = make(harness, 2)
    g, seq = h.graph, h.seq
    with pytest.raises(PoplibsError, match="rows must be greater or equal"):
        qr.createQRFactorizationMatrices(g, poplar.FLOAT, 2, 3, "")
    with pytest.raises(poputil.PoplibsArgumentError, match="m must be a non-negative integer"):
        qr.createQRFactorizationMatrices(g, poplar.FLOAT, -1, 0, "")
    A, Q = qr.createQRFactorizationMatrices(g, poplar.FLOAT, 4, 3, "")
    wide = g.addVariable(poplar.FLOAT, [3, 4], "wide")
    with pytest.raises(PoplibsError, match="'wide' is \\[3, 4\\]"):
        qr.QRFactorization(g, wide, g.addVariable(poplar.FLOAT, [3, 3], "q3"), seq)
    with pytest.raises(PoplibsError, match="Q 'small' must be square with A's 4 rows"):
        qr.QRFactorization(g, A, g.addVariable(poplar.FLOAT, [3, 3], "small"), seq)
    with pytest.raises(PoplibsError, match="rank of 2"):
        qr.QRFactorization(g, A.flatten(), Q, seq)
    half_a, half_q = qr.createQRFactorizationMatrices(g, poplar.HALF, 4, 3, "")
    with pytest.raises(PoplibsError, match="only float"):
        qr.QRFactorization(g, half_a, half_q, seq)
    for bad in (0, "x", 1.5, True):
        with pytest.raises(PoplibsError, match="rowsPerIteration must be a positive integer"):
            qr.QRFactorization(g, A, Q, seq, "", {"rowsPerIteration": bad})
    with pytest.raises(poputil.PoplibsArgumentError, match="prog must be a program Sequence"):
        qr.QRFactorization(g, A, Q, None)
    with pytest.raises(poputil.PoplibsArgumentError, match="A must be a tensor"):
        qr.QRFactorization(g, np.zeros((4, 3)), Q, seq)
