"""poplin's CholeskyBlock, LUBlock, ForwardSubstitution, TriangularMask and the QR steps
(experimental::Householder, UpdateColumns, UpdateRows), each alone on a tile, against numpy
(codelets/poplin/linalg.py, qr.py). Every vertex works on whole rows, one VectorList entry each."""

import math

import numpy as np

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

F, H = poplar.FLOAT, poplar.HALF
nan = math.nan


def spd(rng, n: int) -> np.ndarray:
    m = rng.integers(-2, 3, (n, n)).astype(np.float64)
    return m @ m.T + n * np.eye(n)


def lu_product(a: np.ndarray):
    """A check that the rows hold L's multipliers below the diagonal and U on and above, ``L U = a``."""
    def check(rows):
        factors = np.array(rows, np.float64)
        product = (np.tril(factors, -1) + np.eye(len(a))) @ np.triu(factors)
        np.testing.assert_allclose(product, a, rtol=1e-5, atol=1e-5)
    return check


def test_cholesky_lu_and_forward_substitution(vertices):
    """Cholesky: the lower factor with zeros above (a pivot that is not positive gives NaN, which
    spreads to the later rows); LU without pivoting: U and L's multipliers, with ``L U = A``;
    forward substitution reads only the lower triangle (and not the diagonal when it is unit):
    NaN is put everywhere else."""
    h, rng = vertices("poplin"), np.random.default_rng(7)
    cases = h.cases
    for t, rtol, n in ((F, 1e-6, 4), (H, 2e-3, 4), (H, 2e-3, 3)):
        a = spd(rng, n)
        v = h.vertex(templateVertex("poplin::CholeskyBlock", t), rows=list(a.astype(t.dtype)))
        cases[f"CholeskyBlock<{t}> {n}x{n}"] = (v["rows"], np.linalg.cholesky(a), rtol)
    v = h.vertex(templateVertex("poplin::CholeskyBlock", F), rows=list(np.diag([-1, 4]).astype(np.float32)))
    cases["CholeskyBlock negative pivot"] = (v["rows"], [[nan, 0], [nan, nan]])
    for n in (5, 3):
        lu_in = spd(rng, n)
        lu = h.vertex(templateVertex("poplin::LUBlock", F), tile=1, rows=list(lu_in.astype(np.float32)))
        cases[f"LUBlock<float> {n}x{n}: L U = A"] = (lu["rows"], lu_product(lu_in))
    for tile, (t, unit, rtol) in enumerate([(F, False, 1e-5), (F, True, 1e-5), (H, False, 1e-2),
                                            (H, True, 1e-2)]):
        lower = np.tril(rng.integers(1, 4, (4, 4)).astype(np.float64), -1) + np.diag([2.0, -1.0, 4.0, 1.0])
        solve = np.tril(lower, -1) + np.eye(4) if unit else lower
        a = lower + np.triu(np.full((4, 4), nan), 0 if unit else 1)
        x = rng.integers(-4, 5, (3, 4)).astype(np.float64)
        v = h.vertex(templateVertex("poplin::ForwardSubstitution", t), tile=2 + tile % 2,
                     a=list(a.astype(t.dtype)), x=list(x.astype(t.dtype)), initial={"unitDiagonal": unit})
        cases[f"ForwardSubstitution<{t}> unitDiagonal={unit}"] = (v["x"], np.linalg.solve(solve, x.T).T, rtol)
    h.check(atol=1e-6)


def test_triangular_mask(vertices):
    """Rows 1..3 of a 5-column matrix (``firstRow`` 1): one triangle kept, the rest zero, the
    diagonal one with ``unitDiagonal``."""
    h = vertices("poplin")
    cases = h.cases
    rows = np.arange(1, 16, dtype=np.float32).reshape(3, 5)
    full = np.vstack([np.zeros(5), rows])  # matrix rows 0..3: the vertex sees rows 1..3
    for lower in (True, False):
        for unit in (False, True):
            v = h.vertex(templateVertex("poplin::TriangularMask", F), a=list(rows),
                         out=list(np.zeros_like(rows)),
                         initial={"firstRow": 1, "lower": lower, "unitDiagonal": unit})
            want = np.tril(full) if lower else np.triu(full)
            if unit:
                np.fill_diagonal(want, 1)
            cases[f"lower={lower} unitDiagonal={unit}"] = (v["out"], list(want[1:]))
    h.check()


def householder(x: np.ndarray, i: int) -> np.ndarray:
    """``(u_i, |u|^2, r)`` of the reflection taking ``x[i:]`` to ``r e_i``: ``u = x[i:] + sign(x_i)
    |x[i:]| e_i`` (sign(0) = +1) and ``r = -sign(x_i) |x[i:]|``."""
    norm = np.linalg.norm(x[i:])
    sign = 1.0 if x[i] >= 0 else -1.0
    u = x[i:].copy()
    u[0] += sign * norm
    return np.array([u[0], u @ u, -sign * norm])


def reflect(row: np.ndarray, x: np.ndarray, i: int, refl: np.ndarray) -> np.ndarray:
    u = np.concatenate([[refl[0]], x[i + 1:]])
    row = row.astype(np.float64)
    if refl[1]:
        row[i:] -= 2 * (row[i:] @ u) / refl[1] * u
    return row


# (x, pivot i): positive, negative and zero pivots, and nothing to reflect (x[i:] zero)
PIVOTS = [([3.0, 1.0, -2.0, 2.0, 4.0], 1), ([1.0, 2.0, -3.0, 6.0, 2.0], 2), ([0.0, 3.0, 4.0, 0.0, 0.0], 0),
          ([5.0, 1.0, 2.0, 0.0, 0.0], 3)]


def test_householder_steps(vertices):
    """Householder's reflector of each pivot; UpdateColumns on seven columns from ``first`` (the
    columns before the pivot left alone, the pivot's set to (r, 0, ...), the later ones
    reflected); UpdateRows reflects every row."""
    h, rng = vertices("poplin"), np.random.default_rng(8)
    cases = h.cases
    for tile, (x, i) in enumerate(PIVOTS):
        x = np.array(x)
        refl = householder(x, i)
        step = np.array([i], np.uint32)
        v = h.vertex("poplin::experimental::Householder", tile=tile, x=x.astype(np.float32), step=step,
                     reflector=np.zeros(3, np.float32))
        cases[f"Householder x={x.tolist()} i={i}"] = (v["reflector"], refl, 1e-6)
        shared = {"x": x.astype(np.float32), "step": step, "reflector": refl.astype(np.float32)}
        rows = rng.integers(-4, 5, (7, 5)).astype(np.float32)
        for first in (0, 2):
            v = h.vertex("poplin::experimental::UpdateColumns", tile=tile, columns=list(rows),
                         initial={"first": first}, **shared)
            want = [row if first + j < i else
                    np.concatenate([row[:i], [refl[2]], np.zeros(4 - i)]) if first + j == i else
                    reflect(row, x, i, refl.astype(np.float32)) for j, row in enumerate(rows)]
            cases[f"UpdateColumns from {first}, x={x.tolist()} i={i}"] = (v["columns"], want, 1e-5)
        v = h.vertex("poplin::experimental::UpdateRows", tile=tile, rows=list(rows), **shared)
        want = [reflect(row, x, i, refl.astype(np.float32)) for row in rows]
        cases[f"UpdateRows x={x.tolist()} i={i}"] = (v["rows"], want, 1e-5)
    h.check(atol=1e-5)
